/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What process-scan.c (the tree from /proc) and process-saved.c (threads gone from /proc
 * before they were looked at, described from the kernel's saved tables) share.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "process-scan.h"
#include "process-view.h"

/* A pid the trace describes (pid 0, the idle task, never is: 0 marks a free entry). */
typedef struct PidEntry {
        int32_t pid;
        int32_t tgid;             /* a thread's process, seen whenever the thread is */
        uint32_t chain;           /* the next entry in its bucket, or in the free list */
        uint32_t older, newer;    /* its neighbours from the least to the most recently seen */
        void *kept;               /* RING, DISCARD: its description (Process or Thread) for the end */
        size_t kept_bytes;
        uint64_t collected_ns;    /* when @kept was collected (CLOCK_BOOTTIME) */
} PidEntry;

/* What the trace describes, at most max_entries pids (process-scan-table.c): past that
 * the least recently seen is forgotten, and described again if it shows up again. */
typedef struct PidTable {
        PidEntry *entries;        /* indices into it are stored plus one: 0 is none */
        size_t n, n_live, allocated, max_entries;
        uint32_t *buckets;
        size_t n_buckets;
        uint32_t oldest, newest, free_list;
        size_t kept_bytes, max_kept_bytes;
        bool refuse_when_full;    /* DISCARD: the first ones described stay, later ones are not */
        bool threads;             /* what kept holds: a Thread, else a Process */
        uint64_t evicted;
} PidTable;

void pid_table_init(PidTable *t, size_t max_entries, size_t max_kept_bytes, bool threads);
void pid_table_done(PidTable *t);
PidEntry *pid_table_find(PidTable *t, int32_t pid);
/* Marks @e the most recently seen. */
void pid_table_touch(PidTable *t, PidEntry *e);
/* Whether a pid not in the table yet may be added. */
bool pid_table_has_room(const PidTable *t);
/* Adds @pid (evicting the least recently seen when full), or touches it: 1 added, 0 it
 * was there, -ENOSPC full when refuse_when_full. */
int pid_table_add(PidTable *t, int32_t pid, PidEntry **ret);
/* Keeps @description (taken) of @bytes for the end of the trace, instead of the one
 * kept before; past max_kept_bytes the least recently seen are evicted. */
void pid_table_keep(PidTable *t, PidEntry *e, void *description, size_t bytes, uint64_t collected_ns);
/* process-scan.c: frees a Tracebus__ProcessTree__Thread (@thread) or __Process. */
void process_description_free(void *description, bool thread);

/* pid -> tgid and pid -> comm, as the kernel saved them for recorded events. */
typedef struct SavedTask {
        int32_t pid, tgid;
        char comm[16];
} SavedTask;

struct ProcessTreeBuilder {
        PidTable processes, threads;
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
        ProcessView view;          /* how much of each process the trace's owner may see */
        bool record_age;           /* linux.process_stats record_process_age */
        bool skip_main_thread;     /* linux.process_stats skip_main_thread_message */
        uint64_t ns_per_tick;      /* of /proc/PID/stat's times */
        Tracebus__ProcessTree tree;
        Tracebus__ProcessTree__Process **procs;
        Tracebus__ProcessTree__Thread **thrs;
        size_t procs_allocated, thrs_allocated;
};

/* What the tree needs from /proc/PID/status. */
typedef struct ProcStatus {
        long tgid, ppid, uid;
        long owner;               /* process_status_owner(): -1 when the uids differ */
        long threads;             /* the process's thread count; 0 when status had none */
        bool has_mm;              /* an address space: a kernel thread or a zombie has none */
        char name[16];            /* the task's comm; "" when it must be read from comm */
} ProcStatus;

/* How much the trace's owner may see of the process whose status is @st. */
ProcessSight status_sight(ProcessTreeBuilder *b, const ProcStatus *st);
/* Records @pid as described (thread @tid of @tgid when @tgid > 0). */
int note_described(PidTable *t, int32_t pid, int32_t tgid);
int append_entry(void ***array, size_t *n, size_t *allocated, void *entry);
/* The status of @pid from /proc, unless /proc's pids are not the events'. */
int proc_status(const ProcessTreeBuilder *b, pid_t pid, ProcStatus *ret);
/* The fields of a /proc/PID/status text; -ENOENT without Tgid or PPid. */
int proc_status_parse(const char *status, ProcStatus *ret);
/* The argv of a /proc/PID/cmdline read of @len bytes (@raw has room for one more),
 * cut as MAX_CMDLINE wants, into @p's cmdline; none when it is empty. */
int proc_cmdline_parse(Tracebus__ProcessTree__Process *p, char *raw, size_t len);
/* The start time of a /proc/PID/stat text (field 22), in clock ticks since boot. */
bool proc_stat_start_ticks(const char *stat, unsigned long long *ret);
/* Process @pid, whose status is @known if the caller read it already (NULL: read here). */
int add_process(ProcessTreeBuilder *b, pid_t pid, const ProcStatus *known);
/* Takes @p: on failure it is freed. */
int add_entry_process(ProcessTreeBuilder *b, Tracebus__ProcessTree__Process *p);
/* Takes @t: on failure it is freed. */
int add_entry_thread(ProcessTreeBuilder *b, Tracebus__ProcessTree__Thread *t);
/* process-scan-tasks.c: a process gone from /proc, described by its parent @ppid (0:
 * unknown) and its comm (NULL: unknown), marked as a comm. */
int add_comm_process(ProcessTreeBuilder *b, int32_t pid, int32_t ppid, const char *comm);
/* Thread @tid of @tgid named @comm (NULL or "": no name). */
int add_comm_thread(ProcessTreeBuilder *b, int32_t tid, int32_t tgid, const char *comm);
/* process-saved.c: a thread gone from /proc waits for the next read of the saved tables. */
int add_gone_thread(ProcessTreeBuilder *b, pid_t tid);
