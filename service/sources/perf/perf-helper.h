/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "unwind/unwind-protocol.h"

/*
 * tracebus-unwind, the program that names and unwinds user frames, run as the session
 * owner so that the kernel decides what it may read (perf-helper.c). The sampler's
 * thread asks it one sample at a time and waits at most PERF_HELPER_DEADLINE_MS for an
 * answer: a helper that is late, dead or breaks the protocol is killed, and the
 * samples that needed it are dropped and counted.
 */

#define PERF_HELPER_DEADLINE_MS 1000u

typedef struct PerfHelper {
        uid_t uid;                     /* the session owner's */
        uint64_t max_memory_kb;
        pid_t pid;                     /* the child: the helper itself, or systemd-run */
        int pidfd;
        int fd;                        /* the sampler's end of the socket */
        bool started, failed;          /* failed: started and lost, or never started */
        char *failure;                 /* why, for the warning */
        UnwindBuffer request, reply;
} PerfHelper;

/* Nothing is started yet: the first request starts the helper. */
void perf_helper_init(PerfHelper *h, uid_t uid, uint64_t max_memory_kb);
/* The frames of @req: 0 with the reply's fixed part and at most @max frames (pointing
 * into @h, valid until the next call), or -ENOTCONN when there is no helper (any more):
 * see h->failure. */
int perf_helper_unwind(PerfHelper *h, const UnwindRequest *req, UnwindReplyFixed *ret, UnwindFrame *frames,
                       size_t max, size_t *ret_n);
/* Ends the helper (its stdin closed; killed if it is not gone within a moment). */
void perf_helper_done(PerfHelper *h);
