/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite: the tracebus command line against the real service, polkitd and
 * dbus-daemon (tests/system-bus.h), run as the test users: detached sessions
 * and the exit codes of --is_detached, -D waiting, and Ctrl-C or SIGTERM while
 * recording. The helpers are in tests/cli-util.h.
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
/* Detached sessions                                                      */
/* ===================================================================== */

/* --is_detached: 0 yes, 2 no, 1 error; --attach of a missing key: 2. */
static void test_is_detached_exit_codes(void) {
        g_autofree char *dir = make_user_dir("tbuser", "cli-isdet");
        g_autofree char *text = config_text(60000);
        g_autofree char *cfg = user_file("tbuser", dir, "config.pbtxt", text, -1);
        g_autofree char *out = g_build_filename(dir, "trace.pftrace", NULL);
        g_autofree char *long_key = g_strnfill(65, 'k');
        g_autofree char *long_opt = g_strdup_printf("--is_detached=%s", long_key);
        g_autofree char *cli = cli_path();
        g_auto(TbCommandResult) start = { 0 }, yes = { 0 }, no = { 0 }, other = { 0 }, bad = { 0 }, nobus = { 0 };
        g_auto(TbCommandResult) attach_missing = { 0 }, stop = { 0 }, after = { 0 }, stop_missing = { 0 };

        run_cli("tbuser", &start, "--detach=tb-key-1", "-c", cfg, "--txt", "-o", out, NULL);
        assert_exit(&start, 0);
        assert_stderr_has(&start, "tb-key-1");

        run_cli("tbuser", &yes, "--is_detached=tb-key-1", NULL);
        assert_exit(&yes, 0);
        g_assert_cmpstr(yes.err, ==, "");
        run_cli("tbuser", &no, "--is_detached=tb-key-2", NULL);
        assert_exit(&no, 2);
        /* Keys are per user: tbadmin has no session under tbuser's key. */
        run_cli("tbadmin", &other, "--is_detached=tb-key-1", NULL);
        assert_exit(&other, 2);
        run_cli("tbuser", &bad, long_opt, NULL);
        assert_exit(&bad, 1);
        run_as("tbuser", (const char *[]) { "env", "DBUS_SYSTEM_BUS_ADDRESS=unix:path=/nonexistent", cli,
                                            "--is_detached=tb-key-1", NULL }, &nobus);
        assert_exit(&nobus, 1);
        assert_stderr_has(&nobus, "cannot connect to the system bus");

        run_cli("tbuser", &attach_missing, "--attach=tb-key-2", NULL);
        assert_exit(&attach_missing, 2);
        assert_stderr_has(&attach_missing, "Session re-attach failed");
        run_cli("tbuser", &stop_missing, "--attach=tb-key-2", "--stop", NULL);
        assert_exit(&stop_missing, 2);

        run_cli("tbuser", &stop, "--attach=tb-key-1", "--stop", NULL);
        assert_exit(&stop, 0);
        assert_stderr_has(&stop, "Trace written into");
        assert_file_complete(out);
        run_cli("tbuser", &after, "--is_detached=tb-key-1", NULL);
        assert_exit(&after, 2);
}

/* A second --detach under a key in use fails (1); the first session stays. */
static void test_detach_duplicate(void) {
        g_autofree char *dir = make_user_dir("tbuser", "cli-dup");
        g_autofree char *text = config_text(60000);
        g_autofree char *cfg = user_file("tbuser", dir, "config.pbtxt", text, -1);
        g_autofree char *out1 = g_build_filename(dir, "one.pftrace", NULL);
        g_autofree char *out2 = g_build_filename(dir, "two.pftrace", NULL);
        g_auto(TbCommandResult) r1 = { 0 }, r2 = { 0 }, check = { 0 }, stop = { 0 };

        run_cli("tbuser", &r1, "--detach=tb-dup", "-c", cfg, "--txt", "-o", out1, NULL);
        assert_exit(&r1, 0);
        run_cli("tbuser", &r2, "--detach=tb-dup", "-c", cfg, "--txt", "-o", out2, NULL);
        assert_exit(&r2, 1);
        assert_one_line(&r2);
        assert_stderr_has(&r2, "detached under the key 'tb-dup'");
        run_cli("tbuser", &check, "--is_detached=tb-dup", NULL);
        assert_exit(&check, 0);
        g_assert_cmpuint(g_strv_length(sessions_of(tb_user_uid("tbuser"))), ==, 1);
        run_cli("tbuser", &stop, "--attach=tb-dup", "--stop", NULL);
        assert_exit(&stop, 0);
        assert_file_complete(out1);
}

/* --detach without -o: the service writes into its trace directory, and says where. */
static void test_detach_service_file(void) {
        g_autofree char *dir = make_user_dir("tbuser", "cli-detdir");
        g_autofree char *text = config_text(60000);
        g_autofree char *cfg = user_file("tbuser", dir, "config.pbtxt", text, -1);
        g_autofree char *tdir = traces_dir();
        g_autofree char *prefix = g_strdup_printf("%s/%u/", tdir, (unsigned) tb_user_uid("tbuser"));
        g_auto(TbCommandResult) start = { 0 }, stop = { 0 };
        g_autofree char *path = NULL;
        const char *p, *end;

        run_cli("tbuser", &start, "--detach=tb-dir", "-c", cfg, "--txt", NULL);
        assert_exit(&start, 0);
        p = strstr(start.err, prefix);
        g_assert_nonnull(p);
        end = strchr(p, ',');
        g_assert_nonnull(end);
        path = g_strndup(p, (gsize) (end - p));
        note("the service writes %s\n", path);
        run_cli("tbuser", &stop, "--attach=tb-dir", "--stop", NULL);
        assert_exit(&stop, 0);
        assert_stderr_has(&stop, path);
        assert_file_complete(path);
}

/* --attach waits until the duration ends, then says where the trace is; exit 0. */
static void test_attach_until_duration(void) {
        g_autofree char *dir = make_user_dir("tbuser", "cli-attach");
        g_autofree char *text = config_text(3000);
        g_autofree char *cfg = user_file("tbuser", dir, "config.pbtxt", text, -1);
        g_autofree char *out = g_build_filename(dir, "trace.pftrace", NULL);
        g_auto(TbCommandResult) start = { 0 }, attach = { 0 };
        gint64 t0;

        run_cli("tbuser", &start, "--detach=tb-wait", "-c", cfg, "--txt", "-o", out, NULL);
        assert_exit(&start, 0);
        t0 = g_get_monotonic_time();
        run_cli("tbuser", &attach, "--attach=tb-wait", NULL);
        assert_exit(&attach, 0);
        assert_stderr_has(&attach, "Trace written into");
        /* It waited for the rest of the 3 s. */
        g_assert_cmpint(g_get_monotonic_time() - t0, >, 1500 * 1000);
        assert_file_complete(out);
        g_assert_true(wait_no_sessions(tb_user_uid("tbuser"), 10000));
}

/* ===================================================================== */
/* Background                                                             */
/* ===================================================================== */

static pid_t parse_pid(const char *out) {
        g_autofree char *s = g_strstrip(g_strdup(out ? out : ""));
        char *end = NULL;
        long v = strtol(s, &end, 10);

        g_assert_true(*s && end && *end == '\0' && v > 1);
        return (pid_t) v;
}

/* -D returns once the session records; SIGTERM to the printed pid stops it, complete. */
static void test_background_wait(void) {
        g_autofree char *dir = make_user_dir("tbuser", "cli-bgwait");
        g_autofree char *out = g_build_filename(dir, "trace.pftrace", NULL);
        g_auto(TbCommandResult) res = { 0 };
        g_auto(GStrv) sessions = NULL;
        g_autofree char *state = NULL;
        pid_t pid;

        run_cli("tbuser", &res, "-D", "-t", "60s", "-o", out, "sched/sched_switch", NULL);
        assert_exit(&res, 0);
        pid = parse_pid(res.out);
        /* Already recording when -D returned: no waiting here. */
        sessions = sessions_of(tb_user_uid("tbuser"));
        g_assert_cmpuint(g_strv_length(sessions), ==, 1);
        state = tb_session_state(tb_bus()->conn, sessions[0], NULL);
        g_assert_cmpstr(state, ==, "recording");
        g_assert_true(tb_pid_alive(pid));
        g_usleep(500 * 1000);
        g_assert_cmpint(kill(pid, SIGTERM), ==, 0);
        g_assert_true(tb_wait_pid_gone(pid, 20000));
        g_assert_true(wait_no_sessions(tb_user_uid("tbuser"), 10000));
        assert_file_complete(out);
}

/* -d prints the pid and leaves it recording. */
static void test_background(void) {
        g_autofree char *dir = make_user_dir("tbuser", "cli-bg");
        g_autofree char *out = g_build_filename(dir, "trace.pftrace", NULL);
        g_auto(TbCommandResult) res = { 0 };
        pid_t pid;

        run_cli("tbuser", &res, "--background", "-t", "60s", "-o", out, "sched/sched_switch", NULL);
        assert_exit(&res, 0);
        pid = parse_pid(res.out);
        g_assert_true(tb_pid_alive(pid));
        g_usleep(500 * 1000);
        g_assert_cmpuint(g_strv_length(sessions_of(tb_user_uid("tbuser"))), ==, 1);
        g_assert_cmpint(kill(pid, SIGINT), ==, 0);
        g_assert_true(tb_wait_pid_gone(pid, 20000));
        assert_file_complete(out);
}

/* -D when the session cannot start: exit 1, no pid, the reason on stderr. */
static void test_background_fails(void) {
        g_autofree char *dir = make_user_dir("tbuser", "cli-bgfail");
        g_autofree char *out = g_build_filename(dir, "trace.pftrace", NULL);
        g_auto(TbCommandResult) res = { 0 };

        /* Not a missing event: that is skipped with a warning, and the CLI's light config
         * still records its other data sources, as perfetto's does. A malformed name is
         * refused. */
        run_cli("tbuser", &res, "-D", "-t", "60s", "-o", out, "sched/no/such_event", NULL);
        assert_exit(&res, 1);
        g_assert_cmpstr(res.out, ==, "");
        assert_stderr_has(&res, "sched/no/such_event");
        g_assert_cmpuint(g_strv_length(sessions_of(tb_user_uid("tbuser"))), ==, 0);
}

/* ===================================================================== */
/* Signals                                                                */
/* ===================================================================== */

static void signal_while_recording(int sig, const char *name) {
        g_autofree char *dir = make_user_dir("tbuser", name);
        g_autofree char *out = g_build_filename(dir, "trace.pftrace", NULL);
        const char *args[] = { "-t", "60s", "-o", out, "sched/sched_switch", "sched/sched_waking", NULL };
        g_autoptr(GError) error = NULL;
        TbBusy busy;
        CliProc p;
        int status;

        g_assert_true(tb_busy_start("tbbusy-sig", &busy, &error));
        cli_spawn("tbuser", args, -1, &p);
        g_assert_true(cli_proc_expect(&p, "Recording into", 30000));
        g_usleep(1000 * 1000);
        g_assert_cmpint(kill(p.pid, sig), ==, 0);
        status = cli_proc_wait(&p, 30000);
        tb_busy_stop(&busy);
        g_assert_true(WIFEXITED(status));
        g_assert_cmpint(WEXITSTATUS(status), ==, 0);
        g_assert_nonnull(strstr(p.err->str, "Trace written into"));
        cli_proc_clear(&p);
        {
                g_auto(TbTraceSummary) s = { 0 };
                summarise(out, &s);
                assert_trace_complete(&s);
                assert_busy_seen(&s, &busy);
        }
}

/* Ctrl-C while recording: exit 0 and a complete file. */
static void test_sigint(void) {
        signal_while_recording(SIGINT, "cli-sigint");
}

static void test_sigterm(void) {
        signal_while_recording(SIGTERM, "cli-sigterm");
}

/*
 * A second Ctrl-C says it is still finishing. To hold the finish open, the trace
 * goes into a FIFO with a one-page pipe buffer that the test reads only after the
 * second signal: the service's final write blocks until then.
 */
static void test_sigint_twice(void) {
        g_autofree char *dir = make_user_dir("tbuser", "cli-sigint2");
        g_autofree char *fifo = g_build_filename(dir, "trace.fifo", NULL);
        g_autofree char *copy = g_build_filename(dir, "trace.pftrace", NULL);
        const char *args[] = { "-t", "60s", "-o", fifo, "sched/sched_switch", "sched/sched_waking", NULL };
        g_autoptr(GByteArray) data = g_byte_array_new();
        g_autoptr(GError) error = NULL;
        g_auto(TbUser) u = { 0 };
        TbBusy busy;
        CliProc p;
        guint8 buf[65536];
        ssize_t n;
        int fd, status;

        g_assert_true(tb_user_lookup("tbuser", &u, NULL));
        g_assert_cmpint(mkfifo(fifo, 0600), ==, 0);
        g_assert_cmpint(chown(fifo, u.uid, u.gid), ==, 0);
        fd = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        g_assert_cmpint(fd, >=, 0);
        (void) fcntl(fd, F_SETPIPE_SZ, 4096);

        g_assert_true(tb_busy_start("tbbusy-sig2", &busy, &error));
        cli_spawn("tbuser", args, -1, &p);
        g_assert_true(cli_proc_expect(&p, "Recording into", 30000));
        g_usleep(1500 * 1000);
        g_assert_cmpint(kill(p.pid, SIGINT), ==, 0);
        g_assert_true(cli_proc_expect(&p, "Stopping", 10000));
        g_assert_cmpint(kill(p.pid, SIGINT), ==, 0);
        g_assert_true(cli_proc_expect(&p, "Still finishing", 10000));
        /* It did not give up on the file. */
        g_assert_true(tb_pid_alive(p.pid));

        g_assert_cmpint(fcntl(fd, F_SETFL, 0), ==, 0);
        while ((n = read(fd, buf, sizeof buf)) > 0)
                g_byte_array_append(data, buf, (guint) n);
        close(fd);
        status = cli_proc_wait(&p, 30000);
        tb_busy_stop(&busy);
        g_assert_true(WIFEXITED(status));
        g_assert_cmpint(WEXITSTATUS(status), ==, 0);
        cli_proc_clear(&p);
        note("read %u bytes from the FIFO\n", data->len);
        g_assert_true(g_file_set_contents(copy, (const char *) data->data, data->len, NULL));
        assert_file_complete(copy);
}

int main(int argc, char **argv) {
        /* Children must never find a terminal on stdin unless a case gives them one. */
        if (!freopen("/dev/null", "r", stdin))
                return EXIT_FAILURE;
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();

        tb_test_add_isolated("/bus/cli/detach/is-detached-exit-codes", test_is_detached_exit_codes);
        tb_test_add_isolated("/bus/cli/detach/duplicate-key", test_detach_duplicate);
        tb_test_add_isolated("/bus/cli/detach/service-file", test_detach_service_file);
        tb_test_add_isolated("/bus/cli/detach/attach-until-duration", test_attach_until_duration);
        tb_test_add_isolated("/bus/cli/background/wait", test_background_wait);
        tb_test_add_isolated("/bus/cli/background/plain", test_background);
        tb_test_add_isolated("/bus/cli/background/fails", test_background_fails);
        tb_test_add_isolated("/bus/cli/signals/sigint", test_sigint);
        tb_test_add_isolated("/bus/cli/signals/sigterm", test_sigterm);
        tb_test_add_isolated("/bus/cli/signals/sigint-twice", test_sigint_twice);
        return tb_test_run(TB_START_SERVICE);
}
