/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite: upstream Perfetto reads a tracebus trace as it reads its own trace of the
 * same config. The config is recorded twice in one run: by tracebus (the CLI as a
 * record-only user, through the real service) and by upstream Perfetto (traced,
 * traced_probes and perfetto on private sockets, as root). Upstream's
 * trace_processor_shell then answers the same questions about both:
 *   - no error or data-loss statistic in tracebus's trace that Perfetto's lacks;
 *   - every counter track of Perfetto's trace is in tracebus's, by name;
 *   - what Perfetto's trace fills (scheduling slices, named threads, processes with a
 *     command line, the machine's name), tracebus's fills too.
 * The same holds for an app built with the Perfetto SDK (upstream's example_system_wide,
 * started on each service's producer socket before the session): the same slices, at the
 * same depths, with the same debug annotations, on the app's thread track in the app's
 * process.
 * The programs are upstream's own build, beside the source tree in ../shared/perfetto/
 * (CI's clone has them there too); TRACEBUS_PERFETTO_BIN names another directory.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli-util.h"
#include "test-util.h"

/* Written for this test in the shape of Perfetto's documented Linux configs. */
static const char kernel_config[] =
        "buffers { size_kb: 4096 fill_policy: DISCARD }\n"
        "buffers { size_kb: 1024 fill_policy: DISCARD }\n"
        "data_sources { config { name: \"linux.ftrace\" target_buffer: 0 ftrace_config {\n"
        "  ftrace_events: \"sched/sched_switch\" ftrace_events: \"sched/sched_waking\"\n"
        "  ftrace_events: \"sched/sched_process_exit\" ftrace_events: \"sched/sched_process_free\"\n"
        "  ftrace_events: \"task/task_newtask\" ftrace_events: \"task/task_rename\"\n"
        "  ftrace_events: \"power/cpu_frequency\" ftrace_events: \"power/cpu_idle\"\n"
        "  compact_sched { enabled: true } } } }\n"
        "data_sources { config { name: \"linux.process_stats\" target_buffer: 1 process_stats_config {\n"
        "  scan_all_processes_on_start: true proc_stats_poll_ms: 500 } } }\n"
        "data_sources { config { name: \"linux.sys_stats\" target_buffer: 1 sys_stats_config {\n"
        "  meminfo_period_ms: 500 meminfo_counters: MEMINFO_MEM_AVAILABLE meminfo_counters: MEMINFO_MEM_FREE\n"
        "  vmstat_period_ms: 500 vmstat_counters: VMSTAT_NR_FREE_PAGES\n"
        "  stat_period_ms: 500 stat_counters: STAT_CPU_TIMES stat_counters: STAT_FORK_COUNT } } }\n"
        "data_sources { config { name: \"linux.system_info\" } }\n"
        "duration_ms: 2000\n";

/* Only an SDK app's track_event: no kernel data source at all. */
static const char app_config[] =
        "buffers { size_kb: 1024 fill_policy: DISCARD }\n"
        "data_sources { config { name: \"track_event\" track_event_config { enabled_categories: \"rendering\" } } }\n"
        "duration_ms: 3000\n";

/* The SDK app both services record, and where it was started. */
#define SDK_APP "example_system_wide"

/* The rows of @sql's answer on @trace, without the header line and the quotes. */
static GPtrArray *tp_rows(const char *trace, const char *sql) {
        g_autofree char *tp = tb_perfetto_program("bin", "trace_processor_shell");
        const char *argv[] = { tp, "-Q", sql, trace, NULL };
        g_autofree char *out = NULL, *err = NULL;
        g_autoptr(GError) error = NULL;
        g_auto(GStrv) lines = NULL;
        GPtrArray *rows = g_ptr_array_new_with_free_func(g_free);
        int status = 0;

        g_assert_true(g_spawn_sync(NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &status, &error));
        if (!g_spawn_check_wait_status(status, NULL))
                g_error("trace_processor_shell failed on %s for \"%s\": %s", trace, sql, err);
        lines = g_strsplit(out, "\n", -1);
        for (size_t i = 1; lines[i]; i++) {
                g_autoptr(GString) row = g_string_new(lines[i]);

                if (row->len == 0)
                        continue;
                g_string_replace(row, "\"", "", 0);
                g_ptr_array_add(rows, g_string_free(g_steal_pointer(&row), false));
        }
        return rows;
}

static guint64 tp_count(const char *trace, const char *sql) {
        g_autoptr(GPtrArray) rows = tp_rows(trace, sql);

        g_assert_cmpuint(rows->len, ==, 1);
        return g_ascii_strtoull(rows->pdata[0], NULL, 10);
}

static bool rows_contain(GPtrArray *rows, const char *row) {
        for (guint i = 0; i < rows->len; i++)
                if (g_str_equal(rows->pdata[i], row))
                        return true;
        return false;
}

static void wait_for_socket(const char *path) {
        for (int i = 0; i < 100; i++) {
                struct stat st;

                if (stat(path, &st) == 0 && S_ISSOCK(st.st_mode))
                        return;
                g_usleep(50 * 1000);
        }
        g_error("upstream Perfetto's socket %s did not appear", path);
}

static GPid spawn_perfetto_daemon(const char *name, char **envp) {
        g_autofree char *program = tb_perfetto_program("bin", name);
        const char *argv[] = { program, NULL };
        g_autoptr(GError) error = NULL;
        GPid pid;

        g_assert_true(g_spawn_async(NULL, (char **) argv, envp, G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_STDOUT_TO_DEV_NULL |
                                    G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, &pid, &error));
        return pid;
}

static void stop_daemon(GPid pid) {
        kill(pid, SIGTERM);
        g_assert_cmpint(waitpid(pid, NULL, 0), ==, pid);
}

/* upstream's SDK app @program, as root, on the producer socket @socket; its pid. */
static GPid spawn_app_on(const char *program, const char *socket) {
        g_autofree char *path = tb_perfetto_program("sdk", program);
        g_auto(GStrv) envp = g_environ_setenv(g_get_environ(), "PERFETTO_PRODUCER_SOCK_NAME", socket, true);
        const char *argv[] = { path, NULL };
        g_autoptr(GError) error = NULL;
        GPid pid = 0;

        g_assert_true(g_spawn_async(NULL, (char **) argv, envp, G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_STDOUT_TO_DEV_NULL |
                                    G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, &pid, &error));
        return pid;
}

/* @config recorded by upstream Perfetto into @out, as root, on sockets of its own; with
 * the SDK app @app (may be NULL) connected before the session starts, its pid in
 * *@ret_app_pid. */
static void record_with_perfetto(const char *config, const char *out, const char *app, GPid *ret_app_pid) {
        g_autofree char *dir = g_dir_make_tmp("tb-perfetto-XXXXXX", NULL);
        g_autofree char *producer = g_build_filename(dir, "producer.sock", NULL);
        g_autofree char *consumer = g_build_filename(dir, "consumer.sock", NULL);
        g_autofree char *cfg = g_build_filename(dir, "config.pbtxt", NULL);
        g_autofree char *cli = tb_perfetto_program("bin", "perfetto");
        g_auto(GStrv) envp = g_get_environ();
        g_autofree char *err = NULL;
        int status = 0;

        g_assert_true(g_file_set_contents(cfg, config, -1, NULL));
        envp = g_environ_setenv(envp, "PERFETTO_PRODUCER_SOCK_NAME", producer, true);
        envp = g_environ_setenv(envp, "PERFETTO_CONSUMER_SOCK_NAME", consumer, true);
        GPid traced = spawn_perfetto_daemon("traced", envp);
        wait_for_socket(producer);
        wait_for_socket(consumer);
        GPid probes = spawn_perfetto_daemon("traced_probes", envp);
        GPid app_pid = app ? spawn_app_on(app, producer) : 0;
        /* traced_probes and the app register their data sources soon after they start;
         * perfetto would start a session without them, so give them a second. */
        g_usleep(1000 * 1000);

        const char *argv[] = { cli, "--txt", "-c", cfg, "-o", out, NULL };
        g_assert_true(g_spawn_sync(NULL, (char **) argv, envp, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL, &err,
                                   &status, NULL));
        stop_daemon(probes);
        stop_daemon(traced);
        if (app_pid > 0)
                tb_kill_child(app_pid);
        if (!g_spawn_check_wait_status(status, NULL))
                g_error("upstream perfetto failed: %s", err);
        if (ret_app_pid)
                *ret_app_pid = app_pid;
        unlink(producer);
        unlink(consumer);
        unlink(cfg);
        rmdir(dir);
}

/* @tracebus_config recorded by tracebus (the CLI as tbuser, through the real service),
 * then @perfetto_config by upstream Perfetto. With @app (may be NULL): upstream's SDK app
 * of that name started before each session, as tbuser on tracebus's producer socket and
 * as root on traced's; their pids in @ret_app_pids (tracebus's, then traced's). */
static void record_both_with_app(const char *tracebus_config, const char *perfetto_config, const char *app,
                                 char **ret_ours, char **ret_theirs, GPid ret_app_pids[2]) {
        g_autofree char *dir = make_user_dir("tbuser", "upstream-read");
        g_autofree char *cfg = user_file("tbuser", dir, "config.pbtxt", tracebus_config, -1);
        g_autofree char *ours = g_build_filename(dir, "tracebus.pftrace", NULL);
        g_autofree char *theirs = g_build_filename(dir, "perfetto.pftrace", NULL);
        g_autofree char *socket = g_build_filename(tb_bus()->tmpdir, TB_PRODUCER_SOCKET, NULL);
        g_auto(TbCommandResult) res = { 0 };
        GPid app_pid = 0;
        TbUser u;

        if (app) {
                app_pid = tb_spawn_sdk_app("tbuser", app, socket, &u);
                g_usleep(1000 * 1000);
        }
        run_cli("tbuser", &res, "--txt", "-c", cfg, "-o", ours, NULL);
        if (app_pid > 0)
                tb_kill_child(app_pid);
        assert_exit(&res, 0);
        /* (An app's trace has no kernel events to check; trace_processor reads it below.) */
        if (!app)
                assert_file_complete(ours);
        record_with_perfetto(perfetto_config, theirs, app, app ? &ret_app_pids[1] : NULL);
        if (app)
                ret_app_pids[0] = app_pid;
        *ret_ours = g_steal_pointer(&ours);
        *ret_theirs = g_steal_pointer(&theirs);
}

static void record_both(const char *tracebus_config, const char *perfetto_config, char **ret_ours, char **ret_theirs) {
        record_both_with_app(tracebus_config, perfetto_config, NULL, ret_ours, ret_theirs, NULL);
}

static void assert_no_new_problems(const char *ours, const char *theirs) {
        const char *sql = "select name || '[' || idx || ']=' || value from stats "
                          "where value > 0 and severity in ('error', 'data_loss') order by name";
        g_autoptr(GPtrArray) our_rows = tp_rows(ours, sql), their_rows = tp_rows(theirs, sql);

        for (guint i = 0; i < their_rows->len; i++)
                note("Perfetto's own trace has the statistic %s\n", (char *) their_rows->pdata[i]);
        for (guint i = 0; i < our_rows->len; i++) {
                g_autofree char *name = g_strndup(our_rows->pdata[i], strcspn(our_rows->pdata[i], "["));
                bool theirs_too = false;

                for (guint j = 0; j < their_rows->len; j++)
                        theirs_too |= g_str_has_prefix(their_rows->pdata[j], name) &&
                                      ((char *) their_rows->pdata[j])[strlen(name)] == '[';
                if (!theirs_too)
                        g_error("trace_processor reports %s on tracebus's trace, not on Perfetto's",
                                (char *) our_rows->pdata[i]);
        }
}

static void assert_counter_tracks_match(const char *ours, const char *theirs) {
        const char *sql = "select distinct name from counter_track order by name";
        g_autoptr(GPtrArray) our_rows = tp_rows(ours, sql), their_rows = tp_rows(theirs, sql);

        g_assert_cmpuint(their_rows->len, >, 0);
        for (guint i = 0; i < their_rows->len; i++)
                if (!rows_contain(our_rows, their_rows->pdata[i]))
                        g_error("Perfetto's trace has the counter track \"%s\", tracebus's has not",
                                (char *) their_rows->pdata[i]);
}

/* Each question, on both traces: when Perfetto's answer is not 0, tracebus's is not. */
static void assert_filled_alike(const char *ours, const char *theirs) {
        static const char *const questions[] = {
                "select count(*) from sched",
                "select count(*) from thread where name is not null",
                "select count(*) from process where cmdline is not null",
                "select count(*) from thread where upid is not null",
                "select count(*) from metadata where name = 'system_name'",
                "select count(*) from counter",
        };

        for (size_t i = 0; i < G_N_ELEMENTS(questions); i++) {
                guint64 ours_n = tp_count(ours, questions[i]), theirs_n = tp_count(theirs, questions[i]);

                note("%s: tracebus %" G_GUINT64_FORMAT ", Perfetto %" G_GUINT64_FORMAT "\n", questions[i], ours_n,
                     theirs_n);
                if (theirs_n > 0 && ours_n == 0)
                        g_error("\"%s\" is empty on tracebus's trace, %" G_GUINT64_FORMAT " on Perfetto's",
                                questions[i], theirs_n);
        }
}

static void compare_readings(const char *tracebus_config, const char *perfetto_config) {
        g_autofree char *ours = NULL, *theirs = NULL;

        record_both(tracebus_config, perfetto_config, &ours, &theirs);
        assert_no_new_problems(ours, theirs);
        assert_counter_tracks_match(ours, theirs);
        assert_filled_alike(ours, theirs);
}

static void test_kernel_sources(void) {
        compare_readings(kernel_config, kernel_config);
}

/* tracebus compresses with its own deflate; trace_processor inflates it with zlib. */
static void test_kernel_sources_compressed(void) {
        g_autofree char *compressed = g_strconcat(kernel_config, "compression_type: COMPRESSION_TYPE_DEFLATE\n", NULL);

        compare_readings(compressed, kernel_config);
}

/* The app's slices, in order: name, depth, and whether the slice is on the thread track
 * of the app's main thread (tid = the app's pid) in the app's process. */
static GPtrArray *app_slices(const char *trace, GPid app_pid) {
        g_autofree char *sql = g_strdup_printf(
                "select s.name || ' depth ' || s.depth || ' on app thread ' || "
                "(t.tid = %d and p.pid = %d) from slice s join thread_track tt on s.track_id = tt.id "
                "join thread t using (utid) left join process p using (upid) order by s.ts",
                (int) app_pid, (int) app_pid);

        return tp_rows(trace, sql);
}

static GPtrArray *app_debug_args(const char *trace) {
        return tp_rows(trace, "select s.name || ' ' || a.key || '=' || a.display_value from slice s "
                              "join args a using (arg_set_id) where a.key like 'debug.%' order by s.ts, a.key");
}

static void assert_same_rows(const char *what, GPtrArray *ours, GPtrArray *theirs) {
        for (guint i = 0; i < theirs->len; i++)
                note("%s, Perfetto's: %s\n", what, (char *) theirs->pdata[i]);
        g_assert_cmpuint(theirs->len, >, 0);
        for (guint i = 0; i < MAX(ours->len, theirs->len); i++)
                if (i >= ours->len || i >= theirs->len || !g_str_equal(ours->pdata[i], theirs->pdata[i]))
                        g_error("%s differ at row %u: tracebus \"%s\", Perfetto \"%s\"", what, i,
                                i < ours->len ? (char *) ours->pdata[i] : "(none)",
                                i < theirs->len ? (char *) theirs->pdata[i] : "(none)");
}

/* example_system_wide's DrawGame and DrawPlayer slices, read from both traces alike. */
static void test_sdk_app(void) {
        g_autofree char *ours = NULL, *theirs = NULL;
        GPid pids[2] = { 0, 0 };

        record_both_with_app(app_config, app_config, SDK_APP, &ours, &theirs, pids);
        assert_no_new_problems(ours, theirs);
        g_autoptr(GPtrArray) our_slices = app_slices(ours, pids[0]), their_slices = app_slices(theirs, pids[1]);
        assert_same_rows("the app's slices", our_slices, their_slices);
        g_autoptr(GPtrArray) our_args = app_debug_args(ours), their_args = app_debug_args(theirs);
        assert_same_rows("the slices' debug annotations", our_args, their_args);
}

int main(int argc, char **argv) {
        if (!freopen("/dev/null", "r", stdin))
                return EXIT_FAILURE;
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();

        tb_test_add_isolated("/bus/upstream-read/kernel-sources", test_kernel_sources);
        tb_test_add_isolated("/bus/upstream-read/kernel-sources-compressed", test_kernel_sources_compressed);
        tb_test_add_isolated("/bus/upstream-read/sdk-app", test_sdk_app);
        return tb_test_run(TB_START_SERVICE);
}
