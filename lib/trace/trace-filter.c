/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "pb-wire.h"
#include "trace-filter-local.h"

/* The bytecode's opcodes (low 3 bits of a word; the field id is the rest). */
enum {
        OP_END_OF_MESSAGE = 0,
        OP_SIMPLE_FIELD = 1,
        OP_SIMPLE_FIELD_RANGE = 2, /* next word: how many ids */
        OP_NESTED_FIELD = 3,       /* next word: the message type's index */
        OP_FILTER_STRING = 4,
};

/* One message type being read: its direct states and its ranges. */
typedef struct Builder {
        uint32_t direct[FILTER_DIRECT_LIMIT];
        uint32_t n_direct;
        uint32_t *ranges;
        size_t n_ranges, ranges_allocated;
} Builder;

/* The words of @bytecode, checked against the last one: the 64-bit FNV-1a hash of the
 * others' little-endian bytes, truncated to 32 bits. */
static int bytecode_words(const uint8_t *p, size_t len, uint32_t **ret, size_t *ret_n, const char **reason) {
        _cleanup_free_ uint32_t *words = NULL;
        uint64_t hash = 0xcbf29ce484222325ull;
        const uint8_t *end;
        size_t n = 0;

        /* protobuf-c gives an empty bytes field as NULL: no arithmetic on it. */
        if (len == 0)
                return *reason = "the bytecode is empty", -EINVAL;
        end = p + len;
        words = malloc((len + 1) * sizeof(uint32_t));
        if (!words)
                return -ENOMEM;
        while (p < end) {
                uint64_t v;

                if (!pb_varint_decode(&p, end, &v) || v > UINT32_MAX)
                        return *reason = "a word of the bytecode is not a 32-bit varint", -EINVAL;
                words[n++] = (uint32_t) v;
        }
        if (n < 2)
                return *reason = "the bytecode is empty", -EINVAL;
        for (size_t i = 0; i + 1 < n; i++)
                for (unsigned b = 0; b < 4; b++) {
                        hash ^= (words[i] >> (8 * b)) & 0xff;
                        hash *= 0x100000001b3ull;
                }
        if ((uint32_t) hash != words[n - 1])
                return *reason = "the bytecode's checksum does not match", -EINVAL;
        *ret_n = n - 1;
        *ret = TAKE_PTR(words);
        return 0;
}

static int builder_range(Builder *b, uint32_t start, uint32_t end, uint32_t state) {
        if (b->n_ranges + 3 > b->ranges_allocated) {
                size_t n = b->ranges_allocated ? 2 * b->ranges_allocated : 24;
                uint32_t *r = realloc(b->ranges, n * sizeof(uint32_t));

                if (!r)
                        return -ENOMEM;
                b->ranges = r;
                b->ranges_allocated = n;
        }
        b->ranges[b->n_ranges++] = start;
        b->ranges[b->n_ranges++] = end;
        b->ranges[b->n_ranges++] = state;
        return 0;
}

/* Ids [start, end) kept with @state: low ones directly, the rest as one range. */
static int builder_add(Builder *b, uint32_t start, uint32_t end, uint32_t state) {
        for (; start < end && start < FILTER_DIRECT_LIMIT; start++) {
                b->direct[start] = state;
                if (start + 1 > b->n_direct)
                        b->n_direct = start + 1;
        }
        return start < end ? builder_range(b, start, end, state) : 0;
}

/* The message type read so far goes into the tables; @b is emptied for the next one. */
static int builder_end(Builder *b, TraceFilter *f, const char **reason) {
        size_t words = b->n_direct + b->n_ranges;
        uint32_t *t, *o, *d;

        /* Ranges as written must not overlap, as Perfetto's parser requires. */
        for (size_t r = 3; r < b->n_ranges; r += 3)
                if (b->ranges[r] < b->ranges[r - 2])
                        return *reason = "the bytecode has overlapping field ranges", -EINVAL;
        if ((f->n_table + words + 2 * (f->n_messages + 2)) * sizeof(uint32_t) > TRACE_FILTER_MAX_TABLE_BYTES)
                return *reason = "the bytecode is too large", -E2BIG;
        t = realloc(f->table, (f->n_table + words + 1) * sizeof(uint32_t));
        if (!t)
                return -ENOMEM;
        f->table = t;
        o = realloc(f->offset, (f->n_messages + 2) * sizeof(uint32_t));
        if (!o)
                return -ENOMEM;
        f->offset = o;
        d = realloc(f->n_direct, (f->n_messages + 1) * sizeof(uint32_t));
        if (!d)
                return -ENOMEM;
        f->n_direct = d;
        f->offset[f->n_messages] = (uint32_t) f->n_table;
        f->n_direct[f->n_messages] = b->n_direct;
        memcpy(f->table + f->n_table, b->direct, b->n_direct * sizeof(uint32_t));
        if (b->n_ranges > 0)   /* no ranges: b->ranges may be NULL, which memcpy may not take */
                memcpy(f->table + f->n_table + b->n_direct, b->ranges, b->n_ranges * sizeof(uint32_t));
        f->n_table += words;
        f->n_messages++;
        f->offset[f->n_messages] = (uint32_t) f->n_table;
        memset(b->direct, 0, sizeof(b->direct));
        b->n_direct = 0;
        b->n_ranges = 0;
        return 0;
}

/* One field word (and its argument), at words[*i]. */
static int parse_field(Builder *b, const uint32_t *words, size_t n, size_t *i, uint32_t *max_msg,
                       const char **reason) {
        uint32_t op = words[*i] & 7, id = words[*i] >> 3, arg = 0;

        if (id == 0)
                return *reason = "the bytecode names field id 0", -EINVAL;
        if (op == OP_SIMPLE_FIELD_RANGE || op == OP_NESTED_FIELD) {
                if (*i + 1 >= n)
                        return *reason = "the bytecode ends inside a field", -EINVAL;
                arg = words[++*i];
        }
        switch (op) {
        case OP_SIMPLE_FIELD:
                return builder_add(b, id, id + 1, FILTER_SIMPLE);
        case OP_FILTER_STRING:
                return builder_add(b, id, id + 1, FILTER_STRING);
        case OP_SIMPLE_FIELD_RANGE:
                if (arg == 0 || arg > UINT32_MAX - id)
                        return *reason = "the bytecode has an empty or overflowing field range", -EINVAL;
                return builder_add(b, id, id + arg, FILTER_SIMPLE);
        case OP_NESTED_FIELD:
                if (arg >= FILTER_STRING - 1)
                        return *reason = "the bytecode names a message index out of range", -EINVAL;
                *max_msg = MAX(*max_msg, arg);
                return builder_add(b, id, id + 1, arg + 1);
        default:
                return *reason = "the bytecode has an unknown opcode", -EINVAL;
        }
}

static int parse_words(TraceFilter *f, const uint32_t *words, size_t n, const char **reason) {
        _cleanup_free_ Builder *b = calloc(1, sizeof(Builder));
        uint32_t max_msg = 0;
        int r = 0;

        if (!b)
                return -ENOMEM;
        for (size_t i = 0; i < n && r >= 0; i++)
                r = (words[i] & 7) == OP_END_OF_MESSAGE ? builder_end(b, f, reason)
                                                        : parse_field(b, words, n, &i, &max_msg, reason);
        free(b->ranges);
        if (r < 0)
                return r;
        if ((words[n - 1] & 7) != OP_END_OF_MESSAGE || words[n - 1] >> 3 != 0)
                return *reason = "the bytecode does not end with an end of message", -EINVAL;
        if (max_msg >= f->n_messages)
                return *reason = "the bytecode names a message index out of range", -EINVAL;
        return 0;
}

uint32_t trace_filter_query(const TraceFilter *f, uint32_t msg, uint32_t field) {
        const uint32_t *t = f->table + f->offset[msg], *end = f->table + f->offset[msg + 1];
        uint32_t n_direct = f->n_direct[msg];

        if (field < n_direct)
                return t[field];
        for (t += n_direct; t + 2 < end; t += 3)
                if (field >= t[0] && field < t[1])
                        return t[2];
        return FILTER_DROP;
}

int trace_filter_new(const uint8_t *bytecode, size_t len, TraceFilter **ret, const char **ret_reason) {
        _cleanup_(trace_filter_freep) TraceFilter *f = NULL;
        _cleanup_free_ uint32_t *words = NULL;
        const char *reason = NULL;
        uint32_t root;
        size_t n;
        int r;

        assert(ret);
        f = calloc(1, sizeof(TraceFilter));
        if (!f)
                return -ENOMEM;
        r = bytecode_words(bytecode, len, &words, &n, &reason);
        if (r >= 0)
                r = parse_words(f, words, n, &reason);
        if (r >= 0) {
                /* The bytecode describes perfetto.protos.Trace; packets are Trace.packet. */
                root = trace_filter_query(f, 0, 1);
                if (root == FILTER_DROP || root >= FILTER_STRING)
                        reason = "the bytecode does not keep Trace.packet as a message", r = -EINVAL;
                f->root = root - 1;
        }
        if (r < 0) {
                if (ret_reason)
                        *ret_reason = reason ?: "out of memory";
                return r;
        }
        *ret = TAKE_PTR(f);
        return 0;
}

TraceFilter *trace_filter_free(TraceFilter *f) {
        if (!f)
                return NULL;
        trace_filter_rules_free(f);
        free(f->table);
        free(f->offset);
        free(f->n_direct);
        return mfree(f);
}
