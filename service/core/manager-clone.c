/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fd-util.h"
#include "log.h"
#include "manager-local.h"

/* Snapshots of running sessions. A snapshot goes either straight into the caller's fd,
 * or into a new file in the caller's trace directory. In the second case the worker
 * thread scans the directory and creates the file, as it does for a start
 * (manager-trace-dir.c), and the snapshot's bytes are charged to the caller's quota as
 * they are written. */

typedef struct PendingClone {
        WorkerJob job;                /* first: the worker's job is the clone */
        Manager *manager;
        uint64_t session_id;
        uid_t uid;
        CloneCallback callback;
        void *userdata;
        TraceQuota *quota;            /* a reference; NULL for the caller's fd */
        uint64_t ended_snapshot;
        char *name;                   /* the file's exact name (trigger snapshots), or NULL */

        /* For the worker (read only there). */
        const char *state_dir;
        TraceDirFileId *skip;
        size_t n_skip;

        /* From the worker. */
        int result;
        int fd;
        char *path;
        uint64_t usage;
} PendingClone;

/* Freed by answer(), where every path a clone takes ends. */
static PendingClone *pending_clone_free(PendingClone *p) {
        if (!p)
                return NULL;
        if (p->quota)
                quota_unref(p->manager, p->quota);
        safe_close(p->fd);
        free(p->path);
        free(p->name);
        free(p->skip);
        return mfree(p);
}

static void answer(PendingClone *p, int r, const SessionCloneResult *result) {
        SessionCloneResult none = { .error = r };

        /* A file for a snapshot that failed is of no use to anyone. */
        if (r < 0 && p->path)
                (void) unlink(p->path);
        p->callback(p->manager, r, result ?: &none, r < 0 ? NULL : p->path, p->userdata);
        pending_clone_free(p);
}

static void on_cloned(const SessionCloneResult *result, void *userdata) {
        PendingClone *p = userdata;

        if (p->quota)
                quota_count_written(p->quota, result->bytes);
        answer(p, result->error, result);
}

static void clone_into(PendingClone *p, Session *s, int fd) {
        Manager *m = p->manager;
        SessionCloneOptions o = {
                .fd = fd,
                .timeout_usec = m->limits.output_timeout_usec,
                .budget = p->quota ? quota_budget(p->quota) : NULL,
                .min_interval_usec = m->limits.clone_min_interval_usec,
        };
        int r = session_clone(s, &o, on_cloned, p);

        if (r < 0)
                answer(p, r, NULL);
}

/* On the worker thread: the scan, then the file, as for a start. */
static void pending_clone_run(WorkerJob *job) {
        PendingClone *p = (PendingClone *) job;
        _cleanup_close_ int dir_fd = -EBADF;
        _cleanup_free_ char *refused = NULL;
        TraceDirFileId id;
        char hint[48];

        dir_fd = trace_dir_open_user(p->state_dir, p->uid);
        p->result = dir_fd < 0 ? dir_fd : trace_dir_usage(dir_fd, p->skip, p->n_skip, &p->usage, &refused);
        if (p->result < 0)
                return;
        snprintf(hint, sizeof(hint), "clone-%" PRIu64, p->session_id);
        p->fd = p->name ? trace_dir_create_named(dir_fd, p->state_dir, p->uid, p->name, &p->path, &id)
                        : trace_dir_create_file(dir_fd, p->state_dir, p->uid, hint, &p->path, &id);
        p->result = MIN(p->fd, 0);
}

static void pending_clone_done(WorkerJob *job, bool ran) {
        PendingClone *p = (PendingClone *) job;
        Session *s;

        if (!ran)
                return answer(p, -ECANCELED, NULL);
        if (p->result < 0)
                return answer(p, p->result, NULL);
        quota_apply_scan(p->quota, p->usage, p->ended_snapshot);
        if (atomic_load(&quota_budget(p->quota)->used) >= quota_budget(p->quota)->limit)
                return answer(p, -EDQUOT, NULL);
        /* The session may have ended while the worker was at it. */
        s = manager_find_live_session(p->manager, p->session_id);
        if (!s)
                return answer(p, -ESRCH, NULL);
        clone_into(p, s, TAKE_FD(p->fd));
}

static int queue_clone(Manager *m, PendingClone *p) {
        int r;

        p->quota = quota_ref(m, p->uid);
        if (!p->quota)
                return -ENOMEM;
        p->ended_snapshot = quota_ended_total(p->quota);
        r = manager_live_files(m, p->uid, &p->skip, &p->n_skip);
        if (r < 0)
                return r;
        return manager_queue_job(m, &p->job);
}

void manager_clone_session(Manager *m, Session *s, uid_t uid, int fd, CloneCallback callback, void *userdata) {
        manager_clone_session_named(m, s, uid, fd, NULL, callback, userdata);
}

void manager_clone_session_named(Manager *m, Session *s, uid_t uid, int fd, const char *name, CloneCallback callback,
                                 void *userdata) {
        _cleanup_close_ int owned = fd;
        PendingClone *p;
        int r;

        p = calloc(1, sizeof(*p));
        if (!p) {
                SessionCloneResult none = { .error = -ENOMEM };
                return callback(m, -ENOMEM, &none, NULL, userdata);
        }
        *p = (PendingClone) {
                .job = { .run = pending_clone_run, .done = pending_clone_done },
                .manager = m, .session_id = s->id, .uid = uid,
                .callback = callback, .userdata = userdata,
                .state_dir = m->state_dir, .fd = -EBADF,
        };
        if (name && !(p->name = strdup(name)))
                return answer(p, -ENOMEM, NULL);
        if (owned >= 0)
                return clone_into(p, s, TAKE_FD(owned));
        /* Refused now rather than after a scan and a file. */
        r = session_clone_check(s, m->limits.clone_min_interval_usec);
        if (r >= 0)
                r = queue_clone(m, p);
        if (r < 0)
                answer(p, r, NULL);
}
