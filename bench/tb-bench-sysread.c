/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tb-bench sysread --seconds S --period-ms P [--procs 1]
 *
 * The pollers' floor: every period, a plain read() of the files linux.sys_stats (every
 * group) and linux.sysfs_power read, and with --procs 1 what linux.process_stats reads of
 * every process (status, oom_score_adj), with nothing parsed or written. Prints the CPU
 * time this took and the processes seen, so that bench/run can set the service's poller
 * cost against it in one run.
 */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tb-bench.h"

static char buf[1 << 20];

static void slurp(const char *path) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);

        if (fd < 0)
                return;
        while (read(fd, buf, sizeof(buf)) > 0)
                ;
        close(fd);
}

/* Each DIR/NAME*\/FILE that exists. */
static void slurp_each(const char *dir, const char *prefix, const char *const *files) {
        DIR *d = opendir(dir);
        struct dirent *de;

        if (!d)
                return;
        while ((de = readdir(d))) {
                char path[512];

                if (strncmp(de->d_name, prefix, strlen(prefix)) != 0)
                        continue;
                for (size_t i = 0; files[i]; i++) {
                        snprintf(path, sizeof(path), "%s/%s/%s", dir, de->d_name, files[i]);
                        slurp(path);
                }
        }
        closedir(d);
}

static const char *const proc_files[] = { "status", "oom_score_adj", NULL };

static void read_everything(bool with_processes) {
        static const char *const procs[] = { "/proc/meminfo", "/proc/vmstat", "/proc/stat", "/proc/buddyinfo",
                                             "/proc/diskstats", "/proc/pressure/cpu", "/proc/pressure/io",
                                             "/proc/pressure/memory", "/proc/slabinfo" };
        static const char *const cpufreq[] = { "cpufreq/cpuinfo_cur_freq", "cpufreq/scaling_cur_freq",
                                               "cpuidle/state0/name", "cpuidle/state0/time", NULL };
        static const char *const thermal[] = { "temp", "type", NULL };
        static const char *const devfreq[] = { "cur_freq", NULL };
        static const char *const power[] = { "type", "present", "charge_now", "capacity", "current_now", NULL };

        for (size_t i = 0; i < sizeof(procs) / sizeof(procs[0]); i++)
                slurp(procs[i]);
        slurp_each("/sys/devices/system/cpu", "cpu", cpufreq);
        slurp_each("/sys/class/thermal", "thermal_zone", thermal);
        slurp_each("/sys/class/devfreq", "", devfreq);
        slurp_each("/sys/class/power_supply", "", power);
        if (with_processes)
                slurp_each("/proc", "", proc_files);
}

static unsigned count_processes(void) {
        DIR *d = opendir("/proc");
        struct dirent *de;
        unsigned n = 0;

        while (d && (de = readdir(d)))
                n += de->d_name[0] >= '1' && de->d_name[0] <= '9';
        if (d)
                closedir(d);
        return n;
}

int cmd_sysread(int argc, char **argv) {
        double seconds = strtod(arg(argc, argv, "--seconds", "10"), NULL);
        uint64_t period = strtoull(arg(argc, argv, "--period-ms", "100"), NULL, 10) * 1000000ull;
        uint64_t start = now_ns(CLOCK_MONOTONIC), end = start + (uint64_t) (seconds * 1e9), next = start;
        bool procs = strcmp(arg(argc, argv, "--procs", "0"), "1") == 0;
        uint64_t cpu0 = now_ns(CLOCK_PROCESS_CPUTIME_ID), reads = 0;

        while (next < end) {
                uint64_t now;

                read_everything(procs);
                reads++;
                next += period;
                now = now_ns(CLOCK_MONOTONIC);
                if (next > now)
                        usleep((useconds_t) ((next - now) / 1000));
        }
        printf("{\"seconds\": %.3f, \"reads\": %" PRIu64 ", \"cpu_ns\": %" PRIu64 ", \"processes\": %u}\n",
               (double) (now_ns(CLOCK_MONOTONIC) - start) / 1e9, reads, now_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu0,
               count_processes());
        return 0;
}
