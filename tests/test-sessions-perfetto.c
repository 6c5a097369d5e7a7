/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite: sessions that outlive their client (detached mode), one case a
 * rule of the contract in dbus/org.tracebus.Tracebus1.{Manager,Session}.xml.
 * This part: Perfetto's detached-mode configs, busctl alone, and
 * PropertiesChanged. The other parts are tests/test-sessions-*.c; the SIGTERM
 * case needs a service of its own: tests/test-shutdown.c. The helpers are in
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
        assert_closed_trace_with(out, &busy, &fin);
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
        assert_closed_trace_with(out, &busy, &fin);
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
 * The detach workflow with busctl only (the user guide quotes these):
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
        uid_t uid = tb_user_uid("tbuser");
        TbBusy busy;

        g_assert_true(tb_busy_start("tbbusy-busctl", &busy, &error));
        start = busctl_as("tbuser", start_argv, "busctl Start (DetachKey mykey)");
        /* "oas" PATH N WARNING...: the session, and the config's warnings (none here). */
        g_assert_cmpuint(g_strv_length(start), ==, 3);
        g_assert_cmpstr(start[0], ==, "oas");
        g_assert_cmpstr(start[2], ==, "0");
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
        g_assert_cmpstr(keyless[0], ==, "oas");
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

SESSION_CASE(perfetto_long_trace)
SESSION_CASE(perfetto_ring_buffer)
SESSION_CASE(perfetto_time_limit)
SESSION_CASE(busctl_workflow)
SESSION_CASE(properties_changed)

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();

        tb_test_add_isolated("/bus/sessions/09-perfetto-long-trace", case_perfetto_long_trace);
        tb_test_add_isolated("/bus/sessions/09-perfetto-ring-buffer", case_perfetto_ring_buffer);
        tb_test_add_isolated("/bus/sessions/09-perfetto-time-limit", case_perfetto_time_limit);
        tb_test_add_isolated("/bus/sessions/10-busctl-workflow", case_busctl_workflow);
        tb_test_add_isolated("/bus/sessions/11-properties-changed", case_properties_changed);
        tb_test_add_isolated("/bus/sessions/99-no-leftovers", session_test_no_leftovers);
        return tb_test_run(TB_START_SERVICE);
}
