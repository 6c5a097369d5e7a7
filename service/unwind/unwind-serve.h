/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "perf-unwind.h"
#include "unwind-protocol.h"

/* tracebus-unwind's work: requests answered with frames, and the processes it has read,
 * kept by pid (up to UNWIND_MAX_PROCESSES; then all are dropped and read again). */
typedef struct UnwindServer UnwindServer;

int unwind_server_new(uint64_t max_memory_kb, const char *debug_dirs, UnwindServer **ret);
UnwindServer *unwind_server_free(UnwindServer *s);
/* The reply to @req, built in @reply. */
int unwind_server_answer(UnwindServer *s, const UnwindRequest *req, UnwindBuffer *reply);
