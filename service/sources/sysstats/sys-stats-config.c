/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sources/poller.h"
#include "strv.h"
#include "sys-stats.h"

const char *const sys_stats_source_names[] = { "linux.sys_stats", "linux.system_info", "linux.sysfs_power", NULL };

static const char *const group_names[_SYS_STATS_GROUP_MAX] = {
        [SYS_STATS_MEMINFO] = "meminfo",
        [SYS_STATS_VMSTAT] = "vmstat",
        [SYS_STATS_STAT] = "stat",
        [SYS_STATS_DEVFREQ] = "devfreq",
        [SYS_STATS_CPUFREQ] = "cpufreq",
        [SYS_STATS_BUDDYINFO] = "buddyinfo",
        [SYS_STATS_DISKSTAT] = "diskstat",
        [SYS_STATS_PSI] = "psi",
        [SYS_STATS_THERMAL] = "thermal",
        [SYS_STATS_CPUIDLE] = "cpuidle",
        [SYS_STATS_SLAB] = "slab",
        [SYS_STATS_POWER] = "sysfs_power",
};

const char *sys_stats_group_to_string(SysStatsGroup group) {
        return group >= 0 && group < _SYS_STATS_GROUP_MAX ? group_names[group] : NULL;
}

/* What each group reads first: if it is not there, the kernel lacks the counters. */
static const char *const group_probe_paths[_SYS_STATS_GROUP_MAX] = {
        [SYS_STATS_MEMINFO] = "/proc/meminfo",
        [SYS_STATS_VMSTAT] = "/proc/vmstat",
        [SYS_STATS_STAT] = "/proc/stat",
        [SYS_STATS_DEVFREQ] = "/sys/class/devfreq",
        [SYS_STATS_CPUFREQ] = "/sys/devices/system/cpu/cpu0/cpufreq",
        [SYS_STATS_BUDDYINFO] = "/proc/buddyinfo",
        [SYS_STATS_DISKSTAT] = "/proc/diskstats",
        [SYS_STATS_PSI] = "/proc/pressure/cpu",
        [SYS_STATS_THERMAL] = "/sys/class/thermal/thermal_zone0",
        [SYS_STATS_CPUIDLE] = "/sys/devices/system/cpu/cpu0/cpuidle/state0",
        [SYS_STATS_SLAB] = "/proc/slabinfo",
        [SYS_STATS_POWER] = "/sys/class/power_supply",
};

bool sys_stats_group_available(SysStatsGroup group) {
        switch (group) {
        case SYS_STATS_DEVFREQ:
                return sys_stats_dir_has_entries(group_probe_paths[group], NULL);
        case SYS_STATS_POWER:
                return power_count_batteries(group_probe_paths[group]) > 0;
        default:
                return access(group_probe_paths[group], R_OK) == 0;
        }
}

/* Perfetto's periods are "> 10 ms": a shorter one is raised, and said so. */
static int take_period(SessionConfig *c, SysStatsSelection *sel, SysStatsGroup group, const char *field, bool has, uint32_t ms) {
        uint32_t *slot = &sel->period_ms[group];

        if (!has || ms == 0)
                return 0;
        if (ms < POLLER_MIN_PERIOD_MS) {
                int r = session_config_warn(c, "linux.sys_stats %s %u is under the minimum of %u ms: raised to %u ms",
                                            field, ms, POLLER_MIN_PERIOD_MS, POLLER_MIN_PERIOD_MS);
                if (r < 0)
                        return r;
                ms = POLLER_MIN_PERIOD_MS;
        }
        /* Two linux.sys_stats data sources: the faster period wins. */
        *slot = *slot ? MIN(*slot, ms) : ms;
        return 0;
}

static int take_keys(SessionConfig *c, const char *what, SysStatsKeys *keys, const int *values, size_t n,
                     bool (*known)(uint32_t key), const ProtobufCEnumDescriptor *names) {
        const ProtobufCEnumValue *v;
        int r;

        /* As Perfetto: no list means every counter. */
        if (n == 0) {
                memset(keys->bits, 0xff, sizeof(keys->bits));
                return 0;
        }
        for (size_t i = 0; i < n; i++) {
                if (values[i] > 0 && known((uint32_t) values[i])) {
                        sys_stats_keys_set(keys, (uint32_t) values[i]);
                        continue;
                }
                v = protobuf_c_enum_descriptor_get_value(names, values[i]);
                if (v)   /* Perfetto names it (MEMINFO_ZRAM...), tracebus has no file for it */
                        r = session_config_warn(c, "linux.sys_stats %s counter %s (%d) is not one tracebus reads: "
                                                "skipped", what, v->name, values[i]);
                else
                        r = session_config_warn(c, "linux.sys_stats %s counter %d is not one tracebus reads: skipped",
                                                what, values[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int take_stat_counters(SessionConfig *c, SysStatsSelection *sel, const Tracebus__SysStatsConfig *sc) {
        int r;

        if (sc->n_stat_counters == 0) {
                sel->stat_fields = UINT32_MAX;
                return 0;
        }
        for (size_t i = 0; i < sc->n_stat_counters; i++) {
                int v = (int) sc->stat_counters[i];

                if (v > 0 && v < 32 && protobuf_c_enum_descriptor_get_value(
                                &tracebus__sys_stats_config__stat_counters__descriptor, v)) {
                        sel->stat_fields |= 1u << v;
                        continue;
                }
                r = session_config_warn(c, "linux.sys_stats stat counter %d is not one tracebus reads: skipped", v);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int take_periods(SessionConfig *c, SysStatsSelection *sel, const Tracebus__SysStatsConfig *sc) {
        const struct {
                SysStatsGroup group;
                const char *field;
                bool has;
                uint32_t ms;
        } p[] = {
                { SYS_STATS_MEMINFO, "meminfo_period_ms", sc->has_meminfo_period_ms, sc->meminfo_period_ms },
                { SYS_STATS_VMSTAT, "vmstat_period_ms", sc->has_vmstat_period_ms, sc->vmstat_period_ms },
                { SYS_STATS_STAT, "stat_period_ms", sc->has_stat_period_ms, sc->stat_period_ms },
                { SYS_STATS_DEVFREQ, "devfreq_period_ms", sc->has_devfreq_period_ms, sc->devfreq_period_ms },
                { SYS_STATS_CPUFREQ, "cpufreq_period_ms", sc->has_cpufreq_period_ms, sc->cpufreq_period_ms },
                { SYS_STATS_BUDDYINFO, "buddyinfo_period_ms", sc->has_buddyinfo_period_ms, sc->buddyinfo_period_ms },
                { SYS_STATS_DISKSTAT, "diskstat_period_ms", sc->has_diskstat_period_ms, sc->diskstat_period_ms },
                { SYS_STATS_PSI, "psi_period_ms", sc->has_psi_period_ms, sc->psi_period_ms },
                { SYS_STATS_THERMAL, "thermal_period_ms", sc->has_thermal_period_ms, sc->thermal_period_ms },
                { SYS_STATS_CPUIDLE, "cpuidle_period_ms", sc->has_cpuidle_period_ms, sc->cpuidle_period_ms },
                { SYS_STATS_SLAB, "slab_period_ms", sc->has_slab_period_ms, sc->slab_period_ms },
        };
        int r;

        for (size_t i = 0; i < ELEMENTSOF(p); i++) {
                r = take_period(c, sel, p[i].group, p[i].field, p[i].has, p[i].ms);
                if (r < 0)
                        return r;
        }
        if (sc->has_gpufreq_period_ms && sc->gpufreq_period_ms > 0)
                return session_config_warn(c, "linux.sys_stats gpufreq_period_ms is not supported by tracebus: skipped");
        return 0;
}

/* The keys this kernel's /proc/meminfo or /proc/vmstat has, by counter value. */
static int read_present_keys(const char *path, int (*parse)(char *text, Tracebus__SysStats *out),
                             SysStatsKeys *ret) {
        _cleanup_free_ char *text = NULL;
        Tracebus__SysStats *s;
        int r;

        r = sys_stats_read_file(path, &text, NULL);
        if (r < 0)
                return r;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        tracebus__sys_stats__init(s);
        r = parse(text, s);
        for (size_t i = 0; r >= 0 && i < s->n_meminfo; i++)
                sys_stats_keys_set(ret, (uint32_t) s->meminfo[i]->key);
        for (size_t i = 0; r >= 0 && i < s->n_vmstat; i++)
                sys_stats_keys_set(ret, (uint32_t) s->vmstat[i]->key);
        tracebus__sys_stats__free_unpacked(s, NULL);
        return r;
}

/* Counters asked for that this kernel's file lacks (nr_alloc_batch left the kernel in 4.x;
 * Perfetto's sys_stats.cfg still asks for it): Perfetto skips them silently, tracebus says
 * which, once per group. No file at all is drop_unavailable()'s to say. */
static int warn_absent_keys(SessionConfig *c, const char *path, int (*parse)(char *text, Tracebus__SysStats *out),
                            bool (*known)(uint32_t key), const ProtobufCEnumDescriptor *d, const int *values,
                            size_t n) {
        _cleanup_strv_free_ char **absent = NULL;
        _cleanup_free_ char *list = NULL;
        SysStatsKeys present = {};
        int r;

        if (n == 0 || read_present_keys(path, parse, &present) < 0)
                return 0;
        for (size_t i = 0; i < n; i++) {
                const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value(d, values[i]);

                /* One tracebus does not read is take_keys()'s to say. */
                if (!v || values[i] <= 0 || !known((uint32_t) values[i]) ||
                    sys_stats_keys_test(&present, (uint32_t) values[i]))
                        continue;
                r = strv_extend_unique(&absent, v->name);
                if (r < 0)
                        return r;
        }
        if (!absent)
                return 0;
        list = strv_join(absent, ", ");
        if (!list)
                return -ENOMEM;
        return session_config_warn(c, "linux.sys_stats: this kernel's %s has no %s: skipped", path, list);
}

static int load_one_sys_stats(const Tracebus__SysStatsConfig *sc, SysStatsSelection *sel, SessionConfig *c) {
        int r;

        r = take_periods(c, sel, sc);
        if (r >= 0)
                r = take_keys(c, "meminfo", &sel->meminfo, (const int *) sc->meminfo_counters,
                              sc->n_meminfo_counters, sys_stats_meminfo_key_known,
                              &tracebus__meminfo_counters__descriptor);
        if (r >= 0)
                r = take_keys(c, "vmstat", &sel->vmstat, (const int *) sc->vmstat_counters,
                              sc->n_vmstat_counters, sys_stats_vmstat_key_known,
                              &tracebus__vmstat_counters__descriptor);
        if (r >= 0)
                r = take_stat_counters(c, sel, sc);
        if (r >= 0 && sc->meminfo_period_ms > 0)
                r = warn_absent_keys(c, "/proc/meminfo", sys_stats_parse_meminfo, sys_stats_meminfo_key_known,
                                     &tracebus__meminfo_counters__descriptor, (const int *) sc->meminfo_counters,
                                     sc->n_meminfo_counters);
        if (r >= 0 && sc->vmstat_period_ms > 0)
                r = warn_absent_keys(c, "/proc/vmstat", sys_stats_parse_vmstat, sys_stats_vmstat_key_known,
                                     &tracebus__vmstat_counters__descriptor, (const int *) sc->vmstat_counters,
                                     sc->n_vmstat_counters);
        return r;
}

/* A group the kernel lacks (no cpufreq in a VM, no thermal zones) is left out, said once. */
static int drop_unavailable(SessionConfig *c, SysStatsSelection *sel) {
        int r;

        for (SysStatsGroup g = 0; g < _SYS_STATS_GROUP_MAX; g++) {
                if (sel->period_ms[g] == 0 || sys_stats_group_available(g))
                        continue;
                sel->period_ms[g] = 0;
                if (g == SYS_STATS_POWER)
                        r = session_config_warn(c, "no battery: linux.sysfs_power skipped");
                else
                        r = session_config_warn(c, "linux.sys_stats %s: this kernel has no %s: skipped",
                                                group_names[g], group_probe_paths[g]);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* One of the data sources of the selection. */
static int load_source(const Tracebus__TraceConfig *tc, const Tracebus__DataSourceConfig *ds, SysStatsSelection *sel,
                       SessionConfig *c) {
        int r = 0;

        if (strcmp(ds->name, "linux.system_info") == 0) {
                sel->system_info = true;
                if (ds->system_info_config && ds->system_info_config->irq_names)
                        sel->irq_names = true;
        } else if (strcmp(ds->name, "linux.sysfs_power") == 0) {
                sel->period_ms[SYS_STATS_POWER] = SYS_STATS_POWER_PERIOD_MS;
                /* Checked by session_config_load_buffers(). */
                r = session_config_target_buffer(tc, ds, &sel->power_buffer, NULL);
        } else if (strcmp(ds->name, "linux.sys_stats") == 0 && ds->sys_stats_config) {
                r = session_config_target_buffer(tc, ds, &sel->sys_stats_buffer, NULL);
                if (r >= 0)
                        r = load_one_sys_stats(ds->sys_stats_config, sel, c);
        }
        return r;
}

int sys_stats_load_selection(const Tracebus__TraceConfig *tc, SessionConfig *c, SysStatsSelection *sel) {
        const Tracebus__DataSourceConfig *ds;
        int r;

        FOREACH_SOURCE_CONFIG(ds, sys_stats_source_names, tc) {
                r = load_source(tc, ds, sel, c);
                if (r < 0)
                        return r;
        }
        return drop_unavailable(c, sel);
}

int sys_stats_load(const Tracebus__TraceConfig *tc, const char *tracefs_root, SessionConfig *c, void **ret,
                   char **ret_error) {
        _cleanup_free_ SysStatsSelection *sel = NULL;
        size_t i = 0;
        int r;

        if (!data_source_next_config(sys_stats_source_names, tc, &i))
                return 0;
        sel = calloc(1, sizeof(*sel));
        if (!sel)
                return -ENOMEM;
        r = sys_stats_load_selection(tc, c, sel);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(sel);
        return 0;
}

/* /proc/slabinfo is root's alone (mode 0400): its counters need org.tracebus.manage, and
 * without it the rest of the session records. Every other file the three sources read is
 * one any user may read. */
int sys_stats_apply_rights(SessionConfig *c, void *section, uid_t owner_uid, bool manage) {
        SysStatsSelection *sel = section;

        if (!sel || manage || sel->period_ms[SYS_STATS_SLAB] == 0)
                return 0;
        sel->period_ms[SYS_STATS_SLAB] = 0;
        return session_config_warn(c, "linux.sys_stats slab_period_ms: /proc/slabinfo is readable by root only; "
                                   "its counters need org.tracebus.manage: skipped");
}
