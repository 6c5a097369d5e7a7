/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite: the tracebus command line against the real service, polkitd and
 * dbus-daemon (tests/system-bus.h), run as the test users: every option and
 * every refused combination. The helpers are in tests/cli-util.h.
 *
 * What tests/polkit-rules/50-tracebus-test.rules says about
 * org.tracebus.record: tbuser YES, tbadmin YES (and org.tracebus.manage),
 * tbchallenge AUTH_ADMIN, tbother NO.
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

#include "cli-util.h"

/* ===================================================================== */
/* Options                                                                */
/* ===================================================================== */

/* The light config: -t, -b, events; perfetto's defaults otherwise. */
static void test_light_config(void) {
        g_autofree char *dir = make_user_dir("tbuser", "cli-light");
        g_autofree char *out = g_build_filename(dir, "trace.pftrace", NULL);
        g_autofree char *decoded = NULL;
        g_auto(TbCommandResult) res = { 0 };
        g_autoptr(GError) error = NULL;
        TbBusy busy;

        g_assert_true(tb_busy_start("tbbusy-light", &busy, &error));
        run_cli("tbuser", &res, "-t", "1500ms", "-b", "8mb", "-o", out, "sched/sched_switch", "sched_waking", NULL);
        tb_busy_stop(&busy);
        assert_exit(&res, 0);
        assert_stderr_has(&res, "Trace written into ");
        assert_file_complete(out);
        decoded = protoc_decode_trace(out);
        assert_decoded_has(decoded, "duration_ms: 1500");
        assert_decoded_has(decoded, "size_kb: 8192");
        assert_decoded_has(decoded, "\"sched/sched_switch\"");
        assert_decoded_has(decoded, "\"sched_waking\"");
        /* No -s: written at the end, as perfetto's ring buffer. */
        g_assert_null(strstr(decoded, "write_into_file: true"));
}

/* --track-event alone, with a Perfetto SDK app of the user's connected: the session the
 * service runs has the config the option built (the config echo in the trace): a
 * track_event data source with the categories, and no ftrace data source. */
static void test_track_event(void) {
        g_autofree char *dir = make_user_dir("tbuser", "cli-track-event");
        g_autofree char *out = g_build_filename(dir, "trace.pftrace", NULL);
        g_autofree char *sock = g_build_filename(tb_bus()->tmpdir, TB_PRODUCER_SOCKET, NULL);
        g_autofree char *decoded = NULL;
        g_auto(TbCommandResult) res = { 0 };
        g_auto(TbUser) user = { 0 };
        g_auto(TbTraceSummary) s = { 0 };
        GPid app = tb_spawn_sdk_app("tbuser", "example_system_wide", sock, &user);

        run_cli("tbuser", &res, "--track-event", "rendering", "--track-event", "audio.*", "-t", "1500ms", "-o", out,
                NULL);
        tb_kill_child(app);
        assert_exit(&res, 0);
        g_test_message("stderr: %s", res.err);
        /* A whole trace, though without ftrace bundles: none was asked for. */
        summarise(out, &s);
        g_assert_true(s.has_trace_config && s.has_tracing_started && s.has_system_info);
        g_assert_cmpuint(s.n_ftrace_bundles, ==, 0);
        decoded = protoc_decode_trace(out);
        assert_decoded_has(decoded, "name: \"track_event\"");
        assert_decoded_has(decoded, "enabled_categories: \"rendering\"");
        assert_decoded_has(decoded, "enabled_categories: \"audio.*\"");
        assert_decoded_has(decoded, "duration_ms: 1500");
        g_assert_null(strstr(decoded, "name: \"linux.ftrace\""));
}

/* Long options and friendly suffixes: --time 0.5s --buffer 4MiB --out. */
static void test_long_options(void) {
        g_autofree char *dir = make_user_dir("tbuser", "cli-long");
        g_autofree char *out = g_build_filename(dir, "trace.pftrace", NULL);
        g_autofree char *decoded = NULL;
        g_auto(TbCommandResult) res = { 0 };

        run_cli("tbuser", &res, "--time", "1.5s", "--buffer", "4MiB", "--out", out, "sched/*", NULL);
        assert_exit(&res, 0);
        assert_file_complete(out);
        decoded = protoc_decode_trace(out);
        assert_decoded_has(decoded, "duration_ms: 1500");
        assert_decoded_has(decoded, "size_kb: 4096");
}

/* -s: max_file_size_bytes with write_into_file; the session ends at the size. */
static void test_size(void) {
        g_autofree char *dir = make_user_dir("tbuser", "cli-size");
        g_autofree char *out = g_build_filename(dir, "trace.pftrace", NULL);
        g_autofree char *decoded = NULL;
        g_auto(TbCommandResult) res = { 0 };
        g_autoptr(GError) error = NULL;
        gint64 start = g_get_monotonic_time();
        struct stat st;
        TbBusy busy;

        g_assert_true(tb_busy_start("tbbusy-size", &busy, &error));
        run_cli("tbuser", &res, "-t", "60s", "-s", "64kb", "-o", out, "sched/sched_switch", "sched/sched_waking", NULL);
        tb_busy_stop(&busy);
        assert_exit(&res, 0);
        assert_stderr_has(&res, "size limit");
        g_assert_cmpint(g_get_monotonic_time() - start, <, 50 * G_USEC_PER_SEC);
        g_assert_cmpint(stat(out, &st), ==, 0);
        note("file size %lld with -s 64kb\n", (long long) st.st_size);
        g_assert_cmpint(st.st_size, <=, 64 * 1024);
        decoded = protoc_decode_trace(out);
        assert_decoded_has(decoded, "max_file_size_bytes: 65536");
        assert_decoded_has(decoded, "write_into_file: true");
}

/* -c FILE --txt, -c - --txt from a pipe, and perfetto's -c :test. */
static void test_text_config(void) {
        g_autofree char *dir = make_user_dir("tbuser", "cli-txt");
        g_autofree char *text = config_text(1000);
        g_autofree char *cfg = user_file("tbuser", dir, "config.pbtxt", text, -1);
        g_autofree char *out1 = g_build_filename(dir, "file.pftrace", NULL);
        g_autofree char *out2 = g_build_filename(dir, "stdin.pftrace", NULL);
        g_autofree char *out3 = g_build_filename(dir, "test.pftrace", NULL);
        g_autofree char *script = g_strdup_printf("cat %s | tracebus -c - --txt -o %s", cfg, out2);
        g_auto(TbCommandResult) r1 = { 0 }, r2 = { 0 }, r3 = { 0 };

        run_cli("tbuser", &r1, "-c", cfg, "--txt", "-o", out1, NULL);
        assert_exit(&r1, 0);
        assert_file_complete(out1);
        run_sh("tbuser", script, &r2);
        assert_exit(&r2, 0);
        assert_file_complete(out2);
        run_cli("tbuser", &r3, "-c", ":test", "-o", out3, NULL);
        assert_exit(&r3, 0);
        assert_file_complete(out3);
}

/* A binary TraceConfig (protoc --encode), sent as the BinaryConfig option. */
static void test_binary_config(void) {
        g_autofree char *dir = make_user_dir("tbuser", "cli-bin");
        g_autofree char *text = config_text(1000);
        g_autofree char *txt = user_file("tbuser", dir, "config.pbtxt", text, -1);
        g_autofree char *bin = g_build_filename(dir, "config.pb", NULL);
        g_autofree char *out = g_build_filename(dir, "trace.pftrace", NULL);
        g_autofree char *protos = g_build_filename(tb_bus()->source_dir, "protos", NULL);
        g_autofree char *encode = g_strdup_printf("protoc --proto_path=%s --encode=tracebus.TraceConfig config.proto "
                                                  "< %s > %s", protos, txt, bin);
        g_auto(TbCommandResult) enc = { 0 }, res = { 0 }, bad = { 0 };
        g_auto(TbUser) u = { 0 };

        run_as(NULL, (const char *[]) { "sh", "-c", encode, NULL }, &enc);
        assert_exit(&enc, 0);
        g_assert_true(tb_user_lookup("tbuser", &u, NULL));
        g_assert_cmpint(chown(bin, u.uid, u.gid), ==, 0);
        run_cli("tbuser", &res, "-c", bin, "-o", out, NULL);
        assert_exit(&res, 0);
        assert_file_complete(out);

        /* The text file without --txt is not a binary config. */
        run_cli("tbuser", &bad, "-c", txt, "-o", out, NULL);
        assert_exit(&bad, 1);
        assert_one_line(&bad);
        assert_stderr_has(&bad, "is not a binary TraceConfig");
}

/* Config mistakes: FILE:LINE:COLUMN with the real name, before anything starts. */
static void test_config_errors(void) {
        g_autofree char *dir = make_user_dir("tbuser", "cli-cfgerr");
        g_autofree char *bad = user_file("tbuser", dir, "bad.pbtxt",
                                         "duration_ms: 1000\nbuffers { size_kb: 1024 }\nno_such_field: 3\n", -1);
        g_autofree char *empty = user_file("tbuser", dir, "empty.pbtxt", "", 0);
        g_autofree char *outpath = user_file("tbuser", dir, "outpath.pbtxt",
                                             "output_path: \"/tmp/x\"\ndata_sources { config { name: \"linux.ftrace\" "
                                             "ftrace_config { ftrace_events: \"sched/sched_switch\" } } }\n", -1);
        g_autofree char *unknown = user_file("tbuser", dir, "unknown.pbtxt",
                                             "duration_ms: 1000\ndata_sources { config { name: \"linux.ftrace\" "
                                             "ftrace_config { } } }\n", -1);
        g_autofree char *out = g_build_filename(dir, "trace.pftrace", NULL);
        g_autofree char *where = g_strdup_printf("%s:3:1: ", bad);
        g_auto(TbCommandResult) r1 = { 0 }, r2 = { 0 }, r3 = { 0 }, r4 = { 0 }, r5 = { 0 };
        g_auto(Snapshot) before = { 0 };

        snapshot_take(&before);
        run_cli("tbuser", &r1, "-c", bad, "--txt", "-o", out, NULL);
        assert_exit(&r1, 1);
        assert_one_line(&r1);
        assert_stderr_has(&r1, where);
        assert_stderr_has(&r1, "no_such_field");
        /* Refused before the output was even opened. */
        g_assert_false(g_file_test(out, G_FILE_TEST_EXISTS));

        run_cli("tbuser", &r2, "-c", empty, "--txt", "-o", out, NULL);
        assert_exit(&r2, 1);
        assert_stderr_has(&r2, "The TraceConfig is empty");

        run_cli("tbuser", &r3, "-c", outpath, "--txt", "-o", out, NULL);
        assert_exit(&r3, 1);
        assert_one_line(&r3);
        assert_stderr_has(&r3, "output_path");

        /* A config with nothing for the kernel (an ftrace_config without events) starts
         * and ends as Perfetto's does, its trace whole. */
        run_cli("tbuser", &r4, "-c", unknown, "--txt", "-o", out, NULL);
        assert_exit(&r4, 0);
        assert_stderr_has(&r4, "Trace written into");
        g_assert_true(g_file_test(out, G_FILE_TEST_IS_REGULAR));
        g_assert_null(strstr(r4.err, TB_ERROR_PREFIX));

        run_cli("tbuser", &r5, "-c", "/nonexistent.pbtxt", "--txt", "-o", out, NULL);
        assert_exit(&r5, 1);
        assert_stderr_has(&r5, "/nonexistent.pbtxt");
        assert_snapshot_unchanged(&before);
}

/* --no-clobber leaves an existing file alone. */
static void test_no_clobber(void) {
        g_autofree char *dir = make_user_dir("tbuser", "cli-clobber");
        g_autofree char *out = user_file("tbuser", dir, "trace.pftrace", "keep me", -1);
        g_autofree char *contents = NULL;
        g_auto(TbCommandResult) res = { 0 };

        run_cli("tbuser", &res, "--no-clobber", "-t", "1s", "-o", out, "sched/sched_switch", NULL);
        assert_exit(&res, 1);
        assert_one_line(&res);
        assert_stderr_has(&res, "File exists");
        g_assert_true(g_file_get_contents(out, &contents, NULL, NULL));
        g_assert_cmpstr(contents, ==, "keep me");
}

/* -o -: the trace goes to stdout, a pipe or a file. */
static void test_stdout(void) {
        g_autofree char *dir = make_user_dir("tbuser", "cli-stdout");
        g_autofree char *piped = g_build_filename(dir, "piped.pftrace", NULL);
        g_autofree char *redirected = g_build_filename(dir, "redirected.pftrace", NULL);
        g_autofree char *s1 = g_strdup_printf("tracebus -t 1s -o - sched/sched_switch | cat > %s", piped);
        g_autofree char *s2 = g_strdup_printf("tracebus -t 1s -o - sched/sched_switch > %s", redirected);
        g_auto(TbCommandResult) r1 = { 0 }, r2 = { 0 };

        run_sh("tbuser", s1, &r1);
        assert_exit(&r1, 0);
        assert_stderr_has(&r1, "Trace written into stdout");
        assert_file_complete(piped);
        run_sh("tbuser", s2, &r2);
        assert_exit(&r2, 0);
        assert_file_complete(redirected);
}

/* perfetto's refusals, with its reasons, and ours; nothing starts. */
static void test_refused(void) {
        static const struct {
                const char *args[8];
                const char *message;
        } cases[] = {
                { { "--attach=k", "-c", "CFG", "--txt" }, "Cannot specify a trace config with this option" },
                { { "--attach=k", "-t", "1s" }, "Cannot specify a trace config with this option" },
                { { "--attach=k", "sched/sched_switch" }, "Cannot specify a trace config with this option" },
                { { "--attach=k", "-o", "OUT" }, "Can't pass an --out file with this option" },
                { { "--is_detached=k", "-o", "OUT" }, "Can't pass an --out file with this option" },
                { { "--is_detached=k", "-t", "1s" }, "Cannot specify a trace config with this option" },
                { { "--stop" }, "--stop is supported only in combination with --attach" },
                { { "--stop", "-t", "1s", "-o", "OUT", "sched/sched_switch" },
                  "--stop is supported only in combination with --attach" },
                { { "--detach=k", "--attach=k" }, "--attach and --detach are mutually exclusive" },
                { { "--detach=k", "-d", "-c", "CFG", "--txt", "-o", "OUT" },
                  "--detach and --background are mutually exclusive" },
                { { "--detach=k", "-D", "-c", "CFG", "--txt", "-o", "OUT" },
                  "--detach and --background are mutually exclusive" },
                { { "--detach=k", "-c", "CFG", "--txt", "-o", "-" }, "Cannot write the trace to stdout (-o -) with --detach" },
                { { "-d", "-t", "1s", "-o", "-", "sched/sched_switch" },
                  "Cannot write the trace to stdout (-o -) with --background" },
                { { "-c", "CFG", "--txt", "-t", "1s", "-o", "OUT" },
                  "Cannot specify both -c/--config and any of --time, --size, --buffer" },
                { { "-c", "CFG", "--txt", "-o", "OUT", "sched/sched_switch" },
                  "Cannot specify both -c/--config and any of --time, --size, --buffer" },
                { { "-o", "OUT" }, "The TraceConfig is empty" },
                { { "-t", "1s", "-o", "OUT" }, "No events to record" },
                { { "-t", "1s", "sched/sched_switch" }, "--out is required" },
                { { "--query", "--detach=k" }, "--query cannot be combined with any other argument" },
                { { "--query", "-d" }, "--query cannot be combined with any other argument" },
                { { "--query", "-o", "OUT" }, "--query cannot be combined with any other argument" },
                { { "--list-events", "-t", "1s" }, "--list-events cannot be combined with any other argument" },
                { { "--stop-all", "--attach=k" }, "--stop-all cannot be combined with any other argument" },
                { { "--query", "--stop-all" }, "mutually exclusive" },
                { { "--long", "-t", "1s", "-o", "OUT", "sched/sched_switch" }, "--long is supported only with --query" },
                { { "--json", "--attach=k" }, "--json is supported only with --query and --list-events" },
                { { "-t", "soon", "-o", "OUT", "sched/sched_switch" }, "--time argument is invalid" },
                { { "-b", "lots", "-o", "OUT", "sched/sched_switch" }, "--buffer argument is invalid" },
                { { "-s", "-1", "-o", "OUT", "sched/sched_switch" }, "--size argument is invalid" },
                { { "--detach=", "-c", "CFG", "--txt" }, "a detach key is 1 to 64 printable ASCII characters" },
                /* -a/--app is Android's: exit 3 (tests/test-cli-tracecfg.c). */
                { { "--query-raw", "--long" }, "--query-raw cannot be combined with --json or --long" },
                { { "--notify-fd", "9", "-t", "1s", "-o", "OUT", "sched/sched_switch" }, "not an open file descriptor" },
                { { "--no-such-option" }, "--help" },
        };
        g_autofree char *dir = make_user_dir("tbuser", "cli-refused");
        g_autofree char *text = config_text(1000);
        g_autofree char *cfg = user_file("tbuser", dir, "config.pbtxt", text, -1);
        g_autofree char *out = g_build_filename(dir, "trace.pftrace", NULL);
        g_auto(Snapshot) before = { 0 };

        snapshot_take(&before);
        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                const char *argv[10] = { NULL };
                g_auto(TbCommandResult) res = { 0 };
                g_autofree char *cli = cli_path();
                size_t n = 0;

                argv[n++] = cli;
                for (size_t j = 0; cases[i].args[j]; j++)
                        argv[n++] = g_str_equal(cases[i].args[j], "CFG") ? cfg :
                                    g_str_equal(cases[i].args[j], "OUT") ? out : cases[i].args[j];
                run_as("tbuser", argv, &res);
                assert_exit(&res, 1);
                assert_stderr_has(&res, cases[i].message);
                g_assert_false(g_file_test(out, G_FILE_TEST_EXISTS));
        }
        assert_snapshot_unchanged(&before);
        g_assert_cmpuint(g_strv_length(sessions_of(tb_user_uid("tbuser"))), ==, 0);
}

/* No arguments: perfetto's usage and exit status 1; -h and --version: 0. */
static void test_usage(void) {
        g_auto(TbCommandResult) none = { 0 }, help = { 0 }, version = { 0 };

        run_cli("tbuser", &none, NULL, NULL);
        assert_exit(&none, 1);
        assert_stderr_has(&none, "Usage:");
        run_cli("tbuser", &help, "-h", NULL);
        assert_exit(&help, 0);
        g_assert_nonnull(strstr(help.out, "--is_detached=KEY"));
        g_assert_nonnull(strstr(help.out, "--background-wait"));
        run_cli("tbuser", &version, "--version", NULL);
        assert_exit(&version, 0);
        g_assert_true(g_str_has_prefix(version.out, "tracebus "));
}

/* --txt refuses a name Perfetto v58 lacks with LINE:COLUMN and the nearest name;
 * --txt-lossy drops it with that warning on stderr, and records the rest. */
static void test_txt_lossy(void) {
        static const char text[] =
                "duration_ms: 1000\n"
                "not_in_v58 { nested: 1 }\n"
                "buffers { size_kb: 1024 fill_policy: RING_BUFER }\n"
                "data_sources { config { name: \"linux.ftrace\"\n"
                "  ftrace_config { ftrace_events: \"sched/sched_switch\" } } }\n";
        g_autofree char *dir = make_user_dir("tbuser", "cli-lossy");
        g_autofree char *cfg = user_file("tbuser", dir, "config.pbtxt", text, -1);
        g_autofree char *out = g_build_filename(dir, "lossy.pftrace", NULL);
        g_autofree char *decoded = NULL;
        g_auto(TbCommandResult) strict = { 0 }, lossy = { 0 };

        run_cli("tbuser", &strict, "-c", cfg, "--txt", "-o", out, NULL);
        assert_exit(&strict, 1);
        assert_one_line(&strict);
        assert_stderr_has(&strict, "config.pbtxt:2:1: unknown field 'not_in_v58' in TraceConfig");

        run_cli("tbuser", &lossy, "-c", cfg, "--txt-lossy", "-o", out, NULL);
        assert_exit(&lossy, 0);
        assert_stderr_has(&lossy, "config.pbtxt:2:1: unknown field 'not_in_v58' in TraceConfig: dropped");
        assert_stderr_has(&lossy, "config.pbtxt:3:38: unknown value 'RING_BUFER' for enum field 'fill_policy'; "
                                  "did you mean 'RING_BUFFER'?: dropped");
        assert_file_complete(out);
        /* The config the service echoed is what was kept. */
        decoded = protoc_decode_trace(out);
        assert_decoded_has(decoded, "size_kb: 1024");
        g_assert_null(strstr(decoded, "not_in_v58"));
}

/* A config that asks for kprobes needs org.tracebus.kprobes: the CLI names that action
 * (the one the service refused), not org.tracebus.record, under which Start runs. */
static void test_kprobes_action_named(void) {
        static const char text[] =
                "duration_ms: 1000\n"
                "data_sources { config { name: \"linux.ftrace\" ftrace_config {\n"
                "  ftrace_events: \"sched/sched_switch\"\n"
                "  kprobe_events { probe: \"do_sys_openat2\" type: KPROBE_TYPE_KPROBE } } } }\n";
        g_autofree char *dir = make_user_dir("tbuser", "cli-kprobes");
        g_autofree char *cfg = user_file("tbuser", dir, "config.pbtxt", text, -1);
        g_autofree char *out = g_build_filename(dir, "kprobes.pftrace", NULL);
        g_auto(TbCommandResult) res = { 0 };

        run_cli("tbuser", &res, "-c", cfg, "--txt", "--no-ask-password", "-o", out, NULL);
        assert_exit(&res, 1);
        assert_stderr_has(&res, "action org.tracebus.kprobes");
        g_assert_null(strstr(res.err, "org.tracebus.record"));
}

int main(int argc, char **argv) {
        /* Children must never find a terminal on stdin unless a case gives them one. */
        if (!freopen("/dev/null", "r", stdin))
                return EXIT_FAILURE;
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();

        tb_test_add_isolated("/bus/cli/options/light-config", test_light_config);
        tb_test_add_isolated("/bus/cli/options/long-options", test_long_options);
        tb_test_add_isolated("/bus/cli/options/size", test_size);
        tb_test_add_isolated("/bus/cli/options/text-config", test_text_config);
        tb_test_add_isolated("/bus/cli/options/binary-config", test_binary_config);
        tb_test_add_isolated("/bus/cli/options/config-errors", test_config_errors);
        tb_test_add_isolated("/bus/cli/options/no-clobber", test_no_clobber);
        tb_test_add_isolated("/bus/cli/options/stdout", test_stdout);
        tb_test_add_isolated("/bus/cli/options/refused", test_refused);
        tb_test_add_isolated("/bus/cli/options/usage", test_usage);
        tb_test_add_isolated("/bus/cli/options/txt-lossy", test_txt_lossy);
        tb_test_add_isolated("/bus/cli/options/kprobes-action", test_kprobes_action_named);
        tb_test_add_isolated("/bus/cli/options/track-event", test_track_event);
        return tb_test_run(TB_START_SERVICE);
}
