/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A zlib stream (RFC 1950 around RFC 1951 deflate) written without a general string
 * search: Perfetto's compressed_packets, which trace_processor inflates with zlib, at a
 * small fraction of zlib's cost. The caller cuts its data into segments and says which
 * ones are worth coding: the columns of a bundle, whose values are few and repeat. Such a
 * segment becomes matches at distances of 1 to 8 bytes in a block with deflate's fixed
 * code when it repeats itself with a short period (a storm's columns do, a few bits per
 * 258 bytes), else literals with a Huffman code made for that segment alone, else it is
 * stored, whichever is not larger than storing. The other segments are stored as they are.
 *
 * The output goes into memory the caller sized with deflate_bound().
 */

typedef struct DeflateStream {
        uint8_t *start, *out;
        uint64_t bits;          /* not yet written, lowest first */
        unsigned n_bits;
        uint32_t adler;         /* of everything fed so far */
} DeflateStream;

/* At most this many bytes for @len input bytes fed in @n_segments calls. */
size_t deflate_bound(size_t len, size_t n_segments);

void deflate_begin(DeflateStream *s, uint8_t *out);
/* Stored as it is. */
void deflate_stored(DeflateStream *s, const uint8_t *data, size_t len);
/* Literals with a code for this segment, or stored when that is not smaller. */
void deflate_coded(DeflateStream *s, const uint8_t *data, size_t len);

/* A byte range [start, end) of some data to be coded. @literals: its bytes do not repeat
 * in runs (timestamp deltas), so the try at short matches is skipped: straight to a
 * Huffman code of its own. */
typedef struct DeflateSpan {
        size_t start, end;
        bool literals;
} DeflateSpan;

/* @data with the @n_coded ascending, disjoint spans coded, each on its own, and what lies
 * between them stored: 2 * n_coded + 1 segments for deflate_bound(). */
void deflate_spans(DeflateStream *s, const uint8_t *data, size_t len, const DeflateSpan *coded, size_t n_coded);

/* Ends the stream: a last empty block and the checksum. Returns the stream's length. */
size_t deflate_end(DeflateStream *s);

/* RFC 1950's Adler-32 of @len bytes, continuing from @adler (1 for none yet). */
uint32_t adler32_update(uint32_t adler, const uint8_t *data, size_t len);
