/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Huffman codes for deflate's dynamic blocks (RFC 1951 3.2.2, 3.2.7): lengths from byte
 * counts, limited in depth, the canonical codes, and the block header that sends them.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "deflate-local.h"
#include "macro.h"

/* The order in which a dynamic block sends the code lengths' own code (RFC 1951 3.2.7). */
static const uint8_t code_length_order[N_CODE_LENGTH_SYMBOLS] = {
        16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15,
};

typedef struct Leaf {
        uint64_t weight;
        uint16_t symbol;
} Leaf;

/* Leaves by weight, then symbol; they come in by symbol. */
static void sort_leaves(Leaf *l, unsigned n) {
        Leaf tmp[N_LITERALS], *from = l, *to = tmp;
        uint64_t heaviest = 0;

        /* A column has a handful of distinct bytes: insertion sort, unless there are many. */
        if (n <= 32) {
                for (unsigned i = 1; i < n; i++) {
                        Leaf x = l[i];
                        unsigned j = i;

                        for (; j > 0 && l[j - 1].weight > x.weight; j--)
                                l[j] = l[j - 1];
                        l[j] = x;
                }
                return;
        }
        /* Timestamp deltas use 150-250 byte values, and a code is made for each column of
         * each bundle: a stable radix sort, a byte of the weight a pass, keeps the order
         * by symbol among equal weights, where qsort() with its compare calls cost a third
         * of the whole coding. */
        for (unsigned i = 0; i < n; i++)
                heaviest |= l[i].weight;
        for (unsigned shift = 0; shift == 0 || heaviest >> shift; shift += 8) {
                /* No digit is above the heaviest's (or 255): the counts above it are
                 * neither cleared nor summed (the high byte's pass has a few; heaviest is the
                 * weights' OR, so no weight is above it). 181.3 -> 180.5 instructions per event. */
                unsigned at[256], sum = 0, top = (unsigned) MIN(heaviest >> shift, (uint64_t) 255);
                Leaf *swap;

                memset(at, 0, (top + 1) * sizeof(unsigned));
                for (unsigned i = 0; i < n; i++)
                        at[(from[i].weight >> shift) & 0xff]++;
                for (unsigned d = 0; d <= top; d++) {
                        unsigned c = at[d];

                        at[d] = sum;
                        sum += c;
                }
                for (unsigned i = 0; i < n; i++)
                        to[at[(from[i].weight >> shift) & 0xff]++] = from[i];
                swap = from;
                from = to;
                to = swap;
        }
        if (from != l)
                memcpy(l, from, n * sizeof(Leaf));
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

void deflate_build_lengths(const uint32_t *freq, unsigned n, unsigned limit, uint8_t *lengths) {
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

void deflate_canonical_codes(const uint8_t *lengths, unsigned n, uint32_t *codes) {
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
                codes[i] = lengths[i] ? bit_string(deflate_reverse_bits(next[lengths[i]]++, lengths[i]), lengths[i]) : 0;
}

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


void deflate_dynamic_header(const uint8_t *lengths, DynamicHeader *h) {
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
        deflate_build_lengths(freq, N_CODE_LENGTH_SYMBOLS, MAX_CODE_LENGTH_BITS, h->length_lengths);
        deflate_canonical_codes(h->length_lengths, N_CODE_LENGTH_SYMBOLS, h->length_codes);

        h->n_length_lengths = N_CODE_LENGTH_SYMBOLS;
        while (h->n_length_lengths > 4 && h->length_lengths[code_length_order[h->n_length_lengths - 1]] == 0)
                h->n_length_lengths--;
        h->bits = 3 + 5 + 5 + 4 + 3 * (uint64_t) h->n_length_lengths;
        for (unsigned i = 0; i < h->n_runs; i++)
                h->bits += h->length_lengths[h->runs[i].symbol] + h->runs[i].extra_bits;
}

void deflate_put_dynamic_header(DeflateStream *s, const DynamicHeader *h) {
        deflate_put_block_header(s, false, BLOCK_DYNAMIC);
        deflate_put_bits(s, 0, 5);              /* HLIT: 257 literal/length codes */
        deflate_put_bits(s, 0, 5);              /* HDIST: 1 distance code */
        deflate_put_bits(s, h->n_length_lengths - 4, 4);
        for (unsigned i = 0; i < h->n_length_lengths; i++)
                deflate_put_bits(s, h->length_lengths[code_length_order[i]], 3);
        for (unsigned i = 0; i < h->n_runs; i++) {
                deflate_put_string(s, h->length_codes[h->runs[i].symbol]);
                deflate_put_bits(s, h->runs[i].extra, h->runs[i].extra_bits);
        }
}
