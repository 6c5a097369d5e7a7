/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <errno.h>
#include <string.h>

#include "pb-wire.h"
#include "trace-filter-local.h"

/* @v in exactly @size bytes (continuation bits on the padding): a filtered sub-message
 * keeps the length field its input had, so it is written in place without a copy, as
 * Perfetto's filter does. trace_processor reads such varints as any other. */
static void put_padded_varint(uint8_t *out, size_t size, uint64_t v) {
        for (size_t i = 0; i + 1 < size; i++, v >>= 7)
                out[i] = (uint8_t) (0x80 | (v & 0x7f));
        out[size - 1] = (uint8_t) (v & 0x7f);
}

static uint8_t *filter_message(const TraceFilter *f, uint32_t msg, const uint8_t *p, const uint8_t *end,
                               uint8_t *out, unsigned depth);

/* A length-delimited field of @len bytes at @p, with @state; returns the output's end. */
static uint8_t *filter_len_field(const TraceFilter *f, uint64_t key, uint32_t state, const uint8_t *p,
                                 size_t len, uint8_t *out, unsigned depth) {
        uint8_t *size_at, *body;
        size_t size_len;

        if (state == FILTER_DROP)
                return out;
        out = pb_varint_encode(out, key);
        if (state != FILTER_SIMPLE && state != FILTER_STRING && len > 0) {
                size_at = out;
                size_len = pb_varint_size(len);
                body = out + size_len;
                out = filter_message(f, state - 1, p, p + len, body, depth + 1);
                if (out)
                        put_padded_varint(size_at, size_len, (uint64_t) (out - body));
                return out;
        }
        /* A string, bytes, or an empty sub-message: as it is, strings through the rules. */
        out = pb_varint_encode(out, len);
        memcpy(out, p, len);
        if (state == FILTER_STRING)
                (void) trace_filter_string(f, (char *) out, len);
        return out + len;
}

/* A fixed-size field of @n bytes. */
static uint8_t *copy_fixed(uint64_t key, uint32_t state, const uint8_t *p, size_t n, uint8_t *out) {
        if (state != FILTER_SIMPLE)
                return out;
        out = pb_varint_encode(out, key);
        memcpy(out, p, n);
        return out + n;
}

/* Filters the fields of a message of type @msg in [@p, @end) to @out. NULL: malformed. */
static uint8_t *filter_message(const TraceFilter *f, uint32_t msg, const uint8_t *p, const uint8_t *end,
                               uint8_t *out, unsigned depth) {
        if (depth > TRACE_FILTER_MAX_DEPTH)
                return NULL;
        while (p < end && out) {
                uint64_t key, v;
                uint32_t state;

                if (!pb_varint_decode(&p, end, &key) || key >> 3 == 0 || key >> 3 > UINT32_MAX)
                        return NULL;
                state = trace_filter_query(f, msg, (uint32_t) (key >> 3));
                switch (key & 7) {
                case PB_WIRE_VARINT:
                        if (!pb_varint_decode(&p, end, &v))
                                return NULL;
                        if (state == FILTER_SIMPLE)
                                out = pb_varint_encode(pb_varint_encode(out, key), v);
                        break;
                case PB_WIRE_I64:
                case PB_WIRE_I32: {
                        size_t n = (key & 7) == PB_WIRE_I64 ? 8 : 4;

                        if ((size_t) (end - p) < n)
                                return NULL;
                        out = copy_fixed(key, state, p, n, out);
                        p += n;
                        break;
                }
                case PB_WIRE_LEN:
                        if (!pb_varint_decode(&p, end, &v) || v > (uint64_t) (end - p))
                                return NULL;
                        out = filter_len_field(f, key, state, p, (size_t) v, out, depth);
                        p += v;
                        break;
                default: /* groups and unknown wire types, which Perfetto refuses too */
                        return NULL;
                }
        }
        return out;
}

ssize_t trace_filter_packet(const TraceFilter *f, const uint8_t *in, size_t len, uint8_t *out) {
        uint8_t *end;

        assert(f);
        end = filter_message(f, f->root, in, in + len, out, 1);
        if (!end)
                return -EBADMSG;
        assert((size_t) (end - out) <= len);
        return end - out;
}
