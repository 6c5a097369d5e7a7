/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "deflate.h"
#include "macro.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* RFC 1950: CM 8 (deflate), CINFO 7 (32 KiB window), FLEVEL 0, FCHECK making it a
 * multiple of 31. */
#define ZLIB_CMF 0x78
#define ZLIB_FLG 0x01
#define ADLER_MOD 65521u
/* The most bytes whose sums fit in 32 bits before a reduction (zlib's NMAX). */
#define ADLER_BLOCK 5552u

#define STORED_MAX 65535u
#define N_LITERALS 257u         /* 0..255 and end-of-block: dynamic blocks hold literals only */
#define END_OF_BLOCK 256u
#define MAX_CODE_BITS 15u
#define MAX_CODE_LENGTH_BITS 7u
#define N_CODE_LENGTH_SYMBOLS 19u
/* The shortest segment given a Huffman code of its own. */
#define CODED_MIN 128u

enum {
        BLOCK_STORED = 0,
        BLOCK_FIXED = 1,
        BLOCK_DYNAMIC = 2,
};

/* The order in which a dynamic block sends the code lengths' own code (RFC 1951 3.2.7). */
static const uint8_t code_length_order[N_CODE_LENGTH_SYMBOLS] = {
        16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15,
};

#ifdef __SSE2__
/* Adds @n_blocks blocks of 16 bytes to the sums: a gains each byte; b gains, per block,
 * 16 times a as it was before it plus each byte weighted by how many follow it (16..1).
 * At most ADLER_BLOCK bytes, so that no lane overflows before the caller reduces. */
static void adler_blocks_sse2(uint32_t *a, uint32_t *b, const uint8_t *p, size_t n_blocks) {
        const __m128i zero = _mm_setzero_si128();
        const __m128i weights_lo = _mm_setr_epi16(16, 15, 14, 13, 12, 11, 10, 9);
        const __m128i weights_hi = _mm_setr_epi16(8, 7, 6, 5, 4, 3, 2, 1);
        __m128i sums = zero, sums_before = zero, weighted = zero;
        uint64_t s, before, w;

        for (size_t k = 0; k < n_blocks; k++, p += 16) {
                __m128i x = _mm_loadu_si128((const __m128i *) p);

                sums_before = _mm_add_epi32(sums_before, sums);
                sums = _mm_add_epi32(sums, _mm_sad_epu8(x, zero));
                weighted = _mm_add_epi32(weighted, _mm_madd_epi16(_mm_unpacklo_epi8(x, zero), weights_lo));
                weighted = _mm_add_epi32(weighted, _mm_madd_epi16(_mm_unpackhi_epi8(x, zero), weights_hi));
        }
        /* psadbw leaves its two sums in the low halves of the 64-bit lanes. */
        s = (uint64_t) (uint32_t) _mm_cvtsi128_si32(sums) + (uint32_t) _mm_cvtsi128_si32(_mm_srli_si128(sums, 8));
        before = (uint64_t) (uint32_t) _mm_cvtsi128_si32(sums_before) +
                 (uint32_t) _mm_cvtsi128_si32(_mm_srli_si128(sums_before, 8));
        weighted = _mm_add_epi32(weighted, _mm_srli_si128(weighted, 8));
        weighted = _mm_add_epi32(weighted, _mm_srli_si128(weighted, 4));
        w = (uint32_t) _mm_cvtsi128_si32(weighted);
        *b = (uint32_t) ((*b + 16 * ((uint64_t) n_blocks * *a + before) + w) % ADLER_MOD);
        *a = (uint32_t) ((*a + s) % ADLER_MOD);
}
#endif

uint32_t adler32_update(uint32_t adler, const uint8_t *data, size_t len) {
        uint32_t a = adler & 0xffff, b = adler >> 16;

        while (len > 0) {
                size_t n = MIN(len, (size_t) ADLER_BLOCK);

                len -= n;
#ifdef __SSE2__
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

static inline void put_le32(uint8_t *p, uint32_t v) {
        p[0] = (uint8_t) v;
        p[1] = (uint8_t) (v >> 8);
        p[2] = (uint8_t) (v >> 16);
        p[3] = (uint8_t) (v >> 24);
}

/* @n <= 32 bits; fewer than 32 stay pending afterwards. */
static inline void put_bits(DeflateStream *s, uint32_t v, unsigned n) {
        s->bits |= (uint64_t) v << s->n_bits;
        s->n_bits += n;
        if (s->n_bits >= 32) {
                put_le32(s->out, (uint32_t) s->bits);
                s->out += 4;
                s->bits >>= 32;
                s->n_bits -= 32;
        }
}

/* A code, bit-reversed for the LSB-first stream, with its extra bits after it: the bits
 * in the low 24, their count above. Every code table here holds these. */
static inline uint32_t bit_string(uint32_t bits, unsigned n) {
        return bits | (uint32_t) n << 24;
}

static inline uint32_t string_bits(uint32_t c) {
        return c & 0xffffff;
}

static inline unsigned string_count(uint32_t c) {
        return c >> 24;
}

static inline void put_string(DeflateStream *s, uint32_t c) {
        put_bits(s, string_bits(c), string_count(c));
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

static inline void put_block_header(DeflateStream *s, bool final, unsigned type) {
        put_bits(s, (final ? 1u : 0u) | (type << 1), 3);
}

/* The fixed code's tables (short-distance matches, below), made once. */
static pthread_once_t fixed_once = PTHREAD_ONCE_INIT;
static void fixed_tables_init(void);

void deflate_begin(DeflateStream *s, uint8_t *out) {
        assert(s);
        assert(out);

        (void) pthread_once(&fixed_once, fixed_tables_init);
        *s = (DeflateStream) { .start = out, .out = out, .adler = 1 };
        *s->out++ = ZLIB_CMF;
        *s->out++ = ZLIB_FLG;
}

static void put_stored(DeflateStream *s, const uint8_t *data, size_t len) {
        while (len > 0) {
                uint16_t n = (uint16_t) MIN(len, (size_t) STORED_MAX);

                put_block_header(s, false, BLOCK_STORED);
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

/* The most bits put_stored() takes for @len bytes, whatever the bit position. */
static uint64_t stored_bits(size_t len) {
        return (uint64_t) (len + STORED_MAX - 1) / STORED_MAX * (3 + 7 + 32) + 8 * (uint64_t) len;
}

void deflate_stored(DeflateStream *s, const uint8_t *data, size_t len) {
        assert(s);
        assert(data || len == 0);

        s->adler = adler32_update(s->adler, data, len);
        put_stored(s, data, len);
}

/* ---- Huffman codes -------------------------------------------------------------------- */

typedef struct Leaf {
        uint64_t weight;
        uint16_t symbol;
} Leaf;

static int leaf_compare(const void *a, const void *b) {
        const Leaf *x = a, *y = b;

        if (x->weight != y->weight)
                return x->weight < y->weight ? -1 : 1;
        return (int) x->symbol - (int) y->symbol;
}

static void sort_leaves(Leaf *l, unsigned n) {
        /* A column has a handful of distinct bytes: insertion sort, unless there are many. */
        if (n > 32) {
                qsort(l, n, sizeof(Leaf), leaf_compare);
                return;
        }
        for (unsigned i = 1; i < n; i++) {
                Leaf x = l[i];
                unsigned j = i;

                for (; j > 0 && leaf_compare(&l[j - 1], &x) > 0; j--)
                        l[j] = l[j - 1];
                l[j] = x;
        }
}

/* Huffman code lengths of @n >= 2 sorted leaves, into @depth by leaf; returns the longest.
 * Two queues: leaves in order, and inner nodes, which are made in order of weight. */
static unsigned huffman_depths(const Leaf *leaf, unsigned n, uint8_t *depth) {
        uint64_t inner_weight[N_LITERALS];
        uint16_t leaf_parent[N_LITERALS], inner_parent[N_LITERALS];
        uint8_t inner_depth[N_LITERALS];
        unsigned next_leaf = 0, next_inner = 0, longest = 0;

        for (unsigned made = 0; made < n - 1; made++) {
                uint64_t w = 0;

                for (unsigned pick = 0; pick < 2; pick++) {
                        if (next_leaf < n && (next_inner >= made || leaf[next_leaf].weight <= inner_weight[next_inner])) {
                                w += leaf[next_leaf].weight;
                                leaf_parent[next_leaf++] = (uint16_t) made;
                        } else {
                                w += inner_weight[next_inner];
                                inner_parent[next_inner++] = (uint16_t) made;
                        }
                }
                inner_weight[made] = w;
        }
        /* The root is the last inner node; every parent comes after its children. */
        inner_depth[n - 2] = 0;
        for (unsigned i = n - 2; i-- > 0;)
                inner_depth[i] = (uint8_t) (inner_depth[inner_parent[i]] + 1);
        for (unsigned i = 0; i < n; i++) {
                depth[i] = (uint8_t) (inner_depth[leaf_parent[i]] + 1);
                longest = MAX(longest, (unsigned) depth[i]);
        }
        return longest;
}

/* Code lengths for the @n symbols of @freq (0: not used), none longer than @limit.
 * At least two symbols must be used: a code of one symbol is not complete, and zlib
 * takes only complete codes here. */
static void build_lengths(const uint32_t *freq, unsigned n, unsigned limit, uint8_t *lengths) {
        Leaf leaf[N_LITERALS];
        uint8_t depth[N_LITERALS];
        unsigned k = 0;

        assert(n <= N_LITERALS);
        memset(lengths, 0, n);
        for (unsigned i = 0; i < n; i++)
                if (freq[i] > 0)
                        leaf[k++] = (Leaf) { .weight = freq[i], .symbol = (uint16_t) i };
        assert(k >= 2);
        for (;;) {
                sort_leaves(leaf, k);
                if (huffman_depths(leaf, k, depth) <= limit)
                        break;
                /* Too deep: flatten the weights and build again; equal weights give a
                 * balanced tree, so this ends (9 bits for 257 symbols). */
                for (unsigned i = 0; i < k; i++)
                        leaf[i].weight = (leaf[i].weight + 1) / 2;
        }
        for (unsigned i = 0; i < k; i++)
                lengths[leaf[i].symbol] = depth[i];
}

static uint32_t reverse_bits(uint32_t v, unsigned n) {
        uint32_t r = 0;

        for (unsigned i = 0; i < n; i++, v >>= 1)
                r = (r << 1) | (v & 1);
        return r;
}

/* RFC 1951 3.2.2: canonical codes from lengths, as bit strings (0: no code). */
static void canonical_codes(const uint8_t *lengths, unsigned n, uint32_t *codes) {
        uint32_t count[MAX_CODE_BITS + 1] = {}, next[MAX_CODE_BITS + 1];
        uint32_t code = 0;

        for (unsigned i = 0; i < n; i++)
                count[lengths[i]]++;
        count[0] = 0;
        for (unsigned bits = 1; bits <= MAX_CODE_BITS; bits++) {
                code = (code + count[bits - 1]) << 1;
                next[bits] = code;
        }
        for (unsigned i = 0; i < n; i++)
                codes[i] = lengths[i] ? bit_string(reverse_bits(next[lengths[i]]++, lengths[i]), lengths[i]) : 0;
}

/* The code lengths of a block, run-length coded with symbols 16-18 (RFC 1951 3.2.7). */
typedef struct LengthRun {
        uint8_t symbol, extra, extra_bits;
} LengthRun;

static unsigned add_run(LengthRun *runs, unsigned n, uint8_t symbol, unsigned extra, uint8_t extra_bits) {
        runs[n] = (LengthRun) { .symbol = symbol, .extra = (uint8_t) extra, .extra_bits = extra_bits };
        return n + 1;
}

static unsigned run_length_code(const uint8_t *lengths, unsigned n, LengthRun *runs) {
        unsigned k = 0;

        for (unsigned i = 0; i < n;) {
                uint8_t v = lengths[i];
                unsigned run = 1;

                while (i + run < n && lengths[i + run] == v)
                        run++;
                i += run;
                if (v == 0) {
                        for (; run >= 11; run -= MIN(run, 138u))
                                k = add_run(runs, k, 18, MIN(run, 138u) - 11, 7);
                        if (run >= 3) {
                                k = add_run(runs, k, 17, run - 3, 3);
                                run = 0;
                        }
                } else {
                        k = add_run(runs, k, v, 0, 0);
                        run--;
                        for (; run >= 3; run -= MIN(run, 6u))
                                k = add_run(runs, k, 16, MIN(run, 6u) - 3, 2);
                }
                for (; run > 0; run--)
                        k = add_run(runs, k, v, 0, 0);
        }
        return k;
}

typedef struct DynamicHeader {
        LengthRun runs[N_LITERALS + 1];
        unsigned n_runs;
        uint32_t length_codes[N_CODE_LENGTH_SYMBOLS];
        uint8_t length_lengths[N_CODE_LENGTH_SYMBOLS];
        unsigned n_length_lengths;      /* sent, in code_length_order */
        uint64_t bits;
} DynamicHeader;

/* The header of a dynamic block whose literal code has @lengths (and no distance code). */
static void dynamic_header(const uint8_t *lengths, DynamicHeader *h) {
        uint8_t all[N_LITERALS + 1];
        uint32_t freq[N_CODE_LENGTH_SYMBOLS] = {};

        memcpy(all, lengths, N_LITERALS);
        all[N_LITERALS] = 0;            /* one distance code of zero bits: none used */
        h->n_runs = run_length_code(all, N_LITERALS + 1, h->runs);
        for (unsigned i = 0; i < h->n_runs; i++)
                freq[h->runs[i].symbol]++;
        /* A single symbol would make an incomplete code: give it company. */
        if (h->n_runs > 0 && freq[h->runs[0].symbol] == h->n_runs)
                freq[h->runs[0].symbol == 0 ? 1 : 0] = 1;
        build_lengths(freq, N_CODE_LENGTH_SYMBOLS, MAX_CODE_LENGTH_BITS, h->length_lengths);
        canonical_codes(h->length_lengths, N_CODE_LENGTH_SYMBOLS, h->length_codes);

        h->n_length_lengths = N_CODE_LENGTH_SYMBOLS;
        while (h->n_length_lengths > 4 && h->length_lengths[code_length_order[h->n_length_lengths - 1]] == 0)
                h->n_length_lengths--;
        h->bits = 3 + 5 + 5 + 4 + 3 * (uint64_t) h->n_length_lengths;
        for (unsigned i = 0; i < h->n_runs; i++)
                h->bits += h->length_lengths[h->runs[i].symbol] + h->runs[i].extra_bits;
}

static void put_dynamic_header(DeflateStream *s, const DynamicHeader *h) {
        put_block_header(s, false, BLOCK_DYNAMIC);
        put_bits(s, 0, 5);              /* HLIT: 257 literal/length codes */
        put_bits(s, 0, 5);              /* HDIST: 1 distance code */
        put_bits(s, h->n_length_lengths - 4, 4);
        for (unsigned i = 0; i < h->n_length_lengths; i++)
                put_bits(s, h->length_lengths[code_length_order[i]], 3);
        for (unsigned i = 0; i < h->n_runs; i++) {
                put_string(s, h->length_codes[h->runs[i].symbol]);
                put_bits(s, h->runs[i].extra, h->runs[i].extra_bits);
        }
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
                put_string(s, codes[data[i]]);
        put_string(s, codes[END_OF_BLOCK]);
}

/* ---- short-distance matches with the fixed code --------------------------------------
 *
 * A column of a storm repeats with a short period: a constant priority, states and comm
 * indexes that alternate, pids that cycle through a few threads. Matches at distances of
 * 1 to 8 bytes, found by comparing words, in a block with deflate's fixed code (no table
 * to count, build or send), take such a column to a few bits per 258 bytes at a cost of
 * well under an instruction per byte. */

#define MATCH_MIN 3u
#define MATCH_MAX 258u
#define SHORT_DISTANCE_MAX 8u
/* A match this long is not worth looking past for a longer one at another distance. */
#define MATCH_GOOD 32u
#define PROBE_BYTES 512u

/* The fixed code's bit strings. */
static uint32_t fixed_literal[256];
static uint32_t fixed_length[MATCH_MAX + 1];     /* the length's code and extra bits */
static uint32_t fixed_distance[SHORT_DISTANCE_MAX + 1];

/* RFC 1951 3.2.5 and 3.2.6. */
static void fixed_tables_init(void) {
        static const uint16_t length_base[] = { 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31,
                                                35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258 };
        static const uint8_t length_extra[] = { 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2,
                                                3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0 };

        for (unsigned v = 0; v < 256; v++)
                fixed_literal[v] = v < 144 ? bit_string(reverse_bits(0x30 + v, 8), 8) :
                                             bit_string(reverse_bits(0x190 + v - 144, 9), 9);
        for (unsigned c = 0; c < ELEMENTSOF(length_base); c++) {
                unsigned symbol = 257 + c, end = c + 1 < ELEMENTSOF(length_base) ? length_base[c + 1] : MATCH_MAX + 1;
                /* Symbols 257-279 have 7-bit codes from 0, 280-287 8-bit ones from 0xc0. */
                uint32_t code = symbol < 280 ? reverse_bits(symbol - 256, 7) : reverse_bits(0xc0 + symbol - 280, 8);
                unsigned code_bits = symbol < 280 ? 7 : 8;

                for (unsigned l = length_base[c]; l < end; l++)
                        fixed_length[l] = bit_string(code | (l - length_base[c]) << code_bits, code_bits + length_extra[c]);
        }
        /* Distance codes 0-3 are 1-4, 4 is 5-6 and 5 is 7-8 (one extra bit); 5 bits each. */
        for (unsigned d = 1; d <= SHORT_DISTANCE_MAX; d++) {
                unsigned code = d <= 4 ? d - 1 : d <= 6 ? 4 : 5;

                fixed_distance[d] = d <= 4 ? bit_string(reverse_bits(code, 5), 5) :
                                             bit_string(reverse_bits(code, 5) | ((d - 1) & 1) << 5, 6);
        }
}

static inline uint64_t load64(const uint8_t *p) {
        uint64_t v;

        memcpy(&v, p, sizeof(v));
        return v;
}

/* How many of the @max bytes at @p repeat the bytes @d before them. */
static inline size_t match_length(const uint8_t *p, size_t d, size_t max) {
        const uint8_t *q = p - d;      /* within the data: d is at most the position */
        size_t n = 0;

#ifdef __SSE2__
        for (; n + 16 <= max; n += 16) {
                __m128i x = _mm_loadu_si128((const __m128i *) (p + n)), y = _mm_loadu_si128((const __m128i *) (q + n));
                unsigned differ = (unsigned) _mm_movemask_epi8(_mm_cmpeq_epi8(x, y)) ^ 0xffffu;

                if (differ)
                        return n + (size_t) __builtin_ctz(differ);
        }
#endif
        if (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)
                for (; n + 8 <= max; n += 8) {
                        uint64_t x = load64(p + n) ^ load64(q + n);

                        if (x)
                                return n + (size_t) __builtin_ctzll(x) / 8;
                }
        while (n < max && p[n] == q[n])
                n++;
        return n;
}

/* The longest match at @i of at least MATCH_MIN bytes, trying *@last's distance first;
 * 0 if there is none. */
static inline size_t best_match(const uint8_t *data, size_t i, size_t max, size_t *last) {
        size_t best = 0, best_d = *last;

        if (i >= *last)
                best = match_length(data + i, *last, max);
        if (best < MATCH_GOOD && best < max)
                for (size_t d = 1; d <= MIN(i, (size_t) SHORT_DISTANCE_MAX); d++) {
                        size_t n = d == *last ? 0 : match_length(data + i, d, max);

                        if (n > best) {
                                best = n;
                                best_d = d;
                        }
                }
        if (best < MATCH_MIN)
                return 0;
        *last = best_d;
        return best;
}

static inline uint64_t bits_since(const DeflateStream *s, const DeflateStream *start) {
        return (uint64_t) (s->out - start->out) * 8 + s->n_bits - start->n_bits;
}

/* Writes @data as a fixed block of short matches. False, with nothing written, if its
 * first PROBE_BYTES do not come to a quarter of their size (the column does not repeat
 * itself: literals with a code of their own will do better), or if the whole would not
 * be smaller than storing it. */
static bool put_short_matches(DeflateStream *s, const uint8_t *data, size_t len) {
        DeflateStream start = *s;
        uint8_t *limit = s->out + stored_bits(len) / 8;
        size_t last = 1;
        bool probed = false;

        put_block_header(s, false, BLOCK_FIXED);
        for (size_t i = 0; i < len;) {
                size_t n = best_match(data, i, MIN(len - i, (size_t) MATCH_MAX), &last);
                if (n > 0) {
                        uint32_t l = fixed_length[n], d = fixed_distance[last];

                        /* At most 13 + 6 bits: the pair in one put. */
                        put_bits(s, string_bits(l) | string_bits(d) << string_count(l), string_count(l) + string_count(d));
                        i += n;
                } else
                        put_string(s, fixed_literal[data[i++]]);
                if (!probed && i >= MIN(len, (size_t) PROBE_BYTES)) {
                        probed = true;
                        if (bits_since(s, &start) * 4 > 8 * (uint64_t) i) {
                                *s = start;
                                return false;
                        }
                }
                if (s->out >= limit) {
                        *s = start;
                        return false;
                }
        }
        put_bits(s, 0, 7);      /* end of block: 256 is seven zero bits */
        return true;
}

/* deflate_coded() but for the checksum. */
static void put_coded(DeflateStream *s, const uint8_t *data, size_t len) {
        uint32_t freq[N_LITERALS], codes[N_LITERALS];
        uint8_t lengths[N_LITERALS];
        DynamicHeader h;
        uint64_t bits;

        if (len == 0)
                return;
        /* A column that repeats itself: matches. */
        if (put_short_matches(s, data, len))
                return;
        /* A code's own description takes 15-30 bytes: not worth making for a few events
         * (a quiet machine's bundles), whose counting and building cost more than it saves. */
        if (len < CODED_MIN) {
                put_stored(s, data, len);
                return;
        }
        count_bytes(data, len, freq);
        build_lengths(freq, N_LITERALS, MAX_CODE_BITS, lengths);
        dynamic_header(lengths, &h);
        bits = h.bits + lengths[END_OF_BLOCK];
        for (unsigned v = 0; v < 256; v++)
                bits += (uint64_t) freq[v] * lengths[v];
        /* Within deflate_bound(): never more than storing would take. */
        if (bits >= stored_bits(len)) {
                put_stored(s, data, len);
                return;
        }
        canonical_codes(lengths, N_LITERALS, codes);
        put_dynamic_header(s, &h);
        put_literals(s, data, len, codes);
}

void deflate_coded(DeflateStream *s, const uint8_t *data, size_t len) {
        assert(s);
        assert(data || len == 0);

        s->adler = adler32_update(s->adler, data, len);
        put_coded(s, data, len);
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
                put_coded(s, data + coded[i].start, coded[i].end - coded[i].start);
                at = coded[i].end;
        }
        put_stored(s, data + at, len - at);
}

size_t deflate_end(DeflateStream *s) {
        assert(s);

        /* The last block is an empty one with the fixed code, whose end-of-block is 7
         * zero bits: the blocks before it did not know they were not the last. */
        put_block_header(s, true, BLOCK_FIXED);
        put_bits(s, 0, 7);
        align_to_byte(s);
        *s->out++ = (uint8_t) (s->adler >> 24);
        *s->out++ = (uint8_t) (s->adler >> 16);
        *s->out++ = (uint8_t) (s->adler >> 8);
        *s->out++ = (uint8_t) s->adler;
        return (size_t) (s->out - s->start);
}
