/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* linux.process_stats, and the process descriptions of every session, in the registry of
 * data sources. */
#include <stdlib.h>

#include "process-stats.h"

const DataSourceOps process_stats_data_source = {
        .names = process_stats_source_names,
        .load = process_stats_load,
        .free_section = free,
        .start = process_stats_start,
        .queue_final = process_stats_queue_final,
        .stop = process_stats_stop,
        .apply_rights = process_apply_rights,
        .visibility = {
                .unprivileged = "the caller's own processes whole (command line, uid, start time, smaps_rollup); "
                                "the other users' by pid, parent and comm, with the memory counters, "
                                "oom_score_adj and run times any user reads in /proc, and none of them at all "
                                "when /proc is mounted hidepid= (unless the caller is in its gid= group)",
                .with_manage = "every process whole, command lines, uids and smaps_rollup included "
                               "(process_apply_rights() is given whether the caller holds org.tracebus.manage)",
        },
};
