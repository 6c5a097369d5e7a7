/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <linux/perf_event.h>
#include <sys/types.h>

#include "config/session-config.h"
#include "recorder/recorder.h"
#include "sources/data-source.h"

/*
 * linux.perf: perf_event_open() on every CPU for the session's timebase, the ring
 * buffers mmapped and read every ring_buffer_read_period_ms by a thread of the
 * sampler's own (never the recorder's ftrace drain), each sample kept or dropped by
 * the session's scope and its owner's rights (perf-scope.c), written as Perfetto v58's
 * PerfSample packets with interned callstacks (perf-packets.c) on TRACE_SEQUENCE_PERF
 * through recorder_submit_packet().
 */

typedef struct PerfSampler PerfSampler;
/* perf-config.h's. */
typedef struct PerfSection PerfSection;


/* The registry's entry for linux.perf (perf-source.c). */
extern const DataSourceOps perf_data_source;

/* DataSourceOps.start: opens the events of @section (a PerfSection, which must outlive
 * the sampler) and starts the thread: the processes of ctx->owner_uid only, unless
 * section->manage. *ret is a PerfSampler. */
int perf_sampler_start(const DataSourceContext *ctx, void *section, void **ret);

/* DataSourceOps.stop: reads what is left in the rings, ends the thread, frees @state;
 * NULL is a no-op. Before the recorder's final drain, so that the last samples are in
 * the trace. */
void perf_sampler_stop(void *state);

/* For the bus, once polkit answered whether the caller holds org.tracebus.manage
 * (@manage): 0 if the scope of @config's linux.perf section names only processes the
 * caller may sample (or there is no such section), else -EPERM with the first other
 * user's pid in *ret_pid. Kernel frames asked for without @manage are dropped with a
 * warning in @config. */
int perf_scope_authorize(SessionConfig *config, uid_t caller, bool manage, pid_t *ret_pid);
