/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The manager's internals shared by its files: manager.c (the session list),
 * manager-sessions.c (the rules of a start), manager-trace-dir.c (starts into the
 * trace directory, on the worker, and the per-UID quotas) and manager-clone.c
 * (snapshots, which may go into the trace directory too). */

#include "manager.h"

/* The limits and the key: -EUSERS, -EADDRINUSE, with *ret_failure saying which. */
int manager_check_start(Manager *m, const StartRequest *req, StartFailure *ret_failure);
/* Checked again, then session @id into @output, added to the manager. */
int manager_create_session(Manager *m, StartRequest *req, uint64_t id, SessionOutput *output, StartResult *res);

/* A start with no output fd: the worker scans and creates, the loop finishes it. */
void manager_start_in_trace_dir(Manager *m, StartRequest *req, StartCallback callback, void *userdata);
/* manager_free(): the worker stopped, the quotas go. */
void manager_free_trace_dir(Manager *m);

/* The trace directory's quotas and scans (manager-trace-dir.c), shared with the
 * snapshots written there (manager-clone.c). Each user of a quota holds a reference. */
#include "trace-dir.h"
TraceQuota *quota_ref(Manager *m, uid_t uid);
void quota_unref(Manager *m, TraceQuota *q);
void quota_apply_scan(TraceQuota *q, uint64_t usage, uint64_t ended_snapshot);
TraceBudget *quota_budget(TraceQuota *q);
void quota_count_written(TraceQuota *q, uint64_t bytes);
uint64_t quota_ended_total(TraceQuota *q);
/* The files @uid's live sessions write into (counted as written, left out of scans). */
int manager_live_files(Manager *m, uid_t uid, TraceDirFileId **ret, size_t *ret_n);
/* Hands @job to the trace directory's worker, which is made on first use; logs which
 * step failed. */
int manager_queue_job(Manager *m, WorkerJob *job);
