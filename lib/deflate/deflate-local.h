/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The deflate writer's internals, shared by its files (lib/include/deflate.h is the
 * interface):
 *   deflate.c          the zlib stream: header, stored blocks, literal blocks, checksum
 *   deflate-huffman.c  Huffman codes from byte counts, and a dynamic block's header
 *   deflate-matches.c  short-distance matches in blocks with the fixed code
 * The bit writer is in deflate.c.
 */
#include <stdbool.h>
#include <stdint.h>

#include "deflate.h"

#define STORED_MAX 65535u
#define N_LITERALS 257u         /* 0..255 and end-of-block: dynamic blocks hold literals only */
#define END_OF_BLOCK 256u
#define MAX_CODE_BITS 15u
#define MAX_CODE_LENGTH_BITS 7u
#define N_CODE_LENGTH_SYMBOLS 19u

enum {
        BLOCK_STORED = 0,
        BLOCK_FIXED = 1,
        BLOCK_DYNAMIC = 2,
};

/* deflate.c: the bit writer, which every block writes through. @n <= 32 bits; fewer than
 * 32 stay pending afterwards. A call, not inline: that cost 0.6% of parse-bench --deflate's
 * instructions per event (callgrind, pages of a sched storm: 214.9 -> 216.1). */
void deflate_put_bits(DeflateStream *s, uint32_t v, unsigned n);

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

/* A code with its extra bits, as bit_string() made it. */
void deflate_put_string(DeflateStream *s, uint32_t c);


/* deflate.c: a block's 3-bit header, and the most bits a stored copy of @len bytes takes
 * whatever the bit position. Once per block, so calls. */
void deflate_put_block_header(DeflateStream *s, bool final, unsigned type);
uint64_t deflate_stored_bits(size_t len);

/* ---- deflate-huffman.c ---- */

/* The low @n (<= 16) bits of @v mirrored: inline, as the canonical codes call it for
 * every symbol of every block. As a call into deflate-huffman.c it cost 0.8% of
 * parse-bench --deflate's instructions per event (callgrind, pages of a sched storm:
 * 216.2 -> 218.0), on top of the bit writer's 0.6%. */
static inline uint32_t deflate_reverse_bits(uint32_t v, unsigned n) {
        /* The low 16 bits mirrored by halves, then the @n wanted moved down. */
        v = ((v >> 1) & 0x5555) | ((v & 0x5555) << 1);
        v = ((v >> 2) & 0x3333) | ((v & 0x3333) << 2);
        v = ((v >> 4) & 0x0f0f) | ((v & 0x0f0f) << 4);
        v = ((v >> 8) & 0x00ff) | ((v & 0x00ff) << 8);
        return n == 0 ? 0 : v >> (16 - n);
}

/* Code lengths for the @n symbols of @freq (0: not used), none longer than @limit.
 * At least two symbols must be used: a code of one symbol is not complete, and zlib
 * takes only complete codes here. */
void deflate_build_lengths(const uint32_t *freq, unsigned n, unsigned limit, uint8_t *lengths);
/* RFC 1951 3.2.2: canonical codes from lengths, as bit strings (0: no code). */
void deflate_canonical_codes(const uint8_t *lengths, unsigned n, uint32_t *codes);

/* The code lengths of a block, run-length coded with symbols 16-18 (RFC 1951 3.2.7). */
typedef struct LengthRun {
        uint8_t symbol, extra, extra_bits;
} LengthRun;

typedef struct DynamicHeader {
        LengthRun runs[N_LITERALS + 1];
        unsigned n_runs;
        uint32_t length_codes[N_CODE_LENGTH_SYMBOLS];
        uint8_t length_lengths[N_CODE_LENGTH_SYMBOLS];
        unsigned n_length_lengths;      /* sent, in code_length_order */
        uint64_t bits;
} DynamicHeader;

/* The header of a dynamic block whose literal code has @lengths (and no distance code);
 * h->bits is its size. */
void deflate_dynamic_header(const uint8_t *lengths, DynamicHeader *h);
void deflate_put_dynamic_header(DeflateStream *s, const DynamicHeader *h);

/* ---- deflate-matches.c ---- */

/* The fixed code's tables, made once (deflate_begin()). */
void deflate_fixed_tables_init(void);
/* Writes @data as a fixed block of short matches. False, with nothing written, when
 * literals with a code of their own or storing would do better. */
bool deflate_put_short_matches(DeflateStream *s, const uint8_t *data, size_t len);
