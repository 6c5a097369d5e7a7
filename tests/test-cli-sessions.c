/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite: the tracebus command line against the real service, polkitd and
 * dbus-daemon (tests/system-bus.h), run as the test users: --query,
 * --list-events, --stop-all and --stop on sessions, the polkit agent at a
 * terminal, and the progress line. The helpers are in tests/cli-util.h.
 *
 * What tests/polkit-rules/50-tracebus-test.rules says about
 * org.tracebus.record: tbuser YES, tbadmin YES (and org.tracebus.manage),
 * tbchallenge AUTH_ADMIN, tbother NO.
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

#include "cli-util.h"

/* ===================================================================== */
/* Sessions and events                                                    */
/* ===================================================================== */

static void detach_session(const char *user, const char *key, const char *cfg, const char *out) {
        g_autofree char *opt = g_strdup_printf("--detach=%s", key);
        g_auto(TbCommandResult) res = { 0 };

        run_cli(user, &res, opt, "-c", cfg, "--txt", "-o", out, NULL);
        assert_exit(&res, 0);
}

/* --query (table, --long, --json): the caller's sessions, never another user's. */
static void test_query(void) {
        g_autofree char *dir = make_user_dir("tbuser", "cli-query");
        g_autofree char *text = config_text(60000);
        g_autofree char *cfg = user_file("tbuser", dir, "config.pbtxt", text, -1);
        g_autofree char *out1 = g_build_filename(dir, "one.pftrace", NULL);
        g_autofree char *out2 = g_build_filename(dir, "two.pftrace", NULL);
        g_auto(TbCommandResult) table = { 0 }, lng = { 0 }, json = { 0 }, admin = { 0 }, empty = { 0 };
        g_auto(GStrv) sessions = NULL;
        g_autofree char *id0 = NULL, *id1 = NULL;

        detach_session("tbuser", "tb-q1", cfg, out1);
        detach_session("tbuser", "tb-q2", cfg, out2);
        sessions = sessions_of(tb_user_uid("tbuser"));
        g_assert_cmpuint(g_strv_length(sessions), ==, 2);
        id0 = g_path_get_basename(sessions[0]);
        id1 = g_path_get_basename(sessions[1]);
        g_usleep(1200 * 1000);

        run_cli("tbuser", &table, "--query", NULL);
        assert_exit(&table, 0);
        g_assert_nonnull(strstr(table.out, "STATE"));
        g_assert_nonnull(strstr(table.out, "recording"));
        {
                g_auto(GStrv) lines = g_strsplit(table.out, "\n", -1);
                guint rows = 0;
                for (size_t i = 0; lines[i]; i++)
                        if (g_str_has_prefix(lines[i], id0) || g_str_has_prefix(lines[i], id1))
                                rows++;
                g_assert_cmpuint(rows, ==, 2);
        }
        run_cli("tbuser", &lng, "--query", "--long", NULL);
        assert_exit(&lng, 0);
        g_assert_nonnull(strstr(lng.out, "events:  sched/sched_switch sched/sched_waking"));
        g_assert_nonnull(strstr(lng.out, "started: "));
        g_assert_nonnull(strstr(lng.out, sessions[0]));

        run_cli("tbuser", &json, "--query", "--json", NULL);
        assert_exit(&json, 0);
        assert_json(json.out);
        g_assert_nonnull(strstr(json.out, "\"state\": \"recording\""));
        g_assert_nonnull(strstr(json.out, sessions[0]));
        g_assert_nonnull(strstr(json.out, sessions[1]));
        g_assert_nonnull(strstr(json.out, "\"detached\": true"));
        g_assert_nonnull(strstr(json.out, "\"events\": [\"sched/sched_switch\", \"sched/sched_waking\"]"));

        /* tbadmin may list everyone's sessions, but --query shows only its own. */
        run_cli("tbadmin", &admin, "--query", "--json", NULL);
        assert_exit(&admin, 0);
        g_assert_cmpstr(g_strstrip(admin.out), ==, "{\"sessions\": [], \"producers\": []}");
        stop_all_of("tbuser");
        run_cli("tbuser", &empty, "--query", NULL);
        assert_exit(&empty, 0);
        g_assert_nonnull(strstr(empty.out, "No tracing sessions"));
}

/* --list-events [GLOB] and --json. */
static void test_list_events(void) {
        g_auto(TbCommandResult) all = { 0 }, glob = { 0 }, word = { 0 }, json = { 0 }, none = { 0 };
        g_auto(GStrv) lines = NULL;

        run_cli("tbuser", &all, "--list-events", NULL);
        assert_exit(&all, 0);
        lines = g_strsplit(all.out, "\n", -1);
        g_assert_true(g_strv_contains((const char *const *) lines, "sched/sched_switch"));
        g_assert_true(g_strv_contains((const char *const *) lines, "sched/sched_waking"));
        g_assert_cmpuint(g_strv_length(lines), >, 50);

        run_cli("tbuser", &glob, "--list-events=sched/sched_switc*", NULL);
        assert_exit(&glob, 0);
        g_assert_cmpstr(glob.out, ==, "sched/sched_switch\n");
        run_cli("tbuser", &word, "--list-events", "sched_switch", NULL);
        assert_exit(&word, 0);
        g_assert_cmpstr(word.out, ==, "sched/sched_switch\n");
        run_cli("tbuser", &json, "--list-events", "--json", "sched/sched_w*", NULL);
        assert_exit(&json, 0);
        assert_json(json.out);
        g_assert_true(g_str_has_prefix(json.out, "["));
        g_assert_nonnull(strstr(json.out, "\"sched/sched_waking\""));
        run_cli("tbuser", &none, "--list-events", "no_such_group/*", NULL);
        assert_exit(&none, 0);
        g_assert_cmpstr(none.out, ==, "");
        assert_stderr_has(&none, "no trace event matches");
}

/* --stop-all stops the caller's own sessions only, admins included, each complete. */
static void test_stop_all(void) {
        g_autofree char *dir = make_user_dir("tbuser", "cli-stopall");
        g_autofree char *text = config_text(60000);
        g_autofree char *cfg = user_file("tbuser", dir, "config.pbtxt", text, -1);
        g_autofree char *out1 = g_build_filename(dir, "one.pftrace", NULL);
        g_autofree char *out2 = g_build_filename(dir, "two.pftrace", NULL);
        g_auto(TbCommandResult) admin = { 0 }, mine = { 0 }, again = { 0 };
        g_auto(GStrv) sessions = NULL;

        detach_session("tbuser", "tb-sa1", cfg, out1);
        detach_session("tbuser", "tb-sa2", cfg, out2);
        g_usleep(500 * 1000);

        run_cli("tbadmin", &admin, "--stop-all", NULL);
        assert_exit(&admin, 0);
        assert_stderr_has(&admin, "No tracing sessions of yours to stop");
        g_assert_cmpuint(g_strv_length(sessions_of(tb_user_uid("tbuser"))), ==, 2);

        sessions = sessions_of(tb_user_uid("tbuser"));
        run_cli("tbuser", &mine, "--stop-all", NULL);
        assert_exit(&mine, 0);
        for (size_t i = 0; sessions[i]; i++) {
                g_autofree char *id = g_path_get_basename(sessions[i]);
                g_autofree char *line = g_strdup_printf("Session %s: trace written into", id);
                assert_stderr_has(&mine, line);
        }
        g_assert_cmpuint(g_strv_length(sessions_of(tb_user_uid("tbuser"))), ==, 0);
        /* Stop returned once the traces were complete. */
        assert_file_complete(out1);
        assert_file_complete(out2);
        run_cli("tbuser", &again, "--stop-all", NULL);
        assert_exit(&again, 0);
}

/* --stop-session: another user's session needs org.tracebus.manage; without it,
 * the session is answered for exactly as one that does not exist. */
static void test_stop_session(void) {
        g_autofree char *dir = make_user_dir("tbuser", "cli-stopsess");
        g_autofree char *text = config_text(60000);
        g_autofree char *cfg = user_file("tbuser", dir, "config.pbtxt", text, -1);
        g_autofree char *out = g_build_filename(dir, "trace.pftrace", NULL);
        g_auto(TbCommandResult) other = { 0 }, nothing = { 0 }, admin = { 0 }, gone = { 0 }, bad = { 0 };
        g_auto(GStrv) sessions = NULL;
        g_autofree char *id = NULL;

        detach_session("tbuser", "tb-ss", cfg, out);
        sessions = sessions_of(tb_user_uid("tbuser"));
        g_assert_cmpuint(g_strv_length(sessions), ==, 1);
        id = g_path_get_basename(sessions[0]);
        g_usleep(500 * 1000);

        run_cli("tbother", &other, "--stop-session", id, NULL);
        assert_exit(&other, 2);
        assert_one_line(&other);
        assert_stderr_has(&other, "no such tracing session");
        run_cli("tbother", &nothing, "--stop-session", "281474976710655", NULL);
        assert_exit(&nothing, 2);
        {
                g_autofree char *a = tb_str_replace(other.err, id, "ID");
                g_autofree char *b = tb_str_replace(nothing.err, "281474976710655", "ID");
                g_assert_cmpstr(a, ==, b);
        }
        run_cli("tbadmin", &admin, "--stop-session", sessions[0], NULL);
        assert_exit(&admin, 0);
        assert_stderr_has(&admin, "trace written into");
        assert_file_complete(out);
        run_cli("tbuser", &gone, "--stop-session", id, NULL);
        assert_exit(&gone, 2);
        run_cli("tbuser", &bad, "--stop-session", "soon", NULL);
        assert_exit(&bad, 1);
}

/* ===================================================================== */
/* Authorization at a terminal                                            */
/* ===================================================================== */

/* A stand-in for pkttyagent that says it ran, then closes its notify fd. */
static char *fake_agent(const char *dir, const char *marker) {
        g_autofree char *script = g_strdup_printf("#!/bin/sh\necho \"$@\" > %s\nexit 0\n", marker);
        char *path = g_build_filename(dir, "fake-agent", NULL);

        g_assert_true(g_file_set_contents(path, script, -1, NULL));
        g_assert_cmpint(chmod(path, 0755), ==, 0);
        return path;
}

/* tbchallenge without a terminal: no agent, the flag unset, and the reason in words. */
static void test_challenge_no_tty(void) {
        g_autofree char *dir = make_user_dir("tbchallenge", "cli-challenge");
        g_autofree char *bindir = g_build_filename(tb_bus()->tmpdir, "bin", NULL);
        g_autofree char *marker = g_build_filename(dir, "agent-ran", NULL);
        g_autofree char *agent = NULL;
        g_autofree char *env = NULL;
        g_autofree char *out = g_build_filename(dir, "trace.pftrace", NULL);
        g_autofree char *cli = cli_path();
        g_auto(TbCommandResult) res = { 0 };
        g_auto(Snapshot) before = { 0 };

        agent = fake_agent(bindir, marker);
        env = g_strdup_printf("TRACEBUS_POLKIT_AGENT=%s", agent);
        snapshot_take(&before);
        run_as("tbchallenge", (const char *[]) { "env", env, cli, "-t", "1s", "-o", out, "sched/sched_switch", NULL },
               &res);
        assert_exit(&res, 1);
        assert_stderr_has(&res, "authentication is required for polkit action org.tracebus.record");
        assert_stderr_has(&res, "stdin is not a terminal");
        assert_stderr_has(&res, "polkit.addRule(function(action, subject) {");
        assert_stderr_has(&res, "action.id == \"org.tracebus.record\" && subject.user == \"tbchallenge\"");
        g_assert_null(strstr(res.err, "org.freedesktop.DBus.Error"));
        g_assert_false(g_file_test(marker, G_FILE_TEST_EXISTS));
        assert_snapshot_unchanged(&before);
}

/* script(1) gives the command a terminal: stdin, stdout and stderr. */
static bool have_script(void) {
        g_autofree char *p = g_find_program_in_path("script");
        return p != NULL;
}

static char *shell_line(const char *const *argv) {
        GString *s = g_string_new(NULL);

        for (size_t i = 0; argv[i]; i++) {
                g_autofree char *q = g_shell_quote(argv[i]);
                g_string_append_printf(s, "%s%s", i ? " " : "", q);
        }
        return g_string_free(s, FALSE);
}

/* input: what is typed at the terminal (a line), or NULL. */
static void run_in_terminal(const char *user, const char *const *argv, const char *input, TbCommandResult *res) {
        g_autofree char *line = shell_line(argv);
        g_autofree char *quoted = g_shell_quote(line);
        g_autofree char *typed = g_shell_quote(input ? input : "");
        g_autofree char *sh = g_strdup_printf("printf '%%s\\n' %s | script -qec %s /dev/null", typed, quoted);
        const char *script[] = { "sh", "-c", sh, NULL };

        run_as(user, script, res);
}

/* At a terminal the agent runs for the call: with a stand-in agent it is spawned
 * (and, as it registers nothing, polkit still finds no agent). */
static void test_challenge_tty_agent_spawned(void) {
        g_autofree char *dir = make_user_dir("tbchallenge", "cli-challenge-tty");
        g_autofree char *bindir = g_build_filename(tb_bus()->tmpdir, "bin", NULL);
        g_autofree char *marker = g_build_filename(dir, "agent-ran", NULL);
        g_autofree char *agent = NULL, *env = NULL, *args = NULL;
        g_autofree char *out = g_build_filename(dir, "trace.pftrace", NULL);
        g_autofree char *cli = cli_path();
        g_auto(TbCommandResult) res = { 0 }, quiet = { 0 };
        g_auto(TbUser) u = { 0 };

        if (!have_script()) {
                g_test_skip("script(1) is not installed");
                return;
        }
        g_assert_true(tb_user_lookup("tbchallenge", &u, NULL));
        agent = fake_agent(bindir, marker);
        g_assert_cmpint(chown(dir, u.uid, u.gid), ==, 0);
        env = g_strdup_printf("TRACEBUS_POLKIT_AGENT=%s", agent);
        run_in_terminal("tbchallenge",
                        (const char *[]) { "env", env, cli, "-t", "1s", "-o", out, "sched/sched_switch", NULL }, NULL,
                        &res);
        g_assert_true(g_file_get_contents(marker, &args, NULL, NULL));
        note("the agent ran with: %s", args);
        g_assert_nonnull(strstr(args, "--notify-fd "));
        g_assert_nonnull(strstr(res.out, "no authentication agent took the request"));

        /* --no-ask-password: no agent, the flag unset. */
        g_assert_cmpint(unlink(marker), ==, 0);
        run_in_terminal("tbchallenge",
                        (const char *[]) { "env", env, cli, "--no-ask-password", "-t", "1s", "-o", out,
                                           "sched/sched_switch", NULL }, NULL, &quiet);
        g_assert_false(g_file_test(marker, G_FILE_TEST_EXISTS));
        g_assert_nonnull(strstr(quiet.out, "--no-ask-password was given"));
        g_assert_nonnull(strstr(quiet.out, "polkit.addRule"));
}

/* The real pkttyagent at a terminal asks for root's password; a wrong one is typed,
 * so polkit refuses. */
static void test_challenge_tty_pkttyagent(void) {
        g_autofree char *dir = make_user_dir("tbchallenge", "cli-challenge-pk");
        g_autofree char *out = g_build_filename(dir, "trace.pftrace", NULL);
        g_autofree char *cli = cli_path();
        g_auto(TbCommandResult) res = { 0 };

        if (!have_script() || access("/usr/bin/pkttyagent", X_OK) < 0) {
                g_test_skip("script(1) or pkttyagent is not installed");
                return;
        }
        run_in_terminal("tbchallenge", (const char *[]) { cli, "-t", "1s", "-o", out, "sched/sched_switch", NULL },
                        "not-the-password", &res);
        g_assert_nonnull(strstr(res.out, "AUTHENTICATING FOR org.tracebus.record"));
        g_assert_nonnull(strstr(res.out, "not authorized"));
        g_assert_cmpuint(g_strv_length(sessions_of(tb_user_uid("tbchallenge"))), ==, 0);
}

/* tbother is refused outright: one line, in words, naming the action. */
static void test_denied(void) {
        g_autofree char *dir = make_user_dir("tbother", "cli-denied");
        g_autofree char *out = g_build_filename(dir, "trace.pftrace", NULL);
        g_auto(TbCommandResult) res = { 0 };

        run_cli("tbother", &res, "-t", "1s", "-o", out, "sched/sched_switch", NULL);
        assert_exit(&res, 1);
        assert_one_line(&res);
        assert_stderr_has(&res, "not authorized: polkit refuses action org.tracebus.record to user tbother");
        g_assert_null(strstr(res.err, ERR_ACCESS_DENIED));
}

/* ===================================================================== */
/* Output for people                                                      */
/* ===================================================================== */

/* On a terminal a progress line is redrawn in place and cleared at the end; in a pipe, none. */
static void test_progress_line(void) {
        g_autofree char *dir = make_user_dir("tbuser", "cli-progress");
        g_autofree char *out = g_build_filename(dir, "tty.pftrace", NULL);
        g_autofree char *out2 = g_build_filename(dir, "pipe.pftrace", NULL);
        g_autofree char *cli = cli_path();
        g_auto(TbCommandResult) tty = { 0 }, pipe = { 0 };
        const char *p, *last, *written;

        if (!have_script()) {
                g_test_skip("script(1) is not installed");
                return;
        }
        run_in_terminal("tbuser", (const char *[]) { cli, "-t", "3s", "-o", out, "sched/sched_switch", NULL }, NULL,
                        &tty);
        assert_exit(&tty, 0);
        p = strstr(tty.out, "\r\033[KRecording ");
        g_assert_nonnull(p);
        g_assert_nonnull(strstr(p, " events, "));
        g_assert_nonnull(strstr(p, " lost"));
        g_assert_nonnull(strstr(p, " of 3.0s"));
        /* Redrawn more than once, then cleared before the final line. */
        g_assert_nonnull(strstr(p + 1, "\r\033[KRecording "));
        written = strstr(tty.out, "Trace written into");
        g_assert_nonnull(written);
        last = g_strrstr(tty.out, "\r\033[K");
        g_assert_true(last < written);
        g_assert_true(written - last == 4);
        assert_file_complete(out);

        run_cli("tbuser", &pipe, "-t", "2s", "-o", out2, "sched/sched_switch", NULL);
        assert_exit(&pipe, 0);
        g_assert_null(strchr(pipe.err, '\r'));
        g_assert_null(strstr(pipe.err, "\033["));
}

int main(int argc, char **argv) {
        /* Children must never find a terminal on stdin unless a case gives them one. */
        if (!freopen("/dev/null", "r", stdin))
                return EXIT_FAILURE;
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();

        tb_test_add_isolated("/bus/cli/sessions/query", test_query);
        tb_test_add_isolated("/bus/cli/sessions/list-events", test_list_events);
        tb_test_add_isolated("/bus/cli/sessions/stop-all", test_stop_all);
        tb_test_add_isolated("/bus/cli/sessions/stop-session", test_stop_session);
        tb_test_add_isolated("/bus/cli/polkit/denied", test_denied);
        tb_test_add_isolated("/bus/cli/polkit/challenge-no-tty", test_challenge_no_tty);
        tb_test_add_isolated("/bus/cli/polkit/challenge-tty-agent", test_challenge_tty_agent_spawned);
        tb_test_add_isolated("/bus/cli/polkit/challenge-tty-pkttyagent", test_challenge_tty_pkttyagent);
        tb_test_add_isolated("/bus/cli/output/progress-line", test_progress_line);
        return tb_test_run(TB_START_SERVICE);
}
