/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The deflate writer against the real zlib: every stream is inflated by zlib (libtracebus's
 * trace_zlib_inflate(); the library trace_processor inflates compressed_packets with) and must
 * give back exactly what went in, within the size deflate_bound() promised. */
#include "deflate.h"
#include "trace-file.h"

#include <gio/gio.h>
#include <string.h>

typedef enum {
        SEG_STORED,
        SEG_CODED,
} SegmentKind;

typedef struct {
        SegmentKind kind;
        const guint8 *data;
        gsize len;
} Segment;

/* Deflates @segs into a buffer of exactly deflate_bound() bytes, inflates it with zlib and
 * checks the round trip. Returns the stream's length. */
static gsize check_round_trip(const Segment *segs, gsize n) {
        g_autoptr(GByteArray) expected = g_byte_array_new();
        g_autoptr(GBytes) back = NULL;
        g_autofree guint8 *out = NULL;
        DeflateStream s;
        gsize total = 0, len, bound;

        for (gsize i = 0; i < n; i++) {
                g_byte_array_append(expected, segs[i].data, (guint) segs[i].len);
                total += segs[i].len;
        }
        bound = deflate_bound(total, n);
        out = g_malloc(bound);  /* exact, so that ASan sees any write past it */
        deflate_begin(&s, out);
        for (gsize i = 0; i < n; i++) {
                if (segs[i].kind == SEG_STORED)
                        deflate_stored(&s, segs[i].data, segs[i].len);
                else
                        deflate_coded(&s, segs[i].data, segs[i].len);
        }
        len = deflate_end(&s);
        g_assert_cmpuint(len, <=, bound);

        back = tb_zlib_inflate_or_fail(out, len);
        g_assert_cmpmem(g_bytes_get_data(back, NULL), g_bytes_get_size(back), expected->data, expected->len);
        return len;
}

static gsize round_trip_one(SegmentKind kind, const guint8 *data, gsize len) {
        Segment seg = { kind, data, len };

        return check_round_trip(&seg, 1);
}

static guint32 adler32_by_definition(const guint8 *data, gsize len) {
        guint32 a = 1, b = 0;

        for (gsize i = 0; i < len; i++) {
                a = (a + data[i]) % 65521;
                b = (b + a) % 65521;
        }
        return (b << 16) | a;
}

static void test_adler32(void) {
        g_autofree guint8 *data = g_malloc(20000);
        GRand *rand = g_rand_new_with_seed(1);

        /* RFC 1950's example checksum of a known string. */
        g_assert_cmphex(adler32_update(1, (const guint8 *) "Wikipedia", 9), ==, 0x11E60398);
        g_assert_cmphex(adler32_update(1, NULL, 0), ==, 1);
        /* All 0xff: the sums are at their largest, across the reduction blocks. */
        memset(data, 0xff, 20000);
        for (gsize len = 5550; len < 5560; len++)
                g_assert_cmphex(adler32_update(1, data, len), ==, adler32_by_definition(data, len));
        g_assert_cmphex(adler32_update(1, data, 20000), ==, adler32_by_definition(data, 20000));
        for (gsize i = 0; i < 20000; i++)
                data[i] = (guint8) g_rand_int(rand);
        for (gsize len = 0; len < 70; len++)
                g_assert_cmphex(adler32_update(1, data, len), ==, adler32_by_definition(data, len));
        /* In pieces, as segments feed it. */
        g_assert_cmphex(adler32_update(adler32_update(1, data, 7001), data + 7001, 12999), ==,
                        adler32_by_definition(data, 20000));
        g_rand_free(rand);
}

static void test_empty(void) {
        static const guint8 nothing[1];
        Segment segs[] = { { SEG_STORED, nothing, 0 }, { SEG_CODED, nothing, 0 } };

        check_round_trip(NULL, 0);
        check_round_trip(segs, G_N_ELEMENTS(segs));
}

/* A column of small values: one byte value is a bit per byte; two alternating are one
 * and two bits (the end of the block is a third symbol). */
static void test_column_values(void) {
        guint8 data[4000];
        gsize len;

        memset(data, 120, sizeof(data));
        len = round_trip_one(SEG_CODED, data, sizeof(data));
        g_assert_cmpuint(len, <, sizeof(data) / 8 + 64);
        for (gsize i = 0; i < sizeof(data); i++)
                data[i] = i % 2 ? 0 : 1;
        len = round_trip_one(SEG_CODED, data, sizeof(data));
        g_assert_cmpuint(len, <, sizeof(data) * 3 / 16 + 64);
        /* Two values in no order: no matches to speak of, a code of three symbols (with
         * the end of the block), from the shortest segment that gets one. */
        {
                GRand *rand = g_rand_new_with_seed(5);

                for (gsize i = 0; i < sizeof(data); i++)
                        data[i] = g_rand_boolean(rand) ? 7 : 200;
                g_rand_free(rand);
        }
        for (gsize n = 128; n <= 4000; n += n < 140 ? 1 : 977) {
                len = round_trip_one(SEG_CODED, data, n);
                g_assert_cmpuint(len, <, n * 5 / 16 + 64);
        }
        /* A few bytes: stored, or matches. */
        round_trip_one(SEG_CODED, data, 1);
        round_trip_one(SEG_CODED, data, 3);
}

/* Columns that repeat with a period of 1 to 8 bytes become matches: a few bytes for
 * thousands. A longer period, or a start that does not repeat, takes the code path. */
static void test_short_matches(void) {
        g_autofree guint8 *data = g_malloc(20000);
        GRand *rand = g_rand_new_with_seed(4);
        guint8 pattern[16];
        gsize len;

        for (guint i = 0; i < sizeof(pattern); i++)
                pattern[i] = (guint8) g_rand_int(rand);
        for (gsize period = 1; period <= 8; period++) {
                for (gsize i = 0; i < 4000; i++)
                        data[i] = pattern[i % period];
                len = round_trip_one(SEG_CODED, data, 4000);
                g_test_message("period %zu: 4000 bytes to %zu", period, len);
                g_assert_cmpuint(len, <, 64);
        }
        /* Period 11: no short distance matches, but 11 values: literals with a code. */
        for (gsize i = 0; i < 4000; i++)
                data[i] = pattern[i % 11];
        len = round_trip_one(SEG_CODED, data, 4000);
        g_assert_cmpuint(len, >, 64);
        g_assert_cmpuint(len, <, 4000 / 2);

        /* Runs of every length from 1 to 300: every length code and its extra bits. */
        len = 0;
        for (gsize run = 1; run <= 300 && len + run + 1 < 20000; run++) {
                memset(data + len, (int) (run & 0xff), run);
                len += run;
                data[len++] = 0xff;
        }
        round_trip_one(SEG_CODED, data, len);

        /* Repeating, then random: the probe takes matches, and the random part is
         * literals of the fixed code, or all of it is stored. Random, then repeating. */
        for (gsize i = 0; i < 20000; i++)
                data[i] = i < 1000 ? pattern[i % 3] : (guint8) g_rand_int(rand);
        len = round_trip_one(SEG_CODED, data, 20000);
        g_assert_cmpuint(len, <=, 20000 + 16);
        for (gsize i = 0; i < 20000; i++)
                data[i] = i >= 1000 ? pattern[i % 5] : (guint8) g_rand_int(rand);
        round_trip_one(SEG_CODED, data, 20000);
        g_rand_free(rand);
}

/* Random bytes cannot be coded smaller: they are stored, and never cost more. */
static void test_random_is_stored(void) {
        g_autofree guint8 *data = g_malloc(70000);
        GRand *rand = g_rand_new_with_seed(2);
        gsize len;

        for (gsize i = 0; i < 70000; i++)
                data[i] = (guint8) g_rand_int(rand);
        len = round_trip_one(SEG_CODED, data, 70000);
        g_assert_cmpuint(len, <=, 70000 + 2 * 5 + 2 + 2 + 4);
        /* Stored blocks hold at most 65535 bytes: two of them here. */
        round_trip_one(SEG_STORED, data, 70000);
        round_trip_one(SEG_STORED, data, 65535);
        round_trip_one(SEG_STORED, data, 65536);
        g_rand_free(rand);
}

/* Every byte value, at frequencies that follow the Fibonacci numbers: an unlimited
 * Huffman code would be 25 bits deep, deflate allows 15. */
static void test_length_limit(void) {
        g_autoptr(GByteArray) data = g_byte_array_new();
        guint32 f0 = 1, f1 = 1;

        for (guint v = 0; v < 26; v++) {
                guint32 f = f0;

                for (guint32 i = 0; i < f; i++)
                        g_byte_array_append(data, (const guint8[]) { (guint8) v }, 1);
                f0 = f1;
                f1 += f;
        }
        for (guint v = 26; v < 256; v++)
                g_byte_array_append(data, (const guint8[]) { (guint8) v }, 1);
        round_trip_one(SEG_CODED, data->data, data->len);
        /* And all 256 values equally often: eight bits each, stored instead. */
        g_byte_array_set_size(data, 0);
        for (guint i = 0; i < 4096; i++)
                g_byte_array_append(data, (const guint8[]) { (guint8) i }, 1);
        round_trip_one(SEG_CODED, data->data, data->len);
}

/* Segments as a bundle makes them: stored and coded blocks in turn, at every bit offset,
 * the coded ones of skewed but varied bytes. */
static void test_mixed_segments(void) {
        g_autofree guint8 *data = g_malloc(200000);
        GRand *rand = g_rand_new_with_seed(3);
        Segment segs[40];
        gsize off = 0, total = 0, len;

        for (gsize i = 0; i < 200000; i++)
                data[i] = g_rand_int_range(rand, 0, 10) < 8 ? (guint8) g_rand_int_range(rand, 0, 3) : (guint8) g_rand_int(rand);
        for (guint round = 0; round < 20; round++) {
                for (guint i = 0; i < G_N_ELEMENTS(segs); i++) {
                        gsize n = (gsize) g_rand_int_range(rand, 0, i % 7 == 0 ? 70000 : 3000);

                        n = MIN(n, 200000 - off);
                        segs[i] = (Segment) { g_rand_boolean(rand) ? SEG_CODED : SEG_STORED, data + off, n };
                        off = (off + n) % 100000;
                        total += n;
                }
                len = check_round_trip(segs, G_N_ELEMENTS(segs));
                g_assert_cmpuint(len, >, 0);
        }
        g_assert_cmpuint(total, >, 0);
        g_rand_free(rand);
}

/* Deflates @data with @spans through deflate_spans() into exactly deflate_bound() bytes
 * and checks zlib's inflate of it. Returns the stream's length. */
static gsize spans_round_trip(const guint8 *data, gsize len, const DeflateSpan *spans, gsize n) {
        g_autoptr(GBytes) back = NULL;
        g_autofree guint8 *out = NULL;
        gsize bound = deflate_bound(len, 2 * n + 1), zlen;
        DeflateStream s;

        out = g_malloc(bound);
        deflate_begin(&s, out);
        deflate_spans(&s, data, len, spans, n);
        zlen = deflate_end(&s);
        g_assert_cmpuint(zlen, <=, bound);
        back = tb_zlib_inflate_or_fail(out, zlen);
        g_assert_cmpmem(g_bytes_get_data(back, NULL), g_bytes_get_size(back), data, len);
        return zlen;
}

/* A timestamp column as a storm makes it: deltas of 20,000-24,000 ns, 3-byte varints
 * whose last byte is constant. A literals span (no try at matches) gets a code of its
 * own and comes to under 3/4 of the stored size; a literals span of bytes that would
 * have made matches, or of random bytes, still round-trips and is never larger than
 * storing. */
static void test_literal_spans(void) {
        g_autofree guint8 *data = g_malloc(30000);
        GRand *rand = g_rand_new_with_seed(6);
        gsize len = 0, stored, coded;

        while (len + 3 <= 30000) {
                guint32 delta = (guint32) g_rand_int_range(rand, 20000, 24000);

                data[len++] = (guint8) (0x80 | (delta & 0x7f));
                data[len++] = (guint8) (0x80 | ((delta >> 7) & 0x7f));
                data[len++] = (guint8) (delta >> 14);
        }
        stored = spans_round_trip(data, len, NULL, 0);
        coded = spans_round_trip(data, len, (const DeflateSpan[]) { { 0, len, .literals = true } }, 1);
        g_test_message("3-byte deltas: %zu bytes stored, %zu coded", stored, coded);
        g_assert_cmpuint(coded, <, stored * 3 / 4);
        /* Beside columns with matches, at odd bit offsets. */
        memset(data, 120, 1001);
        spans_round_trip(data, len,
                         (const DeflateSpan[]) { { 0, 1001, false }, { 1001, 5000, true }, { 5003, 9001, true },
                                                 { 9001, 9500, false } },
                         4);
        memset(data, 7, len);
        coded = spans_round_trip(data, len, (const DeflateSpan[]) { { 0, len, .literals = true } }, 1);
        g_assert_cmpuint(coded, <, len / 4);
        for (gsize i = 0; i < len; i++)
                data[i] = (guint8) g_rand_int(rand);
        coded = spans_round_trip(data, len, (const DeflateSpan[]) { { 0, len, .literals = true } }, 1);
        g_assert_cmpuint(coded, <=, spans_round_trip(data, len, NULL, 0));
        g_rand_free(rand);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/deflate/adler32", test_adler32);
        g_test_add_func("/deflate/empty", test_empty);
        g_test_add_func("/deflate/column-values", test_column_values);
        g_test_add_func("/deflate/short-matches", test_short_matches);
        g_test_add_func("/deflate/random-is-stored", test_random_is_stored);
        g_test_add_func("/deflate/length-limit", test_length_limit);
        g_test_add_func("/deflate/mixed-segments", test_mixed_segments);
        g_test_add_func("/deflate/literal-spans", test_literal_spans);
        return g_test_run();
}
