/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit suite: the warnings channel and Perfetto's tolerance. The atrace
 * category table; session_config_load() against a tracefs tree made here (events this
 * kernel lacks are skipped with a warning each and listed for FtraceStats, categories
 * enable their events, a config left with nothing is refused); recorder_warn() from
 * several threads, capped, and taken by the session into its Warnings. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* Before glib.h, which redefines MIN and MAX over macro.h's. */
#include "atrace-categories.h"
#include "recorder-local.h"
#include "session.h"
#include "strv.h"

#include <glib.h>
#include <glib/gstdio.h>

/* ---- the category table ---- */

static void test_category_table(void) {
        const char *prev = NULL, *name;
        size_t n = 0;

        for (size_t i = 0; (name = atrace_category_name(i)); i++, n++) {
                const char *const *events = atrace_category_events(name);

                /* Sorted and unique: the table is looked up by name. */
                if (prev)
                        g_assert_cmpint(strcmp(prev, name), <, 0);
                prev = name;
                g_assert_nonnull(events);
                g_assert_nonnull(events[0]);
                for (size_t j = 0; events[j]; j++) {
                        const char *slash = strchr(events[j], '/');

                        /* group/name or group/ *, never a bare name (it would match any group). */
                        g_assert_nonnull(slash);
                        g_assert_cmpuint(slash - events[j], >, 0);
                        g_assert_cmpuint(strlen(slash + 1), >, 0);
                        g_assert_null(strchr(slash + 1, '/'));
                }
        }
        /* Perfetto's table at v58 has 23 categories, all with a kernel side. */
        g_assert_cmpuint(n, ==, 23);
}

static bool category_has(const char *category, const char *event) {
        const char *const *events = atrace_category_events(category);

        for (size_t i = 0; events && events[i]; i++)
                if (strcmp(events[i], event) == 0)
                        return true;
        return false;
}

static void test_category_contents(void) {
        g_assert_true(category_has("sched", "sched/sched_switch"));
        g_assert_true(category_has("sched", "sched/sched_waking"));
        g_assert_true(category_has("sched", "task/task_newtask"));
        /* Left out on purpose, as Perfetto does: sched_waking says the same. */
        g_assert_false(category_has("sched", "sched/sched_wakeup"));
        g_assert_true(category_has("freq", "power/cpu_frequency"));
        g_assert_true(category_has("freq", "power/suspend_resume"));
        g_assert_true(category_has("idle", "power/cpu_idle"));
        g_assert_true(category_has("irq", "irq/*"));
        g_assert_true(category_has("workq", "workqueue/*"));
        g_assert_true(category_has("memreclaim", "vmscan/mm_vmscan_kswapd_wake"));
        g_assert_true(category_has("disk", "block/block_bio_queue"));
        g_assert_true(category_has("memory", "kmem/rss_stat"));
        g_assert_true(category_has("binder_driver", "binder/binder_transaction"));
        g_assert_true(category_has("thermal", "thermal/thermal_temperature"));
        g_assert_true(category_has("sync", "dma_fence/*"));
        /* Android's userspace categories have no kernel side. */
        g_assert_null(atrace_category_events("am"));
        g_assert_null(atrace_category_events("view"));
        g_assert_null(atrace_category_events("sched/sched_switch"));
        g_assert_null(atrace_category_events(NULL));
}

/* ---- loading against a tracefs tree of our own ---- */

static char *tracefs_root;

static void make_tracefs(void) {
        static const char available[] =
                "sched:sched_switch\nsched:sched_waking\nsched:sched_wakeup\nsched:sched_process_exit\n"
                "task:task_newtask\ntask:task_rename\npower:cpu_idle\npower:cpu_frequency\n"
                "workqueue:workqueue_execute_start\nworkqueue:workqueue_execute_end\n";
        g_autofree char *print = NULL, *file = NULL;
        GError *error = NULL;

        tracefs_root = g_dir_make_tmp("tb-warnings-XXXXXX", &error);
        g_assert_no_error(error);
        file = g_build_filename(tracefs_root, "available_events", NULL);
        g_assert_true(g_file_set_contents(file, available, -1, &error));
        g_assert_no_error(error);
        /* The ftrace group is not in available_events: print is a directory under events. */
        print = g_build_filename(tracefs_root, "events", "ftrace", "print", NULL);
        g_assert_cmpint(g_mkdir_with_parents(print, 0755), ==, 0);
}

static int load(const char *text, SessionConfig *ret, char **ret_error) {
        _cleanup_(trace_config_freep) Tracebus__TraceConfig *tc = NULL;
        g_autofree char *error = NULL;

        g_assert_cmpint(session_config_parse_text(text, &tc, &error), ==, 0);
        return session_config_load(tc, tracefs_root, ret, ret_error);
}

#define FTRACE(body) "duration_ms: 1000 data_sources { config { name: \"linux.ftrace\" ftrace_config { " body " } } }"

static void test_unknown_events_skipped(void) {
        _cleanup_(session_config_done) SessionConfig c = {};
        char *error = NULL;

        g_assert_cmpint(load(FTRACE("ftrace_events: \"sched/sched_switch\" ftrace_events: \"sched/sched_blocked_reason\" "
                                    "ftrace_events: \"lowmemorykiller/*\" ftrace_events: \"power/cpu_idle\""),
                             &c, &error), ==, 0);
        g_assert_null(error);
        /* The rest recorded. */
        g_assert_cmpuint(strv_length(c.events), ==, 2);
        g_assert_true(strv_contains(c.events, "sched/sched_switch"));
        g_assert_true(strv_contains(c.events, "power/cpu_idle"));
        /* A warning each, naming it, and both in FtraceStats' unknown_ftrace_events. */
        g_assert_cmpuint(strv_length(c.warnings), ==, 2);
        g_assert_cmpstr(c.warnings[0], ==, "ftrace event 'sched/sched_blocked_reason' does not exist on this kernel: skipped");
        g_assert_cmpstr(c.warnings[1], ==, "ftrace event 'lowmemorykiller/*' does not exist on this kernel: skipped");
        g_assert_cmpuint(strv_length(c.unknown_ftrace_events), ==, 2);
        g_assert_cmpstr(c.unknown_ftrace_events[0], ==, "sched/sched_blocked_reason");
        g_assert_null(c.atrace_errors);
}

#define ALL_MISSING FTRACE("ftrace_events: \"sched/sched_blocked_reason\" ftrace_events: \"nosuch/event\"")

/* A TraceConfig whose events are all missing here starts, as Perfetto starts it: no kernel
 * buffer, each missing event a warning and in FtraceStats' unknown_ftrace_events. */
static void test_nothing_left_accepted(void) {
        _cleanup_(session_config_done) SessionConfig c = {};
        g_autofree char *error = NULL;

        g_assert_cmpint(load(ALL_MISSING, &c, &error), ==, 0);
        g_assert_null(error);
        g_assert_null(c.events);
        g_assert_null(c.data_sources);
        g_assert_cmpuint(c.buffer_size_kb, ==, 0);
        g_assert_cmpuint(strv_length(c.warnings), ==, 2);
        g_assert_cmpstr(c.warnings[1], ==, "ftrace event 'nosuch/event' does not exist on this kernel: skipped");
        g_assert_cmpuint(strv_length(c.unknown_ftrace_events), ==, 2);
        g_assert_cmpstr(c.unknown_ftrace_events[0], ==, "sched/sched_blocked_reason");
}

/* tracebus's own list (Start's Events option) is names a user typed: none existing is a
 * typo, refused with the names (UnknownEvent). */
static void test_strict_list_refused(void) {
        _cleanup_(trace_config_freep) Tracebus__TraceConfig *tc = NULL;
        _cleanup_(session_config_done) SessionConfig c = {};
        g_autofree char *error = NULL;
        char *events[] = { (char *) "sched/sched_blocked_reason", (char *) "nosuch/event", NULL };

        g_assert_cmpint(session_config_from_options(events, 1000, 0, &tc), ==, 0);
        g_assert_cmpint(session_config_load_flags(tc, tracefs_root, SESSION_CONFIG_STRICT_EVENTS, &c, &error), ==,
                        -ENOENT);
        g_assert_cmpstr(error, ==, "sched/sched_blocked_reason, nosuch/event");
}

/* The Session's DataSources: the config's sources tracebus runs, each once, in order. */
static void test_data_sources(void) {
        _cleanup_(session_config_done) SessionConfig c = {};
        g_autofree char *error = NULL;

        g_assert_cmpint(load("data_sources { config { name: \"android.log\" } } "
                             "data_sources { config { name: \"linux.process_stats\" } } "
                             "data_sources { config { name: \"linux.ftrace\" ftrace_config { "
                             "ftrace_events: \"sched/sched_switch\" } } } "
                             "data_sources { config { name: \"com.example.mytrace\" } } "
                             "data_sources { config { name: \"linux.process_stats\" } }", &c, &error), ==, 0);
        g_assert_cmpuint(strv_length(c.data_sources), ==, 3);
        g_assert_cmpstr(c.data_sources[0], ==, "linux.process_stats");
        g_assert_cmpstr(c.data_sources[1], ==, "linux.ftrace");
        /* A name tracebus has no source of is one an app may register. */
        g_assert_cmpstr(c.data_sources[2], ==, "com.example.mytrace");
        g_assert_cmpuint(c.n_producer_sources, ==, 1);
        g_assert_cmpstr(c.producer_sources[0].name, ==, "com.example.mytrace");
}

/* A config with nothing for the kernel starts, as Perfetto's does: an ftrace_config without
 * events, buffers alone, or track_event alone (the apps record it); no kernel buffer. */
static void test_nothing_for_the_kernel_starts(void) {
        const char *const configs[] = {
                FTRACE(""),
                "buffers { size_kb: 1024 }",
                "data_sources { config { name: \"track_event\" } }",
        };

        for (size_t i = 0; i < G_N_ELEMENTS(configs); i++) {
                _cleanup_(session_config_done) SessionConfig c = {};
                g_autofree char *error = NULL;

                g_assert_cmpint(load(configs[i], &c, &error), ==, 0);
                g_assert_null(c.events);
                g_assert_cmpuint(c.buffer_size_kb, ==, 0);
                g_assert_cmpuint(c.n_producer_sources, ==, i == 2);
        }
}

/* Start's Events option is the list of what to record: empty, it is refused. */
static void test_empty_events_option_refused(void) {
        _cleanup_(trace_config_freep) Tracebus__TraceConfig *tc = NULL;
        _cleanup_(session_config_done) SessionConfig c = {};
        g_autofree char *error = NULL;

        g_assert_cmpint(session_config_from_options(NULL, 1000, 0, &tc), ==, 0);
        g_assert_cmpint(session_config_load_flags(tc, tracefs_root, SESSION_CONFIG_STRICT_EVENTS, &c, &error), ==, -EINVAL);
        g_assert_nonnull(strstr(error, "the Events option names none"));
}

/* Thousands of missing names make a bounded list of warnings, the last counting the rest. */
static void test_many_unknown_bounded(void) {
        _cleanup_(session_config_done) SessionConfig c = {};
        g_autoptr(GString) text = g_string_new("data_sources { config { name: \"linux.ftrace\" ftrace_config { "
                                               "ftrace_events: \"sched/sched_switch\" ");
        char *error = NULL;

        for (unsigned i = 0; i < 1000; i++)
                g_string_append_printf(text, "ftrace_events: \"nosuch/event_%u\" ", i);
        g_string_append(text, "} } }");
        g_assert_cmpint(load(text->str, &c, &error), ==, 0);
        g_assert_cmpuint(strv_length(c.events), ==, 1);
        g_assert_cmpuint(strv_length(c.warnings), <=, SESSION_MAX_WARNINGS);
        g_assert_nonnull(strstr(c.warnings[strv_length(c.warnings) - 1], "more ftrace events do not exist"));
        g_assert_cmpuint(strv_length(c.unknown_ftrace_events), <=, 32);
}

static void test_tracing_mark_write(void) {
        _cleanup_(session_config_done) SessionConfig c = {};
        char *error = NULL;

        g_assert_cmpint(load(FTRACE("ftrace_events: \"sched/sched_switch\" ftrace_events: \"tracing_mark_write\""),
                             &c, &error), ==, 0);
        g_assert_true(strv_contains(c.events, "ftrace/print"));
        g_assert_cmpuint(strv_length(c.warnings), ==, 1);
        g_assert_nonnull(strstr(c.warnings[0], "recording ftrace/print"));
        g_assert_null(c.unknown_ftrace_events);
}

static void test_atrace_categories(void) {
        _cleanup_(session_config_done) SessionConfig c = {};
        char *error = NULL;

        g_assert_cmpint(load(FTRACE("atrace_categories: \"sched\" atrace_categories: \"idle\" atrace_categories: \"workq\" "
                                    "atrace_categories: \"mmc\" atrace_categories: \"am\" atrace_categories: \"am\" "
                                    "atrace_apps: \"com.example\""),
                             &c, &error), ==, 0);
        g_assert_null(error);
        /* What this kernel has of each: sched_wakeup is not in the sched category. */
        g_assert_true(strv_contains(c.events, "sched/sched_switch"));
        g_assert_true(strv_contains(c.events, "sched/sched_waking"));
        g_assert_true(strv_contains(c.events, "sched/sched_process_exit"));
        g_assert_true(strv_contains(c.events, "task/task_newtask"));
        g_assert_false(strv_contains(c.events, "sched/sched_wakeup"));
        g_assert_true(strv_contains(c.events, "power/cpu_idle"));
        g_assert_false(strv_contains(c.events, "power/cpu_frequency"));
        g_assert_true(strv_contains(c.events, "workqueue/workqueue_execute_start"));
        g_assert_true(strv_contains(c.events, "ftrace/print"));
        /* The missing events of a category are no warning; a category with nothing here
         * is, once; so are the userspace ones and atrace_apps. */
        g_assert_null(c.unknown_ftrace_events);
        g_assert_cmpuint(strv_length(c.warnings), ==, 3);
        g_assert_cmpstr(c.warnings[0], ==, "atrace category 'mmc' has none of its kernel events on this kernel: skipped");
        g_assert_cmpstr(c.warnings[1], ==, "atrace category 'am' has no kernel events (Android userspace only): skipped");
        g_assert_cmpstr(c.warnings[2], ==, "atrace_apps ('com.example') is Android-only: skipped");
        g_assert_cmpuint(strv_length(c.atrace_errors), ==, 3);
}

/* ---- warnings from threads ---- */

static void *warn_many(void *userdata) {
        Recorder *rec = userdata;

        for (unsigned i = 0; i < 40; i++)
                g_assert_cmpint(recorder_warn(rec, "poller warning %u", i), ==, 0);
        return NULL;
}

static void on_changed(Session *s, SessionChange what, void *userdata) {
        unsigned *calls = userdata;

        g_assert_true(what & SESSION_CHANGED_WARNINGS);
        (*calls)++;
}

static void test_recorder_warn(void) {
        static const SessionCallbacks callbacks = { .on_changed = on_changed };
        Recorder rec = {};
        pthread_t threads[4];
        unsigned calls = 0;
        Session s = { .id = 1, .recorder = &rec, .callbacks = &callbacks, .callbacks_userdata = &calls };

        (void) pthread_mutex_init(&rec.warnings_lock, NULL);
        for (size_t i = 0; i < G_N_ELEMENTS(threads); i++)
                g_assert_cmpint(pthread_create(&threads[i], NULL, warn_many, &rec), ==, 0);
        for (size_t i = 0; i < G_N_ELEMENTS(threads); i++)
                g_assert_cmpint(pthread_join(threads[i], NULL), ==, 0);

        /* 160 asked, SESSION_MAX_WARNINGS kept for the trace and the session, the rest counted. */
        g_assert_cmpuint(strv_length(rec.warnings_for_trace), ==, SESSION_MAX_WARNINGS);
        session_collect_warnings(&s);
        g_assert_cmpuint(calls, ==, 1);
        g_assert_cmpuint(strv_length(s.config.warnings), ==, SESSION_MAX_WARNINGS);
        g_assert_nonnull(strstr(s.config.warnings[SESSION_MAX_WARNINGS - 1], "more warnings left out"));
        g_assert_null(rec.warnings_for_session);
        /* Nothing new: no report. */
        session_collect_warnings(&s);
        g_assert_cmpuint(calls, ==, 1);

        session_config_done(&s.config);
        recorder_warnings_free(&rec);
}

/* Packets the recorder's inbox refused are told, once. */
static void test_submitted_dropped(void) {
        static const SessionCallbacks callbacks = { .on_changed = on_changed };
        Recorder rec = {};
        unsigned calls = 0;
        Session s = { .id = 3, .recorder = &rec, .callbacks = &callbacks, .callbacks_userdata = &calls };

        (void) pthread_mutex_init(&rec.warnings_lock, NULL);
        (void) pthread_mutex_init(&rec.inbox_lock, NULL);
        session_collect_warnings(&s);
        g_assert_null(s.config.warnings);
        rec.inbox_dropped = 5;
        session_collect_warnings(&s);
        rec.inbox_dropped = 9;
        session_collect_warnings(&s);
        g_assert_cmpuint(strv_length(s.config.warnings), ==, 1);
        g_assert_nonnull(strstr(s.config.warnings[0], "5 packets of the polling data sources dropped"));
        g_assert_cmpuint(calls, ==, 1);

        session_config_done(&s.config);
        recorder_warnings_free(&rec);
        (void) pthread_mutex_destroy(&rec.inbox_lock);
}

static void test_session_warn(void) {
        static const SessionCallbacks callbacks = { .on_changed = on_changed };
        Recorder rec = {};
        unsigned calls = 0;
        Session s = { .id = 2, .recorder = &rec, .callbacks = &callbacks, .callbacks_userdata = &calls };

        (void) pthread_mutex_init(&rec.warnings_lock, NULL);
        g_assert_cmpint(session_warn(&s, "no battery: linux.sysfs_power %s", "skipped"), ==, 0);
        g_assert_cmpuint(calls, ==, 1);
        g_assert_cmpstr(s.config.warnings[0], ==, "no battery: linux.sysfs_power skipped");
        /* Into the trace, not back to the session. */
        g_assert_cmpstr(rec.warnings_for_trace[0], ==, "no battery: linux.sysfs_power skipped");
        g_assert_null(rec.warnings_for_session);

        session_config_done(&s.config);
        recorder_warnings_free(&rec);
}

int main(int argc, char *argv[]) {
        int r;

        g_test_init(&argc, &argv, NULL);
        make_tracefs();
        g_test_add_func("/warnings/category-table", test_category_table);
        g_test_add_func("/warnings/category-contents", test_category_contents);
        g_test_add_func("/warnings/unknown-events-skipped", test_unknown_events_skipped);
        g_test_add_func("/warnings/nothing-left-accepted", test_nothing_left_accepted);
        g_test_add_func("/warnings/strict-list-refused", test_strict_list_refused);
        g_test_add_func("/warnings/nothing-for-the-kernel-starts", test_nothing_for_the_kernel_starts);
        g_test_add_func("/warnings/empty-events-option-refused", test_empty_events_option_refused);
        g_test_add_func("/warnings/data-sources", test_data_sources);
        g_test_add_func("/warnings/many-unknown-bounded", test_many_unknown_bounded);
        g_test_add_func("/warnings/tracing-mark-write", test_tracing_mark_write);
        g_test_add_func("/warnings/atrace-categories", test_atrace_categories);
        g_test_add_func("/warnings/recorder-warn", test_recorder_warn);
        g_test_add_func("/warnings/session-warn", test_session_warn);
        g_test_add_func("/warnings/submitted-dropped", test_submitted_dropped);
        r = g_test_run();
        {
                g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", tracefs_root);
                int ignored = system(cmd);

                (void) ignored;
        }
        g_free(tracefs_root);
        return r;
}
