/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit suite: the registry of data sources (service/sources/data-sources.c). Every source
 * in it is whole (names, loader, start, stop, or for linux.ftrace the setup of the
 * session's instance; what a caller without org.tracebus.manage sees) and each of its names is one the config's table honours; the config's data
 * sources are found by name; one load gives each source its section, a second data
 * source of a one-only source is a warning, and a bad value is an error naming the
 * source while the sections loaded so far stay owned by the config.
 */
#include <string.h>

#include "data-source.h"
#include "ftrace-source.h"
#include "journald.h"
#include "perf-config.h"
#include "perf-sampler.h"
#include "process-stats.h"
#include "session-config-fields.h"
#include "session-config.h"
#include "sys-stats.h"

#include <glib.h>

static Tracebus__TraceConfig *parse(const char *text) {
        Tracebus__TraceConfig *tc = NULL;
        g_autofree char *error = NULL;

        g_assert_cmpint(session_config_parse_text(text, &tc, &error), ==, 0);
        g_assert_null(error);
        return tc;
}

static bool warned(const SessionConfig *c, const char *part) {
        for (char **w = c->warnings; w && *w; w++)
                if (strstr(*w, part))
                        return true;
        return false;
}

static void test_registry(void) {
        g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
        bool found_ftrace = false;

        g_assert_cmpuint(data_sources_count(), >=, 5);
        g_assert_cmpuint(data_sources_count(), <=, SESSION_MAX_SECTIONS);
        g_assert_null(data_source_nth(data_sources_count()));
        for (size_t i = 0; i < data_sources_count(); i++) {
                const DataSourceOps *ops = data_source_nth(i);

                g_assert_nonnull(ops->names);
                g_assert_nonnull(ops->names[0]);
                /* A source has a section and runs, or its part is config/'s and it works on the instance. */
                if (ops->load)
                        g_assert_true(ops->free_section && ops->start && ops->stop);
                else
                        g_assert_true(!ops->free_section && !ops->start && !ops->stop && ops->setup_instance);
                if (ops == &ftrace_data_source)
                        found_ftrace = true;
                g_assert_nonnull(ops->visibility.unprivileged);
                g_assert_cmpuint(strlen(ops->visibility.unprivileged), >, 0);
                for (const char *const *n = ops->names; *n; n++) {
                        const SourceRule *rule = session_config_source_rule(*n);

                        /* A name the service records is one its warnings table calls honoured. */
                        if (!g_str_equal(*n, "linux.journald")) {
                                g_assert_nonnull(rule);
                                g_assert_cmpint(rule->disposition, ==, FIELD_HONOURED);
                        }
                        /* No two sources serve one name. */
                        g_assert_false(g_hash_table_contains(seen, *n));
                        g_hash_table_add(seen, (gpointer) *n);
                }
        }
        /* linux.ftrace is registered, first (it makes the instance), under its name, and
         * loads nothing of its own. */
        g_assert_true(found_ftrace);
        g_assert_true(data_source_nth(0) == &ftrace_data_source);
        g_assert_cmpstr(ftrace_data_source.names[0], ==, "linux.ftrace");
        g_assert_null(ftrace_data_source.load);
        g_assert_nonnull(ftrace_data_source.teardown_instance);
        /* Every source keeps something to org.tracebus.manage, and learns whether the
         * owner holds it: through apply_rights, linux.perf through its scope, linux.ftrace
         * through the config's kernel_pointers_raw. */
        for (size_t i = 0; i < data_sources_count(); i++) {
                const DataSourceOps *ops = data_source_nth(i);

                g_assert_nonnull(ops->visibility.with_manage);
                if (ops != &ftrace_data_source && ops != &perf_data_source)
                        g_assert_nonnull(ops->apply_rights);
        }
}

/* What each source leaves to org.tracebus.manage, applied once polkit answered. */
static void test_apply_rights(void) {
        SysStatsSelection sel = { .period_ms[SYS_STATS_SLAB] = 100, .period_ms[SYS_STATS_MEMINFO] = 100 };
        JournaldSection journal = {};
        SessionConfig c = {};

        /* Record-only: root's /proc/slabinfo is skipped, and said so; the rest records. */
        g_assert_cmpint(sys_stats_data_source.apply_rights(&c, &sel, 1000, false), ==, 0);
        g_assert_cmpuint(sel.period_ms[SYS_STATS_SLAB], ==, 0);
        g_assert_cmpuint(sel.period_ms[SYS_STATS_MEMINFO], ==, 100);
        g_assert_true(warned(&c, "linux.sys_stats slab_period_ms: /proc/slabinfo is readable by root only"));
        g_assert_cmpint(journald_data_source.apply_rights(&c, &journal, 1000, false), ==, 0);
        g_assert_false(journal.manage);
        g_assert_cmpint(data_sources_apply_rights(&c, 1000, false), ==, 0);
        g_assert_cmpuint(c.process_tree.owner_uid, ==, 1000);
        g_assert_false(c.process_tree.owner_sees_all);
        session_config_done(&c);

        /* With manage: everything, no warning. */
        c = (SessionConfig) {};
        sel.period_ms[SYS_STATS_SLAB] = 100;
        g_assert_cmpint(sys_stats_data_source.apply_rights(&c, &sel, 1000, true), ==, 0);
        g_assert_cmpuint(sel.period_ms[SYS_STATS_SLAB], ==, 100);
        g_assert_null(c.warnings);
        g_assert_cmpint(journald_data_source.apply_rights(&c, &journal, 1000, true), ==, 0);
        g_assert_true(journal.manage);
        g_assert_cmpint(data_sources_apply_rights(&c, 1000, true), ==, 0);
        g_assert_true(c.process_tree.owner_sees_all);
        session_config_done(&c);
}

static void test_lookup(void) {
        Tracebus__TraceConfig *tc = parse("data_sources { config { name: \"linux.ftrace\" } }\n"
                                          "data_sources { config { name: \"linux.journald\" } }\n"
                                          "data_sources { config { name: \"linux.ftrace\" ftrace_config { } } }\n"
                                          "data_sources { config { name: \"linux.systemd_journald\" } }\n");
        const Tracebus__DataSourceConfig *ds;
        const Tracebus__FtraceConfig *fc;
        unsigned n = 0;

        FOREACH_CONFIG_SOURCE(ds, tc, "linux.ftrace")
                n++;
        g_assert_cmpuint(n, ==, 2);
        n = 0;
        FOREACH_CONFIG_SOURCE(ds, tc, NULL)
                n++;
        g_assert_cmpuint(n, ==, 4);
        /* Only the linux.ftrace data source that has an ftrace_config. */
        n = 0;
        FOREACH_FTRACE_CONFIG(fc, tc)
                n++;
        g_assert_cmpuint(n, ==, 1);
        /* The journal's two names, in the config's order. */
        ds = data_source_first_config(journald_source_names, tc);
        g_assert_nonnull(ds);
        g_assert_cmpstr(ds->name, ==, "linux.journald");
        n = 0;
        FOREACH_SOURCE_CONFIG(ds, journald_source_names, tc)
                n++;
        g_assert_cmpuint(n, ==, 2);
        g_assert_null(data_source_first_config(perf_source_names, tc));
        tracebus__trace_config__free_unpacked(tc, NULL);
}

static void test_load(void) {
        Tracebus__TraceConfig *tc = parse("data_sources { config { name: \"linux.system_info\" } }\n"
                                          "data_sources { config { name: \"linux.process_stats\" } }\n"
                                          "data_sources { config { name: \"linux.process_stats\" } }\n"
                                          "data_sources { config { name: \"linux.perf\" } }\n");
        g_autofree char *error = NULL;
        SessionConfig c = {};
        const SysStatsSelection *sel;

        g_assert_cmpint(data_sources_load(tc, "/nonexistent", &c, &error), ==, 0);
        g_assert_null(error);
        sel = data_source_section(&c, &sys_stats_data_source);
        g_assert_nonnull(sel);
        g_assert_true(sel->system_info);
        g_assert_nonnull(data_source_section(&c, &process_stats_data_source));
        g_assert_nonnull(data_source_section(&c, &perf_data_source));
        g_assert_null(data_source_section(&c, &journald_data_source));
        g_assert_true(warned(&c, "linux.process_stats: a second data source of this name: skipped"));
        session_config_done(&c);
        for (size_t i = 0; i < SESSION_MAX_SECTIONS; i++)
                g_assert_null(c.sections[i].data);
        tracebus__trace_config__free_unpacked(tc, NULL);
}

/* A config without ftrace events (polling data sources only): the session's setup makes
 * no tracefs instance, and its teardown has nothing to remove. */
static void test_setup_without_events(void) {
        SessionConfig c = {};
        DataSourceInstance si = { .config = &c, .session_id = 1 };

        g_assert_cmpint(data_sources_setup_instance(&si), ==, 0);
        g_assert_null(si.instance);
        data_sources_teardown_instance(&c, 1);
        session_config_done(&c);
}

/* A bad value: the error names the source; what loaded before it is freed with the config. */
static void test_load_error(void) {
        Tracebus__TraceConfig *tc = parse("data_sources { config { name: \"linux.process_stats\" } }\n"
                                          "data_sources { config { name: \"linux.perf\" perf_event_config {\n"
                                          "  timebase { tracepoint { name: \"nogroup\" } } } } }\n");
        g_autofree char *error = NULL;
        SessionConfig c = {};

        g_assert_cmpint(data_sources_load(tc, "/nonexistent", &c, &error), ==, -EINVAL);
        g_assert_nonnull(error);
        g_assert_nonnull(strstr(error, "linux.perf: timebase tracepoint 'nogroup'"));
        g_assert_nonnull(data_source_section(&c, &process_stats_data_source));
        g_assert_null(data_source_section(&c, &perf_data_source));
        session_config_done(&c);
        tracebus__trace_config__free_unpacked(tc, NULL);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/data-sources/registry", test_registry);
        g_test_add_func("/data-sources/lookup", test_lookup);
        g_test_add_func("/data-sources/load", test_load);
        g_test_add_func("/data-sources/apply-rights", test_apply_rights);
        g_test_add_func("/data-sources/load-error", test_load_error);
        g_test_add_func("/data-sources/setup-without-events", test_setup_without_events);
        return g_test_run();
}
