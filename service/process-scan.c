/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fd-util.h"
#include "log.h"
#include "macro.h"
#include "process-scan.h"
#include "tracefs-instance.h"

DEFINE_TRIVIAL_CLEANUP_FUNC_VOID(DIR *, closedir);

#define MAX_CMDLINE 4096

/* An open-addressing set of pids: what the trace already describes. */
typedef struct PidSet {
        int32_t *slots;    /* 0: empty (pid 0 is never described: it is the idle task) */
        size_t n, allocated;
} PidSet;

/* pid -> tgid and pid -> comm, as the kernel saved them for recorded events. */
typedef struct SavedTask {
        int32_t pid, tgid;
        char comm[16];
} SavedTask;

struct ProcessTreeBuilder {
        PidSet processes, threads;
        const char *tracefs_root;
        /* /proc numbers processes in a pid namespace other than the kernel's events (the
         * initial one): its pids would name the wrong processes. */
        bool proc_foreign;
        SavedTask *saved;          /* the pending threads and their processes, sorted by pid */
        size_t n_saved, saved_allocated;
        bool saved_loaded;
        uint64_t saved_loaded_ns;  /* CLOCK_MONOTONIC */
        uint64_t saved_reload_ns;  /* the wait before the next read, doubling */
        int32_t *pending;          /* gone threads the saved tables read before did not know */
        size_t n_pending, pending_allocated;
        Tracebus__ProcessTree tree;
        Tracebus__ProcessTree__Process **procs;
        Tracebus__ProcessTree__Thread **thrs;
        size_t procs_allocated, thrs_allocated;
};

static size_t pid_hash(int32_t pid, size_t allocated) {
        return ((uint32_t) pid * 2654435761u) & (allocated - 1);
}

static bool pid_set_contains(const PidSet *s, int32_t pid) {
        if (s->allocated == 0)
                return false;
        for (size_t i = pid_hash(pid, s->allocated);; i = (i + 1) & (s->allocated - 1)) {
                if (s->slots[i] == pid)
                        return true;
                if (s->slots[i] == 0)
                        return false;
        }
}

static int pid_set_add(PidSet *s, int32_t pid) {
        if ((s->n + 1) * 2 > s->allocated) {
                PidSet bigger = { .allocated = MAX(s->allocated * 2, (size_t) 1024) };

                bigger.slots = calloc(bigger.allocated, sizeof(int32_t));
                if (!bigger.slots)
                        return -ENOMEM;
                for (size_t i = 0; i < s->allocated; i++)
                        if (s->slots[i] != 0)
                                (void) pid_set_add(&bigger, s->slots[i]);
                free(s->slots);
                *s = bigger;
        }
        for (size_t i = pid_hash(pid, s->allocated);; i = (i + 1) & (s->allocated - 1)) {
                if (s->slots[i] == pid)
                        return 0;
                if (s->slots[i] == 0) {
                        s->slots[i] = pid;
                        s->n++;
                        return 1;
                }
        }
}

/* Trace events carry pids of the initial pid namespace; /proc names processes by the
 * pids of the namespace it was mounted in, which the first entry of NSpid in
 * /proc/self/status gives (one entry per level from there down to ours). In a
 * container with its own /proc that is its own namespace, and a host pid cannot be
 * learnt from inside at all: so only whether the two numberings agree matters. */
static const char *status_field(const char *status, const char *field);

/* The number of pids on the rest of the line at @s ("\t4711\t12\n": 2). */
static unsigned nspid_entries(const char *s) {
        unsigned n = 0;

        for (s += strspn(s, " \t"); *s && *s != '\n'; s += strspn(s, " \t")) {
                n++;
                s += strcspn(s, " \t\n");
        }
        return n;
}

#define PID_NS_INIT_INO 0xEFFFFFFCu  /* the kernel's fixed inode of the initial pid namespace */
static bool proc_pids_foreign(void) {
        _cleanup_free_ char *status = NULL;
        char link[64];
        unsigned long ino;
        ssize_t n;
        const char *nspid;

        n = readlink("/proc/self/ns/pid", link, sizeof(link) - 1);
        if (n < 0)
                return false;
        link[n] = 0;
        if (sscanf(link, "pid:[%lu]", &ino) != 1 || ino == PID_NS_INIT_INO)
                return false;
        /* Not in the initial namespace: /proc is foreign unless it is an ancestor's (more
         * than one NSpid entry), as with unshare --pid without a /proc of its own. */
        if (read_full_file("/proc/self/status", 64 * 1024, &status, NULL) < 0)
                return false;
        nspid = status_field(status, "NSpid");
        return !nspid || nspid_entries(nspid) <= 1;
}

int process_tree_builder_new(ProcessTreeBuilder **ret) {
        ProcessTreeBuilder *b = calloc(1, sizeof(*b));

        if (!b)
                return -ENOMEM;
        tracebus__process_tree__init(&b->tree);
        b->tracefs_root = trace_instance_tracefs_root();
        b->proc_foreign = proc_pids_foreign();
        if (b->proc_foreign)
                log_info("/proc counts pids in a pid namespace of its own, not as the kernel's events do: "
                         "processes are described from the kernel's saved tables only.");
        *ret = b;
        return 0;
}

void process_tree_builder_set_tracefs(ProcessTreeBuilder *b, const char *tracefs_root) {
        b->tracefs_root = tracefs_root;
}

void process_tree_builder_reset(ProcessTreeBuilder *b) {
        for (size_t i = 0; i < b->tree.n_processes; i++) {
                Tracebus__ProcessTree__Process *p = b->procs[i];
                for (size_t j = 0; j < p->n_cmdline; j++)
                        free(p->cmdline[j]);
                free(p->cmdline);
                free(p);
        }
        for (size_t i = 0; i < b->tree.n_threads; i++) {
                free(b->thrs[i]->name);
                free(b->thrs[i]);
        }
        b->tree.n_processes = b->tree.n_threads = 0;
}

ProcessTreeBuilder *process_tree_builder_free(ProcessTreeBuilder *b) {
        if (!b)
                return NULL;
        process_tree_builder_reset(b);
        free(b->procs);
        free(b->thrs);
        free(b->saved);
        free(b->pending);
        free(b->processes.slots);
        free(b->threads.slots);
        return mfree(b);
}

size_t process_tree_builder_n_entries(const ProcessTreeBuilder *b) {
        return b->tree.n_processes + b->tree.n_threads;
}

const Tracebus__ProcessTree *process_tree_builder_tree(ProcessTreeBuilder *b) {
        b->tree.processes = b->procs;
        b->tree.threads = b->thrs;
        return &b->tree;
}

static int read_proc_file(pid_t pid, const char *file, char **ret, size_t *ret_len) {
        char path[128];

        snprintf(path, sizeof(path), "/proc/%d/%s", (int) pid, file);
        return read_full_file(path, MAX_CMDLINE, ret, ret_len);
}

/* What the tree needs from /proc/PID/status. */
typedef struct ProcStatus {
        long tgid, ppid, uid;
        char name[16];            /* the task's comm; "" when it must be read from comm */
} ProcStatus;

static const char *status_field(const char *status, const char *field) {
        size_t flen = strlen(field);

        for (const char *line = status; line; line = strchr(line, '\n'), line = line ? line + 1 : NULL)
                if (strncmp(line, field, flen) == 0 && line[flen] == ':')
                        return line + flen + 1;
        return NULL;
}

/* "Name:" is the comm, which saves reading comm; but the kernel escapes a backslash or
 * a control character in it there, so such a name is left to the comm file. */
static void status_name(const char *status, char ret[static 16]) {
        const char *name = status_field(status, "Name");
        size_t n;

        ret[0] = 0;
        if (!name)
                return;
        name += strspn(name, "\t");
        n = strcspn(name, "\n");
        if (n == 0 || n > 15 || memchr(name, '\\', n))
                return;
        memcpy(ret, name, n);
        ret[n] = 0;
}

/* One read of /proc/PID/status for all its fields we use: the kernel formats some
 * fifty lines for each read, the most expensive part of describing a thread. */
static int read_status(pid_t pid, ProcStatus *ret) {
        _cleanup_free_ char *status = NULL;
        const char *tgid, *ppid, *uid;
        int r;

        r = read_proc_file(pid, "status", &status, NULL);
        if (r < 0)
                return r;
        tgid = status_field(status, "Tgid");
        ppid = status_field(status, "PPid");
        uid = status_field(status, "Uid");
        if (!tgid || !ppid)
                return -ENOENT;
        *ret = (ProcStatus) {
                .tgid = strtol(tgid, NULL, 10),
                .ppid = strtol(ppid, NULL, 10),
                .uid = uid ? strtol(uid, NULL, 10) : 0,
        };
        status_name(status, ret->name);
        return 0;
}

/* The status of @pid from /proc, unless /proc's pids are not the events' (see
 * proc_pids_foreign()): then every pid counts as gone from /proc, and the kernel's saved
 * tables, which use the events' pids, describe it. */
static int proc_status(const ProcessTreeBuilder *b, pid_t pid, ProcStatus *ret) {
        return b->proc_foreign ? -ESRCH : read_status(pid, ret);
}


/* The comm of @tid in process @pid: @known if the status read gave it, else from comm. */
static int read_comm(pid_t pid, pid_t tid, const char *known, char **ret) {
        char file[64];
        char *comm;
        size_t len = 0;
        int r;

        if (known && known[0]) {
                *ret = strdup(known);
                return *ret ? 0 : -ENOMEM;
        }
        snprintf(file, sizeof(file), "task/%d/comm", (int) tid);
        r = read_proc_file(pid, file, &comm, &len);
        if (r < 0)
                return r;
        /* The file ends with a newline; a comm may hold one of its own. */
        if (len > 0 && comm[len - 1] == '\n')
                comm[len - 1] = 0;
        *ret = comm;
        return 0;
}

/* argv from /proc/PID/cmdline; kernel threads have none: then their comm, marked as such. */
static int fill_cmdline(Tracebus__ProcessTree__Process *p, pid_t pid, const char *comm) {
        _cleanup_free_ char *raw = NULL;
        size_t len = 0, n = 0;
        int r;

        r = read_proc_file(pid, "cmdline", &raw, &len);
        if (r < 0)
                return r;
        if (len == 0) {
                p->cmdline = calloc(1, sizeof(char *));
                if (!p->cmdline || read_comm(pid, pid, comm, &p->cmdline[0]) < 0)
                        return -ENOENT;
                p->n_cmdline = 1;
                p->has_cmdline_is_comm = p->cmdline_is_comm = true;
                return 0;
        }
        for (size_t i = 0; i < len; i++)
                n += raw[i] == 0;
        n += raw[len - 1] != 0;
        p->cmdline = calloc(n, sizeof(char *));
        if (!p->cmdline)
                return -ENOMEM;
        for (const char *s = raw; s < raw + len && p->n_cmdline < n; s += strlen(s) + 1) {
                p->cmdline[p->n_cmdline] = strdup(s);
                if (!p->cmdline[p->n_cmdline])
                        return -ENOMEM;
                p->n_cmdline++;
        }
        return 0;
}

static int append_entry(void ***array, size_t *n, size_t *allocated, void *entry) {
        if (*n >= *allocated) {
                size_t a = MAX(*allocated * 2, (size_t) 64);
                void **p = realloc(*array, a * sizeof(void *));
                if (!p)
                        return -ENOMEM;
                *array = p;
                *allocated = a;
        }
        (*array)[(*n)++] = entry;
        return 0;
}

/* Process @pid, whose status is @known if the caller read it already (NULL: read here). */
static int add_process(ProcessTreeBuilder *b, pid_t pid, const ProcStatus *known) {
        Tracebus__ProcessTree__Process *p;
        ProcStatus st;
        int r;

        if (pid <= 0 || pid_set_contains(&b->processes, pid))
                return 0;
        if (known)
                st = *known;
        else if (proc_status(b, pid, &st) < 0)
                return 0;  /* gone already */

        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        tracebus__process_tree__process__init(p);
        p->has_pid = p->has_ppid = p->has_uid = true;
        p->pid = pid;
        p->ppid = (int32_t) st.ppid;
        p->uid = (int32_t) st.uid;
        if (fill_cmdline(p, pid, st.name) < 0 ||
            append_entry((void ***) &b->procs, &b->tree.n_processes, &b->procs_allocated, p) < 0) {
                for (size_t j = 0; j < p->n_cmdline; j++)
                        free(p->cmdline[j]);
                free(p->cmdline);
                free(p);
                return 0;
        }
        r = pid_set_add(&b->processes, pid);
        return r < 0 ? r : 1;
}

/* Thread @tid of @tgid, named @name if its status read gave it (NULL or "": read comm). */
static int add_thread_of(ProcessTreeBuilder *b, pid_t tgid, pid_t tid, bool again, const char *name_known) {
        Tracebus__ProcessTree__Thread *t;
        char *name;
        int r;

        if (tid <= 0 || (!again && pid_set_contains(&b->threads, tid)))
                return 0;
        if (read_comm(tgid, tid, name_known, &name) < 0)
                return 0;
        t = calloc(1, sizeof(*t));
        if (!t) {
                free(name);
                return -ENOMEM;
        }
        tracebus__process_tree__thread__init(t);
        t->has_tid = t->has_tgid = true;
        t->tid = tid;
        t->tgid = tgid;
        t->name = name;
        r = append_entry((void ***) &b->thrs, &b->tree.n_threads, &b->thrs_allocated, t);
        if (r < 0) {
                free(name);
                free(t);
                return r;
        }
        r = pid_set_add(&b->threads, tid);
        return r < 0 ? r : 1;
}

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

static uint64_t monotonic_ns(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
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

static bool saved_reload_due(const ProcessTreeBuilder *b) {
        return !b->saved_loaded || monotonic_ns() - b->saved_loaded_ns >= b->saved_reload_ns;
}

/* Fills in, from one of the kernel's saved tables ("pid tgid" or "pid comm" lines), the
 * entries of b->saved, which holds only the tasks looked for: the tables list tens of
 * thousands of tasks, and keeping them all meant allocating and sorting them all. */
static int read_saved_table(ProcessTreeBuilder *b, const char *file, bool tgids) {
        _cleanup_free_ char *path = NULL, *text = NULL;

        if (asprintf(&path, "%s/%s", b->tracefs_root, file) < 0)
                return -ENOMEM;
        if (read_full_file(path, 4 * 1024 * 1024, &text, NULL) < 0)
                return 0;   /* an older kernel without the table: nothing to learn */
        for (char *line = text, *next; line && *line; line = next) {
                SavedTask *t;
                char *end;
                long pid;

                next = strchr(line, '\n');
                if (next)
                        *next++ = 0;
                pid = strtol(line, &end, 10);
                if (end == line || *end != ' ' || pid <= 0 || pid > INT32_MAX)
                        continue;
                t = saved_task(b, (int32_t) pid);
                if (!t)
                        continue;
                if (tgids)
                        t->tgid = (int32_t) strtol(end + 1, NULL, 10);
                else
                        snprintf(t->comm, sizeof(t->comm), "%s", end + 1);
        }
        return 0;
}

/* What the kernel saved of the pending threads: their tgids from saved_tgids, then
 * their comms and their processes' from saved_cmdlines. */
static int load_saved_tasks(ProcessTreeBuilder *b) {
        size_t n;
        int r;

        b->saved_reload_ns = b->saved_loaded ? MIN(b->saved_reload_ns * 2, SAVED_RELOAD_MAX_NS) :
                                               SAVED_RELOAD_FIRST_NS;
        b->saved_loaded = true;
        b->saved_loaded_ns = monotonic_ns();

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
        for (size_t i = 0; i < n; i++)
                if (b->saved[i].tgid > 0 && !saved_task(b, b->saved[i].tgid))
                        b->saved[b->n_saved++] = (SavedTask) { .pid = b->saved[i].tgid };
        if (b->n_saved > n)
                qsort(b->saved, b->n_saved, sizeof(SavedTask), saved_task_cmp);
        return read_saved_table(b, "saved_cmdlines", /* tgids= */ false);
}

static int add_entry_process(ProcessTreeBuilder *b, Tracebus__ProcessTree__Process *p) {
        int r = append_entry((void ***) &b->procs, &b->tree.n_processes, &b->procs_allocated, p);
        if (r < 0) {
                for (size_t j = 0; j < p->n_cmdline; j++)
                        free(p->cmdline[j]);
                free(p->cmdline);
                free(p);
                return r;
        }
        return pid_set_add(&b->processes, p->pid);
}

/* A process gone from /proc: its pid and the comm the kernel saved, marked as a comm. */
static int add_gone_process(ProcessTreeBuilder *b, int32_t pid) {
        Tracebus__ProcessTree__Process *p;
        SavedTask *t = saved_task(b, pid);

        if (pid_set_contains(&b->processes, pid))
                return 0;
        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        tracebus__process_tree__process__init(p);
        p->has_pid = true;
        p->pid = pid;
        if (t && t->comm[0]) {
                p->cmdline = calloc(1, sizeof(char *));
                if (p->cmdline && (p->cmdline[0] = strdup(t->comm)))
                        p->n_cmdline = 1;
                p->has_cmdline_is_comm = p->cmdline_is_comm = true;
        }
        return add_entry_process(b, p);
}

/* A thread gone from /proc before we looked: described from what the kernel saved, when
 * it saved the tgid. Nothing is guessed. */
static int describe_saved_thread(ProcessTreeBuilder *b, pid_t tid, const SavedTask *s);

/* Duplicates are dropped when the tables are read (a scan here would be quadratic in a
 * storm of short-lived threads). */
static int pending_add(ProcessTreeBuilder *b, pid_t tid) {
        if (b->n_pending >= b->pending_allocated) {
                size_t n = MAX(b->pending_allocated * 2, (size_t) 64);
                int32_t *p = realloc(b->pending, n * sizeof(int32_t));

                if (!p)
                        return -ENOMEM;
                b->pending = p;
                b->pending_allocated = n;
        }
        b->pending[b->n_pending++] = tid;
        return 0;
}

/* A thread gone from /proc before we looked waits for the next read of the kernel's
 * saved tables, which comes at once the first time. */
static int add_gone_thread(ProcessTreeBuilder *b, pid_t tid) {
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

                if (!s || s->tgid <= 0 || pid_set_contains(&b->threads, b->pending[i]))
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
        Tracebus__ProcessTree__Thread *t;
        ProcStatus st;
        int r;

        r = proc_status(b, s->tgid, &st) >= 0 ? add_process(b, s->tgid, &st) : add_gone_process(b, s->tgid);
        if (r < 0)
                return r;

        t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        tracebus__process_tree__thread__init(t);
        t->has_tid = t->has_tgid = true;
        t->tid = tid;
        t->tgid = s->tgid;
        t->name = s->comm[0] ? strdup(s->comm) : NULL;
        r = append_entry((void ***) &b->thrs, &b->tree.n_threads, &b->thrs_allocated, t);
        if (r < 0) {
                free(t->name);
                free(t);
                return r;
        }
        r = pid_set_add(&b->threads, tid);
        return r < 0 ? r : 1;
}

int process_tree_builder_add_thread(ProcessTreeBuilder *b, pid_t tid) {
        ProcStatus st;
        int r, added;

        if (tid <= 0 || pid_set_contains(&b->threads, tid))
                return 0;
        if (proc_status(b, tid, &st) < 0)
                return add_gone_thread(b, tid);
        /* A process's main thread: its status is the process's. */
        added = add_process(b, (pid_t) st.tgid, st.tgid == tid ? &st : NULL);
        if (added < 0)
                return added;
        r = add_thread_of(b, (pid_t) st.tgid, tid, /* again= */ false, st.name);
        if (r < 0)
                return r;
        return added || r;
}

int process_tree_builder_redescribe_thread(ProcessTreeBuilder *b, pid_t tid) {
        ProcStatus st;

        if (tid <= 0 || proc_status(b, tid, &st) < 0)
                return 0;
        return add_thread_of(b, (pid_t) st.tgid, tid, /* again= */ true, st.name);
}

static bool parse_pid(const char *s, pid_t *ret) {
        char *end;
        long v = strtol(s, &end, 10);

        if (*s < '1' || *s > '9' || *end || v <= 0 || v > INT32_MAX)
                return false;
        *ret = (pid_t) v;
        return true;
}

/* Every thread of @pid; the main thread's name is in @st, its status. */
static int add_threads_of(ProcessTreeBuilder *b, pid_t pid, const ProcStatus *st) {
        _cleanup_(closedirp) DIR *d = NULL;
        char path[64];
        int r;

        snprintf(path, sizeof(path), "/proc/%d/task", (int) pid);
        d = opendir(path);
        if (!d)
                return 0;
        for (struct dirent *de; (de = readdir(d));) {
                pid_t tid;

                if (!parse_pid(de->d_name, &tid))
                        continue;
                r = add_thread_of(b, pid, tid, /* again= */ false, tid == pid ? st->name : NULL);
                if (r < 0)
                        return r;
        }
        return 0;
}

int process_tree_builder_add_all(ProcessTreeBuilder *b) {
        _cleanup_(closedirp) DIR *d = NULL;
        int r;

        if (b->proc_foreign)
                return 0;  /* threads are described from the saved tables as events name them */

        d = opendir("/proc");
        if (!d)
                return -errno;
        for (struct dirent *de; (de = readdir(d));) {
                ProcStatus st;
                pid_t pid;

                if (!parse_pid(de->d_name, &pid) || proc_status(b, pid, &st) < 0)
                        continue;
                r = add_process(b, pid, &st);
                if (r < 0)
                        return r;
                r = add_threads_of(b, pid, &st);
                if (r < 0)
                        return r;
        }
        return 0;
}
