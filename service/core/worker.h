/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <systemd/sd-event.h>

#include "macro.h"

/*
 * One worker thread for what must not run on the event loop (scanning a user's trace
 * directory, creating a file in it): jobs run one after another, in the order they
 * were queued, and each job's done() then runs on the event loop, in the same order.
 * The thread starts with the first job. The worker knows nothing of what the jobs do.
 */

typedef struct WorkerJob WorkerJob;
struct WorkerJob {
        WorkerJob *next;
        void (*run)(WorkerJob *job);    /* on the worker thread */
        /* On the event loop, after run(); @ran is false when the worker was freed
         * before it got to the job. The job is the caller's again (to free). */
        void (*done)(WorkerJob *job, bool ran);
};

typedef struct Worker Worker;

int worker_new(sd_event *event, Worker **ret);
/* Waits for the job that runs, then calls done() of every job left, run or not. */
Worker *worker_free(Worker *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(Worker *, worker_free);

/* Queues @job (the worker's until its done() is called). */
int worker_submit(Worker *w, WorkerJob *job);
