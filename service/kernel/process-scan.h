/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ftrace-parser.h"
#include "process-view.h"
#include "trace.pb-c.h"

/*
 * Describes processes and threads from /proc as Perfetto ProcessTree messages, so that
 * trace_processor groups threads into processes and names them, also for threads that
 * existed before the trace started and never show up in task_newtask.
 */

typedef struct ProcessTreeBuilder ProcessTreeBuilder;

/* What a session remembers of the processes and threads it described is bounded, so that
 * a storm of short-lived processes cannot grow the service's memory: at most this many
 * processes and as many threads (a desktop runs a few thousand), and this many bytes of
 * descriptions kept for the end of a ring or discard trace (command lines are cut at 4
 * KiB). Past that the least recently seen are forgotten, and described again when they
 * show up again. */
#define PROCESS_TREE_DEFAULT_MAX_ENTRIES 32768u
#define PROCESS_TREE_MAX_KEPT_BYTES (8u * 1024 * 1024)

typedef enum ProcessTreeKeep {
        PROCESS_TREE_WRITE,        /* streamed: what is collected is written at once */
        PROCESS_TREE_KEEP_LATEST,  /* ring: kept for the end; the least recently seen make room */
        PROCESS_TREE_KEEP_FIRST,   /* discard: kept for the end; once full, no more */
} ProcessTreeKeep;

int process_tree_builder_new(ProcessTreeBuilder **ret);
/* Before anything is added: the budget of processes and of threads, and what happens to
 * what is collected. */
void process_tree_builder_set_limits(ProcessTreeBuilder *b, size_t max_entries, ProcessTreeKeep keep);
/* KEEP_*: moves what was collected since the last reset into the tables, stamped
 * @collected_ns, to be written by process_tree_builder_write_kept() at the end. */
void process_tree_builder_keep(ProcessTreeBuilder *b, uint64_t collected_ns);
/* Calls @write with everything kept, in trees of what was collected at the same time,
 * oldest first, each with its collection_end_timestamp. */
int process_tree_builder_write_kept(ProcessTreeBuilder *b,
                                    int (*write)(const Tracebus__ProcessTree *tree, void *userdata),
                                    void *userdata);
/* Processes and threads forgotten to stay within the budget. */
uint64_t process_tree_builder_n_evicted(const ProcessTreeBuilder *b);

/* linux.process_stats's options: each process's start time (record_process_age), and no
 * Thread entry for a process's main thread (skip_main_thread_message). */
void process_tree_builder_set_options(ProcessTreeBuilder *b, bool record_age, bool skip_main_thread);

/* Whose trace it is: what of each process it may describe (process-view.h). Without it,
 * every process whole, as the service sees them. */
void process_tree_builder_set_view(ProcessTreeBuilder *b, ProcessView view);

/* Where tracefs is: threads gone from /proc before we looked are then described from the
 * kernel's saved_tgids and saved_cmdlines (the instance records tgids for that). */
void process_tree_builder_set_tracefs(ProcessTreeBuilder *b, const char *tracefs_root);
ProcessTreeBuilder *process_tree_builder_free(ProcessTreeBuilder *b);

/* Adds every process and its threads. */
int process_tree_builder_add_all(ProcessTreeBuilder *b);
/* Adds the thread @tid, and its process if that was not described yet. Gone threads are
 * skipped (returns 0); returns 1 when something was added. */
int process_tree_builder_add_thread(ProcessTreeBuilder *b, pid_t tid);

/* Describes the tasks that task_newtask and task_rename events named (@notes, sorted
 * here): those gone from /proc from the events themselves, with their names and parents.
 * Called before the pids of the same events are added, so that a task that lived a
 * millisecond is not left to the kernel's saved tables. Returns how many were described. */
int process_tree_builder_add_tasks(ProcessTreeBuilder *b, FtraceTaskNote *notes, size_t n);

/* Describes the thread @tid again, under the name /proc gives it now (after a rename).
 * Returns 1 when added, 0 when it is gone. */
int process_tree_builder_redescribe_thread(ProcessTreeBuilder *b, pid_t tid);
/* Threads gone from /proc that the kernel's saved tables did not list yet when last read:
 * read the tables again (when the doubling wait since the last read is over, or at once
 * with @force) and describe those they
 * now list. Returns how many were described. */
int process_tree_builder_retry_gone(ProcessTreeBuilder *b, bool force);

size_t process_tree_builder_n_entries(const ProcessTreeBuilder *b);
/* The ProcessTree collected so far, as a message valid until the next reset. */
const Tracebus__ProcessTree *process_tree_builder_tree(ProcessTreeBuilder *b);
/* Forgets the collected entries (the pids already described stay remembered). */
void process_tree_builder_reset(ProcessTreeBuilder *b);
