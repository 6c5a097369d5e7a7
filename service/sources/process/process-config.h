/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "config/session-config.h"
#include "sources/data-source.h"

/* linux.process_stats as a session records it (process-config.c): its periodic part. */
typedef struct ProcessStatsSection {
        uint32_t poll_ms;              /* 0: no periodic ProcessStats */
        uint32_t cache_ttl_ms;         /* 0: a value is written only when it changes */
        uint32_t target_buffer;
        bool smaps;                    /* scan_smaps_rollup */
        bool runtime;                  /* record_process_runtime */
} ProcessStatsSection;

/* The data source names it serves: linux.process_stats. */
extern const char *const process_stats_source_names[];

/* Perfetto's minimum proc_stats_poll_ms: a shorter one is raised, with a warning. */
#define PROCESS_STATS_MIN_POLL_MS 100u

/* DataSourceOps.load: the linux.process_stats data source of @tc into *ret (a
 * ProcessStatsSection, freed with free(); NULL: none in the config), and
 * its options for the recorder's process descriptions into c->process_tree. A second one
 * is skipped with a warning. */
int process_stats_load(const Tracebus__TraceConfig *tc, const char *tracefs_root, SessionConfig *c, void **ret,
                       char **ret_error);

/* DataSourceOps.apply_rights: whose the session's process descriptions and ProcessStats
 * are (c->process_tree.owner_uid, owner_sees_all for root and the holders of
 * org.tracebus.manage), for every session, with linux.process_stats or without (@section
 * may be NULL): what of each process they hold follows kernel/process-view.h. */
int process_apply_rights(SessionConfig *c, void *section, uid_t owner_uid, bool manage);
