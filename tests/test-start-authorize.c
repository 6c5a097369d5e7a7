/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite: how a Start is authorized, seen from the bus. The test watches the bus as
 * a monitor (root may) and notes every CheckAuthorization the service sends polkitd and
 * when each is answered.
 *
 *   one-step     a Start whose config needs org.tracebus.kprobes (a kprobe) is asked
 *                org.tracebus.record first, then org.tracebus.kprobes and
 *                org.tracebus.manage together: both sent before polkitd answers
 *                either. tbuser (may record only) hears AccessDenied naming
 *                org.tracebus.kprobes; tbadmin (all three) gets a session.
 *   not-parsed   a caller polkit refuses sends half a megabyte of invalid config: it hears
 *                AccessDenied, never InvalidConfig, and the service asked polkitd once;
 *                the same config from tbuser is InvalidConfig, so it would have been
 *                refused had it been parsed. A plain config from tbuser asks two
 *                actions: record, then manage (raw kernel pointers).
 *
 * Users (tests/polkit-rules): tbuser may record; tbother may not; tbadmin (tbadmins)
 * may record, manage and use org.tracebus.kprobes.
 */
#include <string.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include "tb-client.h"

#define POLKIT_AUTHORITY "org.freedesktop.PolicyKit1.Authority"

/* One CheckAuthorization of the service's: its action, and when it was sent and answered
 * (the position among the messages the monitor saw; 0: not answered). */
typedef struct {
        uint64_t serial;
        char *action;
        guint sent, answered;
} Check;

typedef struct {
        sd_bus *bus;
        char *service;      /* the service's unique name */
        GArray *checks;     /* Check */
        guint seen;
} Monitor;

static void monitor_open(Monitor *mon) {
        g_autoptr(GError) error = NULL;
        sd_bus_error e = SD_BUS_ERROR_NULL;

        *mon = (Monitor) { .checks = g_array_new(false, true, sizeof(Check)) };
        g_assert_cmpint(tb_name_owner_pid(tb_bus()->conn, TB_BUS_NAME, &mon->service, &error), >, 0);
        g_assert_cmpint(sd_bus_new(&mon->bus), >=, 0);
        g_assert_cmpint(sd_bus_set_address(mon->bus, tb_bus()->address), >=, 0);
        g_assert_cmpint(sd_bus_set_bus_client(mon->bus, true), >=, 0);
        g_assert_cmpint(sd_bus_set_monitor(mon->bus, true), >=, 0);
        g_assert_cmpint(sd_bus_start(mon->bus), >=, 0);
        /* Every message on the bus: the test filters what concerns it. */
        g_assert_cmpint(sd_bus_call_method(mon->bus, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                           "org.freedesktop.DBus.Monitoring", "BecomeMonitor", &e, NULL, "asu", 0, 0u),
                        >=, 0);
}

static void monitor_note_call(Monitor *mon, sd_bus_message *m) {
        const char *action;
        uint64_t serial;
        Check c;

        if (g_strcmp0(sd_bus_message_get_sender(m), mon->service) != 0 ||
            !sd_bus_message_is_method_call(m, POLKIT_AUTHORITY, "CheckAuthorization"))
                return;
        g_assert_cmpint(sd_bus_message_skip(m, "(sa{sv})"), >=, 0);
        g_assert_cmpint(sd_bus_message_read(m, "s", &action), >=, 0);
        g_assert_cmpint(sd_bus_message_get_cookie(m, &serial), >=, 0);
        c = (Check) { .serial = serial, .action = g_strdup(action), .sent = mon->seen };
        g_array_append_val(mon->checks, c);
}

static void monitor_note_reply(Monitor *mon, sd_bus_message *m) {
        uint64_t serial;

        if (g_strcmp0(sd_bus_message_get_destination(m), mon->service) != 0 ||
            sd_bus_message_get_reply_cookie(m, &serial) < 0)
                return;
        for (guint i = 0; i < mon->checks->len; i++) {
                Check *c = &g_array_index(mon->checks, Check, i);

                if (c->serial == serial && !c->answered)
                        c->answered = mon->seen;
        }
}

/* Reads what the bus carried until it has been quiet for half a second (at most ten
 * seconds: what came by then is what the Start sent). */
static void monitor_drain(Monitor *mon) {
        gint64 deadline = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;

        while (g_get_monotonic_time() < deadline) {
                sd_bus_message *m = NULL;
                int r = sd_bus_process(mon->bus, &m);

                g_assert_cmpint(r, >=, 0);
                if (m) {
                        mon->seen++;
                        monitor_note_call(mon, m);
                        monitor_note_reply(mon, m);
                        sd_bus_message_unref(m);
                }
                if (r > 0)
                        continue;
                if (sd_bus_wait(mon->bus, 500000) <= 0)
                        return;
        }
}

static void monitor_close(Monitor *mon) {
        for (guint i = 0; i < mon->checks->len; i++)
                g_free(g_array_index(mon->checks, Check, i).action);
        g_array_unref(mon->checks);
        sd_bus_flush_close_unref(mon->bus);
        g_free(mon->service);
}

static const Check *find_check(const Monitor *mon, const char *action) {
        for (guint i = 0; i < mon->checks->len; i++)
                if (strcmp(g_array_index(mon->checks, Check, i).action, action) == 0)
                        return &g_array_index(mon->checks, Check, i);
        return NULL;
}

/* Runs @spec's Start while watching the bus: the error's name (NULL for a session),
 * with the checks the service sent for it in @mon. */
static char *start_watched(const ClientSpec *spec, Monitor *mon, char **ret_full) {
        char *name;

        monitor_open(mon);
        name = client_run_full(spec, NULL, ret_full);
        monitor_drain(mon);
        for (guint i = 0; i < mon->checks->len; i++) {
                const Check *c = &g_array_index(mon->checks, Check, i);
                note("%s's Start: CheckAuthorization %s sent at %u, answered at %u\n", spec->user, c->action, c->sent,
                     c->answered);
        }
        return name;
}

/* record first, answered before the rest; kprobes and manage both sent before either
 * is answered: one step, not one after the other. */
static void assert_one_step(const Monitor *mon) {
        const Check *record = find_check(mon, TB_ACTION_RECORD), *kprobes = find_check(mon, TB_ACTION_KPROBES),
                    *manage = find_check(mon, TB_ACTION_MANAGE);

        g_assert_cmpuint(mon->checks->len, ==, 3);
        g_assert_nonnull(record);
        g_assert_nonnull(kprobes);
        g_assert_nonnull(manage);
        g_assert_cmpuint(record->answered, >, 0);
        g_assert_cmpuint(record->answered, <, kprobes->sent);
        g_assert_cmpuint(record->answered, <, manage->sent);
        g_assert_cmpuint(kprobes->answered, >, 0);
        g_assert_cmpuint(manage->answered, >, 0);
        g_assert_cmpuint(MAX(kprobes->sent, manage->sent), <, MIN(kprobes->answered, manage->answered));
}

static char *kprobe_config(void) {
        return g_strdup("buffers { size_kb: 1024 }\n"
                        "data_sources { config { name: \"linux.ftrace\" ftrace_config {\n"
                        "  ftrace_events: \"sched/sched_switch\"\n"
                        "  kprobe_events { probe: \"do_sys_openat2\" type: KPROBE_TYPE_BOTH }\n"
                        "} } }\n"
                        "duration_ms: 300\n");
}

static void test_one_step(void) {
        g_autofree char *config = kprobe_config(), *name = NULL, *full = NULL, *admin = NULL;
        ClientSpec spec = { .user = "tbuser", .op = OP_START, .config = config, .output_fd = -1 };
        Monitor mon;

        name = start_watched(&spec, &mon, &full);
        g_assert_cmpstr(name, ==, ERR_ACCESS_DENIED);
        g_assert_nonnull(strstr(full, TB_ACTION_KPROBES));
        assert_one_step(&mon);
        monitor_close(&mon);

        spec.user = "tbadmin";
        admin = start_watched(&spec, &mon, NULL);
        g_assert_null(admin);
        assert_one_step(&mon);
        monitor_close(&mon);
        /* The session ends on its own after duration_ms. */
        g_usleep(800 * 1000);
}

static void test_not_parsed(void) {
        g_autoptr(GString) bad = g_string_new("buffers { size_kb: 1024 }\n");
        g_autofree char *refused = NULL, *full = NULL, *invalid = NULL, *plain_err = NULL;
        g_autofree char *plain = config_text(200);
        ClientSpec spec = { .user = "tbother", .op = OP_START, .output_fd = -1 };
        Monitor mon;

        /* Half a megabyte that is no trace config. */
        while (bad->len < 512 * 1024)
                g_string_append(bad, "no_such_field { of: \"a trace config\" }\n");
        spec.config = bad->str;

        refused = start_watched(&spec, &mon, &full);
        g_assert_cmpstr(refused, ==, ERR_ACCESS_DENIED);
        g_assert_nonnull(strstr(full, TB_ACTION_RECORD));
        g_assert_cmpuint(mon.checks->len, ==, 1);
        g_assert_nonnull(find_check(&mon, TB_ACTION_RECORD));
        monitor_close(&mon);

        spec.user = "tbuser";
        invalid = client_run(&spec, NULL);
        g_assert_cmpstr(invalid, ==, ERR_INVALID_CONFIG);

        spec.config = plain;
        plain_err = start_watched(&spec, &mon, NULL);
        g_assert_null(plain_err);
        g_assert_cmpuint(mon.checks->len, ==, 2);
        g_assert_nonnull(find_check(&mon, TB_ACTION_RECORD));
        g_assert_nonnull(find_check(&mon, TB_ACTION_MANAGE));
        monitor_close(&mon);
        g_usleep(500 * 1000);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();
        tb_test_add_isolated("/bus/start-authorize/one-step", test_one_step);
        tb_test_add_isolated("/bus/start-authorize/not-parsed", test_not_parsed);
        return tb_test_run(TB_START_SERVICE);
}
