/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What the sessions suites (tests/test-sessions-*.c) and the hostile-input
 * suites share on top of tb-client.h: sessions started and commanded through
 * the sd-bus test client, their properties and tracefs instances as root
 * sees them, and the clean slate around each case (SESSION_CASE()).
 */

#include <glib.h>
#include <stdbool.h>
#include <sys/types.h>

#include "system-bus.h"
#include "tb-client.h"
#include "trace-file.h"

/* The polkit rule that test-sessions-limits.c installs, removed before every case. */
#define LIMIT_RULES_FILE "40-tracebus-sessions-limit.rules"

/* sched_switch + sched_waking written into the file every period_ms, so the
 * file grows while recording; max_size 0: no size limit. */
char *config_periodic(guint duration_ms, guint period_ms, guint64 max_size);
/* The text of tests/fixtures/textproto/name. */
char *fixture_config(const char *name);
/* The last element of a session path. */
const char *session_id(const char *path);
/* The tracefs instance of a session: tracebus-<service pid>-<session id>. */
char *instance_of(const char *path);
/* Its tracefs instance exists. */
bool instance_exists(const char *path);
/* The session ended (or is gone) and its instance is gone. */
void wait_over(const char *path, guint timeout_ms);
/* State is "recording" and the tracefs instance exists. */
void assert_recording(const char *path);
/* As root (who may read every session's properties). */
bool detached_property(const char *path);
/* A string property of the session, as root. */
char *string_property(const char *path, const char *name);
/* The size of path, which must exist. */
off_t file_size(const char *path);
/* The size of path once it is above size, or when deadline (monotonic) passes. */
off_t wait_larger(const char *path, off_t size, gint64 deadline);
/* Spawns a client that starts a session and holds its connection; waits
 * until the session records. */
char *start_held(const ClientSpec *spec, Client *c);
/* A client starts a session and leaves the bus at once. */
char *start_and_leave(const ClientSpec *spec);
/* One command on a fresh connection of user; its reply payload, or NULL and
 * the whole error in ret_err. */
char *one_cmd(const char *user, const char *cmd, char kind, char **ret_err);
/* The error name one command gets, or NULL when it succeeds. */
char *cmd_error(const char *user, const char *cmd, char kind);
/* IsDetached(key) as user, which must succeed. */
bool is_detached_as(const char *user, const char *key);
/* Manager.Stop as user, who must succeed; the stats. */
GHashTable *stop_as(const char *user, const char *path);
/* A command on a held client that must succeed. */
char *must(Client *c, const char *cmd, char kind);
/* A command on a held client that must fail; the error name. */
char *must_fail(Client *c, const char *cmd, char kind);
/* logs/service.log so far ("" when missing). */
char *service_log(void);
/* Whether tracebusd has a file named like @file mapped (its /proc/PID/maps): a library it
 * loads only when a session needs it. */
bool service_maps(const char *file);
/* The service logged how the session ended: "Session N of UID U ended (reason)". */
void assert_end_reason_logged(const char *path, uid_t uid, const char *reason);
/* The session ends within timeout_ms, then the busy pair stops, and the
 * service logged that it ended for uid with reason. */
void wait_ended(const char *path, guint timeout_ms, TbBusy *busy, uid_t uid, const char *reason);
/* out decodes, complete and closed, with the busy pair in it; its summary in s. */
void assert_closed_trace_with(const char *out, const TbBusy *busy, TbTraceSummary *s);
/* Every session, as root (polkit authorizes uid 0 for org.tracebus.manage). */
char **all_sessions(void);
/* Manager.Stop as root; a failure is only noted. */
void root_stop(const char *path);
/* Removes LIMIT_RULES_FILE from the polkit rules, if there. */
void remove_limit_rule(void);
/* Sessions of a failed case may still be ending (their clients died with it). */
void wait_no_own_instances(guint timeout_ms);
/* Before a case: nothing left from an earlier, failed one (that one failed
 * already; this keeps the failure from spreading). */
void session_case_begin(void);
/* After a case: it cleaned up. */
void session_case_end(void);
/* The service still runs, holds its name, and none of its tracefs instances is left. */
void assert_service_left_nothing(void);
/* Last: assert_service_left_nothing(), once the sessions of a failed case had
 * time to end. */
void session_test_no_leftovers(void);

/* case_fn(): test_fn() between session_case_begin() and session_case_end(). */
#define SESSION_CASE(fn)                      \
        static void case_##fn(void) {         \
                session_case_begin();         \
                test_##fn();                  \
                session_case_end();           \
        }
