/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite: a Start costs the service a bounded amount of work before polkit is asked,
 * and ListEvents is for those who may record.
 *
 *  - latency: tbuser's IsDetached, timed quiet, then while tbother (refused by polkit)
 *    sends hostile Starts one after the other, 20 ms apart (4,096 bare event names; a BinaryConfig of 80
 *    data sources; a text config nested 30,000 deep; a text config of the largest size the
 *    service accepts, naming events by the ten thousand). The
 *    ratio of the two medians, measured in this run, stays under 3. Before the fix the
 *    service resolved every name against tracefs before asking polkit: seconds a Start.
 *  - caps: what a message may carry, refused with RequestTooLarge to a user who may
 *    record, naming the cap; nothing is created.
 *  - bad configs: an allowed user still hears InvalidConfig or UnknownEvent, now after
 *    polkit, including for the caps on the work a config asks for.
 *  - list-events: tbother and tbchallenge are refused, tbuser gets the list.
 *
 * The measuring processes are bench/hostile-load.c's, which `tb-bench hostile` shares.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include "hostile-load.h"
#include "root-call.h"
#include "tb-client.h"

#define ERR_REQUEST_TOO_LARGE TB_ERROR_REQUEST_TOO_LARGE
#define TRACEFS "/sys/kernel/tracing"
#define MAX_RATIO 3.0
#define PROBES 61u
/* The caps of service/config/session-config.h, as the contract states them. */
#define CAP_OPTION_EVENTS 4096u
#define CAP_OPTION_EVENTS_BYTES (256u * 1024u)
#define CAP_CONFIG_BYTES (1024u * 1024u)
#define CAP_DATA_SOURCES 256u
#define CAP_CONFIG_EVENT_NAMES 8192u

/* ===================================================================== */
/* One call as a test user                                                */
/* ===================================================================== */

typedef int (*BuildCall)(sd_bus *bus, const void *arg, sd_bus_message **ret);

/* Runs one call, built by @build in a child that became @user; "O" on success, or the
 * error as "E name\tmessage". */
static char *call_as(const char *user, BuildCall build, const void *arg) {
        g_auto(TbUser) u = { 0 };
        g_autoptr(GError) error = NULL;
        int fds[2], status;
        char *line;
        pid_t pid;

        g_assert_true(tb_user_lookup(user, &u, &error));
        g_assert_cmpint(pipe2(fds, O_CLOEXEC), ==, 0);
        fflush(NULL);
        pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                sd_bus_error e = SD_BUS_ERROR_NULL;
                sd_bus_message *m = NULL;
                sd_bus *bus = NULL;

                tb_user_become(&u);
                if (sd_bus_open_system(&bus) < 0 || build(bus, arg, &m) < 0)
                        _exit(3);
                if (sd_bus_call(bus, m, 60 * 1000000ULL, &e, NULL) >= 0)
                        dprintf(fds[1], "O\n");
                else
                        dprintf(fds[1], "E %s\t%s\n", e.name, e.message ? e.message : "");
                _exit(0);
        }
        close(fds[1]);
        line = tb_read_line(fds[0], 90000, &error);
        g_assert_no_error(error);
        close(fds[0]);
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        note("%s: %.300s\n", user, line);
        return line;
}

/* The error name of a call_as() line (NULL on success), and its message in *ret_message. */
static char *error_of(const char *line, const char **ret_message) {
        const char *tab;

        if (line[0] != 'E')
                return NULL;
        tab = strchr(line, '\t');
        g_assert_nonnull(tab);
        if (ret_message)
                *ret_message = tab + 1;
        return g_strndup(line + 2, tab - line - 2);
}

static void expect_call_error(const char *user, BuildCall build, const void *arg, const char *want_error,
                              const char *want_in_message) {
        g_autofree char *line = call_as(user, build, arg);
        const char *message = "";
        g_autofree char *name = error_of(line, &message);

        g_assert_cmpstr(name, ==, want_error);
        if (want_in_message && !strstr(message, want_in_message))
                g_error("'%s' does not say '%s'", message, want_in_message);
}

/* ===================================================================== */
/* The messages                                                           */
/* ===================================================================== */

/* Start("", {Events: the NULL-terminated @arg}) */
static int build_events(sd_bus *bus, const void *arg, sd_bus_message **ret) {
        return hostile_start_with_events(bus, (char *const *) arg, g_strv_length((char **) arg), ret);
}

/* Start(@arg, {}) */
static int build_text(sd_bus *bus, const void *arg, sd_bus_message **ret) {
        return hostile_start_with_text(bus, arg, ret);
}

/* Start("", {BinaryConfig: the GBytes @arg}) */
static int build_binary(sd_bus *bus, const void *arg, sd_bus_message **ret) {
        gsize size;
        const void *data = g_bytes_get_data((GBytes *) arg, &size);

        return hostile_start_with_binary(bus, data, size, ret);
}

static int build_list_events(sd_bus *bus, const void *arg, sd_bus_message **ret) {
        sd_bus_message *m = NULL;
        int r;

        r = sd_bus_message_new_method_call(bus, &m, TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_IFACE, "ListEvents");
        if (r >= 0)
                r = sd_bus_message_append(m, "s", (const char *) arg);
        *ret = m;
        return r;
}

/* A binary TraceConfig of @n_sources linux.ftrace data sources, each naming @per_source
 * times sched/sched_switch. */
static GBytes *binary_config(guint n_sources, guint per_source) {
        char *const names[] = { (char *) "sched/sched_switch", NULL };
        size_t size;
        void *tc = hostile_binary_config(names, n_sources, per_source, SIZE_MAX, &size);

        return g_bytes_new_take(tc, size);
}

static char **repeated(const char *s, guint n) {
        char **l = g_new0(char *, n + 1);

        for (guint i = 0; i < n; i++)
                l[i] = g_strdup(s);
        return l;
}

/* ===================================================================== */
/* The cases                                                              */
/* ===================================================================== */

static void test_latency(void) {
        char **names = hostile_kernel_names(TRACEFS);
        HostileResult res;
        double ratio;

        g_assert_nonnull(names);
        g_assert_cmpint(hostile_measure("tbuser", "tbother", names, PROBES, &res), ==, 0);
        hostile_names_free(names);
        ratio = res.loaded_us / MAX(res.quiet_us, 1.0);
        note("IsDetached: quiet %.0f us, under hostile Starts %.0f us (x%.2f); %u Starts answered, "
             "first: %s\n", res.quiet_us, res.loaded_us, ratio, res.answered, res.first_error);
        g_assert_cmpfloat(ratio, <, MAX_RATIO);
        /* The flood ran through the measurement: each kind was answered, none accepted. */
        g_assert_cmpuint(res.answered, >=, _HOSTILE_KIND_MAX);
        g_assert_cmpuint(res.accepted, ==, 0);
        g_assert_cmpstr(res.first_error, ==, ERR_ACCESS_DENIED);
}

static void test_caps(void) {
        g_auto(GStrv) inst = NULL, files = NULL;
        g_auto(GStrv) too_many = repeated("sched_switch", CAP_OPTION_EVENTS + 1);
        /* Fewer names than the count cap, longer together than the bytes cap. */
        g_autofree char *long_name = g_strnfill(127, 'x');
        g_auto(GStrv) too_long = repeated(long_name, CAP_OPTION_EVENTS_BYTES / 127 + 1);
        g_autofree char *big_text = g_strnfill(CAP_CONFIG_BYTES + 1, ' ');
        g_autoptr(GBytes) big_binary = g_bytes_new_take(g_malloc0(CAP_CONFIG_BYTES + 1), CAP_CONFIG_BYTES + 1);

        snapshot_state(&inst, &files);
        expect_call_error("tbuser", build_events, too_many, ERR_REQUEST_TOO_LARGE, "4096");
        expect_call_error("tbuser", build_events, too_long, ERR_REQUEST_TOO_LARGE, "262144");
        expect_call_error("tbuser", build_text, big_text, ERR_REQUEST_TOO_LARGE, "1048576");
        expect_call_error("tbuser", build_binary, big_binary, ERR_REQUEST_TOO_LARGE, "1048576");
        /* The same from tbother: refused by the cap, before polkit is asked. */
        expect_call_error("tbother", build_events, too_many, ERR_REQUEST_TOO_LARGE, "4096");
        assert_nothing_created(inst, files);
}

static void test_bad_configs(void) {
        /* Only unknown names: with a known one the session records it (a warning for the rest). */
        static const char *const unknown[] = { "sched/no_such_event_tb", NULL };
        static const char *const unknown_bare[] = { "no_such_event_tb", NULL };
        static const char *const bad_name[] = { "sched/sched switch", NULL };
        g_auto(GStrv) inst = NULL, files = NULL;
        g_autoptr(GString) nested = g_string_new("");
        g_autoptr(GBytes) many_sources = binary_config(CAP_DATA_SOURCES + 1, 1);
        g_autoptr(GBytes) many_names = binary_config(3, CAP_CONFIG_EVENT_NAMES / 3 + 1);

        for (guint i = 0; i < 100; i++)
                g_string_append(nested, "data_sources { ");
        for (guint i = 0; i < 100; i++)
                g_string_append(nested, "} ");
        snapshot_state(&inst, &files);
        expect_call_error("tbuser", build_events, unknown, ERR_UNKNOWN_EVENT, "sched/no_such_event_tb");
        expect_call_error("tbuser", build_events, unknown_bare, ERR_UNKNOWN_EVENT, "no_such_event_tb");
        expect_call_error("tbuser", build_events, bad_name, ERR_INVALID_CONFIG, "is not an event name");
        expect_call_error("tbuser", build_text, "nonsense {", ERR_INVALID_CONFIG, NULL);
        expect_call_error("tbuser", build_text, nested->str, ERR_INVALID_CONFIG, NULL);
        expect_call_error("tbuser", build_binary, many_sources, ERR_INVALID_CONFIG, "256");
        expect_call_error("tbuser", build_binary, many_names, ERR_INVALID_CONFIG, "8192");
        /* The same bad config from a refused user: refused, never parsed. */
        expect_call_error("tbother", build_text, "nonsense {", ERR_ACCESS_DENIED, NULL);
        assert_nothing_created(inst, files);
}

static void test_list_events(void) {
        g_autofree char *user = call_as("tbuser", build_list_events, "sched/*");

        g_assert_cmpstr(user, ==, "O");
        expect_call_error("tbother", build_list_events, "sched/*", ERR_ACCESS_DENIED, "org.tracebus.record");
        expect_call_error("tbchallenge", build_list_events, "", ERR_ACCESS_DENIED, NULL);
        /* Root (polkit says yes) gets the events, from the index: a glob on the name too. */
        {
                g_autoptr(GError) error = NULL;
                g_autoptr(GVariant) reply = g_dbus_connection_call_sync(tb_bus()->conn, TB_BUS_NAME, TB_MANAGER_PATH,
                                                                        TB_MANAGER_IFACE, "ListEvents",
                                                                        g_variant_new("(s)", "sched_sw*"),
                                                                        G_VARIANT_TYPE("(as)"), 0, 30000, NULL, &error);
                g_autofree const char **events = NULL;

                g_assert_no_error(error);
                g_variant_get(reply, "(^a&s)", &events);
                g_assert_true(g_strv_contains(events, "sched/sched_switch"));
        }
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();

        tb_test_add_isolated("/bus/hostile-start/latency", test_latency);
        tb_test_add_isolated("/bus/hostile-start/caps", test_caps);
        tb_test_add_isolated("/bus/hostile-start/bad-configs", test_bad_configs);
        tb_test_add_isolated("/bus/hostile-start/list-events", test_list_events);
        return tb_test_run(TB_START_SERVICE);
}
