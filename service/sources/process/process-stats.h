/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "process-config.h"
#include "recorder/recorder.h"
#include "sources/data-source.h"
#include "sources/poller.h"

/*
 * linux.process_stats's periodic part: every proc_stats_poll_ms, on the pollers' thread,
 * each process's memory counters from /proc/PID/status (and smaps_rollup), oom_score_adj
 * and run times, as Perfetto's ProcessStats packets, handed to the session's recorder:
 * of the processes its owner may see (kernel/process-view.h).
 */

typedef struct ProcessStatsSource ProcessStatsSource;

/* The registry's entry for linux.process_stats (process-source.c). */
extern const DataSourceOps process_stats_data_source;

/* DataSourceOps.start: polls @section (a ProcessStatsSection) for the session of @ctx,
 * at most ctx->config->max_process_entries processes a poll. *ret (a ProcessStatsSource)
 * is NULL when the section asks for no periodic ProcessStats. */
int process_stats_start(const DataSourceContext *ctx, void *section, void **ret);
/* DataSourceOps.stop: stops polling (a running poll finishes first) and frees @state;
 * NULL is a no-op. Before the recorder is freed. */
void process_stats_stop(void *state);

/* DataSourceOps.queue_final: one last sample of the session's processes on the poller's
 * thread (poller_call() under @owner), at Stop. NULL: 0. */
int process_stats_queue_final(void *state, const void *owner);

/* Walks of /proc done for all sessions since the service started (for tests): sessions
 * at the same period share one walk a period. */
uint64_t process_stats_walks(void);

/* The walk's parsers on the texts of one process's /proc/PID/status, smaps_rollup and
 * stat (either of the last two may be NULL): whether status has memory counters (not
 * a kernel thread), and its owner as process_status_owner() reads it (-1: none). */
bool process_stats_parse_texts(const char *status, const char *smaps_rollup, const char *stat, long *ret_owner);
