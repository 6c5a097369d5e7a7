/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <sys/types.h>

#include "sources/poller.h"
#include "recorder/recorder.h"
#include "config/session-config.h"

/*
 * linux.process_stats's periodic part: every proc_stats_poll_ms, on the pollers' thread,
 * each process's memory counters from /proc/PID/status (and smaps_rollup), oom_score_adj
 * and run times, as Perfetto's ProcessStats packets, handed to the session's recorder.
 */

typedef struct ProcessStatsSource ProcessStatsSource;

/* Starts polling for @config's session (owned by @owner_uid) into @rec. *ret is NULL
 * when the config asks for no periodic ProcessStats. */
int process_stats_start(Poller *poller, Recorder *rec, const SessionConfig *config, uid_t owner_uid,
                        ProcessStatsSource **ret);
/* Stops polling (a running poll finishes first) and frees @s; NULL is a no-op. Before
 * the recorder is freed. */
ProcessStatsSource *process_stats_stop(ProcessStatsSource *s);

/* Queues one last sample of the session's processes on the poller's thread
 * (poller_call() under @owner), at Stop. NULL: 0. */
int process_stats_queue_final(ProcessStatsSource *s, const void *owner);

/* Walks of /proc done for all sessions since the service started (for tests): sessions
 * at the same period share one walk a period. */
uint64_t process_stats_walks(void);
