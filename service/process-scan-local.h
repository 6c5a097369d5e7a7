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

/* What the tree needs from /proc/PID/status. */
typedef struct ProcStatus {
        long tgid, ppid, uid;
        char name[16];            /* the task's comm; "" when it must be read from comm */
} ProcStatus;

bool pid_set_contains(const PidSet *s, int32_t pid);
int pid_set_add(PidSet *s, int32_t pid);
int append_entry(void ***array, size_t *n, size_t *allocated, void *entry);
/* The status of @pid from /proc, unless /proc's pids are not the events'. */
int proc_status(const ProcessTreeBuilder *b, pid_t pid, ProcStatus *ret);
/* Process @pid, whose status is @known if the caller read it already (NULL: read here). */
int add_process(ProcessTreeBuilder *b, pid_t pid, const ProcStatus *known);
/* Takes @p: on failure it is freed. */
int add_entry_process(ProcessTreeBuilder *b, Tracebus__ProcessTree__Process *p);
/* process-saved.c: a thread gone from /proc waits for the next read of the saved tables. */
int add_gone_thread(ProcessTreeBuilder *b, pid_t tid);
