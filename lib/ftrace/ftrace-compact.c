/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * compact_sched, the cold half: the columns' and intern table's memory, and packing them
 * as FtraceEventBundle.compact_sched. The hot half is ftrace-compact-local.h.
 */
#include <assert.h>

#include "ftrace-compact-local.h"
#include "ftrace-parser-local.h"


static void interner_done(Interner *in) {
        in->keys = mfree(in->keys);
        in->lengths = mfree(in->lengths);
        in->slots = mfree(in->slots);
        in->n = in->allocated = in->n_slots = 0;
}

static void interner_reset(Interner *in) {
        in->n = 0;
        if (in->slots)
                memset(in->slots, 0, in->n_slots * sizeof(uint32_t));
}

void compact_sched_done(CompactSched *c) {
        for (size_t i = 0; i < _COL_MAX; i++)
                ftrace_buf_done(&c->col[i]);
        interner_done(&c->names);
}

/* Empties the comm cache: each entry gets a pid whose slot is another (its lowest bit
 * flipped), so no record's pid matches it, whatever the record's comm bytes. A pid of -1
 * with a comm of 16 0xff bytes used to match the memset(0xff) empties and took their
 * index, UINT32_MAX. */
void compact_comm_cache_reset(CompactSched *c) {
        /* The pid alone: an entry no pid can match is never read further. */
        for (uint32_t i = 0; i < COMM_CACHE_SIZE; i++)
                c->comm_cache[i].pid = (int32_t) (i ^ 1);
}

void compact_sched_reset(CompactSched *c) {
        for (size_t i = 0; i < _COL_MAX; i++)
                c->col[i].len = 0;
        interner_reset(&c->names);
        compact_comm_cache_reset(c);
        c->last_switch_ts = c->last_waking_ts = 0;
}

int compact_interner_grow_slots(Interner *in) {
        size_t n = MAX(in->n_slots * 2, (size_t) 128);
        uint32_t *slots = calloc(n, sizeof(uint32_t));

        if (!slots)
                return -ENOMEM;
        for (size_t i = 0; i < in->n; i++) {
                size_t h = intern_hash(&in->keys[i], n);

                while (slots[h])
                        h = (h + 1) & (n - 1);
                slots[h] = (uint32_t) i + 1;
        }
        free(in->slots);
        in->slots = slots;
        in->n_slots = n;
        return 0;
}

int compact_interner_grow_entries(Interner *in) {
        size_t n = MAX(in->allocated * 2, (size_t) 64);
        InternKey *keys;
        uint8_t *lengths;

        keys = realloc(in->keys, n * sizeof(InternKey));
        if (!keys)
                return -ENOMEM;
        in->keys = keys;
        lengths = realloc(in->lengths, n);
        if (!lengths)
                return -ENOMEM;
        in->lengths = lengths;
        in->allocated = n;
        return 0;
}


size_t compact_sched_size(const CompactSched *c) {
        size_t n = 0;

        for (size_t i = 0; i < _COL_MAX; i++)
                if (c->col[i].len > 0)
                        n += 1 + pb_varint_size(c->col[i].len) + c->col[i].len;
        for (size_t i = 0; i < c->names.n; i++)
                n += 1 + pb_varint_size(c->names.lengths[i]) + c->names.lengths[i];
        return n;
}

static bool column_is_timestamps(unsigned i) {
        return i == COL_SWITCH_TIMESTAMP || i == COL_WAKING_TIMESTAMP;
}

/* The bytes of a timestamp column that tell its deltas' size. */
#define DELTA_SAMPLE 256u

/* Timestamp deltas are near random in their low 7 bits; a varint's last byte, which
 * holds the highest bits, takes a few values. In deltas of 3 bytes or more that byte is
 * a third or less of the column, near constant, and a Huffman code of the column's own
 * takes about 30% off it; in 2-byte deltas it carries more of the value, and coding saves
 * about 11% (parse-bench --columns on the storm's pages: 0.30 against 0.16 bytes per
 * event, for about the same CPU per coded byte). So only columns whose deltas average
 * 2.5 bytes or more (their first DELTA_SAMPLE bytes say) are coded. */
static bool timestamps_repay_coding(const Buf *col) {
        size_t n = MIN(col->len, (size_t) DELTA_SAMPLE), ends = 0;

        for (size_t i = 0; i < n; i++)
                ends += col->data[i] < 0x80;
        return 2 * n >= 5 * ends;
}

uint8_t *compact_sched_put(uint8_t *p, FtraceBundle *b, const uint8_t *base, size_t size) {
        const CompactSched *c = &b->compact;

        *p++ = (BUNDLE_COMPACT_SCHED << 3) | PB_WIRE_LEN;
        p = pb_varint_encode(p, size);
        for (size_t i = 0; i < c->names.n; i++) {
                *p++ = (COMPACT_INTERN_TABLE << 3) | PB_WIRE_LEN;
                p = pb_put_bytes(p, c->names.keys[i].w, c->names.lengths[i]);
        }
        for (unsigned i = 0; i < _COL_MAX; i++) {
                uint8_t *start = p;

                if (c->col[i].len == 0)
                        continue;
                *p++ = (uint8_t) ((i << 3) | PB_WIRE_LEN);
                p = pb_put_bytes(p, c->col[i].data, c->col[i].len);
                if (!column_is_timestamps(i))
                        ftrace_bundle_note_coded(b, base, start, p, /* literals= */ false);
                else if (timestamps_repay_coding(&c->col[i]))
                        /* Their bytes do not repeat in runs: no try at matches. */
                        ftrace_bundle_note_coded(b, base, start, p, /* literals= */ true);
        }
        return p;
}

