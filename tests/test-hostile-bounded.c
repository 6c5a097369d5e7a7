/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite: arguments whose cost grows with their size are capped while they are read,
 * and nothing a caller controls makes the event loop wait.
 *
 *  - activate-triggers: tbother, whom polkit refuses, sends ActivateTriggers with 80,000
 *    names (1.3 MB), one call after the other, while root's IsDetached is timed: its
 *    median stays within 3 times the quiet one, and each call is refused with
 *    RequestTooLarge. Reading the whole array first grew with the square of its length:
 *    seconds a call.
 *  - list-events-glob: tbuser, whom polkit allows, sends ListEvents with a 2 MiB glob, the
 *    same way: RequestTooLarge, and IsDetached within 3 times. Before, the glob was matched
 *    against every event on the event loop.
 *  - producer-regex: a producer_name_regex of 26 bytes whose counted repetitions multiply
 *    to a million is refused at Start with InvalidConfig naming the field, about as fast as
 *    a regex that does not compile, and the service does not grow. glibc's regcomp took
 *    seconds and a gigabyte.
 */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include "hostile-flood.h"
#include "tb-client.h"
#include "test-util.h"

#define MAX_RATIO 3.0
#define PROBES 41u
#define TRIGGER_NAMES 80000u
#define GLOB_BYTES (2u * 1024u * 1024u)
#define HOSTILE_GAP_US 20000u

/* ActivateTriggers with TRIGGER_NAMES names of 15 bytes each. */
static int build_triggers(sd_bus *bus, const void *data, sd_bus_message **ret) {
        sd_bus_message *m = NULL;
        char name[32];
        int r;

        r = sd_bus_message_new_method_call(bus, &m, TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_INTERFACE,
                                           "ActivateTriggers");
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', "s");
        for (unsigned i = 0; r >= 0 && i < TRIGGER_NAMES; i++) {
                snprintf(name, sizeof(name), "trigger-%07u", i);
                r = sd_bus_message_append_basic(m, 's', name);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        *ret = m;
        return r;
}

/* ListEvents with a glob of GLOB_BYTES stars: it matches every event, and glibc's fnmatch
 * walks every star for each (milliseconds an event). */
static int build_glob(sd_bus *bus, const void *data, sd_bus_message **ret) {
        g_autofree char *glob = g_strnfill(GLOB_BYTES, '*');
        sd_bus_message *m = NULL;
        int r;

        r = sd_bus_message_new_method_call(bus, &m, TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_INTERFACE, "ListEvents");
        if (r >= 0)
                r = sd_bus_message_append(m, "s", glob);
        *ret = m;
        return r;
}

/* IsDetached quiet, then while @user sends the call @build makes: the ratio stays under
 * MAX_RATIO, and every answer is @want_error saying @want_in_message. */
static void assert_hostile_call_harmless(const char *user, const HostileCall *call, const char *want_error,
                                         const char *want_in_message) {
        unsigned calls = 0, wrong = 0;
        HostileFlood flood = {};
        g_autofree char *first = NULL;
        double quiet, loaded;

        quiet = median_is_detached_us(PROBES);
        hostile_flood_start(&flood, user, call, HOSTILE_GAP_US, tb_scaled_ms(60000));
        g_assert_nonnull(flood.first);
        first = g_strdup(flood.first);
        note("%s's first answer: %.300s\n", user, first);
        loaded = median_is_detached_us(PROBES);
        g_assert_true(hostile_flood_finish(&flood, tb_scaled_ms(120000), &calls, &wrong));
        note("IsDetached: quiet %.0f us, under %u hostile calls %.0f us (x%.2f)\n", quiet, calls, loaded,
             loaded / MAX(quiet, 1.0));
        g_assert_true(g_str_has_prefix(first, want_error));
        g_assert_nonnull(strstr(first, want_in_message));
        g_assert_cmpuint(wrong, ==, 0);
        g_assert_cmpuint(calls, >=, 2);
        g_assert_cmpfloat(loaded / MAX(quiet, 1.0), <, MAX_RATIO);
}

static const HostileCall huge_triggers = { build_triggers }, huge_glob = { build_glob };

static void test_activate_triggers(void) {
        assert_hostile_call_harmless("tbother", &huge_triggers, TB_ERROR_REQUEST_TOO_LARGE, "64 trigger names");
}

static void test_list_events_glob(void) {
        assert_hostile_call_harmless("tbuser", &huge_glob, TB_ERROR_REQUEST_TOO_LARGE, "512 bytes");
        assert_hostile_call_harmless("tbother", &huge_glob, TB_ERROR_REQUEST_TOO_LARGE, "512 bytes");
}

#define EVENTS "data_sources { config { name: \"linux.ftrace\" ftrace_config {\n" \
               "  ftrace_events: \"sched/sched_switch\" } } }\nbuffers { size_kb: 1024 }\n"
#define REGEX_CONFIG(re) EVENTS "trigger_config { trigger_mode: STOP_TRACING trigger_timeout_ms: 60000\n" \
                         "  triggers { name: \"boom\" producer_name_regex: \"" re "\" } }\n"
#define REFUSALS 7u

/* Root's Start of @text, refused with InvalidConfig naming producer_name_regex: how long it took, in µs. */
static double refused_start_us(const char *text) {
        g_autoptr(GError) error = NULL;
        gint64 begin = g_get_monotonic_time();
        g_autoptr(GVariant) reply = g_dbus_connection_call_sync(
                tb_bus()->conn, TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_INTERFACE, "Start",
                g_variant_new("(s@a{sv})", text, g_variant_new_array(G_VARIANT_TYPE("{sv}"), NULL, 0)),
                G_VARIANT_TYPE("(oas)"), 0, 120000, NULL, &error);
        double elapsed = (double) (g_get_monotonic_time() - begin);
        g_autofree char *name = g_dbus_error_get_remote_error(error);

        g_assert_null(reply);
        g_assert_cmpstr(name, ==, TB_ERROR_INVALID_CONFIG);
        g_assert_nonnull(strstr(error->message, "producer_name_regex"));
        return elapsed;
}

static void test_producer_regex(void) {
        double bad[REFUSALS], plain[REFUSALS];
        guint64 before, after;

        (void) refused_start_us(REGEX_CONFIG("("));
        before = tb_process_rss_kib(tb_bus()->service_pid);
        for (guint i = 0; i < REFUSALS; i++) {
                plain[i] = refused_start_us(REGEX_CONFIG("("));
                bad[i] = refused_start_us(REGEX_CONFIG("((a{1,100}){1,100}){1,100}"));
        }
        after = tb_process_rss_kib(tb_bus()->service_pid);
        qsort(bad, REFUSALS, sizeof(double), cmp_doubles);
        qsort(plain, REFUSALS, sizeof(double), cmp_doubles);
        note("refused Start: a regex that does not compile %.0f us, the pathological one %.0f us (x%.2f); "
             "VmRSS %" G_GUINT64_FORMAT " KiB, then %" G_GUINT64_FORMAT " KiB\n", plain[REFUSALS / 2], bad[REFUSALS / 2],
             bad[REFUSALS / 2] / MAX(plain[REFUSALS / 2], 1.0), before, after);
        g_assert_cmpfloat(bad[REFUSALS / 2] / MAX(plain[REFUSALS / 2], 1.0), <, MAX_RATIO);
        g_assert_cmpfloat((double) after / (double) before, <, 1.2);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();

        tb_test_add_isolated("/bus/hostile-bounded/activate-triggers", test_activate_triggers);
        tb_test_add_isolated("/bus/hostile-bounded/list-events-glob", test_list_events_glob);
        tb_test_add_isolated("/bus/hostile-bounded/producer-regex", test_producer_regex);
        return tb_test_run(TB_START_SERVICE);
}
