/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Raw method calls on root's own GDBus connection, for the hostile input
 * suites (tests/test-hostile-*.c): root is authorized by polkit, so a refusal
 * is the service's validation, not polkit's.
 */

#include <gio/gio.h>
#include <gio/gunixfdlist.h>
#include <glib.h>

#include "system-bus.h"
#include "tb-client.h"

#define ERR_OUTPUT TB_ERROR_OUTPUT_ERROR
#define ERR_QUOTA TB_ERROR_QUOTA_EXCEEDED
#define ERR_UNKNOWN_METHOD "org.freedesktop.DBus.Error.UnknownMethod"

/* Calls method on root's connection; the D-Bus error name, or NULL on success
 * (then the reply in ret_reply, when given). */
char *call_full(const char *path, const char *iface, const char *method, GVariant *params,
                GUnixFDList *fds, GVariant **ret_reply, char **ret_message);
/* A Manager method; a Start that unexpectedly succeeds is stopped again. */
char *manager_call(const char *method, GVariant *params, GUnixFDList *fds);
GVariant *options_with(const char *key, GVariant *value);
GVariant *events_option(const char *const *events);
/* Start("", {Events: sched_switch, DurationMs: 1000, key: value}) with fds. */
char *start_events_with(const char *key, GVariant *value, GUnixFDList *fds);
char *start_text(const char *config);
guint n_sessions_root(void);
/* The service runs, holds its name, has no session, and nothing new exists. */
void assert_unchanged(char **inst, char **files);
void expect_err(const char *what, char *err, const char *want);
GUnixFDList *fd_list_of(int fd);
char *start_with_fd(int fd);
/* Another connection of root's to the test bus, for the current thread's
 * main context (for floods from threads). */
GDBusConnection *root_connection_new(void);
/* Last: the service still runs, with no session and no tracefs instance left. */
void root_test_no_leftovers(void);
