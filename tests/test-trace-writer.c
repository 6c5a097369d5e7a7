/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The trace writer: framing, sequence flags, the file-size limit, the shared budget and
 * the write deadline, checked by reading the bytes back with libtracebus's trace reader
 * and protobuf-c's own decoder. */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "trace-file.h"
#include "trace-reader.h"
#include "trace-writer.h"

typedef struct {
        int fd;
        TraceWriter w;
} Fixture;

static void fixture_setup(Fixture *f, gconstpointer data) {
        f->fd = memfd_create("trace", MFD_CLOEXEC);
        g_assert_cmpint(f->fd, >=, 0);
        trace_writer_init(&f->w, f->fd, TRACE_WRITER_STREAM, 0, GPOINTER_TO_UINT(data));
}

static void fixture_teardown(Fixture *f, gconstpointer data) {
        trace_writer_done(&f->w);
        close(f->fd);
}

static GBytes *read_back(int fd) {
        off_t size = lseek(fd, 0, SEEK_END);
        guint8 *buf = g_malloc(size ?: 1);

        g_assert_cmpint(pread(fd, buf, size, 0), ==, size);
        return g_bytes_new_take(buf, size);
}

static void free_packet(gpointer p) {
        tracebus__trace_packet__free_unpacked(p, NULL);
}

/* Splits a Trace into its packets, asserting the framing is exact. */
static GPtrArray *decode_packets(GBytes *bytes) {
        GPtrArray *packets = g_ptr_array_new_with_free_func((GDestroyNotify) free_packet);
        gsize len;
        const guint8 *data = g_bytes_get_data(bytes, &len);
        TraceReader r;
        TraceRawPacket k;
        int q;

        /* The packets as written: compressed_packets are the writer's to check, not inflated here. */
        trace_reader_init(&r, data, len, TRACE_READER_KEEP_COMPRESSED);
        while ((q = trace_reader_next(&r, &k)) > 0) {
                Tracebus__TracePacket *p = NULL;

                g_assert_cmpint(trace_packet_unpack(&k, &p), ==, 0);
                g_ptr_array_add(packets, p);
        }
        g_assert_cmpint(q, ==, 0);
        trace_reader_done(&r);
        return packets;
}

static void test_varint(void) {
        guint8 out[10];

        g_assert_cmpuint(varint_encode(0, out), ==, 1);
        g_assert_cmpuint(out[0], ==, 0);
        g_assert_cmpuint(varint_encode(300, out), ==, 2);
        g_assert_cmpuint(out[0], ==, 0xac);
        g_assert_cmpuint(out[1], ==, 0x02);
        g_assert_cmpuint(varint_encode(UINT64_MAX, out), ==, 10);
        g_assert_cmpuint(out[9], ==, 0x01);
}

static void append_system_info(TraceWriter *w, uint32_t seq) {
        Tracebus__TracePacket p = TRACEBUS__TRACE_PACKET__INIT;
        Tracebus__SystemInfo info = TRACEBUS__SYSTEM_INFO__INIT;

        info.has_num_cpus = true;
        info.num_cpus = 2;
        p.system_info = &info;
        g_assert_cmpint(trace_writer_append_meta(w, &p, seq), ==, 0);
}

static void append_bundle(TraceWriter *w, uint32_t cpu) {
        Tracebus__FtraceEventBundle b = TRACEBUS__FTRACE_EVENT_BUNDLE__INIT;
        guint8 buf[64];

        b.has_cpu = true;
        b.cpu = cpu;
        b.has_previous_bundle_end_timestamp = true;
        b.previous_bundle_end_timestamp = 123456789;
        g_assert_cmpuint(tracebus__ftrace_event_bundle__get_packed_size(&b), <=, sizeof(buf));
        size_t len = tracebus__ftrace_event_bundle__pack(&b, buf);
        g_assert_cmpint(trace_writer_append_ftrace_bundle(w, buf, len, 3), ==, 0);
}

static void test_sequences(Fixture *f, gconstpointer data) {
        g_autoptr(GBytes) bytes = NULL;
        g_autoptr(GPtrArray) packets = NULL;
        Tracebus__TracePacket *p;

        /* A bundle cannot open its sequence: the first packet there is metadata. */
        g_assert_cmpint(trace_writer_append_ftrace_bundle(&f->w, (const guint8 *) "", 0, 0), ==, -EINVAL);

        append_system_info(&f->w, TRACE_SEQUENCE_SERVICE);
        append_system_info(&f->w, TRACE_SEQUENCE_SERVICE);
        append_system_info(&f->w, TRACE_SEQUENCE_FTRACE);
        append_bundle(&f->w, 0);
        append_bundle(&f->w, 1);
        g_assert_cmpint(trace_writer_flush(&f->w), ==, 0);
        g_assert_cmpuint(trace_writer_pending(&f->w), ==, 0);

        bytes = read_back(f->fd);
        g_assert_cmpuint(f->w.stats.bytes_written, ==, g_bytes_get_size(bytes));
        packets = decode_packets(bytes);
        g_assert_cmpuint(packets->len, ==, 5);

        /* Every packet has a sequence; only the first of each sequence says it is first. */
        p = packets->pdata[0];
        g_assert_true(p->has_trusted_packet_sequence_id);
        g_assert_cmpuint(p->trusted_packet_sequence_id, ==, TRACE_SEQUENCE_SERVICE);
        g_assert_true(p->has_first_packet_on_sequence && p->first_packet_on_sequence);
        g_assert_cmpuint(p->sequence_flags, ==, 1);
        g_assert_cmpuint(p->system_info->num_cpus, ==, 2);
        p = packets->pdata[1];
        g_assert_false(p->has_first_packet_on_sequence);
        g_assert_false(p->has_sequence_flags);

        p = packets->pdata[2];
        g_assert_cmpuint(p->trusted_packet_sequence_id, ==, TRACE_SEQUENCE_FTRACE);
        g_assert_true(p->first_packet_on_sequence);
        g_assert_cmpuint(p->sequence_flags, ==, 1);
        p = packets->pdata[3];
        g_assert_cmpuint(p->trusted_packet_sequence_id, ==, TRACE_SEQUENCE_FTRACE);
        g_assert_false(p->has_first_packet_on_sequence);
        g_assert_nonnull(p->ftrace_events);
        g_assert_cmpuint(p->ftrace_events->cpu, ==, 0);
        g_assert_cmpuint(p->ftrace_events->previous_bundle_end_timestamp, ==, 123456789);
        p = packets->pdata[4];
        g_assert_cmpuint(p->trusted_packet_sequence_id, ==, TRACE_SEQUENCE_FTRACE);
        g_assert_false(p->has_first_packet_on_sequence);
        g_assert_cmpuint(p->ftrace_events->cpu, ==, 1);
}

/* max_file_size_bytes: the file stops at the last whole packet that fits. */
static void test_size_limit(Fixture *f, gconstpointer data) {
        g_autoptr(GBytes) bytes = NULL;
        g_autoptr(GPtrArray) packets = NULL;
        int r = 0;

        append_system_info(&f->w, TRACE_SEQUENCE_FTRACE);
        for (unsigned i = 0; i < 100 && r == 0; i++) {
                append_bundle(&f->w, i % 2);
                r = trace_writer_flush(&f->w);
        }
        g_assert_cmpint(r, ==, -EFBIG);
        g_assert_cmpint(trace_writer_flush(&f->w), ==, -EFBIG);

        bytes = read_back(f->fd);
        g_assert_cmpuint(g_bytes_get_size(bytes), <=, GPOINTER_TO_UINT(data));
        g_assert_cmpuint(g_bytes_get_size(bytes), >, GPOINTER_TO_UINT(data) - 32);
        packets = decode_packets(bytes);
        g_assert_cmpuint(packets->len, >, 2);
        for (guint i = 1; i < packets->len; i++)
                g_assert_nonnull(((Tracebus__TracePacket *) packets->pdata[i])->ftrace_events);
}

/* A ring that wrapped many times keeps its metadata and the newest data, and counts
 * what it overwrote; DISCARD keeps the oldest and counts what it refused. */
static void check_ring(TraceWriterMode mode) {
        g_autoptr(GBytes) bytes = NULL;
        g_autoptr(GPtrArray) packets = NULL;
        TraceWriter w;
        guint first_cpu, last_cpu, bundles = 0;
        int fd = memfd_create("ring", MFD_CLOEXEC);

        trace_writer_init(&w, fd, mode, 200, 0);
        append_system_info(&w, TRACE_SEQUENCE_SERVICE);
        append_system_info(&w, TRACE_SEQUENCE_FTRACE);
        for (unsigned i = 0; i < 1000; i++)
                append_bundle(&w, i);   /* the cpu field numbers them */
        append_system_info(&w, TRACE_SEQUENCE_SERVICE);
        g_assert_cmpuint(trace_writer_pending(&w), <=, 200 + 3 * 32);
        g_assert_cmpint(trace_writer_flush(&w), ==, 0);

        bytes = read_back(fd);
        packets = decode_packets(bytes);
        /* The metadata first, every packet of it. */
        g_assert_nonnull(((Tracebus__TracePacket *) packets->pdata[0])->system_info);
        g_assert_true(((Tracebus__TracePacket *) packets->pdata[0])->first_packet_on_sequence);
        g_assert_nonnull(((Tracebus__TracePacket *) packets->pdata[1])->system_info);
        g_assert_nonnull(((Tracebus__TracePacket *) packets->pdata[2])->system_info);
        first_cpu = ((Tracebus__TracePacket *) packets->pdata[3])->ftrace_events->cpu;
        for (guint i = 3; i < packets->len; i++) {
                Tracebus__TracePacket *p = packets->pdata[i];
                g_assert_nonnull(p->ftrace_events);
                g_assert_cmpuint(p->ftrace_events->cpu, ==, first_cpu + bundles);
                bundles++;
        }
        last_cpu = first_cpu + bundles - 1;
        g_assert_cmpuint(bundles, >, 5);
        if (mode == TRACE_WRITER_RING) {
                g_assert_cmpuint(last_cpu, ==, 999);
                g_assert_cmpuint(w.stats.packets_overwritten, ==, 1000 - bundles);
                g_assert_cmpuint(w.stats.events_overwritten, ==, 3 * (1000 - bundles));
                g_assert_cmpuint(w.stats.packets_discarded, ==, 0);
        } else {
                g_assert_cmpuint(first_cpu, ==, 0);
                g_assert_cmpuint(w.stats.packets_discarded, ==, 1000 - bundles);
                g_assert_cmpuint(w.stats.events_discarded, ==, 3 * (1000 - bundles));
                g_assert_cmpuint(w.stats.packets_overwritten, ==, 0);
        }
        trace_writer_done(&w);
        close(fd);
}

static void test_ring(void) {
        check_ring(TRACE_WRITER_RING);
}

static void test_discard(void) {
        check_ring(TRACE_WRITER_DISCARD);
}

/* A failing output (a pipe whose reader went away) reports the error, and nothing is lost
 * from the buffer's accounting. */
static void test_write_error(void) {
        TraceWriter w;
        int p[2];

        g_assert_cmpint(pipe(p), ==, 0);
        close(p[0]);
        signal(SIGPIPE, SIG_IGN);
        trace_writer_init(&w, p[1], TRACE_WRITER_STREAM, 0, 0);
        append_system_info(&w, TRACE_SEQUENCE_FTRACE);
        append_bundle(&w, 0);
        g_assert_cmpint(trace_writer_flush(&w), ==, -EPIPE);
        g_assert_cmpuint(w.stats.bytes_written, ==, 0);
        trace_writer_done(&w);
        close(p[1]);
}

/* A write the kernel cuts short (here RLIMIT_FSIZE, as ENOSPC would on a full disk) does
 * not leave the start of a packet at the end of a file: the file is cut back to the last
 * whole packet, the count of bytes written says so, and a later write follows it. */
static void test_partial_write(void) {
        g_autoptr(GBytes) bytes = NULL;
        g_autoptr(GPtrArray) packets = NULL;
        struct rlimit old, lim;
        TraceWriter w;
        size_t first;
        int fd = memfd_create("partial", MFD_CLOEXEC);

        g_assert_cmpint(fd, >=, 0);
        trace_writer_init(&w, fd, TRACE_WRITER_STREAM, 0, 0);
        append_system_info(&w, TRACE_SEQUENCE_FTRACE);
        g_assert_cmpint(trace_writer_flush(&w), ==, 0);
        first = (size_t) w.stats.bytes_written;
        for (unsigned i = 0; i < 8; i++)
                append_bundle(&w, i);
        /* The limit falls inside the fourth bundle of this flush. */
        signal(SIGXFSZ, SIG_IGN);
        g_assert_cmpint(getrlimit(RLIMIT_FSIZE, &old), ==, 0);
        lim = (struct rlimit) { .rlim_cur = first + trace_writer_pending(&w) / 2 + 3, .rlim_max = old.rlim_max };
        g_assert_cmpint(setrlimit(RLIMIT_FSIZE, &lim), ==, 0);
        g_assert_cmpint(trace_writer_flush(&w), ==, -EFBIG);
        g_assert_cmpint(setrlimit(RLIMIT_FSIZE, &old), ==, 0);

        bytes = read_back(fd);
        g_assert_cmpuint(w.stats.bytes_written, ==, g_bytes_get_size(bytes));
        g_assert_cmpuint(g_bytes_get_size(bytes), <, lim.rlim_cur);
        packets = decode_packets(bytes);
        g_assert_cmpuint(packets->len, ==, 1 + 4);
        /* Written on: the next packet follows the last whole one. */
        append_bundle(&w, 42);
        g_assert_cmpint(trace_writer_flush(&w), ==, 0);
        g_clear_pointer(&bytes, g_bytes_unref);
        g_clear_pointer(&packets, g_ptr_array_unref);
        bytes = read_back(fd);
        packets = decode_packets(bytes);
        g_assert_cmpuint(packets->len, ==, 1 + 4 + 1);
        g_assert_cmpuint(((Tracebus__TracePacket *) packets->pdata[5])->ftrace_events->cpu, ==, 42);
        trace_writer_done(&w);
        close(fd);
}

/* A long trace flushes once per period: each flush writes that period's metadata, then
 * its data in order, and the data's memory is reused by the next period, not given back
 * and faulted in again. */
static void test_stream_periods(Fixture *f, gconstpointer data) {
        g_autoptr(GBytes) bytes = NULL;
        g_autoptr(GPtrArray) packets = NULL;
        size_t allocated = 0;

        append_system_info(&f->w, TRACE_SEQUENCE_FTRACE);
        for (uint32_t period = 0; period < 4; period++) {
                for (uint32_t i = 0; i < 100; i++)
                        append_bundle(&f->w, period * 100 + i);
                append_system_info(&f->w, TRACE_SEQUENCE_SERVICE + period % 2);
                g_assert_cmpuint(trace_writer_pending(&f->w), >, 100 * 10);
                g_assert_cmpint(trace_writer_flush(&f->w), ==, 0);
                g_assert_cmpuint(trace_writer_pending(&f->w), ==, 0);
                if (period == 1)
                        allocated = f->w.buffers[0].stream_allocated;
                if (period > 1)
                        g_assert_cmpuint(f->w.buffers[0].stream_allocated, ==, allocated);
        }
        g_assert_cmpuint(allocated, >, 0);

        bytes = read_back(f->fd);
        g_assert_cmpuint(f->w.stats.bytes_written, ==, g_bytes_get_size(bytes));
        packets = decode_packets(bytes);
        g_assert_cmpuint(packets->len, ==, 1 + 4 * 101);
        for (uint32_t period = 0; period < 4; period++) {
                /* The first flush opens with the FTRACE sequence's metadata packet too. */
                size_t base = 2 + period * 101;

                g_assert_nonnull(((Tracebus__TracePacket *) packets->pdata[base - 1])->system_info);
                for (uint32_t i = 0; i < 100; i++) {
                        Tracebus__TracePacket *p = packets->pdata[base + i];

                        g_assert_nonnull(p->ftrace_events);
                        g_assert_cmpuint(p->ftrace_events->cpu, ==, period * 100 + i);
                }
        }
}

/* A bundle of 500 compact switches, its columns of few values: what compression is for. */
static gsize make_compact_bundle(guint8 *buf, gsize size, guint32 cpu) {
        Tracebus__FtraceEventBundle b = TRACEBUS__FTRACE_EVENT_BUNDLE__INIT;
        Tracebus__FtraceEventBundle__CompactSched c = TRACEBUS__FTRACE_EVENT_BUNDLE__COMPACT_SCHED__INIT;
        uint64_t ts[500];
        int64_t state[500];
        int32_t pid[500], prio[500];
        uint32_t comm[500];
        char *names[] = { (char *) "swapper/0", (char *) "storm" };

        for (guint i = 0; i < 500; i++) {
                ts[i] = 1000 + 37 * i + (i * 7919) % 300;
                state[i] = i % 2;
                pid[i] = i % 2 ? 0 : 4242;
                prio[i] = 120;
                comm[i] = i % 2 ? 0 : 1;
        }
        c.n_switch_timestamp = c.n_switch_prev_state = c.n_switch_next_pid = c.n_switch_next_prio =
                c.n_switch_next_comm_index = 500;
        c.switch_timestamp = ts;
        c.switch_prev_state = state;
        c.switch_next_pid = pid;
        c.switch_next_prio = prio;
        c.switch_next_comm_index = comm;
        c.n_intern_table = 2;
        c.intern_table = names;
        b.has_cpu = true;
        b.cpu = cpu;
        b.compact_sched = &c;
        g_assert_cmpuint(tracebus__ftrace_event_bundle__get_packed_size(&b), <=, size);
        return tracebus__ftrace_event_bundle__pack(&b, buf);
}

/* Deflated, a bundle's packet inflates to the very bytes the plain writer writes: the
 * same framing, sequence id and bundle, whichever spans are coded. */
static void test_deflated(void) {
        static const DeflateSpan spans[] = { { 0, 0 }, { 3, 900 }, { 900, 1200 }, { 1500, 1700 } };
        g_autoptr(GBytes) plain = NULL, packed = NULL;
        g_autoptr(GPtrArray) packets = NULL;
        g_autoptr(GByteArray) inflated = g_byte_array_new();
        TraceWriter wp, wd;
        int fp = memfd_create("plain", MFD_CLOEXEC), fd = memfd_create("deflated", MFD_CLOEXEC);
        guint8 buf[8192];
        gsize meta_len, plain_len, deflated_len = 0;

        trace_writer_init(&wp, fp, TRACE_WRITER_STREAM, 0, 0);
        trace_writer_init(&wd, fd, TRACE_WRITER_STREAM, 0, 0);
        g_assert_cmpint(trace_writer_append_ftrace_bundle_deflated(&wd, buf, 0, NULL, 0, 0), ==, -EINVAL);
        append_system_info(&wp, TRACE_SEQUENCE_FTRACE);
        append_system_info(&wd, TRACE_SEQUENCE_FTRACE);
        meta_len = trace_writer_pending(&wp);
        for (guint cpu = 0; cpu < 4; cpu++) {
                gsize len = make_compact_bundle(buf, sizeof(buf), cpu);

                g_assert_cmpuint(len, >, 1700);
                g_assert_cmpint(trace_writer_append_ftrace_bundle(&wp, buf, len, 500), ==, 0);
                g_assert_cmpint(trace_writer_append_ftrace_bundle_deflated(&wd, buf, len, spans, cpu, 500), ==, 0);
        }
        g_assert_cmpint(trace_writer_flush(&wp), ==, 0);
        g_assert_cmpint(trace_writer_flush(&wd), ==, 0);
        plain = read_back(fp);
        packed = read_back(fd);
        plain_len = g_bytes_get_size(plain);

        packets = decode_packets(packed);
        g_assert_cmpuint(packets->len, ==, 5);
        g_assert_nonnull(((Tracebus__TracePacket *) packets->pdata[0])->system_info);
        for (guint i = 1; i < packets->len; i++) {
                Tracebus__TracePacket *p = packets->pdata[i];
                g_autoptr(GBytes) inner = NULL;

                /* As Perfetto writes them: compressed_packets alone. */
                g_assert_true(p->has_compressed_packets);
                g_assert_false(p->has_trusted_packet_sequence_id);
                g_assert_null(p->ftrace_events);
                inner = tb_zlib_inflate_or_fail(p->compressed_packets.data, p->compressed_packets.len);
                g_byte_array_append(inflated, g_bytes_get_data(inner, NULL), (guint) g_bytes_get_size(inner));
                deflated_len += p->compressed_packets.len;
        }
        g_assert_cmpmem(inflated->data, inflated->len, (const guint8 *) g_bytes_get_data(plain, NULL) + meta_len,
                        plain_len - meta_len);
        /* Spans that are not columns gain little, but never cost more than storing. */
        g_assert_cmpuint(deflated_len, <=, plain_len - meta_len + 4 * deflate_bound(0, 9));

        trace_writer_done(&wp);
        trace_writer_done(&wd);
        close(fp);
        close(fd);
}

/* A ring of deflated bundles drops them whole, counting their events. */
static void test_deflated_ring(void) {
        static const DeflateSpan all = { 0, 0 };
        TraceWriter w;
        int fd = memfd_create("ring", MFD_CLOEXEC);
        guint8 buf[8192];
        gsize len = make_compact_bundle(buf, sizeof(buf), 0);
        DeflateSpan span = all;

        span.end = len;
        trace_writer_init(&w, fd, TRACE_WRITER_RING, 4096, 0);
        append_system_info(&w, TRACE_SEQUENCE_FTRACE);
        for (guint i = 0; i < 100; i++)
                g_assert_cmpint(trace_writer_append_ftrace_bundle_deflated(&w, buf, len, &span, 1, 500), ==, 0);
        g_assert_cmpuint(w.stats.packets_overwritten, >, 50);
        g_assert_cmpuint(w.stats.events_overwritten, ==, 500 * w.stats.packets_overwritten);
        g_assert_cmpuint(trace_writer_pending(&w), <=, 4096 + 200);
        trace_writer_done(&w);
        close(fd);
}

/* ---- the limits that guard the service: a byte budget shared by writers (a UID's
 * quota), and the write deadline of pipe and socket outputs ---- */

/* A bundle of @len bytes (an opaque field the reader skips). */
static void append_sized_bundle(TraceWriter *w, size_t len) {
        g_autofree guint8 *buf = g_malloc0(len);

        /* Field 15 (unknown), length-delimited, filling the rest. */
        buf[0] = (15 << 3) | 2;
        buf[1] = 0x80 | ((len - 3) & 0x7f);
        buf[2] = (guint8) ((len - 3) >> 7);
        g_assert_cmpint(trace_writer_append_ftrace_bundle(w, buf, len, 1), ==, 0);
}

/* Two writers on one budget, as two sessions of one UID: together they never pass it,
 * each output ends with a whole packet, and what they wrote is what the budget used. */
static void test_shared_budget(void) {
        TraceBudget budget = { .limit = 20000 };
        TraceWriter w[2];
        int fds[2], r[2] = { 0, 0 };
        uint64_t total = 0;

        for (int i = 0; i < 2; i++) {
                fds[i] = memfd_create("trace", MFD_CLOEXEC);
                g_assert_cmpint(fds[i], >=, 0);
                trace_writer_init(&w[i], fds[i], TRACE_WRITER_STREAM, 0, 0);
                trace_writer_set_budget(&w[i], &budget);
                append_system_info(&w[i], TRACE_SEQUENCE_FTRACE);
        }
        for (unsigned round = 0; round < 100 && (r[0] == 0 || r[1] == 0); round++)
                for (int i = 0; i < 2; i++) {
                        append_sized_bundle(&w[i], 700 + 100 * i);
                        if (r[i] == 0)
                                r[i] = trace_writer_flush(&w[i]);
                }
        for (int i = 0; i < 2; i++) {
                g_autoptr(GBytes) bytes = read_back(fds[i]);
                g_autoptr(GPtrArray) packets = decode_packets(bytes);

                g_assert_cmpint(r[i], ==, -EDQUOT);
                g_assert_cmpint(trace_writer_flush(&w[i]), ==, -EDQUOT);
                g_assert_cmpuint(packets->len, >, 3);
                g_assert_cmpuint(g_bytes_get_size(bytes), ==, w[i].stats.bytes_written);
                total += g_bytes_get_size(bytes);
                trace_writer_done(&w[i]);
                close(fds[i]);
        }
        g_assert_cmpuint(total, <=, budget.limit);
        /* Less than one packet of each writer is left unused. */
        g_assert_cmpuint(total, >, budget.limit - 2 * 1000);
        g_assert_cmpuint(atomic_load(&budget.used), ==, total);
}

static gint64 flush_until_stuck(TraceWriter *w, int *ret) {
        gint64 start = g_get_monotonic_time();

        append_system_info(w, TRACE_SEQUENCE_FTRACE);
        /* More than any pipe or socket buffer holds. */
        for (unsigned i = 0; i < 64; i++)
                append_sized_bundle(w, 16 * 1024);
        *ret = trace_writer_flush(w);
        return g_get_monotonic_time() - start;
}

/* A pipe and a socket that nobody reads: the flush gives up after the deadline with
 * -ETIMEDOUT, not never; measured against the configured deadline, not a clock. */
static void check_stalled(int fd, TraceWriterOutput output) {
        const uint64_t timeout_usec = 300 * 1000;
        TraceWriter w;
        gint64 elapsed;
        int r;

        trace_writer_init(&w, fd, TRACE_WRITER_STREAM, 0, 0);
        trace_writer_set_output(&w, output, timeout_usec);
        elapsed = flush_until_stuck(&w, &r);
        g_assert_cmpint(r, ==, -ETIMEDOUT);
        g_assert_cmpint(elapsed, >=, (gint64) timeout_usec);
        g_assert_cmpint(elapsed, <, 3 * (gint64) timeout_usec);
        g_assert_cmpuint(w.stats.bytes_written, >, 0);
        trace_writer_done(&w);
}

static void test_stalled_pipe(void) {
        int p[2];

        g_assert_cmpint(pipe2(p, O_CLOEXEC | O_NONBLOCK), ==, 0);
        check_stalled(p[1], TRACE_OUTPUT_PIPE);
        close(p[0]);
        close(p[1]);
}

static void test_stalled_socket(void) {
        int s[2];

        g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s), ==, 0);
        check_stalled(s[0], TRACE_OUTPUT_SOCKET);
        close(s[0]);
        close(s[1]);
}

/* A socket whose reader went away: EPIPE, and no SIGPIPE (which would end this test). */
static void test_socket_reader_gone(void) {
        TraceWriter w;
        int s[2], r;

        g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s), ==, 0);
        close(s[1]);
        trace_writer_init(&w, s[0], TRACE_WRITER_STREAM, 0, 0);
        trace_writer_set_output(&w, TRACE_OUTPUT_SOCKET, 1000 * 1000);
        (void) flush_until_stuck(&w, &r);
        g_assert_cmpint(r, ==, -EPIPE);
        trace_writer_done(&w);
        close(s[0]);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/trace-writer/varint", test_varint);
        g_test_add("/trace-writer/sequences", Fixture, GUINT_TO_POINTER(0), fixture_setup, test_sequences, fixture_teardown);
        g_test_add("/trace-writer/stream-periods", Fixture, GUINT_TO_POINTER(0), fixture_setup, test_stream_periods, fixture_teardown);
        g_test_add("/trace-writer/size-limit", Fixture, GUINT_TO_POINTER(400), fixture_setup, test_size_limit, fixture_teardown);
        g_test_add_func("/trace-writer/write-error", test_write_error);
        g_test_add_func("/trace-writer/partial-write", test_partial_write);
        g_test_add_func("/trace-writer/ring", test_ring);
        g_test_add_func("/trace-writer/discard", test_discard);
        g_test_add_func("/trace-writer/deflated", test_deflated);
        g_test_add_func("/trace-writer/deflated-ring", test_deflated_ring);
        g_test_add_func("/trace-writer/shared-budget", test_shared_budget);
        g_test_add_func("/trace-writer/stalled-pipe", test_stalled_pipe);
        g_test_add_func("/trace-writer/stalled-socket", test_stalled_socket);
        g_test_add_func("/trace-writer/socket-reader-gone", test_socket_reader_gone);
        return g_test_run();
}
