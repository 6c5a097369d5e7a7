/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Threads that were gone from /proc before the service looked (a storm of short-lived
 * tasks, or a container whose /proc does not number the events' pids): described from
 * what the kernel saved for recorded events, saved_tgids and saved_cmdlines.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array-util.h"
#include "fd-util.h"
#include "macro.h"
#include "process-scan-local.h"
#include "time-util.h"

static int saved_task_cmp(const void *a, const void *b) {
        int32_t x = ((const SavedTask *) a)->pid, y = ((const SavedTask *) b)->pid;

        return x < y ? -1 : x > y;
}

/* b->saved is sorted by pid: a binary search. */
static SavedTask *saved_task(ProcessTreeBuilder *b, int32_t pid) {
        SavedTask key = { .pid = pid };

        if (b->n_saved == 0)
                return NULL;
        return bsearch(&key, b->saved, b->n_saved, sizeof(SavedTask), saved_task_cmp);
}

/* Makes room for @n entries in b->saved. */
static int saved_reserve(ProcessTreeBuilder *b, size_t n) {
        SavedTask *p;

        if (n <= b->saved_allocated)
                return 0;
        n = MAX(n, b->saved_allocated * 2);
        p = realloc(b->saved, n * sizeof(SavedTask));
        if (!p)
                return -ENOMEM;
        b->saved = p;
        b->saved_allocated = n;
        return 0;
}

/* Reading saved_tgids and saved_cmdlines costs 10-20 ms of the kernel's formatting
 * (they list tens of thousands of tasks on a busy machine), so the second read
 * comes a second after the first and every further one waits twice as long, up to 16
 * s: a machine that keeps starting short-lived tasks (a build) would otherwise pay it
 * every second. Threads the tables did not know yet wait in b->pending; a last read at
 * the end describes whatever is still waiting. */
#define SAVED_RELOAD_FIRST_NS (1000ull * 1000ull * 1000ull)
#define SAVED_RELOAD_MAX_NS (16ull * SAVED_RELOAD_FIRST_NS)
#define PENDING_MAX 4096
#define SAVED_READ_BYTES (64u * 1024u)

static bool saved_reload_due(const ProcessTreeBuilder *b) {
        return !b->saved_loaded || now_ns(CLOCK_MONOTONIC) - b->saved_loaded_ns >= b->saved_reload_ns;
}

/* Notes one line of a saved table in the entry it names, if one is looked for: returns
 * the pid read (0: not a line of the table) and counts in *@found the entries filled. */
static int32_t note_saved_line(ProcessTreeBuilder *b, char *line, bool tgids, size_t *found) {
        SavedTask *t;
        char *end;
        long pid;

        pid = strtol(line, &end, 10);
        if (end == line || *end != ' ' || pid <= 0 || pid > INT32_MAX)
                return 0;
        t = saved_task(b, (int32_t) pid);
        if (!t)
                return (int32_t) pid;
        if (tgids) {
                *found += t->tgid <= 0;
                t->tgid = (int32_t) strtol(end + 1, NULL, 10);
        } else {
                *found += t->comm[0] == 0;
                snprintf(t->comm, sizeof(t->comm), "%s", end + 1);
        }
        return (int32_t) pid;
}

/* Fills in, from one of the kernel's saved tables ("pid tgid" or "pid comm" lines), the
 * entries of b->saved, which holds only the tasks looked for. The kernel formats the
 * table as it is read, which is most of the cost (saved_tgids lists every pid it ever
 * saw, pid_max lines on a busy machine): the read stops once every entry looked for is
 * filled, or, saved_tgids being in pid order, past the largest pid looked for. */
static int read_saved_table(ProcessTreeBuilder *b, const char *file, bool tgids) {
        _cleanup_free_ char *path = NULL, *buf = NULL;
        _cleanup_close_ int fd = -EBADF;
        int32_t last = b->n_saved > 0 ? b->saved[b->n_saved - 1].pid : 0;
        size_t have = 0, found = 0;

        if (b->n_saved == 0)
                return 0;
        if (asprintf(&path, "%s/%s", b->tracefs_root, file) < 0)
                return -ENOMEM;
        buf = malloc(SAVED_READ_BYTES + 1);
        if (!buf)
                return -ENOMEM;
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return 0;   /* an older kernel without the table: nothing to learn */
        for (;;) {
                ssize_t k = read(fd, buf + have, SAVED_READ_BYTES - have);
                char *line = buf, *nl;

                if (k <= 0)
                        return 0;   /* the end, or an error: what was read is kept */
                have += (size_t) k;
                buf[have] = 0;
                for (; (nl = strchr(line, '\n')); line = nl + 1) {
                        int32_t pid;

                        *nl = 0;
                        pid = note_saved_line(b, line, tgids, &found);
                        if (found == b->n_saved || (tgids && pid > last))
                                return 0;
                }
                have -= (size_t) (line - buf);
                if (have >= SAVED_READ_BYTES)
                        return 0;   /* not a line of a saved table */
                memmove(buf, line, have);
        }
}

/* What the kernel saved of the pending threads: their tgids from saved_tgids, then
 * their comms and their processes' from saved_cmdlines. */
static int load_saved_tasks(ProcessTreeBuilder *b) {
        size_t n, known;
        int r;

        b->saved_reload_ns = b->saved_loaded ? MIN(b->saved_reload_ns * 2, SAVED_RELOAD_MAX_NS) :
                                               SAVED_RELOAD_FIRST_NS;
        b->saved_loaded = true;
        b->saved_loaded_ns = now_ns(CLOCK_MONOTONIC);

        r = saved_reserve(b, 2 * b->n_pending);
        if (r < 0)
                return r;
        for (size_t i = 0; i < b->n_pending; i++)
                b->saved[i] = (SavedTask) { .pid = b->pending[i] };
        b->n_saved = b->n_pending;
        qsort(b->saved, b->n_saved, sizeof(SavedTask), saved_task_cmp);
        n = 0;
        for (size_t i = 0; i < b->n_saved; i++)
                if (n == 0 || b->saved[n - 1].pid != b->saved[i].pid)
                        b->saved[n++] = b->saved[i];
        b->n_saved = n;
        r = read_saved_table(b, "saved_tgids", /* tgids= */ true);
        if (r < 0)
                return r;

        /* The processes of those threads are looked for too, for their names. */
        n = b->n_saved;
        known = 0;
        for (size_t i = 0; i < n; i++) {
                known += b->saved[i].tgid > 0;
                if (b->saved[i].tgid > 0 && !saved_task(b, b->saved[i].tgid))
                        b->saved[b->n_saved++] = (SavedTask) { .pid = b->saved[i].tgid };
        }
        if (known == 0)
                return 0;   /* no thread to describe: their comms are not needed */
        if (b->n_saved > n)
                qsort(b->saved, b->n_saved, sizeof(SavedTask), saved_task_cmp);
        return read_saved_table(b, "saved_cmdlines", /* tgids= */ false);
}


/* A process gone from /proc: its pid and the comm the kernel saved, marked as a comm. */
static int add_gone_process(ProcessTreeBuilder *b, int32_t pid) {
        SavedTask *t = saved_task(b, pid);

        if (pid_table_find(&b->processes, pid))
                return 0;
        return add_comm_process(b, pid, 0, t ? t->comm : NULL);
}

/* A thread gone from /proc before we looked: described from what the kernel saved, when
 * it saved the tgid. Nothing is guessed. */
static int describe_saved_thread(ProcessTreeBuilder *b, pid_t tid, const SavedTask *s);

/* Duplicates are dropped when the tables are read (a scan here would be quadratic in a
 * storm of short-lived threads). */
static int pending_add(ProcessTreeBuilder *b, pid_t tid) {
        if (b->n_pending >= b->pending_allocated) {
                int32_t *p = array_grow(b->pending, &b->pending_allocated, sizeof(int32_t), 64);

                if (!p)
                        return -ENOMEM;
                b->pending = p;
        }
        b->pending[b->n_pending++] = tid;
        return 0;
}

/* A thread gone from /proc before we looked waits for the next read of the kernel's
 * saved tables, which comes at once the first time. */
int add_gone_thread(ProcessTreeBuilder *b, pid_t tid) {
        int r;

        if (!b->tracefs_root)
                return 0;
        r = pending_add(b, tid);
        if (r < 0)
                return r;
        /* Bounded: so many waiting make the read worth it now. */
        return process_tree_builder_retry_gone(b, /* force= */ b->n_pending >= PENDING_MAX);
}

int process_tree_builder_retry_gone(ProcessTreeBuilder *b, bool force) {
        int r, n = 0;

        if (b->n_pending == 0 || (!force && !saved_reload_due(b)))
                return 0;
        r = load_saved_tasks(b);
        if (r < 0)
                return r;
        for (size_t i = 0; i < b->n_pending; i++) {
                SavedTask *s = saved_task(b, b->pending[i]);

                if (!s || s->tgid <= 0 || pid_table_find(&b->threads, b->pending[i]))
                        continue;
                r = describe_saved_thread(b, b->pending[i], s);
                if (r < 0)
                        return r;
                n += r > 0;
        }
        b->n_pending = 0;
        return n;
}

static int describe_saved_thread(ProcessTreeBuilder *b, pid_t tid, const SavedTask *s) {
        ProcStatus st;
        int r;

        if (!pid_table_has_room(&b->threads))
                return 0;
        if (proc_status(b, s->tgid, &st) >= 0) {
                /* Its process lives on where /proc may hide it from the trace's owner. */
                if (status_sight(b, &st) == PROCESS_SIGHT_NONE)
                        return 0;
                r = add_process(b, s->tgid, &st);
        } else
                r = add_gone_process(b, s->tgid);
        if (r < 0)
                return r;
        return add_comm_thread(b, tid, s->tgid, s->comm);
}
