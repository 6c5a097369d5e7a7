/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit test of the one trace reader (lib/trace/trace-reader.c) and of the tests'
 * GLib summary over it (tests/trace-file.c): fields and packets as the wire
 * has them, traces the lib's own writer writes (plain and with
 * compressed_packets), and torn, corrupt or garbage input, which must give a
 * negative errno and never a crash.
 */
#include <errno.h>
#include <gio/gio.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include "ftrace-fixture.h"
#include "trace-file.h"
#include "trace-reader.h"
#include "trace-writer.h"
#include "trace.pb-c.h"

static void append_packet(GByteArray *out, const Tracebus__TracePacket *p) {
        size_t n = tracebus__trace_packet__get_packed_size(p);
        g_autofree guint8 *buf = g_malloc(n ? n : 1);
        guint8 hdr[11];
        size_t h = 0;
        guint64 v = n;

        tracebus__trace_packet__pack(p, buf);
        hdr[h++] = 0x0A;
        do {
                hdr[h] = v & 0x7f;
                v >>= 7;
                if (v)
                        hdr[h] |= 0x80;
                h++;
        } while (v);
        g_byte_array_append(out, hdr, (guint) h);
        g_byte_array_append(out, buf, (guint) n);
}

static GByteArray *make_trace(bool flag_first, bool compact) {
        GByteArray *out = g_byte_array_new();
        Tracebus__TracePacket p1 = TRACEBUS__TRACE_PACKET__INIT, p2 = TRACEBUS__TRACE_PACKET__INIT;
        Tracebus__ClockSnapshot cs = TRACEBUS__CLOCK_SNAPSHOT__INIT;
        Tracebus__SystemInfo si = TRACEBUS__SYSTEM_INFO__INIT;
        Tracebus__Utsname un = TRACEBUS__UTSNAME__INIT;
        Tracebus__FtraceEventBundle b = TRACEBUS__FTRACE_EVENT_BUNDLE__INIT;
        Tracebus__FtraceEventBundle__CompactSched c = TRACEBUS__FTRACE_EVENT_BUNDLE__COMPACT_SCHED__INIT;
        Tracebus__FtraceEvent e = TRACEBUS__FTRACE_EVENT__INIT;
        Tracebus__FtraceEvent *events[] = { &e };
        Tracebus__SchedSwitchFtraceEvent sw = TRACEBUS__SCHED_SWITCH_FTRACE_EVENT__INIT;
        char *intern[] = { "busy", "other" };
        int32_t next_pids[] = { 4242, 7 };
        uint32_t comm_idx[] = { 0, 1 };
        uint64_t ts[] = { 10, 20 };

        p1.has_trusted_packet_sequence_id = true;
        p1.trusted_packet_sequence_id = 1;
        p1.has_first_packet_on_sequence = flag_first;
        p1.first_packet_on_sequence = flag_first;
        p1.has_sequence_flags = true;
        p1.sequence_flags = 1;
        cs.has_primary_trace_clock = true;
        cs.primary_trace_clock = TRACEBUS__BUILTIN_CLOCK__BUILTIN_CLOCK_BOOTTIME;
        p1.clock_snapshot = &cs;
        append_packet(out, &p1);

        p1.has_first_packet_on_sequence = false;
        p1.has_sequence_flags = false;
        p1.clock_snapshot = NULL;
        un.sysname = "Linux";
        si.utsname = &un;
        p1.system_info = &si;
        append_packet(out, &p1);

        p2.has_trusted_packet_sequence_id = true;
        p2.trusted_packet_sequence_id = 2;
        p2.has_first_packet_on_sequence = true;
        p2.first_packet_on_sequence = true;
        p2.has_sequence_flags = true;
        p2.sequence_flags = 1;
        b.has_cpu = true;
        if (compact) {
                c.n_intern_table = 2;
                c.intern_table = intern;
                c.n_switch_next_pid = 2;
                c.switch_next_pid = next_pids;
                c.n_switch_next_comm_index = 2;
                c.switch_next_comm_index = comm_idx;
                c.n_switch_timestamp = 2;
                c.switch_timestamp = ts;
                b.compact_sched = &c;
        } else {
                sw.next_comm = "busy";
                sw.has_next_pid = true;
                sw.next_pid = 4242;
                sw.prev_comm = "other";
                sw.has_prev_pid = true;
                sw.prev_pid = 7;
                e.sched_switch = &sw;
                e.has_timestamp = true;
                e.timestamp = 10;
                b.n_event = 1;
                b.event = events;
        }
        p2.ftrace_events = &b;
        append_packet(out, &p2);
        return out;
}

static void test_good(gconstpointer data) {
        bool compact = GPOINTER_TO_INT(data);
        g_autoptr(GByteArray) t = make_trace(true, compact);
        g_auto(TbTraceSummary) s = { 0 };
        g_autoptr(GError) error = NULL;
        g_autofree char *desc = NULL;

        g_assert_true(tb_trace_parse(t->data, t->len, &s, &error));
        g_assert_no_error(error);
        desc = tb_trace_summary_describe(&s);
        g_test_message("%s", desc);
        g_assert_cmpuint(s.n_packets, ==, 3);
        g_assert_cmpuint(s.n_sequences, ==, 2);
        g_assert_true(s.has_clock_snapshot && s.clock_is_boottime);
        g_assert_true(s.has_system_info && s.has_utsname);
        g_assert_false(s.has_tracing_started);
        g_assert_true(s.all_have_sequence_id);
        g_assert_true(s.first_packets_flagged);
        g_assert_cmpuint(s.n_sched_switch + s.n_compact_switch, ==, compact ? 2 : 1);
        g_assert_true(tb_trace_summary_has_switch(&s, 4242, "busy"));
        g_assert_true(tb_trace_summary_has_switch(&s, 4242, NULL));
        g_assert_true(tb_trace_summary_has_switch(&s, 7, "other"));
        g_assert_false(tb_trace_summary_has_switch(&s, 4242, "other"));
        g_assert_false(tb_trace_summary_has_switch(&s, 4243, NULL));
}

static void test_unflagged_first(void) {
        g_autoptr(GByteArray) t = make_trace(false, false);
        g_auto(TbTraceSummary) s = { 0 };

        g_assert_true(tb_trace_parse(t->data, t->len, &s, NULL));
        g_assert_false(s.first_packets_flagged);
        g_assert_nonnull(s.first_problem);
}

static void test_torn(void) {
        g_autoptr(GByteArray) t = make_trace(true, false);

        /* Every strict prefix that cuts into a packet must be rejected. */
        for (guint cut = 1; cut < t->len; cut++) {
                g_auto(TbTraceSummary) s = { 0 };
                g_autoptr(GError) error = NULL;
                bool ok = tb_trace_parse(t->data, cut, &s, &error);
                if (ok) {
                        /* Only a cut exactly at a packet boundary parses. */
                        g_assert_cmpuint(s.n_packets, <, 3);
                        continue;
                }
                g_assert_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA);
        }
}

static void test_garbage(void) {
        const guint8 bad_tag[] = { 0x12, 0x01, 0x00 };
        const guint8 huge_len[] = { 0x0A, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x00 };
        const guint8 bad_packet[] = { 0x0A, 0x02, 0x0A, 0x05 }; /* bundle claims 5 bytes */
        const guint8 *cases[] = { bad_tag, huge_len, bad_packet };
        const gsize lens[] = { sizeof bad_tag, sizeof huge_len, sizeof bad_packet };

        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                g_auto(TbTraceSummary) s = { 0 };
                g_autoptr(GError) error = NULL;
                g_assert_false(tb_trace_parse(cases[i], lens[i], &s, &error));
                g_assert_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA);
        }
        {
                g_auto(TbTraceSummary) s = { 0 };
                g_assert_true(tb_trace_parse((const guint8 *) "", 0, &s, NULL));
                g_assert_cmpuint(s.n_packets, ==, 0);
        }
}

/* ---- the field walker ---- */

static void test_fields(void) {
        const guint8 msg[] = { 0x08, 0xac, 0x02,                                       /* 1: varint 300 */
                               0x11, 1, 2, 3, 4, 5, 6, 7, 8,                            /* 2: fixed64 */
                               0x1a, 0x03, 'a', 'b', 'c',                               /* 3: "abc" */
                               0x25, 0x78, 0x56, 0x34, 0x12 };                          /* 4: fixed32 */
        const guint8 *p = msg, *end = msg + sizeof msg;
        TraceField f;

        g_assert_cmpint(trace_field_next(&p, end, &f), ==, 1);
        g_assert_cmpuint(f.number, ==, 1);
        g_assert_cmpint(f.wire_type, ==, TRACE_WIRE_VARINT);
        g_assert_cmpuint(f.value, ==, 300);
        g_assert_cmpuint(f.framed_len, ==, 3);
        g_assert_cmpint(trace_field_next(&p, end, &f), ==, 1);
        g_assert_cmpint(f.wire_type, ==, TRACE_WIRE_FIXED64);
        g_assert_cmpuint(f.value, ==, 0x0807060504030201ull);
        g_assert_cmpuint(f.framed_len, ==, 9);
        g_assert_cmpint(trace_field_next(&p, end, &f), ==, 1);
        g_assert_cmpint(f.wire_type, ==, TRACE_WIRE_LEN);
        g_assert_cmpmem(f.data, f.len, "abc", 3);
        g_assert_cmpuint(f.framed_len, ==, 5);
        g_assert_cmpint(trace_field_next(&p, end, &f), ==, 1);
        g_assert_cmpuint(f.number, ==, 4);
        g_assert_cmpuint(f.value, ==, 0x12345678);
        g_assert_true(p == end);
        g_assert_cmpint(trace_field_next(&p, end, &f), ==, 0);
}

static void test_bad_fields(void) {
        const guint8 torn_varint[] = { 0x08, 0x80 };
        const guint8 past_end[] = { 0x1a, 0x05, 'a' };
        const guint8 group[] = { 0x1b, 0x00 };
        const guint8 field_zero[] = { 0x00, 0x01 };
        const guint8 torn_fixed[] = { 0x25, 0x01, 0x02 };
        const guint8 long_key[] = { 0x88, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00 };
        const guint8 *cases[] = { torn_varint, past_end, group, field_zero, torn_fixed, long_key };
        const gsize lens[] = { sizeof torn_varint, sizeof past_end, sizeof group, sizeof field_zero,
                               sizeof torn_fixed, sizeof long_key };

        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                const guint8 *p = cases[i];
                TraceField f;

                g_assert_cmpint(trace_field_next(&p, cases[i] + lens[i], &f), ==, -EBADMSG);
                g_assert_true(p == cases[i]);
        }
}

static void test_find_last_wins(void) {
        const guint8 msg[] = { 0x08, 0x01, 0x12, 0x00, 0x08, 0x02 };
        const guint8 torn[] = { 0x08, 0x80 };
        TraceField f;

        g_assert_cmpint(trace_field_find(msg, sizeof msg, 1, TRACE_WIRE_VARINT, &f), ==, 1);
        g_assert_cmpuint(f.value, ==, 2);
        g_assert_cmpint(trace_field_find(msg, sizeof msg, 2, TRACE_WIRE_LEN, &f), ==, 1);
        g_assert_cmpuint(f.len, ==, 0);
        g_assert_cmpint(trace_field_find(msg, sizeof msg, 2, TRACE_WIRE_VARINT, &f), ==, 0);
        g_assert_cmpint(trace_field_find(msg, sizeof msg, 3, TRACE_WIRE_VARINT, &f), ==, 0);
        g_assert_cmpint(trace_field_find(torn, sizeof torn, 1, TRACE_WIRE_VARINT, &f), ==, -EBADMSG);
        g_assert_cmpint(trace_field_find(NULL, 0, 1, TRACE_WIRE_VARINT, &f), ==, 0);
}

/* ---- zlib ---- */

static GBytes *zlib_compress(const guint8 *data, gsize len) {
        uLongf n = compressBound(len);
        guint8 *out = g_malloc(n);

        g_assert_cmpint(compress(out, &n, data, len), ==, Z_OK);
        return g_bytes_new_take(out, n);
}

static void test_zlib(void) {
        g_autofree guint8 *big = g_malloc0(1 << 20);
        g_autoptr(GBytes) z = NULL;
        g_autofree guint8 *extra = NULL;
        const guint8 *zd;
        uint8_t *out = NULL;
        size_t out_len = 0;
        gsize zlen;

        for (gsize i = 0; i < (1 << 20); i += 4099)
                big[i] = (guint8) i;
        z = zlib_compress(big, 1 << 20);
        zd = g_bytes_get_data(z, &zlen);
        /* Far more than the first guess of four times the input: the buffer grows. */
        g_assert_cmpint(trace_zlib_inflate(zd, zlen, &out, &out_len), ==, 0);
        g_assert_cmpmem(out, out_len, big, 1 << 20);
        free(out);
        for (gsize cut = 0; cut < zlen; cut++)
                g_assert_cmpint(trace_zlib_inflate(zd, cut, &out, &out_len), ==, -EBADMSG);
        extra = g_malloc(zlen + 1);
        memcpy(extra, zd, zlen);
        extra[zlen] = 0;
        g_assert_cmpint(trace_zlib_inflate(extra, zlen + 1, &out, &out_len), ==, -EBADMSG);
        extra[0] ^= 0xff;
        g_assert_cmpint(trace_zlib_inflate(extra, zlen, &out, &out_len), ==, -EBADMSG);
}

/* ---- traces the lib's writer writes ---- */

static GBytes *memfd_contents(int fd) {
        off_t size = lseek(fd, 0, SEEK_END);
        guint8 *buf = g_malloc(size ?: 1);

        g_assert_cmpint(pread(fd, buf, size, 0), ==, size);
        return g_bytes_new_take(buf, size);
}

static gsize pack_bundle(guint8 *buf, gsize size, guint32 cpu) {
        Tracebus__FtraceEventBundle b = TRACEBUS__FTRACE_EVENT_BUNDLE__INIT;
        Tracebus__FtraceEventBundle__CompactSched c = TRACEBUS__FTRACE_EVENT_BUNDLE__COMPACT_SCHED__INIT;
        guint64 ts[200];
        gint32 pid[200];

        for (guint i = 0; i < 200; i++) {
                ts[i] = 1000 + i;
                pid[i] = (gint32) (i % 3 ? 4242 : 0);
        }
        c.n_switch_timestamp = c.n_switch_next_pid = 200;
        c.switch_timestamp = ts;
        c.switch_next_pid = pid;
        b.has_cpu = true;
        b.cpu = cpu;
        b.compact_sched = &c;
        g_assert_cmpuint(tracebus__ftrace_event_bundle__get_packed_size(&b), <=, size);
        return tracebus__ftrace_event_bundle__pack(&b, buf);
}

/* System info, then n bundles (compact, 200 switches each), plain or deflated. */
static GBytes *writer_trace(bool deflated, guint n) {
        Tracebus__TracePacket p = TRACEBUS__TRACE_PACKET__INIT;
        Tracebus__SystemInfo info = TRACEBUS__SYSTEM_INFO__INIT;
        int fd = memfd_create("trace", MFD_CLOEXEC);
        GBytes *out;
        TraceWriter w;

        g_assert_cmpint(fd, >=, 0);
        trace_writer_init(&w, fd, TRACE_WRITER_STREAM, 0, 0);
        info.has_num_cpus = true;
        info.num_cpus = n;
        p.system_info = &info;
        g_assert_cmpint(trace_writer_append_meta(&w, &p, TRACE_SEQUENCE_FTRACE), ==, 0);
        for (guint cpu = 0; cpu < n; cpu++) {
                guint8 buf[4096];
                gsize len = pack_bundle(buf, sizeof buf, cpu);
                DeflateSpan all = { 0, len };

                if (deflated)
                        g_assert_cmpint(trace_writer_append_ftrace_bundle_deflated(&w, buf, len, &all, 1, 200), ==, 0);
                else
                        g_assert_cmpint(trace_writer_append_ftrace_bundle(&w, buf, len, 200), ==, 0);
        }
        g_assert_cmpint(trace_writer_flush(&w), ==, 0);
        trace_writer_done(&w);
        out = memfd_contents(fd);
        close(fd);
        return out;
}

/* Reads every packet, checking what each says of itself; returns how many. */
static guint read_all(const guint8 *data, gsize len, TraceReaderFlags flags, guint *ret_n_inflated) {
        TraceReader r;
        TraceRawPacket k;
        gsize expect_offset = 0;
        guint n = 0, n_inflated = 0;
        int q;

        trace_reader_init(&r, data, len, flags);
        while ((q = trace_reader_next(&r, &k)) > 0) {
                Tracebus__TracePacket *p = NULL;

                g_assert_cmpint(trace_packet_unpack(&k, &p), ==, 0);
                if (k.inflated) {
                        g_assert_nonnull(p->ftrace_events);
                        g_assert_cmpuint(p->ftrace_events->compact_sched->n_switch_timestamp, ==, 200);
                        n_inflated++;
                } else {
                        /* Outer packets follow each other, framing included. */
                        g_assert_cmpuint(k.offset, ==, expect_offset);
                        g_assert_true(k.data > data + k.offset && k.data + k.len == data + k.offset + k.framed_len);
                        expect_offset = k.offset + k.framed_len;
                }
                g_assert_cmpuint(k.offset, <, len);
                tracebus__trace_packet__free_unpacked(p, NULL);
                n++;
        }
        g_assert_cmpint(q, ==, 0);
        g_assert_cmpuint(trace_reader_offset(&r), ==, len);
        g_assert_cmpuint(r.n_compressed, ==, (flags & TRACE_READER_KEEP_COMPRESSED) ? 0 : n_inflated);
        trace_reader_done(&r);
        if (ret_n_inflated)
                *ret_n_inflated = n_inflated;
        return n;
}

static void test_writer_trace(void) {
        g_autoptr(GBytes) t = writer_trace(false, 3);
        gsize len;
        const guint8 *d = g_bytes_get_data(t, &len);
        guint n_inflated = 1;

        g_assert_cmpuint(read_all(d, len, 0, &n_inflated), ==, 4);
        g_assert_cmpuint(n_inflated, ==, 0);
        g_assert_cmpuint(read_all(d, 0, 0, NULL), ==, 0);
}

static void test_compressed_trace(void) {
        g_autoptr(GBytes) t = writer_trace(true, 3);
        g_auto(TbTraceSummary) s = { 0 };
        g_autoptr(GError) error = NULL;
        gsize len;
        const guint8 *d = g_bytes_get_data(t, &len);
        guint n_inflated = 0;

        g_assert_cmpuint(read_all(d, len, 0, &n_inflated), ==, 4);
        g_assert_cmpuint(n_inflated, ==, 3);
        g_assert_cmpuint(read_all(d, len, TRACE_READER_KEEP_COMPRESSED, &n_inflated), ==, 4);
        g_assert_cmpuint(n_inflated, ==, 0);
        g_assert_true(tb_trace_parse(d, len, &s, &error));
        g_assert_no_error(error);
        g_assert_cmpuint(s.n_compressed_packets, ==, 3);
        g_assert_cmpuint(s.n_ftrace_bundles, ==, 3);
        g_assert_cmpuint(s.n_compact_switch, ==, 600);
        g_assert_cmpuint(s.n_inflated_bytes, >, 3 * 600);
}

static void append_compressed(GByteArray *out, const guint8 *z, gsize zlen) {
        Tracebus__TracePacket p = TRACEBUS__TRACE_PACKET__INIT;

        p.has_compressed_packets = true;
        p.compressed_packets.data = (guint8 *) z;
        p.compressed_packets.len = zlen;
        append_packet(out, &p);
}

/* Compressed_packets that do not inflate, hold a torn packet or nest: -EPROTO, and
 * the reader goes on after them. */
static void test_compressed_corrupt(void) {
        g_autoptr(GByteArray) inner = make_trace(true, false);
        g_autoptr(GByteArray) nested = g_byte_array_new();
        g_autoptr(GBytes) z_torn = NULL, z_nested = NULL, z_good = NULL;
        const guint8 garbage[] = { 0x78, 0x9c, 0xff, 0xff, 0x00 };
        g_autoptr(GByteArray) t = g_byte_array_new();
        TraceReader r;
        TraceRawPacket k;
        guint n_good = 0;
        int q;

        z_good = zlib_compress(inner->data, inner->len);
        append_compressed(nested, g_bytes_get_data(z_good, NULL), g_bytes_get_size(z_good));
        z_nested = zlib_compress(nested->data, nested->len);
        z_torn = zlib_compress(inner->data, inner->len - 1);
        append_compressed(t, garbage, sizeof garbage);
        append_compressed(t, g_bytes_get_data(z_torn, NULL), g_bytes_get_size(z_torn));
        append_compressed(t, g_bytes_get_data(z_nested, NULL), g_bytes_get_size(z_nested));
        append_compressed(t, g_bytes_get_data(z_good, NULL), g_bytes_get_size(z_good));

        trace_reader_init(&r, t->data, t->len, 0);
        g_assert_cmpint(trace_reader_next(&r, &k), ==, -EPROTO);
        /* The torn one: its two whole packets, then the tear. */
        for (guint i = 0; i < 2; i++) {
                g_assert_cmpint(trace_reader_next(&r, &k), ==, 1);
                g_assert_true(k.inflated);
        }
        g_assert_cmpint(trace_reader_next(&r, &k), ==, -EPROTO);
        g_assert_cmpint(trace_reader_next(&r, &k), ==, -EPROTO);
        while ((q = trace_reader_next(&r, &k)) > 0)
                n_good++;
        g_assert_cmpint(q, ==, 0);
        g_assert_cmpuint(n_good, ==, 3);
        g_assert_cmpuint(r.n_compressed, ==, 4);
        trace_reader_done(&r);
        {
                g_auto(TbTraceSummary) s = { 0 };
                g_autoptr(GError) error = NULL;

                g_assert_false(tb_trace_parse(t->data, t->len, &s, &error));
                g_assert_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA);
        }
}

/* Reads to the end or the first error; the result is the end (0) or an error the reader
 * documents, whatever the bytes. */
static int read_to_error(const guint8 *data, gsize len, bool past_eproto) {
        TraceReader r;
        TraceRawPacket k;
        int q;

        trace_reader_init(&r, data, len, 0);
        do {
                while ((q = trace_reader_next(&r, &k)) > 0) {
                        Tracebus__TracePacket *p = NULL;

                        g_assert_true(k.data >= data || k.inflated);
                        if (trace_packet_unpack(&k, &p) == 0)
                                tracebus__trace_packet__free_unpacked(p, NULL);
                }
        } while (past_eproto && q == -EPROTO);
        g_assert_true(q == 0 || q == -EBADMSG || q == -EPROTO);
        g_assert_cmpuint(trace_reader_offset(&r), <=, len);
        if (q == 0)
                g_assert_cmpuint(trace_reader_offset(&r), ==, len);
        /* A torn trace stays torn. */
        if (q == -EBADMSG)
                g_assert_cmpint(trace_reader_next(&r, &k), ==, -EBADMSG);
        trace_reader_done(&r);
        return q;
}

static void test_truncated(void) {
        for (guint deflated = 0; deflated < 2; deflated++) {
                g_autoptr(GBytes) t = writer_trace(deflated, 3);
                gsize len;
                const guint8 *d = g_bytes_get_data(t, &len);
                guint n_whole = 0;

                /* Each cut is an exact copy, so that ASan sees a read past its end. */
                for (gsize cut = 0; cut < len; cut++) {
                        g_autofree guint8 *copy = g_memdup2(d, cut);

                        if (read_to_error(copy, cut, false) == 0)
                                n_whole++;
                }
                /* Only at the four packet boundaries (the empty trace, then after each packet but the last). */
                g_assert_cmpuint(n_whole, ==, 4);
        }
}

static void test_corrupt(void) {
        g_autoptr(GBytes) t = writer_trace(true, 2);
        gsize len;
        const guint8 *d = g_bytes_get_data(t, &len);
        g_autofree guint8 *copy = g_memdup2(d, len);

        for (gsize i = 0; i < len; i++) {
                const guint8 saved = copy[i];

                copy[i] ^= 0xff;
                (void) read_to_error(copy, len, true);
                copy[i] = 0x80;
                (void) read_to_error(copy, len, true);
                copy[i] = saved;
        }
        for (guint i = 0; i < 2000; i++) {
                guint8 junk[64];
                gsize n = (gsize) g_test_rand_int_range(1, sizeof junk);

                for (gsize j = 0; j < n; j++)
                        junk[j] = (guint8) g_test_rand_int_range(0, 256);
                if (i % 2)
                        junk[0] = 0x0a;  /* often a packet tag, to get past the first check */
                (void) read_to_error(junk, n, true);
        }
}

static void test_file_load(void) {
        g_autofree char *dir = g_dir_make_tmp("trace-reader-XXXXXX", NULL);
        g_autofree char *path = g_build_filename(dir, "trace", NULL);
        g_autofree char *missing = g_build_filename(dir, "missing", NULL);
        g_autoptr(GBytes) t = writer_trace(false, 120);
        uint8_t *data = NULL;
        size_t len = 0;

        g_assert_nonnull(dir);
        g_assert_cmpint(trace_file_load(missing, &data, &len), ==, -ENOENT);
        g_assert_true(g_file_set_contents(path, g_bytes_get_data(t, NULL), (gssize) g_bytes_get_size(t), NULL));
        /* More than the first read's 64 KiB. */
        g_assert_cmpuint(g_bytes_get_size(t), >, 65536);
        g_assert_cmpint(trace_file_load(path, &data, &len), ==, 0);
        g_assert_cmpmem(data, len, g_bytes_get_data(t, NULL), g_bytes_get_size(t));
        g_assert_cmpuint(read_all(data, len, 0, NULL), ==, 121);
        free(data);
        g_assert_true(g_file_set_contents(path, "", 0, NULL));
        g_assert_cmpint(trace_file_load(path, &data, &len), ==, 0);
        g_assert_cmpuint(len, ==, 0);
        free(data);
        g_assert_cmpint(g_unlink(path), ==, 0);
        g_assert_cmpint(g_rmdir(dir), ==, 0);
}

/* ---- the captured kernel pages (tests/fixtures/ftrace) ---- */

/* Writes the fixture's pages, one bundle per CPU (compact or full), plainly or deflated
 * with the parser's own coded spans, as the recorder does. */
static GBytes *fixture_trace(bool compact, bool deflated, GPtrArray *bundles) {
        FtraceParser *parser = parser_new_from_fixtures(NULL);
        Tracebus__TracePacket p = TRACEBUS__TRACE_PACKET__INIT;
        Tracebus__SystemInfo info = TRACEBUS__SYSTEM_INFO__INIT;
        int fd = memfd_create("fixture", MFD_CLOEXEC);
        GBytes *out;
        TraceWriter w;

        trace_writer_init(&w, fd, TRACE_WRITER_STREAM, 0, 0);
        p.system_info = &info;
        g_assert_cmpint(trace_writer_append_meta(&w, &p, TRACE_SEQUENCE_FTRACE), ==, 0);
        for (int cpu = 0; cpu < N_CPUS; cpu++) {
                FtraceBundle *b = NULL;
                const DeflateSpan *spans;
                const uint8_t *buf;
                size_t len, n_spans;

                g_assert_cmpint(ftrace_bundle_new((uint32_t) cpu, compact, &b), ==, 0);
                for (size_t i = 0; i < cpu_n_pages(cpu); i++)
                        g_assert_cmpint(ftrace_parser_parse_page(parser, cpu_page(cpu, i), PAGE_SIZE_4K, b), >=, 0);
                g_assert_cmpint(ftrace_bundle_pack(b, &buf, &len), ==, 0);
                g_ptr_array_add(bundles, g_bytes_new(buf, len));
                n_spans = ftrace_bundle_coded_spans(b, &spans);
                if (deflated)
                        g_assert_cmpint(trace_writer_append_ftrace_bundle_deflated(&w, buf, len, spans, n_spans,
                                                                                    ftrace_bundle_n_events(b)), ==, 0);
                else
                        g_assert_cmpint(trace_writer_append_ftrace_bundle(&w, buf, len, ftrace_bundle_n_events(b)),
                                        ==, 0);
                ftrace_bundle_free(b);
        }
        g_assert_cmpint(trace_writer_flush(&w), ==, 0);
        trace_writer_done(&w);
        ftrace_parser_free(parser);
        out = memfd_contents(fd);
        close(fd);
        return out;
}

/* Every bundle comes back bit for bit, inflated or not, and unpacks. */
static void test_fixture_pages(void) {
        for (guint mode = 0; mode < 4; mode++) {
                bool compact = mode & 1, deflated = mode & 2;
                g_autoptr(GPtrArray) bundles = g_ptr_array_new_with_free_func((GDestroyNotify) g_bytes_unref);
                g_autoptr(GBytes) t = fixture_trace(compact, deflated, bundles);
                gsize len;
                const guint8 *d = g_bytes_get_data(t, &len);
                TraceReader r;
                TraceRawPacket k;
                guint n = 0;
                int q;

                trace_reader_init(&r, d, len, 0);
                while ((q = trace_reader_next(&r, &k)) > 0) {
                        Tracebus__TracePacket *p = NULL;
                        TraceField f;

                        g_assert_cmpint(trace_packet_unpack(&k, &p), ==, 0);
                        if (p->ftrace_events) {
                                g_assert_cmpuint(n, <, bundles->len);
                                g_assert_true(k.inflated == deflated);
                                g_assert_cmpint(trace_field_find(k.data, k.len, 1, TRACE_WIRE_LEN, &f), ==, 1);
                                g_assert_cmpmem(f.data, f.len, g_bytes_get_data(bundles->pdata[n], NULL),
                                                g_bytes_get_size(bundles->pdata[n]));
                                g_assert_cmpuint(p->ftrace_events->cpu, ==, n);
                                g_assert_true(compact ? p->ftrace_events->compact_sched != NULL
                                                      : p->ftrace_events->n_event > 0);
                                n++;
                        }
                        tracebus__trace_packet__free_unpacked(p, NULL);
                }
                g_assert_cmpint(q, ==, 0);
                g_assert_cmpuint(n, ==, N_CPUS);
                g_assert_cmpuint(r.n_compressed, ==, deflated ? N_CPUS : 0);
                trace_reader_done(&r);
        }
}

int main(int argc, char **argv) {
        int r;

        g_test_init(&argc, &argv, NULL);
        fixture_load();
        g_test_add_data_func("/trace-file/good/full", GINT_TO_POINTER(0), test_good);
        g_test_add_data_func("/trace-file/good/compact", GINT_TO_POINTER(1), test_good);
        g_test_add_func("/trace-file/unflagged-first", test_unflagged_first);
        g_test_add_func("/trace-file/torn", test_torn);
        g_test_add_func("/trace-file/garbage", test_garbage);
        g_test_add_func("/trace-reader/fields", test_fields);
        g_test_add_func("/trace-reader/bad-fields", test_bad_fields);
        g_test_add_func("/trace-reader/find-last-wins", test_find_last_wins);
        g_test_add_func("/trace-reader/zlib", test_zlib);
        g_test_add_func("/trace-reader/writer", test_writer_trace);
        g_test_add_func("/trace-reader/compressed", test_compressed_trace);
        g_test_add_func("/trace-reader/compressed-corrupt", test_compressed_corrupt);
        g_test_add_func("/trace-reader/truncated", test_truncated);
        g_test_add_func("/trace-reader/corrupt", test_corrupt);
        g_test_add_func("/trace-reader/file-load", test_file_load);
        g_test_add_func("/trace-reader/fixture-pages", test_fixture_pages);
        r = g_test_run();
        fixture_unload();
        return r;
}
