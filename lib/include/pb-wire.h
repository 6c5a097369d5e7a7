/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * Protobuf's wire format, the pieces every writer and reader of the project shares:
 * base-128 varints, field keys, length-delimited headers. The encoders are static inline:
 * the ftrace page decoder writes a varint for nearly every byte it reads.
 */

/* Wire types. */
enum {
        PB_WIRE_VARINT = 0,
        PB_WIRE_I64 = 1,
        PB_WIRE_LEN = 2,
        PB_WIRE_I32 = 5,
};

/* The longest varint (a 64-bit value) and the longest key (a 29-bit field number). */
#define PB_VARINT_MAX 10
#define PB_KEY_MAX 5

static inline size_t pb_varint_size(uint64_t v) {
        size_t n = 1;

        while (v >= 0x80) {
                v >>= 7;
                n++;
        }
        return n;
}

/* Writes @v at @out (callers reserve PB_VARINT_MAX bytes); returns the end. Most values
 * (prio, cpu, state, lengths) take one byte, pids two or three, timestamps six (their
 * deltas two or three), so the short ones come first. */
static inline uint8_t *pb_varint_encode(uint8_t *out, uint64_t v) {
        if (__builtin_expect(v < 0x80, 1)) {
                *out = (uint8_t) v;
                return out + 1;
        }
        if (v < 0x4000) {
                out[0] = (uint8_t) v | 0x80;
                out[1] = (uint8_t) (v >> 7);
                return out + 2;
        }
        /* Pids above 16,383 and a storm's timestamp deltas: as a loop, these were a tenth
         * of the page decoder's instructions in callgrind. */
        if (v < 0x200000) {
                out[0] = (uint8_t) v | 0x80;
                out[1] = (uint8_t) (v >> 7) | 0x80;
                out[2] = (uint8_t) (v >> 14);
                return out + 3;
        }
        do {
                *out++ = (uint8_t) v | 0x80;
                v >>= 7;
        } while (v >= 0x80);
        *out++ = (uint8_t) v;
        return out;
}

/* Reads the varint at *@p, not past @end, into *@ret and moves *@p past it. False, with
 * *@p and *@ret untouched, for one cut short by @end or longer than PB_VARINT_MAX. */
bool pb_varint_decode(const uint8_t **p, const uint8_t *end, uint64_t *ret);

/* A field's key, the varint (field << 3 | wire type). */
static inline uint64_t pb_tag(uint32_t field, unsigned wire_type) {
        return (uint64_t) field << 3 | wire_type;
}

/* A key encoded once, to be copied in front of every value of its field. */
typedef struct PbKey {
        uint8_t bytes[PB_KEY_MAX];
        uint8_t len;
} PbKey;

static inline PbKey pb_key_make(uint32_t field, unsigned wire_type) {
        PbKey k = {};

        k.len = (uint8_t) (pb_varint_encode(k.bytes, pb_tag(field, wire_type)) - k.bytes);
        return k;
}

/* Copies all PB_KEY_MAX bytes (a fixed-size move, no call), so callers reserve them. */
static inline uint8_t *pb_put_key(uint8_t *out, const PbKey *k) {
        memcpy(out, k->bytes, sizeof(k->bytes));
        return out + k->len;
}

/* The head of a length-delimited field: key, then @len (the bytes follow). */
static inline uint8_t *pb_put_len_header(uint8_t *out, uint32_t field, size_t len) {
        out = pb_varint_encode(out, pb_tag(field, PB_WIRE_LEN));
        return pb_varint_encode(out, len);
}

/* The size of a length-delimited field of @len bytes, key included. */
static inline size_t pb_len_field_size(uint32_t field, size_t len) {
        return pb_varint_size(pb_tag(field, PB_WIRE_LEN)) + pb_varint_size(len) + len;
}

/* A length-delimited value without its key: @len, then the @n bytes at @s. */
static inline uint8_t *pb_put_bytes(uint8_t *out, const void *s, size_t n) {
        out = pb_varint_encode(out, n);
        memcpy(out, s, n);
        return out + n;
}
