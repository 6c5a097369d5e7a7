/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What the bus test binaries share on top of system-bus.h:
 *
 *  - a small sd-bus client, forked and run as a test user (ClientSpec,
 *    client_spawn() ...). It talks to the test over two pipes: it reports
 *    lines ("N name", "O path", "S\tkey=value...", "E name\tmessage", and the
 *    signals it receives), and, while it holds its connection, it takes
 *    commands, one a line, that it runs on that same connection;
 *  - busctl output helpers (busctl_tokens(), busctl_stats());
 *  - trace file assertions (summarise(), assert_trace_complete() ...);
 *  - small helpers around the test stack (wait_state(), open_output() ...).
 *
 * (tb-client.c: the client; tb-stack.c: busctl, trace files and the stack.)
 *
 * Everything here runs inside a test case (a g_test_trap_subprocess() child
 * of tb_test_run()), with tb_bus() set.
 */

#include <glib.h>
#include <stdbool.h>
#include <sys/types.h>

#include "system-bus.h"
#include "trace-file.h"

#define ERR_ACCESS_DENIED "org.freedesktop.DBus.Error.AccessDenied"
#define ERR_INVALID_ARGS "org.freedesktop.DBus.Error.InvalidArgs"
#define ERR_INTERACTIVE "org.freedesktop.DBus.Error.InteractiveAuthorizationRequired"
#define ERR_INVALID_CONFIG TB_ERROR_INVALID_CONFIG
#define ERR_UNKNOWN_EVENT TB_ERROR_UNKNOWN_EVENT
#define ERR_NO_SUCH_SESSION TB_ERROR_NO_SUCH_SESSION
#define ERR_UNKNOWN_OBJECT "org.freedesktop.DBus.Error.UnknownObject"
#define ERR_TOO_MANY_SESSIONS TB_ERROR_TOO_MANY_SESSIONS
#define ERR_KEY_IN_USE TB_ERROR_KEY_IN_USE

#define note(...) g_printerr("# " __VA_ARGS__)

/* sched/sched_switch and sched/sched_waking */
extern const char *const sched_events[];

/* A text TraceConfig: sched_switch + sched_waking, 4 MiB buffer, duration_ms. */
char *config_text(guint duration_ms);

/* ===================================================================== */
/* The sd-bus client                                                      */
/* ===================================================================== */

typedef enum {
        OP_HOLD_NAME,     /* connect, report the unique name, then take commands */
        OP_START,         /* Manager.Start; with hold, then take commands */
        OP_STOP_MANAGER,  /* Manager.Stop(path) */
        OP_STOP_SESSION,  /* Session.Stop() on path */
} ClientOp;

typedef struct {
        const char *user;           /* a user name; "root" stays uid 0 */
        ClientOp op;
        const char *config;         /* Start: "" when NULL */
        const char *const *events;  /* Start: option Events */
        guint32 duration_ms;        /* Start: option DurationMs, when non-zero */
        guint32 buffer_size_kb;     /* Start: option BufferSizeKb, when non-zero */
        const char *detach_key;     /* Start: option DetachKey, when set */
        int output_fd;              /* Start: option Output, when >= 0 */
        const char *path;           /* Stop; with hold, the session the commands act on */
        bool interactive;
        bool hold;                  /* OP_START: keep the connection and take commands */
} ClientSpec;

typedef struct {
        pid_t pid;
        int report_fd;     /* lines from the child */
        int ctl_fd;        /* commands to the child */
        GPtrArray *queued; /* report lines read but not asked for yet */
} Client;

/*
 * A holding client (OP_HOLD_NAME, or OP_START with hold) subscribes, before
 * it reports its name, to Manager.SessionEnded and to every signal of
 * interface org.freedesktop.DBus.Properties, and reports what arrives:
 *   "X path\treason\tkey=value..."           SessionEnded (stats as Stop's)
 *   "P path\tinterface\tkey=value..."        PropertiesChanged (changed props)
 * Then it runs these commands, one a line (KEY: the rest of the line, which
 * may be empty), on its own connection; the reply line is given after "->":
 *   start               Manager.Start as in the spec        -> "O path"
 *   stop                Manager.Stop(path)                  -> "S\tkey=value..."
 *   sstop               Session.Stop() on path               -> "S\tkey=value..."
 *   detach KEY          Manager.Detach(path, KEY)           -> "D ok"
 *   sdetach KEY         Session.Detach(KEY) on path          -> "D ok"
 *   attach KEY          Manager.Attach(KEY), path := result -> "O path"
 *   isdetached KEY      Manager.IsDetached(KEY)             -> "B true" / "B false"
 *   list                Manager.ListSessions()              -> "L path path ..."
 *   get PROP            Properties.Get(Session, PROP)       -> "V\tPROP=value"
 *   getall              Properties.GetAll(Session)          -> "V\tkey=value..."
 *   introspect PATH     Introspectable.Introspect on PATH   -> "I xml" (newlines as spaces)
 *   use PATH            path := PATH                        -> "U ok"
 *   quit                exit
 * Any failed call reports "E error.name\tmessage" instead. The client exits
 * when the ctl pipe closes (client_finish()).
 */
void client_spawn(const ClientSpec *spec, Client *ret);
/* A child of one's own behind the same pipes: @func runs in the forked child, still
 * root, with @user's credentials (NULL for "root") to take with tb_user_become();
 * it writes report lines to @report_fd for client_expect(), reads @ctl_fd, and never
 * returns. */
typedef G_NORETURN void (*TbClientChildFunc)(const TbUser *user, int report_fd, int ctl_fd, const void *data);
void client_spawn_func(const char *user, TbClientChildFunc func, const void *data, Client *ret);
/* The next report line of the given kind ('N', 'O', 'S', 'X', ...), without
 * the kind letter and the one space after it (for 'S', 'V', 'X', 'P' lines the
 * payload starts with a tab). Lines of other kinds are kept for later calls.
 * An 'E' line ends the wait: NULL, and ret_error gets "name\tmessage". */
char *client_expect(Client *c, char kind, guint timeout_ms, char **ret_error);
/* Sends one command line (no newline in cmd) and waits up to 30 s for the
 * reply of the given kind, as client_expect(). */
char *client_cmd(Client *c, const char *cmd, char kind, char **ret_error);
/* Every line of kind that arrives within ms (and those already kept). */
GPtrArray *client_collect(Client *c, char kind, guint ms);
/* Closes the ctl pipe, waits up to timeout_ms (then SIGKILL), reaps. */
int client_finish(Client *c, guint timeout_ms);
/* SIGKILL and reap; returns the wait status. */
int client_kill(Client *c);
/* Runs a non-holding client to completion. Returns the error name (NULL on
 * success); the O or S payload in ret_out, the whole "name\tmessage" in
 * ret_full_error. */
char *client_run(const ClientSpec *spec, char **ret_out);
char *client_run_full(const ClientSpec *spec, char **ret_out, char **ret_full_error);

/* The error name of a "name\tmessage" report (a copy), and its message part. */
char *error_name(const char *err);
const char *error_message(const char *err);

/* "\tEvents=1\tOutputPath=/x" -> table */
GHashTable *parse_stats(const char *s);

/* ===================================================================== */
/* busctl                                                                 */
/* ===================================================================== */

/* Splits busctl's output into tokens, honouring "..." with \ escapes. */
char **busctl_tokens(const char *s);
/* busctl's a{sv} output (a{sv} N "Key" t 1 "OutputPath" s "/x" ...) -> table. */
GHashTable *busctl_stats(const char *out);
void log_command(const char *what, const TbCommandResult *res);

/* ===================================================================== */
/* Trace files                                                            */
/* ===================================================================== */

/* Decodes the file (or fails the test) and logs a summary. */
void summarise(const char *path, TbTraceSummary *s);
/* What every complete trace must have. */
void assert_trace_complete(const TbTraceSummary *s);
/* The closing packets: a tracing_disabled service event and/or the
 * END_OF_TRACE FtraceStats. False with error when the file does not decode. */
bool trace_closing_packets(const char *path, bool *ret_tracing_disabled, bool *ret_end_stats, GError **error);
/* The file decodes, is complete (assert_trace_complete()) and has at least
 * one of the closing packets. */
void assert_trace_file_closed(const char *path);
void assert_busy_seen(const TbTraceSummary *s, const TbBusy *busy);

/* ===================================================================== */
/* The stack                                                              */
/* ===================================================================== */

/* Polls the session's State until want (or timeout); returns the last one. */
char *wait_state(const char *path, const char *want, guint timeout_ms);
/* A new file in the test's tmpdir, open O_RDWR. */
int open_output(const char *name, char **ret_path);
/* STATE_DIRECTORY/traces */
char *traces_dir(void);
/* A 0700 directory of user in the tmpdir. */
char *make_user_dir(const char *user, const char *name);
/* The CLI, copied where every test user can execute it. */
/* A file copied from the build or source tree where every test user can read and run
 * it: those trees may sit under a directory they cannot traverse (e.g. /root). */
char *copy_executable(const char *src, const char *name);
char *cli_path(void);
/* The tracefs instances of this stack's tracebusd (tracebus-<its pid>-*):
 * other test runs on the machine may have instances of their own. */
char **own_instances(void);
/* The same for a tracebusd that may have exited already. */
char **instances_of_pid(pid_t pid);
/* Own instances and the files in the trace dir. */
void snapshot_state(char ***ret_instances, char ***ret_files);
/* No new tracefs instance and no new file in the trace dir since the snapshot. */
void assert_nothing_created(char **instances_before, char **files_before);
/* A file the service wrote for uid: directly in traces/<uid>/, owned by uid, 0600. */
void assert_service_file(const char *file, uid_t uid);
/* The one new regular file under traces/ since files_before, or NULL. */
char *new_trace_file(char **files_before);
