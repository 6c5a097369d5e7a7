/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite: the warnings channel and Perfetto's tolerance against the real service.
 * A config naming an event this kernel lacks records the rest, and the
 * warning is in all three places: Start's reply and the Warnings property (busctl as
 * tbuser, the property as root), the CLI's stderr once, and the trace (FtraceStats'
 * unknown_ftrace_events at the start, where trace_processor counts its
 * ftrace_setup_errors, and an instant on the tracebus track). The CLI's category words
 * (`tracebus sched freq idle`) enable the categories' kernel events. A config whose
 * events are all missing starts (as Perfetto's), its losses warned in the three places;
 * Events lists and the CLI's event words of which none exists are refused (a typo).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli-util.h"
#include "session-util.h"

#define MISSING "tracebus_test/no_such_event"
#define MISSING_WARNING "ftrace event '" MISSING "' does not exist on this kernel: skipped"

static char **strv_property(const char *path, const char *name) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GVariant) v = tb_get_property(tb_bus()->conn, path, TB_SESSION_IFACE, name, &error);

        g_assert_no_error(error);
        return g_variant_dup_strv(v, NULL);
}

static char **busctl_start_events(const char *const *events, guint n) {
        g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func(g_free);
        g_auto(TbCommandResult) res = { 0 };
        g_autoptr(GError) error = NULL;

        for (const char *const *a = (const char *const[]) { "busctl", "--system", "call", TB_BUS_NAME, TB_MANAGER_PATH,
                                                            TB_MANAGER_IFACE, "Start", "sa{sv}", "", "2", "Events", "as",
                                                            NULL }; *a; a++)
                g_ptr_array_add(argv, g_strdup(*a));
        g_ptr_array_add(argv, g_strdup_printf("%u", n));
        for (guint i = 0; i < n; i++)
                g_ptr_array_add(argv, g_strdup(events[i]));
        g_ptr_array_add(argv, g_strdup("DurationMs"));
        g_ptr_array_add(argv, g_strdup("u"));
        g_ptr_array_add(argv, g_strdup("60000"));
        g_ptr_array_add(argv, NULL);
        g_assert_true(tb_run_as_user("tbuser", (const char *const *) argv->pdata, &res, &error));
        log_command("busctl Start", &res);
        g_assert_true(tb_command_succeeded(&res));
        return busctl_tokens(res.out);
}

/* Stops the session; the trace file the service wrote. */
static char *busctl_stop(const char *path) {
        const char *argv[] = { "busctl", "--system", "call", TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_IFACE,
                               "Stop", "o", path, NULL };
        g_auto(TbCommandResult) res = { 0 };
        g_autoptr(GError) error = NULL;

        g_assert_true(tb_run_as_user("tbuser", argv, &res, &error));
        log_command("busctl Stop", &res);
        g_assert_true(tb_command_succeeded(&res));
        wait_over(path, 15000);
        {
                g_autoptr(GHashTable) st = busctl_stats(res.out);

                /* Stop's stats carry every warning too, for clients that saw none yet. */
                g_assert_nonnull(strstr(g_hash_table_lookup(st, "Warnings") ?: "", "skipped"));
                return g_strdup(g_hash_table_lookup(st, "OutputPath"));
        }
}

/* The Events option is as tolerant as a config: the reply and the property say what was
 * skipped; an Events list with nothing this kernel has is still refused. */
static void test_reply_and_property(void) {
        static const char *const events[] = { "sched/sched_switch", MISSING };
        g_auto(GStrv) tok = busctl_start_events(events, G_N_ELEMENTS(events));
        g_auto(GStrv) warnings = NULL, recorded = NULL;

        /* oas PATH 1 "WARNING" */
        g_assert_cmpuint(g_strv_length(tok), ==, 4);
        g_assert_cmpstr(tok[0], ==, "oas");
        g_assert_cmpstr(tok[2], ==, "1");
        g_assert_cmpstr(tok[3], ==, MISSING_WARNING);
        assert_recording(tok[1]);
        warnings = strv_property(tok[1], "Warnings");
        g_assert_cmpuint(g_strv_length(warnings), ==, 1);
        g_assert_cmpstr(warnings[0], ==, MISSING_WARNING);
        recorded = strv_property(tok[1], "Events");
        g_assert_cmpuint(g_strv_length(recorded), ==, 1);
        g_assert_cmpstr(recorded[0], ==, "sched/sched_switch");
        {
                g_auto(GStrv) sources = strv_property(tok[1], "DataSources");

                g_assert_cmpuint(g_strv_length(sources), ==, 1);
                g_assert_cmpstr(sources[0], ==, "linux.ftrace");
        }
        g_free(busctl_stop(tok[1]));

        {
                const char *argv[] = { "busctl", "--system", "call", TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_IFACE,
                                       "Start", "sa{sv}", "", "2", "Events", "as", "1", MISSING,
                                       "DurationMs", "u", "1000", NULL };
                g_auto(TbCommandResult) res = { 0 };
                g_autoptr(GError) error = NULL;

                g_assert_true(tb_run_as_user("tbuser", argv, &res, &error));
                log_command("busctl Start (nothing this kernel has)", &res);
                g_assert_false(tb_command_succeeded(&res));
                g_assert_nonnull(strstr(res.err, MISSING));
        }
}

typedef struct {
        guint n_start_stats;
        bool unknown_listed;
        bool instant_seen;
        char *atrace_errors;
} TraceWarnings;

static void look_for_warnings(const Tracebus__TracePacket *p, const TraceRawPacket *raw, guint index, gpointer userdata) {
        TraceWarnings *w = userdata;

        if (p->ftrace_stats && p->ftrace_stats->phase == TRACEBUS__FTRACE_STATS__PHASE__START_OF_TRACE) {
                w->n_start_stats++;
                for (size_t i = 0; i < p->ftrace_stats->n_unknown_ftrace_events; i++)
                        if (strcmp(p->ftrace_stats->unknown_ftrace_events[i], MISSING) == 0)
                                w->unknown_listed = true;
                if (p->ftrace_stats->atrace_errors)
                        w->atrace_errors = g_strdup(p->ftrace_stats->atrace_errors);
        }
        if (p->track_event && p->track_event->type == TRACEBUS__TRACK_EVENT__TYPE__TYPE_INSTANT &&
            g_strcmp0(p->track_event->name, "warning: " MISSING_WARNING) == 0)
                w->instant_seen = true;
}

static guint count_of(const char *haystack, const char *needle) {
        guint n = 0;

        for (const char *p = haystack; (p = strstr(p, needle)); p += strlen(needle))
                n++;
        return n;
}

static void read_warnings(const char *path, TraceWarnings *w) {
        g_autoptr(GError) error = NULL;
        g_autofree char *data = NULL;
        gsize len = 0;

        g_assert_true(g_file_get_contents(path, &data, &len, &error));
        g_assert_true(tb_trace_foreach_packet((const guint8 *) data, len, look_for_warnings, w, NULL, &error));
        g_assert_no_error(error);
}

/* A config's atrace categories enable Perfetto's table of kernel events for them; what
 * has no kernel side is a warning, and an atrace error in the trace. */
static void test_categories_property(void) {
        g_auto(GStrv) tok = NULL, recorded = NULL;
        g_autofree char *file = NULL;
        TraceWarnings w = { 0 };

        {
                const char *argv[] = { "busctl", "--system", "call", TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_IFACE,
                                       "Start", "sa{sv}",
                                       "duration_ms: 60000 data_sources { config { name: \"linux.ftrace\" ftrace_config { "
                                       "atrace_categories: \"sched\" atrace_categories: \"idle\" "
                                       "atrace_categories: \"am\" atrace_apps: \"org.example\" } } }",
                                       "0", NULL };
                g_auto(TbCommandResult) res = { 0 };
                g_autoptr(GError) error = NULL;

                g_assert_true(tb_run_as_user("tbuser", argv, &res, &error));
                log_command("busctl Start (atrace_categories)", &res);
                g_assert_true(tb_command_succeeded(&res));
                tok = busctl_tokens(res.out);
        }
        g_assert_cmpstr(tok[0], ==, "oas");
        g_assert_cmpstr(tok[2], ==, "2");
        g_assert_cmpstr(tok[3], ==, "atrace category 'am' has no kernel events (Android userspace only): skipped");
        g_assert_cmpstr(tok[4], ==, "atrace_apps ('org.example') is Android-only: skipped");
        recorded = strv_property(tok[1], "Events");
        g_assert_true(g_strv_contains((const char *const *) recorded, "sched/sched_switch"));
        g_assert_true(g_strv_contains((const char *const *) recorded, "sched/sched_waking"));
        g_assert_true(g_strv_contains((const char *const *) recorded, "power/cpu_idle"));
        g_assert_true(g_strv_contains((const char *const *) recorded, "ftrace/print"));
        /* Perfetto's sched category leaves sched_wakeup out. */
        g_assert_false(g_strv_contains((const char *const *) recorded, "sched/sched_wakeup"));
        file = busctl_stop(tok[1]);
        g_assert_nonnull(file);
        read_warnings(file, &w);
        g_assert_cmpuint(w.n_start_stats, ==, 1);
        g_assert_cmpstr(w.atrace_errors, ==, "atrace category 'am' has no kernel events (Android userspace only): skipped\n"
                        "atrace_apps ('org.example') is Android-only: skipped");
        g_free(w.atrace_errors);
}

/* The CLI: the warning on stderr once, category words and events together, the trace. */
static void test_cli_and_trace(void) {
        g_autofree char *dir = make_user_dir("tbuser", "warnings");
        g_autofree char *out = g_build_filename(dir, "trace.pftrace", NULL);
        g_autofree char *decoded = NULL;
        g_auto(TbCommandResult) res = { 0 };
        g_auto(TbTraceSummary) sum = { 0 };
        g_autoptr(GError) error = NULL;
        TraceWarnings w = { 0 };
        TbBusy busy;

        g_assert_true(tb_busy_start("tbbusy-warnings", &busy, &error));
        run_cli("tbuser", &res, "-t", "1500ms", "-o", out, "sched", "freq", "idle", MISSING, "am", NULL);
        tb_busy_stop(&busy);
        assert_exit(&res, 0);
        g_assert_cmpuint(count_of(res.err, "tracebus: warning: " MISSING_WARNING "\n"), ==, 1);
        /* A bare word that is no category stays an event name, as tracebus always took it. */
        g_assert_cmpuint(count_of(res.err, "tracebus: warning: ftrace event 'am' does not exist"), ==, 1);
        assert_file_complete(out);

        /* What the category words enabled was recorded. */
        g_assert_true(tb_trace_file_read(out, &sum, &error));
        g_assert_no_error(error);
        g_assert_cmpuint(sum.n_sched_switch + sum.n_compact_switch, >, 0);

        read_warnings(out, &w);
        g_assert_cmpuint(w.n_start_stats, ==, 1);
        g_assert_true(w.unknown_listed);
        g_assert_true(w.instant_seen);
        g_assert_null(w.atrace_errors);

        /* Field by field with protoc: the numbers are Perfetto's (ftrace_stats.proto). */
        decoded = protoc_decode_trace(out);
        assert_decoded_has(decoded, "unknown_ftrace_events: \"" MISSING "\"");
        assert_decoded_has(decoded, "atrace_categories: \"sched\"");
        assert_decoded_has(decoded, "ftrace_events: \"" MISSING "\"");
}

#define MISSING_2 "tracebus_test/no_such_event_2"
#define ALL_MISSING_CONFIG "duration_ms: %u data_sources { config { name: \"linux.ftrace\" ftrace_config { " \
        "ftrace_events: \"" MISSING "\" ftrace_events: \"" MISSING_2 "\" } } }"

/* A config whose ftrace events are all missing here (Perfetto's scm.cfg on a kernel
 * without Qualcomm's driver) starts, as Perfetto starts it: nothing of its own recorded,
 * each missing event a warning in the reply and the property, on the CLI's stderr, and in
 * the trace, which decodes. The CLI's event words of which none exists stay a refusal. */
static void test_all_events_missing(void) {
        g_autofree char *config = g_strdup_printf(ALL_MISSING_CONFIG, 60000u);
        const char *argv[] = { "busctl", "--system", "call", TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_IFACE,
                               "Start", "sa{sv}", config, "0", NULL };
        g_auto(TbCommandResult) res = { 0 };
        g_autoptr(GError) error = NULL;
        g_auto(GStrv) tok = NULL, warnings = NULL, recorded = NULL;
        g_autofree char *file = NULL, *decoded = NULL;
        TraceWarnings w = { 0 };

        g_assert_true(tb_run_as_user("tbuser", argv, &res, &error));
        log_command("busctl Start (every event missing)", &res);
        g_assert_true(tb_command_succeeded(&res));
        tok = busctl_tokens(res.out);
        /* oas PATH 2 "WARNING" "WARNING" */
        g_assert_cmpuint(g_strv_length(tok), ==, 5);
        g_assert_cmpstr(tok[2], ==, "2");
        g_assert_cmpstr(tok[3], ==, MISSING_WARNING);
        {
                /* Recording, with no tracefs instance: there is no ftrace event to record. */
                g_autofree char *state = string_property(tok[1], "State");

                g_assert_cmpstr(state, ==, "recording");
                g_assert_false(instance_exists(tok[1]));
        }
        warnings = strv_property(tok[1], "Warnings");
        g_assert_true(g_strv_contains((const char *const *) warnings, MISSING_WARNING));
        recorded = strv_property(tok[1], "Events");
        g_assert_cmpuint(g_strv_length(recorded), ==, 0);
        {
                /* No kernel buffer: linux.ftrace runs nothing, so it is not a source of it. */
                g_auto(GStrv) sources = strv_property(tok[1], "DataSources");

                g_auto(TbCommandResult) q = { 0 };

                g_assert_cmpuint(g_strv_length(sources), ==, 0);
                run_cli("tbuser", &q, "--query", NULL);
                assert_exit(&q, 0);
                g_assert_nonnull(strstr(q.out, "sources: none"));
                g_assert_nonnull(strstr(q.out, "warning: " MISSING_WARNING));
        }
        file = busctl_stop(tok[1]);
        g_assert_nonnull(file);
        read_warnings(file, &w);
        g_assert_cmpuint(w.n_start_stats, ==, 1);
        g_assert_true(w.unknown_listed);
        g_assert_true(w.instant_seen);
        decoded = protoc_decode_trace(file);
        assert_decoded_has(decoded, "unknown_ftrace_events: \"" MISSING_2 "\"");
        assert_decoded_has(decoded, "ftrace_events: \"" MISSING "\"");
}

static void test_all_events_missing_cli(void) {
        g_autofree char *dir = make_user_dir("tbuser", "warnings-missing");
        g_autofree char *text = g_strdup_printf(ALL_MISSING_CONFIG, 1000u);
        g_autofree char *cfg = user_file("tbuser", dir, "scm-like.pbtxt", text, -1);
        g_autofree char *out = g_build_filename(dir, "trace.pftrace", NULL);
        g_autofree char *typo_out = g_build_filename(dir, "typo.pftrace", NULL);
        g_autofree char *decoded = NULL;
        g_auto(TbCommandResult) res = { 0 }, typo = { 0 };
        TraceWarnings w = { 0 };

        run_cli("tbuser", &res, "--txt", "-c", cfg, "-o", out, NULL);
        assert_exit(&res, 0);
        g_assert_cmpuint(count_of(res.err, "tracebus: warning: " MISSING_WARNING "\n"), ==, 1);
        /* No ftrace bundle to look for: the trace parses to its end (read_warnings) and decodes. */
        read_warnings(out, &w);
        g_assert_true(w.unknown_listed);
        g_assert_true(w.instant_seen);
        decoded = protoc_decode_trace(out);
        assert_decoded_has(decoded, "unknown_ftrace_events: \"" MISSING "\"");

        /* Typed on the command line, names of which none exists are a typo: refused, named,
         * nothing started and no file written. */
        run_cli("tbuser", &typo, "-t", "1s", "-o", typo_out, MISSING, MISSING_2, NULL);
        assert_exit(&typo, 1);
        assert_stderr_has(&typo, "no such trace events: " MISSING ", " MISSING_2);
        g_assert_false(g_file_test(typo_out, G_FILE_TEST_EXISTS));
}

int main(int argc, char **argv) {
        if (!freopen("/dev/null", "r", stdin))
                return EXIT_FAILURE;
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();

        tb_test_add_isolated("/bus/warnings/reply-and-property", test_reply_and_property);
        tb_test_add_isolated("/bus/warnings/categories-property", test_categories_property);
        tb_test_add_isolated("/bus/warnings/cli-and-trace", test_cli_and_trace);
        tb_test_add_isolated("/bus/warnings/all-events-missing", test_all_events_missing);
        tb_test_add_isolated("/bus/warnings/all-events-missing-cli", test_all_events_missing_cli);
        return tb_test_run(TB_START_SERVICE);
}
