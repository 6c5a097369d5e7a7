/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <string.h>

#include "macro.h"
#include "trace-writer-local.h"

/* Snapshots of a running writer (Session.Clone): the recorder's thread copies what its
 * writer holds into a writer of its own, which another thread then writes out, so the
 * recording goes on while the copy is written. The copy goes into the snapshot's
 * metadata region as framed bytes: a snapshot drops nothing and is written in order. */

void trace_writer_snapshot_init(TraceWriter *snap) {
        /* STREAM: nothing in a snapshot is ever overwritten or refused. */
        trace_writer_init(snap, -EBADF, TRACE_WRITER_STREAM, SIZE_MAX, 0);
}

static int copy_bytes(TraceWriter *snap, const uint8_t *data, size_t len) {
        int r;

        if (len == 0)
                return 0;
        r = trace_writer_flat_reserve(&snap->meta, &snap->meta_allocated, snap->meta_len, len);
        if (r < 0)
                return r;
        memcpy(snap->meta + snap->meta_len, data, len);
        snap->meta_len += len;
        return 0;
}

static int copy_buffer(TraceWriter *snap, const TraceWriterBuffer *b, uint64_t *events) {
        int r;

        if (b->stream)
                return copy_bytes(snap, b->stream, b->data_len);
        /* One reservation for the whole list: a 64 MB ring is a few hundred chunks. */
        r = trace_writer_flat_reserve(&snap->meta, &snap->meta_allocated, snap->meta_len, b->data_len);
        if (r < 0)
                return r;
        for (const TracePacketChunk *c = b->head; c; c = c->next) {
                memcpy(snap->meta + snap->meta_len, c->data, c->len);
                snap->meta_len += c->len;
                *events += c->events;
        }
        return 0;
}

int trace_writer_snapshot_copy(TraceWriter *snap, const TraceWriter *w, uint64_t *ret_events) {
        uint64_t events = 0;
        int r;

        assert(snap);
        assert(w);

        r = copy_bytes(snap, w->meta, w->meta_len);
        for (size_t i = 0; r >= 0 && i < w->n_buffers; i++)
                r = copy_buffer(snap, &w->buffers[i], &events);
        if (r < 0)
                return r;
        if (ret_events)
                *ret_events += events;
        return 0;
}

int trace_writer_snapshot_write(TraceWriter *snap, int fd, TraceWriterOutput output, uint64_t timeout_usec,
                                TraceBudget *budget, uint64_t max_bytes) {
        assert(snap);

        snap->fd = fd;
        snap->max_bytes = max_bytes;
        trace_writer_set_output(snap, output, timeout_usec);
        trace_writer_set_budget(snap, budget);
        return trace_writer_flush(snap);
}
