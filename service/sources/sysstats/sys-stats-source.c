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
        .apply_rights = sys_stats_apply_rights,
        .visibility = {
                .unprivileged = "the whole machine's counters that any user may read (memory, CPU times and "
                                "frequencies, disks, pressure, temperatures, batteries) and its CPUs and IRQ "
                                "names; slab_period_ms is skipped with a warning, /proc/slabinfo being root's",
                .with_manage = "the slab counters of /proc/slabinfo (sys_stats_apply_rights() is given whether "
                               "the caller holds org.tracebus.manage)",
        },
};
