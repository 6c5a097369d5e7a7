/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sys-stats.h"

/* A one-line sysfs file, without its newline. NULL if it cannot be read. */
static char *read_line(const char *dir, const char *name) {
        char path[PATH_MAX];
        char *text = NULL;

        if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int) sizeof(path) ||
            sys_stats_read_file(path, &text, NULL) < 0)
                return NULL;
        text[strcspn(text, "\n")] = 0;
        return text;
}

static bool read_u64(const char *dir, const char *name, uint64_t *ret) {
        _cleanup_free_ char *text = read_line(dir, name);
        char *end;

        if (!text || !*text)
                return false;
        errno = 0;
        *ret = strtoull(text, &end, 10);
        return errno == 0 && *end == 0;
}

/* "cpuN" -> N. */
static bool cpu_index(const char *name, uint32_t *ret) {
        char *end;
        unsigned long v;

        if (strncmp(name, "cpu", 3) != 0 || name[3] < '0' || name[3] > '9')
                return false;
        v = strtoul(name + 3, &end, 10);
        if (*end || v >= 65536)
                return false;
        *ret = (uint32_t) v;
        return true;
}

/* How many CPUs @cpu_root describes: the highest cpuN, plus one. */
static uint32_t count_cpus(const char *cpu_root) {
        DIR *d = opendir(cpu_root);
        struct dirent *de;
        uint32_t n = 0, i;

        if (!d)
                return 0;
        while ((de = readdir(d)))
                if (cpu_index(de->d_name, &i))
                        n = MAX(n, i + 1);
        closedir(d);
        return n;
}

/* One frequency per CPU by index, as traced_probes reads it: scaling_cur_freq, else 0
 * (offline, or no cpufreq). Never cpuinfo_cur_freq, which only root may read. */
int sys_stats_read_cpufreq(const char *cpu_root, Tracebus__SysStats *out) {
        uint32_t n = count_cpus(cpu_root);
        int r;

        for (uint32_t cpu = 0; cpu < n; cpu++) {
                char dir[PATH_MAX];
                uint64_t khz = 0;

                if (snprintf(dir, sizeof(dir), "%s/cpu%u/cpufreq", cpu_root, cpu) >= (int) sizeof(dir))
                        return -ENAMETOOLONG;
                if (!read_u64(dir, "scaling_cur_freq", &khz))
                        khz = 0;
                r = sys_stats_grow(&out->cpufreq_khz, out->n_cpufreq_khz, sizeof(uint32_t));
                if (r < 0)
                        return r;
                out->cpufreq_khz[out->n_cpufreq_khz++] = (uint32_t) MIN(khz, UINT32_MAX);
        }
        return 0;
}

static int add_idle_state(Tracebus__SysStats__CpuIdleState *cs, const char *state_dir) {
        _cleanup_free_ char *name = read_line(state_dir, "name");
        Tracebus__SysStats__CpuIdleStateEntry *e;
        uint64_t us;

        if (!name || !read_u64(state_dir, "time", &us))
                return 0;
        e = sys_stats_append(&cs->cpuidle_state_entry, &cs->n_cpuidle_state_entry,
                             &tracebus__sys_stats__cpu_idle_state_entry__descriptor);
        if (!e)
                return -ENOMEM;
        e->state = TAKE_PTR(name);
        e->has_duration_us = true;
        e->duration_us = us;
        return 0;
}

/* The time each CPU spent in each idle state (stateN/name, stateN/time in us). */
int sys_stats_read_cpuidle(const char *cpu_root, Tracebus__SysStats *out) {
        uint32_t n = count_cpus(cpu_root);
        int r;

        for (uint32_t cpu = 0; cpu < n; cpu++) {
                Tracebus__SysStats__CpuIdleState *cs;

                cs = sys_stats_append(&out->cpuidle_state, &out->n_cpuidle_state,
                                      &tracebus__sys_stats__cpu_idle_state__descriptor);
                if (!cs)
                        return -ENOMEM;
                cs->has_cpu_id = true;
                cs->cpu_id = cpu;
                for (unsigned state = 0; state < 64; state++) {
                        char dir[PATH_MAX];

                        if (snprintf(dir, sizeof(dir), "%s/cpu%u/cpuidle/state%u", cpu_root, cpu, state) >=
                            (int) sizeof(dir) || access(dir, F_OK) < 0)
                                break;
                        r = add_idle_state(cs, dir);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

static int add_thermal_zone(Tracebus__SysStats *out, const char *root, const char *name) {
        char dir[PATH_MAX];
        Tracebus__SysStats__ThermalZone *z;
        uint64_t millidegrees;

        if (snprintf(dir, sizeof(dir), "%s/%s", root, name) >= (int) sizeof(dir))
                return 0;
        z = sys_stats_append(&out->thermal_zone, &out->n_thermal_zone, &tracebus__sys_stats__thermal_zone__descriptor);
        if (!z)
                return -ENOMEM;
        if (!(z->name = strdup(name)))
                return -ENOMEM;
        /* The kernel says millidegrees; Perfetto writes whole degrees. */
        if (read_u64(dir, "temp", &millidegrees)) {
                z->has_temp = true;
                z->temp = millidegrees / 1000u;
        }
        z->type = read_line(dir, "type");
        return 0;
}

int sys_stats_read_thermal(const char *thermal_root, Tracebus__SysStats *out) {
        DIR *d = opendir(thermal_root);
        struct dirent *de;
        int r = 0;

        if (!d)
                return -errno;
        while (r >= 0 && (de = readdir(d)))
                if (strncmp(de->d_name, "thermal_zone", 12) == 0)
                        r = add_thermal_zone(out, thermal_root, de->d_name);
        closedir(d);
        return r;
}

static int add_devfreq(Tracebus__SysStats *out, const char *root, const char *name) {
        char dir[PATH_MAX];
        Tracebus__SysStats__DevfreqValue *v;
        uint64_t hz = 0;

        if (snprintf(dir, sizeof(dir), "%s/%s", root, name) >= (int) sizeof(dir))
                return 0;
        v = sys_stats_append(&out->devfreq, &out->n_devfreq, &tracebus__sys_stats__devfreq_value__descriptor);
        if (!v)
                return -ENOMEM;
        (void) read_u64(dir, "cur_freq", &hz);
        v->has_value = true;
        v->value = hz;
        return (v->key = strdup(name)) ? 0 : -ENOMEM;
}

int sys_stats_read_devfreq(const char *devfreq_root, Tracebus__SysStats *out) {
        DIR *d = opendir(devfreq_root);
        struct dirent *de;
        int r = 0;

        if (!d)
                return -errno;
        while (r >= 0 && (de = readdir(d)))
                if (de->d_name[0] != '.')
                        r = add_devfreq(out, devfreq_root, de->d_name);
        closedir(d);
        return r;
}
