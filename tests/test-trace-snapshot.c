/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit suite: a snapshot of a running writer (lib/trace/trace-writer-snapshot.c).
 * The snapshot shares the ring's packets while the live writer goes on overwriting them;
 * written out, it holds its own header, the live metadata, the ring's packets as they were
 * when it was taken, in order, and its trailer; the live writer loses nothing by it. */
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "trace-writer.h"

#include <glib.h>

#include "trace-file.h"

static void append_counter(TraceWriter *w, int64_t value) {
        Tracebus__TracePacket p = TRACEBUS__TRACE_PACKET__INIT;
        Tracebus__TrackEvent te = TRACEBUS__TRACK_EVENT__INIT;

        te.has_type = te.has_track_uuid = te.has_counter_value = true;
        te.type = TRACEBUS__TRACK_EVENT__TYPE__TYPE_COUNTER;
        te.track_uuid = 42;
        te.counter_value = value;
        p.has_timestamp = true;
        p.timestamp = 1000 + (uint64_t) value;
        p.track_event = &te;
        g_assert_cmpint(trace_writer_append_data(w, &p, TRACE_SEQUENCE_SYS_STATS), ==, 0);
}

static void append_marker_meta(TraceWriter *w, uint32_t sequence_id, uint64_t ts) {
        Tracebus__TracePacket p = TRACEBUS__TRACE_PACKET__INIT;

        p.has_timestamp = true;
        p.timestamp = ts;
        g_assert_cmpint(trace_writer_append_meta(w, &p, sequence_id), ==, 0);
}

typedef struct {
        GArray *counters;    /* int64 values, file order */
        GArray *meta_ts;     /* timestamps of packets without a track event */
} Seen;

static void collect(const Tracebus__TracePacket *p, const TraceRawPacket *raw, guint index, gpointer userdata) {
        Seen *s = userdata;

        if (p->track_event)
                g_array_append_val(s->counters, p->track_event->counter_value);
        else
                g_array_append_val(s->meta_ts, p->timestamp);
}

static void read_file(int fd, Seen *s) {
        off_t size = lseek(fd, 0, SEEK_END);
        g_autofree guint8 *buf = g_malloc(size ?: 1);
        g_autoptr(GError) error = NULL;

        g_assert_cmpint(pread(fd, buf, (size_t) size, 0), ==, size);
        s->counters = g_array_new(FALSE, FALSE, sizeof(int64_t));
        s->meta_ts = g_array_new(FALSE, FALSE, sizeof(uint64_t));
        g_assert_true(tb_trace_foreach_packet(buf, (gsize) size, collect, s, NULL, &error));
        g_assert_no_error(error);
}

static void seen_clear(Seen *s) {
        g_array_unref(s->counters);
        g_array_unref(s->meta_ts);
}

/* A ring that keeps about 20 counters: the snapshot holds the 20 it had, in order, even
 * after the live ring dropped them all for newer ones. */
static void test_shared_ring(void) {
        int live_fd = memfd_create("live", MFD_CLOEXEC), snap_fd = memfd_create("snap", MFD_CLOEXEC);
        TraceWriter live, snap;
        uint64_t events = 0;
        Seen s = { 0 }, l = { 0 };
        size_t one;

        g_assert_cmpint(live_fd, >=, 0);
        g_assert_cmpint(snap_fd, >=, 0);
        trace_writer_init(&live, live_fd, TRACE_WRITER_RING, 1, 0);
        append_marker_meta(&live, TRACE_SEQUENCE_SERVICE, 1);
        append_counter(&live, 0);       /* the sequence's first packet: metadata */
        append_counter(&live, 1);
        one = live.data_len;
        live.buffers[0].capacity = 20 * one;
        for (int64_t v = 2; v < 100; v++)
                append_counter(&live, v);

        trace_writer_snapshot_init(&snap);
        append_marker_meta(&snap, TRACE_SEQUENCE_SERVICE, 5);   /* the snapshot's header */
        g_assert_cmpint(trace_writer_snapshot_copy(&snap, &live, &events), ==, 0);
        g_assert_cmpint(trace_writer_snapshot_copy(&snap, &live, NULL), ==, -EALREADY);
        append_marker_meta(&snap, TRACE_SEQUENCE_SERVICE, 9);   /* its trailer */
        /* The live ring goes on: every packet the snapshot shares is dropped from it. */
        for (int64_t v = 100; v < 200; v++)
                append_counter(&live, v);
        g_assert_cmpint(trace_writer_snapshot_write(&snap, snap_fd, TRACE_OUTPUT_FILE, UINT64_MAX, NULL, 0), ==, 0);
        g_assert_cmpuint(snap.stats.bytes_written, ==, (uint64_t) lseek(snap_fd, 0, SEEK_END));
        trace_writer_done(&snap);
        g_assert_cmpint(trace_writer_flush(&live), ==, 0);

        read_file(snap_fd, &s);
        /* Header first, then the live metadata (its first packets), trailer last. */
        g_assert_cmpuint(s.meta_ts->len, ==, 3);
        g_assert_cmpuint(g_array_index(s.meta_ts, uint64_t, 0), ==, 5);
        g_assert_cmpuint(g_array_index(s.meta_ts, uint64_t, 2), ==, 9);
        /* Counter 0 (in the metadata), then the ring's last 20 before the snapshot. */
        g_assert_cmpuint(s.counters->len, ==, 21);
        g_assert_cmpint(g_array_index(s.counters, int64_t, 0), ==, 0);
        for (guint i = 1; i < s.counters->len; i++)
                g_assert_cmpint(g_array_index(s.counters, int64_t, i), ==, 79 + (int64_t) i);
        /* The live trace: its own newest, in order up to the last, untouched by the snapshot
         * (larger values are longer packets: fewer of them fit). */
        read_file(live_fd, &l);
        g_assert_cmpuint(l.counters->len, >, 10);
        for (guint i = 1; i < l.counters->len; i++)
                g_assert_cmpint(g_array_index(l.counters, int64_t, i), ==, 200 - (int64_t) l.counters->len + i);
        seen_clear(&s);
        seen_clear(&l);
        trace_writer_done(&live);
        close(live_fd);
        close(snap_fd);
}

/* Within a size limit the snapshot ends at a packet boundary with -EFBIG; a snapshot never
 * written frees what it shares with trace_writer_done(). */
static void test_limits_and_release(void) {
        int fd = memfd_create("snap", MFD_CLOEXEC);
        TraceWriter live, snap, unused;

        trace_writer_init(&live, -1, TRACE_WRITER_RING, 1 << 20, 0);
        for (int64_t v = 0; v < 50; v++)
                append_counter(&live, v);
        trace_writer_snapshot_init(&snap);
        g_assert_cmpint(trace_writer_snapshot_copy(&snap, &live, NULL), ==, 0);
        g_assert_cmpint(trace_writer_snapshot_write(&snap, fd, TRACE_OUTPUT_FILE, UINT64_MAX, NULL, 100), ==, -EFBIG);
        g_assert_cmpuint(snap.stats.bytes_written, <=, 100);
        g_assert_cmpuint(snap.stats.bytes_written, >, 0);
        trace_writer_snapshot_init(&unused);
        g_assert_cmpint(trace_writer_snapshot_copy(&unused, &live, NULL), ==, 0);
        trace_writer_done(&unused);
        trace_writer_done(&snap);
        trace_writer_done(&live);
        close(fd);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/trace-snapshot/shared-ring", test_shared_ring);
        g_test_add_func("/trace-snapshot/limits-and-release", test_limits_and_release);
        return g_test_run();
}
