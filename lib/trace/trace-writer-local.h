/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The trace writer's internals shared by its files: trace-writer.c (packets, limits)
 * and trace-writer-output.c (getting bytes into the output, within the deadline). */

#include <sys/uio.h>

#include "trace-writer.h"

/* Writes all of @iov (modifies it), adding what went out to *written. A PIPE or SOCKET
 * output that takes nothing for w->timeout_usec fails with -ETIMEDOUT. */
int trace_writer_output_writev(TraceWriter *w, struct iovec *iov, int n, uint64_t *written);

struct TracePacketChunk {
        TracePacketChunk *next;
        size_t len;
        size_t events;       /* ftrace events inside, for the loss accounting */
        /* A snapshot shares the chunks it holds (trace-writer-snapshot.c),
         * written by another thread while the ring drops them: freed by the last owner. */
        _Atomic uint32_t refs;
        uint8_t data[];
};

/* Drops a reference to @c (its list's or a snapshot's), freeing it with the last. */
void trace_packet_chunk_unref(TracePacketChunk *c);
/* trace_writer_done(): the chunks a snapshot holds (trace-writer-snapshot.c). */
void trace_writer_snapshot_release(TraceWriter *w);

/* trace-writer-buffer.c: the data buffers. */
void trace_writer_buffers_init(TraceWriter *w, TraceWriterMode mode, size_t capacity);
void trace_writer_buffers_done(TraceWriter *w);
/* The oldest chunk of @b, taken out (not counted as read), or NULL. */
TracePacketChunk *trace_writer_buffer_pop(TraceWriter *w, TraceWriterBuffer *b);
/* Where a framed data packet of @len bytes (@events ftrace events inside) goes in @b:
 * NULL in *ret when a full DISCARD buffer refuses it; -ENOMEM. */
int trace_writer_buffer_reserve(TraceWriter *w, TraceWriterBuffer *b, size_t len, size_t events, uint8_t **ret);
/* @len bytes of @b went into the output. */
void trace_writer_buffer_read(TraceWriterBuffer *b, size_t len, size_t packets);
/* Grows *@buf to hold @extra more bytes after @len. */
int trace_writer_flat_reserve(uint8_t **buf, size_t *allocated, size_t len, size_t extra);

/* trace-writer-filter.c: packets through w->filter. Each gives the filtered packet in
 * *ret (valid until the next call), or NULL in *ret when it was malformed and dropped. */
int trace_writer_filter(TraceWriter *w, const uint8_t *packet, size_t len, const uint8_t **ret, size_t *ret_len);
int trace_writer_filter_message(TraceWriter *w, const Tracebus__TracePacket *packet, const uint8_t **ret,
                                size_t *ret_len);
/* The packet trace_writer_append_ftrace_bundle() would keep for @bundle, filtered. */
int trace_writer_filter_ftrace(TraceWriter *w, const uint8_t *bundle, size_t len, const uint8_t **ret,
                               size_t *ret_len);
void trace_writer_filter_done(TraceWriter *w);

/* Whole packets of @buf (@len bytes of them) into the output, within max_bytes and the
 * budget as trace_writer_flush() writes them: -EFBIG, -EDQUOT once one is reached. */
int trace_writer_write_whole(TraceWriter *w, const uint8_t *buf, size_t len);
