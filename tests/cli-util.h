/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What the CLI suites (tests/test-cli-*.c) share on top of tb-client.h: the
 * tracebus CLI run as a test user and logged, assertions on its exit code and
 * stderr, the sessions of a user as root sees them, a CLI process the test
 * signals, and a JSON syntax check for --json. Everything here runs inside a
 * test case, with tb_bus() set.
 */

#include <glib.h>
#include <stdarg.h>
#include <stdbool.h>
#include <sys/types.h>

#include "system-bus.h"
#include "tb-client.h"
#include "trace-file.h"

/* A file of user's in dir, with contents. */
char *user_file(const char *user, const char *dir, const char *name, const char *contents, gssize len);

/* ---- running the CLI ---- */

/* The exit code, or -1 when it did not exit. */
int exit_code(const TbCommandResult *res);
/* Runs argv (NULL-terminated) as user and logs it. */
void run_as(const char *user, const char *const *argv, TbCommandResult *res);
/* tracebus ARGS... as user. */
void run_cli_v(const char *user, TbCommandResult *res, const char *first, va_list ap);
G_GNUC_NULL_TERMINATED void run_cli(const char *user, TbCommandResult *res, const char *first, ...);
/* sh -c SCRIPT as user, with tracebus first in PATH. */
void run_sh(const char *user, const char *script, TbCommandResult *res);
void assert_stderr_has(const TbCommandResult *res, const char *what);
void assert_exit(const TbCommandResult *res, int code);
/* One line on stderr: an error is one sentence. */
void assert_one_line(const TbCommandResult *res);

/* ---- trace files ---- */

/* Decodes, and is complete (assert_trace_complete()). */
void assert_file_complete(const char *path);
/* protoc's view of the file, which holds the TraceConfig the session ran with. */
char *protoc_decode_trace(const char *path);
void assert_decoded_has(const char *decoded, const char *what);

/* ---- sessions, as root sees them ---- */

/* The sessions of uid that are not over. */
char **sessions_of(uid_t uid);
bool wait_no_sessions(uid_t uid, guint timeout_ms);
/* No leftovers for the next case: tracebus --stop-all as user, then none left. */
void stop_all_of(const char *user);

/* What a refused command must not leave: tracefs instances and trace files. */
typedef struct {
        char **instances;
        char **files;
} Snapshot;

void snapshot_take(Snapshot *s);
void snapshot_clear(Snapshot *s);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Snapshot, snapshot_clear)
/* No tracefs instance and no file in the trace directory appeared since before. */
void assert_snapshot_unchanged(const Snapshot *before);

/* ---- a CLI process the test signals ---- */

typedef struct {
        pid_t pid;
        int err_fd;
        GString *err;   /* what it printed so far */
} CliProc;

/* tracebus ARGV as user, stdin /dev/null, stdout to out_fd (or /dev/null), stderr to a pipe. */
void cli_spawn(const char *user, const char *const *args, int out_fd, CliProc *ret);
/* Waits for a line containing what on its stderr. */
bool cli_proc_expect(CliProc *p, const char *what, guint timeout_ms);
/* Reaps it (SIGKILL after timeout_ms); the rest of its stderr goes to p->err. */
int cli_proc_wait(CliProc *p, guint timeout_ms);
void cli_proc_clear(CliProc *p);

/* ---- --json ---- */

/* Fails the test unless text is one JSON value (a syntax check only). */
void assert_json(const char *text);
