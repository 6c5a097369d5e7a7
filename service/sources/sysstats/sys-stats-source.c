/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* linux.sys_stats, linux.system_info and linux.sysfs_power in the registry of data
 * sources: one section (the SysStatsSelection) and one subscription to the shared reads. */
#include <stdlib.h>

#include "sys-stats.h"

const DataSourceOps sys_stats_data_source = {
        .names = sys_stats_source_names,
        .load = sys_stats_load,
        .free_section = free,
        .start = sys_stats_subscribe,
        .queue_final = sys_stats_queue_final,
        .stop = sys_stats_unsubscribe,
        .visibility = {
                .unprivileged = "the whole machine's counters (memory, CPU times and frequencies, disks, "
                                "pressure, temperatures, batteries, and /proc/slabinfo, which /proc keeps to "
                                "root) and its CPUs and IRQ names, read by the service for any caller",
        },
};
