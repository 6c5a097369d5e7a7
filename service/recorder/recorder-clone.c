/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <unistd.h>

#include "log.h"
#include "recorder-local.h"

/* Snapshots of a running session. The event loop asks; the worker serves the request
 * right after a drain, so the snapshot holds every event the kernel had when it was
 * asked for. The worker copies in memory what its writer holds: that memory is bounded
 * by the session's own buffers, and only one request waits at a time. Writing the copy
 * out is the caller's job, done on another thread (service/core/session-clone.c). */

int recorder_clone(Recorder *rec, RecorderClone *c) {
        RecorderClone *expected = NULL;

        assert(rec);
        assert(c);
        assert(c->done_fd >= 0);

        c->error = 0;
        c->events = c->copy_ns = 0;
        c->streamed = false;
        trace_writer_snapshot_init(&c->snapshot);
        if (!atomic_compare_exchange_strong(&rec->clone_request, &expected, c))
                return -EBUSY;
        /* The worker wakes, drains at once (a pending clone makes its pass a drain) and serves. */
        recorder_wake(rec);
        return 0;
}

bool recorder_clone_cancel(Recorder *rec, RecorderClone *c) {
        RecorderClone *expected = c;

        return atomic_compare_exchange_strong(&rec->clone_request, &expected, NULL);
}

static void clone_done(RecorderClone *c, int error) {
        uint64_t one = 1;

        c->error = error;
        (void) write(c->done_fd, &one, sizeof(one));
}

/* On the worker, after a drain: the snapshot, if one was asked for. A snapshot that
 * fails (-ENOMEM) fails alone: the recording goes on. */
/* The snapshot's packets: its own opening packets, a copy of the writer's, its own
 * closing packets. On failure, *ret_step says which failed. */
static int copy_snapshot(Recorder *rec, RecorderClone *c, const char **ret_step) {
        int r;

        *ret_step = "cannot write its opening packets";
        r = recorder_append_snapshot_header(rec, &c->snapshot);
        if (r < 0)
                return r;
        *ret_step = "cannot copy the session's buffers";
        r = trace_writer_snapshot_copy(&c->snapshot, &rec->writer, &c->events);
        if (r < 0)
                return r;
        *ret_step = "cannot write its closing packets";
        return recorder_append_snapshot_trailer(rec, &c->snapshot);
}

void recorder_serve_clone(Recorder *rec) {
        RecorderClone *c = atomic_exchange(&rec->clone_request, NULL);
        uint64_t start = now_ns(CLOCK_MONOTONIC);
        const char *step = NULL;
        int r;

        if (!c)
                return;
        /* The snapshot's packets go through the session's trace_filter as all others. */
        if (rec->writer.filter)
                trace_writer_set_filter(&c->snapshot, rec->writer.filter);
        r = copy_snapshot(rec, c, &step);
        c->copy_ns = now_ns(CLOCK_MONOTONIC) - start;
        c->streamed = rec->writer.mode == TRACE_WRITER_STREAM;
        if (r < 0)
                log_warning_errno(r, "Snapshot of the session: %s, the recording goes on: %m", step);
        clone_done(c, r < 0 ? r : 0);
}

/* The worker ends: a request it did not serve fails, so that its caller hears of it. */
void recorder_cancel_clone(Recorder *rec) {
        RecorderClone *c = atomic_exchange(&rec->clone_request, NULL);

        if (c)
                clone_done(c, -ECANCELED);
}
