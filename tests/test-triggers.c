/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite: trigger_config and Manager.ActivateTriggers, through the
 * tracebus CLI against the real service. START_TRACING arms a session that records only
 * from its trigger; STOP_TRACING ends one stop_delay_ms after it; trigger_timeout_ms ends
 * one that saw none; CLONE_SNAPSHOT writes FILE.N and goes on; another user's triggers reach nothing of yours (unless the sender
 * may manage); each trigger taken is a TracePacket.trigger, read back field by field with
 * the project's reader and with protoc; bad names and configs are refused by name.
 *
 * Users (tests/polkit-rules/50-tracebus-test.rules): tbuser records and triggers, tbother
 * only triggers, tbadmin also manages.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>

#include "cli-util.h"
#include "session-util.h"

#define EVENTS "data_sources { config { name: \"linux.ftrace\" ftrace_config {\n" \
               "  ftrace_events: \"sched/sched_switch\" ftrace_events: \"sched/sched_waking\" } } }\n" \
               "buffers { size_kb: 4096 }\n"

/* A config of @mode with one trigger "boom" of @delay_ms, waiting at most @timeout_ms. */
static char *trigger_config(const char *mode, guint timeout_ms, guint delay_ms) {
        return g_strdup_printf(EVENTS "trigger_config { trigger_mode: %s trigger_timeout_ms: %u\n"
                               "  triggers { name: \"boom\" stop_delay_ms: %u } }\n", mode, timeout_ms, delay_ms);
}

/* tbuser's session of @text, detached under @key into @out (NULL: the service's trace
 * directory); its object path. */
static char *start_detached(const char *dir, const char *key, const char *text, const char *out) {
        g_autofree char *cfg = user_file("tbuser", dir, "config.pbtxt", text, -1);
        g_autofree char *arg = g_strdup_printf("--detach=%s", key);
        g_auto(TbCommandResult) res = { 0 };
        g_auto(GStrv) own = NULL;

        run_cli("tbuser", &res, arg, "-c", cfg, "--txt", out ? "-o" : NULL, out, NULL);
        assert_exit(&res, 0);
        own = sessions_of(tb_user_uid("tbuser"));
        g_assert_cmpuint(g_strv_length(own), ==, 1);
        return g_strdup(own[0]);
}

static void send_trigger(const char *user, const char *names) {
        g_autofree char *arg = g_strdup_printf("--trigger=%s", names);
        g_auto(TbCommandResult) res = { 0 };

        run_cli(user, &res, arg, NULL);
        assert_exit(&res, 0);
}

/* @sender sends @name; tbuser's session @path then ends with @reason. */
static void trigger_until_end(const char *sender, const char *name, const char *path, const char *reason) {
        send_trigger(sender, name);
        g_assert_true(wait_no_sessions(tb_user_uid("tbuser"), 15000));
        assert_end_reason_logged(path, tb_user_uid("tbuser"), reason);
}

typedef struct {
        guint n_triggers;
        char *name, *producer;
        gint32 uid;
        guint32 sequence_id;
        guint64 trigger_ts, started_ts;
} TriggerSeen;

static void note_packet(const Tracebus__TracePacket *p, const TraceRawPacket *raw, guint index, gpointer userdata) {
        TriggerSeen *t = userdata;

        if (p->service_event && p->service_event->has_tracing_started && p->service_event->tracing_started)
                t->started_ts = p->timestamp;
        if (!p->trigger)
                return;
        t->n_triggers++;
        g_free(t->name);
        g_free(t->producer);
        t->name = g_strdup(p->trigger->trigger_name);
        t->producer = g_strdup(p->trigger->producer_name);
        g_assert_true(p->trigger->has_trusted_producer_uid);
        t->uid = p->trigger->trusted_producer_uid;
        t->sequence_id = p->trusted_packet_sequence_id;
        g_assert_true(p->has_timestamp);
        t->trigger_ts = p->timestamp;
}

static void read_triggers(const char *out, TriggerSeen *t) {
        g_autofree char *data = NULL;
        g_autoptr(GError) error = NULL;
        gsize len;

        g_assert_true(g_file_get_contents(out, &data, &len, NULL));
        g_assert_true(tb_trace_foreach_packet((const guint8 *) data, len, note_packet, t, NULL, &error));
}

static void trigger_seen_clear(TriggerSeen *t) {
        g_free(t->name);
        g_free(t->producer);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(TriggerSeen, trigger_seen_clear)

/* The Trigger packet, field by field, as the reader and protoc see it. */
static void assert_trigger_packet(const char *out, const TriggerSeen *t, const char *sender) {
        g_autofree char *decoded = protoc_decode_trace(out);
        g_autofree char *uid_line = g_strdup_printf("trusted_producer_uid: %u", (unsigned) tb_user_uid(sender));

        g_assert_cmpuint(t->n_triggers, ==, 1);
        g_assert_cmpstr(t->name, ==, "boom");
        g_assert_cmpstr(t->producer, ==, "tracebus");   /* the sender's process name */
        g_assert_cmpint(t->uid, ==, (gint32) tb_user_uid(sender));
        g_assert_cmpuint(t->sequence_id, ==, 1);        /* the service sequence */
        g_assert_cmpuint(t->trigger_ts, >, 0);
        assert_decoded_has(decoded, "trigger {");
        assert_decoded_has(decoded, "trigger_name: \"boom\"");
        assert_decoded_has(decoded, "producer_name: \"tracebus\"");
        assert_decoded_has(decoded, uid_line);
}

/* STOP_TRACING: records at once; the trigger ends it stop_delay_ms later (reason
 * triggered); the trace holds the trigger, between the start and the end. */
static void test_stop(void) {
        g_autofree char *dir = make_user_dir("tbuser", "trig-stop");
        g_autofree char *out = g_build_filename(dir, "stop.pftrace", NULL);
        g_autofree char *text = trigger_config("STOP_TRACING", 60000, 300);
        g_autofree char *path = start_detached(dir, "trig-stop", text, out);
        g_autofree char *state = string_property(path, "State");
        g_auto(TriggerSeen) t = { 0 };

        g_assert_cmpstr(state, ==, "recording");
        g_usleep(300 * 1000);
        trigger_until_end("tbuser", "boom", path, "triggered");
        assert_file_complete(out);
        read_triggers(out, &t);
        assert_trigger_packet(out, &t, "tbuser");
        g_assert_cmpuint(t.started_ts, >, 0);
        g_assert_cmpuint(t.trigger_ts, >, t.started_ts);
}

/* Perfetto's snapshot.cfg shape: STOP_TRACING with use_clone_snapshot_if_available, and
 * an -o file. Snapshots need the trace directory; "if available" means the session runs
 * as STOP_TRACING then, with a warning saying why, and the trigger stops it. */
static void test_clone_if_available(void) {
        g_autofree char *dir = make_user_dir("tbuser", "trig-clone-avail");
        g_autofree char *out = g_build_filename(dir, "snap.pftrace", NULL);
        g_autofree char *text = g_strdup_printf(EVENTS "trigger_config { trigger_mode: STOP_TRACING\n"
                                                "  use_clone_snapshot_if_available: true trigger_timeout_ms: 60000\n"
                                                "  triggers { name: \"boom\" stop_delay_ms: 0 } }\n");
        g_autofree char *path = start_detached(dir, "trig-clone-avail", text, out);
        g_autofree char *warnings = NULL;
        g_autoptr(GError) error = NULL;
        g_autoptr(GVariant) v = tb_get_property(tb_bus()->conn, path, TB_SESSION_IFACE, "Warnings", &error);
        g_auto(TriggerSeen) t = { 0 };

        g_autofree const gchar **list = NULL;

        g_assert_no_error(error);
        list = g_variant_get_strv(v, NULL);
        warnings = g_strjoinv("|", (char **) list);
        g_assert_nonnull(strstr(warnings, "use_clone_snapshot_if_available"));
        g_usleep(300 * 1000);
        trigger_until_end("tbuser", "boom", path, "triggered");
        assert_file_complete(out);
        read_triggers(out, &t);
        assert_trigger_packet(out, &t, "tbuser");
}

/* START_TRACING: armed (nothing written, no event recorded) until the trigger; then it
 * records for stop_delay_ms, and tracing started after the trigger came. */
static void test_start(void) {
        g_autofree char *dir = make_user_dir("tbuser", "trig-start");
        g_autofree char *out = g_build_filename(dir, "start.pftrace", NULL);
        g_autofree char *text = trigger_config("START_TRACING", 60000, 1000);
        g_autofree char *path = start_detached(dir, "trig-start", text, out);
        g_autofree char *armed = string_property(path, "State"), *recording = NULL;
        g_auto(TriggerSeen) t = { 0 };
        TbTraceSummary sum = { 0 };

        g_assert_cmpstr(armed, ==, "armed");
        g_usleep(500 * 1000);
        g_assert_cmpint(file_size(out), ==, 0);
        send_trigger("tbuser", "boom");
        recording = string_property(path, "State");
        g_assert_cmpstr(recording, ==, "recording");
        g_assert_true(wait_no_sessions(tb_user_uid("tbuser"), 10000));
        assert_end_reason_logged(path, tb_user_uid("tbuser"), "duration-reached");
        summarise(out, &sum);
        assert_trace_complete(&sum);
        g_assert_cmpuint(sum.n_sched_switch + sum.n_compact_switch, >, 0);
        tb_trace_summary_clear(&sum);
        read_triggers(out, &t);
        assert_trigger_packet(out, &t, "tbuser");
        g_assert_cmpuint(t.started_ts, >=, t.trigger_ts);
}

/* trigger_timeout_ms: an armed START session ends with nothing written; a STOP session
 * ends with its trace and no trigger in it; both with reason trigger-timeout. */
static void test_timeout(void) {
        g_autofree char *dir = make_user_dir("tbuser", "trig-timeout");
        g_autofree char *out1 = g_build_filename(dir, "start.pftrace", NULL);
        g_autofree char *out2 = g_build_filename(dir, "stop.pftrace", NULL);
        g_autofree char *t1 = trigger_config("START_TRACING", 800, 0), *t2 = trigger_config("STOP_TRACING", 800, 0);
        g_autofree char *p1 = start_detached(dir, "trig-to-1", t1, out1), *p2 = NULL;
        g_auto(TriggerSeen) t = { 0 };

        g_assert_true(wait_no_sessions(tb_user_uid("tbuser"), 10000));
        assert_end_reason_logged(p1, tb_user_uid("tbuser"), "trigger-timeout");
        g_assert_cmpint(file_size(out1), ==, 0);

        p2 = start_detached(dir, "trig-to-2", t2, out2);
        g_assert_true(wait_no_sessions(tb_user_uid("tbuser"), 10000));
        assert_end_reason_logged(p2, tb_user_uid("tbuser"), "trigger-timeout");
        assert_file_complete(out2);
        read_triggers(out2, &t);
        g_assert_cmpuint(t.n_triggers, ==, 0);
}

/* Another user's trigger of the same name reaches nothing of tbuser's; a manager's does,
 * and the trace names the manager's UID. */
static void test_other_user(void) {
        g_autofree char *dir = make_user_dir("tbuser", "trig-other");
        g_autofree char *out = g_build_filename(dir, "other.pftrace", NULL);
        g_autofree char *text = trigger_config("STOP_TRACING", 60000, 0);
        g_autofree char *path = start_detached(dir, "trig-other", text, out);
        g_autofree char *state = NULL;
        g_auto(TriggerSeen) t = { 0 };

        send_trigger("tbother", "boom");
        g_usleep(1500 * 1000);
        state = string_property(path, "State");
        g_assert_cmpstr(state, ==, "recording");
        g_assert_cmpuint(g_strv_length(sessions_of(tb_user_uid("tbuser"))), ==, 1);

        trigger_until_end("tbadmin", "boom", path, "triggered");
        read_triggers(out, &t);
        assert_trigger_packet(out, &t, "tbadmin");
}

/* producer_name_regex matches the sender's whole process name ("tracebus" for the CLI):
 * "bus" matches only part of it, so "partial" is ignored; "trac[a-z]+" stops the session. */
static void test_producer_regex(void) {
        g_autofree char *dir = make_user_dir("tbuser", "trig-regex");
        g_autofree char *out = g_build_filename(dir, "regex.pftrace", NULL);
        g_autofree char *path = start_detached(dir, "trig-regex", EVENTS
                "trigger_config { trigger_mode: STOP_TRACING trigger_timeout_ms: 60000\n"
                "  triggers { name: \"partial\" producer_name_regex: \"bus\" }\n"
                "  triggers { name: \"whole\" producer_name_regex: \"trac[a-z]+\" } }\n", out);
        g_autofree char *state = NULL;
        g_auto(TriggerSeen) t = { 0 };

        send_trigger("tbuser", "partial");
        g_usleep(1500 * 1000);
        state = string_property(path, "State");
        g_assert_cmpstr(state, ==, "recording");
        trigger_until_end("tbuser", "whole", path, "triggered");
        read_triggers(out, &t);
        g_assert_cmpuint(t.n_triggers, ==, 1);
        g_assert_cmpstr(t.name, ==, "whole");
}

/* The user guide's recipe: a week-long ring of the trace directory, saved by the OnFailure=
 * unit's `tracebus --trigger=unit-failed` (the config as the user guide shows it). */
static void test_recipe(void) {
        static const char recipe[] =
                "buffers { size_kb: 65536 fill_policy: RING_BUFFER }\n"
                "data_sources { config { name: \"linux.ftrace\" ftrace_config {\n"
                "    ftrace_events: \"sched/sched_switch\" ftrace_events: \"sched/sched_waking\"\n"
                "    ftrace_events: \"power/cpu_frequency\" } } }\n"
                "data_sources { config { name: \"linux.process_stats\" } }\n"
                "unique_session_name: \"flight\"\n"
                "trigger_config {\n"
                "  trigger_mode: STOP_TRACING\n"
                "  trigger_timeout_ms: 604800000          # a week: then it ends (reason trigger-timeout)\n"
                "  triggers { name: \"unit-failed\" stop_delay_ms: 2000 }   # 2 s after the failure too\n"
                "}\n";
        g_autofree char *dir = make_user_dir("tbuser", "trig-recipe");
        g_autofree char *path = start_detached(dir, "flight", recipe, NULL);
        g_autofree char *out = string_property(path, "OutputPath");
        g_auto(TriggerSeen) t = { 0 };

        g_assert_true(out && *out);
        g_usleep(500 * 1000);
        trigger_until_end("tbuser", "unit-failed", path, "triggered");
        assert_file_complete(out);
        read_triggers(out, &t);
        g_assert_cmpuint(t.n_triggers, ==, 1);
        g_assert_cmpstr(t.name, ==, "unit-failed");
}

/* ActivateTriggers straight on the bus, as root (no polkit): the error's name. */
static char *activate_error(const char *name) {
        sd_bus *bus = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        char *ret = NULL;

        g_assert_cmpint(sd_bus_open_system(&bus), >=, 0);
        if (sd_bus_call_method(bus, TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_INTERFACE, "ActivateTriggers", &error,
                               NULL, "as", 1, name) < 0)
                ret = g_strdup(error.name);
        sd_bus_error_free(&error);
        sd_bus_flush_close_unref(bus);
        return ret;
}

static void assert_start_refused(const char *dir, const char *text, const char *what) {
        g_autofree char *cfg = user_file("tbuser", dir, "bad.pbtxt", text, -1);
        g_autofree char *out = g_build_filename(dir, "bad.pftrace", NULL);
        g_auto(TbCommandResult) res = { 0 };

        run_cli("tbuser", &res, "-c", cfg, "--txt", "-o", out, NULL);
        assert_exit(&res, 1);
        assert_stderr_has(&res, what);
        g_assert_cmpuint(g_strv_length(sessions_of(tb_user_uid("tbuser"))), ==, 0);
}

/* The service logged the snapshot FILE.N of the session as written; its path. */
static char *wait_snapshot(const char *out, unsigned n) {
        g_autofree char *needle = g_strdup_printf("trigger snapshot written into %s.%u ", out, n);
        gint64 deadline = g_get_monotonic_time() + 15 * G_USEC_PER_SEC;

        while (g_get_monotonic_time() < deadline) {
                g_autofree char *log = service_log();
                if (strstr(log, needle))
                        return g_strdup_printf("%s.%u", out, n);
                g_usleep(100 * 1000);
        }
        note("no \"%s\" in the service's log\n", needle);
        g_assert_not_reached();
}

/* CLONE_SNAPSHOT: each trigger writes a snapshot FILE.N beside the session's trace (as
 * Perfetto's CLI names them), and the session goes on recording; with the caller's
 * Output fd the config is refused, saying why. */
static void test_clone(void) {
        g_autofree char *dir = make_user_dir("tbuser", "trig-clone");
        g_autofree char *text = trigger_config("CLONE_SNAPSHOT", 60000, 200);
        g_autofree char *path = NULL, *out = NULL, *snap0 = NULL, *snap1 = NULL, *state = NULL;
        g_auto(TbCommandResult) stop = { 0 };

        assert_start_refused(dir, text, "CLONE_SNAPSHOT needs the service's trace directory");
        path = start_detached(dir, "trig-clone", text, NULL);
        out = string_property(path, "OutputPath");
        g_usleep(300 * 1000);
        send_trigger("tbuser", "boom");
        snap0 = wait_snapshot(out, 0);
        assert_file_complete(snap0);
        state = string_property(path, "State");
        g_assert_cmpstr(state, ==, "recording");
        /* The next one after the service's CloneMinIntervalSec (5 s by default). */
        g_usleep(5200 * 1000);
        send_trigger("tbuser", "boom");
        snap1 = wait_snapshot(out, 1);
        assert_file_complete(snap1);
        {
                /* The Session's TriggerSnapshots lists both, in order (what the GTK app notifies of). */
                const char *argv[] = { "busctl", "--system", "get-property", TB_BUS_NAME, path, TB_SESSION_INTERFACE,
                                       "TriggerSnapshots", NULL };
                g_auto(TbCommandResult) prop = { 0 };
                g_autofree char *want = g_strdup_printf("as 2 \"%s\" \"%s\"", snap0, snap1);

                run_as("root", argv, &prop);
                assert_exit(&prop, 0);
                g_assert_nonnull(strstr(prop.out, want));
        }
        run_cli("tbuser", &stop, "--attach=trig-clone", "--stop", NULL);
        assert_exit(&stop, 0);
        assert_file_complete(out);
}

/* A trigger name over 64 bytes is InvalidTrigger (the CLI says so first); configs
 * Perfetto's service refuses are InvalidConfig with its reasons. */
static void test_refused(void) {
        g_autofree char *dir = make_user_dir("tbuser", "trig-bad");
        g_autofree char *long_name = g_strnfill(65, 'x'), *long_arg = g_strdup_printf("--trigger=%s", long_name);
        g_autofree char *err = activate_error(long_name), *empty = activate_error("");
        g_autofree char *ok = activate_error("fine");
        g_auto(TbCommandResult) res = { 0 };

        g_assert_cmpstr(err, ==, TB_ERROR_INVALID_TRIGGER);
        g_assert_cmpstr(empty, ==, TB_ERROR_INVALID_TRIGGER);
        if (ok)
                note("ActivateTriggers(fine) as root: %s\n", ok);
        g_assert_null(ok);
        run_cli("tbuser", &res, long_arg, NULL);
        assert_exit(&res, 1);
        assert_stderr_has(&res, "1 to 64 bytes");

        assert_start_refused(dir, EVENTS "trigger_config { trigger_mode: 3 trigger_timeout_ms: 1000 "
                             "triggers { name: \"a\" } }\n", "trigger_mode");
        assert_start_refused(dir, EVENTS "trigger_config { trigger_mode: STOP_TRACING triggers { name: \"a\" } }\n",
                             "trigger_timeout_ms must be positive");
        assert_start_refused(dir, EVENTS "duration_ms: 1000 trigger_config { trigger_mode: STOP_TRACING "
                             "trigger_timeout_ms: 1000 triggers { name: \"a\" } }\n", "duration_ms must not be set");
        assert_start_refused(dir, EVENTS "trigger_config { trigger_mode: STOP_TRACING trigger_timeout_ms: 1000 "
                             "triggers { name: \"a\" } triggers { name: \"a\" } }\n", "Duplicate trigger name");
        assert_start_refused(dir, EVENTS "write_into_file: true trigger_config { trigger_mode: STOP_TRACING "
                             "trigger_timeout_ms: 1000 triggers { name: \"a\" } }\n", "write_into_file");
        assert_start_refused(dir, EVENTS "trigger_config { trigger_mode: START_TRACING trigger_timeout_ms: 1000 "
                             "triggers { name: \"a\" producer_name_regex: \"(\" } }\n", "producer_name_regex");
}

int main(int argc, char **argv) {
        if (!freopen("/dev/null", "r", stdin))
                return EXIT_FAILURE;
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();

        tb_test_add_isolated("/bus/triggers/stop", test_stop);
        tb_test_add_isolated("/bus/triggers/start", test_start);
        tb_test_add_isolated("/bus/triggers/timeout", test_timeout);
        tb_test_add_isolated("/bus/triggers/other-user", test_other_user);
        tb_test_add_isolated("/bus/triggers/producer-regex", test_producer_regex);
        tb_test_add_isolated("/bus/triggers/refused", test_refused);
        tb_test_add_isolated("/bus/triggers/recipe", test_recipe);
        tb_test_add_isolated("/bus/triggers/clone", test_clone);
        tb_test_add_isolated("/bus/triggers/clone-if-available", test_clone_if_available);
        return tb_test_run(TB_START_SERVICE);
}
