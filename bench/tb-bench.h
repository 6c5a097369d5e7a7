/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What tb-bench's subcommands share: the small helpers of tb-bench.c, the trace analysis
 * (control times Start to the first event with it), and the subcommands that live in their
 * own files (tb-bench-floor.c, tb-bench-control.c).
 */
#pragma once

#include <stdint.h>
#include <time.h>

#define TRACEFS "/sys/kernel/tracing"

/* Inline: the floor's drain loop reads the clock each period, as it did in one file. */
static inline uint64_t now_ns(clockid_t clock) {
        struct timespec ts;

        clock_gettime(clock, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

/* The value after `name` among argv[2..], or def. */
const char *arg(int argc, char **argv, const char *name, const char *def);
int write_file(const char *path, const char *value);
__attribute__((noreturn)) void die(const char *what, int r);

typedef struct Analysis {
        uint64_t file_bytes, packets, bundles, lost_bundles;
        uint64_t n_switch, n_waking, n_other, markers;
        uint64_t switch_bytes, waking_bytes, bundle_bytes, ftrace_packet_bytes;
        uint64_t first_event_ts, first_started_ts;
} Analysis;

int analyze_file(const char *file, Analysis *a);

int cmd_floor(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_control(int argc, char **argv);
int cmd_forkstorm(int argc, char **argv);
int cmd_hostile(int argc, char **argv);
int cmd_sysread(int argc, char **argv);
