/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite: the tracebus command line against the real service, polkitd and
 * dbus-daemon (tests/system-bus.h), run as the test users. Every option and
 * every refused combination, the exit codes of --is_detached, -D waiting,
 * Ctrl-C during recording, the polkit agent at a terminal, the README's busctl
 * lines, and perfetto's documented detach examples (tests/perfetto-compat.sh).
 *
 * What tests/polkit-rules/50-tracebus-test.rules says about org.tracebus.record:
 * tbuser YES, tbadmin YES (and org.tracebus.manage), tbchallenge AUTH_ADMIN,
 * tbother NO.
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

#include "system-bus.h"
#include "trace-file.h"

#define note(...) g_printerr("# " __VA_ARGS__)

#define ERR_ACCESS_DENIED "org.freedesktop.DBus.Error.AccessDenied"

/* A text TraceConfig of scheduling events. */
static char *config_text(guint duration_ms) {
        return g_strdup_printf("duration_ms: %u\n"
                               "buffers { size_kb: 4096 }\n"
                               "data_sources {\n"
                               "  config {\n"
                               "    name: \"linux.ftrace\"\n"
                               "    ftrace_config {\n"
                               "      ftrace_events: \"sched/sched_switch\"\n"
                               "      ftrace_events: \"sched/sched_waking\"\n"
                               "    }\n"
                               "  }\n"
                               "}\n",
                               duration_ms);
}

/* ===================================================================== */
/* Helpers (small copies of test-integration.c's, which is being moved)   */
/* ===================================================================== */

/* A file copied from the build or source tree where every test user can read
 * and run it: those trees may sit under a directory they cannot traverse. */
static char *copy_executable(const char *src, const char *name) {
        g_autofree char *bindir = g_build_filename(tb_bus()->tmpdir, "bin", NULL);
        char *dst = g_build_filename(bindir, name, NULL);
        g_autofree char *contents = NULL;
        g_autoptr(GError) error = NULL;
        gsize len;

        if (access(dst, X_OK) == 0)
                return dst;
        g_assert_cmpint(g_mkdir_with_parents(bindir, 0755), ==, 0);
        g_assert_true(g_file_get_contents(src, &contents, &len, &error));
        g_assert_no_error(error);
        g_assert_true(g_file_set_contents_full(dst, contents, (gssize) len, G_FILE_SET_CONTENTS_NONE, 0755, &error));
        g_assert_no_error(error);
        return dst;
}

static char *cli_path(void) {
        g_autofree char *src = g_build_filename(tb_bus()->build_dir, "client", "cli", "tracebus", NULL);
        return copy_executable(src, "tracebus");
}

static char *make_user_dir(const char *user, const char *name) {
        g_auto(TbUser) u = { 0 };
        char *dir = g_build_filename(tb_bus()->tmpdir, name, NULL);

        g_assert_true(tb_user_lookup(user, &u, NULL));
        g_assert_cmpint(g_mkdir_with_parents(dir, 0700), ==, 0);
        g_assert_cmpint(chown(dir, u.uid, u.gid), ==, 0);
        g_assert_cmpint(chmod(dir, 0700), ==, 0);
        return dir;
}

/* A file of user's in dir. */
static char *user_file(const char *user, const char *dir, const char *name, const char *contents, gssize len) {
        g_auto(TbUser) u = { 0 };
        g_autoptr(GError) error = NULL;
        char *path = g_build_filename(dir, name, NULL);

        g_assert_true(tb_user_lookup(user, &u, NULL));
        g_assert_true(g_file_set_contents(path, contents, len, &error));
        g_assert_no_error(error);
        g_assert_cmpint(chown(path, u.uid, u.gid), ==, 0);
        return path;
}

static uid_t user_uid(const char *user) {
        g_auto(TbUser) u = { 0 };
        g_assert_true(tb_user_lookup(user, &u, NULL));
        return u.uid;
}

static void log_command(const char *what, const TbCommandResult *res) {
        g_autofree char *st = tb_wait_status_to_string(res->wait_status);
        note("%s: %s\n", what, st);
        if (res->out && *res->out)
                note("  stdout: %s\n", res->out);
        if (res->err && *res->err)
                note("  stderr: %s\n", res->err);
}

static int exit_code(const TbCommandResult *res) {
        return WIFEXITED(res->wait_status) ? WEXITSTATUS(res->wait_status) : -1;
}

/* Runs argv (NULL-terminated) as user and logs it. */
static void run_as(const char *user, const char *const *argv, TbCommandResult *res) {
        g_autoptr(GError) error = NULL;
        g_autofree char *line = g_strjoinv(" ", (char **) argv);

        g_assert_true(tb_run_as_user(user, argv, res, &error));
        g_assert_no_error(error);
        log_command(line, res);
}

/* tracebus ARGS... as user. */
static void run_cli_v(const char *user, TbCommandResult *res, const char *first, va_list ap) {
        g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func(g_free);

        g_ptr_array_add(argv, cli_path());
        for (const char *a = first; a; a = va_arg(ap, const char *))
                g_ptr_array_add(argv, g_strdup(a));
        g_ptr_array_add(argv, NULL);
        run_as(user, (const char *const *) argv->pdata, res);
}

static G_GNUC_NULL_TERMINATED void run_cli(const char *user, TbCommandResult *res, const char *first, ...) {
        va_list ap;

        va_start(ap, first);
        run_cli_v(user, res, first, ap);
        va_end(ap);
}

/* sh -c SCRIPT as user, with tracebus first in PATH. */
static void run_sh(const char *user, const char *script, TbCommandResult *res) {
        g_autofree char *cli = cli_path();
        g_autofree char *bindir = g_path_get_dirname(cli);
        g_autofree char *path = g_strdup_printf("PATH=%s:/usr/sbin:/usr/bin:/sbin:/bin", bindir);
        const char *argv[] = { "env", path, "sh", "-c", script, NULL };

        run_as(user, argv, res);
}

static void assert_stderr_has(const TbCommandResult *res, const char *what) {
        if (!res->err || !strstr(res->err, what)) {
                note("stderr lacks \"%s\"\n", what);
                g_assert_not_reached();
        }
}

static void assert_exit(const TbCommandResult *res, int code) {
        g_assert_cmpint(exit_code(res), ==, code);
}

/* One line on stderr: an error is one sentence. */
static void assert_one_line(const TbCommandResult *res) {
        g_autofree char *err = g_strstrip(g_strdup(res->err ? res->err : ""));
        g_assert_cmpstr(err, !=, "");
        g_assert_null(strchr(err, '\n'));
}

static void summarise(const char *path, TbTraceSummary *s) {
        g_autoptr(GError) error = NULL;
        g_autofree char *desc = NULL;

        if (!tb_trace_file_read(path, s, &error))
                g_error("trace file %s does not decode: %s", path, error->message);
        desc = tb_trace_summary_describe(s);
        note("%s: %s\n", path, desc);
}

static void assert_trace_complete(const TbTraceSummary *s) {
        g_assert_cmpuint(s->n_packets, >, 0);
        g_assert_true(s->has_clock_snapshot);
        g_assert_true(s->clock_is_boottime);
        g_assert_true(s->has_system_info);
        g_assert_true(s->has_utsname);
        g_assert_true(s->has_tracing_started);
        g_assert_true(s->has_trace_config);
        if (s->first_problem)
                note("sequence problem: %s\n", s->first_problem);
        g_assert_true(s->all_have_sequence_id);
        g_assert_true(s->first_packets_flagged);
        g_assert_cmpuint(s->n_ftrace_bundles, >, 0);
        g_assert_cmpuint(s->n_sched_switch + s->n_compact_switch, >, 0);
}

static void assert_file_complete(const char *path) {
        g_auto(TbTraceSummary) s = { 0 };

        summarise(path, &s);
        assert_trace_complete(&s);
}

static void assert_busy_seen_in(const TbTraceSummary *s, const TbBusy *busy) {
        if (!tb_trace_summary_has_switch(s, busy->pid, busy->comm) &&
            !tb_trace_summary_has_switch(s, busy->peer_pid, busy->comm)) {
                note("no sched_switch with pid %d/%d and comm \"%s\"\n", busy->pid, busy->peer_pid, busy->comm);
                g_assert_not_reached();
        }
}

/* protoc's view of the file, which holds the TraceConfig the session ran with. */
static char *decode(const char *path) {
        g_autoptr(GError) error = NULL;
        char *text = NULL;

        g_assert_true(tb_trace_protoc_decode(tb_bus()->source_dir, path, &text, &error));
        g_assert_no_error(error);
        return text;
}

static void assert_decoded_has(const char *decoded, const char *what) {
        if (!strstr(decoded, what)) {
                note("the decoded trace lacks \"%s\"\n", what);
                g_assert_not_reached();
        }
}

/* The sessions of uid that are not over, from root's connection. */
static char **sessions_of(uid_t uid) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GVariant) reply = NULL;
        g_autoptr(GPtrArray) out = g_ptr_array_new();
        g_autofree const char **paths = NULL;

        reply = g_dbus_connection_call_sync(tb_bus()->conn, TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_IFACE,
                                            "ListSessions", NULL, G_VARIANT_TYPE("(ao)"), G_DBUS_CALL_FLAGS_NONE,
                                            10000, NULL, &error);
        g_assert_no_error(error);
        g_variant_get(reply, "(^ao)", &paths);
        for (size_t i = 0; paths[i]; i++) {
                g_autoptr(GError) e = NULL;
                g_autoptr(GVariant) owner = tb_get_property(tb_bus()->conn, paths[i], TB_SESSION_IFACE, "OwnerUid", &e);
                g_autofree char *state = tb_session_state(tb_bus()->conn, paths[i], NULL);

                if (owner && g_variant_get_uint32(owner) == uid && state && !g_str_equal(state, "ended"))
                        g_ptr_array_add(out, g_strdup(paths[i]));
        }
        g_ptr_array_add(out, NULL);
        return (char **) g_ptr_array_steal(out, NULL);
}

static bool wait_no_sessions(uid_t uid, guint timeout_ms) {
        gint64 deadline = g_get_monotonic_time() + (gint64) timeout_ms * 1000;

        for (;;) {
                g_auto(GStrv) l = sessions_of(uid);
                if (g_strv_length(l) == 0)
                        return true;
                if (g_get_monotonic_time() > deadline)
                        return false;
                g_usleep(50 * 1000);
        }
}

/* No leftovers for the next case: the user's sessions are stopped. */
static void stop_all_of(const char *user) {
        g_auto(TbCommandResult) res = { 0 };

        run_cli(user, &res, "--stop-all", NULL);
        g_assert_true(wait_no_sessions(user_uid(user), 20000));
}

static char *traces_dir(void) {
        return g_build_filename(tb_bus()->state_dir, "traces", NULL);
}

typedef struct {
        char **instances;
        char **files;
} Snapshot;

/* Our service's tracefs instances (tracebus-PID-N): other test runs on the machine have theirs. */
static char **our_instances(void) {
        g_auto(GStrv) all = tb_tracebus_instances();
        g_autofree char *prefix = g_strdup_printf("tracebus-%d-", (int) tb_bus()->service_pid);
        GPtrArray *mine = g_ptr_array_new();

        for (size_t i = 0; all[i]; i++)
                if (g_str_has_prefix(all[i], prefix))
                        g_ptr_array_add(mine, g_strdup(all[i]));
        g_ptr_array_add(mine, NULL);
        return (char **) g_ptr_array_free(mine, FALSE);
}

static void snapshot_take(Snapshot *s) {
        g_autofree char *tdir = traces_dir();
        s->instances = our_instances();
        s->files = tb_list_tree(tdir);
}

static void snapshot_clear(Snapshot *s) {
        g_clear_pointer(&s->instances, g_strfreev);
        g_clear_pointer(&s->files, g_strfreev);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Snapshot, snapshot_clear)

/* No tracefs instance and no file in the trace directory appeared since s. */
static void assert_nothing_created(const Snapshot *before) {
        g_auto(Snapshot) now = { 0 };
        g_auto(GStrv) new_inst = NULL, new_files = NULL;

        g_usleep(200 * 1000);
        snapshot_take(&now);
        new_inst = tb_strv_added(before->instances, now.instances);
        new_files = tb_strv_added(before->files, now.files);
        for (size_t i = 0; new_inst[i]; i++)
                note("new tracefs instance: %s\n", new_inst[i]);
        for (size_t i = 0; new_files[i]; i++)
                note("new file in the trace dir: %s\n", new_files[i]);
        g_assert_cmpuint(g_strv_length(new_inst), ==, 0);
        g_assert_cmpuint(g_strv_length(new_files), ==, 0);
}

/* Splits busctl's output into tokens, honouring "..." with \ escapes. */
static char **busctl_tokens(const char *s) {
        GPtrArray *a = g_ptr_array_new();

        while (*s) {
                GString *t;
                while (*s == ' ' || *s == '\n' || *s == '\t' || *s == '\r')
                        s++;
                if (!*s)
                        break;
                t = g_string_new(NULL);
                if (*s == '"') {
                        for (s++; *s && *s != '"'; s++) {
                                if (*s == '\\' && s[1])
                                        s++;
                                g_string_append_c(t, *s);
                        }
                        if (*s)
                                s++;
                } else
                        while (*s && *s != ' ' && *s != '\n' && *s != '\t' && *s != '\r')
                                g_string_append_c(t, *s++);
                g_ptr_array_add(a, g_string_free(t, FALSE));
        }
        g_ptr_array_add(a, NULL);
        return (char **) g_ptr_array_free(a, FALSE);
}

/* ---- a CLI process the test signals ---- */

typedef struct {
        pid_t pid;
        int err_fd;
        GString *err;   /* what it printed so far */
} CliProc;

/* tracebus ARGV as user, stdin /dev/null, stdout to out_fd (or /dev/null), stderr to a pipe. */
static void cli_spawn(const char *user, const char *const *args, int out_fd, CliProc *ret) {
        g_auto(TbUser) u = { 0 };
        g_autofree char *cli = cli_path();
        g_autoptr(GPtrArray) argv = g_ptr_array_new();
        int err[2];

        g_assert_true(tb_user_lookup(user, &u, NULL));
        g_ptr_array_add(argv, cli);
        for (size_t i = 0; args[i]; i++)
                g_ptr_array_add(argv, (char *) args[i]);
        g_ptr_array_add(argv, NULL);
        g_assert_cmpint(pipe2(err, O_CLOEXEC), ==, 0);
        fflush(NULL);
        ret->pid = fork();
        g_assert_cmpint(ret->pid, >=, 0);
        if (ret->pid == 0) {
                int null = open("/dev/null", O_RDWR);
                if (null < 0 || dup2(null, STDIN_FILENO) < 0 || dup2(out_fd >= 0 ? out_fd : null, STDOUT_FILENO) < 0 ||
                    dup2(err[1], STDERR_FILENO) < 0 || chdir("/") < 0)
                        _exit(127);
                tb_user_become(&u);
                (void) setenv("HOME", "/", 1);
                execv(cli, (char **) argv->pdata);
                _exit(127);
        }
        close(err[1]);
        ret->err_fd = err[0];
        ret->err = g_string_new(NULL);
}

/* Waits for a line containing what on its stderr. */
static bool cli_proc_expect(CliProc *p, const char *what, guint timeout_ms) {
        gint64 deadline = g_get_monotonic_time() + (gint64) timeout_ms * 1000;

        for (;;) {
                g_autoptr(GError) error = NULL;
                gint64 left = (deadline - g_get_monotonic_time()) / 1000;
                g_autofree char *line = left > 0 ? tb_read_line(p->err_fd, (guint) left, &error) : NULL;

                if (!line) {
                        note("no line with \"%s\" from tracebus: %s\n", what, error ? error->message : "timed out");
                        return false;
                }
                note("tracebus: %s\n", line);
                g_string_append_printf(p->err, "%s\n", line);
                if (strstr(line, what))
                        return true;
        }
}

/* Reaps it (SIGKILL after timeout_ms); the rest of its stderr goes to p->err. */
static int cli_proc_wait(CliProc *p, guint timeout_ms) {
        gint64 deadline = g_get_monotonic_time() + (gint64) timeout_ms * 1000;
        int status = -1;
        char buf[4096];
        ssize_t n;

        for (;;) {
                pid_t r = waitpid(p->pid, &status, WNOHANG);
                if (r == p->pid)
                        break;
                if (g_get_monotonic_time() > deadline) {
                        note("tracebus (pid %d) did not exit; killing it\n", (int) p->pid);
                        kill(p->pid, SIGKILL);
                        (void) waitpid(p->pid, &status, 0);
                        status = -1;
                        break;
                }
                g_usleep(20 * 1000);
        }
        (void) fcntl(p->err_fd, F_SETFL, O_NONBLOCK);
        while ((n = read(p->err_fd, buf, sizeof buf)) > 0)
                g_string_append_len(p->err, buf, n);
        close(p->err_fd);
        note("tracebus exited (%d); stderr:\n%s\n", status, p->err->str);
        return status;
}

static void cli_proc_clear(CliProc *p) {
        if (p->err)
                g_string_free(p->err, TRUE);
        p->err = NULL;
}

/* ---- a tiny JSON syntax check, for --json ---- */

static const char *json_value(const char *p, int depth);

static const char *json_ws(const char *p) {
        while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
                p++;
        return p;
}

static const char *json_string(const char *p) {
        if (*p++ != '"')
                return NULL;
        for (; *p && *p != '"'; p++) {
                if ((unsigned char) *p < 0x20)
                        return NULL;
                if (*p == '\\' && !*++p)
                        return NULL;
        }
        return *p == '"' ? p + 1 : NULL;
}

static const char *json_container(const char *p, char close, bool object, int depth) {
        p = json_ws(p + 1);
        if (*p == close)
                return p + 1;
        for (;;) {
                if (object) {
                        p = json_string(json_ws(p));
                        if (!p || *(p = json_ws(p)) != ':')
                                return NULL;
                        p++;
                }
                p = json_value(p, depth + 1);
                if (!p)
                        return NULL;
                p = json_ws(p);
                if (*p == close)
                        return p + 1;
                if (*p++ != ',')
                        return NULL;
        }
}

static const char *json_value(const char *p, int depth) {
        p = json_ws(p);
        if (depth > 32)
                return NULL;
        if (*p == '{')
                return json_container(p, '}', true, depth);
        if (*p == '[')
                return json_container(p, ']', false, depth);
        if (*p == '"')
                return json_string(p);
        if (g_str_has_prefix(p, "true") || g_str_has_prefix(p, "null"))
                return p + 4;
        if (g_str_has_prefix(p, "false"))
                return p + 5;
        if (*p == '-' || g_ascii_isdigit(*p)) {
                p++;
                while (g_ascii_isdigit(*p) || *p == '.' || *p == 'e' || *p == 'E' || *p == '+' || *p == '-')
                        p++;
                return p;
        }
        return NULL;
}

static void assert_json(const char *text) {
        const char *end = json_value(text, 0);

        if (!end || *json_ws(end) != '\0') {
                note("not JSON: %s\n", text);
                g_assert_not_reached();
        }
}

/* ===================================================================== */
/* Options                                                                */
/* ===================================================================== */

/* The light config: -t, -b, events; perfetto's defaults otherwise. */
static void test_light_config(void) {
        g_autofree char *dir = make_user_dir("tbuser", "cli-light");
        g_autofree char *out = g_build_filename(dir, "trace.pftrace", NULL);
        g_autofree char *decoded = NULL;
        g_auto(TbCommandResult) res = { 0 };
        g_autoptr(GError) error = NULL;
        TbBusy busy;

        g_assert_true(tb_busy_start("tbbusy-light", &busy, &error));
        run_cli("tbuser", &res, "-t", "1500ms", "-b", "8mb", "-o", out, "sched/sched_switch", "sched_waking", NULL);
        tb_busy_stop(&busy);
        assert_exit(&res, 0);
        assert_stderr_has(&res, "Trace written into ");
        assert_file_complete(out);
        decoded = decode(out);
        assert_decoded_has(decoded, "duration_ms: 1500");
        assert_decoded_has(decoded, "size_kb: 8192");
        assert_decoded_has(decoded, "\"sched/sched_switch\"");
        assert_decoded_has(decoded, "\"sched_waking\"");
        /* No -s: written at the end, as perfetto's ring buffer. */
        g_assert_null(strstr(decoded, "write_into_file: true"));
}

/* Long options and friendly suffixes: --time 0.5s --buffer 4MiB --out. */
static void test_long_options(void) {
        g_autofree char *dir = make_user_dir("tbuser", "cli-long");
        g_autofree char *out = g_build_filename(dir, "trace.pftrace", NULL);
        g_autofree char *decoded = NULL;
        g_auto(TbCommandResult) res = { 0 };

        run_cli("tbuser", &res, "--time", "1.5s", "--buffer", "4MiB", "--out", out, "sched/*", NULL);
        assert_exit(&res, 0);
        assert_file_complete(out);
        decoded = decode(out);
        assert_decoded_has(decoded, "duration_ms: 1500");
        assert_decoded_has(decoded, "size_kb: 4096");
}

/* -s: max_file_size_bytes with write_into_file; the session ends at the size. */
static void test_size(void) {
        g_autofree char *dir = make_user_dir("tbuser", "cli-size");
        g_autofree char *out = g_build_filename(dir, "trace.pftrace", NULL);
        g_autofree char *decoded = NULL;
        g_auto(TbCommandResult) res = { 0 };
        g_autoptr(GError) error = NULL;
        gint64 start = g_get_monotonic_time();
        struct stat st;
        TbBusy busy;

        g_assert_true(tb_busy_start("tbbusy-size", &busy, &error));
        run_cli("tbuser", &res, "-t", "60s", "-s", "64kb", "-o", out, "sched/sched_switch", "sched/sched_waking", NULL);
        tb_busy_stop(&busy);
        assert_exit(&res, 0);
        assert_stderr_has(&res, "size limit");
        g_assert_cmpint(g_get_monotonic_time() - start, <, 50 * G_USEC_PER_SEC);
        g_assert_cmpint(stat(out, &st), ==, 0);
        note("file size %lld with -s 64kb\n", (long long) st.st_size);
        g_assert_cmpint(st.st_size, <=, 64 * 1024);
        decoded = decode(out);
        assert_decoded_has(decoded, "max_file_size_bytes: 65536");
        assert_decoded_has(decoded, "write_into_file: true");
}

/* -c FILE --txt, -c - --txt from a pipe, and perfetto's -c :test. */
static void test_text_config(void) {
        g_autofree char *dir = make_user_dir("tbuser", "cli-txt");
        g_autofree char *text = config_text(1000);
        g_autofree char *cfg = user_file("tbuser", dir, "config.pbtxt", text, -1);
        g_autofree char *out1 = g_build_filename(dir, "file.pftrace", NULL);
        g_autofree char *out2 = g_build_filename(dir, "stdin.pftrace", NULL);
        g_autofree char *out3 = g_build_filename(dir, "test.pftrace", NULL);
        g_autofree char *script = g_strdup_printf("cat %s | tracebus -c - --txt -o %s", cfg, out2);
        g_auto(TbCommandResult) r1 = { 0 }, r2 = { 0 }, r3 = { 0 };

        run_cli("tbuser", &r1, "-c", cfg, "--txt", "-o", out1, NULL);
        assert_exit(&r1, 0);
        assert_file_complete(out1);
        run_sh("tbuser", script, &r2);
        assert_exit(&r2, 0);
        assert_file_complete(out2);
        run_cli("tbuser", &r3, "-c", ":test", "-o", out3, NULL);
        assert_exit(&r3, 0);
        assert_file_complete(out3);
}

/* A binary TraceConfig (protoc --encode), sent as the BinaryConfig option. */
static void test_binary_config(void) {
        g_autofree char *dir = make_user_dir("tbuser", "cli-bin");
        g_autofree char *text = config_text(1000);
        g_autofree char *txt = user_file("tbuser", dir, "config.pbtxt", text, -1);
        g_autofree char *bin = g_build_filename(dir, "config.pb", NULL);
        g_autofree char *out = g_build_filename(dir, "trace.pftrace", NULL);
        g_autofree char *protos = g_build_filename(tb_bus()->source_dir, "protos", NULL);
        g_autofree char *encode = g_strdup_printf("protoc --proto_path=%s --encode=tracebus.TraceConfig config.proto "
                                                  "< %s > %s", protos, txt, bin);
        g_auto(TbCommandResult) enc = { 0 }, res = { 0 }, bad = { 0 };
        g_auto(TbUser) u = { 0 };

        run_as(NULL, (const char *[]) { "sh", "-c", encode, NULL }, &enc);
        assert_exit(&enc, 0);
        g_assert_true(tb_user_lookup("tbuser", &u, NULL));
        g_assert_cmpint(chown(bin, u.uid, u.gid), ==, 0);
        run_cli("tbuser", &res, "-c", bin, "-o", out, NULL);
        assert_exit(&res, 0);
        assert_file_complete(out);

        /* The text file without --txt is not a binary config. */
        run_cli("tbuser", &bad, "-c", txt, "-o", out, NULL);
        assert_exit(&bad, 1);
        assert_one_line(&bad);
        assert_stderr_has(&bad, "is not a binary TraceConfig");
}

/* Config mistakes: FILE:LINE:COLUMN with the real name, before anything starts. */
static void test_config_errors(void) {
        g_autofree char *dir = make_user_dir("tbuser", "cli-cfgerr");
        g_autofree char *bad = user_file("tbuser", dir, "bad.pbtxt",
                                         "duration_ms: 1000\nbuffers { size_kb: 1024 }\nno_such_field: 3\n", -1);
        g_autofree char *empty = user_file("tbuser", dir, "empty.pbtxt", "", 0);
        g_autofree char *outpath = user_file("tbuser", dir, "outpath.pbtxt",
                                             "output_path: \"/tmp/x\"\ndata_sources { config { name: \"linux.ftrace\" "
                                             "ftrace_config { ftrace_events: \"sched/sched_switch\" } } }\n", -1);
        g_autofree char *unknown = user_file("tbuser", dir, "unknown.pbtxt",
                                             "duration_ms: 1000\ndata_sources { config { name: \"linux.ftrace\" "
                                             "ftrace_config { ftrace_events: \"sched/no_such_event\" } } }\n", -1);
        g_autofree char *out = g_build_filename(dir, "trace.pftrace", NULL);
        g_autofree char *where = g_strdup_printf("%s:3:1: ", bad);
        g_auto(TbCommandResult) r1 = { 0 }, r2 = { 0 }, r3 = { 0 }, r4 = { 0 }, r5 = { 0 };
        g_auto(Snapshot) before = { 0 };

        snapshot_take(&before);
        run_cli("tbuser", &r1, "-c", bad, "--txt", "-o", out, NULL);
        assert_exit(&r1, 1);
        assert_one_line(&r1);
        assert_stderr_has(&r1, where);
        assert_stderr_has(&r1, "no_such_field");
        /* Refused before the output was even opened. */
        g_assert_false(g_file_test(out, G_FILE_TEST_EXISTS));

        run_cli("tbuser", &r2, "-c", empty, "--txt", "-o", out, NULL);
        assert_exit(&r2, 1);
        assert_stderr_has(&r2, "The TraceConfig is empty");

        run_cli("tbuser", &r3, "-c", outpath, "--txt", "-o", out, NULL);
        assert_exit(&r3, 1);
        assert_one_line(&r3);
        assert_stderr_has(&r3, "output_path");

        /* The service's error, in words. */
        run_cli("tbuser", &r4, "-c", unknown, "--txt", "-o", out, NULL);
        assert_exit(&r4, 1);
        assert_one_line(&r4);
        assert_stderr_has(&r4, "sched/no_such_event");
        g_assert_null(strstr(r4.err, TB_ERROR_PREFIX));

        run_cli("tbuser", &r5, "-c", "/nonexistent.pbtxt", "--txt", "-o", out, NULL);
        assert_exit(&r5, 1);
        assert_stderr_has(&r5, "/nonexistent.pbtxt");
        assert_nothing_created(&before);
}

/* --no-clobber leaves an existing file alone. */
static void test_no_clobber(void) {
        g_autofree char *dir = make_user_dir("tbuser", "cli-clobber");
        g_autofree char *out = user_file("tbuser", dir, "trace.pftrace", "keep me", -1);
        g_autofree char *contents = NULL;
        g_auto(TbCommandResult) res = { 0 };

        run_cli("tbuser", &res, "--no-clobber", "-t", "1s", "-o", out, "sched/sched_switch", NULL);
        assert_exit(&res, 1);
        assert_one_line(&res);
        assert_stderr_has(&res, "File exists");
        g_assert_true(g_file_get_contents(out, &contents, NULL, NULL));
        g_assert_cmpstr(contents, ==, "keep me");
}

/* -o -: the trace goes to stdout, a pipe or a file. */
static void test_stdout(void) {
        g_autofree char *dir = make_user_dir("tbuser", "cli-stdout");
        g_autofree char *piped = g_build_filename(dir, "piped.pftrace", NULL);
        g_autofree char *redirected = g_build_filename(dir, "redirected.pftrace", NULL);
        g_autofree char *s1 = g_strdup_printf("tracebus -t 1s -o - sched/sched_switch | cat > %s", piped);
        g_autofree char *s2 = g_strdup_printf("tracebus -t 1s -o - sched/sched_switch > %s", redirected);
        g_auto(TbCommandResult) r1 = { 0 }, r2 = { 0 };

        run_sh("tbuser", s1, &r1);
        assert_exit(&r1, 0);
        assert_stderr_has(&r1, "Trace written into stdout");
        assert_file_complete(piped);
        run_sh("tbuser", s2, &r2);
        assert_exit(&r2, 0);
        assert_file_complete(redirected);
}

/* perfetto's refusals, with its reasons, and ours; nothing starts. */
static void test_refused(void) {
        static const struct {
                const char *args[8];
                const char *message;
        } cases[] = {
                { { "--attach=k", "-c", "CFG", "--txt" }, "Cannot specify a trace config with this option" },
                { { "--attach=k", "-t", "1s" }, "Cannot specify a trace config with this option" },
                { { "--attach=k", "sched/sched_switch" }, "Cannot specify a trace config with this option" },
                { { "--attach=k", "-o", "OUT" }, "Can't pass an --out file with this option" },
                { { "--is_detached=k", "-o", "OUT" }, "Can't pass an --out file with this option" },
                { { "--is_detached=k", "-t", "1s" }, "Cannot specify a trace config with this option" },
                { { "--stop" }, "--stop is supported only in combination with --attach" },
                { { "--stop", "-t", "1s", "-o", "OUT", "sched/sched_switch" },
                  "--stop is supported only in combination with --attach" },
                { { "--detach=k", "--attach=k" }, "--attach and --detach are mutually exclusive" },
                { { "--detach=k", "-d", "-c", "CFG", "--txt", "-o", "OUT" },
                  "--detach and --background are mutually exclusive" },
                { { "--detach=k", "-D", "-c", "CFG", "--txt", "-o", "OUT" },
                  "--detach and --background are mutually exclusive" },
                { { "--detach=k", "-c", "CFG", "--txt", "-o", "-" }, "Cannot write the trace to stdout (-o -) with --detach" },
                { { "-d", "-t", "1s", "-o", "-", "sched/sched_switch" },
                  "Cannot write the trace to stdout (-o -) with --background" },
                { { "-c", "CFG", "--txt", "-t", "1s", "-o", "OUT" },
                  "Cannot specify both -c/--config and any of --time, --size, --buffer" },
                { { "-c", "CFG", "--txt", "-o", "OUT", "sched/sched_switch" },
                  "Cannot specify both -c/--config and any of --time, --size, --buffer" },
                { { "-o", "OUT" }, "The TraceConfig is empty" },
                { { "-t", "1s", "-o", "OUT" }, "No events to record" },
                { { "-t", "1s", "sched/sched_switch" }, "--out is required" },
                { { "--query", "--detach=k" }, "--query cannot be combined with any other argument" },
                { { "--query", "-d" }, "--query cannot be combined with any other argument" },
                { { "--query", "-o", "OUT" }, "--query cannot be combined with any other argument" },
                { { "--list-events", "-t", "1s" }, "--list-events cannot be combined with any other argument" },
                { { "--stop-all", "--attach=k" }, "--stop-all cannot be combined with any other argument" },
                { { "--query", "--stop-all" }, "mutually exclusive" },
                { { "--long", "-t", "1s", "-o", "OUT", "sched/sched_switch" }, "--long is supported only with --query" },
                { { "--json", "--attach=k" }, "--json is supported only with --query and --list-events" },
                { { "-t", "soon", "-o", "OUT", "sched/sched_switch" }, "--time argument is invalid" },
                { { "-b", "lots", "-o", "OUT", "sched/sched_switch" }, "--buffer argument is invalid" },
                { { "-s", "-1", "-o", "OUT", "sched/sched_switch" }, "--size argument is invalid" },
                { { "--detach=", "-c", "CFG", "--txt" }, "a detach key is 1 to 64 printable ASCII characters" },
                { { "-a", "com.example", "-o", "OUT" }, "Android" },
                { { "--query-raw" }, "--query --json" },
                { { "--no-such-option" }, "--help" },
        };
        g_autofree char *dir = make_user_dir("tbuser", "cli-refused");
        g_autofree char *text = config_text(1000);
        g_autofree char *cfg = user_file("tbuser", dir, "config.pbtxt", text, -1);
        g_autofree char *out = g_build_filename(dir, "trace.pftrace", NULL);
        g_auto(Snapshot) before = { 0 };

        snapshot_take(&before);
        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                const char *argv[10] = { NULL };
                g_auto(TbCommandResult) res = { 0 };
                g_autofree char *cli = cli_path();
                size_t n = 0;

                argv[n++] = cli;
                for (size_t j = 0; cases[i].args[j]; j++)
                        argv[n++] = g_str_equal(cases[i].args[j], "CFG") ? cfg :
                                    g_str_equal(cases[i].args[j], "OUT") ? out : cases[i].args[j];
                run_as("tbuser", argv, &res);
                assert_exit(&res, 1);
                assert_stderr_has(&res, cases[i].message);
                g_assert_false(g_file_test(out, G_FILE_TEST_EXISTS));
        }
        assert_nothing_created(&before);
        g_assert_cmpuint(g_strv_length(sessions_of(user_uid("tbuser"))), ==, 0);
}

/* No arguments: perfetto's usage and exit status 1; -h and --version: 0. */
static void test_usage(void) {
        g_auto(TbCommandResult) none = { 0 }, help = { 0 }, version = { 0 };

        run_cli("tbuser", &none, NULL, NULL);
        assert_exit(&none, 1);
        assert_stderr_has(&none, "Usage:");
        run_cli("tbuser", &help, "-h", NULL);
        assert_exit(&help, 0);
        g_assert_nonnull(strstr(help.out, "--is_detached=KEY"));
        g_assert_nonnull(strstr(help.out, "--background-wait"));
        run_cli("tbuser", &version, "--version", NULL);
        assert_exit(&version, 0);
        g_assert_true(g_str_has_prefix(version.out, "tracebus "));
}

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
        g_assert_cmpuint(g_strv_length(sessions_of(user_uid("tbuser"))), ==, 1);
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
        g_autofree char *prefix = g_strdup_printf("%s/%u/", tdir, (unsigned) user_uid("tbuser"));
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
        g_assert_true(wait_no_sessions(user_uid("tbuser"), 10000));
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

static bool wait_pid_gone(pid_t pid, guint timeout_ms) {
        gint64 deadline = g_get_monotonic_time() + (gint64) timeout_ms * 1000;

        while (tb_pid_alive(pid)) {
                if (g_get_monotonic_time() > deadline)
                        return false;
                g_usleep(20 * 1000);
        }
        return true;
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
        sessions = sessions_of(user_uid("tbuser"));
        g_assert_cmpuint(g_strv_length(sessions), ==, 1);
        state = tb_session_state(tb_bus()->conn, sessions[0], NULL);
        g_assert_cmpstr(state, ==, "recording");
        g_assert_true(tb_pid_alive(pid));
        g_usleep(500 * 1000);
        g_assert_cmpint(kill(pid, SIGTERM), ==, 0);
        g_assert_true(wait_pid_gone(pid, 20000));
        g_assert_true(wait_no_sessions(user_uid("tbuser"), 10000));
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
        g_assert_cmpuint(g_strv_length(sessions_of(user_uid("tbuser"))), ==, 1);
        g_assert_cmpint(kill(pid, SIGINT), ==, 0);
        g_assert_true(wait_pid_gone(pid, 20000));
        assert_file_complete(out);
}

/* -D when the session cannot start: exit 1, no pid, the reason on stderr. */
static void test_background_fails(void) {
        g_autofree char *dir = make_user_dir("tbuser", "cli-bgfail");
        g_autofree char *out = g_build_filename(dir, "trace.pftrace", NULL);
        g_auto(TbCommandResult) res = { 0 };

        run_cli("tbuser", &res, "-D", "-t", "60s", "-o", out, "sched/no_such_event", NULL);
        assert_exit(&res, 1);
        g_assert_cmpstr(res.out, ==, "");
        assert_stderr_has(&res, "sched/no_such_event");
        g_assert_cmpuint(g_strv_length(sessions_of(user_uid("tbuser"))), ==, 0);
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
                assert_busy_seen_in(&s, &busy);
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
        sessions = sessions_of(user_uid("tbuser"));
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
        g_assert_cmpstr(g_strstrip(admin.out), ==, "{\"sessions\": []}");
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
        g_assert_cmpuint(g_strv_length(sessions_of(user_uid("tbuser"))), ==, 2);

        sessions = sessions_of(user_uid("tbuser"));
        run_cli("tbuser", &mine, "--stop-all", NULL);
        assert_exit(&mine, 0);
        for (size_t i = 0; sessions[i]; i++) {
                g_autofree char *id = g_path_get_basename(sessions[i]);
                g_autofree char *line = g_strdup_printf("Session %s: trace written into", id);
                assert_stderr_has(&mine, line);
        }
        g_assert_cmpuint(g_strv_length(sessions_of(user_uid("tbuser"))), ==, 0);
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
        sessions = sessions_of(user_uid("tbuser"));
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
        assert_nothing_created(&before);
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
        g_assert_cmpuint(g_strv_length(sessions_of(user_uid("tbchallenge"))), ==, 0);
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

/* ===================================================================== */
/* The README's busctl lines                                              */
/* ===================================================================== */

typedef struct {
        char *command;    /* one shell line */
        char *expected;   /* the reply the README shows, or NULL */
} ReadmeLine;

static void readme_line_free(ReadmeLine *l) {
        g_free(l->command);
        g_free(l->expected);
        g_free(l);
}

/* The comment that ends a line ("   # ..."), outside quotes, or NULL. */
static char *split_comment(char *line) {
        bool in_single = false, in_double = false;

        for (char *p = line; *p; p++) {
                if (*p == '\'' && !in_double)
                        in_single = !in_single;
                else if (*p == '"' && !in_single)
                        in_double = !in_double;
                else if (*p == '#' && !in_single && !in_double && (p == line || p[-1] == ' ')) {
                        *p = '\0';
                        g_strchomp(line);
                        return g_strstrip(g_strdup(p + 1));
                }
        }
        return NULL;
}

/* The shell lines of the fenced sh blocks of README.md's "## busctl" section, with
 * continuation lines joined; each with the reply its comment shows. */
static GPtrArray *readme_busctl_lines(void) {
        g_autofree char *readme = g_build_filename(tb_bus()->source_dir, "README.md", NULL);
        g_autofree char *text = NULL;
        g_auto(GStrv) lines = NULL;
        GPtrArray *out = g_ptr_array_new_with_free_func((GDestroyNotify) readme_line_free);
        g_autoptr(GString) pending = g_string_new(NULL);
        bool section = false, block = false;

        g_assert_true(g_file_get_contents(readme, &text, NULL, NULL));
        lines = g_strsplit(text, "\n", -1);
        for (size_t i = 0; lines[i]; i++) {
                char *l = lines[i];

                if (g_str_has_prefix(l, "## "))
                        section = g_str_equal(l, "## busctl");
                if (!section)
                        continue;
                if (g_str_has_prefix(l, "```")) {
                        block = !block && g_str_equal(l, "```sh");
                        continue;
                }
                if (!block)
                        continue;
                g_strstrip(l);
                if (g_str_has_suffix(l, "\\")) {
                        l[strlen(l) - 1] = '\0';
                        g_string_append_printf(pending, "%s ", g_strstrip(l));
                        continue;
                }
                if (*l == '#') {
                        /* A comment line after a command is the reply it shows. */
                        ReadmeLine *prev = out->len ? out->pdata[out->len - 1] : NULL;
                        if (prev && !prev->expected && pending->len == 0)
                                prev->expected = g_strstrip(g_strdup(l + 1));
                        continue;
                }
                if (*l == '\0' && pending->len == 0)
                        continue;
                g_string_append(pending, l);
                {
                        ReadmeLine *rl = g_new0(ReadmeLine, 1);
                        rl->command = g_string_free(g_steal_pointer(&pending), FALSE);
                        rl->expected = split_comment(rl->command);
                        pending = g_string_new(NULL);
                        g_ptr_array_add(out, rl);
                }
        }
        return out;
}

static bool is_session_path(const char *s) {
        return g_str_has_prefix(s, TB_MANAGER_PATH "/session/");
}

/* Session paths the README shows, replaced by the ones the service gave. */
static char *substitute(const char *command, GHashTable *paths, const char *config) {
        g_autoptr(GString) s = g_string_new(command);
        GHashTableIter it;
        gpointer k, v;

        /* Longest first would matter for session/1 vs session/12: match whole words. */
        g_hash_table_iter_init(&it, paths);
        while (g_hash_table_iter_next(&it, &k, &v)) {
                g_autofree char *pattern = g_strdup_printf("%s(?![0-9])", (const char *) k);
                g_autoptr(GRegex) re = g_regex_new(pattern, 0, 0, NULL);
                g_autofree char *r = g_regex_replace_literal(re, s->str, -1, 0, v, 0, NULL);
                g_string_assign(s, r);
        }
        {
                g_autoptr(GRegex) re = g_regex_new("\\bconfig\\.pbtxt\\b", 0, 0, NULL);
                g_autofree char *r = g_regex_replace_literal(re, s->str, -1, 0, config, 0, NULL);
                g_string_assign(s, r);
        }
        return g_string_free(g_steal_pointer(&s), FALSE);
}

static bool is_number(const char *s) {
        return *s && strspn(s, "0123456789") == strlen(s);
}

/* The reply matches the README's: the same type, every word the README shows
 * (numbers, "..." and file paths vary), and the session paths (mapped). */
static void check_reply(const char *expected, const char *actual, GHashTable *paths) {
        g_auto(GStrv) exp = busctl_tokens(expected), act = busctl_tokens(actual);

        g_assert_nonnull(act[0]);
        g_assert_cmpstr(act[0], ==, exp[0]);
        for (size_t i = 1; exp[i]; i++) {
                const char *e = exp[i];

                if (is_number(e) || g_str_equal(e, "...") || g_str_has_prefix(e, "/var/lib/tracebus/"))
                        continue;
                if (is_session_path(e)) {
                        const char *mapped = g_hash_table_lookup(paths, e);
                        if (!mapped) {
                                g_assert_true(i < g_strv_length(act) && is_session_path(act[i]));
                                g_hash_table_insert(paths, g_strdup(e), g_strdup(act[i]));
                                note("README's %s is %s here\n", e, act[i]);
                                continue;
                        }
                        e = mapped;
                }
                if (!g_strv_contains((const char *const *) act, e)) {
                        note("the reply lacks \"%s\" (README: %s)\n", e, expected);
                        g_assert_not_reached();
                }
        }
}

/* Every busctl line of the README's busctl section, as tbuser, replies checked. */
static void test_readme_busctl(void) {
        g_autofree char *dir = make_user_dir("tbuser", "cli-readme");
        g_autofree char *text = config_text(30000);
        g_autofree char *cfg = user_file("tbuser", dir, "config.pbtxt", text, -1);
        g_autoptr(GPtrArray) lines = readme_busctl_lines();
        g_autoptr(GHashTable) paths = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
        g_autoptr(GString) prelude = g_string_new(NULL);
        guint calls = 0, checked = 0;

        g_assert_cmpuint(lines->len, >, 10);
        for (guint i = 0; i < lines->len; i++) {
                ReadmeLine *l = lines->pdata[i];
                g_autofree char *command = substitute(l->command, paths, cfg);
                g_autofree char *script = NULL;
                g_auto(TbCommandResult) res = { 0 };

                /* Assignments (M="...") are for the lines after them. */
                if (g_regex_match_simple("^[A-Za-z_][A-Za-z0-9_]*=", command, 0, 0)) {
                        g_string_append_printf(prelude, "%s\n", command);
                        continue;
                }
                g_assert_true(g_str_has_prefix(command, "busctl "));
                script = g_strdup_printf("set -e\n%s%s", prelude->str, command);
                run_sh("tbuser", script, &res);
                assert_exit(&res, 0);
                calls++;
                if (l->expected) {
                        check_reply(l->expected, res.out, paths);
                        checked++;
                }
        }
        note("%u busctl lines run, %u replies checked\n", calls, checked);
        g_assert_cmpuint(checked, >, 8);
        stop_all_of("tbuser");
}

/* ===================================================================== */
/* perfetto's documented scripts, unchanged but for `tracebus`            */
/* ===================================================================== */

static void run_compat(const char *example, const char *trace_name) {
        g_autofree char *src = g_build_filename(tb_bus()->source_dir, "tests", "perfetto-compat.sh", NULL);
        g_autofree char *script = copy_executable(src, "perfetto-compat.sh");
        g_autofree char *name = g_strdup_printf("cli-compat-%s", example);
        g_autofree char *dir = make_user_dir("tbuser", name);
        g_autofree char *trace = g_build_filename(dir, trace_name, NULL);
        g_autofree char *line = g_strdup_printf("TRACE_DIR=%s SLEEP=2 %s %s", dir, script, example);
        g_auto(TbCommandResult) res = { 0 };
        g_autoptr(GError) error = NULL;
        TbBusy busy;

        g_assert_true(tb_busy_start("tbbusy-compat", &busy, &error));
        run_sh("tbuser", line, &res);
        tb_busy_stop(&busy);
        assert_exit(&res, 0);
        assert_file_complete(trace);
        g_assert_true(wait_no_sessions(user_uid("tbuser"), 10000));
}

static void test_compat_long_trace(void) {
        run_compat("long-trace", "trace");
}

static void test_compat_ring_buffer(void) {
        run_compat("ring-buffer", "trace");
}

static void test_compat_time_limit(void) {
        gint64 t0 = g_get_monotonic_time();

        run_compat("time-limit", "trace");
        /* --attach stayed up until the 10 s were over. */
        g_assert_cmpint(g_get_monotonic_time() - t0, >, 9 * G_USEC_PER_SEC);
}

static void test_compat_background(void) {
        run_compat("background", "trace.pftrace");
}

int main(int argc, char **argv) {
        /* Children must never find a terminal on stdin unless a case gives them one. */
        if (!freopen("/dev/null", "r", stdin))
                return EXIT_FAILURE;
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();

        tb_test_add_isolated("/bus/cli/options/light-config", test_light_config);
        tb_test_add_isolated("/bus/cli/options/long-options", test_long_options);
        tb_test_add_isolated("/bus/cli/options/size", test_size);
        tb_test_add_isolated("/bus/cli/options/text-config", test_text_config);
        tb_test_add_isolated("/bus/cli/options/binary-config", test_binary_config);
        tb_test_add_isolated("/bus/cli/options/config-errors", test_config_errors);
        tb_test_add_isolated("/bus/cli/options/no-clobber", test_no_clobber);
        tb_test_add_isolated("/bus/cli/options/stdout", test_stdout);
        tb_test_add_isolated("/bus/cli/options/refused", test_refused);
        tb_test_add_isolated("/bus/cli/options/usage", test_usage);
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
        tb_test_add_isolated("/bus/cli/sessions/query", test_query);
        tb_test_add_isolated("/bus/cli/sessions/list-events", test_list_events);
        tb_test_add_isolated("/bus/cli/sessions/stop-all", test_stop_all);
        tb_test_add_isolated("/bus/cli/sessions/stop-session", test_stop_session);
        tb_test_add_isolated("/bus/cli/polkit/denied", test_denied);
        tb_test_add_isolated("/bus/cli/polkit/challenge-no-tty", test_challenge_no_tty);
        tb_test_add_isolated("/bus/cli/polkit/challenge-tty-agent", test_challenge_tty_agent_spawned);
        tb_test_add_isolated("/bus/cli/polkit/challenge-tty-pkttyagent", test_challenge_tty_pkttyagent);
        tb_test_add_isolated("/bus/cli/output/progress-line", test_progress_line);
        tb_test_add_isolated("/bus/cli/readme/busctl", test_readme_busctl);
        tb_test_add_isolated("/bus/cli/compat/long-trace", test_compat_long_trace);
        tb_test_add_isolated("/bus/cli/compat/ring-buffer", test_compat_ring_buffer);
        tb_test_add_isolated("/bus/cli/compat/time-limit", test_compat_time_limit);
        tb_test_add_isolated("/bus/cli/compat/background", test_compat_background);
        return tb_test_run(TB_START_SERVICE);
}
