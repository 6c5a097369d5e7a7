/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The GTK preview's CPU profile (client/gtk/preview-profile.c), on a
 * trace written here with libtracebus's writer: PerfSample packets (TracePacket 66) and
 * InternedData's function_names, mapping_paths, mappings, frames and callstacks, as
 * Perfetto v58 numbers them, on two sequences that reuse the same iids. The messages
 * tracebus's protos may not declare yet go in as protobuf-c's unknown fields, which it
 * packs as they are. Every count and every function of the list is checked. */
#include <sys/mman.h>
#include <unistd.h>

#include "pb-wire.h"
#include "preview-model.h"
#include "trace-reader.h"
#include "trace-writer.h"

#define SEQ_A TRACE_SEQUENCE_FTRACE
#define SEQ_B TRACE_SEQUENCE_PROCESSES

/* ---- hand-encoded messages ---- */

static void put_varint(GByteArray *m, uint32_t field, uint64_t v) {
        uint8_t buf[20], *p = buf;

        p = pb_varint_encode(p, pb_tag(field, 0));
        p = pb_varint_encode(p, v);
        g_byte_array_append(m, buf, (guint) (p - buf));
}

static void put_bytes(GByteArray *m, uint32_t field, const void *data, size_t len) {
        uint8_t buf[20], *p = buf;

        p = pb_varint_encode(p, pb_tag(field, 2));
        p = pb_varint_encode(p, len);
        g_byte_array_append(m, buf, (guint) (p - buf));
        g_byte_array_append(m, data, (guint) len);
}

static void put_message(GByteArray *m, uint32_t field, GByteArray *sub) {
        put_bytes(m, field, sub->data, sub->len);
        g_byte_array_unref(sub);
}

/* InternedString: iid 1, str 2. */
static GByteArray *interned_string(uint64_t iid, const char *s) {
        GByteArray *m = g_byte_array_new();

        put_varint(m, 1, iid);
        put_bytes(m, 2, s, strlen(s));
        return m;
}

/* Frame: iid 1, function_name_id 2, mapping_id 3, rel_pc 4. */
static GByteArray *frame(uint64_t iid, uint64_t name, uint64_t mapping) {
        GByteArray *m = g_byte_array_new();

        put_varint(m, 1, iid);
        if (name)
                put_varint(m, 2, name);
        if (mapping) {
                put_varint(m, 3, mapping);
                put_varint(m, 4, 0x1234);
        }
        return m;
}

/* Callstack (iid 1, frame_ids 2) or Mapping (iid 1, path_string_ids 7): the ids packed or one
 * varint each, as a writer may do either. */
static GByteArray *id_list(uint64_t iid, uint32_t field, const uint64_t *ids, size_t n, gboolean packed) {
        GByteArray *m = g_byte_array_new(), *p = g_byte_array_new();

        put_varint(m, 1, iid);
        for (size_t i = 0; i < n; i++) {
                uint8_t buf[10];

                if (!packed)
                        put_varint(m, field, ids[i]);
                else
                        g_byte_array_append(p, buf, (guint) (pb_varint_encode(buf, ids[i]) - buf));
        }
        if (packed)
                put_bytes(m, field, p->data, p->len);
        g_byte_array_unref(p);
        return m;
}

/* ---- the trace ---- */

typedef struct {
        int fd;
        TraceWriter w;
} Out;

/* A run of length-delimited fields as protobuf-c's unknown fields, which it packs as they
 * are (the tag, then the bytes it keeps: the length and the payload): how InternedData gets
 * fields tracebus's protos may not declare. */
static size_t split_fields(GByteArray *blob, ProtobufCMessageUnknownField *fields, size_t max) {
        const uint8_t *q = blob->data, *end = blob->data + blob->len;
        size_t n = 0;

        while (q < end) {
                uint64_t key, len;

                const uint8_t *start;

                g_assert_true(pb_varint_decode(&q, end, &key));
                g_assert_cmpuint(key & 7, ==, 2);
                start = q;
                g_assert_true(pb_varint_decode(&q, end, &len));
                g_assert_cmpuint(n, <, max);
                q += len;
                fields[n++] = (ProtobufCMessageUnknownField) {
                        .tag = (uint32_t) (key >> 3), .wire_type = PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED,
                        .len = (size_t) (q - start), .data = (uint8_t *) start,
                };
        }
        return n;
}

/* One packet on @seq with @interned (InternedData's fields) and @sample (PerfSample's). */
static void append(Out *o, uint32_t seq, guint64 ts, GByteArray *interned, GByteArray *sample) {
        Tracebus__TracePacket p = TRACEBUS__TRACE_PACKET__INIT;
        Tracebus__InternedData id = TRACEBUS__INTERNED_DATA__INIT;
        ProtobufCMessageUnknownField fields[64];
        g_autoptr(GByteArray) framed = g_byte_array_new();

        p.has_timestamp = TRUE;
        p.timestamp = ts;
        if (interned) {
                id.base.n_unknown_fields = split_fields(interned, fields, 32);
                id.base.unknown_fields = fields;
                p.interned_data = &id;
        }
        if (sample) {
                put_bytes(framed, 66, sample->data, sample->len);
                p.base.n_unknown_fields = split_fields(framed, fields + 32, 1);
                p.base.unknown_fields = fields + 32;
        }
        g_assert_cmpint(trace_writer_append_data(&o->w, &p, seq), ==, 0);
}

static GByteArray *sample(uint64_t callstack) {
        GByteArray *m = g_byte_array_new();

        put_varint(m, 1, 0);            /* cpu */
        put_varint(m, 2, 4242);         /* pid */
        put_varint(m, 3, 4243);         /* tid */
        put_varint(m, 5, 2);            /* cpu_mode: MODE_USER */
        put_varint(m, 4, callstack);
        return m;
}

static void append_samples(Out *o, uint32_t seq, guint64 ts, uint64_t callstack, unsigned n) {
        for (unsigned i = 0; i < n; i++) {
                g_autoptr(GByteArray) s = sample(callstack);
                append(o, seq, ts + i, NULL, s);
        }
}

/* Sequence A: main > work > leaf_a, and main > work > work > (a frame of libc without a
 * name); sequence B: its own iid 1, other_seq_fn. */
static GByteArray *interned_a(void) {
        GByteArray *m = g_byte_array_new();
        static const uint64_t path[] = { 1, 2, 3 }, stack1[] = { 1, 2, 3 }, stack2[] = { 1, 2, 5, 4 };

        put_message(m, 5, interned_string(1, "main"));
        put_message(m, 5, interned_string(2, "work"));
        put_message(m, 5, interned_string(3, "leaf_a"));
        put_message(m, 17, interned_string(1, "usr"));
        put_message(m, 17, interned_string(2, "lib"));
        put_message(m, 17, interned_string(3, "libc.so.6"));
        put_message(m, 19, id_list(1, 7, path, G_N_ELEMENTS(path), TRUE));
        put_message(m, 6, frame(1, 1, 1));
        put_message(m, 6, frame(2, 2, 1));
        put_message(m, 6, frame(3, 3, 1));
        put_message(m, 6, frame(4, 0, 1));
        put_message(m, 6, frame(5, 2, 1));
        put_message(m, 7, id_list(1, 2, stack1, G_N_ELEMENTS(stack1), FALSE));
        put_message(m, 7, id_list(2, 2, stack2, G_N_ELEMENTS(stack2), TRUE));
        return m;
}

static GByteArray *interned_b(void) {
        GByteArray *m = g_byte_array_new();
        static const uint64_t stack[] = { 1 };

        put_message(m, 5, interned_string(1, "other_seq_fn"));
        put_message(m, 6, frame(1, 1, 0));
        put_message(m, 7, id_list(1, 2, stack, 1, TRUE));
        return m;
}

static GBytes *profile_trace(void) {
        g_autoptr(GByteArray) a = interned_a(), b = interned_b(), first = sample(1), lost = g_byte_array_new(),
                              skipped = g_byte_array_new();
        Out o;
        off_t size;
        guint8 *buf;

        o.fd = memfd_create("profile", MFD_CLOEXEC);
        g_assert_cmpint(o.fd, >=, 0);
        trace_writer_init(&o.w, o.fd, TRACE_WRITER_STREAM, 0, 0);
        /* The interned data in the packet of the first sample that uses it, as traced_perf does. */
        append(&o, SEQ_A, 1000, a, first);
        append_samples(&o, SEQ_A, 1001, 1, 2);
        append_samples(&o, SEQ_A, 2000, 2, 2);
        append_samples(&o, SEQ_A, 3000, 99, 1);   /* a call stack the trace never defines */
        append(&o, SEQ_B, 4000, b, NULL);
        append_samples(&o, SEQ_B, 4001, 1, 4);
        put_varint(lost, 1, 0);
        put_varint(lost, 17, 5);                  /* kernel_records_lost */
        append(&o, SEQ_A, 5000, NULL, lost);
        put_varint(skipped, 2, 4242);
        put_varint(skipped, 18, 2);               /* PROFILER_STAGE_UNWIND */
        append(&o, SEQ_A, 5001, NULL, skipped);
        g_assert_cmpint(trace_writer_flush(&o.w), ==, 0);
        trace_writer_done(&o.w);
        size = lseek(o.fd, 0, SEEK_END);
        buf = g_malloc(size ?: 1);
        g_assert_cmpint(pread(o.fd, buf, size, 0), ==, size);
        close(o.fd);
        return g_bytes_new_take(buf, size);
}

static void assert_function(const TbPreview *p, guint i, const char *name, guint64 self, guint64 total) {
        const TbFunction *f;

        g_assert_cmpuint(i, <, p->functions->len);
        f = g_ptr_array_index(p->functions, i);
        g_assert_cmpstr(f->name, ==, name);
        g_assert_cmpuint(f->self, ==, self);
        g_assert_cmpuint(f->total, ==, total);
}

static void test_top_functions(void) {
        g_autoptr(GBytes) bytes = profile_trace();
        g_autoptr(TbPreview) p = tb_preview_new_from_data(g_bytes_get_data(bytes, NULL), g_bytes_get_size(bytes), NULL);

        g_assert_null(p->read_error);
        g_assert_cmpuint(p->perf.n_samples, ==, 9);
        g_assert_cmpuint(p->perf.n_unresolved, ==, 1);
        g_assert_cmpuint(p->perf.n_lost, ==, 5);
        g_assert_cmpuint(p->perf.n_skipped, ==, 1);
        g_assert_cmpuint(p->first_ts, ==, 1000);
        g_assert_cmpuint(p->last_ts, ==, 5001);
        /* By self samples, then total, then name; "work" counted once in a recursive stack,
         * a frame without a name by its file. */
        g_assert_cmpuint(p->functions->len, ==, 5);
        assert_function(p, 0, "other_seq_fn", 4, 4);
        assert_function(p, 1, "leaf_a", 3, 3);
        assert_function(p, 2, "[libc.so.6]", 2, 2);
        assert_function(p, 3, "main", 0, 5);
        assert_function(p, 4, "work", 0, 5);
}

static void test_top_limit(void) {
        g_autoptr(GBytes) bytes = profile_trace();
        TbPreviewLimits limits = TB_PREVIEW_LIMITS_DEFAULT;
        g_autoptr(TbPreview) p = NULL;

        limits.top_functions = 2;
        p = tb_preview_new_from_data(g_bytes_get_data(bytes, NULL), g_bytes_get_size(bytes), &limits);
        g_assert_cmpuint(p->functions->len, ==, 2);
        assert_function(p, 0, "other_seq_fn", 4, 4);
        assert_function(p, 1, "leaf_a", 3, 3);
}

/* No PerfSample: an empty list and zero counts, never NULL. */
static void test_no_profile(void) {
        g_autoptr(TbPreview) p = tb_preview_new_from_data((const guint8 *) "", 0, NULL);

        g_assert_nonnull(p->functions);
        g_assert_cmpuint(p->functions->len, ==, 0);
        g_assert_cmpuint(p->perf.n_samples + p->perf.n_unresolved + p->perf.n_lost + p->perf.n_skipped, ==, 0);
}

/* A torn trace keeps the samples read before the tear. */
static void test_torn(void) {
        g_autoptr(GBytes) bytes = profile_trace();
        gsize len = g_bytes_get_size(bytes);
        g_autoptr(TbPreview) p = tb_preview_new_from_data(g_bytes_get_data(bytes, NULL), len - 3, NULL);

        g_assert_nonnull(p->read_error);
        g_assert_cmpuint(p->perf.n_samples, ==, 9);
        g_assert_cmpuint(p->perf.n_lost, ==, 5);
        g_assert_cmpuint(p->perf.n_skipped, ==, 0);
}

/* The hand-encoded fixture, read back with the project's own v58 messages (protos/trace.proto,
 * which the service writes with): every field where Perfetto numbers it. */
static void test_fixture_is_v58(void) {
        g_autoptr(GBytes) bytes = profile_trace();
        Tracebus__TracePacket *pk = NULL;
        const Tracebus__InternedData *id;
        TraceRawPacket raw;
        TraceReader r;

        trace_reader_init(&r, g_bytes_get_data(bytes, NULL), g_bytes_get_size(bytes), 0);
        g_assert_cmpint(trace_reader_next(&r, &raw), ==, 1);
        g_assert_cmpint(trace_packet_unpack(&raw, &pk), ==, 0);
        g_assert_cmpuint(pk->trusted_packet_sequence_id, ==, SEQ_A);
        g_assert_nonnull(pk->perf_sample);
        g_assert_cmpuint(pk->perf_sample->callstack_iid, ==, 1);
        g_assert_cmpuint(pk->perf_sample->pid, ==, 4242);
        g_assert_cmpint(pk->perf_sample->cpu_mode, ==, TRACEBUS__PROFILING__CPU_MODE__MODE_USER);
        id = pk->interned_data;
        g_assert_nonnull(id);
        g_assert_cmpuint(id->n_function_names, ==, 3);
        g_assert_cmpuint(id->function_names[2]->iid, ==, 3);
        g_assert_cmpuint(id->n_mapping_paths, ==, 3);
        g_assert_cmpuint(id->n_mappings, ==, 1);
        g_assert_cmpuint(id->mappings[0]->n_path_string_ids, ==, 3);
        g_assert_cmpuint(id->mappings[0]->path_string_ids[2], ==, 3);
        g_assert_cmpuint(id->n_frames, ==, 5);
        g_assert_cmpuint(id->frames[3]->mapping_id, ==, 1);
        g_assert_cmpuint(id->frames[3]->function_name_id, ==, 0);
        g_assert_cmpuint(id->n_callstacks, ==, 2);
        g_assert_cmpuint(id->callstacks[1]->n_frame_ids, ==, 4);
        g_assert_cmpuint(id->callstacks[1]->frame_ids[3], ==, 4);
        tracebus__trace_packet__free_unpacked(pk, NULL);
        trace_reader_done(&r);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/preview/profile/top-functions", test_top_functions);
        g_test_add_func("/preview/profile/top-limit", test_top_limit);
        g_test_add_func("/preview/profile/none", test_no_profile);
        g_test_add_func("/preview/profile/torn", test_torn);
        g_test_add_func("/preview/profile/fixture-v58", test_fixture_is_v58);
        return g_test_run();
}
