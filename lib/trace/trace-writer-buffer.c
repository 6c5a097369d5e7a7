/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "trace-writer-local.h"

/* The writer's data buffers, TraceConfig.buffers: each keeps its own size and fill
 * policy, and counts what it took, dropped and handed out for TraceStats. */

int trace_writer_flat_reserve(uint8_t **buf, size_t *allocated, size_t len, size_t extra) {
        size_t need = len + extra;
        uint8_t *p;

        if (need <= *allocated)
                return 0;
        need = MAX(need, MAX(*allocated * 2, (size_t) 16 * 1024));
        p = realloc(*buf, need);
        if (!p)
                return -ENOMEM;
        *buf = p;
        *allocated = need;
        return 0;
}

void trace_writer_buffers_init(TraceWriter *w, TraceWriterMode mode, size_t capacity) {
        w->single = (TraceWriterBuffer) { .mode = mode, .capacity = capacity };
        w->buffers = &w->single;
        w->n_buffers = 1;
        w->ftrace_buffer = 0;
}

TracePacketChunk *trace_writer_buffer_pop(TraceWriter *w, TraceWriterBuffer *b) {
        TracePacketChunk *c = b->head;

        if (!c)
                return NULL;
        b->head = c->next;
        if (!b->head)
                b->tail = NULL;
        b->data_len -= c->len;
        w->data_len -= c->len;
        return c;
}

static void buffer_free(TraceWriter *w, TraceWriterBuffer *b) {
        while (b->head)
                trace_packet_chunk_unref(trace_writer_buffer_pop(w, b));
        w->data_len -= b->data_len;
        b->data_len = 0;
        b->stream = mfree(b->stream);
        b->stream_allocated = 0;
}

void trace_writer_buffers_done(TraceWriter *w) {
        for (size_t i = 0; i < w->n_buffers; i++)
                buffer_free(w, &w->buffers[i]);
        if (w->buffers != &w->single)
                free(w->buffers);
        w->buffers = &w->single;
        w->n_buffers = 1;
}

int trace_writer_set_buffers(TraceWriter *w, const TraceWriterBufferConfig *configs, size_t n,
                             uint32_t ftrace_buffer) {
        TraceWriterBuffer *buffers;

        assert(w);
        if (n == 0 || n > TRACE_WRITER_MAX_BUFFERS || ftrace_buffer >= n || w->data_len > 0)
                return -EINVAL;
        buffers = calloc(n, sizeof(*buffers));
        if (!buffers)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                buffers[i] = (TraceWriterBuffer) {
                        .mode = w->mode == TRACE_WRITER_STREAM ? TRACE_WRITER_STREAM :
                                configs[i].discard ? TRACE_WRITER_DISCARD : TRACE_WRITER_RING,
                        .capacity = configs[i].capacity,
                };
        trace_writer_buffers_done(w);
        w->buffers = buffers;
        w->n_buffers = n;
        w->ftrace_buffer = ftrace_buffer;
        /* The mode a caller sees is the one of the buffer the bulk of the data goes to. */
        w->mode = buffers[ftrace_buffer].mode;
        return 0;
}

bool trace_writer_buffer_full(const TraceWriter *w) {
        for (size_t i = 0; i < w->n_buffers; i++)
                if (w->buffers[i].data_len >= w->buffers[i].capacity && w->buffers[i].data_len > 0)
                        return true;
        return false;
}

static void count_dropped(TraceWriter *w, TraceWriterBuffer *b, size_t len, size_t events, bool discarded) {
        if (discarded) {
                b->stats.packets_discarded++;
                b->stats.bytes_discarded += len;
                w->stats.packets_discarded++;
                w->stats.bytes_discarded += len;
                w->stats.events_discarded += events;
        } else {
                b->stats.packets_overwritten++;
                b->stats.bytes_overwritten += len;
                w->stats.packets_overwritten++;
                w->stats.bytes_overwritten += len;
                w->stats.events_overwritten += events;
        }
}

/* Room for a data packet of @len bytes in @b: drops the oldest (RING) or refuses it
 * (DISCARD). Only @b's own packets ever make room. */
static bool buffer_make_room(TraceWriter *w, TraceWriterBuffer *b, size_t len, size_t events) {
        if (b->mode == TRACE_WRITER_STREAM)
                return true;
        if (b->mode == TRACE_WRITER_DISCARD) {
                /* Once full, nothing more: a smaller packet later would leave a hole. */
                if (!b->stats.packets_discarded && b->data_len + len <= b->capacity)
                        return true;
                count_dropped(w, b, len, events, /* discarded= */ true);
                return false;
        }
        while (b->head && b->data_len + len > b->capacity) {
                TracePacketChunk *c = trace_writer_buffer_pop(w, b);

                count_dropped(w, b, c->len, c->events, /* discarded= */ false);
                trace_packet_chunk_unref(c);
        }
        return true;
}

static uint8_t *buffer_append(TraceWriter *w, TraceWriterBuffer *b, size_t len, size_t events) {
        TracePacketChunk *c;
        uint8_t *p;

        if (b->mode == TRACE_WRITER_STREAM) {
                if (trace_writer_flat_reserve(&b->stream, &b->stream_allocated, b->data_len, len) < 0)
                        return NULL;
                p = b->stream + b->data_len;
        } else {
                c = malloc(sizeof(TracePacketChunk) + len);
                if (!c)
                        return NULL;
                *c = (TracePacketChunk) { .len = len, .events = events, .refs = 1 };
                if (b->tail)
                        b->tail->next = c;
                else
                        b->head = c;
                b->tail = c;
                p = c->data;
        }
        b->data_len += len;
        w->data_len += len;
        return p;
}

int trace_writer_buffer_reserve(TraceWriter *w, TraceWriterBuffer *b, size_t len, size_t events, uint8_t **ret) {
        uint64_t before = b->stats.bytes_written;

        *ret = NULL;
        if (!buffer_make_room(w, b, len, events))
                return 0;
        *ret = buffer_append(w, b, len, events);
        if (!*ret)
                return -ENOMEM;
        b->stats.bytes_written += len;
        b->stats.packets_written++;
        /* As Perfetto's ring counts its write pointer coming round to the start. */
        if (b->mode == TRACE_WRITER_RING && b->capacity > 0)
                b->stats.write_wrap_count += b->stats.bytes_written / b->capacity - before / b->capacity;
        return 0;
}

void trace_writer_buffer_read(TraceWriterBuffer *b, size_t len, size_t packets) {
        b->stats.bytes_read += len;
        b->stats.packets_read += packets;
}
