/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Events written whole, the cold half: the fields that are neither numbers nor char
 * arrays (hex bytes, __data_loc strings, strings to the record's end). The rest, which
 * every full event goes through, is inline in the page walker: ftrace-full-event-local.h.
 */
#include "ftrace-full-event-local.h"

static uint8_t *put_hex(uint8_t *p, const uint8_t *s, size_t n) {
        static const char digits[] = "0123456789abcdef";

        p = pb_varint_encode(p, 2 * n);
        for (size_t i = 0; i < n; i++) {
                *p++ = (uint8_t) digits[s[i] >> 4];
                *p++ = (uint8_t) digits[s[i] & 0xf];
        }
        return p;
}

/* A __data_loc word is offset (low 16 bits) and length (high 16 bits); __rel_loc counts
 * the offset from the end of the word. False if the bytes lie outside the record. */
static inline bool dataloc(const FieldSpec *f, const uint8_t *rec, size_t len,
                           const uint8_t **ret, size_t *ret_n) {
        uint32_t w = rd32(rec + f->offset);
        size_t off = w & 0xffff, n = w >> 16;

        if (f->relative)
                off += (size_t) f->offset + 4;
        if (off > len || n > len - off)
                return false;
        *ret = rec + off;
        *ret_n = n;
        return true;
}

/* The key and value of the fields that are neither numbers nor char arrays. NULL if
 * the record contradicts its format. */
uint8_t *ftrace_put_field_other(uint8_t *p, const FieldSpec *f, const uint8_t *rec, size_t len) {
        const uint8_t *s = rec + f->offset;
        size_t n;

        if (f->source == SRC_CHARS_REST) {
                p = pb_put_key(p, &f->key);
                return pb_put_bytes(p, s, str_len(s, len - f->offset));
        }
        if (f->source == SRC_BYTES) {
                p = pb_put_key(p, &f->key);
                return put_hex(p, s, f->size);
        }
        if (!dataloc(f, rec, len, &s, &n))
                return NULL;
        p = pb_put_key(p, &f->key);
        if (f->source == SRC_DATALOC_CHARS)
                return pb_put_bytes(p, s, str_len(s, n));
        return put_hex(p, s, n);
}
