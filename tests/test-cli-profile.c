/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit test of `tracebus --profile` (client/cli/cli-profile.c): the command line parsed as
 * the CLI parses it, the config it builds read back field by field, then loaded by the
 * service's own loaders (session_config_load() and data_sources_load(), against a tracefs
 * tree made here), and the combinations it refuses.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Before glib.h, which redefines MIN and MAX over macro.h's. */
#include "cli-parse.h"
#include "data-source.h"
#include "perf-config.h"
#include "perf-sampler.h"
#include "process-stats.h"
#include "session-config.h"
#include "strv.h"

#include <glib.h>
#include <glib/gstdio.h>

static char *tracefs_root;

static const Tracebus__PerfEventConfig *perf_config(const CliConfig *c) {
        const Tracebus__DataSourceConfig *ds = cli_test_source(c->parsed, "linux.perf");

        g_assert_nonnull(ds);
        g_assert_nonnull(ds->perf_event_config);
        return ds->perf_event_config;
}

static void test_defaults(void) {
        _cleanup_(cli_config_done) CliConfig c = {};
        const Tracebus__PerfEventConfig *pe;
        const Tracebus__DataSourceConfig *ps;

        g_assert_cmpint(PARSE(&c, "--profile", "-o", "/dev/null"), ==, 0);
        pe = perf_config(&c);
        g_assert_nonnull(pe->timebase);
        g_assert_cmpint(pe->timebase->counter, ==, TRACEBUS__PERF_EVENTS__COUNTER__SW_CPU_CLOCK);
        g_assert_cmpint(pe->timebase->interval_case, ==, TRACEBUS__PERF_EVENTS__TIMEBASE__INTERVAL_FREQUENCY);
        g_assert_cmpuint(pe->timebase->frequency, ==, 100);
        /* 100 Hz of DWARF samples fit Perfetto's default rings, read every 50 ms. */
        g_assert_cmpuint(pe->ring_buffer_pages, ==, 128);
        g_assert_cmpuint(pe->ring_buffer_read_period_ms, ==, 50);
        g_assert_nonnull(pe->callstack_sampling);
        /* No scope: the kernel's frames are asked for too (kept with org.tracebus.manage). */
        g_assert_null(pe->callstack_sampling->scope);
        g_assert_true(pe->callstack_sampling->kernel_frames);
        g_assert_cmpint(pe->callstack_sampling->user_frames, ==,
                        TRACEBUS__PERF_EVENT_CONFIG__UNWIND_MODE__UNWIND_DWARF);
        /* The light config's defaults, and no ftrace source without events. */
        g_assert_cmpuint(c.parsed->duration_ms, ==, 10000);
        g_assert_null(cli_test_source(c.parsed, "linux.ftrace"));
        ps = cli_test_source(c.parsed, "linux.process_stats");
        g_assert_nonnull(ps);
        g_assert_nonnull(ps->process_stats_config);
        g_assert_true(ps->process_stats_config->scan_all_processes_on_start);
        g_assert_nonnull(cli_test_source(c.parsed, "linux.system_info"));
}

static void test_scope(void) {
        _cleanup_(cli_config_done) CliConfig c = {};
        const Tracebus__PerfEventConfig__Scope *s;

        g_assert_cmpint(PARSE(&c, "--profile=4000", "-t", "3s", "--pid", "42", "--cmdline", "my \"app\"",
                              "--pid", "7", "sched/sched_switch", "-o", "/dev/null"), ==, 0);
        g_assert_cmpuint(perf_config(&c)->timebase->frequency, ==, 4000);
        /* 4 kHz: 200 samples of 8.5 KiB a read, four times over: the service's cap of 1024 pages. */
        g_assert_cmpuint(perf_config(&c)->ring_buffer_pages, ==, 1024);
        s = perf_config(&c)->callstack_sampling->scope;
        g_assert_nonnull(s);
        g_assert_cmpuint(s->n_target_pid, ==, 2);
        g_assert_cmpint(s->target_pid[0], ==, 42);
        g_assert_cmpint(s->target_pid[1], ==, 7);
        g_assert_cmpuint(s->n_target_cmdline, ==, 1);
        g_assert_cmpstr(s->target_cmdline[0], ==, "my \"app\"");
        /* A scope: user frames only, all that org.tracebus.record may get. */
        g_assert_false(perf_config(&c)->callstack_sampling->kernel_frames);
        g_assert_cmpuint(c.parsed->duration_ms, ==, 3000);
        /* Events with a profile: the scheduling-blockages shape, ftrace beside perf. */
        g_assert_nonnull(cli_test_source(c.parsed, "linux.ftrace"));
}

/* 1 kHz: 50 DWARF samples a read, four times over: 425 pages, so 512. */
static void test_rings(void) {
        _cleanup_(cli_config_done) CliConfig c = {};

        g_assert_cmpint(PARSE(&c, "--profile=1000", "-o", "/dev/null"), ==, 0);
        g_assert_cmpuint(perf_config(&c)->ring_buffer_pages, ==, 512);
        g_assert_cmpuint(perf_config(&c)->ring_buffer_read_period_ms, ==, 50);
}

static void test_refused(void) {
        g_assert_cmpint(PARSE(NULL, "--profile=0", "-o", "/dev/null"), <, 0);
        g_assert_cmpint(PARSE(NULL, "--profile=fast", "-o", "/dev/null"), <, 0);
        g_assert_cmpint(PARSE(NULL, "--profile=-5", "-o", "/dev/null"), <, 0);
        g_assert_cmpint(PARSE(NULL, "--profile=99999999999", "-o", "/dev/null"), <, 0);
        /* "--profile 500": getopt makes 500 an event; said so instead of "no such event". */
        g_assert_cmpint(PARSE(NULL, "--profile", "500", "-o", "/dev/null"), <, 0);
        g_assert_cmpint(PARSE(NULL, "--pid", "42", "sched/sched_switch", "-o", "/dev/null"), <, 0);
        g_assert_cmpint(PARSE(NULL, "--cmdline", "x", "sched/sched_switch", "-o", "/dev/null"), <, 0);
        g_assert_cmpint(PARSE(NULL, "--profile", "--pid", "0", "-o", "/dev/null"), <, 0);
        g_assert_cmpint(PARSE(NULL, "--profile", "--pid", "12ab", "-o", "/dev/null"), <, 0);
        g_assert_cmpint(PARSE(NULL, "--profile", "--cmdline", "", "-o", "/dev/null"), <, 0);
        g_assert_cmpint(PARSE(NULL, "--profile", "-c", "/dev/null", "-o", "/dev/null"), <, 0);
        g_assert_cmpint(PARSE(NULL, "--profile", "--query"), <, 0);
        g_assert_cmpint(PARSE(NULL, "--profile"), <, 0);   /* no -o */
        /* A detached profile is a recording like any other. */
        g_assert_cmpint(PARSE(NULL, "--profile", "--detach=prof"), >, 0);
}

static void make_tracefs(void) {
        g_autofree char *file = NULL;
        GError *error = NULL;

        tracefs_root = g_dir_make_tmp("tb-cli-profile-XXXXXX", &error);
        g_assert_no_error(error);
        file = g_build_filename(tracefs_root, "available_events", NULL);
        g_assert_true(g_file_set_contents(file, "sched:sched_switch\n", -1, &error));
        g_assert_no_error(error);
}

/* The service's loader takes what the CLI sends, as text (the CLI sends it so). */
static void test_service_loads(void) {
        _cleanup_(cli_config_done) CliConfig c = {};
        _cleanup_(session_config_done) SessionConfig sc = {};
        _cleanup_(trace_config_freep) Tracebus__TraceConfig *tc = NULL;
        g_autofree char *error = NULL;
        const PerfSection *perf;

        g_assert_cmpint(PARSE(&c, "--profile=250", "--cmdline", "bash", "-o", "/dev/null"), ==, 0);
        g_assert_nonnull(c.text);
        g_test_message("%s", c.text);
        g_assert_cmpint(session_config_parse_text(c.text, &tc, &error), ==, 0);
        g_assert_cmpint(session_config_load(tc, tracefs_root, &sc, &error), ==, 0);
        g_assert_cmpint(data_sources_load(tc, tracefs_root, &sc, &error), ==, 0);
        g_assert_null(error);
        g_assert_true(data_source_section(&sc, &process_stats_data_source) && !sc.process_tree.initial_dump_off);
        perf = data_source_section(&sc, &perf_data_source);
        STRV_FOREACH(w, sc.warnings) {
                g_test_message("warning: %s", *w);
                /* Honoured, not skipped: the sampler gets it as written (a build without
                 * DWARF unwinding says it falls back to frame pointers, and only that). */
                if (!strstr(*w, "UNWIND_DWARF"))
                        g_assert_null(strstr(*w, "linux.perf"));
        }
        g_assert_true(perf && perf->callstacks && perf->user_frames && perf->unwind_dwarf);
        g_assert_false(perf->kernel_frames);
        g_assert_true(perf->freq);
        g_assert_cmpuint(perf->interval, ==, 250);
        /* 250 Hz: 12 samples a read, four times over, 102 pages: Perfetto's 128 kept. */
        g_assert_cmpuint(perf->ring_pages, ==, 128);
        g_assert_cmpuint(perf->read_period_ms, ==, 50);
        g_assert_cmpuint(perf->n_target_pids, ==, 0);
        g_assert_nonnull(perf->target_cmdlines);
        g_assert_cmpstr(perf->target_cmdlines[0], ==, "bash");
        g_assert_null(perf->target_cmdlines[1]);
}

int main(int argc, char *argv[]) {
        int r;

        g_test_init(&argc, &argv, NULL);
        make_tracefs();
        g_test_add_func("/cli-profile/defaults", test_defaults);
        g_test_add_func("/cli-profile/scope", test_scope);
        g_test_add_func("/cli-profile/rings", test_rings);
        g_test_add_func("/cli-profile/refused", test_refused);
        g_test_add_func("/cli-profile/service-loads", test_service_loads);
        r = g_test_run();
        g_autofree char *file = g_build_filename(tracefs_root, "available_events", NULL);
        (void) g_unlink(file);
        (void) g_rmdir(tracefs_root);
        return r;
}
