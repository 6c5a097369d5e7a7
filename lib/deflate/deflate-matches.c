/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Short-distance matches with the fixed code.
 *
 * A column of a storm repeats with a short period: a constant priority, states and comm
 * indexes that alternate, pids that cycle through a few threads. Matches at distances of
 * 1 to 8 bytes, found by comparing words, in a block with deflate's fixed code (no table
 * to count, build or send), take such a column to a few bits per 258 bytes at a cost of
 * well under an instruction per byte.
 */
#include <string.h>

#include "deflate-local.h"
#include "macro.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

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
void deflate_fixed_tables_init(void) {
        static const uint16_t length_base[] = { 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31,
                                                35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258 };
        static const uint8_t length_extra[] = { 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2,
                                                3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0 };

        for (unsigned v = 0; v < 256; v++)
                fixed_literal[v] = v < 144 ? bit_string(deflate_reverse_bits(0x30 + v, 8), 8) :
                                             bit_string(deflate_reverse_bits(0x190 + v - 144, 9), 9);
        for (unsigned c = 0; c < ELEMENTSOF(length_base); c++) {
                unsigned symbol = 257 + c, end = c + 1 < ELEMENTSOF(length_base) ? length_base[c + 1] : MATCH_MAX + 1;
                /* Symbols 257-279 have 7-bit codes from 0, 280-287 8-bit ones from 0xc0. */
                uint32_t code = symbol < 280 ? deflate_reverse_bits(symbol - 256, 7) : deflate_reverse_bits(0xc0 + symbol - 280, 8);
                unsigned code_bits = symbol < 280 ? 7 : 8;

                for (unsigned l = length_base[c]; l < end; l++)
                        fixed_length[l] = bit_string(code | (l - length_base[c]) << code_bits, code_bits + length_extra[c]);
        }
        /* Distance codes 0-3 are 1-4, 4 is 5-6 and 5 is 7-8 (one extra bit); 5 bits each. */
        for (unsigned d = 1; d <= SHORT_DISTANCE_MAX; d++) {
                unsigned code = d <= 4 ? d - 1 : d <= 6 ? 4 : 5;

                fixed_distance[d] = d <= 4 ? bit_string(deflate_reverse_bits(code, 5), 5) :
                                             bit_string(deflate_reverse_bits(code, 5) | ((d - 1) & 1) << 5, 6);
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
bool deflate_put_short_matches(DeflateStream *s, const uint8_t *data, size_t len) {
        DeflateStream start = *s;
        uint8_t *limit = s->out + deflate_stored_bits(len) / 8;
        size_t last = 1;
        bool probed = false;

        deflate_put_block_header(s, false, BLOCK_FIXED);
        for (size_t i = 0; i < len;) {
                size_t n = best_match(data, i, MIN(len - i, (size_t) MATCH_MAX), &last);
                if (n > 0) {
                        uint32_t l = fixed_length[n], d = fixed_distance[last];

                        /* At most 13 + 6 bits: the pair in one put. */
                        deflate_put_bits(s, string_bits(l) | string_bits(d) << string_count(l), string_count(l) + string_count(d));
                        i += n;
                } else
                        deflate_put_string(s, fixed_literal[data[i++]]);
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
        deflate_put_bits(s, 0, 7);      /* end of block: 256 is seven zero bits */
        return true;
}
