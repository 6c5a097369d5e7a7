/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite: tracebusd on a private system bus with the real polkitd, driven
 * as the test users by the CLI, busctl and a small sd-bus client. Needs root
 * and tracefs (tools/setup-debian); see tests/system-bus.h.
 *
 * Test users and what tests/polkit-rules/50-tracebus-test.rules says about
 * org.tracebus.record: tbuser YES, tbadmin YES (group tbadmins), tbchallenge
 * AUTH_ADMIN (a challenge: there is no agent), tbother NO.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "session-util.h"

/* ===================================================================== */
/* busctl as tbuser                                                       */
/* ===================================================================== */

/* busctl ... Start as tbuser, which must succeed: its reply's tokens ("oas" PATH 0: the
 * session and no warnings). */
static char **busctl_start(const char *const *argv, const char *what) {
        g_auto(TbCommandResult) start = { 0 };
        g_autoptr(GError) error = NULL;
        char **tok;

        g_assert_true(tb_run_as_user("tbuser", argv, &start, &error));
        log_command(what, &start);
        g_assert_true(tb_command_succeeded(&start));
        tok = busctl_tokens(start.out);
        g_assert_cmpuint(g_strv_length(tok), ==, 3);
        g_assert_cmpstr(tok[2], ==, "0");
        return tok;
}

/* busctl ... Stop PATH as tbuser, then the busy pair stops: Stop's stats name
 * the trace file, the reason is "stopped", and the session is over. */
static GHashTable *busctl_stop(const char *path, TbBusy *busy) {
        const char *stop_argv[] = { "busctl", "--system", "call", TB_BUS_NAME, TB_MANAGER_PATH,
                                    TB_MANAGER_IFACE, "Stop", "o", path, NULL };
        g_auto(TbCommandResult) stop = { 0 };
        g_autoptr(GError) error = NULL;
        GHashTable *st;

        g_assert_true(tb_run_as_user("tbuser", stop_argv, &stop, &error));
        tb_busy_stop(busy);
        log_command("busctl Stop as tbuser", &stop);
        g_assert_true(tb_command_succeeded(&stop));
        st = busctl_stats(stop.out);
        g_assert_nonnull(g_hash_table_lookup(st, "OutputPath"));
        g_assert_cmpstr(g_hash_table_lookup(st, "Reason"), ==, "stopped");
        g_assert_true(tb_wait_session_over(tb_bus()->conn, path, NULL, 10000, &error));
        g_assert_no_error(error);
        return st;
}

/* tbuser's held client stops its session and leaves, then the busy pair
 * stops: Stop's stats. */
static GHashTable *stop_held(Client *c, TbBusy *busy) {
        g_autofree char *err = NULL;
        g_autofree char *stats = client_cmd(c, "stop", 'S', &err);

        client_finish(c, 10000);
        tb_busy_stop(busy);
        if (!stats)
                g_error("tbuser's Stop failed: %s", err);
        note("Stop stats:%s\n", stats);
        return parse_stats(stats);
}

/* The service wrote file for uid, complete, with the busy pair in it. */
static void assert_user_trace(const char *file, uid_t uid, const TbBusy *busy) {
        g_auto(TbTraceSummary) s = { 0 };

        assert_service_file(file, uid);
        summarise(file, &s);
        assert_trace_complete(&s);
        assert_busy_seen(&s, busy);
}

/* ===================================================================== */
/* Cases                                                                  */
/* ===================================================================== */

/* The harness itself: polkitd runs with our policy and the test rules. */
static void test_harness_polkit(void) {
        struct {
                const char *user;
                gboolean authorized, challenge;
        } expect[] = {
                { "tbuser", TRUE, FALSE },
                { "tbadmin", TRUE, FALSE },
                { "tbother", FALSE, FALSE },
                { "tbchallenge", FALSE, TRUE },
        };

        for (size_t i = 0; i < G_N_ELEMENTS(expect); i++) {
                ClientSpec spec = { .user = expect[i].user, .op = OP_HOLD_NAME, .output_fd = -1 };
                g_autoptr(GVariant) reply = NULL;
                g_autoptr(GError) error = NULL;
                g_autofree char *name = NULL, *err = NULL;
                GVariantBuilder subject;
                gboolean authorized, challenge;
                Client c;

                client_spawn(&spec, &c);
                name = client_expect(&c, 'N', 10000, &err);
                if (!name)
                        g_error("%s could not connect to the bus: %s", expect[i].user, err);
                g_variant_builder_init(&subject, G_VARIANT_TYPE("a{sv}"));
                g_variant_builder_add(&subject, "{sv}", "name", g_variant_new_string(name));
                reply = g_dbus_connection_call_sync(
                                tb_bus()->conn, "org.freedesktop.PolicyKit1", "/org/freedesktop/PolicyKit1/Authority",
                                "org.freedesktop.PolicyKit1.Authority", "CheckAuthorization",
                                g_variant_new("((sa{sv})sa{ss}us)", "system-bus-name", &subject, "org.tracebus.record",
                                              NULL, (guint32) 0, ""),
                                G_VARIANT_TYPE("((bba{ss}))"), G_DBUS_CALL_FLAGS_NONE, 10000, NULL, &error);
                g_assert_no_error(error);
                g_variant_get(reply, "((bb@a{ss}))", &authorized, &challenge, NULL);
                note("polkit org.tracebus.record for %s (%s): authorized=%d challenge=%d\n", expect[i].user, name,
                     authorized, challenge);
                client_finish(&c, 5000);
                g_assert_cmpint(authorized, ==, expect[i].authorized);
                g_assert_cmpint(challenge, ==, expect[i].challenge);
        }
}

/* (a) tbuser records with the CLI while a known busy process runs. */
static void test_cli_record(void) {
        g_autofree char *cli = cli_path();
        g_autofree char *dir = make_user_dir("tbuser", "out-cli");
        g_autofree char *out = g_build_filename(dir, "trace.pftrace", NULL);
        g_autofree char *decoded = NULL;
        const char *argv[] = { cli, "-t", "2s", "-o", out, "sched/sched_switch", "sched/sched_waking", NULL };
        g_auto(TbCommandResult) res = { 0 };
        g_auto(TbTraceSummary) s = { 0 };
        g_autoptr(GError) error = NULL;
        g_auto(GStrv) before = own_instances(), after = NULL;
        TbBusy busy;
        struct stat st;

        g_assert_true(tb_busy_start("tbbusy-cli", &busy, &error));
        g_assert_true(tb_run_as_user("tbuser", argv, &res, &error));
        tb_busy_stop(&busy);
        g_assert_no_error(error);
        log_command("tracebus -t 2s as tbuser", &res);
        g_assert_true(tb_command_succeeded(&res));

        g_assert_cmpint(stat(out, &st), ==, 0);
        g_assert_true(S_ISREG(st.st_mode));
        g_assert_cmpint(st.st_size, >, 0);
        summarise(out, &s);
        assert_trace_complete(&s);
        assert_busy_seen(&s, &busy);

        /* An independent decoder agrees: protoc with our .proto files. */
        g_assert_true(tb_trace_protoc_decode(tb_bus()->source_dir, out, &decoded, &error));
        g_assert_no_error(error);
        g_assert_true(strstr(decoded, "sched_switch") || strstr(decoded, "compact_sched"));
        g_assert_nonnull(strstr(decoded, "tracing_started: true"));

        after = own_instances();
        g_assert_cmpuint(g_strv_length(after), ==, g_strv_length(before));
}

/* (a2) The CLI with a config file in text format. */
static void test_cli_config_file(void) {
        g_autofree char *cli = cli_path();
        g_autofree char *dir = make_user_dir("tbuser", "out-cli-config");
        g_autofree char *cfg = g_build_filename(dir, "config.pbtxt", NULL);
        g_autofree char *out = g_build_filename(dir, "trace.pftrace", NULL);
        g_autofree char *text = config_text(1500);
        const char *argv[] = { cli, "-c", cfg, "--txt", "-o", out, NULL };
        g_auto(TbCommandResult) res = { 0 };
        g_auto(TbTraceSummary) s = { 0 };
        g_autoptr(GError) error = NULL;
        g_auto(TbUser) u = { 0 };
        TbBusy busy;

        g_assert_true(g_file_set_contents(cfg, text, -1, &error));
        g_assert_true(tb_user_lookup("tbuser", &u, NULL));
        g_assert_cmpint(chown(cfg, u.uid, u.gid), ==, 0);
        g_assert_true(tb_busy_start("tbbusy-cfg", &busy, &error));
        g_assert_true(tb_run_as_user("tbuser", argv, &res, &error));
        tb_busy_stop(&busy);
        log_command("tracebus -c config.pbtxt --txt as tbuser", &res);
        g_assert_true(tb_command_succeeded(&res));
        summarise(out, &s);
        assert_trace_complete(&s);
        assert_busy_seen(&s, &busy);
}

/* (a3) The CLI, refused: non-zero exit and a single line on stderr. */
static void test_cli_denied(void) {
        g_autofree char *cli = cli_path();
        g_autofree char *dir = make_user_dir("tbother", "out-cli-denied");
        g_autofree char *out = g_build_filename(dir, "trace.pftrace", NULL);
        const char *argv[] = { cli, "-t", "1s", "-o", out, "sched/sched_switch", NULL };
        g_auto(TbCommandResult) res = { 0 };
        g_autoptr(GError) error = NULL;
        g_autofree char *err = NULL;

        g_assert_true(tb_run_as_user("tbother", argv, &res, &error));
        log_command("tracebus as tbother", &res);
        g_assert_true(WIFEXITED(res.wait_status));
        g_assert_cmpint(WEXITSTATUS(res.wait_status), !=, 0);
        err = g_strstrip(g_strdup(res.err ? res.err : ""));
        g_assert_cmpstr(err, !=, "");
        g_assert_null(strchr(err, '\n'));
}

/* (b1) tbuser with plain busctl: Start, then Stop. busctl leaves the bus
 * right after Start; a session writing into the trace directory starts
 * detached, so it keeps recording until Stop, whose OutputPath is a new file
 * of tbuser's in STATE_DIRECTORY/traces/<uid>/. */
static void test_busctl_service_file(void) {
        g_autofree char *config = config_text(20000);
        const char *start_argv[] = { "busctl", "--system", "call", TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_IFACE,
                                     "Start", "sa{sv}", config, "0", NULL };
        g_autoptr(GError) error = NULL;
        g_autoptr(GHashTable) st = NULL;
        g_auto(GStrv) tok = NULL, inst = NULL, files = NULL;
        g_autofree char *state = NULL, *created = NULL;
        g_auto(TbUser) u = { 0 };
        const char *path, *file;
        TbBusy busy;

        g_assert_true(tb_user_lookup("tbuser", &u, NULL));
        snapshot_state(&inst, &files);
        g_assert_true(tb_busy_start("tbbusy-ctl", &busy, &error));
        tok = busctl_start(start_argv, "busctl Start as tbuser");
        g_assert_cmpstr(tok[0], ==, "oas");
        path = tok[1];
        g_assert_true(g_variant_is_object_path(path));
        g_assert_true(g_str_has_prefix(path, TB_MANAGER_PATH "/session/"));

        g_usleep(500 * 1000);
        state = tb_session_state(tb_bus()->conn, path, &error);
        g_assert_no_error(error);
        g_assert_cmpstr(state, ==, "recording");
        st = busctl_stop(path, &busy);
        file = g_hash_table_lookup(st, "OutputPath");
        {
                g_auto(GStrv) now = own_instances(), added = tb_strv_added(inst, now);
                g_assert_cmpuint(g_strv_length(added), ==, 0);
        }

        /* It is the one new file, and the service made it for tbuser. */
        created = new_trace_file(files);
        g_assert_cmpstr(created, ==, file);
        assert_user_trace(file, u.uid, &busy);
}

/* (b2) tbuser keeps the connection, then stops: Stop's OutputPath is the
 * file the service chose, and matches the session's OutputPath property. */
static void test_stop_output_path(void) {
        g_autofree char *path = NULL, *err = NULL, *state = NULL;
        g_autoptr(GHashTable) st = NULL;
        g_autoptr(GVariant) prop = NULL;
        g_autoptr(GError) error = NULL;
        g_auto(TbTraceSummary) s = { 0 };
        g_auto(TbUser) u = { 0 };
        const char *file;
        ClientSpec holder = { .user = "tbuser", .op = OP_START, .events = sched_events, .duration_ms = 60000,
                              .output_fd = -1, .hold = true };
        TbBusy busy;
        Client c;

        g_assert_true(tb_user_lookup("tbuser", &u, NULL));
        g_assert_true(tb_busy_start("tbbusy-path", &busy, &error));
        client_spawn(&holder, &c);
        path = client_expect(&c, 'O', 30000, &err);
        if (!path)
                g_error("tbuser's Start failed: %s", err);
        state = wait_state(path, "recording", 10000);
        g_assert_cmpstr(state, ==, "recording");
        prop = tb_get_property(tb_bus()->conn, path, TB_SESSION_IFACE, "OutputPath", &error);
        g_assert_no_error(error);
        g_usleep(500 * 1000);

        st = stop_held(&c, &busy);
        file = g_hash_table_lookup(st, "OutputPath");
        g_assert_nonnull(file);
        g_assert_cmpstr(g_variant_get_string(prop, NULL), ==, file);
        g_assert_cmpstr(g_hash_table_lookup(st, "Reason"), ==, "stopped");
        assert_service_file(file, u.uid);
        summarise(file, &s);
        assert_trace_complete(&s);
        assert_busy_seen(&s, &busy);
}

/* (b3) busctl with DetachKey: the session outlives busctl's connection, and
 * a later busctl Stop returns OutputPath: the service's file for tbuser. */
static void test_busctl_detached(void) {
        g_autofree char *config = config_text(30000);
        const char *start_argv[] = { "busctl", "--system", "call", TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_IFACE,
                                     "Start", "sa{sv}", config, "1", "DetachKey", "s", "tb-detach-1", NULL };
        const char *is_argv[] = { "busctl", "--system", "call", TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_IFACE,
                                  "IsDetached", "s", "tb-detach-1", NULL };
        g_auto(TbCommandResult) isdet = { 0 };
        g_autoptr(GError) error = NULL;
        g_autoptr(GHashTable) st = NULL;
        g_autoptr(GVariant) detached = NULL;
        g_auto(GStrv) tok = NULL;
        g_autofree char *state = NULL;
        g_auto(TbUser) u = { 0 };
        TbBusy busy;
        const char *path;

        g_assert_true(tb_user_lookup("tbuser", &u, NULL));
        g_assert_true(tb_busy_start("tbbusy-det", &busy, &error));
        tok = busctl_start(start_argv, "busctl Start (DetachKey) as tbuser");
        path = tok[1];

        /* busctl is gone; the session is not. */
        g_usleep(500 * 1000);
        state = tb_session_state(tb_bus()->conn, path, &error);
        g_assert_no_error(error);
        g_assert_cmpstr(state, ==, "recording");
        detached = tb_get_property(tb_bus()->conn, path, TB_SESSION_IFACE, "Detached", &error);
        g_assert_no_error(error);
        g_assert_true(g_variant_get_boolean(detached));
        g_assert_true(tb_run_as_user("tbuser", is_argv, &isdet, &error));
        log_command("busctl IsDetached as tbuser", &isdet);
        g_assert_true(tb_command_succeeded(&isdet));
        g_assert_cmpstr(g_strstrip(isdet.out), ==, "b true");

        st = busctl_stop(path, &busy);
        assert_user_trace(g_hash_table_lookup(st, "OutputPath"), u.uid, &busy);
}

/* (c) tbother may not record: AccessDenied, and nothing is created. */
static void test_denied(void) {
        g_auto(GStrv) inst = NULL, files = NULL;
        g_autofree char *config = config_text(1000);
        ClientSpec with_options = { .user = "tbother", .op = OP_START, .events = sched_events,
                                    .duration_ms = 1000, .output_fd = -1 };
        ClientSpec with_config = { .user = "tbother", .op = OP_START, .config = config, .output_fd = -1 };
        g_autofree char *e1 = NULL, *e2 = NULL;

        snapshot_state(&inst, &files);
        e1 = client_run(&with_options, NULL);
        e2 = client_run(&with_config, NULL);
        g_assert_cmpstr(e1, ==, ERR_ACCESS_DENIED);
        g_assert_cmpstr(e2, ==, ERR_ACCESS_DENIED);
        assert_nothing_created(inst, files);
}

/* (d) A polkit challenge on a call that does not allow interactive auth. */
static void test_challenge(void) {
        g_auto(GStrv) inst = NULL, files = NULL;
        ClientSpec spec = { .user = "tbchallenge", .op = OP_START, .events = sched_events, .duration_ms = 1000,
                            .output_fd = -1, .interactive = false };
        g_autofree char *e = NULL;

        snapshot_state(&inst, &files);
        e = client_run(&spec, NULL);
        g_assert_cmpstr(e, ==, ERR_INTERACTIVE);
        assert_nothing_created(inst, files);
}

/* (e) tbother cannot stop tbuser's session; tbuser can. */
static void test_stop_other_uid(void) {
        g_autofree char *out_path = NULL, *path = NULL, *err = NULL, *state = NULL;
        g_autofree char *e1 = NULL, *e2 = NULL;
        g_auto(GStrv) before = own_instances(), during = NULL, mine = NULL;
        g_autoptr(GHashTable) st = NULL;
        g_autoptr(GVariant) owner = NULL;
        g_auto(TbTraceSummary) s = { 0 };
        g_auto(TbUser) u = { 0 };
        g_autoptr(GError) error = NULL;
        int fd = open_output("stop-other.pftrace", &out_path);
        ClientSpec holder = { .user = "tbuser", .op = OP_START, .events = sched_events, .duration_ms = 60000,
                              .output_fd = fd, .hold = true };
        TbBusy busy;
        Client c;

        g_assert_true(tb_user_lookup("tbuser", &u, NULL));
        g_assert_true(tb_busy_start("tbbusy-stop", &busy, &error));
        client_spawn(&holder, &c);
        close(fd);
        path = client_expect(&c, 'O', 30000, &err);
        if (!path)
                g_error("tbuser's Start failed: %s", err);
        note("tbuser's session: %s\n", path);
        state = wait_state(path, "recording", 10000);
        g_assert_cmpstr(state, ==, "recording");
        owner = tb_get_property(tb_bus()->conn, path, TB_SESSION_IFACE, "OwnerUid", &error);
        g_assert_no_error(error);
        g_assert_cmpuint(g_variant_get_uint32(owner), ==, u.uid);
        during = own_instances();
        mine = tb_strv_added(before, during);
        g_assert_cmpuint(g_strv_length(mine), ==, 1);
        g_assert_true(g_str_has_prefix(mine[0], "tracebus-"));

        {
                ClientSpec via_manager = { .user = "tbother", .op = OP_STOP_MANAGER, .path = path, .output_fd = -1 };
                ClientSpec via_session = { .user = "tbother", .op = OP_STOP_SESSION, .path = path, .output_fd = -1 };
                e1 = client_run(&via_manager, NULL);
                e2 = client_run(&via_session, NULL);
        }
        /* Another user's session answers as no session would: NoSuchSession from the
         * Manager, and its path is no object for tbother. */
        g_assert_cmpstr(e1, ==, ERR_NO_SUCH_SESSION);
        g_assert_cmpstr(e2, ==, "org.freedesktop.DBus.Error.UnknownObject");
        g_free(state);
        state = tb_session_state(tb_bus()->conn, path, &error);
        g_assert_no_error(error);
        g_assert_cmpstr(state, ==, "recording");
        {
                g_autofree char *inst = g_build_filename(TB_INSTANCES_DIR, mine[0], NULL);
                g_assert_true(g_file_test(inst, G_FILE_TEST_IS_DIR));
        }

        /* The owner stops it. */
        g_usleep(300 * 1000);
        st = stop_held(&c, &busy);
        g_assert_nonnull(g_hash_table_lookup(st, "Events"));
        g_assert_nonnull(g_hash_table_lookup(st, "Bytes"));
        g_assert_nonnull(g_hash_table_lookup(st, "EventsLost"));
        g_assert_cmpstr(g_hash_table_lookup(st, "Reason"), ==, "stopped");
        /* The caller chose the output (an fd): no OutputPath. */
        g_assert_null(g_hash_table_lookup(st, "OutputPath"));
        g_assert_cmpuint(g_ascii_strtoull(g_hash_table_lookup(st, "Events"), NULL, 10), >, 0);

        g_assert_true(tb_wait_session_over(tb_bus()->conn, path, mine, 10000, &error));
        g_assert_no_error(error);
        summarise(out_path, &s);
        assert_trace_complete(&s);
        assert_busy_seen(&s, &busy);
}

/* (e2) tbadmin holds org.tracebus.manage: it may stop tbuser's session. */
static void test_admin_stops_other(void) {
        g_autofree char *out_path = NULL, *path = NULL, *err = NULL, *state = NULL, *stats = NULL;
        g_autofree char *e = NULL;
        g_autoptr(GHashTable) st = NULL;
        g_auto(TbTraceSummary) s = { 0 };
        g_autoptr(GError) error = NULL;
        int fd = open_output("admin-stop.pftrace", &out_path);
        ClientSpec holder = { .user = "tbuser", .op = OP_START, .events = sched_events, .duration_ms = 60000,
                              .output_fd = fd, .hold = true };
        Client c;

        client_spawn(&holder, &c);
        close(fd);
        path = client_expect(&c, 'O', 30000, &err);
        if (!path)
                g_error("tbuser's Start failed: %s", err);
        state = wait_state(path, "recording", 10000);
        g_assert_cmpstr(state, ==, "recording");
        g_usleep(300 * 1000);
        {
                ClientSpec admin = { .user = "tbadmin", .op = OP_STOP_MANAGER, .path = path, .output_fd = -1 };
                e = client_run(&admin, &stats);
        }
        g_assert_null(e);
        note("tbadmin's Stop stats:%s\n", stats);
        st = parse_stats(stats);
        g_assert_nonnull(g_hash_table_lookup(st, "Events"));
        g_assert_true(tb_wait_session_over(tb_bus()->conn, path, NULL, 10000, &error));
        g_assert_no_error(error);
        client_finish(&c, 5000);
        summarise(out_path, &s);
        assert_trace_complete(&s);
}

/* (f) The client is killed with SIGKILL while recording. */
static void test_client_killed(void) {
        g_autofree char *out_path = NULL, *path = NULL, *err = NULL, *state = NULL;
        g_auto(GStrv) before = own_instances(), during = NULL, mine = NULL;
        g_auto(TbTraceSummary) s = { 0 };
        g_autoptr(GError) error = NULL;
        int fd = open_output("killed.pftrace", &out_path), status;
        ClientSpec holder = { .user = "tbuser", .op = OP_START, .events = sched_events, .duration_ms = 60000,
                              .output_fd = fd, .hold = true };
        TbBusy busy;
        Client c;
        struct stat st1, st2;

        g_assert_true(tb_busy_start("tbbusy-kill", &busy, &error));
        client_spawn(&holder, &c);
        close(fd);
        path = client_expect(&c, 'O', 30000, &err);
        if (!path)
                g_error("tbuser's Start failed: %s", err);
        state = wait_state(path, "recording", 10000);
        g_assert_cmpstr(state, ==, "recording");
        during = own_instances();
        mine = tb_strv_added(before, during);
        g_assert_cmpuint(g_strv_length(mine), ==, 1);
        note("session %s, instance %s; killing the client\n", path, mine[0]);

        g_usleep(1000 * 1000);
        g_assert_cmpint(kill(c.pid, SIGKILL), ==, 0);
        status = client_finish(&c, 5000);
        g_assert_true(WIFSIGNALED(status));

        g_assert_true(tb_wait_session_over(tb_bus()->conn, path, mine, 15000, &error));
        g_assert_no_error(error);
        tb_busy_stop(&busy);
        /* Complete means nothing is appended any more, too. */
        g_assert_cmpint(stat(out_path, &st1), ==, 0);
        g_usleep(300 * 1000);
        g_assert_cmpint(stat(out_path, &st2), ==, 0);
        g_assert_cmpint(st1.st_size, ==, st2.st_size);
        summarise(out_path, &s);
        assert_trace_complete(&s);
        assert_busy_seen(&s, &busy);
}

/* (g) Bad input gets the named errors: an Events list of which nothing exists (a typo),
 * a config whose data source names a buffer it lacks. (A TraceConfig whose events are all
 * missing here starts, as Perfetto's does: test-sessions-warnings.) */
static void test_bad_input(void) {
        g_auto(GStrv) inst = NULL, files = NULL;
        const char *const unknown[] = { "sched/no_such_event", NULL };
        const char *bad_target_config = "duration_ms: 1000 data_sources { config { name: \"linux.ftrace\" "
                                        "target_buffer: 5 ftrace_config { ftrace_events: \"sched/sched_switch\" } } }";
        ClientSpec bad_config = { .user = "tbuser", .op = OP_START, .config = "this is { not a TraceConfig",
                                  .output_fd = -1 };
        ClientSpec bad_event = { .user = "tbuser", .op = OP_START, .events = unknown, .duration_ms = 1000,
                                 .output_fd = -1 };
        ClientSpec bad_event_config = { .user = "tbuser", .op = OP_START, .config = bad_target_config,
                                        .output_fd = -1 };
        g_autofree char *e1 = NULL, *e2 = NULL, *e3 = NULL;

        snapshot_state(&inst, &files);
        e1 = client_run(&bad_config, NULL);
        e2 = client_run(&bad_event, NULL);
        e3 = client_run(&bad_event_config, NULL);
        g_assert_cmpstr(e1, ==, ERR_INVALID_CONFIG);
        g_assert_cmpstr(e2, ==, ERR_UNKNOWN_EVENT);
        g_assert_cmpstr(e3, ==, ERR_INVALID_CONFIG);
        assert_nothing_created(inst, files);
}

/* (h) After everything: the service still runs and left no instance (of its
 * own: other test runs on the machine may have some). */
static void test_service_survived(void) {
        assert_service_left_nothing();
}

/* In the parent, last (assertions are non-fatal here): SIGTERM while a
 * session records makes the service finalize it and exit cleanly. */
static void test_shutdown(void) {
        g_autofree char *out_path = NULL, *path = NULL, *err = NULL, *state = NULL, *desc = NULL, *st_str = NULL;
        g_auto(GStrv) inst = NULL;
        g_auto(TbTraceSummary) s = { 0 };
        g_autoptr(GError) error = NULL;
        int fd = open_output("shutdown.pftrace", &out_path), status;
        GPid service_pid;
        ClientSpec holder = { .user = "tbuser", .op = OP_START, .events = sched_events, .duration_ms = 60000,
                              .output_fd = fd, .hold = true };
        Client c;

        client_spawn(&holder, &c);
        close(fd);
        path = client_expect(&c, 'O', 30000, &err);
        if (!path)
                note("tbuser's Start failed: %s\n", err);
        g_assert_nonnull(path);
        if (path) {
                state = wait_state(path, "recording", 10000);
                g_assert_cmpstr(state, ==, "recording");
                g_usleep(500 * 1000);
        }

        service_pid = tb_bus()->service_pid;
        status = tb_system_bus_stop_service(tb_bus(), 30000);
        st_str = tb_wait_status_to_string(status);
        g_printerr("# tracebusd after SIGTERM with a session recording: %s\n", st_str);
        g_assert_true(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
        client_finish(&c, 5000);

        /* Its own instances: other test runs on the machine may have some. */
        inst = instances_of_pid(service_pid);
        for (size_t i = 0; inst[i]; i++)
                note("left-over instance: %s\n", inst[i]);
        g_assert_cmpuint(g_strv_length(inst), ==, 0);

        if (path) {
                if (tb_trace_file_read(out_path, &s, &error)) {
                        desc = tb_trace_summary_describe(&s);
                        note("%s: %s\n", out_path, desc);
                        g_assert_true(s.has_clock_snapshot && s.has_tracing_started);
                        g_assert_cmpuint(s.n_sched_switch + s.n_compact_switch, >, 0);
                } else {
                        note("trace of the session cut by SIGTERM does not decode: %s\n", error->message);
                        g_assert_not_reached();
                }
        }
        if (g_test_failed())
                tb_test_note_failure();
}

int main(int argc, char **argv) {
        bool service = !g_getenv("TRACEBUS_TEST_NO_SERVICE");

        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();

        tb_test_add_isolated("/bus/integration/harness-polkit", test_harness_polkit);
        if (service) {
                tb_test_add_isolated("/bus/integration/a-cli-record", test_cli_record);
                tb_test_add_isolated("/bus/integration/a-cli-config-file", test_cli_config_file);
                tb_test_add_isolated("/bus/integration/a-cli-denied", test_cli_denied);
                tb_test_add_isolated("/bus/integration/b-busctl-service-file", test_busctl_service_file);
                tb_test_add_isolated("/bus/integration/b-stop-output-path", test_stop_output_path);
                tb_test_add_isolated("/bus/integration/b-busctl-detached", test_busctl_detached);
                tb_test_add_isolated("/bus/integration/c-denied", test_denied);
                tb_test_add_isolated("/bus/integration/d-challenge", test_challenge);
                tb_test_add_isolated("/bus/integration/e-stop-other-uid", test_stop_other_uid);
                tb_test_add_isolated("/bus/integration/e-admin-stops-other", test_admin_stops_other);
                tb_test_add_isolated("/bus/integration/f-client-killed", test_client_killed);
                tb_test_add_isolated("/bus/integration/g-bad-input", test_bad_input);
                tb_test_add_isolated("/bus/integration/h-service-survived", test_service_survived);
                g_test_add_func("/bus/integration/z-shutdown", test_shutdown);
        }
        return tb_test_run(service ? TB_START_SERVICE : 0);
}
