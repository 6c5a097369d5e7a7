/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

/*
 * A session's own tracefs instance (instances/tracebus-<pid>-<id>), through libtracefs.
 * libtracefs reports failures as -1 with errno set; these wrappers return -errno.
 * Only the service's main thread calls them; the recorder thread reads the per-CPU
 * pipes through plain file descriptors.
 */

typedef struct TraceInstance TraceInstance;

typedef struct TraceCpuStats {
        uint64_t entries, overrun, commit_overrun, bytes, dropped_events, read_events;
        double oldest_event_ts, now_ts;
} TraceCpuStats;

/* The tracefs mount point, or NULL if tracefs is not mounted. */
const char *trace_instance_tracefs_root(void);
/* 0 if instances can be made; -ENODEV without tracefs, -EROFS if this process sees
 * tracefs read-only (a sandbox's mount, not the kernel's say). */
int trace_instance_check_writable(void);

/* Creates a fresh instance with tracing off, no events enabled and the boot clock, and
 * holds its lock (see trace_instance_remove_stale()) until trace_instance_free(). */
int trace_instance_new(const char *name, uint32_t buffer_size_kb, TraceInstance **ret);
/* Disables every event and removes the instance. NULL-safe. */
TraceInstance *trace_instance_free(TraceInstance *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(TraceInstance *, trace_instance_free);

const char *trace_instance_name(const TraceInstance *t);

/* @event is "group/name", already checked against the kernel's events. */
int trace_instance_enable_event(TraceInstance *t, const char *event);
int trace_instance_set_tracing(TraceInstance *t, bool on);
/* Writes @value to a file of the instance; @file is the service's own name, never a caller's. */
int trace_instance_write_file(TraceInstance *t, const char *file, const char *value);

/* Reads a file of the instance (e.g. "events/sched/sched_switch/format"). */
int trace_instance_read_file(TraceInstance *t, const char *file, char **ret, size_t *ret_len);

/* Opens per_cpu/cpu@cpu/trace_pipe_raw non-blocking. */
int trace_instance_open_cpu_pipe(TraceInstance *t, unsigned cpu);
/* Opens per_cpu/cpu@cpu/stats, for trace_instance_read_cpu_stats_fd() from any thread. */
int trace_instance_open_cpu_stats(TraceInstance *t, unsigned cpu);
int trace_instance_read_cpu_stats_fd(int fd, TraceCpuStats *ret);

/* The number of CPUs the kernel keeps ring buffers for (per_cpu/cpuN). */
int trace_instance_n_cpus(TraceInstance *t);

/* Removes instances named tracebus-<pid>-<id> that no live service holds locked: left
 * behind by a service that crashed. Safe across pid and mount namespaces: an instance of
 * a live service in another container is never touched. Returns how many were removed. */
int trace_instance_remove_stale(void);

