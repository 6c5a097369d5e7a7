/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * TraceConfig.trace_filter (lib/trace-filter*.c): bytecodes built here by Perfetto v58's
 * rules (varint words, opcode in the low 3 bits, FNV-1a checksum last), packets filtered
 * and read back field by field, bad bytecodes refused, string rules redacting.
 */
#include <errno.h>
#include <glib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pb-wire.h"
#include "trace-filter.h"
#include "trace-writer.h"

G_DEFINE_AUTOPTR_CLEANUP_FUNC(TraceFilter, trace_filter_free)

#define SIMPLE(id) (((id) << 3) | 1u)
#define RANGE(id) (((id) << 3) | 2u)
#define NESTED(id) (((id) << 3) | 3u)
#define STRING(id) (((id) << 3) | 4u)
#define EOM 0u

/* @words as a bytecode, with the checksum Perfetto's parser verifies appended. */
static GByteArray *bytecode_raw(const uint32_t *words, size_t n, bool good_checksum) {
        GByteArray *b = g_byte_array_new();
        uint64_t hash = 0xcbf29ce484222325ull;
        uint8_t buf[PB_VARINT_MAX];

        for (size_t i = 0; i < n; i++) {
                for (unsigned k = 0; k < 4; k++) {
                        hash ^= (words[i] >> (8 * k)) & 0xff;
                        hash *= 0x100000001b3ull;
                }
                g_byte_array_append(b, buf, pb_varint_encode(buf, words[i]) - buf);
        }
        g_byte_array_append(b, buf, pb_varint_encode(buf, (uint32_t) hash + !good_checksum) - buf);
        return b;
}

static TraceFilter *filter_of(const uint32_t *words, size_t n) {
        g_autoptr(GByteArray) b = bytecode_raw(words, n, true);
        const char *reason = NULL;
        TraceFilter *f = NULL;

        g_assert_cmpint(trace_filter_new(b->data, b->len, &f, &reason), ==, 0);
        return f;
}

/* Trace{packet} -> TracePacket{timestamp, ftrace_events} -> FtraceEventBundle{cpu, event}
 * -> FtraceEvent{timestamp, print, sched_switch} -> SchedSwitch{1..7}, PrintFtraceEvent{buf
 * through the string rules}. */
static const uint32_t SCHED_ONLY[] = {
        NESTED(1), 1, EOM,                                  /* 0 Trace */
        NESTED(1), 2, SIMPLE(8), EOM,                       /* 1 TracePacket */
        SIMPLE(1), NESTED(2), 3, EOM,                       /* 2 FtraceEventBundle */
        SIMPLE(1), NESTED(3), 5, NESTED(4), 4, EOM,         /* 3 FtraceEvent */
        RANGE(1), 7, EOM,                                   /* 4 SchedSwitchFtraceEvent */
        STRING(2), EOM,                                     /* 5 PrintFtraceEvent */
};

static Tracebus__TracePacket *filtered(const TraceFilter *f, const Tracebus__TracePacket *in) {
        size_t len = tracebus__trace_packet__get_packed_size(in);
        g_autofree uint8_t *buf = g_malloc(len), *out = g_malloc(len);
        ssize_t n;

        tracebus__trace_packet__pack(in, buf);
        n = trace_filter_packet(f, buf, len, out);
        g_assert_cmpint(n, >=, 0);
        g_assert_cmpint(n, <=, len);
        return tracebus__trace_packet__unpack(NULL, n, out);
}

/* A packet of two events: a sched_switch and a sched_wakeup, plus a print. */
typedef struct {
        Tracebus__TracePacket packet;
        Tracebus__FtraceEventBundle bundle;
        Tracebus__FtraceEvent ev[3], *evp[3];
        Tracebus__SchedSwitchFtraceEvent sw;
        Tracebus__SchedWakingFtraceEvent wk;
        Tracebus__PrintFtraceEvent pr;
} Sample;

static void sample_init(Sample *s, char *print_buf) {
        tracebus__trace_packet__init(&s->packet);
        tracebus__ftrace_event_bundle__init(&s->bundle);
        tracebus__sched_switch_ftrace_event__init(&s->sw);
        tracebus__sched_waking_ftrace_event__init(&s->wk);
        tracebus__print_ftrace_event__init(&s->pr);
        s->packet.has_timestamp = true, s->packet.timestamp = 1000;
        s->packet.has_trusted_packet_sequence_id = true, s->packet.trusted_packet_sequence_id = 2;
        s->packet.ftrace_events = &s->bundle;
        s->bundle.has_cpu = true, s->bundle.cpu = 3;
        s->sw.prev_comm = "a", s->sw.has_prev_pid = true, s->sw.prev_pid = 10;
        s->sw.next_comm = "b", s->sw.has_next_pid = true, s->sw.next_pid = 20;
        s->wk.comm = "c", s->wk.has_pid = true, s->wk.pid = 30;
        s->pr.buf = print_buf, s->pr.has_ip = true, s->pr.ip = 0xffff;
        for (unsigned i = 0; i < 3; i++) {
                tracebus__ftrace_event__init(&s->ev[i]);
                s->ev[i].has_timestamp = true, s->ev[i].timestamp = 100 + i;
                s->ev[i].has_pid = true, s->ev[i].pid = 7;
                s->evp[i] = &s->ev[i];
        }
        s->ev[0].sched_switch = &s->sw;
        s->ev[1].sched_wakeup = &s->wk;
        s->ev[2].print = &s->pr;
        s->bundle.n_event = 3, s->bundle.event = s->evp;
}

static void test_fields(void) {
        g_autoptr(TraceFilter) f = filter_of(SCHED_ONLY, G_N_ELEMENTS(SCHED_ONLY));
        char buf[] = "hello";
        Tracebus__TracePacket *out;
        Sample s;

        sample_init(&s, buf);
        out = filtered(f, &s.packet);
        g_assert_nonnull(out);
        g_assert_true(out->has_timestamp);
        g_assert_cmpuint(out->timestamp, ==, 1000);
        g_assert_false(out->has_trusted_packet_sequence_id);
        g_assert_nonnull(out->ftrace_events);
        g_assert_cmpuint(out->ftrace_events->cpu, ==, 3);
        g_assert_cmpuint(out->ftrace_events->n_event, ==, 3);
        /* The sched_switch kept whole, the event's pid dropped. */
        g_assert_cmpuint(out->ftrace_events->event[0]->timestamp, ==, 100);
        g_assert_false(out->ftrace_events->event[0]->has_pid);
        g_assert_nonnull(out->ftrace_events->event[0]->sched_switch);
        g_assert_cmpstr(out->ftrace_events->event[0]->sched_switch->prev_comm, ==, "a");
        g_assert_cmpint(out->ftrace_events->event[0]->sched_switch->next_pid, ==, 20);
        /* The sched_wakeup dropped: an event with its timestamp alone. */
        g_assert_null(out->ftrace_events->event[1]->sched_wakeup);
        g_assert_cmpuint(out->ftrace_events->event[1]->timestamp, ==, 101);
        /* The print's buf kept (no rule matches), its ip dropped. */
        g_assert_cmpstr(out->ftrace_events->event[2]->print->buf, ==, "hello");
        g_assert_false(out->ftrace_events->event[2]->print->has_ip);
        tracebus__trace_packet__free_unpacked(out, NULL);
}

static void test_string_rules(void) {
        g_autoptr(TraceFilter) f = filter_of(SCHED_ONLY, G_N_ELEMENTS(SCHED_ONLY));
        const char *reason = NULL;
        char buf[] = "B|123|foo secretvalue1234567";
        Tracebus__TracePacket *out;
        Sample s;

        g_assert_cmpint(trace_filter_add_rule(f, TRACE_FILTER_ATRACE_MATCH_BREAK, "B\\|\\d+\\|foo keep.*", "foo", &reason), ==, 0);
        g_assert_cmpint(trace_filter_add_rule(f, TRACE_FILTER_ATRACE_MATCH_REDACT_GROUPS, "B\\|\\d+\\|foo (.*)", "foo", &reason), ==, 0);
        g_assert_cmpint(trace_filter_add_rule(f, TRACE_FILTER_MATCH_REDACT_GROUPS, "pw=(\\w+)", NULL, &reason), ==, 0);
        g_assert_cmpint(trace_filter_add_rule(f, TRACE_FILTER_ATRACE_REPEATED_SEARCH_REDACT_GROUPS, "id=(\\d+)", "bar", &reason), ==, 0);

        sample_init(&s, buf);
        out = filtered(f, &s.packet);
        /* The group past "foo " is overwritten, the string keeps its length. */
        g_assert_cmpstr(out->ftrace_events->event[2]->print->buf, ==, "B|123|foo P60REDACTED-------");
        tracebus__trace_packet__free_unpacked(out, NULL);

        char keep[] = "B|1|foo keep me", whole[] = "pw=abc", part[] = "x pw=abc";
        char rep[] = "C|9|bar id=12 id=3456 end", endmark[] = "E|9|bar id=1";
        g_assert_cmpint(trace_filter_string(f, keep, strlen(keep)), ==, 0);
        g_assert_cmpstr(keep, ==, "B|1|foo keep me");
        g_assert_cmpint(trace_filter_string(f, whole, strlen(whole)), ==, 1);
        g_assert_cmpstr(whole, ==, "pw=P60");
        /* MATCH rules match the whole string, as std::regex_match. */
        g_assert_cmpint(trace_filter_string(f, part, strlen(part)), ==, 0);
        g_assert_cmpint(trace_filter_string(f, rep, strlen(rep)), ==, 1);
        g_assert_cmpstr(rep, ==, "C|9|bar id=P6 id=P60R end");
        /* "E|" strings have no payload: atrace rules skip them. */
        g_assert_cmpint(trace_filter_string(f, endmark, strlen(endmark)), ==, 0);

        /* Catastrophic backtracking is cut short: no match, the string as it was. */
        g_assert_cmpint(trace_filter_add_rule(f, TRACE_FILTER_MATCH_REDACT_GROUPS, "(a+)+b", NULL, &reason), ==, 0);
        char slow[] = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaac";
        g_assert_cmpint(trace_filter_string(f, slow, strlen(slow)), ==, 0);
        g_assert_cmpint(trace_filter_add_rule(f, 0, "x", NULL, &reason), ==, -EINVAL);
        g_assert_cmpint(trace_filter_add_rule(f, 1, "(unclosed", NULL, &reason), ==, -EINVAL);
}

/* A pattern whose counted repetitions multiply to 10,000 (PCRE2 itself compiles it, into
 * tens of KiB) and one whose groups nest 40 deep are refused before they are compiled,
 * with the bound named; one just under the budget still compiles. */
static void test_string_rule_bounded(void) {
        g_autoptr(TraceFilter) f = filter_of(SCHED_ONLY, G_N_ELEMENTS(SCHED_ONLY));
        g_autofree char *opening = g_strnfill(40, '('), *closing = g_strnfill(40, ')');
        g_autofree char *deep = g_strconcat(opening, "a", closing, NULL);
        const char *reason = NULL;

        g_assert_cmpint(trace_filter_add_rule(f, TRACE_FILTER_MATCH_REDACT_GROUPS, "(a{1,100}){1,100}", NULL, &reason),
                        ==, -EINVAL);
        g_assert_nonnull(strstr(reason, "multiply past 4096"));
        reason = NULL;
        g_assert_cmpint(trace_filter_add_rule(f, TRACE_FILTER_MATCH_REDACT_GROUPS, deep, NULL, &reason), ==, -EINVAL);
        g_assert_nonnull(strstr(reason, "nest deeper than 32"));
        g_assert_cmpint(trace_filter_add_rule(f, TRACE_FILTER_MATCH_REDACT_GROUPS, "(a{1,60}){1,60}", NULL, &reason),
                        ==, 0);
}

static void check_refused(const uint32_t *words, size_t n, bool good_checksum, const char *why) {
        g_autoptr(GByteArray) b = bytecode_raw(words, n, good_checksum);
        const char *reason = NULL;
        TraceFilter *f = NULL;

        g_assert_cmpint(trace_filter_new(b->data, b->len, &f, &reason), ==, -EINVAL);
        g_assert_null(f);
        g_assert_nonnull(strstr(reason, why));
}

static void test_bad_bytecode(void) {
        static const uint32_t no_eom[] = { NESTED(1), 1, EOM, SIMPLE(8) };
        static const uint32_t unterminated[] = { NESTED(1) };
        static const uint32_t bad_index[] = { NESTED(1), 5, EOM, SIMPLE(8), EOM };
        static const uint32_t bad_opcode[] = { NESTED(1), 1, EOM, (8u << 3) | 6u, EOM };
        static const uint32_t field_zero[] = { NESTED(1), 1, EOM, SIMPLE(0), EOM };
        static const uint32_t no_root[] = { SIMPLE(1), EOM };
        static const uint32_t overlap[] = { NESTED(1), 1, EOM, RANGE(200), 10, SIMPLE(205), EOM };
        const char *reason = NULL;
        TraceFilter *f = NULL;

        check_refused(SCHED_ONLY, G_N_ELEMENTS(SCHED_ONLY), false, "checksum");
        check_refused(no_eom, G_N_ELEMENTS(no_eom), true, "end of message");
        check_refused(unterminated, G_N_ELEMENTS(unterminated), true, "ends inside");
        check_refused(bad_index, G_N_ELEMENTS(bad_index), true, "out of range");
        check_refused(bad_opcode, G_N_ELEMENTS(bad_opcode), true, "opcode");
        check_refused(field_zero, G_N_ELEMENTS(field_zero), true, "field id 0");
        check_refused(no_root, G_N_ELEMENTS(no_root), true, "Trace.packet");
        check_refused(overlap, G_N_ELEMENTS(overlap), true, "overlapping");
        g_assert_cmpint(trace_filter_new((const uint8_t *) "", 0, &f, &reason), ==, -EINVAL);
        /* An empty bytes field, as protobuf-c decodes it (a fuzzer's find under UBSan). */
        g_assert_cmpint(trace_filter_new(NULL, 0, &f, &reason), ==, -EINVAL);
        g_assert_cmpstr(reason, ==, "the bytecode is empty");
        g_assert_cmpint(trace_filter_new((const uint8_t *) "\xff", 1, &f, &reason), ==, -EINVAL);
        g_assert_null(f);
}

/* Nested deeper than the cap: dropped as malformed, not a deep recursion. */
static void test_depth(void) {
        /* TracePacket field 1 is a TracePacket again, so any depth is allowed by the bytecode. */
        static const uint32_t self[] = { NESTED(1), 1, EOM, NESTED(1), 1, SIMPLE(8), EOM };
        g_autoptr(TraceFilter) f = filter_of(self, G_N_ELEMENTS(self));
        g_autoptr(GByteArray) msg = g_byte_array_new();
        uint8_t ts[] = { 0x40, 0x05 }, hdr[1 + PB_VARINT_MAX], *out;
        ssize_t n;

        g_byte_array_append(msg, ts, sizeof(ts));
        for (unsigned depth = 1; depth <= TRACE_FILTER_MAX_DEPTH + 1; depth++) {
                size_t h;

                out = g_malloc(msg->len);
                n = trace_filter_packet(f, msg->data, msg->len, out);
                g_assert_cmpint(n, ==, depth <= TRACE_FILTER_MAX_DEPTH ? (ssize_t) msg->len : -EBADMSG);
                if (n > 0)
                        g_assert_cmpmem(out, n, msg->data, msg->len);
                g_free(out);
                hdr[0] = 0x0a;
                h = pb_varint_encode(hdr + 1, msg->len) - hdr;
                g_byte_array_prepend(msg, hdr, h);
        }
}

static void test_malformed(void) {
        g_autoptr(TraceFilter) f = filter_of(SCHED_ONLY, G_N_ELEMENTS(SCHED_ONLY));
        static const uint8_t cut[] = { 0x0a, 0x05, 0x08 }, group[] = { 0x0b }, torn[] = { 0x40 };
        uint8_t out[8];

        g_assert_cmpint(trace_filter_packet(f, cut, sizeof(cut), out), ==, -EBADMSG);
        g_assert_cmpint(trace_filter_packet(f, group, sizeof(group), out), ==, -EBADMSG);
        g_assert_cmpint(trace_filter_packet(f, torn, sizeof(torn), out), ==, -EBADMSG);
        g_assert_cmpint(trace_filter_packet(f, out, 0, out), ==, 0);
}

/* Through the writer: metadata and an ftrace bundle, both filtered, stats counted. */
static void test_writer(void) {
        g_autoptr(TraceFilter) f = filter_of(SCHED_ONLY, G_N_ELEMENTS(SCHED_ONLY));
        Tracebus__TracePacket meta = TRACEBUS__TRACE_PACKET__INIT, *p;
        char buf[] = "x";
        Sample s;
        TraceWriter w;
        uint8_t *data, *dst;
        size_t blen;
        int fd = memfd_create("trace", MFD_CLOEXEC);
        off_t size;

        g_assert_cmpint(fd, >=, 0);
        trace_writer_init(&w, fd, TRACE_WRITER_STREAM, 0, 0);
        trace_writer_set_filter(&w, f);
        meta.has_timestamp = true, meta.timestamp = 5;
        g_assert_cmpint(trace_writer_append_meta(&w, &meta, TRACE_SEQUENCE_FTRACE), ==, 0);
        sample_init(&s, buf);
        blen = tracebus__ftrace_event_bundle__get_packed_size(&s.bundle);
        data = g_malloc(blen);
        tracebus__ftrace_event_bundle__pack(&s.bundle, data);
        g_assert_cmpint(trace_writer_reserve_ftrace_bundle(&w, blen, 3, &dst), ==, -EOPNOTSUPP);
        g_assert_cmpint(trace_writer_append_ftrace_bundle(&w, data, blen, 3), ==, 0);
        g_assert_cmpint(trace_writer_flush(&w), ==, 0);
        g_assert_cmpuint(w.filter_stats.input_packets, ==, 2);
        g_assert_cmpuint(w.filter_stats.errors, ==, 0);
        g_assert_cmpuint(w.filter_stats.output_bytes, <, w.filter_stats.input_bytes);
        trace_writer_done(&w);
        g_free(data);

        size = lseek(fd, 0, SEEK_END);
        data = g_malloc(size);
        g_assert_cmpint(pread(fd, data, size, 0), ==, size);
        Tracebus__Trace *t = tracebus__trace__unpack(NULL, size, data);
        g_assert_nonnull(t);
        g_assert_cmpuint(t->n_packet, ==, 2);
        /* The sequence id and first-packet flags are not in the filter: gone. */
        g_assert_false(t->packet[0]->has_trusted_packet_sequence_id);
        g_assert_false(t->packet[0]->has_first_packet_on_sequence);
        g_assert_cmpuint(t->packet[0]->timestamp, ==, 5);
        p = t->packet[1];
        g_assert_nonnull(p->ftrace_events);
        g_assert_cmpuint(p->ftrace_events->n_event, ==, 3);
        g_assert_nonnull(p->ftrace_events->event[0]->sched_switch);
        g_assert_null(p->ftrace_events->event[1]->sched_wakeup);
        tracebus__trace__free_unpacked(t, NULL);
        g_free(data);
        close(fd);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/trace-filter/fields", test_fields);
        g_test_add_func("/trace-filter/string-rules", test_string_rules);
        g_test_add_func("/trace-filter/string-rule-bounded", test_string_rule_bounded);
        g_test_add_func("/trace-filter/bad-bytecode", test_bad_bytecode);
        g_test_add_func("/trace-filter/depth", test_depth);
        g_test_add_func("/trace-filter/malformed", test_malformed);
        g_test_add_func("/trace-filter/writer", test_writer);
        return g_test_run();
}
