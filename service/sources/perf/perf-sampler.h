/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <linux/perf_event.h>
#include <sys/types.h>

#include "recorder/recorder.h"
#include "config/session-config.h"

/*
 * linux.perf: perf_event_open() on every CPU for the session's timebase, the ring
 * buffers mmapped and read every ring_buffer_read_period_ms by a thread of the
 * sampler's own (never the recorder's ftrace drain), each sample kept or dropped by
 * the session's scope and its owner's rights (perf-scope.c), written as Perfetto v58's
 * PerfSample packets with interned callstacks (perf-packets.c) on TRACE_SEQUENCE_PERF
 * through recorder_submit_packet().
 */

typedef struct PerfSampler PerfSampler;

/* perf_event_open(2): the fd, or -errno. */
int perf_event_open_fd(struct perf_event_attr *attr, pid_t pid, int cpu);

/* Opens the events of @config (config->perf) and starts the thread; *ret is NULL when
 * the config has no linux.perf. @owner_uid's processes only, unless config->perf_manage. */
int perf_sampler_start(Recorder *rec, const SessionConfig *config, uid_t owner_uid, PerfSampler **ret);

/* Reads what is left in the rings, ends the thread, frees @s; NULL is a no-op. Before
 * the recorder's final drain, so that the last samples are in the trace. */
PerfSampler *perf_sampler_stop(PerfSampler *s);

/* For the bus, once polkit answered whether the caller holds org.tracebus.manage
 * (@manage): 0 if @config's scope names only processes the caller may sample, else
 * -EPERM with the first other user's pid in *ret_pid. Kernel frames asked for without
 * @manage are dropped with a warning. */
int perf_scope_authorize(SessionConfig *config, uid_t caller, bool manage, pid_t *ret_pid);
