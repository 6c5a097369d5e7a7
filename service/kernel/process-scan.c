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
#include "process-scan-local.h"
#include "tracefs-instance.h"

DEFINE_TRIVIAL_CLEANUP_FUNC_VOID(DIR *, closedir);

#define MAX_CMDLINE 4096




/* Whether @pid is described already; if so it counts as just seen. */
static bool seen(PidTable *t, int32_t pid) {
        PidEntry *e = pid_table_find(t, pid);

        if (e)
                pid_table_touch(t, e);
        return e;
}

int note_described(PidTable *t, int32_t pid, int32_t tgid) {
        PidEntry *e;
        int r = pid_table_add(t, pid, &e);

        if (r == -ENOSPC)
                return 0;
        if (r >= 0)
                e->tgid = tgid;
        return r;
}

void process_description_free(void *description, bool thread) {
        if (!description)
                return;
        if (thread) {
                Tracebus__ProcessTree__Thread *t = description;
                free(t->name);
        } else {
                Tracebus__ProcessTree__Process *p = description;
                for (size_t j = 0; j < p->n_cmdline; j++)
                        free(p->cmdline[j]);
                free(p->cmdline);
        }
        free(description);
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
        b->view = process_view_make(0, /* all= */ true);
        process_tree_builder_set_limits(b, PROCESS_TREE_DEFAULT_MAX_ENTRIES, PROCESS_TREE_WRITE);
        b->tracefs_root = trace_instance_tracefs_root();
        b->proc_foreign = proc_pids_foreign();
        if (b->proc_foreign)
                log_info("/proc counts pids in a pid namespace of its own, not as the kernel's events do: "
                         "processes are described from the kernel's saved tables only.");
        *ret = b;
        return 0;
}

void process_tree_builder_set_options(ProcessTreeBuilder *b, bool record_age, bool skip_main_thread) {
        long hz = sysconf(_SC_CLK_TCK);

        b->record_age = record_age;
        b->skip_main_thread = skip_main_thread;
        b->ns_per_tick = hz > 0 ? 1000000000ull / (uint64_t) hz : 10000000ull;
}

void process_tree_builder_set_view(ProcessTreeBuilder *b, ProcessView view) {
        b->view = view;
}

ProcessSight status_sight(ProcessTreeBuilder *b, const ProcStatus *st) {
        return process_view_sight(&b->view, st->owner);
}

void process_tree_builder_set_tracefs(ProcessTreeBuilder *b, const char *tracefs_root) {
        b->tracefs_root = tracefs_root;
}

void process_tree_builder_set_limits(ProcessTreeBuilder *b, size_t max_entries, ProcessTreeKeep keep) {
        pid_table_done(&b->processes);
        pid_table_done(&b->threads);
        pid_table_init(&b->processes, max_entries, PROCESS_TREE_MAX_KEPT_BYTES, /* threads= */ false);
        pid_table_init(&b->threads, max_entries, PROCESS_TREE_MAX_KEPT_BYTES, /* threads= */ true);
        b->processes.refuse_when_full = b->threads.refuse_when_full = keep == PROCESS_TREE_KEEP_FIRST;
}

void process_tree_builder_reset(ProcessTreeBuilder *b) {
        for (size_t i = 0; i < b->tree.n_processes; i++)
                process_description_free(b->procs[i], /* thread= */ false);
        for (size_t i = 0; i < b->tree.n_threads; i++)
                process_description_free(b->thrs[i], /* thread= */ true);
        b->tree.n_processes = b->tree.n_threads = 0;
}

uint64_t process_tree_builder_n_evicted(const ProcessTreeBuilder *b) {
        return b->processes.evicted + b->threads.evicted;
}

ProcessTreeBuilder *process_tree_builder_free(ProcessTreeBuilder *b) {
        if (!b)
                return NULL;
        process_tree_builder_reset(b);
        free(b->procs);
        free(b->thrs);
        free(b->saved);
        free(b->pending);
        pid_table_done(&b->processes);
        pid_table_done(&b->threads);
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
        return read_virtual_file(path, MAX_CMDLINE, ret, ret_len);
}

/* The first MAX_CMDLINE + 1 bytes of /proc/PID/cmdline, NUL-terminated: one more than
 * is kept tells a longer one, which is cut, never refused. */
static int read_cmdline_head(pid_t pid, char **ret, size_t *ret_len) {
        char path[64];

        snprintf(path, sizeof(path), "/proc/%d/cmdline", (int) pid);
        return read_virtual_file_head(path, MAX_CMDLINE + 1, ret, ret_len);
}

/* How much of a command line of @len bytes is kept: all of it up to MAX_CMDLINE; past
 * that its first whole arguments, or, when the first alone is longer, its start, cut
 * before a UTF-8 continuation byte. A hostile argv cannot hide its process. */
static size_t cmdline_kept_len(const char *raw, size_t len) {
        const char *last_end;
        size_t n = MAX_CMDLINE;

        if (len <= MAX_CMDLINE)
                return len;
        last_end = memrchr(raw, 0, MAX_CMDLINE);
        if (last_end)
                return (size_t) (last_end - raw) + 1;
        while (n > 0 && ((unsigned char) raw[n] & 0xC0) == 0x80)
                n--;
        return n;
}


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
        int r;

        r = read_proc_file(pid, "status", &status, NULL);
        if (r < 0)
                return r;
        return proc_status_parse(status, ret);
}

int proc_status_parse(const char *status, ProcStatus *ret) {
        const char *tgid, *ppid, *uid, *threads;

        tgid = status_field(status, "Tgid");
        ppid = status_field(status, "PPid");
        uid = status_field(status, "Uid");
        threads = status_field(status, "Threads");
        if (!tgid || !ppid)
                return -ENOENT;
        *ret = (ProcStatus) {
                .tgid = strtol(tgid, NULL, 10),
                .ppid = strtol(ppid, NULL, 10),
                .uid = uid ? strtol(uid, NULL, 10) : 0,
                .owner = process_status_owner(status),
                .threads = threads ? strtol(threads, NULL, 10) : 0,
                /* The kernel prints the Vm lines only for a task with an address space. */
                .has_mm = status_field(status, "VmSize") != NULL,
        };
        status_name(status, ret->name);
        return 0;
}

/* The status of @pid from /proc, unless /proc's pids are not the events' (see
 * proc_pids_foreign()): then every pid counts as gone from /proc, and the kernel's saved
 * tables, which use the events' pids, describe it. */
int proc_status(const ProcessTreeBuilder *b, pid_t pid, ProcStatus *ret) {
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

/* The process's comm in place of its command line, marked as such. */
static int fill_comm(Tracebus__ProcessTree__Process *p, pid_t pid, const char *comm) {
        p->cmdline = calloc(1, sizeof(char *));
        if (!p->cmdline || read_comm(pid, pid, comm, &p->cmdline[0]) < 0)
                return -ENOENT;
        p->n_cmdline = 1;
        p->has_cmdline_is_comm = p->cmdline_is_comm = true;
        return 0;
}

/* argv from /proc/PID/cmdline; kernel threads have none: then their comm, marked as such.
 * A task without an address space (@has_mm false: a kernel thread or a zombie) has an
 * empty cmdline, which is not read: most of a machine's processes are kernel threads. */
static int fill_cmdline(Tracebus__ProcessTree__Process *p, pid_t pid, const char *comm, bool has_mm) {
        _cleanup_free_ char *raw = NULL;
        size_t len = 0;
        int r;

        if (has_mm) {
                r = read_cmdline_head(pid, &raw, &len);
                if (r < 0)
                        return r;
                r = proc_cmdline_parse(p, raw, len);
                if (r < 0 || p->n_cmdline > 0)
                        return r;
        }
        return fill_comm(p, pid, comm);
}

int proc_cmdline_parse(Tracebus__ProcessTree__Process *p, char *raw, size_t len) {
        size_t n = 0;

        len = cmdline_kept_len(raw, len);
        raw[len] = 0;
        if (len == 0)
                return 0;
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

int append_entry(void ***array, size_t *n, size_t *allocated, void *entry) {
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

/* record_process_age: the start time (field 22 of /proc/PID/stat, after the comm in
 * parentheses), in clock ticks since boot, as ns of CLOCK_BOOTTIME. */
static void fill_start_time(const ProcessTreeBuilder *b, Tracebus__ProcessTree__Process *p, pid_t pid) {
        _cleanup_free_ char *stat = NULL;
        unsigned long long start;

        if (read_proc_file(pid, "stat", &stat, NULL) < 0 || !proc_stat_start_ticks(stat, &start))
                return;
        p->has_process_start_from_boot = true;
        p->process_start_from_boot = start * b->ns_per_tick;
}

bool proc_stat_start_ticks(const char *stat, unsigned long long *ret) {
        const char *s = strrchr(stat, ')');

        return s && sscanf(s + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
                           ret) == 1;
}

/* Process @pid, whose status is @known if the caller read it already (NULL: read here):
 * whole, or by its pid, parent and comm alone when it is another user's and the trace's
 * owner may not see more of it; not at all when /proc hides it from the owner. */
int add_process(ProcessTreeBuilder *b, pid_t pid, const ProcStatus *known) {
        Tracebus__ProcessTree__Process *p;
        ProcessSight sight;
        ProcStatus st;
        int r;

        if (pid <= 0 || seen(&b->processes, pid) || !pid_table_has_room(&b->processes))
                return 0;
        if (known)
                st = *known;
        else if (proc_status(b, pid, &st) < 0)
                return 0;  /* gone already */
        sight = status_sight(b, &st);
        if (sight == PROCESS_SIGHT_NONE)
                return 0;

        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        tracebus__process_tree__process__init(p);
        p->has_pid = p->has_ppid = true;
        p->pid = pid;
        p->ppid = (int32_t) st.ppid;
        if (sight == PROCESS_SIGHT_WHOLE) {
                p->has_uid = true;
                p->uid = (int32_t) st.uid;
                if (b->record_age)
                        fill_start_time(b, p, pid);
                r = fill_cmdline(p, pid, st.name, st.has_mm);
        } else
                r = fill_comm(p, pid, st.name);
        if (r < 0) {
                process_description_free(p, /* thread= */ false);
                return 0;
        }
        return add_entry_process(b, p);
}

int add_entry_process(ProcessTreeBuilder *b, Tracebus__ProcessTree__Process *p) {
        int r = append_entry((void ***) &b->procs, &b->tree.n_processes, &b->procs_allocated, p);
        if (r < 0) {
                process_description_free(p, /* thread= */ false);
                return r;
        }
        r = note_described(&b->processes, p->pid, 0);
        return r < 0 ? r : 1;
}

int add_entry_thread(ProcessTreeBuilder *b, Tracebus__ProcessTree__Thread *t) {
        int r = append_entry((void ***) &b->thrs, &b->tree.n_threads, &b->thrs_allocated, t);
        if (r < 0) {
                process_description_free(t, /* thread= */ true);
                return r;
        }
        r = note_described(&b->threads, t->tid, t->tgid);
        return r < 0 ? r : 1;
}

/* Thread @tid of @tgid, named @name if its status read gave it (NULL or "": read comm). */
static int add_thread_of(ProcessTreeBuilder *b, pid_t tgid, pid_t tid, bool again, const char *name_known) {
        Tracebus__ProcessTree__Thread *t;
        char *name;

        if (tid <= 0)
                return 0;
        if (seen(&b->threads, tid) ? !again : !pid_table_has_room(&b->threads))
                return 0;
        if (b->skip_main_thread && tid == tgid)
                /* Described by its process alone, as before Perfetto v58. */
                return note_described(&b->threads, tid, tgid) < 0 ? -ENOMEM : 0;
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
        return add_entry_thread(b, t);
}

/* A thread described already: it and its process count as just seen, so that the
 * least recently seen, not the busiest, make room in a fork storm. */
static bool thread_seen(ProcessTreeBuilder *b, pid_t tid) {
        PidEntry *e = pid_table_find(&b->threads, tid);

        if (!e)
                return false;
        pid_table_touch(&b->threads, e);
        if (e->tgid > 0)
                (void) seen(&b->processes, e->tgid);
        return true;
}

int process_tree_builder_add_thread(ProcessTreeBuilder *b, pid_t tid) {
        ProcStatus st;
        int r, added;

        if (tid <= 0 || thread_seen(b, tid))
                return 0;
        if (proc_status(b, tid, &st) < 0)
                return add_gone_thread(b, tid);
        if (status_sight(b, &st) == PROCESS_SIGHT_NONE)
                return 0;
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

        if (tid <= 0 || proc_status(b, tid, &st) < 0 || status_sight(b, &st) == PROCESS_SIGHT_NONE)
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

        /* Most processes have one thread: its status said so, and listing task/ (five
         * syscalls) would only find the main thread. One that starts a thread after
         * this read would have it missed by the listing too, had the listing come
         * first: the events name it, and it is described then. */
        if (st->threads == 1)
                return add_thread_of(b, pid, pid, /* again= */ false, st->name);
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

                if (!parse_pid(de->d_name, &pid) || proc_status(b, pid, &st) < 0 ||
                    status_sight(b, &st) == PROCESS_SIGHT_NONE)
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
