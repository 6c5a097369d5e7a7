/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The manager's internals shared by its files: manager.c (the session list),
 * manager-sessions.c (the rules of a start) and manager-trace-dir.c (starts into the
 * trace directory, on the worker, and the per-UID quotas). */

#include "manager.h"

/* The limits and the key: -EUSERS, -EADDRINUSE, with *ret_failure saying which. */
int manager_check_start(Manager *m, const StartRequest *req, StartFailure *ret_failure);
/* Checked again, then session @id into @output, added to the manager. */
int manager_create_session(Manager *m, StartRequest *req, uint64_t id, SessionOutput *output, StartResult *res);

/* A start with no output fd: the worker scans and creates, the loop finishes it. */
void manager_start_in_trace_dir(Manager *m, StartRequest *req, StartCallback callback, void *userdata);
/* manager_free(): the worker stopped, the quotas go. */
void manager_free_trace_dir(Manager *m);
