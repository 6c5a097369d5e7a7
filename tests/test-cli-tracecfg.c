/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite: TraceConfig's own fields and the perfetto options around them,
 * through the tracebus CLI against the real service:
 * unique_session_name, builtin_data_sources, trace_uuid, snapshot_interval_ms,
 * cmd_trace_start_delay, --notify-fd, --query and --query-raw, and perfetto's
 * Android-only options. Each effect is read back from the trace by the
 * project's reader (tests/trace-file.h) and by protoc.
 *
 * Users (tests/polkit-rules/50-tracebus-test.rules): tbuser and tbadmin may
 * record, tbother may not.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli-util.h"
#include "session-util.h"

static char *config_with(guint duration_ms, const char *extra) {
        g_autofree char *base = config_text(duration_ms);
        return g_strconcat(base, extra, NULL);
}

/* unique_session_name: a second live session of the name is refused for the same
 * user (SessionNameInUse), allowed for another user, and again once the first ended. */
static void test_unique_session_name(void) {
        g_autofree char *dir = make_user_dir("tbuser", "cfg-uniq"), *adir = make_user_dir("tbadmin", "cfg-uniq-admin");
        g_autofree char *text = config_with(60000, "write_into_file: true\nunique_session_name: \"tb-uniq\"\n");
        g_autofree char *cfg = user_file("tbuser", dir, "config.pbtxt", text, -1);
        g_autofree char *acfg = user_file("tbadmin", adir, "config.pbtxt", text, -1);
        g_autofree char *out1 = g_build_filename(dir, "one.pftrace", NULL), *out2 = g_build_filename(dir, "two.pftrace", NULL);
        g_autofree char *out3 = g_build_filename(dir, "three.pftrace", NULL), *aout = g_build_filename(adir, "a.pftrace", NULL);
        g_autofree char *name = NULL;
        g_auto(TbCommandResult) r1 = { 0 }, r2 = { 0 }, ra = { 0 }, q = { 0 }, stop = { 0 }, r3 = { 0 }, s3 = { 0 }, sa = { 0 };
        g_auto(GStrv) own = NULL;

        run_cli("tbuser", &r1, "--detach=uniq-1", "-c", cfg, "--txt", "-o", out1, NULL);
        assert_exit(&r1, 0);
        own = sessions_of(tb_user_uid("tbuser"));
        g_assert_cmpuint(g_strv_length(own), ==, 1);
        name = string_property(own[0], "UniqueSessionName");
        g_assert_cmpstr(name, ==, "tb-uniq");

        run_cli("tbuser", &r2, "--detach=uniq-2", "-c", cfg, "--txt", "-o", out2, NULL);
        assert_exit(&r2, 1);
        assert_one_line(&r2);
        assert_stderr_has(&r2, "unique session name (tb-uniq)");
        g_assert_cmpuint(g_strv_length(sessions_of(tb_user_uid("tbuser"))), ==, 1);

        /* Per user: tbadmin's session of the same name starts. */
        run_cli("tbadmin", &ra, "--detach=uniq-1", "-c", acfg, "--txt", "-o", aout, NULL);
        assert_exit(&ra, 0);

        run_cli("tbuser", &q, "--query", NULL);
        assert_exit(&q, 0);
        g_assert_nonnull(strstr(q.out, "name:    tb-uniq"));
        g_assert_nonnull(strstr(q.out, "sources: linux.ftrace (2 events)"));
        {
                g_auto(TbCommandResult) j = { 0 };

                run_cli("tbuser", &j, "--query", "--json", NULL);
                assert_exit(&j, 0);
                assert_json(j.out);
                g_assert_nonnull(strstr(j.out, "\"unique_session_name\": \"tb-uniq\""));
                g_assert_nonnull(strstr(j.out, "\"data_sources\": [\"linux.ftrace\"]"));
        }

        run_cli("tbuser", &stop, "--attach=uniq-1", "--stop", NULL);
        assert_exit(&stop, 0);
        g_assert_true(wait_no_sessions(tb_user_uid("tbuser"), 10000));
        run_cli("tbuser", &r3, "--detach=uniq-3", "-c", cfg, "--txt", "-o", out3, NULL);
        assert_exit(&r3, 0);
        run_cli("tbuser", &s3, "--attach=uniq-3", "--stop", NULL);
        assert_exit(&s3, 0);
        run_cli("tbadmin", &sa, "--attach=uniq-1", "--stop", NULL);
        assert_exit(&sa, 0);
        assert_file_complete(out1);
        assert_file_complete(out3);
}

static void count_packet(const Tracebus__TracePacket *p, const TraceRawPacket *raw, guint index, gpointer userdata) {
        guint *counts = userdata;

        counts[0] += p->clock_snapshot != NULL;
        counts[1] += p->service_event != NULL;
        counts[2] += p->trace_uuid != NULL;
        counts[3] += p->trace_attributes != NULL && p->trace_attributes->n_attribute == 3;
}

static void count_packets(const char *path, guint counts[4]) {
        g_autofree char *data = NULL;
        g_autoptr(GError) error = NULL;
        gsize len;

        g_assert_true(g_file_get_contents(path, &data, &len, &error));
        g_assert_true(tb_trace_foreach_packet((const guint8 *) data, len, count_packet, counts, NULL, &error));
        g_assert_no_error(error);
}

static void record(const char *user, const char *dir, const char *name, const char *text, const char *out) {
        g_autofree char *cfg = user_file(user, dir, name, text, -1);
        g_auto(TbCommandResult) res = { 0 };

        run_cli(user, &res, "-c", cfg, "--txt", "-o", out, NULL);
        assert_exit(&res, 0);
}

/* builtin_data_sources' switches and trace_uuid, against the same config without them. */
static void test_builtin_sources(void) {
        g_autofree char *dir = make_user_dir("tbuser", "cfg-builtin");
        g_autofree char *plain = config_text(1000);
        g_autofree char *off = config_with(1000, "builtin_data_sources { disable_clock_snapshotting: true "
                                           "disable_trace_config: true disable_system_info: true "
                                           "disable_service_events: true }\n"
                                           "trace_uuid_msb: 1234605616436508552 trace_uuid_lsb: -81985529216486896\n");
        g_autofree char *out_plain = g_build_filename(dir, "plain.pftrace", NULL);
        g_autofree char *out_off = g_build_filename(dir, "off.pftrace", NULL);
        g_autofree char *decoded = NULL, *decoded_plain = NULL;
        g_auto(TbTraceSummary) a = { 0 }, b = { 0 };
        g_autoptr(GError) error = NULL;
        guint ca[4] = { 0 }, cb[4] = { 0 };
        TbBusy busy;

        g_assert_true(tb_busy_start("tbbusy-builtin", &busy, &error));
        record("tbuser", dir, "plain.pbtxt", plain, out_plain);
        record("tbuser", dir, "off.pbtxt", off, out_off);
        tb_busy_stop(&busy);

        g_assert_true(tb_trace_file_read(out_plain, &a, &error));
        g_assert_true(a.has_clock_snapshot && a.has_trace_config && a.has_system_info && a.has_tracing_started);
        g_assert_true(tb_trace_file_read(out_off, &b, &error));
        g_assert_no_error(error);
        g_assert_false(b.has_clock_snapshot);
        g_assert_false(b.has_trace_config);
        g_assert_false(b.has_system_info);
        g_assert_false(b.has_tracing_started);
        g_assert_cmpuint(b.n_ftrace_bundles, >, 0);
        count_packets(out_plain, ca);
        count_packets(out_off, cb);
        g_assert_cmpuint(ca[0], >, 0);
        g_assert_cmpuint(cb[0], ==, 0);
        g_assert_cmpuint(ca[1], >=, 2);   /* tracing_started, tracing_disabled */
        g_assert_cmpuint(cb[1], ==, 0);
        g_assert_cmpuint(cb[2], ==, 1);

        /* The TraceUuid packet carries the config's halves, as traced writes them. */
        decoded = protoc_decode_trace(out_off);
        assert_decoded_has(decoded, "msb: 1234605616436508552");
        assert_decoded_has(decoded, "lsb: -81985529216486896");
        decoded_plain = protoc_decode_trace(out_plain);
        g_assert_null(strstr(decoded_plain, "msb: 1234605616436508552"));
}

/* snapshot_interval_ms: clock snapshots that often, against the default 10 s. */
static void test_snapshot_interval(void) {
        g_autofree char *dir = make_user_dir("tbuser", "cfg-snap");
        g_autofree char *plain = config_text(2000);
        g_autofree char *fast = config_with(2000, "builtin_data_sources { snapshot_interval_ms: 200 }\n");
        g_autofree char *out_plain = g_build_filename(dir, "plain.pftrace", NULL);
        g_autofree char *out_fast = g_build_filename(dir, "fast.pftrace", NULL);
        guint cp[4] = { 0 }, cf[4] = { 0 };

        record("tbuser", dir, "plain.pbtxt", plain, out_plain);
        record("tbuser", dir, "fast.pbtxt", fast, out_fast);
        count_packets(out_plain, cp);
        count_packets(out_fast, cf);
        note("clock snapshots in 2 s: %u by default, %u every 200 ms\n", cp[0], cf[0]);
        /* The default: the opening one and the closing one. */
        g_assert_cmpuint(cp[0], <=, 2);
        g_assert_cmpuint(cf[0], >=, cp[0] + 3);
}

/* flush_period_ms with write_into_file: the file is written that often, though
 * file_write_period_ms alone would write it only at the end. */
static void test_flush_period(void) {
        g_autofree char *dir = make_user_dir("tbuser", "cfg-flush");
        g_autofree char *slow = config_with(60000, "write_into_file: true\nfile_write_period_ms: 600000\n");
        g_autofree char *fast = config_with(60000, "write_into_file: true\nfile_write_period_ms: 600000\n"
                                            "flush_period_ms: 300\n");
        g_autofree char *cslow = user_file("tbuser", dir, "slow.pbtxt", slow, -1);
        g_autofree char *cfast = user_file("tbuser", dir, "fast.pbtxt", fast, -1);
        g_autofree char *oslow = g_build_filename(dir, "slow.pftrace", NULL), *ofast = g_build_filename(dir, "fast.pftrace", NULL);
        g_auto(TbCommandResult) r1 = { 0 }, r2 = { 0 }, s1 = { 0 }, s2 = { 0 };
        g_autoptr(GError) error = NULL;
        off_t slow_size, fast_size;
        TbBusy busy;

        g_assert_true(tb_busy_start("tbbusy-flush", &busy, &error));
        run_cli("tbuser", &r1, "--detach=flush-slow", "-c", cslow, "--txt", "-o", oslow, NULL);
        assert_exit(&r1, 0);
        run_cli("tbuser", &r2, "--detach=flush-fast", "-c", cfast, "--txt", "-o", ofast, NULL);
        assert_exit(&r2, 0);
        /* Both record the same storm: only the one with flush_period_ms grows. */
        fast_size = wait_larger(ofast, file_size(oslow) + 64 * 1024, g_get_monotonic_time() + 20 * G_USEC_PER_SEC);
        slow_size = file_size(oslow);
        note("while recording: %lld bytes with flush_period_ms 300, %lld without\n", (long long) fast_size,
             (long long) slow_size);
        g_assert_cmpint(fast_size, >, slow_size + 64 * 1024);
        run_cli("tbuser", &s1, "--attach=flush-slow", "--stop", NULL);
        run_cli("tbuser", &s2, "--attach=flush-fast", "--stop", NULL);
        tb_busy_stop(&busy);
        assert_exit(&s1, 0);
        assert_exit(&s2, 0);
        assert_file_complete(oslow);
        assert_file_complete(ofast);
}

/* --notify-fd: the status byte 0 once recording, 1 when the start is refused. */
static void test_notify_fd(void) {
        g_autofree char *dir = make_user_dir("tbuser", "cfg-notify"), *odir = make_user_dir("tbother", "cfg-notify-other");
        g_autofree char *out = g_build_filename(dir, "trace.pftrace", NULL);
        g_autofree char *note_ok = g_build_filename(dir, "notify", NULL), *note_bad = g_build_filename(odir, "notify", NULL);
        g_autofree char *ok = g_strdup_printf("tracebus --notify-fd 3 -t 1s -o %s sched/sched_switch 3>%s", out, note_ok);
        g_autofree char *bad = g_strdup_printf("tracebus --notify-fd 3 -t 1s -o %s/t.pftrace sched/sched_switch 3>%s",
                                               odir, note_bad);
        g_autofree char *data_ok = NULL, *data_bad = NULL;
        g_auto(TbCommandResult) r1 = { 0 }, r2 = { 0 }, r3 = { 0 };
        gsize len_ok = 0, len_bad = 0;

        run_sh("tbuser", ok, &r1);
        assert_exit(&r1, 0);
        g_assert_true(g_file_get_contents(note_ok, &data_ok, &len_ok, NULL));
        g_assert_cmpuint(len_ok, ==, 1);
        g_assert_cmpint(data_ok[0], ==, 0);
        assert_file_complete(out);

        run_sh("tbother", bad, &r2);
        assert_exit(&r2, 1);
        g_assert_true(g_file_get_contents(note_bad, &data_bad, &len_bad, NULL));
        g_assert_cmpuint(len_bad, ==, 1);
        g_assert_cmpint(data_bad[0], ==, 1);

        run_cli("tbuser", &r3, "--notify-fd", "9", "-t", "1s", "-o", out, "sched/sched_switch", NULL);
        assert_exit(&r3, 1);
        assert_stderr_has(&r3, "not an open file descriptor");
}

/* cmd_trace_start_delay: the CLI waits before Start; max below min is refused. */
static void test_start_delay(void) {
        g_autofree char *dir = make_user_dir("tbuser", "cfg-delay");
        g_autofree char *text = config_with(300, "cmd_trace_start_delay { min_delay_ms: 1500 max_delay_ms: 1600 }\n");
        g_autofree char *bad_text = config_with(300, "cmd_trace_start_delay { min_delay_ms: 20 max_delay_ms: 10 }\n");
        g_autofree char *cfg = user_file("tbuser", dir, "config.pbtxt", text, -1);
        g_autofree char *bad = user_file("tbuser", dir, "bad.pbtxt", bad_text, -1);
        g_autofree char *out = g_build_filename(dir, "trace.pftrace", NULL);
        g_auto(TbCommandResult) res = { 0 }, refused = { 0 };
        gint64 t0 = g_get_monotonic_time();

        run_cli("tbuser", &res, "-c", cfg, "--txt", "-o", out, NULL);
        /* A lower bound only: the delay is slept whatever the machine's load. */
        g_assert_cmpint(g_get_monotonic_time() - t0, >=, 1500 * 1000);
        assert_exit(&res, 0);
        assert_file_complete(out);
        run_cli("tbuser", &refused, "-c", bad, "--txt", "-o", out, NULL);
        assert_exit(&refused, 1);
        assert_stderr_has(&refused, "max_delay_ms 10 is below min_delay_ms 20");
}

/* Waits until tracebus --query --json as @user shows @needle (an app's registration). */
static bool wait_query_shows(const char *user, const char *needle) {
        gint64 deadline = g_get_monotonic_time() + (gint64) tb_scaled_ms(20000) * 1000;

        while (g_get_monotonic_time() < deadline) {
                g_auto(TbCommandResult) q = { 0 };

                run_cli(user, &q, "--query", "--json", NULL);
                if (q.out && strstr(q.out, needle))
                        return true;
                g_usleep(200 * 1000);
        }
        return false;
}

/* --query-raw: a TracingServiceState that protoc decodes, counting the caller's sessions,
 * with the service's producer and the caller's Perfetto SDK app and its data sources. */
static void test_query_raw(void) {
        g_autofree char *dir = make_user_dir("tbuser", "cfg-qraw");
        g_autofree char *text = config_text(60000);
        g_autofree char *cfg = user_file("tbuser", dir, "config.pbtxt", text, -1);
        g_autofree char *out = g_build_filename(dir, "trace.pftrace", NULL);
        g_autofree char *raw = g_build_filename(dir, "state.pb", NULL);
        g_autofree char *script = g_strdup_printf("tracebus --query-raw > %s", raw);
        g_autofree char *protos = g_build_filename(tb_bus()->source_dir, "protos", NULL);
        g_autofree char *decode = g_strdup_printf("protoc --proto_path=%s --decode=tracebus.TracingServiceState "
                                                  "trace.proto < %s", protos, raw);
        g_auto(TbCommandResult) start = { 0 }, q = { 0 }, dec = { 0 }, stop = { 0 }, combo = { 0 };
        g_autofree char *sock = g_build_filename(tb_bus()->tmpdir, TB_PRODUCER_SOCKET, NULL);
        g_auto(TbUser) user = { 0 };
        GPid app = tb_spawn_sdk_app("tbuser", "example_system_wide", sock, &user);

        g_assert_true(wait_query_shows("tbuser", "\"audio.latency\""));
        run_cli("tbuser", &start, "--detach=qraw", "-c", cfg, "--txt", "-o", out, NULL);
        assert_exit(&start, 0);
        run_sh("tbuser", script, &q);
        assert_exit(&q, 0);
        run_as(NULL, (const char *[]) { "sh", "-c", decode, NULL }, &dec);
        assert_exit(&dec, 0);
        g_assert_nonnull(strstr(dec.out, "num_sessions: 1"));
        g_assert_nonnull(strstr(dec.out, "num_sessions_started: 1"));
        g_assert_nonnull(strstr(dec.out, "name: \"linux.ftrace\""));
        g_assert_nonnull(strstr(dec.out, "name: \"tracebusd\""));
        g_assert_nonnull(strstr(dec.out, "example_system_wide\"\n  uid: "));
        g_assert_nonnull(strstr(dec.out, "name: \"track_event\""));
        g_assert_nonnull(strstr(dec.out, "available_categories {"));
        g_assert_nonnull(strstr(dec.out, "name: \"audio.latency\""));
        tb_kill_child(app);
        run_cli("tbuser", &combo, "--query-raw", "--json", NULL);
        assert_exit(&combo, 1);
        run_cli("tbuser", &stop, "--attach=qraw", "--stop", NULL);
        assert_exit(&stop, 0);
}

/* --add-attribute and a config's trace_attributes: a TracePacket.trace_attributes in the trace. */
static void test_attributes(void) {
        g_autofree char *dir = make_user_dir("tbuser", "cfg-attr");
        g_autofree char *text = config_with(500, "trace_attributes { attribute { key: \"site\" string_value: \"lab-2\" } }\n");
        g_autofree char *cfg = user_file("tbuser", dir, "config.pbtxt", text, -1);
        g_autofree char *out = g_build_filename(dir, "trace.pftrace", NULL), *out2 = g_build_filename(dir, "light.pftrace", NULL);
        g_autofree char *decoded = NULL, *decoded2 = NULL;
        g_auto(TbCommandResult) res = { 0 }, light = { 0 }, empty = { 0 };
        guint counts[4] = { 0 };

        run_cli("tbuser", &res, "-c", cfg, "--txt", "--add-attribute", "build=42", "--add-attribute", "nightly",
                "-o", out, NULL);
        assert_exit(&res, 0);
        decoded = protoc_decode_trace(out);
        assert_decoded_has(decoded, "trace_attributes {");
        assert_decoded_has(decoded, "key: \"site\"");
        assert_decoded_has(decoded, "string_value: \"lab-2\"");
        assert_decoded_has(decoded, "key: \"build\"");
        assert_decoded_has(decoded, "string_value: \"42\"");
        assert_decoded_has(decoded, "key: \"nightly\"");
        /* A packet of its own, with the config's attribute and the two options'. */
        count_packets(out, counts);
        g_assert_cmpuint(counts[3], ==, 1);

        run_cli("tbuser", &light, "-t", "500ms", "--add-attribute", "who=me", "-o", out2, "sched/sched_switch", NULL);
        assert_exit(&light, 0);
        decoded2 = protoc_decode_trace(out2);
        assert_decoded_has(decoded2, "string_value: \"me\"");

        run_cli("tbuser", &empty, "-t", "500ms", "--add-attribute", "=x", "-o", out2, "sched/sched_switch", NULL);
        assert_exit(&empty, 1);
        assert_stderr_has(&empty, "the key is empty");
}

/* perfetto's Android-only options: one line saying why, exit status 3. */
static void test_android_only(void) {
        static const char *const options[][3] = {
                { "--upload", NULL }, { "--dropbox", "perfetto" }, { "--save-for-bugreport", NULL },
                { "--save-all-for-bugreport", NULL }, { "--alert-id", "1" }, { "--config-id", "1" },
                { "--config-uid", "1" }, { "--subscription-id", "1" }, { "--no-guardrails", NULL },
                { "--reset-guardrails", NULL }, { "--app", "com.example" }, { "--clone-for-bugreport", NULL },
        };

        for (size_t i = 0; i < G_N_ELEMENTS(options); i++) {
                g_auto(TbCommandResult) res = { 0 };

                run_cli("tbuser", &res, options[i][0], options[i][1], NULL);
                assert_exit(&res, 3);
                assert_one_line(&res);
                assert_stderr_has(&res, options[i][0]);
                assert_stderr_has(&res, "not supported off Android");
        }
        /* --clone and --clone-by-name work (tests/test-clone.c). */
}

int main(int argc, char **argv) {
        if (!freopen("/dev/null", "r", stdin))
                return EXIT_FAILURE;
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();

        tb_test_add_isolated("/bus/cli/tracecfg/unique-session-name", test_unique_session_name);
        tb_test_add_isolated("/bus/cli/tracecfg/builtin-sources", test_builtin_sources);
        tb_test_add_isolated("/bus/cli/tracecfg/snapshot-interval", test_snapshot_interval);
        tb_test_add_isolated("/bus/cli/tracecfg/notify-fd", test_notify_fd);
        tb_test_add_isolated("/bus/cli/tracecfg/start-delay", test_start_delay);
        tb_test_add_isolated("/bus/cli/tracecfg/query-raw", test_query_raw);
        tb_test_add_isolated("/bus/cli/tracecfg/android-only", test_android_only);
        tb_test_add_isolated("/bus/cli/tracecfg/attributes", test_attributes);
        tb_test_add_isolated("/bus/cli/tracecfg/flush-period", test_flush_period);
        return tb_test_run(TB_START_SERVICE);
}
