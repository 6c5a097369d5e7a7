/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The CLI suites' helpers (cli-util.h): the tracebus CLI run as a test user,
 * what its exit and stderr must be, its sessions seen from root, a CLI
 * process the test signals, and a JSON syntax check.
 */
#include "cli-util.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* A file of user's in dir. */
char *user_file(const char *user, const char *dir, const char *name, const char *contents, gssize len) {
        g_auto(TbUser) u = { 0 };
        g_autoptr(GError) error = NULL;
        char *path = g_build_filename(dir, name, NULL);

        g_assert_true(tb_user_lookup(user, &u, NULL));
        g_assert_true(g_file_set_contents(path, contents, len, &error));
        g_assert_no_error(error);
        g_assert_cmpint(chown(path, u.uid, u.gid), ==, 0);
        return path;
}

int exit_code(const TbCommandResult *res) {
        return WIFEXITED(res->wait_status) ? WEXITSTATUS(res->wait_status) : -1;
}

/* Runs argv (NULL-terminated) as user and logs it. */
void run_as(const char *user, const char *const *argv, TbCommandResult *res) {
        g_autoptr(GError) error = NULL;
        g_autofree char *line = g_strjoinv(" ", (char **) argv);

        g_assert_true(tb_run_as_user(user, argv, res, &error));
        g_assert_no_error(error);
        log_command(line, res);
}

/* tracebus ARGS... as user. */
void run_cli_v(const char *user, TbCommandResult *res, const char *first, va_list ap) {
        g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func(g_free);

        g_ptr_array_add(argv, cli_path());
        for (const char *a = first; a; a = va_arg(ap, const char *))
                g_ptr_array_add(argv, g_strdup(a));
        g_ptr_array_add(argv, NULL);
        run_as(user, (const char *const *) argv->pdata, res);
}

void run_cli(const char *user, TbCommandResult *res, const char *first, ...) {
        va_list ap;

        va_start(ap, first);
        run_cli_v(user, res, first, ap);
        va_end(ap);
}

/* sh -c SCRIPT as user, with tracebus first in PATH. */
void run_sh(const char *user, const char *script, TbCommandResult *res) {
        g_autofree char *cli = cli_path();
        g_autofree char *bindir = g_path_get_dirname(cli);
        g_autofree char *path = g_strdup_printf("PATH=%s:/usr/sbin:/usr/bin:/sbin:/bin", bindir);
        const char *argv[] = { "env", path, "sh", "-c", script, NULL };

        run_as(user, argv, res);
}

void assert_stderr_has(const TbCommandResult *res, const char *what) {
        if (!res->err || !strstr(res->err, what)) {
                note("stderr lacks \"%s\"\n", what);
                g_assert_not_reached();
        }
}

void assert_exit(const TbCommandResult *res, int code) {
        g_assert_cmpint(exit_code(res), ==, code);
}

/* One line on stderr: an error is one sentence. */
void assert_one_line(const TbCommandResult *res) {
        g_autofree char *err = g_strstrip(g_strdup(res->err ? res->err : ""));
        g_assert_cmpstr(err, !=, "");
        g_assert_null(strchr(err, '\n'));
}

void assert_file_complete(const char *path) {
        g_auto(TbTraceSummary) s = { 0 };

        summarise(path, &s);
        assert_trace_complete(&s);
}

/* protoc's view of the file, which holds the TraceConfig the session ran with. */
char *protoc_decode_trace(const char *path) {
        g_autoptr(GError) error = NULL;
        char *text = NULL;

        g_assert_true(tb_trace_protoc_decode(tb_bus()->source_dir, path, &text, &error));
        g_assert_no_error(error);
        return text;
}

void assert_decoded_has(const char *decoded, const char *what) {
        if (!strstr(decoded, what)) {
                note("the decoded trace lacks \"%s\"\n", what);
                g_assert_not_reached();
        }
}

/* The sessions of uid that are not over, from root's connection. */
char **sessions_of(uid_t uid) {
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

bool wait_no_sessions(uid_t uid, guint timeout_ms) {
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
void stop_all_of(const char *user) {
        g_auto(TbCommandResult) res = { 0 };

        run_cli(user, &res, "--stop-all", NULL);
        g_assert_true(wait_no_sessions(tb_user_uid(user), 20000));
}

/* ---- a CLI process the test signals ---- */

/* tracebus ARGV as user, stdin /dev/null, stdout to out_fd (or /dev/null), stderr to a pipe. */
void cli_spawn(const char *user, const char *const *args, int out_fd, CliProc *ret) {
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
bool cli_proc_expect(CliProc *p, const char *what, guint timeout_ms) {
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
int cli_proc_wait(CliProc *p, guint timeout_ms) {
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

void cli_proc_clear(CliProc *p) {
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

void assert_json(const char *text) {
        const char *end = json_value(text, 0);

        if (!end || *json_ws(end) != '\0') {
                note("not JSON: %s\n", text);
                g_assert_not_reached();
        }
}

/* ===================================================================== */
/* Options                                                                */
/* ===================================================================== */

/* ---- what a refused command must not leave ---- */

void snapshot_take(Snapshot *s) {
        snapshot_state(&s->instances, &s->files);
}

void snapshot_clear(Snapshot *s) {
        g_clear_pointer(&s->instances, g_strfreev);
        g_clear_pointer(&s->files, g_strfreev);
}

void assert_snapshot_unchanged(const Snapshot *before) {
        assert_nothing_created(before->instances, before->files);
}
