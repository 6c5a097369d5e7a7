/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "trace-writer-local.h"

/* Snapshots of a running writer (Session.Clone): the recorder's thread takes what its
 * writer holds into a writer of its own, which another thread then writes out, so the
 * recording goes on while the snapshot is written. The metadata (small) is copied; a
 * ring's packets are shared: each chunk is counted once more and written from where it
 * is, so a 64 MB ring is taken in the time of a few thousand pointers, not a memcpy. */

void trace_packet_chunk_unref(TracePacketChunk *c) {
        if (c && atomic_fetch_sub(&c->refs, 1) == 1)
                free(c);
}

void trace_writer_snapshot_release(TraceWriter *w) {
        for (size_t i = 0; i < w->n_shared; i++)
                trace_packet_chunk_unref(w->shared[i]);
        w->shared = mfree(w->shared);
        w->n_shared = w->shared_allocated = w->shared_at = 0;
}

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

static size_t count_chunks(const TraceWriter *w) {
        size_t n = 0;

        for (size_t i = 0; i < w->n_buffers; i++)
                for (const TracePacketChunk *c = w->buffers[i].head; c; c = c->next)
                        n++;
        return n;
}

/* Every chunk of @w's buffers, in buffer order, oldest first: one more reference each. */
static int share_chunks(TraceWriter *snap, const TraceWriter *w, uint64_t *events) {
        size_t n = count_chunks(w);

        snap->shared = calloc(MAX(n, (size_t) 1), sizeof(TracePacketChunk *));
        if (!snap->shared)
                return -ENOMEM;
        snap->shared_allocated = n;
        for (size_t i = 0; i < w->n_buffers; i++)
                for (TracePacketChunk *c = w->buffers[i].head; c; c = c->next) {
                        atomic_fetch_add(&c->refs, 1);
                        snap->shared[snap->n_shared++] = c;
                        *events += c->events;
                }
        return 0;
}

int trace_writer_snapshot_copy(TraceWriter *snap, const TraceWriter *w, uint64_t *ret_events) {
        uint64_t events = 0;
        int r;

        assert(snap);
        assert(w);

        if (snap->shared)
                return -EALREADY;
        /* The metadata and a streamed buffer's bytes are copied: both are reused by @w. */
        r = copy_bytes(snap, w->meta, w->meta_len);
        for (size_t i = 0; r >= 0 && i < w->n_buffers; i++)
                if (w->buffers[i].stream)
                        r = copy_bytes(snap, w->buffers[i].stream, w->buffers[i].data_len);
        if (r >= 0)
                r = share_chunks(snap, w, &events);
        if (r < 0)
                return r;
        snap->shared_at = snap->meta_len;
        if (ret_events)
                *ret_events += events;
        return 0;
}

int trace_writer_snapshot_write(TraceWriter *snap, int fd, TraceWriterOutput output, uint64_t timeout_usec,
                                TraceBudget *budget, uint64_t max_bytes) {
        size_t at;
        int r;

        assert(snap);

        snap->fd = fd;
        snap->max_bytes = max_bytes;
        trace_writer_set_output(snap, output, timeout_usec);
        trace_writer_set_budget(snap, budget);
        /* The metadata before the shared chunks, the chunks, then the closing packets. */
        at = snap->shared ? snap->shared_at : snap->meta_len;
        r = trace_writer_write_whole(snap, snap->meta, at);
        for (size_t i = 0; r >= 0 && i < snap->n_shared; i++)
                r = trace_writer_write_whole(snap, snap->shared[i]->data, snap->shared[i]->len);
        if (r >= 0)
                r = trace_writer_write_whole(snap, snap->meta + at, snap->meta_len - at);
        return r;
}
