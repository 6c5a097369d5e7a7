/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite: scheduled captures. CI has no systemd as PID 1, so this runs what
 * tracebus-capture@NAME.service's ExecStart= runs, the built tracebus-capture script,
 * as root against tracebusd on the private bus, with its directories pointed into the
 * test's temporary directory. It checks the trace, its name, the log line and the
 * retention rules (KeepTraces=, KeepBytes=, oldest removed first, other capture names
 * untouched).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <glib/gstdio.h>
#include <sys/stat.h>

#include "system-bus.h"
#include "trace-file.h"

#define note(...) g_printerr("# " __VA_ARGS__)

static const char capture_config[] =
        "duration_ms: 1000\n"
        "buffers { size_kb: 4096 }\n"
        "data_sources { config { name: \"linux.ftrace\" ftrace_config {\n"
        "  ftrace_events: \"sched/sched_switch\" ftrace_events: \"sched/sched_waking\" } } }\n";

typedef struct {
        char *config_dir;
        char *out_dir;
} Dirs;

static void dirs_clear(Dirs *d) {
        g_free(d->config_dir);
        g_free(d->out_dir);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Dirs, dirs_clear)

/* Fresh per-case directories under the test's temporary directory. */
static void dirs_new(const char *tag, Dirs *ret) {
        ret->config_dir = g_build_filename(tb_bus()->tmpdir, "capture-conf", tag, NULL);
        ret->out_dir = g_build_filename(tb_bus()->tmpdir, "captures", tag, NULL);
        g_assert_cmpint(g_mkdir_with_parents(ret->config_dir, 0755), ==, 0);
        g_assert_cmpint(g_mkdir_with_parents(ret->out_dir, 0700), ==, 0);
}

static void write_file(const char *dir, const char *name, const char *text, gssize len) {
        g_autofree char *p = g_build_filename(dir, name, NULL);
        g_autoptr(GError) e = NULL;

        g_assert_true(g_file_set_contents(p, text, len, &e));
}

/* An old trace of a given size (the script only looks at names and sizes). */
static void fake_trace(const char *dir, const char *name, gsize size) {
        g_autofree char *junk = g_malloc0(size);
        write_file(dir, name, junk, (gssize) size);
}

/* Runs the capture script as root, like the unit; env is NULL-terminated "K=V" pairs. */
static void run_capture(const Dirs *d, const char *name, const char *const *env, TbCommandResult *res) {
        g_autofree char *script = g_build_filename(tb_bus()->build_dir, "systemd", "tracebus-capture", NULL);
        g_autofree char *cli = g_build_filename(tb_bus()->build_dir, "client", "cli", "tracebus", NULL);
        g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func(g_free);
        g_autoptr(GError) error = NULL;

        g_ptr_array_add(argv, g_strdup("env"));
        g_ptr_array_add(argv, g_strdup("-u"));
        g_ptr_array_add(argv, g_strdup("STATE_DIRECTORY"));
        g_ptr_array_add(argv, g_strdup_printf("TRACEBUS_CAPTURE_CONFIG_DIR=%s", d->config_dir));
        g_ptr_array_add(argv, g_strdup_printf("TRACEBUS_CAPTURE_DIR=%s", d->out_dir));
        g_ptr_array_add(argv, g_strdup_printf("TRACEBUS_CLI=%s", cli));
        for (size_t i = 0; env && env[i]; i++)
                g_ptr_array_add(argv, g_strdup(env[i]));
        /* configure_file() does not make it executable in the build tree; installed, it is. */
        g_ptr_array_add(argv, g_strdup("/bin/sh"));
        g_ptr_array_add(argv, g_strdup(script));
        g_ptr_array_add(argv, g_strdup(name));
        g_ptr_array_add(argv, NULL);
        g_assert_true(tb_run_as_user(NULL, (const char *const *) argv->pdata, res, &error));
        g_assert_no_error(error);
        {
                g_autofree char *status = tb_wait_status_to_string(res->wait_status);
                note("tracebus-capture %s: %s\n# stdout: %s# stderr: %s\n", name, status, res->out, res->err);
        }
}

static char **list_dir(const char *dir) {
        g_auto(GStrv) all = tb_list_tree(dir);
        return g_strdupv(all);
}

static bool is_stamp_name(const char *file, const char *name) {
        g_autofree char *pattern = g_strdup_printf("^%s-[0-9]{8}-[0-9]{6}(-[0-9]+)?\\.pftrace$", name);
        return g_regex_match_simple(pattern, file, 0, 0);
}

/* The traces the capture just made: names in @after that are not in @before. */
static char *new_trace(char *const *before, char *const *after) {
        g_auto(GStrv) added = tb_strv_added(before, after);

        g_assert_cmpuint(g_strv_length(added), ==, 1);
        return g_strdup(added[0]);
}

static void test_capture_writes_a_trace(void) {
        g_auto(Dirs) d = { 0 };
        g_auto(TbCommandResult) res = { 0 };
        g_auto(TbTraceSummary) s = { 0 };
        g_auto(GStrv) after = NULL;
        g_autofree char *file = NULL, *path = NULL, *desc = NULL;
        g_autoptr(GError) error = NULL;
        struct stat st;
        TbBusy busy;

        dirs_new("one", &d);
        write_file(d.config_dir, "nightly.pbtxt", capture_config, -1);
        g_assert_true(tb_busy_start("tbcapture", &busy, &error));
        run_capture(&d, "nightly", NULL, &res);
        tb_busy_stop(&busy);
        g_assert_true(tb_command_succeeded(&res));

        after = list_dir(d.out_dir);
        g_assert_cmpuint(g_strv_length(after), ==, 1);
        file = g_strdup(after[0]);
        g_assert_true(is_stamp_name(file, "nightly"));
        path = g_build_filename(d.out_dir, file, NULL);
        g_assert_cmpint(stat(path, &st), ==, 0);
        g_assert_cmpint(st.st_mode & 0777, ==, 0600);

        /* One line for the journal, naming the file. */
        {
                g_auto(GStrv) lines = g_strsplit(g_strstrip(res.out), "\n", -1);
                g_assert_cmpuint(g_strv_length(lines), ==, 1);
        }
        g_assert_nonnull(strstr(res.out, "tracebus-capture: nightly: wrote "));
        g_assert_nonnull(strstr(res.out, path));

        g_assert_true(tb_trace_file_read(path, &s, &error));
        g_assert_no_error(error);
        desc = tb_trace_summary_describe(&s);
        note("%s: %s\n", file, desc);
        g_assert_true(s.has_trace_config);
        g_assert_cmpuint(s.n_sched_switch + s.n_compact_switch, >, 0);
        g_assert_true(tb_trace_summary_has_switch(&s, busy.pid, "tbcapture") ||
                      tb_trace_summary_has_switch(&s, busy.peer_pid, "tbcapture"));
}

static void test_keep_traces_oldest_first(void) {
        const char *old[] = { "daily-20200101-000000.pftrace", "daily-20200102-000000.pftrace",
                              "daily-20200102-000000-1.pftrace", "daily-20200103-000000.pftrace",
                              "daily-20200104-000000.pftrace", NULL };
        /* Not this capture's: another name that starts the same, and other files. */
        const char *others[] = { "daily-big-20200101-000000.pftrace", "daily-notes.txt",
                                 "daily-2020-bad.pftrace", NULL };
        /* The environment says 1; daily.conf says 3, and wins. */
        const char *env[] = { "TRACEBUS_CAPTURE_KEEP_TRACES=1", NULL };
        g_auto(Dirs) d = { 0 };
        g_auto(TbCommandResult) res = { 0 };
        g_auto(GStrv) before = NULL, after = NULL;
        g_autofree char *made = NULL;

        dirs_new("count", &d);
        write_file(d.config_dir, "daily.pbtxt", capture_config, -1);
        write_file(d.config_dir, "daily.conf", "# three, whatever their size\nKeepTraces=3\nKeepBytes=1G\n", -1);
        for (size_t i = 0; old[i]; i++)
                fake_trace(d.out_dir, old[i], 100);
        for (size_t i = 0; others[i]; i++)
                fake_trace(d.out_dir, others[i], 100);
        before = list_dir(d.out_dir);
        run_capture(&d, "daily", env, &res);
        g_assert_true(tb_command_succeeded(&res));
        after = list_dir(d.out_dir);
        made = new_trace(before, after);
        g_assert_true(is_stamp_name(made, "daily"));

        /* The new one and the two newest old ones; -1 is newer than its plain twin. */
        g_assert_true(g_strv_contains((const char *const *) after, "daily-20200104-000000.pftrace"));
        g_assert_true(g_strv_contains((const char *const *) after, "daily-20200103-000000.pftrace"));
        for (size_t i = 0; i < 3; i++)
                g_assert_false(g_strv_contains((const char *const *) after, old[i]));
        for (size_t i = 0; others[i]; i++)
                g_assert_true(g_strv_contains((const char *const *) after, others[i]));
        g_assert_cmpuint(g_strv_length(after), ==, 3 + g_strv_length((char **) others));
        g_assert_nonnull(strstr(res.out, "removed 3"));
}

static guint64 file_size(const char *dir, const char *name) {
        g_autofree char *p = g_build_filename(dir, name, NULL);
        struct stat st;

        g_assert_cmpint(stat(p, &st), ==, 0);
        return (guint64) st.st_size;
}

#define OLD_SIZE (4 * 1024 * 1024)

static void test_keep_bytes_oldest_first(void) {
        const char *old[] = { "weekly-20200101-000000.pftrace", "weekly-20200102-000000.pftrace",
                              "weekly-20200103-000000.pftrace", "weekly-20200104-000000.pftrace", NULL };
        g_auto(Dirs) d = { 0 };
        g_auto(TbCommandResult) res = { 0 };
        g_auto(GStrv) before = NULL, after = NULL;
        g_autofree char *made = NULL, *budget = NULL;
        g_autofree char *env0 = NULL;
        guint64 made_size, kept = 0;

        /* A first capture tells how big one is; then old traces of 4 MiB each, and a budget
         * of a new trace plus two and a half of them: the two newest old ones stay. */
        dirs_new("bytes", &d);
        write_file(d.config_dir, "weekly.pbtxt", capture_config, -1);
        {
                g_auto(TbCommandResult) first = { 0 };
                g_auto(GStrv) l = NULL;
                run_capture(&d, "weekly", NULL, &first);
                g_assert_true(tb_command_succeeded(&first));
                l = list_dir(d.out_dir);
                g_assert_cmpuint(g_strv_length(l), ==, 1);
                made_size = file_size(d.out_dir, l[0]);
                g_autofree char *p = g_build_filename(d.out_dir, l[0], NULL);
                g_assert_cmpint(g_unlink(p), ==, 0);
        }
        for (size_t i = 0; old[i]; i++)
                fake_trace(d.out_dir, old[i], OLD_SIZE);
        /* Half an old one of margin, for a new trace of another size than the first. */
        budget = g_strdup_printf("%" G_GUINT64_FORMAT, made_size + OLD_SIZE * 2 + OLD_SIZE / 2);
        env0 = g_strdup_printf("TRACEBUS_CAPTURE_KEEP_BYTES=%s", budget);
        {
                const char *env[] = { env0, "TRACEBUS_CAPTURE_KEEP_TRACES=100", NULL };
                before = list_dir(d.out_dir);
                run_capture(&d, "weekly", env, &res);
        }
        g_assert_true(tb_command_succeeded(&res));
        after = list_dir(d.out_dir);
        made = new_trace(before, after);
        made_size = file_size(d.out_dir, made);

        /* Oldest first: whatever is kept is the newest, and within the budget. */
        for (size_t i = 0; after[i]; i++)
                kept += file_size(d.out_dir, after[i]);
        g_assert_cmpuint(kept, <=, g_ascii_strtoull(budget, NULL, 10));
        g_assert_false(g_strv_contains((const char *const *) after, old[0]));
        g_assert_false(g_strv_contains((const char *const *) after, old[1]));
        g_assert_true(g_strv_contains((const char *const *) after, old[3]));
        /* ... and nothing more was removed than needed. */
        if (!g_strv_contains((const char *const *) after, old[2]))
                g_assert_cmpuint(kept + OLD_SIZE, >, g_ascii_strtoull(budget, NULL, 10));
        note("budget %s, new trace %" G_GUINT64_FORMAT " bytes, kept %u files, %" G_GUINT64_FORMAT " bytes\n",
             budget, made_size, g_strv_length(after), kept);
}

static void test_failed_capture_leaves_nothing(void) {
        g_auto(Dirs) d = { 0 };
        g_auto(TbCommandResult) res = { 0 }, bad_name = { 0 };
        g_auto(GStrv) after = NULL;

        dirs_new("fail", &d);
        /* A config whose data source writes into a buffer it does not have: the service
         * refuses it (InvalidConfig). (One whose events this kernel lacks starts, as
         * Perfetto's, with warnings.) */
        write_file(d.config_dir, "broken.pbtxt",
                   "duration_ms: 1000\n"
                   "data_sources { config { name: \"linux.ftrace\" target_buffer: 5 "
                   "ftrace_config { ftrace_events: \"sched/sched_switch\" } } }\n", -1);
        fake_trace(d.out_dir, "broken-20200101-000000.pftrace", 100);
        run_capture(&d, "broken", NULL, &res);
        g_assert_false(tb_command_succeeded(&res));
        g_assert_nonnull(strstr(res.err, "recording"));
        after = list_dir(d.out_dir);
        /* No partial trace, and retention did not run. */
        g_assert_cmpuint(g_strv_length(after), ==, 1);
        g_assert_cmpstr(after[0], ==, "broken-20200101-000000.pftrace");

        run_capture(&d, "../etc", NULL, &bad_name);
        g_assert_false(tb_command_succeeded(&bad_name));
        g_assert_nonnull(strstr(bad_name.err, "not a capture name"));
}

/* RotateEvery= in NAME.conf: the capture is chunks NAME-STAMP.pftrace.N,
 * each a trace of its own, and KeepTraces counts a capture once, all its chunks. */
static void test_rotated_capture(void) {
        static const char rotating_config[] =
                "duration_ms: 3500\nwrite_into_file: true\nfile_write_period_ms: 500\n"
                "buffers { size_kb: 4096 }\n"
                "data_sources { config { name: \"linux.ftrace\" ftrace_config {\n"
                "  ftrace_events: \"sched/sched_switch\" } } }\n";
        const char *env[] = { "TRACEBUS_CAPTURE_KEEP_TRACES=1", NULL };
        g_auto(Dirs) d = { 0 };
        g_auto(TbCommandResult) res = { 0 };
        g_auto(GStrv) after = NULL;
        guint n = 0;

        dirs_new("rotated", &d);
        write_file(d.config_dir, "week.pbtxt", rotating_config, -1);
        write_file(d.config_dir, "week.conf", "RotateEvery=1s\n", -1);
        fake_trace(d.out_dir, "week-20200101-000000.pftrace.0", 100);
        fake_trace(d.out_dir, "week-20200101-000000.pftrace.1", 100);
        run_capture(&d, "week", env, &res);
        g_assert_true(tb_command_succeeded(&res));
        g_assert_nonnull(strstr(res.out, "chunks)"));

        after = list_dir(d.out_dir);
        for (size_t i = 0; after[i]; i++) {
                g_autofree char *path = g_build_filename(d.out_dir, after[i], NULL);
                g_auto(TbTraceSummary) s = { 0 };
                g_autoptr(GError) error = NULL;

                /* The old capture went whole; the new one's chunks each load alone. */
                g_assert_false(g_str_has_prefix(after[i], "week-20200101"));
                g_assert_true(g_regex_match_simple("^week-[0-9]{8}-[0-9]{6}\\.pftrace\\.[0-9]+$", after[i], 0, 0));
                g_assert_true(tb_trace_file_read(path, &s, &error));
                g_assert_no_error(error);
                g_assert_true(s.has_clock_snapshot && s.has_system_info && s.first_packets_flagged);
                n++;
        }
        g_assert_cmpuint(n, >=, 3);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();
        tb_test_add_isolated("/bus/capture/a-writes-a-trace", test_capture_writes_a_trace);
        tb_test_add_isolated("/bus/capture/b-keep-traces-oldest-first", test_keep_traces_oldest_first);
        tb_test_add_isolated("/bus/capture/c-keep-bytes-oldest-first", test_keep_bytes_oldest_first);
        tb_test_add_isolated("/bus/capture/d-failed-capture-leaves-nothing", test_failed_capture_leaves_nothing);
        tb_test_add_isolated("/bus/capture/e-rotated-capture", test_rotated_capture);
        return tb_test_run(TB_START_SERVICE);
}
