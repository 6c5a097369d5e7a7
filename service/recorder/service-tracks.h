/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>

#include "trace-writer.h"

/*
 * The service's own tracks in the trace (Perfetto TrackDescriptor + TrackEvent): a
 * "tracebus" track with an instant for each moment of the session's life, and under it
 * counter tracks per CPU for the events the kernel lost and for how full its buffer was
 * when drained, so that loss shows on the timeline where it happened.
 */

uint64_t service_track_lost_uuid(unsigned cpu);
uint64_t service_track_fill_uuid(unsigned cpu);

/* The descriptors, as metadata: they survive a ring buffer that wraps. */
int service_tracks_append_descriptors(TraceWriter *w, unsigned n_cpus);
int service_tracks_append_instant(TraceWriter *w, uint64_t timestamp, const char *name);
int service_tracks_append_counter(TraceWriter *w, uint64_t timestamp, uint64_t track_uuid, double value);
