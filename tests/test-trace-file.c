/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit test of the bus tests' trace reader (tests/trace-file.c): it must
 * summarise a well-formed trace correctly and reject torn or garbage input.
 */
#include <gio/gio.h>
#include <glib.h>
#include <string.h>

#include "trace-file.h"
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

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_data_func("/trace-file/good/full", GINT_TO_POINTER(0), test_good);
        g_test_add_data_func("/trace-file/good/compact", GINT_TO_POINTER(1), test_good);
        g_test_add_func("/trace-file/unflagged-first", test_unflagged_first);
        g_test_add_func("/trace-file/torn", test_torn);
        g_test_add_func("/trace-file/garbage", test_garbage);
        return g_test_run();
}
