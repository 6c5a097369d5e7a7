/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit test of service/config/session-config-trace.c: TraceConfig's own fields as the
 * service loads them from a text config, without tracefs: what is honoured lands
 * in SessionConfig, what cannot be done here is a warning, never a refusal.
 */
#include "session-config.h"
#include <glib.h>
#include <string.h>

static void load(const char *text, SessionConfig *c, int expect) {
        _cleanup_(trace_config_freep) Tracebus__TraceConfig *tc = NULL;
        _cleanup_free_ char *error = NULL;

        g_assert_cmpint(session_config_parse_text(text, &tc, &error), ==, 0);
        g_assert_cmpint(session_config_load_trace(tc, c, &error), ==, expect);
        if (error)
                g_test_message("error: %s", error);
}

static bool has_warning(const SessionConfig *c, const char *what) {
        for (char **w = c->warnings; w && *w; w++)
                if (strstr(*w, what))
                        return true;
        return false;
}

static void test_defaults(void) {
        _cleanup_(session_config_done) SessionConfig c = {};

        load("duration_ms: 1000\n", &c, 0);
        g_assert_null(c.unique_session_name);
        g_assert_false(c.disable_clock_snapshotting || c.disable_trace_config || c.disable_system_info ||
                       c.disable_service_events || c.has_trace_uuid || c.compress);
        g_assert_cmpuint(c.snapshot_interval_ms, ==, SESSION_DEFAULT_SNAPSHOT_INTERVAL_MS);
        g_assert_cmpuint(c.stop_timeout_ms, ==, 0);   /* no bound but the kernel buffers' size */
        g_assert_cmpuint(c.flush_period_ms, ==, 0);
        g_assert_null(c.warnings);
}

static void test_honoured(void) {
        _cleanup_(session_config_done) SessionConfig c = {};

        load("unique_session_name: \"nightly\"\n"
             "builtin_data_sources { disable_clock_snapshotting: true disable_trace_config: true\n"
             "  disable_system_info: true disable_service_events: true snapshot_interval_ms: 250\n"
             "  primary_trace_clock: BUILTIN_CLOCK_BOOTTIME }\n"
             "trace_uuid_msb: 0 trace_uuid_lsb: 42\n"
             "flush_period_ms: 700 data_source_stop_timeout_ms: 1200\n"
             "incremental_state_config { clear_period_ms: 5000 }\n"
             "compression { deflate {} }\n", &c, 0);
        g_assert_cmpstr(c.unique_session_name, ==, "nightly");
        g_assert_true(c.disable_clock_snapshotting && c.disable_trace_config && c.disable_system_info &&
                      c.disable_service_events);
        g_assert_cmpuint(c.snapshot_interval_ms, ==, 250);
        g_assert_true(c.has_trace_uuid);
        g_assert_cmpint(c.trace_uuid_msb, ==, 0);
        g_assert_cmpint(c.trace_uuid_lsb, ==, 42);
        g_assert_cmpuint(c.flush_period_ms, ==, 700);
        g_assert_cmpuint(c.stop_timeout_ms, ==, 1200);
        g_assert_true(c.compress);
        /* All of it honoured: nothing to warn about. */
        g_assert_null(c.warnings);
}

static void test_warned(void) {
        _cleanup_(session_config_done) SessionConfig c = {};

        load("deferred_start: true flush_timeout_ms: 100\n"
             "compression { zstd { level: 3 } }\n"
             "builtin_data_sources { primary_trace_clock: BUILTIN_CLOCK_MONOTONIC enable_concurrent_session_events: true }\n"
             "cmd_trace_start_delay { min_delay_ms: 10 max_delay_ms: 20 }\n", &c, 0);
        g_assert_true(has_warning(&c, "compression.zstd"));
        g_assert_true(has_warning(&c, "primary_trace_clock 3"));
        g_assert_true(has_warning(&c, "enable_concurrent_session_events"));
        g_assert_cmpuint(g_strv_length(c.warnings), ==, 3);
        /* zstd falls back to deflate. */
        g_assert_true(c.compress);
}

static void test_refused(void) {
        _cleanup_(session_config_done) SessionConfig a = {}, b = {};
        g_autofree char *longname = g_strnfill(SESSION_MAX_UNIQUE_NAME + 1, 'n');
        g_autofree char *text = g_strdup_printf("unique_session_name: \"%s\"\n", longname);

        load("unique_session_name: \"a\\nb\"\n", &a, -EINVAL);
        load(text, &b, -EINVAL);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/session-config/trace/defaults", test_defaults);
        g_test_add_func("/session-config/trace/honoured", test_honoured);
        g_test_add_func("/session-config/trace/warned", test_warned);
        g_test_add_func("/session-config/trace/refused", test_refused);
        return g_test_run();
}
