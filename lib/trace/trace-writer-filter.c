/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "macro.h"
#include "pb-wire.h"
#include "trace-writer-local.h"

#define TAG_FTRACE_EVENTS 0x0a                  /* TracePacket.ftrace_events, length-delimited */
#define TAG_SEQUENCE_ID 0x50                    /* TracePacket.trusted_packet_sequence_id */

void trace_writer_set_filter(TraceWriter *w, const TraceFilter *filter) {
        w->filter = filter;
}

void trace_writer_filter_done(TraceWriter *w) {
        w->filter_in = mfree(w->filter_in);
        w->filter_out = mfree(w->filter_out);
        w->filter_in_allocated = w->filter_out_allocated = 0;
}

static uint64_t now_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

int trace_writer_filter(TraceWriter *w, const uint8_t *packet, size_t len, const uint8_t **ret, size_t *ret_len) {
        uint64_t start = now_ns();
        ssize_t n;
        int r;

        *ret = NULL;
        r = trace_writer_flat_reserve(&w->filter_out, &w->filter_out_allocated, 0, len);
        if (r < 0)
                return r;
        w->filter_stats.input_packets++;
        w->filter_stats.input_bytes += len;
        n = trace_filter_packet(w->filter, packet, len, w->filter_out);
        w->filter_stats.time_taken_ns += now_ns() - start;
        if (n < 0) {
                /* Malformed: dropped and counted, as Perfetto's service does. */
                w->filter_stats.errors++;
                return 0;
        }
        w->filter_stats.output_bytes += (uint64_t) n;
        *ret = w->filter_out;
        *ret_len = (size_t) n;
        return 0;
}

int trace_writer_filter_message(TraceWriter *w, const Tracebus__TracePacket *packet, const uint8_t **ret,
                                size_t *ret_len) {
        size_t len = tracebus__trace_packet__get_packed_size(packet);
        int r;

        r = trace_writer_flat_reserve(&w->filter_in, &w->filter_in_allocated, 0, len);
        if (r < 0)
                return r;
        tracebus__trace_packet__pack(packet, w->filter_in);
        return trace_writer_filter(w, w->filter_in, len, ret, ret_len);
}

int trace_writer_filter_ftrace(TraceWriter *w, const uint8_t *bundle, size_t len, const uint8_t **ret,
                               size_t *ret_len) {
        size_t packet_len = 1 + pb_varint_size(len) + len + 2;
        uint8_t *p;
        int r;

        r = trace_writer_flat_reserve(&w->filter_in, &w->filter_in_allocated, 0, packet_len);
        if (r < 0)
                return r;
        p = w->filter_in;
        *p++ = TAG_FTRACE_EVENTS;
        p = pb_varint_encode(p, len);
        memcpy(p, bundle, len);
        p += len;
        *p++ = TAG_SEQUENCE_ID;
        *p++ = TRACE_SEQUENCE_FTRACE;
        w->filter_in_len = packet_len;
        return trace_writer_filter(w, w->filter_in, packet_len, ret, ret_len);
}
