/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The sessions suites' helpers (session-util.h): sessions started and
 * commanded through the sd-bus test client, their properties and tracefs
 * instances as root sees them, and the clean slate around every case.
 */
#include "session-util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* sched_switch + sched_waking written into the file every period_ms, so the
 * file grows while recording; max_size 0: no size limit. */
char *config_periodic(guint duration_ms, guint period_ms, guint64 max_size) {
        g_autofree char *size = max_size ? g_strdup_printf("max_file_size_bytes: %" G_GUINT64_FORMAT "\n", max_size)
                                         : g_strdup("");
        return g_strdup_printf("duration_ms: %u\n"
                               "write_into_file: true\n"
                               "file_write_period_ms: %u\n"
                               "%s"
                               "buffers { size_kb: 4096 }\n"
                               "data_sources { config { name: \"linux.ftrace\" ftrace_config {\n"
                               "  ftrace_events: \"sched/sched_switch\"\n"
                               "  ftrace_events: \"sched/sched_waking\"\n"
                               "} } }\n",
                               duration_ms, period_ms, size);
}

char *fixture_config(const char *name) {
        g_autofree char *p = g_build_filename(tb_bus()->source_dir, "tests", "fixtures", "textproto", name, NULL);
        g_autoptr(GError) error = NULL;
        char *text = NULL;

        g_assert_true(g_file_get_contents(p, &text, NULL, &error));
        g_assert_no_error(error);
        return text;
}

const char *session_id(const char *path) {
        const char *slash = strrchr(path, '/');
        g_assert_nonnull(slash);
        return slash + 1;
}

/* The tracefs instance of a session: tracebus-<service pid>-<session id>. */
char *instance_of(const char *path) {
        return g_strdup_printf("tracebus-%d-%s", (int) tb_bus()->service_pid, session_id(path));
}

bool instance_exists(const char *path) {
        g_autofree char *name = instance_of(path);
        g_autofree char *dir = g_build_filename(TB_INSTANCES_DIR, name, NULL);
        return g_file_test(dir, G_FILE_TEST_IS_DIR);
}

/* The session ended (or is gone) and its instance is gone. */
void wait_over(const char *path, guint timeout_ms) {
        g_autofree char *name = instance_of(path);
        char *names[] = { name, NULL };
        g_autoptr(GError) error = NULL;

        if (!tb_wait_session_over(tb_bus()->conn, path, names, timeout_ms, &error))
                g_error("%s", error->message);
}

void assert_recording(const char *path) {
        g_autoptr(GError) error = NULL;
        g_autofree char *state = tb_session_state(tb_bus()->conn, path, &error);

        if (!state)
                note("session %s: %s\n", path, error->message);
        g_assert_cmpstr(state, ==, "recording");
        if (!instance_exists(path)) {
                g_autofree char *name = instance_of(path);
                note("session %s records, but its instance %s does not exist\n", path, name);
        }
        g_assert_true(instance_exists(path));
}

/* As root (who may read every session's properties). */
bool detached_property(const char *path) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GVariant) v = tb_get_property(tb_bus()->conn, path, TB_SESSION_IFACE, "Detached", &error);

        g_assert_no_error(error);
        return g_variant_get_boolean(v);
}

char *string_property(const char *path, const char *name) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GVariant) v = tb_get_property(tb_bus()->conn, path, TB_SESSION_IFACE, name, &error);

        g_assert_no_error(error);
        return g_variant_dup_string(v, NULL);
}

off_t file_size(const char *path) {
        struct stat st;
        g_assert_cmpint(stat(path, &st), ==, 0);
        return st.st_size;
}

/* The size of path once it is above size, or when deadline (monotonic) passes. */
off_t wait_larger(const char *path, off_t size, gint64 deadline) {
        off_t now;

        while ((now = file_size(path)) <= size && g_get_monotonic_time() < deadline)
                g_usleep(50 * 1000);
        return now;
}

/* Spawns a client that starts a session and holds its connection; waits
 * until the session records. */
char *start_held(const ClientSpec *spec, Client *c) {
        g_autofree char *err = NULL, *state = NULL;
        char *path;

        g_assert_true(spec->op == OP_START && spec->hold);
        client_spawn(spec, c);
        path = client_expect(c, 'O', 30000, &err);
        if (!path)
                g_error("%s's Start failed: %s", spec->user, err);
        note("%s's session %s (held)\n", spec->user, path);
        state = wait_state(path, "recording", 10000);
        g_assert_cmpstr(state, ==, "recording");
        return path;
}

/* A client starts a session and leaves the bus at once. */
char *start_and_leave(const ClientSpec *spec) {
        g_autofree char *err = NULL, *state = NULL;
        char *path = NULL;

        g_assert_true(spec->op == OP_START && !spec->hold);
        err = client_run(spec, &path);
        if (err)
                g_error("%s's Start failed: %s", spec->user, err);
        note("%s's session %s (client gone)\n", spec->user, path);
        state = wait_state(path, "recording", 10000);
        g_assert_cmpstr(state, ==, "recording");
        return path;
}

/* One command on a fresh connection of user; its reply payload, or NULL and
 * the whole error in ret_err. */
char *one_cmd(const char *user, const char *cmd, char kind, char **ret_err) {
        ClientSpec spec = { .user = user, .op = OP_HOLD_NAME, .output_fd = -1 };
        g_autofree char *name = NULL, *err = NULL;
        char *out;
        Client c;

        client_spawn(&spec, &c);
        name = client_expect(&c, 'N', 10000, &err);
        if (!name)
                g_error("%s could not connect: %s", user, err);
        out = client_cmd(&c, cmd, kind, &err);
        client_finish(&c, 5000);
        if (!out)
                note("%s: %s: %s\n", user, cmd, err);
        if (ret_err)
                *ret_err = g_steal_pointer(&err);
        return out;
}

/* The error name one command gets, or NULL when it succeeds. */
char *cmd_error(const char *user, const char *cmd, char kind) {
        g_autofree char *err = NULL, *out = one_cmd(user, cmd, kind, &err);
        return out ? NULL : error_name(err);
}

bool is_detached_as(const char *user, const char *key) {
        g_autofree char *cmd = g_strconcat("isdetached ", key, NULL);
        g_autofree char *err = NULL, *out = one_cmd(user, cmd, 'B', &err);

        if (!out)
                g_error("%s: IsDetached(%s) failed: %s", user, key, err);
        g_assert_true(g_str_equal(out, "true") || g_str_equal(out, "false"));
        return g_str_equal(out, "true");
}

/* Manager.Stop as user, who must succeed; the stats. */
GHashTable *stop_as(const char *user, const char *path) {
        ClientSpec spec = { .user = user, .op = OP_STOP_MANAGER, .path = path, .output_fd = -1 };
        g_autofree char *stats = NULL, *err = client_run(&spec, &stats);

        if (err)
                g_error("%s's Stop of %s failed: %s", user, path, err);
        note("%s stopped %s:%s\n", user, path, stats);
        return parse_stats(stats);
}

/* A command on a held client that must succeed. */
char *must(Client *c, const char *cmd, char kind) {
        g_autofree char *err = NULL;
        char *out = client_cmd(c, cmd, kind, &err);

        if (!out)
                g_error("%s: %s", cmd, err);
        return out;
}

/* A command on a held client that must fail; the error name. */
char *must_fail(Client *c, const char *cmd, char kind) {
        g_autofree char *err = NULL, *out = client_cmd(c, cmd, kind, &err);

        if (out)
                g_error("%s succeeded (%s), expected an error", cmd, out);
        note("%s -> %s\n", cmd, err);
        return error_name(err);
}

char *service_log(void) {
        g_autofree char *p = g_build_filename(tb_bus()->log_dir, "service.log", NULL);
        char *text = NULL;

        if (!g_file_get_contents(p, &text, NULL, NULL))
                return g_strdup("");
        return text;
}

bool service_maps(const char *file) {
        g_autofree char *path = g_strdup_printf("/proc/%d/maps", (int) tb_bus()->service_pid);
        g_autofree char *maps = NULL;

        g_assert_true(g_file_get_contents(path, &maps, NULL, NULL));
        return strstr(maps, file) != NULL;
}

/* The service logged how the session ended: "Session N of UID U ended (reason)". */
void assert_end_reason_logged(const char *path, uid_t uid, const char *reason) {
        g_autofree char *needle = g_strdup_printf("Session %s of UID %u ended (%s)", session_id(path), (unsigned) uid,
                                                  reason);
        gint64 deadline = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;

        for (;;) {
                g_autofree char *log = service_log();
                if (strstr(log, needle))
                        return;
                if (g_get_monotonic_time() > deadline) {
                        g_autofree char *prefix = g_strdup_printf("Session %s of UID", session_id(path));
                        const char *got = strstr(log, prefix);
                        g_autofree char *line = got ? g_strndup(got, strcspn(got, "\n")) : g_strdup("(nothing)");
                        note("service log has no \"%s\"; it has: %s\n", needle, line);
                        g_assert_not_reached();
                }
                g_usleep(50 * 1000);
        }
}

/* Every session, as root (polkit authorizes uid 0 for org.tracebus.manage). */
char **all_sessions(void) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GVariant) reply = g_dbus_connection_call_sync(
                        tb_bus()->conn, TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_IFACE, "ListSessions", NULL,
                        G_VARIANT_TYPE("(ao)"), G_DBUS_CALL_FLAGS_NONE, 10000, NULL, &error);
        char **paths = NULL;

        g_assert_no_error(error);
        g_variant_get(reply, "(^ao)", &paths);
        return paths;
}

void root_stop(const char *path) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GVariant) reply = g_dbus_connection_call_sync(
                        tb_bus()->conn, TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_IFACE, "Stop",
                        g_variant_new("(o)", path), G_VARIANT_TYPE("(a{sv})"), G_DBUS_CALL_FLAGS_NONE, 30000, NULL,
                        &error);
        if (error)
                note("root's Stop of %s: %s\n", path, error->message);
}

void remove_limit_rule(void) {
        g_autofree char *p = g_build_filename(tb_bus()->tmpdir, "rules.d", LIMIT_RULES_FILE, NULL);
        (void) unlink(p);
}

/* Sessions of a failed case may still be ending (their clients died with it). */
void wait_no_own_instances(guint timeout_ms) {
        gint64 deadline = g_get_monotonic_time() + (gint64) timeout_ms * 1000;

        for (;;) {
                g_auto(GStrv) inst = own_instances();
                if (!inst[0] || g_get_monotonic_time() > deadline)
                        return;
                g_usleep(50 * 1000);
        }
}

/* Before a case: nothing left from an earlier, failed one (that one failed
 * already; this keeps the failure from spreading). */
void session_case_begin(void) {
        g_auto(GStrv) left = all_sessions();

        remove_limit_rule();
        for (size_t i = 0; left[i]; i++) {
                note("a session left by an earlier case: %s; stopping it\n", left[i]);
                root_stop(left[i]);
        }
        wait_no_own_instances(10000);
}

/* After a case: it cleaned up. */
void session_case_end(void) {
        g_auto(GStrv) left = all_sessions();
        g_autofree char *prefix = g_strdup_printf("tracebus-%d-", (int) tb_bus()->service_pid);
        g_auto(GStrv) inst = tb_tracebus_instances();

        for (size_t i = 0; left[i]; i++)
                note("session left behind: %s\n", left[i]);
        g_assert_cmpuint(g_strv_length(left), ==, 0);
        for (size_t i = 0; inst[i]; i++) {
                if (g_str_has_prefix(inst[i], prefix))
                        note("instance left behind: %s\n", inst[i]);
                g_assert_false(g_str_has_prefix(inst[i], prefix));
        }
}

/* The session ends within timeout_ms, then the busy pair stops, and the
 * service logged that it ended for uid with reason. */
void wait_ended(const char *path, guint timeout_ms, TbBusy *busy, uid_t uid, const char *reason) {
        wait_over(path, timeout_ms);
        tb_busy_stop(busy);
        assert_end_reason_logged(path, uid, reason);
}

/* out decodes, complete and closed, with the busy pair in it; its summary in s. */
void assert_closed_trace_with(const char *out, const TbBusy *busy, TbTraceSummary *s) {
        assert_trace_file_closed(out);
        summarise(out, s);
        assert_busy_seen(s, busy);
}

/* The service still runs, holds its name, and none of its tracefs instances is left. */
void assert_service_left_nothing(void) {
        g_auto(GStrv) inst = own_instances();
        g_autoptr(GError) error = NULL;

        g_assert_true(tb_pid_alive(tb_bus()->service_pid));
        g_assert_true(tb_wait_for_name(tb_bus()->conn, TB_BUS_NAME, 0, 100, &error));
        g_assert_no_error(error);
        for (size_t i = 0; inst[i]; i++)
                note("left-over instance: %s\n", inst[i]);
        g_assert_cmpuint(g_strv_length(inst), ==, 0);
}

/* Last: assert_service_left_nothing(), once the sessions of a failed case had
 * time to end (instances of other tracebusd processes on the machine, e.g.
 * another test run, are only noted). */
void session_test_no_leftovers(void) {
        g_auto(GStrv) inst = NULL, all = NULL, others = NULL;

        wait_no_own_instances(10000);
        inst = own_instances();
        all = tb_tracebus_instances();
        others = tb_strv_added(inst, all);
        for (size_t i = 0; others[i]; i++)
                note("an instance of another tracebusd: %s\n", others[i]);
        assert_service_left_nothing();
}
