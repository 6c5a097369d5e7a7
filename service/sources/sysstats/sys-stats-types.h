/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/*
 * What a session asks of linux.sys_stats, linux.system_info and linux.sysfs_power,
 * validated (sys-stats-config.c): the section of the three data sources. Plain values, so
 * that the pollers' thread reads a copy without touching the config's protobuf.
 */

/* The counter groups a poller reads, each from its own files. */
typedef enum SysStatsGroup {
        SYS_STATS_MEMINFO,
        SYS_STATS_VMSTAT,
        SYS_STATS_STAT,
        SYS_STATS_DEVFREQ,
        SYS_STATS_CPUFREQ,
        SYS_STATS_BUDDYINFO,
        SYS_STATS_DISKSTAT,
        SYS_STATS_PSI,
        SYS_STATS_THERMAL,
        SYS_STATS_CPUIDLE,
        SYS_STATS_SLAB,
        SYS_STATS_POWER,        /* linux.sysfs_power's batteries */
        _SYS_STATS_GROUP_MAX,
} SysStatsGroup;

/* Enum values of MeminfoCounters and VmstatCounters a session keeps, as bits. */
#define SYS_STATS_KEY_BITS 512u
typedef struct SysStatsKeys {
        uint64_t bits[SYS_STATS_KEY_BITS / 64u];
} SysStatsKeys;

static inline bool sys_stats_keys_test(const SysStatsKeys *k, uint32_t key) {
        return key < SYS_STATS_KEY_BITS && (k->bits[key / 64u] >> (key % 64u)) & 1u;
}

static inline void sys_stats_keys_set(SysStatsKeys *k, uint32_t key) {
        if (key < SYS_STATS_KEY_BITS)
                k->bits[key / 64u] |= UINT64_C(1) << (key % 64u);
}

typedef struct SysStatsSelection {
        uint32_t period_ms[_SYS_STATS_GROUP_MAX];   /* 0: not recorded */
        SysStatsKeys meminfo;
        SysStatsKeys vmstat;
        uint32_t stat_fields;                        /* 1 << SysStatsConfig.StatCounters */
        bool system_info;                            /* linux.system_info: CpuInfo at start */
        uint32_t sys_stats_buffer, power_buffer;     /* the data sources' target buffers */
        /* SystemInfoConfig.irq_names: InterruptInfo after the CpuInfo. */
        bool irq_names;
} SysStatsSelection;

/* Perfetto's linux.sysfs_power polls every second. */
#define SYS_STATS_POWER_PERIOD_MS 1000u
