/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* linux.process_stats in the registry of data sources. */
#include <stdlib.h>

#include "process-stats.h"

const DataSourceOps process_stats_data_source = {
        .names = process_stats_source_names,
        .load = process_stats_load,
        .free_section = free,
        .start = process_stats_start,
        .queue_final = process_stats_queue_final,
        .stop = process_stats_stop,
        .visibility = {
                .unprivileged = "every process's memory counters from /proc/PID/status, oom_score_adj and run "
                                "times, as any user reads them in /proc; scan_smaps_rollup's fields only of the "
                                "processes of the session owner's uid (every process's for root)",
        },
};
