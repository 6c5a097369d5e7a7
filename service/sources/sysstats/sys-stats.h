/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/session-config.h"
#include "recorder/recorder.h"
#include "sources/data-source.h"
#include "sources/poller.h"
#include "sys-stats-types.h"
#include "trace.pb-c.h"

/*
 * linux.sys_stats, linux.sysfs_power and linux.system_info.
 *
 * Readers (sys-stats-read.c for /proc, sys-stats-sysfs.c, power.c, system-info.c for
 * /sys) fill a SysStats message the way Perfetto's traced_probes does: the same fields,
 * the same units (meminfo in KiB, CPU times in ns, PSI in ns, temperatures in degrees).
 * Every message part is malloc()ed, so tracebus__sys_stats__free_unpacked() frees a
 * sample. /proc readers take the file's text; /sys readers take the directory, which
 * is a fixed path in the service and a fixture directory in the unit tests only.
 */

/* The registry's entry for linux.sys_stats, linux.system_info and linux.sysfs_power
 * (sys-stats-source.c): one section, the SysStatsSelection, for the three. */
extern const DataSourceOps sys_stats_data_source;
extern const char *const sys_stats_source_names[];

/* sys-stats-config.c: the linux.sys_stats, linux.system_info and linux.sysfs_power data
 * sources of @tc into @sel. What this kernel lacks, a period under 10 ms, a counter
 * tracebus does not read: warnings in @c, never errors. sys_stats_load(), the source's
 * DataSourceOps.load, does the same into a selection it allocates (freed with free()),
 * *ret NULL when the config has none of the three. */
int sys_stats_load_selection(const Tracebus__TraceConfig *tc, SessionConfig *c, SysStatsSelection *sel);
int sys_stats_load(const Tracebus__TraceConfig *tc, const char *tracefs_root, SessionConfig *c, void **ret,
                   char **ret_error);

/* DataSourceOps.apply_rights (sys-stats-config.c): the slab counters only for root and
 * the holders of org.tracebus.manage (@manage), else skipped with a warning in @c. */
int sys_stats_apply_rights(SessionConfig *c, void *section, uid_t owner_uid, bool manage);

/* Whether the kernel has what @group reads (fixed paths under /proc and /sys), and the
 * group's name (sys-stats-config.c). */
bool sys_stats_group_available(SysStatsGroup group);
const char *sys_stats_group_to_string(SysStatsGroup group);

bool sys_stats_meminfo_key_known(uint32_t key);
bool sys_stats_vmstat_key_known(uint32_t key);

/* Reads a whole /proc or /sys file into a NUL-terminated buffer (at most 4 MiB). */
int sys_stats_read_file(const char *path, char **ret, size_t *ret_len);
/* Whether @dir has an entry other than . and .. (@prefix: whose name starts so). */
bool sys_stats_dir_has_entries(const char *dir, const char *prefix);

/* /proc parsers: @text is modified. */
int sys_stats_parse_meminfo(char *text, Tracebus__SysStats *out);
int sys_stats_parse_vmstat(char *text, Tracebus__SysStats *out);
int sys_stats_parse_stat(char *text, uint64_t ns_per_tick, Tracebus__SysStats *out);
int sys_stats_parse_buddyinfo(char *text, Tracebus__SysStats *out);
int sys_stats_parse_diskstats(char *text, Tracebus__SysStats *out);
/* One /proc/pressure file (cpu, io, memory). */
int sys_stats_parse_psi(char *text, const char *resource, Tracebus__SysStats *out);
int sys_stats_parse_slabinfo(char *text, Tracebus__SysStats *out);

/* /sys readers: @cpu_root is /sys/devices/system/cpu, @thermal_root /sys/class/thermal,
 * @devfreq_root /sys/class/devfreq. */
int sys_stats_read_cpufreq(const char *cpu_root, Tracebus__SysStats *out);
int sys_stats_read_cpuidle(const char *cpu_root, Tracebus__SysStats *out);
int sys_stats_read_thermal(const char *thermal_root, Tracebus__SysStats *out);
int sys_stats_read_devfreq(const char *devfreq_root, Tracebus__SysStats *out);

/* Reads @group into @out (fixed paths). */
int sys_stats_read_group(SysStatsGroup group, Tracebus__SysStats *out);

/* linux.sysfs_power (power.c): batteries under @power_supply_root (type "Battery",
 * present 1). One BatteryCounters per battery, named when there are several. */
int power_count_batteries(const char *power_supply_root);
int power_read_batteries(const char *power_supply_root, Tracebus__BatteryCounters ***ret, size_t *ret_n);
void power_batteries_free(Tracebus__BatteryCounters **b, size_t n);

/* linux.system_info (system-info.c): CpuInfo from @cpuinfo_path (/proc/cpuinfo) and
 * @cpu_root (/sys/devices/system/cpu). */
int system_info_read_cpus(const char *cpuinfo_path, const char *cpu_root, Tracebus__CpuInfo **ret);
/* InterruptInfo (v58 system_info/interrupt_info.proto) from @path
 * (/proc/interrupts): the numbered IRQs and their names. */
int system_info_read_interrupts(const char *path, Tracebus__InterruptInfo **ret);

/* One session's subscriptions to the shared reads. */
typedef struct SysStatsSession SysStatsSession;

/* DataSourceOps.start: subscribes the recorder of @ctx to the groups @section (a
 * SysStatsSelection) asks for on the pollers' thread: sessions asking for the same group
 * at the same period share one read (one poller entry), each getting the sample filtered
 * to its counters. Writes the CpuInfo packet first when it asks for system_info. *ret
 * (a SysStatsSession) is NULL when it asks for nothing this machine has. */
int sys_stats_subscribe(const DataSourceContext *ctx, void *section, void **ret);
/* DataSourceOps.stop: after it returns, nothing is submitted to the session's recorder
 * any more. NULL: no-op. */
void sys_stats_unsubscribe(void *state);

/* Reads of @group done for all sessions since the service started (for tests). */
uint64_t sys_stats_reads(SysStatsGroup group);

/* Makes room for one more element in a repeated field being built (@n elements now). */
int sys_stats_grow(void *array, size_t n, size_t elem_size);
/* Appends a new, initialized message of type @d to the repeated field @array (a T ***)
 * of @n elements. NULL when out of memory. */
void *sys_stats_append(void *array, size_t *n, const ProtobufCMessageDescriptor *d);

/* DataSourceOps.queue_final: one last sample of the session's groups (and batteries) on
 * the poller's thread (poller_call() under @owner), at Stop, for this session only.
 * NULL: 0. */
int sys_stats_queue_final(void *state, const void *owner);
