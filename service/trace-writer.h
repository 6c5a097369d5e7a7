/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace.pb-c.h"

/*
 * Builds a Perfetto trace: each packet is framed as field 1 of the Trace message
 * (0x0a, varint length, TracePacket bytes). Packets are collected in memory and
 * written to the output fd by trace_writer_flush(), so that a write never leaves
 * half a packet behind unless the write itself fails.
 */

/* Sequence ids: 1 for the service's own packets, as Perfetto's service does,
 * 2 for the ftrace data, 3 for the process descriptions. */
enum {
        TRACE_SEQUENCE_SERVICE = 1,
        TRACE_SEQUENCE_FTRACE = 2,
        TRACE_SEQUENCE_PROCESSES = 3,
        _TRACE_SEQUENCE_MAX,
};

typedef struct TraceWriter {
        int fd;                    /* not owned */
        uint8_t *buf;
        size_t len, allocated;
        uint64_t bytes_written;    /* flushed to fd */
        uint64_t max_bytes;        /* 0: unlimited */
        bool sequence_started[_TRACE_SEQUENCE_MAX];
        bool limit_reached;
} TraceWriter;

void trace_writer_init(TraceWriter *w, int fd, uint64_t max_bytes);
void trace_writer_done(TraceWriter *w);

/* Sets the trusted sequence id on @packet (and the first-packet flags on the first
 * packet of that sequence), packs it and appends it. */
int trace_writer_append(TraceWriter *w, Tracebus__TracePacket *packet, uint32_t sequence_id);

/* Appends a TracePacket carrying an already-encoded FtraceEventBundle. */
int trace_writer_append_ftrace_bundle(TraceWriter *w, const uint8_t *bundle, size_t len);

/* Writes what was appended. With max_bytes set, writes whole packets only up to the limit
 * and returns -EFBIG once the next packet would not fit (nothing after it is written). */
int trace_writer_flush(TraceWriter *w);

size_t trace_writer_pending(const TraceWriter *w);

/* Encoding helpers, exposed for the unit tests. */
size_t varint_encode(uint64_t v, uint8_t out[static 10]);
