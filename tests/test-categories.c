/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the GTK app's logic that needs no display: the category ->
 * tracefs events table, the TraceConfig text it sends, and the words it
 * shows for service errors.
 */
/* The service's header first: GLib's MIN and MAX then replace its own. */
#include "session-config.h"

#include <gio/gio.h>
#include <string.h>

#include "categories.h"
#include "messages.h"
#include "producers.h"
#include "tracebus-bus.h"

/* A kernel that offers these (sorted, as ListEvents returns them). */
static const char *const available[] = {
        "block/block_rq_complete", "block/block_rq_issue",
        "ipi/ipi_entry", "ipi/ipi_exit", "ipi/ipi_raise",
        "irq/irq_handler_entry", "irq/irq_handler_exit", "irq/softirq_entry", "irq/softirq_exit",
        "power/cpu_frequency", "power/cpu_idle",
        "sched/sched_switch", "sched/sched_wakeup", "sched/sched_waking",
        "task/task_newtask",
        NULL,
};

static void test_table(void) {
        guint n = 0;
        const TbCategory *c = tb_categories_get(&n);
        const char *const want[] = { "sched", "freq", "irq", "disk", "memory", "power", "markers", "cpu_profile",
                                     "apps" };
        g_autoptr(GHashTable) ids = g_hash_table_new(g_str_hash, g_str_equal);

        /* The categories the issue names, in this order. */
        g_assert_cmpuint(n, ==, G_N_ELEMENTS(want));
        for (guint i = 0; i < n; i++) {
                g_assert_cmpstr(c[i].id, ==, want[i]);
                g_assert_true(g_hash_table_add(ids, (gpointer) c[i].id));
                g_assert_true(c[i].name && *c[i].name);
                g_assert_true(c[i].description && *c[i].description);
                g_assert_nonnull(c[i].events);
                /* A category without events records something else. */
                g_assert_true(c[i].events[0] || c[i].counters);
                /* Every entry is group/name or group/ *, as the service takes them. */
                for (const char *const *e = c[i].events; *e; e++) {
                        const char *slash = strchr(*e, '/');
                        g_assert_nonnull(slash);
                        g_assert_true(slash > *e && slash[1] != '\0');
                        g_assert_null(strchr(slash + 1, '/'));
                }
                g_assert_true(tb_category_lookup(c[i].id) == &c[i]);
        }
        g_assert_null(tb_category_lookup("nope"));
        g_assert_true(tb_category_lookup("sched")->default_on);
        g_assert_true(g_strv_contains(tb_category_lookup("sched")->events, "sched/sched_switch"));
        g_assert_true(g_strv_contains(tb_category_lookup("freq")->events, "power/cpu_frequency"));
        g_assert_true(g_strv_contains(tb_category_lookup("freq")->events, "power/cpu_idle"));
        g_assert_true(g_strv_contains(tb_category_lookup("irq")->events, "irq/irq_handler_entry"));
        g_assert_true(g_strv_contains(tb_category_lookup("disk")->events, "block/block_rq_issue"));
        g_assert_true(g_strv_contains(tb_category_lookup("memory")->events, "kmem/rss_stat"));
        g_assert_true(g_strv_contains(tb_category_lookup("power")->events, "power/suspend_resume"));
        g_assert_true(g_strv_contains(tb_category_lookup("markers")->events, "ftrace/print"));
        /* Counters the service's pollers read, as Perfetto's UI records for these. */
        g_assert_cmpuint(tb_category_lookup("memory")->counters, ==, TB_COUNTERS_MEMINFO | TB_COUNTERS_PROCESS_STATS);
        g_assert_cmpuint(tb_category_lookup("freq")->counters, ==, TB_COUNTERS_CPUFREQ);
        g_assert_cmpuint(tb_category_lookup("sched")->counters, ==, 0);
        g_assert_cmpuint(tb_category_lookup("cpu_profile")->counters, ==,
                         TB_COUNTERS_CPU_PROFILE | TB_COUNTERS_PROCESS_STATS);
        g_assert_false(tb_category_lookup("cpu_profile")->default_on);
}

/* CPU profile: linux.perf in a buffer of its own, after the events'
 * and the counters', in the shape of Perfetto's CPU-profiling docs. */
static void test_config_profile(void) {
        const char *const ids[] = { "sched", "cpu_profile", NULL }, *const only[] = { "cpu_profile", NULL };
        const char *const events[] = { "sched/sched_switch", NULL };
        TbRecordSettings with = { .events = events, .n_cpus = 2, .counters = tb_categories_counters(ids) };
        TbRecordSettings alone = { .n_cpus = 2, .counters = tb_categories_counters(only) };
        TbRecordSettings *settings[] = { &with, &alone };

        for (guint i = 0; i < G_N_ELEMENTS(settings); i++) {
                g_autofree char *text = tb_record_settings_to_config(settings[i]), *err = NULL;
                Tracebus__TraceConfig *tc = NULL;
                SessionConfig c = { 0 };
                guint profile_buffer = i == 0 ? 2 : 1, n_perf = 0;

                g_test_message("%s", text);
                g_assert_cmpint(session_config_parse_text(text, &tc, &err), ==, 0);
                g_assert_cmpint(session_config_load_buffers(tc, &c, &err), ==, 0);
                g_assert_cmpuint(c.n_buffers, ==, profile_buffer + 1);
                g_assert_cmpuint(c.buffers[profile_buffer].size_kb, ==, TB_PROFILE_BUFFER_KB);
                for (size_t k = 0; k < tc->n_data_sources; k++) {
                        const Tracebus__DataSourceConfig *ds = tc->data_sources[k]->config;
                        const Tracebus__PerfEventConfig *pe = ds->perf_event_config;
                        guint32 target = 99;

                        if (!g_str_equal(ds->name, "linux.perf"))
                                continue;
                        n_perf++;
                        g_assert_cmpint(session_config_target_buffer(tc, ds, &target, NULL), ==, 0);
                        g_assert_cmpuint(target, ==, profile_buffer);
                        g_assert_nonnull(pe);
                        g_assert_cmpint(pe->timebase->counter, ==, TRACEBUS__PERF_EVENTS__COUNTER__SW_CPU_CLOCK);
                        g_assert_cmpuint(pe->timebase->frequency, ==, TB_PROFILE_HZ);
                        g_assert_null(pe->callstack_sampling->scope);
                        g_assert_cmpint(pe->callstack_sampling->user_frames, ==,
                                        TRACEBUS__PERF_EVENT_CONFIG__UNWIND_MODE__UNWIND_DWARF);
                }
                g_assert_cmpuint(n_perf, ==, 1);
                session_config_done(&c);
                tracebus__trace_config__free_unpacked(tc, NULL);
        }
}

/* Memory and CPU frequency add linux.sys_stats and linux.process_stats, into a buffer of
 * their own after the events' (or the only one, without events), as the service loads it. */
static void test_config_counters(void) {
        const char *const ids[] = { "sched", "memory", "freq", NULL }, *const mem_only[] = { "memory", NULL };
        const char *const events[] = { "sched/sched_switch", "power/cpu_frequency", NULL };
        TbRecordSettings with = { .events = events, .mode = TB_BUFFER_RING, .n_cpus = 2,
                                  .counters = tb_categories_counters(ids) };
        TbRecordSettings without = { .events = NULL, .mode = TB_BUFFER_RING, .n_cpus = 2,
                                     .counters = tb_categories_counters(mem_only) };
        TbRecordSettings *settings[] = { &with, &without };

        g_assert_cmpuint(with.counters, ==, TB_COUNTERS_MEMINFO | TB_COUNTERS_PROCESS_STATS | TB_COUNTERS_CPUFREQ);
        g_assert_cmpuint(without.counters, ==, TB_COUNTERS_MEMINFO | TB_COUNTERS_PROCESS_STATS);
        for (guint i = 0; i < G_N_ELEMENTS(settings); i++) {
                g_autofree char *text = tb_record_settings_to_config(settings[i]), *err = NULL;
                Tracebus__TraceConfig *tc = NULL;
                SessionConfig c = { 0 };
                guint counters_buffer = i == 0 ? 1 : 0, n_sys = 0, n_proc = 0, n_ftrace = 0;

                g_test_message("%s", text);
                g_assert_cmpint(session_config_parse_text(text, &tc, &err), ==, 0);
                g_assert_cmpint(session_config_load_buffers(tc, &c, &err), ==, 0);
                g_assert_cmpuint(c.n_buffers, ==, counters_buffer + 1);
                g_assert_cmpuint(c.buffers[counters_buffer].size_kb, ==, TB_COUNTERS_BUFFER_KB);
                for (size_t k = 0; k < tc->n_data_sources; k++) {
                        const Tracebus__DataSourceConfig *ds = tc->data_sources[k]->config;
                        guint32 target = 99;

                        g_assert_cmpint(session_config_target_buffer(tc, ds, &target, NULL), ==, 0);
                        if (g_str_equal(ds->name, "linux.ftrace")) {
                                n_ftrace++;
                                g_assert_cmpuint(target, ==, 0);
                        } else if (g_str_equal(ds->name, "linux.sys_stats")) {
                                n_sys++;
                                g_assert_cmpuint(target, ==, counters_buffer);
                                g_assert_cmpuint(ds->sys_stats_config->meminfo_period_ms, ==, TB_COUNTERS_PERIOD_MS);
                                g_assert_cmpuint(ds->sys_stats_config->cpufreq_period_ms, ==,
                                                 i == 0 ? TB_COUNTERS_PERIOD_MS : 0);
                        } else {
                                g_assert_cmpstr(ds->name, ==, "linux.process_stats");
                                n_proc++;
                                g_assert_cmpuint(target, ==, counters_buffer);
                                g_assert_cmpuint(ds->process_stats_config->proc_stats_poll_ms, ==, TB_COUNTERS_PERIOD_MS);
                                g_assert_true(ds->process_stats_config->scan_all_processes_on_start);
                        }
                }
                g_assert_cmpuint(n_ftrace, ==, i == 0 ? 1 : 0);
                g_assert_cmpuint(n_sys, ==, 1);
                g_assert_cmpuint(n_proc, ==, 1);
                session_config_done(&c);
                tracebus__trace_config__free_unpacked(tc, NULL);
        }
}

static void test_available_events(void) {
        g_auto(GStrv) sched = tb_category_available_events(tb_category_lookup("sched"), available);
        g_auto(GStrv) irq = tb_category_available_events(tb_category_lookup("irq"), available);
        g_auto(GStrv) markers = tb_category_available_events(tb_category_lookup("markers"), available);
        g_auto(GStrv) all = tb_category_available_events(tb_category_lookup("freq"), NULL);
        const char *const want_sched[] = { "sched/sched_switch", "sched/sched_waking", "task/task_newtask", NULL };
        const char *const want_irq[] = { "ipi/ipi_entry", "ipi/ipi_exit", "ipi/ipi_raise", "irq/irq_handler_entry",
                                         "irq/irq_handler_exit", "irq/softirq_entry", "irq/softirq_exit", NULL };

        /* What the kernel lacks is dropped; a group wildcard is expanded. */
        g_assert_true(g_strv_equal((const char *const *) sched, want_sched));
        g_assert_true(g_strv_equal((const char *const *) irq, want_irq));
        g_assert_cmpuint(g_strv_length(markers), ==, 0);
        /* Without the kernel's list, the table as it is. */
        g_assert_cmpuint(g_strv_length(all), ==, g_strv_length((char **) tb_category_lookup("freq")->events));
}

static void test_resolve(void) {
        const char *const ids[] = { "sched", "freq", "markers", "unknown", NULL };
        const char *const custom[] = { "sched/sched_wakeup", "sched/sched_switch", "nosuch/event", NULL };
        const char *const want[] = { "power/cpu_frequency", "power/cpu_idle", "sched/sched_switch",
                                     "sched/sched_wakeup", "sched/sched_waking", "task/task_newtask", NULL };
        g_auto(GStrv) missing = NULL;
        g_auto(GStrv) events = tb_categories_resolve(ids, custom, available, &missing);
        g_auto(GStrv) none = tb_categories_resolve(NULL, NULL, available, NULL);

        /* Union, sorted, no duplicates; a custom event the kernel lacks is reported. */
        g_assert_true(g_strv_equal((const char *const *) events, want));
        g_assert_cmpuint(g_strv_length(missing), ==, 1);
        g_assert_cmpstr(missing[0], ==, "nosuch/event");
        g_assert_cmpuint(g_strv_length(none), ==, 0);
}

static char *config_for(TbBufferMode mode, guint buffer_kb, guint duration_ms, guint64 max_bytes, guint n_cpus) {
        const char *const events[] = { "sched/sched_switch", "power/cpu_idle", NULL };
        TbRecordSettings s = { .events = events, .mode = mode, .buffer_size_kb = buffer_kb,
                               .duration_ms = duration_ms, .max_file_size_bytes = max_bytes, .n_cpus = n_cpus };
        return tb_record_settings_to_config(&s);
}

static void test_config_ring(void) {
        g_autofree char *c = config_for(TB_BUFFER_RING, TB_DEFAULT_BUFFER_SIZE_KB, TB_DEFAULT_DURATION_MS, 0, 4);

        g_test_message("%s", c);
        g_assert_nonnull(strstr(c, "duration_ms: 1800000\n"));
        g_assert_nonnull(strstr(c, "ftrace_events: \"sched/sched_switch\"\n"));
        g_assert_nonnull(strstr(c, "ftrace_events: \"power/cpu_idle\"\n"));
        g_assert_nonnull(strstr(c, "buffer_size_kb: 16384\n"));
        g_assert_nonnull(strstr(c, "size_kb: 65536\n")); /* 16 MB x 4 CPUs */
        g_assert_nonnull(strstr(c, "name: \"linux.ftrace\""));
        g_assert_null(strstr(c, "write_into_file"));
        g_assert_null(strstr(c, "max_file_size_bytes"));
}

static void test_config_long(void) {
        g_autofree char *c = config_for(TB_BUFFER_LONG, TB_DEFAULT_BUFFER_SIZE_KB, TB_DEFAULT_DURATION_MS,
                                        TB_DEFAULT_LONG_TRACE_MAX_BYTES, 32);

        g_test_message("%s", c);
        g_assert_nonnull(strstr(c, "write_into_file: true\n"));
        g_assert_nonnull(strstr(c, "file_write_period_ms: 5000\n"));
        g_assert_nonnull(strstr(c, "max_file_size_bytes: 10737418240\n"));
        g_assert_nonnull(strstr(c, "size_kb: 65536\n")); /* drained every 5 s: 64 MiB at most */
}

/* The service's own parser takes what the app sends. */
static void test_config_parses(void) {
        g_autofree char *ring = config_for(TB_BUFFER_RING, TB_DEFAULT_BUFFER_SIZE_KB, TB_DEFAULT_DURATION_MS, 0, 2);
        g_autofree char *lng = config_for(TB_BUFFER_LONG, TB_DEFAULT_BUFFER_SIZE_KB, TB_DEFAULT_DURATION_MS,
                                          TB_DEFAULT_LONG_TRACE_MAX_BYTES, 2);
        const char *texts[] = { ring, lng };

        for (guint i = 0; i < G_N_ELEMENTS(texts); i++) {
                Tracebus__TraceConfig *tc = NULL;
                g_autofree char *err = NULL;
                const Tracebus__FtraceConfig *fc;

                g_assert_cmpint(session_config_parse_text(texts[i], &tc, &err), ==, 0);
                g_assert_null(err);
                g_assert_cmpuint(tc->duration_ms, ==, TB_DEFAULT_DURATION_MS);
                g_assert_cmpuint(tc->n_buffers, ==, 1);
                g_assert_cmpuint(tc->buffers[0]->size_kb, ==, 2 * TB_DEFAULT_BUFFER_SIZE_KB);
                g_assert_cmpuint(tc->n_data_sources, ==, 1);
                g_assert_cmpstr(tc->data_sources[0]->config->name, ==, "linux.ftrace");
                fc = tc->data_sources[0]->config->ftrace_config;
                g_assert_cmpuint(fc->n_ftrace_events, ==, 2);
                g_assert_cmpstr(fc->ftrace_events[0], ==, "sched/sched_switch");
                g_assert_cmpuint(fc->buffer_size_kb, ==, TB_DEFAULT_BUFFER_SIZE_KB);
                g_assert_cmpint(tc->write_into_file, ==, i == 1);
                g_assert_cmpuint(tc->max_file_size_bytes, ==, i == 1 ? TB_DEFAULT_LONG_TRACE_MAX_BYTES : 0);
                tracebus__trace_config__free_unpacked(tc, NULL);
        }
}

static void test_config_limits(void) {
        /* Above the service's limits: clamped, not refused. */
        g_autofree char *big = config_for(TB_BUFFER_RING, 1024 * 1024, G_MAXUINT, 0, 64);
        g_autofree char *dflt = config_for(TB_BUFFER_RING, 0, 0, 0, 0);

        g_assert_nonnull(strstr(big, "buffer_size_kb: 65536\n"));
        g_assert_nonnull(strstr(big, "size_kb: 262144\n"));
        g_assert_nonnull(strstr(big, "duration_ms: 604800000\n"));
        g_assert_nonnull(strstr(dflt, "buffer_size_kb: 16384\n"));
        g_assert_null(strstr(dflt, "duration_ms"));
}

/* The track_event data source named in @tc with its buffer; NULL if none. */
static const Tracebus__DataSourceConfig *track_event_source(const Tracebus__TraceConfig *tc, guint32 *ret_target) {
        for (size_t k = 0; k < tc->n_data_sources; k++) {
                const Tracebus__DataSourceConfig *ds = tc->data_sources[k]->config;

                if (g_str_equal(ds->name, "track_event")) {
                        g_assert_cmpint(session_config_target_buffer(tc, ds, ret_target, NULL), ==, 0);
                        return ds;
                }
        }
        return NULL;
}

/* "Applications (Perfetto SDK)": a track_event data source of every category, in a buffer
 * of its own after the others; alone, no ftrace source and no counters' buffer. */
static void test_config_apps(void) {
        const char *const ids[] = { "sched", "memory", "cpu_profile", "apps", NULL }, *const only[] = { "apps", NULL };
        const char *const events[] = { "sched/sched_switch", NULL };
        TbRecordSettings with = { .events = events, .n_cpus = 2, .counters = tb_categories_counters(ids) };
        TbRecordSettings alone = { .n_cpus = 2, .counters = tb_categories_counters(only) };
        TbRecordSettings none = { .events = events, .n_cpus = 2 };
        TbRecordSettings *settings[] = { &with, &alone };

        for (guint i = 0; i < G_N_ELEMENTS(settings); i++) {
                g_autofree char *text = tb_record_settings_to_config(settings[i]), *err = NULL;
                Tracebus__TraceConfig *tc = NULL;
                SessionConfig c = { 0 };
                const Tracebus__DataSourceConfig *ds;
                guint32 target = 99, want = i == 0 ? 3 : 0;

                g_test_message("%s", text);
                g_assert_cmpint(session_config_parse_text(text, &tc, &err), ==, 0);
                g_assert_cmpint(session_config_load_buffers(tc, &c, &err), ==, 0);
                g_assert_cmpuint(c.n_buffers, ==, want + 1);
                g_assert_cmpuint(c.buffers[want].size_kb, ==, TB_TRACK_EVENT_BUFFER_KB);
                ds = track_event_source(tc, &target);
                g_assert_nonnull(ds);
                g_assert_cmpuint(target, ==, want);
                g_assert_nonnull(ds->track_event_config);
                g_assert_cmpuint(ds->track_event_config->n_enabled_categories, ==, 1);
                g_assert_cmpstr(ds->track_event_config->enabled_categories[0], ==, "*");
                g_assert_cmpuint(tc->n_data_sources, ==, i == 0 ? 5 : 1);
                session_config_done(&c);
                tracebus__trace_config__free_unpacked(tc, NULL);
        }
        /* Without the category: no track_event. */
        {
                g_autofree char *text = tb_record_settings_to_config(&none);
                g_assert_null(strstr(text, "track_event"));
        }
}

/* ListProducers' reply, as the service sends it, in the words of the category's row. */
static void test_producers_describe(void) {
        g_autoptr(GVariant) two = g_variant_ref_sink(g_variant_new_parsed(
                "[(uint64 1, '/usr/libexec/demo/example_system_wide', uint32 1000, uint32 4242,"
                "  [('track_event', ['rendering', 'audio.latency'])]),"
                " (uint64 2, 'custom', uint32 1000, uint32 77,"
                "  [('com.example.custom_data_source', @as []), ('track_event', @as [])]),"
                " (uint64 3, 'quiet', uint32 1000, uint32 78, @a(sas) [])]"));
        g_autoptr(GVariant) empty = g_variant_ref_sink(g_variant_new_parsed("@a(tsuua(sas)) []"));
        g_autoptr(GVariant) wrong = g_variant_ref_sink(g_variant_new_parsed("@as ['x']"));
        g_autofree char *text = tb_producers_describe(two), *none = tb_producers_describe(empty);

        g_test_message("%s", text);
        g_assert_cmpstr(text, ==, "example_system_wide (pid 4242): track_event (rendering, audio.latency)\n"
                                  "custom (pid 77): com.example.custom_data_source, track_event\n"
                                  "quiet (pid 78): no data source yet");
        g_assert_cmpstr(none, ==, "No app connected now.");
        g_assert_null(tb_producers_describe(wrong));
        g_assert_null(tb_producers_describe(NULL));
}

static void assert_words(const char *dbus_name, const char *service_text, const char *title_has, const char *detail_has) {
        g_autoptr(GError) e = g_dbus_error_new_for_dbus_error(dbus_name, service_text);
        g_auto(TbMessage) m = { 0 };

        tb_message_from_error(e, "Could not start recording.", &m);
        g_test_message("%s -> %s | %s", dbus_name, m.title, m.detail);
        g_assert_nonnull(strstr(m.title, title_has));
        if (detail_has)
                g_assert_nonnull(strstr(m.detail, detail_has));
        /* Words, never the raw name. */
        g_assert_null(strstr(m.title, dbus_name));
        g_assert_true(!m.detail || !strstr(m.detail, "GDBus.Error"));
        g_assert_true(!m.detail || !strstr(m.detail, dbus_name));
}

static void test_messages(void) {
        assert_words("org.freedesktop.DBus.Error.AccessDenied", "Not authorized.", "not allowed", "administrator");
        assert_words("org.freedesktop.DBus.Error.AccessDenied", "Not authorized.", "not allowed", "org.tracebus.record");
        assert_words("org.freedesktop.DBus.Error.InteractiveAuthorizationRequired", "Needs auth", "approval",
                     "administrator");
        assert_words(TB_ERROR_UNKNOWN_EVENT, "foo/bar", "does not offer", "foo/bar.");
        assert_words(TB_ERROR_TOO_MANY_SESSIONS, "5 sessions", "Too many", "Stop a recording");
        assert_words(TB_ERROR_TRACING_UNAVAILABLE, "tracefs is not mounted.", "not available",
                     "tracefs is not mounted.");
        assert_words("org.freedesktop.DBus.Error.ServiceUnknown", "The name is not activatable", "not available",
                     "administrator");
        /* Unknown: what failed, with the service's own sentence. */
        assert_words("org.example.Weird", "Something odd", "Could not start recording.", "Something odd.");
}

static void test_format(void) {
        g_autofree char *a = tb_format_elapsed(63), *b = tb_format_elapsed(3723), *c = tb_format_elapsed(-5);
        g_autofree char *d = tb_format_count(1234567);

        g_assert_cmpstr(a, ==, "1:03");
        g_assert_cmpstr(b, ==, "1:02:03");
        g_assert_cmpstr(c, ==, "0:00");
        g_assert_true(g_str_has_prefix(d, "1") && g_str_has_suffix(d, "567"));
        g_assert_cmpstr(tb_end_reason_to_string("duration-reached"), ==, "Reached its time limit");
        g_assert_cmpstr(tb_end_reason_to_string("weird"), ==, "Finished");
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/gtk/categories/table", test_table);
        g_test_add_func("/gtk/categories/available-events", test_available_events);
        g_test_add_func("/gtk/categories/resolve", test_resolve);
        g_test_add_func("/gtk/config/ring", test_config_ring);
        g_test_add_func("/gtk/config/long", test_config_long);
        g_test_add_func("/gtk/config/limits", test_config_limits);
        g_test_add_func("/gtk/config/parses", test_config_parses);
        g_test_add_func("/gtk/config/counters", test_config_counters);
        g_test_add_func("/gtk/config/profile", test_config_profile);
        g_test_add_func("/gtk/config/apps", test_config_apps);
        g_test_add_func("/gtk/producers/describe", test_producers_describe);
        g_test_add_func("/gtk/messages/errors", test_messages);
        g_test_add_func("/gtk/messages/format", test_format);
        return g_test_run();
}
