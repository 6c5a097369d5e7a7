/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite: sessions that outlive their client (detached mode), one case a
 * rule of the contract in dbus/org.tracebus.Tracebus1.{Manager,Session}.xml.
 * This part: Attach, IsDetached, and detached sessions that end by themselves.
 * The other parts are tests/test-sessions-*.c; the SIGTERM case needs a
 * service of its own: tests/test-shutdown.c. The helpers are in
 * tests/session-util.h.
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
        uid_str = g_strdup_printf("%u", (unsigned) tb_user_uid("tbuser"));
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
        wait_ended(path, 15000, &busy, tb_user_uid("tbuser"), "client-vanished");
        assert_closed_trace_with(out, &busy, &s);
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
        assert_end_reason_logged(path, tb_user_uid("tbuser"), "duration-reached");
        g_assert_false(is_detached_as("tbuser", "dur-5a"));
        att = cmd_error("tbuser", "attach dur-5a", 'O');
        g_assert_cmpstr(att, ==, ERR_NO_SUCH_SESSION);
        assert_closed_trace_with(out, &busy, &s);
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
        /* No IsDetached check, nor a wait for "recording": the limit may end it at once. */
        {
                g_autofree char *err = client_run(&spec, &path);

                if (err)
                        g_error("tbuser's Start failed: %s", err);
        }
        close(fd);
        wait_ended(path, 30000, &busy, tb_user_uid("tbuser"), "size-reached");
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

SESSION_CASE(attach_other_uid)
SESSION_CASE(attach_rebinds)
SESSION_CASE(is_detached)
SESSION_CASE(detached_duration_ends)
SESSION_CASE(detached_size_ends)
SESSION_CASE(session_ended_signal)

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();

        tb_test_add_isolated("/bus/sessions/03-attach-other-uid", case_attach_other_uid);
        tb_test_add_isolated("/bus/sessions/03-attach-rebinds", case_attach_rebinds);
        tb_test_add_isolated("/bus/sessions/04-is-detached", case_is_detached);
        tb_test_add_isolated("/bus/sessions/05-detached-duration-ends", case_detached_duration_ends);
        tb_test_add_isolated("/bus/sessions/05-detached-size-ends", case_detached_size_ends);
        tb_test_add_isolated("/bus/sessions/05-session-ended-signal", case_session_ended_signal);
        tb_test_add_isolated("/bus/sessions/99-no-leftovers", session_test_no_leftovers);
        return tb_test_run(TB_START_SERVICE);
}
