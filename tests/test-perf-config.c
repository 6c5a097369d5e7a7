/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * linux.perf's PerfEventConfig as the service loads it (service/sources/perf/perf-config.c)
 * and what a caller may sample (perf_scope_authorize(), service/sources/perf/perf-scope.c): defaults,
 * a frequency over the kernel's cap, counters this machine lacks, ring sizes, the
 * tracepoint timebase (against a fake tracefs root), the legacy flat fields, and the
 * refusal of another user's process without org.tracebus.manage.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Before GLib, whose MIN and MAX are the same macros. */
#include "data-source.h"
#include "perf-config.h"
#include "perf-local.h"
#include "perf-sampler.h"
#include "session-config.h"
#include "strv.h"
#undef MIN
#undef MAX

#include <glib.h>
#include <glib/gstdio.h>

static char *root;

static bool has_warning(const SessionConfig *c, const char *part) {
        for (char **w = c->warnings; w && *w; w++)
                if (strstr(*w, part))
                        return true;
        return false;
}

/* The linux.perf section of @c. */
static PerfSection *perf_of(const SessionConfig *c) {
        return data_source_section(c, &perf_data_source);
}

/* Loads @perf (the inside of perf_event_config { }); the error, or NULL. */
static char *load(const char *perf, SessionConfig *c) {
        g_autofree char *text = g_strdup_printf("data_sources { config { name: \"linux.perf\" "
                                                "perf_event_config { %s } } }", perf);
        Tracebus__TraceConfig *tc = NULL;
        char *error = NULL;

        g_assert_cmpint(session_config_parse_text(text, &tc, &error), ==, 0);
        *c = (SessionConfig) {};
        (void) data_sources_load(tc, root, c, &error);
        trace_config_freep(&tc);
        return error;
}

static void test_defaults(void) {
        SessionConfig c;

        g_assert_null(load("", &c));
        g_assert_nonnull(perf_of(&c));
        g_assert_true(perf_of(&c)->freq);
        g_assert_cmpuint(perf_of(&c)->interval, ==, PERF_DEFAULT_FREQUENCY);
        g_assert_cmpuint(perf_of(&c)->counter, ==, TRACEBUS__PERF_EVENTS__COUNTER__SW_CPU_CLOCK);
        g_assert_cmpuint(perf_of(&c)->ring_pages, ==, PERF_DEFAULT_RING_PAGES);
        g_assert_cmpuint(perf_of(&c)->read_period_ms, ==, PERF_DEFAULT_READ_PERIOD_MS);
        g_assert_false(perf_of(&c)->callstacks);   /* counting only, as Perfetto without callstack_sampling */
        session_config_done(&c);
}

static void test_frequency_clamped(void) {
        g_autofree char *max_text = NULL;
        SessionConfig c;

        g_assert_true(g_file_get_contents("/proc/sys/kernel/perf_event_max_sample_rate", &max_text, NULL, NULL));
        g_assert_null(load("timebase { frequency: 100000000 counter: SW_CPU_CLOCK }", &c));
        g_assert_cmpuint(perf_of(&c)->interval, ==, g_ascii_strtoull(max_text, NULL, 10));
        g_assert_true(has_warning(&c, "perf_event_max_sample_rate"));
        session_config_done(&c);
        g_assert_null(load("timebase { period: 5000 counter: SW_PAGE_FAULTS }", &c));
        g_assert_false(perf_of(&c)->freq);
        g_assert_cmpuint(perf_of(&c)->interval, ==, 5000);
        g_assert_cmpuint(perf_of(&c)->counter, ==, TRACEBUS__PERF_EVENTS__COUNTER__SW_PAGE_FAULTS);
        g_assert_null(c.warnings);
        session_config_done(&c);
}

/* A HW counter is used where the machine has it, else SW_CPU_CLOCK with a warning. */
static void test_hw_counter(void) {
        SessionConfig c;

        g_assert_null(load("timebase { frequency: 100 counter: HW_CPU_CYCLES }", &c));
        if (perf_of(&c)->counter == TRACEBUS__PERF_EVENTS__COUNTER__HW_CPU_CYCLES)
                g_assert_null(c.warnings);
        else {
                g_assert_cmpuint(perf_of(&c)->counter, ==, TRACEBUS__PERF_EVENTS__COUNTER__SW_CPU_CLOCK);
                g_assert_true(has_warning(&c, "HW_CPU_CYCLES is not available"));
                g_test_message("HW_CPU_CYCLES missing here: SW_CPU_CLOCK, warned");
        }
        session_config_done(&c);
}

static void test_sizes_and_skipped(void) {
        SessionConfig c;

        g_assert_null(load("ring_buffer_pages: 100 followers { counter: SW_PAGE_FAULTS } target_cpu: 0 "
                           "callstack_sampling { user_frames: UNWIND_FRAME_POINTER }", &c));
        g_assert_cmpuint(perf_of(&c)->ring_pages, ==, 64);
        g_assert_true(has_warning(&c, "ring_buffer_pages 100"));
        g_assert_true(has_warning(&c, "followers are not recorded"));
        g_assert_true(has_warning(&c, "target_cpu"));
        g_assert_true(perf_of(&c)->callstacks && perf_of(&c)->user_frames && !perf_of(&c)->unwind_dwarf);
        session_config_done(&c);
        /* Perfetto's case study asks for 2048 pages: a power of two, over tracebus's cap. */
        g_assert_null(load("ring_buffer_pages: 2048", &c));
        g_assert_cmpuint(perf_of(&c)->ring_pages, ==, PERF_MAX_RING_PAGES);
        g_assert_true(has_warning(&c, "ring_buffer_pages 2048 is over tracebus's cap of 1024 pages per CPU"));
        session_config_done(&c);
}

static void test_tracepoint(void) {
        g_autofree char *error = NULL;
        SessionConfig c;

        g_assert_null(load("timebase { period: 1 tracepoint { name: \"sched:sched_switch\" filter: \"prev_pid > 0\" } }", &c));
        g_assert_cmpuint(perf_of(&c)->type, ==, 2);   /* PERF_TYPE_TRACEPOINT */
        g_assert_cmpuint(perf_of(&c)->event_config, ==, 316);
        g_assert_cmpstr(perf_of(&c)->tracepoint, ==, "sched:sched_switch");
        g_assert_cmpstr(perf_of(&c)->tracepoint_filter, ==, "prev_pid > 0");
        session_config_done(&c);
        /* Perfetto's other form, which its docs use ("sched/sched_switch"): the same event. */
        g_assert_null(load("timebase { period: 1 tracepoint { name: \"sched/sched_switch\" } }", &c));
        g_assert_cmpuint(perf_of(&c)->type, ==, 2);
        g_assert_cmpuint(perf_of(&c)->event_config, ==, 316);
        session_config_done(&c);
        error = load("timebase { tracepoint { name: \"sched:nope\" } }", &c);
        g_assert_nonnull(strstr(error, "does not exist"));
        session_config_done(&c);
        g_free(error);
        error = load("timebase { tracepoint { name: \"../../x\" } }", &c);
        g_assert_nonnull(strstr(error, "is not \"group:name\""));
        session_config_done(&c);
        g_free(error);
        error = load("timebase { tracepoint { name: \"sched\" } }", &c);
        g_assert_nonnull(strstr(error, "is not \"group:name\" or \"group/name\""));
        session_config_done(&c);
}

/* The flat fields Perfetto's older docs show, and who may sample what. */
static void test_legacy_and_authorize(void) {
        SessionConfig c;
        pid_t pid = 0;

        g_assert_null(load("all_cpus: true sampling_frequency: 99 kernel_frames: true target_pid: 1 "
                           "target_cmdline: \"tracebusd\" exclude_pid: 2", &c));
        g_assert_true(perf_of(&c)->callstacks && perf_of(&c)->kernel_frames);
        g_assert_cmpuint(perf_of(&c)->interval, ==, 99);
        g_assert_cmpuint(perf_of(&c)->n_target_pids, ==, 1);
        g_assert_cmpint(perf_of(&c)->target_pids[0], ==, 1);
        g_assert_cmpstr(perf_of(&c)->target_cmdlines[0], ==, "tracebusd");
        g_assert_cmpint(perf_of(&c)->exclude_pids[0], ==, 2);
        /* pid 1 is root's: a caller of another uid without manage is refused, naming it. */
        g_assert_cmpint(perf_scope_authorize(&c, 4242, false, &pid), ==, -EPERM);
        g_assert_cmpint(pid, ==, 1);
        g_assert_false(perf_of(&c)->kernel_frames);
        g_assert_true(has_warning(&c, "kernel_frames need org.tracebus.manage"));
        g_assert_cmpint(perf_scope_authorize(&c, 4242, true, &pid), ==, 0);
        g_assert_true(perf_of(&c)->manage);
        session_config_done(&c);
}

int main(int argc, char **argv) {
        g_autoptr(GError) error = NULL;
        g_autofree char *events = NULL, *id = NULL, *avail = NULL;
        int r;

        g_test_init(&argc, &argv, NULL);
        root = g_dir_make_tmp("tb-perf-config-XXXXXX", &error);
        g_assert_no_error(error);
        events = g_build_filename(root, "events", "sched", "sched_switch", NULL);
        g_assert_cmpint(g_mkdir_with_parents(events, 0700), ==, 0);
        id = g_build_filename(events, "id", NULL);
        avail = g_build_filename(root, "available_events", NULL);
        g_assert_true(g_file_set_contents(id, "316\n", -1, NULL));
        g_assert_true(g_file_set_contents(avail, "sched:sched_switch\n", -1, NULL));
        g_test_add_func("/perf-config/defaults", test_defaults);
        g_test_add_func("/perf-config/frequency", test_frequency_clamped);
        g_test_add_func("/perf-config/hw-counter", test_hw_counter);
        g_test_add_func("/perf-config/sizes", test_sizes_and_skipped);
        g_test_add_func("/perf-config/tracepoint", test_tracepoint);
        g_test_add_func("/perf-config/legacy-authorize", test_legacy_and_authorize);
        r = g_test_run();
        (void) g_unlink(id);
        (void) g_unlink(avail);
        (void) g_rmdir(events);
        g_autofree char *sched = g_path_get_dirname(events), *ev = g_path_get_dirname(sched);
        (void) g_rmdir(sched);
        (void) g_rmdir(ev);
        (void) g_rmdir(root);
        g_free(root);
        return r;
}
