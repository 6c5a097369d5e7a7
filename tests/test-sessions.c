/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite: sessions that outlive their client (detached mode). One case a
 * rule of the contract in dbus/org.tracebus.Tracebus1.{Manager,Session}.xml:
 * who a session belongs to, Detach/Attach/IsDetached and their keys, sessions
 * that end by themselves, what other users may do, the limits, Perfetto's
 * detached-mode configs, busctl alone, and PropertiesChanged. The SIGTERM
 * case needs a service of its own: tests/test-shutdown.c.
 *
 * Users (tests/polkit-rules/50-tracebus-test.rules): tbuser may record,
 * tbadmin (group tbadmins) may record and manage (org.tracebus.manage),
 * tbother may not record; uid 0 is always authorized by polkit.
 *
 * Every case starts with no session left and must end with none (see
 * case_begin()/case_end()).
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

#include "system-bus.h"
#include "tb-client.h"
#include "trace-file.h"

#define LIMIT_RULES_FILE "40-tracebus-sessions-limit.rules"

/* ===================================================================== */
/* Helpers                                                                */
/* ===================================================================== */

/* sched_switch + sched_waking written into the file every period_ms, so the
 * file grows while recording; max_size 0: no size limit. */
static char *config_periodic(guint duration_ms, guint period_ms, guint64 max_size) {
        g_autofree char *size = max_size ? g_strdup_printf("max_file_size_bytes: %" G_GUINT64_FORMAT "\n", max_size)
                                         : g_strdup("");
        return g_strdup_printf("duration_ms: %u\n"
                               "write_into_file: true\n"
                               "file_write_period_ms: %u\n"
                               "%s"
                               "buffers { size_kb: 4096 }\n"
                               "data_sources { config { name: \"linux.ftrace\" ftrace_config {\n"
                               "  ftrace_events: \"sched/sched_switch\"\n"
                               "  ftrace_events: \"sched/sched_waking\"\n"
                               "} } }\n",
                               duration_ms, period_ms, size);
}

static char *fixture_config(const char *name) {
        g_autofree char *p = g_build_filename(tb_bus()->source_dir, "tests", "fixtures", "textproto", name, NULL);
        g_autoptr(GError) error = NULL;
        char *text = NULL;

        g_assert_true(g_file_get_contents(p, &text, NULL, &error));
        g_assert_no_error(error);
        return text;
}

static const char *session_id(const char *path) {
        const char *slash = strrchr(path, '/');
        g_assert_nonnull(slash);
        return slash + 1;
}

/* The tracefs instance of a session: tracebus-<service pid>-<session id>. */
static char *instance_of(const char *path) {
        return g_strdup_printf("tracebus-%d-%s", (int) tb_bus()->service_pid, session_id(path));
}

static bool instance_exists(const char *path) {
        g_autofree char *name = instance_of(path);
        g_autofree char *dir = g_build_filename(TB_INSTANCES_DIR, name, NULL);
        return g_file_test(dir, G_FILE_TEST_IS_DIR);
}

/* The session ended (or is gone) and its instance is gone. */
static void wait_over(const char *path, guint timeout_ms) {
        g_autofree char *name = instance_of(path);
        char *names[] = { name, NULL };
        g_autoptr(GError) error = NULL;

        if (!tb_wait_session_over(tb_bus()->conn, path, names, timeout_ms, &error))
                g_error("%s", error->message);
}

static void assert_recording(const char *path) {
        g_autoptr(GError) error = NULL;
        g_autofree char *state = tb_session_state(tb_bus()->conn, path, &error);

        if (!state)
                note("session %s: %s\n", path, error->message);
        g_assert_cmpstr(state, ==, "recording");
        if (!instance_exists(path)) {
                g_autofree char *name = instance_of(path);
                note("session %s records, but its instance %s does not exist\n", path, name);
        }
        g_assert_true(instance_exists(path));
}

/* As root (who may read every session's properties). */
static bool detached_property(const char *path) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GVariant) v = tb_get_property(tb_bus()->conn, path, TB_SESSION_IFACE, "Detached", &error);

        g_assert_no_error(error);
        return g_variant_get_boolean(v);
}

static char *string_property(const char *path, const char *name) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GVariant) v = tb_get_property(tb_bus()->conn, path, TB_SESSION_IFACE, name, &error);

        g_assert_no_error(error);
        return g_variant_dup_string(v, NULL);
}

static off_t file_size(const char *path) {
        struct stat st;
        g_assert_cmpint(stat(path, &st), ==, 0);
        return st.st_size;
}

/* The size of path once it is above size, or when deadline (monotonic) passes. */
static off_t wait_larger(const char *path, off_t size, gint64 deadline) {
        off_t now;

        while ((now = file_size(path)) <= size && g_get_monotonic_time() < deadline)
                g_usleep(50 * 1000);
        return now;
}

/* Spawns a client that starts a session and holds its connection; waits
 * until the session records. */
static char *start_held(const ClientSpec *spec, Client *c) {
        g_autofree char *err = NULL, *state = NULL;
        char *path;

        g_assert_true(spec->op == OP_START && spec->hold);
        client_spawn(spec, c);
        path = client_expect(c, 'O', 30000, &err);
        if (!path)
                g_error("%s's Start failed: %s", spec->user, err);
        note("%s's session %s (held)\n", spec->user, path);
        state = wait_state(path, "recording", 10000);
        g_assert_cmpstr(state, ==, "recording");
        return path;
}

/* A client starts a session and leaves the bus at once. */
static char *start_and_leave(const ClientSpec *spec) {
        g_autofree char *err = NULL, *state = NULL;
        char *path = NULL;

        g_assert_true(spec->op == OP_START && !spec->hold);
        err = client_run(spec, &path);
        if (err)
                g_error("%s's Start failed: %s", spec->user, err);
        note("%s's session %s (client gone)\n", spec->user, path);
        state = wait_state(path, "recording", 10000);
        g_assert_cmpstr(state, ==, "recording");
        return path;
}

/* One command on a fresh connection of user; its reply payload, or NULL and
 * the whole error in ret_err. */
static char *one_cmd(const char *user, const char *cmd, char kind, char **ret_err) {
        ClientSpec spec = { .user = user, .op = OP_HOLD_NAME, .output_fd = -1 };
        g_autofree char *name = NULL, *err = NULL;
        char *out;
        Client c;

        client_spawn(&spec, &c);
        name = client_expect(&c, 'N', 10000, &err);
        if (!name)
                g_error("%s could not connect: %s", user, err);
        out = client_cmd(&c, cmd, kind, &err);
        client_finish(&c, 5000);
        if (!out)
                note("%s: %s: %s\n", user, cmd, err);
        if (ret_err)
                *ret_err = g_steal_pointer(&err);
        return out;
}

/* The error name one command gets, or NULL when it succeeds. */
static char *cmd_error(const char *user, const char *cmd, char kind) {
        g_autofree char *err = NULL, *out = one_cmd(user, cmd, kind, &err);
        return out ? NULL : error_name(err);
}

static bool is_detached_as(const char *user, const char *key) {
        g_autofree char *cmd = g_strconcat("isdetached ", key, NULL);
        g_autofree char *err = NULL, *out = one_cmd(user, cmd, 'B', &err);

        if (!out)
                g_error("%s: IsDetached(%s) failed: %s", user, key, err);
        g_assert_true(g_str_equal(out, "true") || g_str_equal(out, "false"));
        return g_str_equal(out, "true");
}

/* Manager.Stop as user, who must succeed; the stats. */
static GHashTable *stop_as(const char *user, const char *path) {
        ClientSpec spec = { .user = user, .op = OP_STOP_MANAGER, .path = path, .output_fd = -1 };
        g_autofree char *stats = NULL, *err = client_run(&spec, &stats);

        if (err)
                g_error("%s's Stop of %s failed: %s", user, path, err);
        note("%s stopped %s:%s\n", user, path, stats);
        return parse_stats(stats);
}

/* A command on a held client that must succeed. */
static char *must(Client *c, const char *cmd, char kind) {
        g_autofree char *err = NULL;
        char *out = client_cmd(c, cmd, kind, &err);

        if (!out)
                g_error("%s: %s", cmd, err);
        return out;
}

/* A command on a held client that must fail; the error name. */
static char *must_fail(Client *c, const char *cmd, char kind) {
        g_autofree char *err = NULL, *out = client_cmd(c, cmd, kind, &err);

        if (out)
                g_error("%s succeeded (%s), expected an error", cmd, out);
        note("%s -> %s\n", cmd, err);
        return error_name(err);
}

static char *service_log(void) {
        g_autofree char *p = g_build_filename(tb_bus()->log_dir, "service.log", NULL);
        char *text = NULL;

        if (!g_file_get_contents(p, &text, NULL, NULL))
                return g_strdup("");
        return text;
}

/* The service logged how the session ended: "Session N of UID U ended (reason)". */
static void assert_end_reason_logged(const char *path, uid_t uid, const char *reason) {
        g_autofree char *needle = g_strdup_printf("Session %s of UID %u ended (%s)", session_id(path), (unsigned) uid,
                                                  reason);
        gint64 deadline = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;

        for (;;) {
                g_autofree char *log = service_log();
                if (strstr(log, needle))
                        return;
                if (g_get_monotonic_time() > deadline) {
                        g_autofree char *prefix = g_strdup_printf("Session %s of UID", session_id(path));
                        const char *got = strstr(log, prefix);
                        g_autofree char *line = got ? g_strndup(got, strcspn(got, "\n")) : g_strdup("(nothing)");
                        note("service log has no \"%s\"; it has: %s\n", needle, line);
                        g_assert_not_reached();
                }
                g_usleep(50 * 1000);
        }
}

static uid_t uid_of(const char *user) {
        g_auto(TbUser) u = { 0 };
        g_assert_true(tb_user_lookup(user, &u, NULL));
        return u.uid;
}

/* Every session, as root (polkit authorizes uid 0 for org.tracebus.manage). */
static char **all_sessions(void) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GVariant) reply = g_dbus_connection_call_sync(
                        tb_bus()->conn, TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_IFACE, "ListSessions", NULL,
                        G_VARIANT_TYPE("(ao)"), G_DBUS_CALL_FLAGS_NONE, 10000, NULL, &error);
        char **paths = NULL;

        g_assert_no_error(error);
        g_variant_get(reply, "(^ao)", &paths);
        return paths;
}

static void root_stop(const char *path) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GVariant) reply = g_dbus_connection_call_sync(
                        tb_bus()->conn, TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_IFACE, "Stop",
                        g_variant_new("(o)", path), G_VARIANT_TYPE("(a{sv})"), G_DBUS_CALL_FLAGS_NONE, 30000, NULL,
                        &error);
        if (error)
                note("root's Stop of %s: %s\n", path, error->message);
}

static void remove_limit_rule(void) {
        g_autofree char *p = g_build_filename(tb_bus()->tmpdir, "rules.d", LIMIT_RULES_FILE, NULL);
        (void) unlink(p);
}

/* Sessions of a failed case may still be ending (their clients died with it). */
static void wait_no_own_instances(guint timeout_ms) {
        gint64 deadline = g_get_monotonic_time() + (gint64) timeout_ms * 1000;

        for (;;) {
                g_auto(GStrv) inst = own_instances();
                if (!inst[0] || g_get_monotonic_time() > deadline)
                        return;
                g_usleep(50 * 1000);
        }
}

/* Before a case: nothing left from an earlier, failed one (that one failed
 * already; this keeps the failure from spreading). */
static void case_begin(void) {
        g_auto(GStrv) left = all_sessions();

        remove_limit_rule();
        for (size_t i = 0; left[i]; i++) {
                note("a session left by an earlier case: %s; stopping it\n", left[i]);
                root_stop(left[i]);
        }
        wait_no_own_instances(10000);
}

/* After a case: it cleaned up. */
static void case_end(void) {
        g_auto(GStrv) left = all_sessions();
        g_autofree char *prefix = g_strdup_printf("tracebus-%d-", (int) tb_bus()->service_pid);
        g_auto(GStrv) inst = tb_tracebus_instances();

        for (size_t i = 0; left[i]; i++)
                note("session left behind: %s\n", left[i]);
        g_assert_cmpuint(g_strv_length(left), ==, 0);
        for (size_t i = 0; inst[i]; i++) {
                if (g_str_has_prefix(inst[i], prefix))
                        note("instance left behind: %s\n", inst[i]);
                g_assert_false(g_str_has_prefix(inst[i], prefix));
        }
}

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
        wait_over(path, 15000);
        tb_busy_stop(&busy);
        assert_end_reason_logged(path, uid_of("tbuser"), "client-vanished");
        assert_trace_file_closed(out);
        summarise(out, &s);
        assert_busy_seen(&s, &busy);
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
        assert_service_file(file, uid_of("tbuser"));

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
        assert_trace_file_closed(out);
        summarise(out, &s);
        assert_busy_seen(&s, &busy);
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
        assert_end_reason_logged(path_b, uid_of("tbuser"), "client-vanished");
        assert_recording(path_a);

        st = stop_as("tbuser", path_a);
        tb_busy_stop(&busy);
        wait_over(path_a, 10000);
        assert_trace_file_closed(out_a);
        assert_trace_file_closed(out_b);
}

/* ===================================================================== */
/* 3. Attach                                                              */
/* ===================================================================== */

/* The message of an error with the key masked. */
static char *masked_message(const char *err, const char *key) {
        g_auto(GStrv) parts = g_strsplit(error_message(err), key, -1);
        return g_strjoinv("<KEY>", parts);
}

/* Only the same UID attaches: another user's key looks exactly like no key. */
static void test_attach_other_uid(void) {
        g_autofree char *cfg = config_text(60000), *out = NULL, *path = NULL, *uid_str = NULL;
        int fd = open_output("attach-other.pftrace", &out);
        ClientSpec spec = { .user = "tbuser", .op = OP_START, .config = cfg, .output_fd = fd,
                            .detach_key = "attach-3a" };
        const char *users[] = { "tbother", "tbadmin" };
        g_autoptr(GHashTable) st = NULL;

        path = start_and_leave(&spec);
        close(fd);
        uid_str = g_strdup_printf("%u", (unsigned) uid_of("tbuser"));
        for (size_t i = 0; i < G_N_ELEMENTS(users); i++) {
                g_autofree char *err_theirs = NULL, *err_none = NULL, *o1 = NULL, *o2 = NULL;
                g_autofree char *n1 = NULL, *n2 = NULL, *m1 = NULL, *m2 = NULL;

                o1 = one_cmd(users[i], "attach attach-3a", 'O', &err_theirs);
                o2 = one_cmd(users[i], "attach no-such-key-3a", 'O', &err_none);
                g_assert_null(o1);
                g_assert_null(o2);
                n1 = error_name(err_theirs);
                n2 = error_name(err_none);
                g_assert_cmpstr(n1, ==, ERR_NO_SUCH_SESSION);
                g_assert_cmpstr(n2, ==, n1);
                m1 = masked_message(err_theirs, "attach-3a");
                m2 = masked_message(err_none, "no-such-key-3a");
                note("%s: \"%s\" vs \"%s\"\n", users[i], m1, m2);
                g_assert_cmpstr(m1, ==, m2);
                g_assert_null(strstr(m1, uid_str));
                g_assert_null(strstr(m1, "tbuser"));
                g_assert_null(strstr(m1, path));
                g_assert_null(strstr(m1, "/session"));
        }
        /* Nothing changed. */
        assert_recording(path);
        g_assert_true(detached_property(path));
        g_assert_true(is_detached_as("tbuser", "attach-3a"));

        st = stop_as("tbuser", path);
        wait_over(path, 10000);
        assert_trace_file_closed(out);
}

/* Attach rebinds the lifetime to the new client and clears the key. */
static void test_attach_rebinds(void) {
        g_autofree char *cfg = config_text(60000), *out = NULL, *path = NULL, *name = NULL, *err = NULL;
        g_autofree char *attached = NULL, *prop = NULL, *again = NULL;
        int fd = open_output("attach-rebinds.pftrace", &out);
        ClientSpec spec = { .user = "tbuser", .op = OP_START, .config = cfg, .output_fd = fd,
                            .detach_key = "attach-3b" };
        ClientSpec holder = { .user = "tbuser", .op = OP_HOLD_NAME, .output_fd = -1 };
        g_autoptr(GError) error = NULL;
        g_auto(TbTraceSummary) s = { 0 };
        TbBusy busy;
        Client c;

        g_assert_true(tb_busy_start("tbbusy-attach", &busy, &error));
        path = start_and_leave(&spec);
        close(fd);
        g_assert_true(detached_property(path));

        client_spawn(&holder, &c);
        name = client_expect(&c, 'N', 10000, &err);
        g_assert_nonnull(name);
        attached = must(&c, "attach attach-3b", 'O');
        g_assert_cmpstr(attached, ==, path);
        g_assert_false(detached_property(path));
        prop = must(&c, "get Detached", 'V');
        g_assert_cmpstr(prop, ==, "\tDetached=false");
        g_assert_false(is_detached_as("tbuser", "attach-3b"));
        again = cmd_error("tbuser", "attach attach-3b", 'O');
        g_assert_cmpstr(again, ==, ERR_NO_SUCH_SESSION);

        g_usleep(500 * 1000);
        g_assert_true(WIFSIGNALED(client_kill(&c)));
        wait_over(path, 15000);
        tb_busy_stop(&busy);
        assert_end_reason_logged(path, uid_of("tbuser"), "client-vanished");
        assert_trace_file_closed(out);
        summarise(out, &s);
        assert_busy_seen(&s, &busy);
}

/* ===================================================================== */
/* 4. IsDetached                                                          */
/* ===================================================================== */

static void test_is_detached(void) {
        g_autofree char *cfg = config_text(60000), *out = NULL, *path = NULL, *name = NULL, *err = NULL;
        g_autofree char *attached = NULL, *d = NULL, *stats = NULL, *after = NULL;
        int fd = open_output("is-detached.pftrace", &out);
        ClientSpec spec = { .user = "tbuser", .op = OP_START, .config = cfg, .output_fd = fd,
                            .detach_key = "isdet-4" };
        ClientSpec holder = { .user = "tbuser", .op = OP_HOLD_NAME, .output_fd = -1 };
        Client c;

        path = start_and_leave(&spec);
        close(fd);
        g_assert_true(is_detached_as("tbuser", "isdet-4"));
        g_assert_false(is_detached_as("tbuser", "isdet-4-other"));
        g_assert_false(is_detached_as("tbadmin", "isdet-4"));
        g_assert_false(is_detached_as("tbother", "isdet-4"));
        g_assert_false(is_detached_as("root", "isdet-4"));

        /* Attached: false; detached again: true. */
        client_spawn(&holder, &c);
        name = client_expect(&c, 'N', 10000, &err);
        g_assert_nonnull(name);
        attached = must(&c, "attach isdet-4", 'O');
        g_assert_cmpstr(attached, ==, path);
        g_assert_false(is_detached_as("tbuser", "isdet-4"));
        d = must(&c, "detach isdet-4", 'D');
        g_assert_true(is_detached_as("tbuser", "isdet-4"));

        /* Ended: false, and nothing to attach. */
        stats = must(&c, "stop", 'S');
        client_finish(&c, 5000);
        wait_over(path, 10000);
        g_assert_false(is_detached_as("tbuser", "isdet-4"));
        after = cmd_error("tbuser", "attach isdet-4", 'O');
        g_assert_cmpstr(after, ==, ERR_NO_SUCH_SESSION);
        assert_trace_file_closed(out);
}

/* ===================================================================== */
/* 5. Ending by itself                                                    */
/* ===================================================================== */

static void test_detached_duration_ends(void) {
        g_autofree char *cfg = config_text(2000), *out = NULL, *path = NULL, *att = NULL;
        int fd = open_output("detached-duration.pftrace", &out);
        ClientSpec spec = { .user = "tbuser", .op = OP_START, .config = cfg, .output_fd = fd, .detach_key = "dur-5a" };
        g_autoptr(GError) error = NULL;
        g_auto(TbTraceSummary) s = { 0 };
        gint64 t0 = g_get_monotonic_time();
        TbBusy busy;

        g_assert_true(tb_busy_start("tbbusy-dur", &busy, &error));
        path = start_and_leave(&spec);
        close(fd);
        g_assert_true(is_detached_as("tbuser", "dur-5a"));
        wait_over(path, 10000);
        note("ended %.1f s after Start\n", (double) (g_get_monotonic_time() - t0) / G_USEC_PER_SEC);
        g_assert_cmpint(g_get_monotonic_time() - t0, >=, 1900 * 1000);
        tb_busy_stop(&busy);
        assert_end_reason_logged(path, uid_of("tbuser"), "duration-reached");
        g_assert_false(is_detached_as("tbuser", "dur-5a"));
        att = cmd_error("tbuser", "attach dur-5a", 'O');
        g_assert_cmpstr(att, ==, ERR_NO_SUCH_SESSION);
        assert_trace_file_closed(out);
        summarise(out, &s);
        assert_busy_seen(&s, &busy);
}

static void test_detached_size_ends(void) {
        g_autofree char *cfg = config_periodic(60000, 250, 20000), *out = NULL, *path = NULL, *att = NULL;
        int fd = open_output("detached-size.pftrace", &out);
        ClientSpec spec = { .user = "tbuser", .op = OP_START, .config = cfg, .output_fd = fd, .detach_key = "size-5b" };
        g_autoptr(GError) error = NULL;
        g_auto(TbTraceSummary) s = { 0 };
        off_t size;
        TbBusy busy;

        g_assert_true(tb_busy_start("tbbusy-size", &busy, &error));
        /* No IsDetached check here: the limit may end it at once. */
        path = start_and_leave(&spec);
        close(fd);
        wait_over(path, 30000);
        tb_busy_stop(&busy);
        assert_end_reason_logged(path, uid_of("tbuser"), "size-reached");
        size = file_size(out);
        note("size-limited file: %lld bytes\n", (long long) size);
        g_assert_cmpint(size, >, 0);
        g_assert_cmpint(size, <=, 20000);
        /* Decodes to the end: whole packets only. */
        if (!tb_trace_file_read(out, &s, &error))
                g_error("the size-limited trace does not decode: %s", error->message);
        {
                g_autofree char *desc = tb_trace_summary_describe(&s);
                note("%s: %s\n", out, desc);
        }
        g_assert_true(s.has_clock_snapshot && s.has_trace_config && s.has_tracing_started);
        g_assert_true(s.all_have_sequence_id && s.first_packets_flagged);
        g_assert_false(is_detached_as("tbuser", "size-5b"));
        att = cmd_error("tbuser", "attach size-5b", 'O');
        g_assert_cmpstr(att, ==, ERR_NO_SUCH_SESSION);
}

/* The attached client of a session that reaches its duration gets
 * SessionEnded(o path, s "duration-reached", a{sv} stats). */
static void test_session_ended_signal(void) {
        g_autofree char *cfg = config_text(2000), *out = NULL, *path = NULL, *ended = NULL, *err = NULL;
        int fd = open_output("ended-signal.pftrace", &out);
        ClientSpec spec = { .user = "tbuser", .op = OP_START, .config = cfg, .output_fd = fd, .hold = true };
        g_autoptr(GHashTable) st = NULL;
        g_autoptr(GError) error = NULL;
        g_auto(GStrv) f = NULL;
        TbBusy busy;
        Client c;

        g_assert_true(tb_busy_start("tbbusy-sig", &busy, &error));
        path = start_held(&spec, &c);
        close(fd);
        ended = client_expect(&c, 'X', 10000, &err);
        if (!ended)
                g_error("no SessionEnded: %s", err);
        note("SessionEnded: %s\n", ended);
        f = g_strsplit(ended, "\t", 3);
        g_assert_cmpstr(f[0], ==, path);
        g_assert_cmpstr(f[1], ==, "duration-reached");
        g_assert_nonnull(f[2]);
        st = parse_stats(ended);
        g_assert_nonnull(g_hash_table_lookup(st, "Events"));
        g_assert_nonnull(g_hash_table_lookup(st, "Bytes"));
        g_assert_nonnull(g_hash_table_lookup(st, "EventsLost"));
        g_assert_cmpstr(g_hash_table_lookup(st, "Reason"), ==, "duration-reached");
        g_assert_cmpuint(g_ascii_strtoull(g_hash_table_lookup(st, "Events"), NULL, 10), >, 0);
        client_finish(&c, 5000);
        tb_busy_stop(&busy);
        wait_over(path, 10000);
        assert_trace_file_closed(out);
}

/* ===================================================================== */
/* 6. Other users                                                         */
/* ===================================================================== */

static bool list_has(const char *list, const char *path) {
        g_auto(GStrv) items = g_strsplit(list, " ", -1);
        return g_strv_contains((const char *const *) items, path);
}

static void test_other_user_denied(void) {
        g_autofree char *cfg = config_text(60000), *out = NULL, *path = NULL, *admin_path = NULL;
        g_autofree char *use = NULL, *name = NULL, *err = NULL, *node = NULL;
        g_autofree char *l_other = NULL, *l_user = NULL, *l_admin = NULL, *x_other = NULL, *x_user = NULL;
        int fd = open_output("other-denied.pftrace", &out);
        ClientSpec su = { .user = "tbuser", .op = OP_START, .config = cfg, .output_fd = fd, .detach_key = "other-6" };
        ClientSpec sa = { .user = "tbadmin", .op = OP_START, .config = cfg, .output_fd = -1 };
        ClientSpec other = { .user = "tbother", .op = OP_HOLD_NAME, .output_fd = -1 };
        const char *cmds[] = { "stop", "sstop", "detach stolen", "sdetach stolen", "get State", "get OwnerUid",
                               "getall" };
        const char kinds[] = { 'S', 'S', 'D', 'D', 'V', 'V', 'V' };
        const char *expected[] = { ERR_NO_SUCH_SESSION, ERR_UNKNOWN_OBJECT, ERR_NO_SUCH_SESSION, ERR_UNKNOWN_OBJECT,
                                   ERR_UNKNOWN_OBJECT, ERR_UNKNOWN_OBJECT, ERR_UNKNOWN_OBJECT };
        g_autoptr(GHashTable) st = NULL, st2 = NULL;
        Client c;

        path = start_and_leave(&su);
        close(fd);
        admin_path = start_and_leave(&sa);

        client_spawn(&other, &c);
        name = client_expect(&c, 'N', 10000, &err);
        g_assert_nonnull(name);
        use = g_strconcat("use ", path, NULL);
        g_free(must(&c, use, 'U'));
        /* Another user's session is no session of tbother's: the Manager answers
         * NoSuchSession, the session's own path is no object at all. */
        for (size_t i = 0; i < G_N_ELEMENTS(cmds); i++) {
                g_autofree char *e = must_fail(&c, cmds[i], kinds[i]);
                g_assert_cmpstr(e, ==, expected[i]);
        }
        /* tbother sees neither session, in ListSessions nor in the object tree. */
        l_other = must(&c, "list", 'L');
        x_other = must(&c, "introspect " TB_MANAGER_PATH "/session", 'I');
        client_finish(&c, 5000);
        note("tbother's ListSessions: \"%s\"\n", l_other);
        g_assert_false(list_has(l_other, path));
        g_assert_false(list_has(l_other, admin_path));
        node = g_strdup_printf("<node name=\"%s\"", session_id(path));
        g_assert_null(strstr(x_other, node));
        x_user = one_cmd("tbuser", "introspect " TB_MANAGER_PATH "/session", 'I', NULL);
        g_assert_nonnull(x_user);
        g_assert_nonnull(strstr(x_user, node));

        /* tbuser: own sessions only; tbadmin (manage): all. */
        l_user = one_cmd("tbuser", "list", 'L', NULL);
        l_admin = one_cmd("tbadmin", "list", 'L', NULL);
        note("tbuser's ListSessions: \"%s\"; tbadmin's: \"%s\"\n", l_user, l_admin);
        g_assert_true(list_has(l_user, path));
        g_assert_false(list_has(l_user, admin_path));
        g_assert_true(list_has(l_admin, path));
        g_assert_true(list_has(l_admin, admin_path));

        /* Unchanged by tbother. */
        assert_recording(path);
        g_assert_true(detached_property(path));
        g_assert_true(is_detached_as("tbuser", "other-6"));

        /* tbadmin may stop tbuser's session. */
        st = stop_as("tbadmin", path);
        g_assert_cmpstr(g_hash_table_lookup(st, "Reason"), ==, "stopped");
        wait_over(path, 10000);
        st2 = stop_as("tbadmin", admin_path);
        wait_over(admin_path, 10000);
        assert_trace_file_closed(out);
}

/* Attach and IsDetached are per UID even for tbadmin and root. */
static void test_attach_per_uid_admin_root(void) {
        g_autofree char *cfg = config_text(60000), *out = NULL, *path = NULL, *e_admin = NULL, *e_root = NULL;
        int fd = open_output("attach-root.pftrace", &out);
        ClientSpec spec = { .user = "tbuser", .op = OP_START, .config = cfg, .output_fd = fd, .detach_key = "root-6b" };
        g_autoptr(GHashTable) st = NULL;

        path = start_and_leave(&spec);
        close(fd);
        e_admin = cmd_error("tbadmin", "attach root-6b", 'O');
        e_root = cmd_error("root", "attach root-6b", 'O');
        g_assert_cmpstr(e_admin, ==, ERR_NO_SUCH_SESSION);
        g_assert_cmpstr(e_root, ==, ERR_NO_SUCH_SESSION);
        g_assert_false(is_detached_as("tbadmin", "root-6b"));
        g_assert_false(is_detached_as("root", "root-6b"));
        assert_recording(path);
        g_assert_true(detached_property(path));
        g_assert_true(is_detached_as("tbuser", "root-6b"));
        st = stop_as("tbuser", path);
        wait_over(path, 10000);
        assert_trace_file_closed(out);
}

/* ===================================================================== */
/* 7. Limits                                                              */
/* ===================================================================== */

static const char *const switch_only[] = { "sched/sched_switch", NULL };

/* A small trace-dir session of user (detached, keyless); its path. */
static char *start_small(const char *user) {
        ClientSpec spec = { .user = user, .op = OP_START, .events = switch_only, .duration_ms = 120000,
                            .buffer_size_kb = 256, .output_fd = -1 };
        return start_and_leave(&spec);
}

static char *start_small_error(const char *user, char **ret_full) {
        ClientSpec spec = { .user = user, .op = OP_START, .events = switch_only, .duration_ms = 120000,
                            .buffer_size_kb = 256, .output_fd = -1 };
        g_autofree char *out = NULL;
        char *e = client_run_full(&spec, &out, ret_full);

        if (!e)
                note("%s's Start unexpectedly made %s\n", user, out);
        return e;
}

static void test_limit_per_uid(void) {
        g_autoptr(GPtrArray) paths = g_ptr_array_new_with_free_func(g_free);
        g_auto(GStrv) inst = NULL, files = NULL;
        g_autofree char *e = NULL;

        for (int i = 0; i < 5; i++)
                g_ptr_array_add(paths, start_small("tbuser"));
        snapshot_state(&inst, &files);
        e = start_small_error("tbuser", NULL);
        g_assert_cmpstr(e, ==, ERR_TOO_MANY_SESSIONS);
        assert_nothing_created(inst, files);
        for (guint i = 0; i < paths->len; i++)
                assert_recording(paths->pdata[i]);
        for (guint i = 0; i < paths->len; i++) {
                g_autoptr(GHashTable) st = stop_as("tbuser", paths->pdata[i]);
                wait_over(paths->pdata[i], 10000);
        }
}

/* Whether polkit gives user org.tracebus.record (asked for a connection of user). */
static bool polkit_authorized(const char *user) {
        ClientSpec spec = { .user = user, .op = OP_HOLD_NAME, .output_fd = -1 };
        g_autofree char *name = NULL, *err = NULL;
        g_autoptr(GVariant) reply = NULL;
        g_autoptr(GError) error = NULL;
        GVariantBuilder subject;
        gboolean authorized = FALSE;
        Client c;

        client_spawn(&spec, &c);
        name = client_expect(&c, 'N', 10000, &err);
        g_assert_nonnull(name);
        g_variant_builder_init(&subject, G_VARIANT_TYPE("a{sv}"));
        g_variant_builder_add(&subject, "{sv}", "name", g_variant_new_string(name));
        reply = g_dbus_connection_call_sync(tb_bus()->conn, "org.freedesktop.PolicyKit1",
                                            "/org/freedesktop/PolicyKit1/Authority",
                                            "org.freedesktop.PolicyKit1.Authority", "CheckAuthorization",
                                            g_variant_new("((sa{sv})sa{ss}us)", "system-bus-name", &subject,
                                                          "org.tracebus.record", NULL, (guint32) 0, ""),
                                            G_VARIANT_TYPE("((bba{ss}))"), G_DBUS_CALL_FLAGS_NONE, 10000, NULL,
                                            &error);
        g_assert_no_error(error);
        g_variant_get(reply, "((bb@a{ss}))", &authorized, NULL, NULL);
        client_finish(&c, 5000);
        return authorized;
}

static void wait_polkit(const char *user, bool want) {
        gint64 deadline = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;

        while (polkit_authorized(user) != want) {
                if (g_get_monotonic_time() > deadline)
                        g_error("polkit did not pick up the test rule for %s (want %d)", user, want);
                g_usleep(50 * 1000);
        }
}

/* 16 sessions in all: tbuser, tbadmin and root 5 each, and one of a fourth
 * user, "nobody", whom a rule added for this case lets record (polkitd
 * reloads rules.d by itself). */
static void test_limit_total(void) {
        g_autoptr(GPtrArray) paths = g_ptr_array_new_with_free_func(g_free);
        const char *users[] = { "tbuser", "tbadmin", "root" };
        g_autofree char *rule = g_build_filename(tb_bus()->tmpdir, "rules.d", LIMIT_RULES_FILE, NULL);
        g_autofree char *e1 = NULL, *e2 = NULL, *e3 = NULL, *full = NULL;
        g_auto(GStrv) inst = NULL, files = NULL, all = NULL;
        g_autoptr(GError) error = NULL;

        g_assert_true(g_file_set_contents_full(
                rule,
                "// Added by tests/test-sessions.c for the 16-session limit, removed after.\n"
                "polkit.addRule(function(action, subject) {\n"
                "    if (action.id == \"org.tracebus.record\" && subject.user == \"nobody\")\n"
                "        return polkit.Result.YES;\n"
                "});\n",
                -1, G_FILE_SET_CONTENTS_NONE, 0644, &error));
        g_assert_no_error(error);
        wait_polkit("nobody", true);

        for (size_t u = 0; u < G_N_ELEMENTS(users); u++)
                for (int i = 0; i < 5; i++)
                        g_ptr_array_add(paths, start_small(users[u]));
        g_ptr_array_add(paths, start_small("nobody"));
        all = all_sessions();
        g_assert_cmpuint(g_strv_length(all), ==, 16);

        snapshot_state(&inst, &files);
        e1 = start_small_error("nobody", &full); /* 1 of its 5, but the 17th */
        e2 = start_small_error("root", NULL);
        e3 = start_small_error("tbadmin", NULL);
        g_assert_cmpstr(e1, ==, ERR_TOO_MANY_SESSIONS);
        g_assert_cmpstr(e2, ==, ERR_TOO_MANY_SESSIONS);
        g_assert_cmpstr(e3, ==, ERR_TOO_MANY_SESSIONS);
        assert_nothing_created(inst, files);

        for (guint i = 0; i < paths->len; i++) {
                root_stop(paths->pdata[i]);
                wait_over(paths->pdata[i], 10000);
        }
        remove_limit_rule();
        wait_polkit("nobody", false);
}

/* duration_ms: at most 7 days. */
static void test_limit_duration(void) {
        g_autofree char *too_long = config_text(604800001), *max = config_text(604800000);
        g_autofree char *e1 = NULL, *e2 = NULL, *path = NULL, *dur = NULL;
        g_auto(GStrv) inst = NULL, files = NULL;
        ClientSpec by_config = { .user = "tbuser", .op = OP_START, .config = too_long, .output_fd = -1 };
        ClientSpec by_option = { .user = "tbuser", .op = OP_START, .events = switch_only, .duration_ms = 604800001,
                                 .output_fd = -1 };
        ClientSpec at_max = { .user = "tbuser", .op = OP_START, .config = max, .output_fd = -1 };
        g_autoptr(GHashTable) st = NULL;
        g_autoptr(GVariant) v = NULL;
        g_autoptr(GError) error = NULL;

        snapshot_state(&inst, &files);
        e1 = client_run(&by_config, NULL);
        e2 = client_run(&by_option, NULL);
        g_assert_cmpstr(e1, ==, ERR_INVALID_CONFIG);
        g_assert_cmpstr(e2, ==, ERR_INVALID_CONFIG);
        assert_nothing_created(inst, files);

        path = start_and_leave(&at_max);
        v = tb_get_property(tb_bus()->conn, path, TB_SESSION_IFACE, "DurationMs", &error);
        g_assert_no_error(error);
        g_assert_cmpuint(g_variant_get_uint32(v), ==, 604800000);
        st = stop_as("tbuser", path);
        wait_over(path, 10000);
}

/* ===================================================================== */
/* 9. Perfetto's detached-mode configs                                    */
/* ===================================================================== */

/* Decodes a file the service may be writing into right now: a read that
 * races with a write can see a partial tail, so try a few times. */
static void read_while_recording(const char *path, TbTraceSummary *s) {
        g_autoptr(GError) error = NULL;

        for (int i = 0;; i++) {
                g_clear_error(&error);
                if (tb_trace_file_read(path, s, &error))
                        break;
                note("reading %s while recording: %s\n", path, error->message);
                if (i == 3)
                        g_error("the trace being recorded does not decode");
                g_usleep(200 * 1000);
        }
        {
                g_autofree char *desc = tb_trace_summary_describe(s);
                note("%s while recording: %s\n", path, desc);
        }
}

/* (a) write_into_file, file_write_period_ms 5000: after ~6 s the file
 * already holds whole packets with events. */
static void test_perfetto_long_trace(void) {
        g_autofree char *cfg = fixture_config("detached-long-trace.pbtxt"), *out = NULL, *path = NULL;
        int fd = open_output("perfetto-long.pftrace", &out);
        ClientSpec spec = { .user = "tbuser", .op = OP_START, .config = cfg, .output_fd = fd, .detach_key = "long-9a" };
        g_auto(TbTraceSummary) early = { 0 }, mid = { 0 }, fin = { 0 };
        g_autoptr(GHashTable) st = NULL;
        g_autoptr(GError) error = NULL;
        gint64 t0;
        TbBusy busy;

        g_assert_true(tb_busy_start("tbbusy-long", &busy, &error));
        t0 = g_get_monotonic_time();
        path = start_and_leave(&spec);
        close(fd);
        g_usleep(2000 * 1000);
        read_while_recording(out, &early);
        note("after 2 s: %u bundles (the first periodic write is due at 5 s)\n", early.n_ftrace_bundles);
        /* 1.5 s past it, a slower build's write given more. */
        g_usleep((gulong) MAX(0, t0 + (5000 + (gint64) tb_scaled_ms(1500)) * 1000 - g_get_monotonic_time()));
        assert_recording(path);
        read_while_recording(out, &mid);
        g_assert_true(mid.has_clock_snapshot && mid.has_trace_config && mid.has_tracing_started);
        g_assert_cmpuint(mid.n_ftrace_bundles, >, 0);
        g_assert_cmpuint(mid.n_sched_switch + mid.n_compact_switch, >, 0);

        st = stop_as("tbuser", path);
        tb_busy_stop(&busy);
        wait_over(path, 10000);
        assert_trace_file_closed(out);
        summarise(out, &fin);
        assert_busy_seen(&fin, &busy);
        g_assert_cmpuint(fin.n_packets, >=, mid.n_packets);
}

/* (b) ring buffer saved at stop: nothing but the opening packets until
 * Stop, then the whole trace. */
static void test_perfetto_ring_buffer(void) {
        g_autofree char *cfg = fixture_config("detached-ring-buffer.pbtxt"), *out = NULL, *path = NULL;
        int fd = open_output("perfetto-ring.pftrace", &out);
        ClientSpec spec = { .user = "tbuser", .op = OP_START, .config = cfg, .output_fd = fd, .detach_key = "ring-9b" };
        g_auto(TbTraceSummary) mid = { 0 }, fin = { 0 };
        g_autoptr(GHashTable) st = NULL;
        g_autoptr(GError) error = NULL;
        TbBusy busy;

        g_assert_true(tb_busy_start("tbbusy-ring", &busy, &error));
        path = start_and_leave(&spec);
        close(fd);
        g_usleep(2000 * 1000);
        read_while_recording(out, &mid);
        g_assert_cmpuint(mid.n_ftrace_bundles, ==, 0);

        st = stop_as("tbuser", path);
        tb_busy_stop(&busy);
        wait_over(path, 10000);
        assert_trace_file_closed(out);
        summarise(out, &fin);
        assert_busy_seen(&fin, &busy);
}

/* (c) duration_ms, then a later Attach that waits for the end. */
static void test_perfetto_time_limit(void) {
        g_autofree char *cfg = fixture_config("detached-time-limit.pbtxt"), *out = NULL, *path = NULL;
        g_autofree char *name = NULL, *err = NULL, *attached = NULL, *ended = NULL;
        int fd = open_output("perfetto-time-limit.pftrace", &out);
        ClientSpec spec = { .user = "tbuser", .op = OP_START, .config = cfg, .output_fd = fd,
                            .detach_key = "timelimit-9c" };
        ClientSpec waiter = { .user = "tbuser", .op = OP_HOLD_NAME, .output_fd = -1 };
        g_autoptr(GError) error = NULL;
        g_auto(GStrv) f = NULL;
        TbBusy busy;
        Client c;

        g_assert_true(tb_busy_start("tbbusy-tlim", &busy, &error));
        path = start_and_leave(&spec);
        close(fd);
        g_usleep(1000 * 1000);
        client_spawn(&waiter, &c);
        name = client_expect(&c, 'N', 10000, &err);
        g_assert_nonnull(name);
        attached = must(&c, "attach timelimit-9c", 'O');
        g_assert_cmpstr(attached, ==, path);
        ended = client_expect(&c, 'X', 15000, &err);
        if (!ended)
                g_error("the attached client got no SessionEnded: %s", err);
        note("SessionEnded: %s\n", ended);
        f = g_strsplit(ended, "\t", 3);
        g_assert_cmpstr(f[0], ==, path);
        g_assert_cmpstr(f[1], ==, "duration-reached");
        client_finish(&c, 5000);
        tb_busy_stop(&busy);
        wait_over(path, 10000);
        assert_trace_file_closed(out);
}

/* ===================================================================== */
/* 10. busctl alone                                                       */
/* ===================================================================== */

static char **busctl_as(const char *user, const char *const *argv, const char *what) {
        g_auto(TbCommandResult) res = { 0 };
        g_autoptr(GError) error = NULL;

        g_assert_true(tb_run_as_user(user, argv, &res, &error));
        g_assert_no_error(error);
        log_command(what, &res);
        g_assert_true(tb_command_succeeded(&res));
        return busctl_tokens(res.out);
}

/*
 * The detach workflow with busctl only (the README quotes these):
 *
 *   busctl --system call org.tracebus.Tracebus1 /org/tracebus/Tracebus1 \
 *       org.tracebus.Tracebus1.Manager Start 'sa{sv}' "$CONFIG" 1 DetachKey s mykey
 *   -> o "/org/tracebus/Tracebus1/session/N"
 *   busctl --system call org.tracebus.Tracebus1 /org/tracebus/Tracebus1 \
 *       org.tracebus.Tracebus1.Manager IsDetached s mykey
 *   -> b true
 *   busctl --system call org.tracebus.Tracebus1 /org/tracebus/Tracebus1 \
 *       org.tracebus.Tracebus1.Manager Attach s mykey
 *   -> o "/org/tracebus/Tracebus1/session/N"
 *      busctl leaves the bus right after the reply, and the session now
 *      belongs to that connection: it stops (client-vanished), trace complete.
 *
 *   busctl --system call org.tracebus.Tracebus1 /org/tracebus/Tracebus1 \
 *       org.tracebus.Tracebus1.Manager Start 'sa{sv}' "$CONFIG" 0
 *   -> o "/org/tracebus/Tracebus1/session/M"   (keyless, detached, in the trace dir)
 *   busctl --system call org.tracebus.Tracebus1 /org/tracebus/Tracebus1 \
 *       org.tracebus.Tracebus1.Manager Stop o /org/tracebus/Tracebus1/session/M
 *   -> a{sv} 5 "Events" t ... "Bytes" t ... "EventsLost" t ... "Reason" s "stopped"
 *            "OutputPath" s "/var/lib/tracebus/traces/UID/..."
 */
static void test_busctl_workflow(void) {
        g_autofree char *config = config_text(60000), *file = NULL;
        const char *start_argv[] = { "busctl", "--system", "call", TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_IFACE,
                                     "Start", "sa{sv}", config, "1", "DetachKey", "s", "mykey", NULL };
        const char *is_argv[] = { "busctl", "--system", "call", TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_IFACE,
                                  "IsDetached", "s", "mykey", NULL };
        const char *attach_argv[] = { "busctl", "--system", "call", TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_IFACE,
                                      "Attach", "s", "mykey", NULL };
        const char *keyless_argv[] = { "busctl", "--system", "call", TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_IFACE,
                                       "Start", "sa{sv}", config, "0", NULL };
        g_auto(GStrv) start = NULL, is1 = NULL, att = NULL, is2 = NULL, keyless = NULL, stop = NULL;
        g_autoptr(GHashTable) st = NULL;
        g_autoptr(GError) error = NULL;
        const char *path, *path2;
        uid_t uid = uid_of("tbuser");
        TbBusy busy;

        g_assert_true(tb_busy_start("tbbusy-busctl", &busy, &error));
        start = busctl_as("tbuser", start_argv, "busctl Start (DetachKey mykey)");
        g_assert_cmpuint(g_strv_length(start), ==, 2);
        g_assert_cmpstr(start[0], ==, "o");
        path = start[1];
        g_usleep(300 * 1000);
        assert_recording(path);
        g_assert_true(detached_property(path));
        is1 = busctl_as("tbuser", is_argv, "busctl IsDetached mykey");
        g_assert_cmpstr(is1[0], ==, "b");
        g_assert_cmpstr(is1[1], ==, "true");

        att = busctl_as("tbuser", attach_argv, "busctl Attach mykey");
        g_assert_cmpstr(att[0], ==, "o");
        g_assert_cmpstr(att[1], ==, path);
        /* busctl's connection is gone with it: the session stops. */
        wait_over(path, 15000);
        assert_end_reason_logged(path, uid, "client-vanished");
        is2 = busctl_as("tbuser", is_argv, "busctl IsDetached mykey (after)");
        g_assert_cmpstr(is2[1], ==, "false");

        keyless = busctl_as("tbuser", keyless_argv, "busctl Start (keyless)");
        g_assert_cmpstr(keyless[0], ==, "o");
        path2 = keyless[1];
        g_usleep(500 * 1000);
        assert_recording(path2);
        g_assert_true(detached_property(path2));
        {
                const char *stop_argv[] = { "busctl", "--system", "call", TB_BUS_NAME, TB_MANAGER_PATH,
                                            TB_MANAGER_IFACE, "Stop", "o", path2, NULL };
                g_auto(TbCommandResult) res = { 0 };
                g_assert_true(tb_run_as_user("tbuser", stop_argv, &res, &error));
                log_command("busctl Stop", &res);
                g_assert_true(tb_command_succeeded(&res));
                st = busctl_stats(res.out);
        }
        tb_busy_stop(&busy);
        file = g_strdup(g_hash_table_lookup(st, "OutputPath"));
        g_assert_nonnull(file);
        g_assert_cmpstr(g_hash_table_lookup(st, "Reason"), ==, "stopped");
        wait_over(path2, 10000);
        assert_service_file(file, uid);
        assert_trace_file_closed(file);
}

/* ===================================================================== */
/* 11. PropertiesChanged                                                  */
/* ===================================================================== */

static void test_properties_changed(void) {
        g_autofree char *cfg = config_periodic(60000, 300, 0), *out = NULL, *path = NULL, *name = NULL;
        g_autofree char *err = NULL, *stats = NULL;
        int fd = open_output("props.pftrace", &out);
        ClientSpec owner = { .user = "tbuser", .op = OP_START, .config = cfg, .output_fd = fd, .hold = true };
        ClientSpec spy = { .user = "tbother", .op = OP_HOLD_NAME, .output_fd = -1 };
        g_autoptr(GPtrArray) mine = NULL, theirs = NULL, progress = g_ptr_array_new();
        g_autoptr(GError) error = NULL;
        guint64 prev_events = 0, first_bytes = 0, last_bytes = 0;
        TbBusy busy;
        Client o, s;

        client_spawn(&spy, &s);
        name = client_expect(&s, 'N', 10000, &err);
        g_assert_nonnull(name);
        g_assert_true(tb_busy_start("tbbusy-props", &busy, &error));
        path = start_held(&owner, &o);
        close(fd);
        g_ptr_array_unref(client_collect(&o, 'P', 0)); /* before the window */

        /* 3 s: at least two once-a-second signals (more time in a slower build). */
        mine = client_collect(&o, 'P', tb_scaled_ms(3000));
        /* Stopped first (more PropertiesChanged: State), then judged. */
        stats = must(&o, "stop", 'S');
        tb_busy_stop(&busy);
        wait_over(path, 10000);

        /* tbother, listening to every org.freedesktop.DBus.Properties signal
         * the whole time, got none of them. */
        theirs = client_collect(&s, 'P', 300);
        for (guint i = 0; i < theirs->len; i++)
                note("tbother received: %s\n", (const char *) theirs->pdata[i]);
        g_assert_cmpuint(theirs->len, ==, 0);
        client_finish(&s, 5000);
        client_finish(&o, 5000);
        assert_trace_file_closed(out);

        /* The owner: BytesWritten/EventsRecorded at least once a second, increasing. */
        for (guint i = 0; i < mine->len; i++) {
                const char *line = mine->pdata[i];
                g_autoptr(GHashTable) h = parse_stats(line);
                const char *ev = g_hash_table_lookup(h, "EventsRecorded"), *by = g_hash_table_lookup(h, "BytesWritten");

                note("owner: PropertiesChanged %s\n", line);
                g_assert_true(g_str_has_prefix(line, path));
                g_assert_nonnull(strstr(line, "\t" TB_SESSION_IFACE "\t"));
                if (!ev || !by)
                        continue; /* State/Detached */
                g_ptr_array_add(progress, (gpointer) line);
                g_assert_cmpuint(g_ascii_strtoull(ev, NULL, 10), >, prev_events);
                prev_events = g_ascii_strtoull(ev, NULL, 10);
                if (progress->len == 1)
                        first_bytes = g_ascii_strtoull(by, NULL, 10);
                g_assert_cmpuint(g_ascii_strtoull(by, NULL, 10), >=, last_bytes);
                last_bytes = g_ascii_strtoull(by, NULL, 10);
        }
        note("owner: %u progress signals in %u s\n", progress->len, tb_scaled_ms(3000) / 1000);
        g_assert_cmpuint(progress->len, >=, 2);
        g_assert_cmpuint(last_bytes, >, first_bytes);
}

/* ===================================================================== */

/* Last: the service still runs, and none of its tracefs instances is left
 * (instances of other tracebusd processes on the machine, e.g. another test
 * run, are only noted). */
static void test_no_leftovers(void) {
        g_auto(GStrv) inst = NULL, all = NULL, others = NULL;
        g_autoptr(GError) error = NULL;

        wait_no_own_instances(10000);
        inst = own_instances();
        all = tb_tracebus_instances();
        others = tb_strv_added(inst, all);

        for (size_t i = 0; others[i]; i++)
                note("an instance of another tracebusd: %s\n", others[i]);

        g_assert_true(tb_pid_alive(tb_bus()->service_pid));
        g_assert_true(tb_wait_for_name(tb_bus()->conn, TB_BUS_NAME, 0, 100, &error));
        g_assert_no_error(error);
        for (size_t i = 0; inst[i]; i++)
                note("left-over instance: %s\n", inst[i]);
        g_assert_cmpuint(g_strv_length(inst), ==, 0);
}

#define CASE(fn)                       \
        static void case_##fn(void) {  \
                case_begin();          \
                test_##fn();           \
                case_end();            \
        }
CASE(lifetime_bound)
CASE(lifetime_trace_dir)
CASE(detach_key_validation)
CASE(detach_survives_client)
CASE(detach_same_key_two_users)
CASE(detach_key_in_use)
CASE(attach_other_uid)
CASE(attach_rebinds)
CASE(is_detached)
CASE(detached_duration_ends)
CASE(detached_size_ends)
CASE(session_ended_signal)
CASE(other_user_denied)
CASE(attach_per_uid_admin_root)
CASE(limit_per_uid)
CASE(limit_total)
CASE(limit_duration)
CASE(perfetto_long_trace)
CASE(perfetto_ring_buffer)
CASE(perfetto_time_limit)
CASE(busctl_workflow)
CASE(properties_changed)

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();

        tb_test_add_isolated("/bus/sessions/01-lifetime-bound", case_lifetime_bound);
        tb_test_add_isolated("/bus/sessions/01-lifetime-trace-dir", case_lifetime_trace_dir);
        tb_test_add_isolated("/bus/sessions/02-detach-key-validation", case_detach_key_validation);
        tb_test_add_isolated("/bus/sessions/02-detach-survives-client", case_detach_survives_client);
        tb_test_add_isolated("/bus/sessions/02-detach-same-key-two-users", case_detach_same_key_two_users);
        tb_test_add_isolated("/bus/sessions/02-detach-key-in-use", case_detach_key_in_use);
        tb_test_add_isolated("/bus/sessions/03-attach-other-uid", case_attach_other_uid);
        tb_test_add_isolated("/bus/sessions/03-attach-rebinds", case_attach_rebinds);
        tb_test_add_isolated("/bus/sessions/04-is-detached", case_is_detached);
        tb_test_add_isolated("/bus/sessions/05-detached-duration-ends", case_detached_duration_ends);
        tb_test_add_isolated("/bus/sessions/05-detached-size-ends", case_detached_size_ends);
        tb_test_add_isolated("/bus/sessions/05-session-ended-signal", case_session_ended_signal);
        tb_test_add_isolated("/bus/sessions/06-other-user-denied", case_other_user_denied);
        tb_test_add_isolated("/bus/sessions/06-attach-per-uid-admin-root", case_attach_per_uid_admin_root);
        tb_test_add_isolated("/bus/sessions/07-limit-per-uid", case_limit_per_uid);
        tb_test_add_isolated("/bus/sessions/07-limit-total", case_limit_total);
        tb_test_add_isolated("/bus/sessions/07-limit-duration", case_limit_duration);
        tb_test_add_isolated("/bus/sessions/09-perfetto-long-trace", case_perfetto_long_trace);
        tb_test_add_isolated("/bus/sessions/09-perfetto-ring-buffer", case_perfetto_ring_buffer);
        tb_test_add_isolated("/bus/sessions/09-perfetto-time-limit", case_perfetto_time_limit);
        tb_test_add_isolated("/bus/sessions/10-busctl-workflow", case_busctl_workflow);
        tb_test_add_isolated("/bus/sessions/11-properties-changed", case_properties_changed);
        tb_test_add_isolated("/bus/sessions/99-no-leftovers", test_no_leftovers);
        return tb_test_run(TB_START_SERVICE);
}
