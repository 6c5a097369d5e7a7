/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "trace.pb-c.h"

/*
 * Describes processes and threads from /proc as Perfetto ProcessTree messages, so that
 * trace_processor groups threads into processes and names them, also for threads that
 * existed before the trace started and never show up in task_newtask.
 */

typedef struct ProcessTreeBuilder ProcessTreeBuilder;

int process_tree_builder_new(ProcessTreeBuilder **ret);

/* Where tracefs is: threads gone from /proc before we looked are then described from the
 * kernel's saved_tgids and saved_cmdlines (the instance records tgids for that). */
void process_tree_builder_set_tracefs(ProcessTreeBuilder *b, const char *tracefs_root);
ProcessTreeBuilder *process_tree_builder_free(ProcessTreeBuilder *b);

/* Adds every process and its threads. */
int process_tree_builder_add_all(ProcessTreeBuilder *b);
/* Adds the thread @tid, and its process if that was not described yet. Gone threads are
 * skipped (returns 0); returns 1 when something was added. */
int process_tree_builder_add_thread(ProcessTreeBuilder *b, pid_t tid);

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
