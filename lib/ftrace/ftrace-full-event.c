/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Events written whole, the cold half: the fields that are neither numbers nor char
 * arrays (hex bytes, __data_loc strings, strings to the record's end, hashed kernel
 * addresses and the other pointer-sized numbers hashed with them). The rest, which
 * every full event goes through, is inline in the page walker: ftrace-full-event-local.h.
 */
#include "ftrace-full-event-local.h"

static uint8_t *put_hex_digits(uint8_t *p, const uint8_t *s, size_t n) {
        static const char digits[] = "0123456789abcdef";

        for (size_t i = 0; i < n; i++) {
                *p++ = (uint8_t) digits[s[i] >> 4];
                *p++ = (uint8_t) digits[s[i] & 0xf];
        }
        return p;
}

static uint8_t *put_hex(uint8_t *p, const uint8_t *s, size_t n) {
        p = pb_varint_encode(p, 2 * n);
        return put_hex_digits(p, s, n);
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

static inline uint64_t rotl64(uint64_t x, unsigned b) {
        return (x << b) | (x >> (64 - b));
}

static inline void sip_round(uint64_t v[4]) {
        v[0] += v[1]; v[1] = rotl64(v[1], 13); v[1] ^= v[0]; v[0] = rotl64(v[0], 32);
        v[2] += v[3]; v[3] = rotl64(v[3], 16); v[3] ^= v[2];
        v[0] += v[3]; v[3] = rotl64(v[3], 21); v[3] ^= v[0];
        v[2] += v[1]; v[1] = rotl64(v[1], 17); v[1] ^= v[2]; v[2] = rotl64(v[2], 32);
}

/* SipHash-2-4 (Aumasson and Bernstein) of @m's 8 bytes, little-endian, under the
 * 128-bit @key: a keyed hash that, without the key, says nothing of its input (the
 * kernel's own %p hashing rests on it too). */
static uint64_t siphash_u64(const uint64_t key[2], uint64_t m) {
        uint64_t v[4] = {
                key[0] ^ 0x736f6d6570736575ULL, key[1] ^ 0x646f72616e646f6dULL,
                key[0] ^ 0x6c7967656e657261ULL, key[1] ^ 0x7465646279746573ULL,
        };
        const uint64_t last = (uint64_t) 8 << 56;       /* the length byte, no tail */

        v[3] ^= m;
        sip_round(v);
        sip_round(v);
        v[0] ^= m;
        v[3] ^= last;
        sip_round(v);
        sip_round(v);
        v[0] ^= last;
        v[2] ^= 0xff;
        for (int i = 0; i < 4; i++)
                sip_round(v);
        return v[0] ^ v[1] ^ v[2] ^ v[3];
}

/* What a trace shows for the address @a: NULL stays NULL (a reader checks for it), any
 * other address a non-zero 48-bit value, which no kernel address (0xffff... on 64-bit
 * machines) can be mistaken for. 48 bits keep collisions out of reach for the few
 * million distinct addresses a trace may hold. */
static uint64_t hash_address(AddressHasher *hasher, uint64_t a) {
        size_t slot = (size_t) ((a * 0x9e3779b97f4a7c15ULL) >> 56) % ADDRESS_CACHE_SIZE;
        uint64_t h;

        if (a == 0)
                return 0;
        if (hasher->cache[slot].address == a)
                return hasher->cache[slot].hash;
        h = siphash_u64(hasher->key, a) >> 16;
        h = h ?: 1;
        hasher->cache[slot].address = a;
        hasher->cache[slot].hash = h;
        return h;
}

/* An array of pointer-sized numbers as put_hex() writes it, each 8-byte word hashed as
 * hash_address() hashes a number (bytes past the last whole word as they are). */
static uint8_t *put_hashed_words(uint8_t *p, AddressHasher *hasher, const uint8_t *s, size_t n) {
        size_t i = 0;

        p = pb_varint_encode(p, 2 * n);
        for (; i + 8 <= n; i += 8) {
                uint64_t h = hash_address(hasher, rd64(s + i));
                uint8_t word[8];

                memcpy(word, &h, sizeof(word));
                p = put_hex_digits(p, word, sizeof(word));
        }
        return put_hex_digits(p, s + i, n - i);
}

/* The key and value of the fields that are neither numbers nor char arrays. NULL if
 * the record contradicts its format. */
uint8_t *ftrace_put_field_other(uint8_t *p, const EventInfo *e, const FieldSpec *f, const uint8_t *rec,
                                size_t len) {
        const uint8_t *s = rec + f->offset;
        size_t n;

        if (f->source == SRC_ADDRESS) {
                p = pb_put_key(p, &f->key);
                return pb_varint_encode(p, hash_address(e->hasher, read_number(s, f->size, false)));
        }
        if (f->source == SRC_SYMBOL) {
                uint64_t a = read_number(s, f->size, false);
                uint32_t iid = a ? ftrace_symbolize(e->symbolizer, a) : 0;

                /* Not in a function (a heap object, a workqueue's work): as without
                 * symbolize_ksyms, hashed unless the caller may see addresses. */
                p = pb_put_key(p, &f->key);
                return pb_varint_encode(p, iid ?: e->hasher ? hash_address(e->hasher, a) : a);
        }

        if (f->source == SRC_CHARS_REST) {
                p = pb_put_key(p, &f->key);
                return pb_put_bytes(p, s, str_len(s, len - f->offset));
        }
        if (f->source == SRC_BYTES || f->source == SRC_ADDRESS_WORDS) {
                p = pb_put_key(p, &f->key);
                if (f->source == SRC_ADDRESS_WORDS)
                        return put_hashed_words(p, e->hasher, s, f->size);
                return put_hex(p, s, f->size);
        }
        if (!dataloc(f, rec, len, &s, &n))
                return NULL;
        p = pb_put_key(p, &f->key);
        if (f->source == SRC_DATALOC_CHARS)
                return pb_put_bytes(p, s, str_len(s, n));
        if (f->source == SRC_DATALOC_ADDRESS_WORDS)
                return put_hashed_words(p, e->hasher, s, n);
        return put_hex(p, s, n);
}
