/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite: sessions that outlive their client (detached mode), one case a
 * rule of the contract in dbus/org.tracebus.Tracebus1.{Manager,Session}.xml.
 * This part: who a session belongs to, and Detach with its keys. The other
 * parts are tests/test-sessions-*.c; the SIGTERM case needs a service of its
 * own: tests/test-shutdown.c. The helpers are in tests/session-util.h.
 *
 * Users (tests/polkit-rules/50-tracebus-test.rules): tbuser may record,
 * tbadmin (group tbadmins) may record and manage (org.tracebus.manage),
 * tbother may not record; uid 0 is always authorized by polkit.
 *
 * Every case starts with no session left and must end with none (see
 * session_case_begin()/session_case_end()).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "session-util.h"

/* ===================================================================== */
/* 1. Lifetime                                                            */
/* ===================================================================== */

/* With an Output fd and no DetachKey, the session belongs to the connection
 * that started it: kill -9 of the client ends it, the trace complete. */
static void test_lifetime_bound(void) {
        g_autofree char *cfg = config_text(60000), *out = NULL, *path = NULL;
        g_auto(TbTraceSummary) s = { 0 };
        g_autoptr(GError) error = NULL;
        int fd = open_output("lifetime-bound.pftrace", &out), status;
        ClientSpec spec = { .user = "tbuser", .op = OP_START, .config = cfg, .output_fd = fd, .hold = true };
        TbBusy busy;
        Client c;

        g_assert_true(tb_busy_start("tbbusy-life", &busy, &error));
        path = start_held(&spec, &c);
        close(fd);
        assert_recording(path);
        g_assert_false(detached_property(path));

        g_usleep(1000 * 1000);
        status = client_kill(&c);
        g_assert_true(WIFSIGNALED(status));
        wait_ended(path, 15000, &busy, tb_user_uid("tbuser"), "client-vanished");
        assert_closed_trace_with(out, &busy, &s);
}

/* Without Output (the service's trace dir) the session starts detached
 * without a key: it records on after its client is killed. */
static void test_lifetime_trace_dir(void) {
        g_autofree char *cfg = config_text(60000), *path = NULL, *file = NULL;
        g_autoptr(GHashTable) st = NULL;
        g_autoptr(GError) error = NULL;
        ClientSpec spec = { .user = "tbuser", .op = OP_START, .config = cfg, .output_fd = -1, .hold = true };
        TbBusy busy;
        Client c;

        g_assert_true(tb_busy_start("tbbusy-tdir", &busy, &error));
        path = start_held(&spec, &c);
        g_assert_true(detached_property(path));
        file = string_property(path, "OutputPath");
        g_assert_cmpstr(file, !=, "");
        assert_service_file(file, tb_user_uid("tbuser"));

        client_kill(&c);
        g_usleep(1000 * 1000);
        assert_recording(path);
        g_assert_true(detached_property(path));

        st = stop_as("tbuser", path);
        tb_busy_stop(&busy);
        g_assert_cmpstr(g_hash_table_lookup(st, "Reason"), ==, "stopped");
        g_assert_cmpstr(g_hash_table_lookup(st, "OutputPath"), ==, file);
        wait_over(path, 10000);
        assert_trace_file_closed(file);
}

/* ===================================================================== */
/* 2. Detach                                                              */
/* ===================================================================== */

/* Keys are 1..64 printable ASCII characters; a bad key leaves the session
 * as it was (still bound: killing its client ends it). */
static void test_detach_key_validation(void) {
        g_autofree char *cfg = config_text(60000), *out_a = NULL, *out_b = NULL, *path_a = NULL, *path_b = NULL;
        g_autofree char *k65 = g_strnfill(65, 'k'), *k64 = g_strnfill(64, 'K');
        const char *bad[] = { "", k65, "bad\001key" };
        const char *bad_names[] = { "\"\"", "65 characters", "\"bad\\x01key\"" };
        int fd_a = open_output("detach-keys-a.pftrace", &out_a);
        int fd_b = open_output("detach-keys-b.pftrace", &out_b);
        ClientSpec spec_a = { .user = "tbuser", .op = OP_START, .config = cfg, .output_fd = fd_a, .hold = true };
        ClientSpec spec_b = { .user = "tbuser", .op = OP_START, .config = cfg, .output_fd = fd_b, .hold = true };
        g_autofree char *d = NULL, *stats = NULL;
        g_autoptr(GError) error = NULL;
        TbBusy busy;
        Client a, b;

        g_assert_true(tb_busy_start("tbbusy-keys", &busy, &error));
        path_a = start_held(&spec_a, &a);
        close(fd_a);
        for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
                g_autofree char *c1 = g_strconcat("detach ", bad[i], NULL);
                g_autofree char *c2 = g_strconcat("sdetach ", bad[i], NULL);
                g_autofree char *e1 = NULL, *e2 = NULL;

                note("key %s\n", bad_names[i]);
                e1 = must_fail(&a, c1, 'D');
                e2 = must_fail(&a, c2, 'D');
                g_assert_cmpstr(e1, ==, ERR_INVALID_ARGS);
                g_assert_cmpstr(e2, ==, ERR_INVALID_ARGS);
        }
        /* Unchanged: recording, attached, and still bound to a's connection. */
        assert_recording(path_a);
        g_assert_false(detached_property(path_a));
        client_kill(&a);
        wait_over(path_a, 15000);
        assert_trace_file_closed(out_a);

        /* 64 characters is a key (Session.Detach). */
        path_b = start_held(&spec_b, &b);
        close(fd_b);
        {
                g_autofree char *cmd = g_strconcat("sdetach ", k64, NULL);
                d = must(&b, cmd, 'D');
        }
        g_assert_true(detached_property(path_b));
        g_assert_true(is_detached_as("tbuser", k64));
        stats = must(&b, "stop", 'S');
        client_finish(&b, 5000);
        tb_busy_stop(&busy);
        wait_over(path_b, 10000);
        assert_trace_file_closed(out_b);
}

/* After Detach, killing the client does not stop the session. */
static void test_detach_survives_client(void) {
        g_autofree char *cfg = config_text(60000), *out = NULL, *path = NULL, *d = NULL;
        g_autoptr(GHashTable) st = NULL;
        g_autoptr(GError) error = NULL;
        g_auto(TbTraceSummary) s = { 0 };
        int fd = open_output("detach-survives.pftrace", &out);
        ClientSpec spec = { .user = "tbuser", .op = OP_START, .config = cfg, .output_fd = fd, .hold = true };
        TbBusy busy;
        Client c;

        g_assert_true(tb_busy_start("tbbusy-surv", &busy, &error));
        path = start_held(&spec, &c);
        close(fd);
        d = must(&c, "detach survive-2b", 'D');
        g_assert_true(detached_property(path));
        g_assert_true(WIFSIGNALED(client_kill(&c)));

        g_usleep(1000 * 1000);
        assert_recording(path);
        g_assert_true(detached_property(path));
        g_assert_true(is_detached_as("tbuser", "survive-2b"));

        st = stop_as("tbuser", path);
        tb_busy_stop(&busy);
        g_assert_cmpstr(g_hash_table_lookup(st, "Reason"), ==, "stopped");
        wait_over(path, 10000);
        assert_closed_trace_with(out, &busy, &s);
}

/* Keys are per UID: tbuser and tbadmin both detach under "nightly". */
static void test_detach_same_key_two_users(void) {
        g_autofree char *cfg = config_text(60000), *out_u = NULL, *out_a = NULL, *path_u = NULL, *path_a = NULL;
        g_autofree char *d1 = NULL, *d2 = NULL;
        int fd_u = open_output("nightly-tbuser.pftrace", &out_u);
        int fd_a = open_output("nightly-tbadmin.pftrace", &out_a);
        ClientSpec su = { .user = "tbuser", .op = OP_START, .config = cfg, .output_fd = fd_u, .hold = true };
        ClientSpec sa = { .user = "tbadmin", .op = OP_START, .config = cfg, .output_fd = fd_a, .hold = true };
        g_autoptr(GHashTable) st1 = NULL, st2 = NULL;
        g_autoptr(GError) error = NULL;
        TbBusy busy;
        Client cu, ca;

        g_assert_true(tb_busy_start("tbbusy-night", &busy, &error));
        path_u = start_held(&su, &cu);
        path_a = start_held(&sa, &ca);
        close(fd_u);
        close(fd_a);
        d1 = must(&cu, "detach nightly", 'D');
        d2 = must(&ca, "detach nightly", 'D');
        client_kill(&cu);
        client_kill(&ca);

        g_usleep(1000 * 1000);
        assert_recording(path_u);
        assert_recording(path_a);
        g_assert_true(detached_property(path_u));
        g_assert_true(detached_property(path_a));
        g_assert_true(is_detached_as("tbuser", "nightly"));
        g_assert_true(is_detached_as("tbadmin", "nightly"));

        st1 = stop_as("tbuser", path_u);
        st2 = stop_as("tbadmin", path_a);
        tb_busy_stop(&busy);
        wait_over(path_u, 10000);
        wait_over(path_a, 10000);
        assert_trace_file_closed(out_u);
        assert_trace_file_closed(out_a);
}

/* A second session of the same UID under a used key: KeyInUse (Detach,
 * Session.Detach and Start with DetachKey), and both sessions go on; the
 * second one stays bound to its client. */
static void test_detach_key_in_use(void) {
        g_autofree char *cfg = config_periodic(60000, 200, 0), *out_a = NULL, *out_b = NULL;
        g_autofree char *path_a = NULL, *path_b = NULL, *d = NULL, *e1 = NULL, *e2 = NULL, *e3 = NULL;
        int fd_a = open_output("inuse-a.pftrace", &out_a);
        int fd_b = open_output("inuse-b.pftrace", &out_b);
        ClientSpec sa = { .user = "tbuser", .op = OP_START, .config = cfg, .output_fd = fd_a, .hold = true };
        ClientSpec sb = { .user = "tbuser", .op = OP_START, .config = cfg, .output_fd = fd_b, .hold = true };
        g_auto(GStrv) inst = NULL, files = NULL;
        g_autoptr(GHashTable) st = NULL;
        g_autoptr(GError) error = NULL;
        off_t size_a, size_b, now_a, now_b;
        gint64 deadline;
        TbBusy busy;
        Client a, b;

        g_assert_true(tb_busy_start("tbbusy-inuse", &busy, &error));
        path_a = start_held(&sa, &a);
        close(fd_a);
        d = must(&a, "detach nightly", 'D');
        client_kill(&a);
        path_b = start_held(&sb, &b);
        close(fd_b);

        e1 = must_fail(&b, "detach nightly", 'D');
        e2 = must_fail(&b, "sdetach nightly", 'D');
        g_assert_cmpstr(e1, ==, ERR_KEY_IN_USE);
        g_assert_cmpstr(e2, ==, ERR_KEY_IN_USE);
        snapshot_state(&inst, &files);
        {
                ClientSpec third = { .user = "tbuser", .op = OP_START, .config = cfg, .detach_key = "nightly",
                                     .output_fd = -1 };
                e3 = client_run(&third, NULL);
        }
        g_assert_cmpstr(e3, ==, ERR_KEY_IN_USE);
        assert_nothing_created(inst, files);

        /* Both record, and both files grow. */
        assert_recording(path_a);
        assert_recording(path_b);
        g_assert_true(detached_property(path_a));
        g_assert_false(detached_property(path_b));
        /* Written every 200 ms: both grow within 1.5 s (scaled for a slower build). */
        size_a = file_size(out_a);
        size_b = file_size(out_b);
        deadline = g_get_monotonic_time() + (gint64) tb_scaled_ms(1500) * 1000;
        now_a = wait_larger(out_a, size_a, deadline);
        now_b = wait_larger(out_b, size_b, deadline);
        note("sizes: a %lld -> %lld, b %lld -> %lld\n", (long long) size_a, (long long) now_a, (long long) size_b,
             (long long) now_b);
        g_assert_cmpint(now_a, >, size_a);
        g_assert_cmpint(now_b, >, size_b);
        g_assert_true(is_detached_as("tbuser", "nightly"));

        /* b is still bound to its client. */
        client_kill(&b);
        wait_over(path_b, 15000);
        assert_end_reason_logged(path_b, tb_user_uid("tbuser"), "client-vanished");
        assert_recording(path_a);

        st = stop_as("tbuser", path_a);
        tb_busy_stop(&busy);
        wait_over(path_a, 10000);
        assert_trace_file_closed(out_a);
        assert_trace_file_closed(out_b);
}

SESSION_CASE(lifetime_bound)
SESSION_CASE(lifetime_trace_dir)
SESSION_CASE(detach_key_validation)
SESSION_CASE(detach_survives_client)
SESSION_CASE(detach_same_key_two_users)
SESSION_CASE(detach_key_in_use)

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();

        tb_test_add_isolated("/bus/sessions/01-lifetime-bound", case_lifetime_bound);
        tb_test_add_isolated("/bus/sessions/01-lifetime-trace-dir", case_lifetime_trace_dir);
        tb_test_add_isolated("/bus/sessions/02-detach-key-validation", case_detach_key_validation);
        tb_test_add_isolated("/bus/sessions/02-detach-survives-client", case_detach_survives_client);
        tb_test_add_isolated("/bus/sessions/02-detach-same-key-two-users", case_detach_same_key_two_users);
        tb_test_add_isolated("/bus/sessions/02-detach-key-in-use", case_detach_key_in_use);
        tb_test_add_isolated("/bus/sessions/99-no-leftovers", session_test_no_leftovers);
        return tb_test_run(TB_START_SERVICE);
}
