/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The zlib stream: its header and checksum, stored blocks, and the coded segments'
 * choice between short matches (deflate-matches.c), literals with a Huffman code of
 * their own (deflate-huffman.c) and storing.
 */
#include <assert.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "deflate-local.h"
#include "macro.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

static void put_le32(uint8_t *p, uint32_t v) {
        p[0] = (uint8_t) v;
        p[1] = (uint8_t) (v >> 8);
        p[2] = (uint8_t) (v >> 16);
        p[3] = (uint8_t) (v >> 24);
}

void deflate_put_bits(DeflateStream *s, uint32_t v, unsigned n) {
        s->bits |= (uint64_t) v << s->n_bits;
        s->n_bits += n;
        if (s->n_bits >= 32) {
                put_le32(s->out, (uint32_t) s->bits);
                s->out += 4;
                s->bits >>= 32;
                s->n_bits -= 32;
        }
}

void deflate_put_string(DeflateStream *s, uint32_t c) {
        deflate_put_bits(s, string_bits(c), string_count(c));
}

void deflate_put_block_header(DeflateStream *s, bool final, unsigned type) {
        deflate_put_bits(s, (final ? 1u : 0u) | (type << 1), 3);
}

/* The most bits a stored copy of @len bytes takes, whatever the bit position. */
uint64_t deflate_stored_bits(size_t len) {
        return (uint64_t) (len + STORED_MAX - 1) / STORED_MAX * (3 + 7 + 32) + 8 * (uint64_t) len;
}

/* RFC 1950: CM 8 (deflate), CINFO 7 (32 KiB window), FLEVEL 0, FCHECK making it a
 * multiple of 31. */
#define ZLIB_CMF 0x78
#define ZLIB_FLG 0x01
#define ADLER_MOD 65521u
/* The most bytes whose sums fit in 32 bits before a reduction (zlib's NMAX). */
#define ADLER_BLOCK 5552u

/* The shortest segment given a Huffman code of its own. */
#define CODED_MIN 128u

#ifdef __SSE2__
/* Folds the lanes of a vector pass over @n_steps pieces of @step bytes into the sums: a
 * gains every byte (@sums); b gains, per piece, @step times a as it was before it
 * (@sums_before holds the running @sums before each piece) plus the weighted bytes. */
static void adler_fold(uint32_t *a, uint32_t *b, __m128i sums, __m128i sums_before, __m128i weighted,
                       size_t n_steps, unsigned step) {
        uint64_t s, before, w;

        /* psadbw leaves its two sums in the low halves of the 64-bit lanes. */
        s = (uint64_t) (uint32_t) _mm_cvtsi128_si32(sums) + (uint32_t) _mm_cvtsi128_si32(_mm_srli_si128(sums, 8));
        before = (uint64_t) (uint32_t) _mm_cvtsi128_si32(sums_before) +
                 (uint32_t) _mm_cvtsi128_si32(_mm_srli_si128(sums_before, 8));
        weighted = _mm_add_epi32(weighted, _mm_srli_si128(weighted, 8));
        weighted = _mm_add_epi32(weighted, _mm_srli_si128(weighted, 4));
        w = (uint32_t) _mm_cvtsi128_si32(weighted);
        *b = (uint32_t) ((*b + step * ((uint64_t) n_steps * *a + before) + w) % ADLER_MOD);
        *a = (uint32_t) ((*a + s) % ADLER_MOD);
}

/* Adds @n_blocks blocks of 16 bytes to the sums: a gains each byte; b gains, per block,
 * 16 times a as it was before it plus each byte weighted by how many follow it (16..1).
 * At most ADLER_BLOCK bytes, so that no lane overflows before the caller reduces. */
static void adler_blocks_sse2(uint32_t *a, uint32_t *b, const uint8_t *p, size_t n_blocks) {
        const __m128i zero = _mm_setzero_si128();
        const __m128i weights_lo = _mm_setr_epi16(16, 15, 14, 13, 12, 11, 10, 9);
        const __m128i weights_hi = _mm_setr_epi16(8, 7, 6, 5, 4, 3, 2, 1);
        __m128i sums = zero, sums_before = zero, weighted = zero;

        for (size_t k = 0; k < n_blocks; k++, p += 16) {
                __m128i x = _mm_loadu_si128((const __m128i *) p);

                sums_before = _mm_add_epi32(sums_before, sums);
                sums = _mm_add_epi32(sums, _mm_sad_epu8(x, zero));
                weighted = _mm_add_epi32(weighted, _mm_madd_epi16(_mm_unpacklo_epi8(x, zero), weights_lo));
                weighted = _mm_add_epi32(weighted, _mm_madd_epi16(_mm_unpackhi_epi8(x, zero), weights_hi));
        }
        adler_fold(a, b, sums, sums_before, weighted, n_blocks, 16);
}

/* The same over @n_pairs pieces of 32 bytes, each byte weighted by how many follow it in
 * its piece (32..1): the loop's own instructions and the running sums' adds are paid once
 * per 32 bytes (callgrind: 183.2 -> 181.3 instructions per event with --deflate). */
static void adler_pairs_sse2(uint32_t *a, uint32_t *b, const uint8_t *p, size_t n_pairs) {
        const __m128i zero = _mm_setzero_si128();
        const __m128i w0 = _mm_setr_epi16(32, 31, 30, 29, 28, 27, 26, 25);
        const __m128i w1 = _mm_setr_epi16(24, 23, 22, 21, 20, 19, 18, 17);
        const __m128i w2 = _mm_setr_epi16(16, 15, 14, 13, 12, 11, 10, 9);
        const __m128i w3 = _mm_setr_epi16(8, 7, 6, 5, 4, 3, 2, 1);
        __m128i sums = zero, sums_before = zero, weighted = zero;

        for (size_t k = 0; k < n_pairs; k++, p += 32) {
                __m128i x = _mm_loadu_si128((const __m128i *) p), y = _mm_loadu_si128((const __m128i *) (p + 16));

                sums_before = _mm_add_epi32(sums_before, sums);
                sums = _mm_add_epi32(sums, _mm_add_epi32(_mm_sad_epu8(x, zero), _mm_sad_epu8(y, zero)));
                weighted = _mm_add_epi32(weighted,
                                         _mm_add_epi32(_mm_madd_epi16(_mm_unpacklo_epi8(x, zero), w0),
                                                       _mm_madd_epi16(_mm_unpackhi_epi8(x, zero), w1)));
                weighted = _mm_add_epi32(weighted,
                                         _mm_add_epi32(_mm_madd_epi16(_mm_unpacklo_epi8(y, zero), w2),
                                                       _mm_madd_epi16(_mm_unpackhi_epi8(y, zero), w3)));
        }
        adler_fold(a, b, sums, sums_before, weighted, n_pairs, 32);
}
#endif

uint32_t adler32_update(uint32_t adler, const uint8_t *data, size_t len) {
        uint32_t a = adler & 0xffff, b = adler >> 16;

        while (len > 0) {
                size_t n = MIN(len, (size_t) ADLER_BLOCK);

                len -= n;
#ifdef __SSE2__
                adler_pairs_sse2(&a, &b, data, n / 32);
                data += n / 32 * 32;
                n %= 32;
                adler_blocks_sse2(&a, &b, data, n / 16);
                data += n / 16 * 16;
                n %= 16;
#endif
                for (; n > 0; n--) {
                        a += *data++;
                        b += a;
                }
                a %= ADLER_MOD;
                b %= ADLER_MOD;
        }
        return (b << 16) | a;
}

size_t deflate_bound(size_t len, size_t n_segments) {
        /* Each segment is at worst stored: a 3-bit header, padding and 4 bytes of lengths
         * per 64 KiB, and a try at matches may write 4 bytes past that before it gives
         * up; then the zlib header, the last block and the checksum. */
        return len + 6 * (len / STORED_MAX) + 10 * n_segments + 16;
}

/* Writes out the pending bits, the last byte padded with zeros. */
static void align_to_byte(DeflateStream *s) {
        while (s->n_bits > 0) {
                *s->out++ = (uint8_t) s->bits;
                s->bits >>= 8;
                s->n_bits = s->n_bits > 8 ? s->n_bits - 8 : 0;
        }
        s->bits = 0;
}

/* The fixed code's tables (deflate-matches.c), made once. */
static pthread_once_t fixed_once = PTHREAD_ONCE_INIT;

void deflate_begin(DeflateStream *s, uint8_t *out) {
        assert(s);
        assert(out);

        (void) pthread_once(&fixed_once, deflate_fixed_tables_init);
        *s = (DeflateStream) { .start = out, .out = out, .adler = 1 };
        *s->out++ = ZLIB_CMF;
        *s->out++ = ZLIB_FLG;
}

static void put_stored(DeflateStream *s, const uint8_t *data, size_t len) {
        while (len > 0) {
                uint16_t n = (uint16_t) MIN(len, (size_t) STORED_MAX);

                deflate_put_block_header(s, false, BLOCK_STORED);
                align_to_byte(s);
                *s->out++ = (uint8_t) n;
                *s->out++ = (uint8_t) (n >> 8);
                *s->out++ = (uint8_t) ~n;
                *s->out++ = (uint8_t) (~n >> 8);
                memcpy(s->out, data, n);
                s->out += n;
                data += n;
                len -= n;
        }
}

void deflate_stored(DeflateStream *s, const uint8_t *data, size_t len) {
        assert(s);
        assert(data || len == 0);

        s->adler = adler32_update(s->adler, data, len);
        put_stored(s, data, len);
}

/* Byte counts in four tables, so that a run of one byte value does not wait on one
 * counter's store and load for each byte. */
static void count_bytes(const uint8_t *data, size_t len, uint32_t freq[static N_LITERALS]) {
        uint32_t part[4][256] = {};
        size_t i = 0;

        for (; i + 4 <= len; i += 4) {
                part[0][data[i]]++;
                part[1][data[i + 1]]++;
                part[2][data[i + 2]]++;
                part[3][data[i + 3]]++;
        }
        for (; i < len; i++)
                part[0][data[i]]++;
        for (unsigned v = 0; v < 256; v++)
                freq[v] = part[0][v] + part[1][v] + part[2][v] + part[3][v];
        freq[END_OF_BLOCK] = 1;
}

static void put_literals(DeflateStream *s, const uint8_t *data, size_t len, const uint32_t *codes) {
        uint64_t bits = s->bits;
        unsigned n_bits = s->n_bits;
        uint8_t *out = s->out;
        size_t i = 0;

        /* Two codes of at most 15 bits on top of fewer than 32 pending fit in 64. */
        for (; i + 2 <= len; i += 2) {
                uint32_t c0 = codes[data[i]], c1 = codes[data[i + 1]];

                bits |= (uint64_t) string_bits(c0) << n_bits;
                n_bits += string_count(c0);
                bits |= (uint64_t) string_bits(c1) << n_bits;
                n_bits += string_count(c1);
                if (n_bits >= 32) {
                        put_le32(out, (uint32_t) bits);
                        out += 4;
                        bits >>= 32;
                        n_bits -= 32;
                }
        }
        s->bits = bits;
        s->n_bits = n_bits;
        s->out = out;
        if (i < len)
                deflate_put_string(s, codes[data[i]]);
        deflate_put_string(s, codes[END_OF_BLOCK]);
}

/* deflate_coded() but for the checksum; @literals skips the try at matches. */
static void put_coded(DeflateStream *s, const uint8_t *data, size_t len, bool literals) {
        uint32_t freq[N_LITERALS], codes[N_LITERALS];
        uint8_t lengths[N_LITERALS];
        DynamicHeader h;
        uint64_t bits;

        if (len == 0)
                return;
        /* A column that repeats itself: matches. */
        if (!literals && deflate_put_short_matches(s, data, len))
                return;
        /* A code's own description takes 15-30 bytes: not worth making for a few events
         * (a quiet machine's bundles), whose counting and building cost more than it saves. */
        if (len < CODED_MIN) {
                put_stored(s, data, len);
                return;
        }
        count_bytes(data, len, freq);
        deflate_build_lengths(freq, N_LITERALS, MAX_CODE_BITS, lengths);
        deflate_dynamic_header(lengths, &h);
        bits = h.bits + lengths[END_OF_BLOCK];
        for (unsigned v = 0; v < 256; v++)
                bits += (uint64_t) freq[v] * lengths[v];
        /* Within deflate_bound(): never more than storing would take. */
        if (bits >= deflate_stored_bits(len)) {
                put_stored(s, data, len);
                return;
        }
        deflate_canonical_codes(lengths, N_LITERALS, codes);
        deflate_put_dynamic_header(s, &h);
        put_literals(s, data, len, codes);
}

void deflate_coded(DeflateStream *s, const uint8_t *data, size_t len) {
        assert(s);
        assert(data || len == 0);

        s->adler = adler32_update(s->adler, data, len);
        put_coded(s, data, len, /* literals= */ false);
}

void deflate_spans(DeflateStream *s, const uint8_t *data, size_t len, const DeflateSpan *coded, size_t n_coded) {
        size_t at = 0;

        assert(s);
        assert(data || len == 0);

        /* One checksum pass over the whole: per segment, the short ones would miss the
         * vector loop. */
        s->adler = adler32_update(s->adler, data, len);
        for (size_t i = 0; i < n_coded; i++) {
                assert(coded[i].start >= at && coded[i].start <= coded[i].end && coded[i].end <= len);
                put_stored(s, data + at, coded[i].start - at);
                put_coded(s, data + coded[i].start, coded[i].end - coded[i].start, coded[i].literals);
                at = coded[i].end;
        }
        put_stored(s, data + at, len - at);
}

size_t deflate_end(DeflateStream *s) {
        assert(s);

        /* The last block is an empty one with the fixed code, whose end-of-block is 7
         * zero bits: the blocks before it did not know they were not the last. */
        deflate_put_block_header(s, true, BLOCK_FIXED);
        deflate_put_bits(s, 0, 7);
        align_to_byte(s);
        *s->out++ = (uint8_t) (s->adler >> 24);
        *s->out++ = (uint8_t) (s->adler >> 16);
        *s->out++ = (uint8_t) (s->adler >> 8);
        *s->out++ = (uint8_t) s->adler;
        return (size_t) (s->out - s->start);
}
