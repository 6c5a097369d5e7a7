/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Starts into the service's trace directory, and the quota of each UID there.
 *
 * Scanning a user's directory and creating the file block on the file system (and the
 * directory is the user's to fill), so they run on the worker thread; the session is
 * created back on the event loop, and the caller hears of it through its callback.
 *
 * The quota is counted as the sessions write: each UID's TraceBudget is charged by the
 * writers of all its sessions (from their threads) before every write. What the files
 * outside live sessions hold is rescanned at every start, since users delete files:
 *     used = baseline (the last scan, live sessions' files left out)
 *          + what live sessions wrote
 *          + what sessions that ended since the last scan wrote (their files were left out).
 * The worker runs jobs in order, so each scan's result replaces the one before. */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fd-util.h"
#include "log.h"
#include "manager-local.h"
#include "trace-dir.h"

struct TraceQuota {
        TraceQuota *next;
        uid_t uid;
        unsigned n_users;             /* its sessions and its starts waiting for the worker */
        TraceBudget budget;           /* charged by its sessions' writers */
        /* Event loop only. */
        uint64_t baseline;            /* files outside live sessions, at the last scan */
        uint64_t ended_total;         /* what its ended sessions wrote, all along */
        uint64_t ended_applied;       /* of that, what a scan has counted since */
};

struct PendingStart {
        WorkerJob job;                /* first: the worker's job is the start */
        Manager *manager;             /* NULL once answered with -ECANCELED */
        PendingStart *next, *prev;
        StartRequest request;
        StartCallback callback;
        void *userdata;
        uint64_t id;
        TraceQuota *quota;            /* a reference, until the session takes it over */
        uint64_t ended_snapshot;      /* quota->ended_total when the scan was queued */

        /* For the worker (read only there). */
        const char *state_dir;
        TraceDirFileId *skip;         /* the UID's live sessions' files */
        size_t n_skip;

        /* From the worker. */
        int result;
        int fd;
        char *path;
        TraceDirFileId file_id;
        uint64_t usage;
        char *refused_entry;
        int dir_fd;                   /* the directory a rotating session's chunks go to */
};

static PendingStart *pending_start_of(WorkerJob *job) {
        return (PendingStart *) job;
}

static TraceQuota *quota_of(TraceBudget *budget) {
        return (TraceQuota *) ((uint8_t *) budget - offsetof(TraceQuota, budget));
}

TraceQuota *quota_ref(Manager *m, uid_t uid) {
        TraceQuota *q;

        for (q = m->quotas; q; q = q->next)
                if (q->uid == uid)
                        break;
        if (!q) {
                q = calloc(1, sizeof(*q));
                if (!q)
                        return NULL;
                q->uid = uid;
                /* Set once, before a writer has it: the recorders of the user's sessions
                 * read it from their threads without a lock (the limits are the daemon
                 * config's, read at startup). */
                q->budget.limit = m->limits.trace_dir_quota_bytes;
                q->next = m->quotas;
                m->quotas = q;
        }
        q->n_users++;
        return q;
}

/* With its last user goes what it knew: the next start scans afresh. */
void quota_unref(Manager *m, TraceQuota *q) {
        if (!q || --q->n_users > 0)
                return;
        for (TraceQuota **p = &m->quotas; *p; p = &(*p)->next)
                if (*p == q) {
                        *p = q->next;
                        break;
                }
        free(q);
}

/* A scan found @usage outside the live sessions: it replaces the last scan, and the
 * sessions that had ended when it was queued, whose files it counted. */
void quota_apply_scan(TraceQuota *q, uint64_t usage, uint64_t ended_snapshot) {
        uint64_t replaced = q->baseline + (ended_snapshot - q->ended_applied);

        if (usage >= replaced)
                atomic_fetch_add(&q->budget.used, usage - replaced);
        else
                atomic_fetch_sub(&q->budget.used, replaced - usage);
        q->baseline = usage;
        q->ended_applied = ended_snapshot;
}

TraceBudget *quota_budget(TraceQuota *q) {
        return &q->budget;
}

/* A snapshot's file has been written: its bytes count as an ended session's until the
 * next scan of the directory sees the file itself. */
void quota_count_written(TraceQuota *q, uint64_t bytes) {
        q->ended_total += bytes;
}

uint64_t quota_ended_total(TraceQuota *q) {
        return q->ended_total;
}

void manager_release_quota(Manager *m, Session *s) {
        TraceQuota *q;

        if (!s->output_budget)
                return;
        q = quota_of(s->output_budget);
        s->output_budget = NULL;
        q->ended_total += s->final_stats.bytes_written;
        quota_unref(m, q);
}

static PendingStart *pending_start_free(PendingStart *p) {
        if (!p)
                return NULL;
        /* A file created for a start that did not happen. */
        if (p->path)
                (void) unlink(p->path);
        free(p->path);
        safe_close(p->fd);
        safe_close(p->dir_fd);
        start_request_done(&p->request);
        free(p->skip);
        free(p->refused_entry);
        return mfree(p);
}
DEFINE_TRIVIAL_CLEANUP_FUNC(PendingStart *, pending_start_free);

static void pending_start_unlink(Manager *m, PendingStart *p) {
        if (p->prev)
                p->prev->next = p->next;
        else
                m->pending_starts = p->next;
        if (p->next)
                p->next->prev = p->prev;
        p->next = p->prev = NULL;
}

/* A rotating session's file is the first of its chunks, NAME.0; the recorder creates
 * NAME.1, NAME.2, ... next to it. */
static int name_first_chunk(int dir_fd, char **path) {
        _cleanup_free_ char *chunk = NULL;
        const char *name = strrchr(*path, '/') + 1;

        if (asprintf(&chunk, "%s.0", *path) < 0)
                return -ENOMEM;
        if (renameat2(dir_fd, name, dir_fd, strrchr(chunk, '/') + 1, RENAME_NOREPLACE) < 0)
                return -errno;
        free_and_replace(*path, chunk);
        return 0;
}

/* On the worker thread. */
static void pending_start_run(WorkerJob *job) {
        PendingStart *p = pending_start_of(job);
        _cleanup_close_ int dir_fd = -EBADF;
        char hint[32];

        dir_fd = trace_dir_open_user(p->state_dir, p->request.uid);
        p->result = dir_fd < 0 ? dir_fd : trace_dir_usage(dir_fd, p->skip, p->n_skip, &p->usage, &p->refused_entry);
        if (p->result < 0)
                return;
        snprintf(hint, sizeof(hint), "%" PRIu64, p->id);
        p->fd = trace_dir_create_file(dir_fd, p->state_dir, p->request.uid, hint, &p->path, &p->file_id);
        p->result = MIN(p->fd, 0);
        if (p->result >= 0 && (p->request.config.rotate_every_ms > 0 || p->request.config.rotate_bytes > 0)) {
                p->result = name_first_chunk(dir_fd, &p->path);
                if (p->result >= 0)
                        p->dir_fd = TAKE_FD(dir_fd);
        }
}

static bool is_refusal(int r) {
        return r == -ENOTDIR || r == -ELOOP || r == -EMLINK || r == -E2BIG;
}

/* Back on the loop: the quota, then the session. */
static int pending_start_finish(Manager *m, PendingStart *p, StartResult *res) {
        SessionOutput output = { .timeout_usec = m->limits.output_timeout_usec };
        int r;

        res->failure = is_refusal(p->result) ? START_FAILURE_TRACE_DIR : START_FAILURE_OUTPUT;
        res->refused_entry = p->refused_entry;
        if (p->result < 0)
                return p->result;
        quota_apply_scan(p->quota, p->usage, p->ended_snapshot);
        if (atomic_load(&p->quota->budget.used) >= p->quota->budget.limit)
                return -EDQUOT;

        output.fd = TAKE_FD(p->fd);
        output.path = p->path;
        output.budget = &p->quota->budget;
        output.has_chunk_dir = p->dir_fd >= 0;
        output.chunk_dir_fd = TAKE_FD(p->dir_fd);
        r = manager_create_session(m, &p->request, p->id, &output, res);
        if (r < 0)
                return r;
        /* The session keeps the file, and the reference to the quota. */
        res->session->output_dev = p->file_id.dev;
        res->session->output_ino = p->file_id.ino;
        p->path = mfree(p->path);
        p->quota = NULL;
        return 0;
}

static void pending_start_done(WorkerJob *job, bool ran) {
        _cleanup_(pending_start_freep) PendingStart *p = pending_start_of(job);
        StartResult res = { .request = &p->request };
        Manager *m = p->manager;
        int r;

        if (!m)         /* answered already */
                return;
        pending_start_unlink(m, p);
        r = ran ? pending_start_finish(m, p, &res) : -ECANCELED;
        quota_unref(m, p->quota);
        p->callback(m, r, &res, p->userdata);
}

int manager_live_files(Manager *m, uid_t uid, TraceDirFileId **ret, size_t *ret_n) {
        size_t n = 0;

        for (Session *s = m->sessions; s; s = s->next)
                n += s->owner_uid == uid && s->output_budget;
        *ret = calloc(MAX(n, (size_t) 1), sizeof(TraceDirFileId));
        if (!*ret)
                return -ENOMEM;
        *ret_n = 0;
        for (Session *s = m->sessions; s; s = s->next)
                if (s->owner_uid == uid && s->output_budget)
                        (*ret)[(*ret_n)++] = (TraceDirFileId) { s->output_dev, s->output_ino };
        return 0;
}

static int snapshot_live_files(Manager *m, PendingStart *p) {
        return manager_live_files(m, p->request.uid, &p->skip, &p->n_skip);
}

int manager_queue_job(Manager *m, WorkerJob *job) {
        int r;

        if (!m->worker) {
                r = worker_new(m->event, &m->worker);
                if (r < 0)
                        return log_warning_errno(r, "Trace directory: cannot set up the worker: %m");
        }
        r = worker_submit(m->worker, job);
        if (r < 0)
                return log_warning_errno(r, "Trace directory: cannot start the worker thread: %m");
        return 0;
}

/* The limits, with the starts still waiting counted as sessions: nobody queues more
 * scans than they may have sessions. */
static int check_pending_limits(Manager *m, uid_t uid, StartFailure *ret_failure) {
        unsigned n_uid = manager_count_sessions(m, uid), n_all = m->n_sessions;

        for (PendingStart *p = m->pending_starts; p; p = p->next) {
                n_uid += p->request.uid == uid;
                n_all++;
        }
        if (n_uid >= m->limits.max_sessions_per_uid)
                *ret_failure = START_FAILURE_USER_LIMIT;
        else if (n_all >= m->limits.max_sessions)
                *ret_failure = START_FAILURE_SERVICE_LIMIT;
        else
                return 0;
        return -EUSERS;
}

static int queue_start(Manager *m, PendingStart *p, StartResult *res) {
        int r;

        /* The cheap checks first: no scan for a start the limits refuse anyway. */
        r = manager_check_start(m, &p->request, &res->failure);
        if (r >= 0)
                r = check_pending_limits(m, p->request.uid, &res->failure);
        if (r < 0)
                return r;
        res->failure = START_FAILURE_SESSION_ID;
        r = manager_new_session_id(m, &p->id);
        if (r < 0)
                return r;
        res->failure = START_FAILURE_OUTPUT;
        p->quota = quota_ref(m, p->request.uid);
        if (!p->quota)
                return -ENOMEM;
        p->ended_snapshot = p->quota->ended_total;
        r = snapshot_live_files(m, p);
        if (r < 0)
                return r;
        return manager_queue_job(m, &p->job);
}

void manager_start_in_trace_dir(Manager *m, StartRequest *req, StartCallback callback, void *userdata) {
        _cleanup_(pending_start_freep) PendingStart *p = NULL;
        StartResult res = { .request = req, .failure = START_FAILURE_OUTPUT };
        int r;

        p = calloc(1, sizeof(*p));
        if (!p) {
                callback(m, -ENOMEM, &res, userdata);
                return;
        }
        *p = (PendingStart) {
                .job = { .run = pending_start_run, .done = pending_start_done },
                .manager = m,
                .request = *req,
                .callback = callback,
                .userdata = userdata,
                .state_dir = m->state_dir,
                .fd = -EBADF,
                .dir_fd = -EBADF,
        };
        *req = (StartRequest) { .uid = req->uid, .output_fd = -EBADF };
        res.request = &p->request;
        r = queue_start(m, p, &res);
        if (r < 0) {
                quota_unref(m, TAKE_PTR(p->quota));
                callback(m, r, &res, userdata);
                return;
        }
        p->next = m->pending_starts;
        if (p->next)
                p->next->prev = p;
        m->pending_starts = TAKE_PTR(p);
}

void manager_cancel_starts(Manager *m) {
        while (m->pending_starts) {
                PendingStart *p = m->pending_starts;
                StartResult res = { .request = &p->request, .failure = START_FAILURE_OUTPUT };

                pending_start_unlink(m, p);
                /* The worker still holds the job: freed when it is done with it. */
                p->manager = NULL;
                quota_unref(m, TAKE_PTR(p->quota));
                p->callback(m, -ECANCELED, &res, p->userdata);
        }
}

void manager_free_trace_dir(Manager *m) {
        /* After the sessions: their recorders charge the quotas until they are joined. */
        manager_cancel_starts(m);
        m->worker = worker_free(m->worker);
        while (m->quotas) {
                TraceQuota *q = m->quotas;

                m->quotas = q->next;
                free(q);
        }
}
