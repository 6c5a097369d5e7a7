/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit test of `tracebus --track-event CATEGORY` (client/cli/cli-track-event.c): the
 * command line parsed as the CLI parses it, the config it builds read back (a track_event
 * data source with the categories as enabled_categories; alone, no ftrace source), the
 * same text read by the service's own parser, and the combinations it refuses.
 */
#include <errno.h>
#include <string.h>

/* Before glib.h, which redefines MIN and MAX over macro.h's. */
#include "cli-parse.h"
#include "session-config.h"

#include <glib.h>

static const Tracebus__TrackEventConfig *track_event_config(const CliConfig *c) {
        const Tracebus__DataSourceConfig *ds = cli_test_source(c->parsed, "track_event");

        g_assert_nonnull(ds);
        g_assert_nonnull(ds->track_event_config);
        return ds->track_event_config;
}

static size_t count_sources(const Tracebus__TraceConfig *tc, const char *name) {
        size_t n = 0;

        for (size_t i = 0; i < tc->n_data_sources; i++)
                n += tc->data_sources[i]->config && strcmp(tc->data_sources[i]->config->name, name) == 0;
        return n;
}

/* Alone: the apps' events and the processes' names, no kernel events; the light defaults. */
static void test_alone(void) {
        _cleanup_(cli_config_done) CliConfig c = {};
        const Tracebus__TrackEventConfig *te;

        g_assert_cmpint(PARSE(&c, "--track-event", "rendering", "-o", "/dev/null"), ==, 0);
        g_test_message("%s", c.text);
        te = track_event_config(&c);
        g_assert_cmpuint(te->n_enabled_categories, ==, 1);
        g_assert_cmpstr(te->enabled_categories[0], ==, "rendering");
        g_assert_cmpuint(te->n_disabled_categories, ==, 0);
        g_assert_cmpuint(count_sources(c.parsed, "track_event"), ==, 1);
        g_assert_null(cli_test_source(c.parsed, "linux.ftrace"));
        g_assert_null(cli_test_source(c.parsed, "linux.perf"));
        g_assert_nonnull(cli_test_source(c.parsed, "linux.process_stats"));
        g_assert_cmpuint(c.parsed->duration_ms, ==, 10000);
        g_assert_cmpuint(c.parsed->n_buffers, ==, 1);
        g_assert_cmpuint(c.parsed->buffers[0]->size_kb, ==, 32 * 1024);
}

/* Repeated, '*', and beside kernel events: one data source, each category once, in order. */
static void test_with_events(void) {
        _cleanup_(cli_config_done) CliConfig c = {};
        const Tracebus__TrackEventConfig *te;
        const Tracebus__DataSourceConfig *ftrace;

        g_assert_cmpint(PARSE(&c, "--track-event", "rendering", "-t", "2s", "--track-event", "*",
                              "--track-event", "rendering", "sched/sched_switch", "-o", "/dev/null"), ==, 0);
        te = track_event_config(&c);
        g_assert_cmpuint(te->n_enabled_categories, ==, 2);
        g_assert_cmpstr(te->enabled_categories[0], ==, "rendering");
        g_assert_cmpstr(te->enabled_categories[1], ==, "*");
        g_assert_cmpuint(count_sources(c.parsed, "track_event"), ==, 1);
        ftrace = cli_test_source(c.parsed, "linux.ftrace");
        g_assert_nonnull(ftrace);
        g_assert_cmpuint(ftrace->ftrace_config->n_ftrace_events, ==, 1);
        g_assert_cmpstr(ftrace->ftrace_config->ftrace_events[0], ==, "sched/sched_switch");
        g_assert_cmpuint(c.parsed->duration_ms, ==, 2000);
}

/* Names are written as text-format strings: quotes and backslashes survive. */
static void test_quoting(void) {
        _cleanup_(cli_config_done) CliConfig c = {};
        const Tracebus__TrackEventConfig *te;

        g_assert_cmpint(PARSE(&c, "--track-event", "a\"b\\c d", "-o", "/dev/null"), ==, 0);
        te = track_event_config(&c);
        g_assert_cmpuint(te->n_enabled_categories, ==, 1);
        g_assert_cmpstr(te->enabled_categories[0], ==, "a\"b\\c d");
}

/* The text the CLI sends is what the service's parser reads: the same data source. */
static void test_service_parses(void) {
        _cleanup_(cli_config_done) CliConfig c = {};
        _cleanup_(trace_config_freep) Tracebus__TraceConfig *tc = NULL;
        g_autofree char *error = NULL;
        const Tracebus__DataSourceConfig *ds;

        g_assert_cmpint(PARSE(&c, "--track-event", "*", "-o", "/dev/null"), ==, 0);
        g_assert_nonnull(c.text);
        g_assert_cmpint(session_config_parse_text(c.text, &tc, &error), ==, 0);
        g_assert_null(error);
        ds = cli_test_source(tc, "track_event");
        g_assert_nonnull(ds);
        g_assert_nonnull(ds->track_event_config);
        g_assert_cmpuint(ds->track_event_config->n_enabled_categories, ==, 1);
        g_assert_cmpstr(ds->track_event_config->enabled_categories[0], ==, "*");
        g_assert_null(cli_test_source(tc, "linux.ftrace"));
}

static void test_refused(void) {
        g_autofree char *long_name = g_strnfill(257, 'x');

        g_assert_cmpint(PARSE(NULL, "--track-event", "", "-o", "/dev/null"), <, 0);
        g_assert_cmpint(PARSE(NULL, "--track-event", "bad\nname", "-o", "/dev/null"), <, 0);
        g_assert_cmpint(PARSE(NULL, "--track-event", long_name, "-o", "/dev/null"), <, 0);
        g_assert_cmpint(PARSE(NULL, "--track-event", "rendering", "-c", "/dev/null", "-o", "/dev/null"), <, 0);
        g_assert_cmpint(PARSE(NULL, "--track-event", "rendering", "--query"), <, 0);
        g_assert_cmpint(PARSE(NULL, "--track-event", "rendering"), <, 0);   /* no -o */
        g_assert_cmpint(PARSE(NULL, "--track-event"), <, 0);
        /* perfetto's --app keeps its meaning: an Android app for atrace, refused here. */
        g_assert_cmpint(PARSE(NULL, "--app", "com.example", "-o", "/dev/null"), ==, -EOPNOTSUPP);
        g_assert_cmpint(PARSE(NULL, "-a", "com.example", "-o", "/dev/null"), ==, -EOPNOTSUPP);
        /* A detached session of the apps' events is a recording like any other. */
        g_assert_cmpint(PARSE(NULL, "--track-event", "rendering", "--detach=apps"), >, 0);
        g_assert_cmpint(PARSE(NULL, "--track-event", "rendering", "-o", "/dev/null"), >, 0);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/cli-track-event/alone", test_alone);
        g_test_add_func("/cli-track-event/with-events", test_with_events);
        g_test_add_func("/cli-track-event/quoting", test_quoting);
        g_test_add_func("/cli-track-event/service-parses", test_service_parses);
        g_test_add_func("/cli-track-event/refused", test_refused);
        return g_test_run();
}
