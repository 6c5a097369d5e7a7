/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The trace writer's limits that guard the service: a byte budget shared by writers
 * (a UID's quota), which ends each output at a packet boundary, and the write deadline
 * of pipe and socket outputs, which a reader that stopped reading cannot outlast. */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "trace-file.h"
#include "trace-reader.h"
#include "trace-writer.h"

static GBytes *read_back(int fd) {
        off_t size = lseek(fd, 0, SEEK_END);
        guint8 *buf = g_malloc(size ?: 1);

        g_assert_cmpint(pread(fd, buf, size, 0), ==, size);
        return g_bytes_new_take(buf, size);
}

/* The number of packets in @bytes, asserting each is whole and decodes. */
static unsigned count_whole_packets(GBytes *bytes) {
        gsize len;
        const guint8 *data = g_bytes_get_data(bytes, &len);
        TraceRawPacket k;
        TraceReader r;
        unsigned n = 0;
        int q;

        trace_reader_init(&r, data, len, TRACE_READER_KEEP_COMPRESSED);
        while ((q = trace_reader_next(&r, &k)) > 0) {
                Tracebus__TracePacket *p = NULL;

                g_assert_cmpint(trace_packet_unpack(&k, &p), ==, 0);
                tracebus__trace_packet__free_unpacked(p, NULL);
                n++;
        }
        g_assert_cmpint(q, ==, 0);
        trace_reader_done(&r);
        return n;
}

/* The FTRACE sequence's opening packet, then room for bundles. */
static void start_ftrace(TraceWriter *w) {
        Tracebus__TracePacket p = TRACEBUS__TRACE_PACKET__INIT;
        Tracebus__SystemInfo info = TRACEBUS__SYSTEM_INFO__INIT;

        p.system_info = &info;
        g_assert_cmpint(trace_writer_append_meta(w, &p, TRACE_SEQUENCE_FTRACE), ==, 0);
}

/* A bundle of @len bytes (an opaque field the reader skips). */
static void append_bundle(TraceWriter *w, size_t len) {
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
                start_ftrace(&w[i]);
        }
        for (unsigned round = 0; round < 100 && (r[0] == 0 || r[1] == 0); round++)
                for (int i = 0; i < 2; i++) {
                        append_bundle(&w[i], 700 + 100 * i);
                        if (r[i] == 0)
                                r[i] = trace_writer_flush(&w[i]);
                }
        for (int i = 0; i < 2; i++) {
                g_autoptr(GBytes) bytes = read_back(fds[i]);

                g_assert_cmpint(r[i], ==, -EDQUOT);
                g_assert_cmpint(trace_writer_flush(&w[i]), ==, -EDQUOT);
                g_assert_cmpuint(count_whole_packets(bytes), >, 3);
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

        start_ftrace(w);
        /* More than any pipe or socket buffer holds. */
        for (unsigned i = 0; i < 64; i++)
                append_bundle(w, 16 * 1024);
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
        g_test_add_func("/trace-writer-limits/shared-budget", test_shared_budget);
        g_test_add_func("/trace-writer-limits/stalled-pipe", test_stalled_pipe);
        g_test_add_func("/trace-writer-limits/stalled-socket", test_stalled_socket);
        g_test_add_func("/trace-writer-limits/socket-reader-gone", test_socket_reader_gone);
        return g_test_run();
}
