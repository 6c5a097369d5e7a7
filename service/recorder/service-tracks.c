/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>

#include "macro.h"
#include "service-tracks.h"

/* Unique in the trace (the only tracks are ours): "tb" in the top bytes, then a kind. */
#define TRACK_UUID_ROOT 0x7462000000000001ull
#define TRACK_UUID_LOST 0x7462000000010000ull
#define TRACK_UUID_FILL 0x7462000000020000ull

uint64_t service_track_lost_uuid(unsigned cpu) {
        return TRACK_UUID_LOST + cpu;
}

uint64_t service_track_fill_uuid(unsigned cpu) {
        return TRACK_UUID_FILL + cpu;
}

static int append_descriptor(TraceWriter *w, uint64_t uuid, uint64_t parent, const char *name,
                             Tracebus__CounterDescriptor *counter) {
        Tracebus__TracePacket packet = TRACEBUS__TRACE_PACKET__INIT;
        Tracebus__TrackDescriptor d = TRACEBUS__TRACK_DESCRIPTOR__INIT;

        d.has_uuid = true;
        d.uuid = uuid;
        d.has_parent_uuid = parent != 0;
        d.parent_uuid = parent;
        d.name = (char *) name;
        d.counter = counter;
        packet.track_descriptor = &d;
        return trace_writer_append_meta(w, &packet, TRACE_SEQUENCE_TRACKS);
}

int service_tracks_append_descriptors(TraceWriter *w, unsigned n_cpus) {
        Tracebus__CounterDescriptor count = TRACEBUS__COUNTER_DESCRIPTOR__INIT;
        Tracebus__CounterDescriptor percent = TRACEBUS__COUNTER_DESCRIPTOR__INIT;
        int r;

        count.has_unit = true;
        count.unit = TRACEBUS__COUNTER_DESCRIPTOR__UNIT__UNIT_COUNT;
        percent.unit_name = (char *) "%";

        r = append_descriptor(w, TRACK_UUID_ROOT, 0, "tracebus", NULL);
        for (unsigned cpu = 0; r >= 0 && cpu < n_cpus; cpu++) {
                char lost[64], fill[64];

                snprintf(lost, sizeof(lost), "Events lost by the kernel, CPU %u", cpu);
                snprintf(fill, sizeof(fill), "Kernel buffer fill, CPU %u", cpu);
                r = append_descriptor(w, service_track_lost_uuid(cpu), TRACK_UUID_ROOT, lost, &count);
                if (r >= 0)
                        r = append_descriptor(w, service_track_fill_uuid(cpu), TRACK_UUID_ROOT, fill, &percent);
        }
        return r;
}

static int append_event(TraceWriter *w, uint64_t timestamp, Tracebus__TrackEvent *e) {
        Tracebus__TracePacket packet = TRACEBUS__TRACE_PACKET__INIT;

        packet.has_timestamp = true;
        packet.timestamp = timestamp;
        packet.track_event = e;
        return trace_writer_append_data(w, &packet, TRACE_SEQUENCE_TRACKS);
}

int service_tracks_append_instant(TraceWriter *w, uint64_t timestamp, const char *name) {
        Tracebus__TrackEvent e = TRACEBUS__TRACK_EVENT__INIT;

        e.has_type = e.has_track_uuid = true;
        e.type = TRACEBUS__TRACK_EVENT__TYPE__TYPE_INSTANT;
        e.track_uuid = TRACK_UUID_ROOT;
        e.name = (char *) name;
        return append_event(w, timestamp, &e);
}

int service_tracks_append_counter(TraceWriter *w, uint64_t timestamp, uint64_t track_uuid, double value) {
        Tracebus__TrackEvent e = TRACEBUS__TRACK_EVENT__INIT;

        e.has_type = e.has_track_uuid = e.has_double_counter_value = true;
        e.type = TRACEBUS__TRACK_EVENT__TYPE__TYPE_COUNTER;
        e.track_uuid = track_uuid;
        e.double_counter_value = value;
        return append_event(w, timestamp, &e);
}
