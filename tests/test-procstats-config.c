/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit suite: linux.process_stats's config (service/sources/process/process-config.c): each
 * field of Perfetto v58's ProcessStatsConfig into its section and the config's process
 * descriptions, and a warning for each one skipped or changed. */
#include "data-source.h"
#include "process-stats.h"
#include "session-config.h"

#include <glib.h>
#include <string.h>

static void load(const char *text, SessionConfig *c) {
        g_autofree char *err = NULL;
        Tracebus__TraceConfig *tc = NULL;

        g_assert_cmpint(session_config_parse_text(text, &tc, &err), ==, 0);
        g_assert_null(err);
        *c = (SessionConfig) {};
        g_assert_cmpint(data_sources_load(tc, "/nonexistent", c, &err), ==, 0);
        tracebus__trace_config__free_unpacked(tc, NULL);
}

/* Whether a warning of @c contains @part. */
static bool warned(const SessionConfig *c, const char *part) {
        for (char **w = c->warnings; w && *w; w++)
                if (strstr(*w, part))
                        return true;
        return false;
}

static const ProcessStatsSection *section(const SessionConfig *c) {
        return data_source_section(c, &process_stats_data_source);
}

static size_t n_warnings(const SessionConfig *c) {
        return c->warnings ? g_strv_length(c->warnings) : 0;
}

static void test_absent(void) {
        SessionConfig c;

        load("data_sources { config { name: \"linux.ftrace\" } }\n", &c);
        g_assert_null(section(&c));
        g_assert_cmpuint(n_warnings(&c), ==, 0);
        session_config_done(&c);
}

static void test_fields(void) {
        SessionConfig c;

        load("buffers { size_kb: 1024 } buffers { size_kb: 1024 }\n"
             "data_sources { config { name: \"linux.process_stats\" target_buffer: 1 process_stats_config {\n"
             "  scan_all_processes_on_start: true record_thread_names: true proc_stats_poll_ms: 250\n"
             "  proc_stats_cache_ttl_ms: 1000 scan_smaps_rollup: true record_process_age: true\n"
             "  record_process_runtime: true skip_main_thread_message: true\n"
             "  quirks: DISABLE_INITIAL_DUMP quirks: DISABLE_ON_DEMAND } } }\n", &c);
        g_assert_nonnull(section(&c));
        g_assert_cmpuint(section(&c)->poll_ms, ==, 250);
        g_assert_cmpuint(section(&c)->cache_ttl_ms, ==, 1000);
        g_assert_cmpuint(section(&c)->target_buffer, ==, 1);
        g_assert_true(section(&c)->smaps && section(&c)->runtime && c.process_tree.age);
        g_assert_true(c.process_tree.skip_main_thread && c.process_tree.initial_dump_off && c.process_tree.on_demand_off);
        g_assert_cmpuint(n_warnings(&c), ==, 0);
        session_config_done(&c);
}

static void test_warnings(void) {
        SessionConfig c;

        load("data_sources { config { name: \"linux.process_stats\" process_stats_config {\n"
             "  proc_stats_poll_ms: 5 resolve_process_fds: true record_process_dmabuf_rss: true } } }\n"
             "data_sources { config { name: \"linux.process_stats\" } }\n", &c);
        g_assert_cmpuint(section(&c)->poll_ms, ==, PROCESS_STATS_MIN_POLL_MS);
        g_assert_true(warned(&c, "proc_stats_poll_ms 5 is under the minimum of 100 ms: raised to 100 ms"));
        g_assert_true(warned(&c, "resolve_process_fds"));
        g_assert_true(warned(&c, "record_process_dmabuf_rss"));
        g_assert_true(warned(&c, "a second data source"));
        g_assert_cmpuint(n_warnings(&c), ==, 4);
        session_config_done(&c);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/procstats-config/absent", test_absent);
        g_test_add_func("/procstats-config/fields", test_fields);
        g_test_add_func("/procstats-config/warnings", test_warnings);
        return g_test_run();
}
