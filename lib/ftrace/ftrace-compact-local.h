/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * compact_sched's hot half, inline in the page walker: the columns a page's switches and
 * wakings are appended to (as varints, ready to be copied out when the bundle is packed)
 * and the interning of their comms. The cold half (growing, resetting, packing) is in
 * ftrace-compact.c.
 *
 * Inline because it pays: with only the interning of a comm (done on a comm-cache miss)
 * moved into ftrace-compact.c as a call, the walk cost 2.0% more instructions per event
 * on a sched storm's pages and 3.8% on the fixture pages (callgrind, bench/parse-bench
 * --bundle-pages 32: 108.9 -> 111.1 and 283.5 -> 294.4), a call in the loop costing the
 * registers the walk keeps its state in.
 */
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "ftrace-parser-local.h"

static inline size_t intern_hash(const InternKey *k, size_t n_slots) {
        uint64_t h = (k->w[0] ^ (k->w[1] * 0x9e3779b97f4a7c15ULL)) * 0xff51afd7ed558ccdULL;

        return (size_t) (h >> 32) & (n_slots - 1);
}

/* The bytes of @w before its first NUL, and their count (8 when there is none). */
static inline uint64_t word_before_nul(uint64_t w, size_t *ret_n) {
        uint64_t zero = (w - 0x0101010101010101ULL) & ~w & 0x8080808080808080ULL;
        size_t n;

        /* The lowest flagged byte is always a real NUL (false positives lie above one). */
        if (!zero) {
                *ret_n = 8;
                return w;
        }
        n = (size_t) __builtin_ctzll(zero) / 8;
        *ret_n = n;
        /* No branch on n == 0: comms of 8 and of 9-15 characters alternate in a storm. */
        return w & ~(UINT64_MAX << (8 * n));
}

/* Interns the comm at @s, a char array of TASK_COMM_LEN (16) bytes, the only size the
 * compact encoders take (compact_field_fits()). Called on every comm-cache miss: the key
 * stays in registers (a 16-byte key built on the stack and read back as two words stalls
 * store forwarding), and a comm seen before costs a hash and one compare. */
static inline __attribute__((always_inline)) int interner_add(Interner *in, const uint8_t *s, uint32_t *ret) {
        uint64_t w0, w1;
        size_t n, h;
        uint32_t v;
        int r;

        if (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__) {
                size_t n1;

                w0 = word_before_nul(rd64(s), &n);
                if (n < 8)
                        w1 = 0;
                else {
                        w1 = word_before_nul(rd64(s + 8), &n1);
                        n += n1;
                }
        } else {
                InternKey k = {};

                n = str_len(s, sizeof(InternKey));
                memcpy(k.w, s, n);
                w0 = k.w[0];
                w1 = k.w[1];
        }
        if (_unlikely_((in->n + 1) * 2 > in->n_slots)) {
                r = compact_interner_grow_slots(in);
                if (r < 0)
                        return r;
        }
        for (h = intern_hash(&(InternKey) { { w0, w1 } }, in->n_slots);; h = (h + 1) & (in->n_slots - 1)) {
                v = in->slots[h];
                if (v == 0)
                        break;
                if (_likely_(in->keys[v - 1].w[0] == w0 && in->keys[v - 1].w[1] == w1)) {
                        *ret = v - 1;
                        return 0;
                }
        }
        if (in->n >= in->allocated) {
                r = compact_interner_grow_entries(in);
                if (r < 0)
                        return r;
        }
        in->keys[in->n] = (InternKey) { { w0, w1 } };
        in->lengths[in->n] = (uint8_t) n;
        in->slots[h] = (uint32_t) ++in->n;
        *ret = (uint32_t) in->n - 1;
        return 0;
}

/* What one page's walk keeps to itself, so that the compiler can hold it in registers.
 * Kept in the bundle and the parser instead, every byte stored into a column (a store
 * through uint8_t *, which may alias anything) made the walk load it all again. With this,
 * fields read at fixed sizes and room made once per page: 162 -> 128 instructions per
 * event in callgrind on the storm's pages. */
typedef struct PageWalk {
        EventInfo *const *by_id;
        size_t n_by_id;
        bool compact;
        uint64_t signature[_COMPACT_ROLE_MAX];   /* compact bundles only */
        uint8_t *at[_COL_MAX];    /* compact: where each column's next value goes */
        uint64_t last_switch_ts, last_waking_ts;
        size_t n_events;
        uint64_t last_ts;
} PageWalk;

static inline void col_put(PageWalk *w, unsigned col, uint64_t v) {
        w->at[col] = pb_varint_encode(w->at[col], v);
}

/* The compact events' fields, of the sizes compact_field_fits() allows. */
static inline int32_t compact_int(const EventInfo *e, int which, const uint8_t *rec) {
        return (int32_t) rd32(rec + e->compact_offset[which]);
}

static inline uint64_t compact_prev_state(const EventInfo *e, const uint8_t *rec) {
        const uint8_t *s = rec + e->compact_offset[CS_PREV_STATE];

        return e->compact_size[CS_PREV_STATE] == 8 ? rd64(s) : (uint64_t) (int64_t) (int32_t) rd32(s);
}

static inline bool comm_cache_hit(const CommCacheEntry *ce, const uint8_t *s, int32_t pid) {
        if (ce->pid != pid)
                return false;
#ifdef __SSE2__
        /* One load, compare and mask: the two-word compare split the load into general
         * registers and spilled one (callgrind, the storm's pages with --deflate: 188.3 -> 185.1
         * instructions per event). */
        return _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *) s),
                                                _mm_load_si128((const __m128i *) ce->comm))) == 0xffff;
#else
        return memcmp(ce->comm, s, sizeof(ce->comm)) == 0;
#endif
}

/* The comm of @pid (field @which of @rec): its index in the bundle's intern table. */
static inline __attribute__((always_inline)) int compact_intern_comm(CompactSched *c, const EventInfo *e, int which,
                                                                     const uint8_t *rec, int32_t pid, uint32_t *ret) {
        const uint8_t *s = rec + e->compact_offset[which];
        CommCacheEntry *ce;
        int r;

        /* The same raw bytes are the same string, whatever follows the NUL. */
        ce = &c->comm_cache[(uint32_t) pid % COMM_CACHE_SIZE];
        if (_likely_(comm_cache_hit(ce, s, pid))) {
                *ret = ce->index;
                return 0;
        }
        r = interner_add(&c->names, s, ret);
        if (r < 0)
                return r;
        memcpy(ce->comm, s, sizeof(ce->comm));
        ce->pid = pid;
        ce->index = *ret;
        return 0;
}

/* What a switch and a waking write first: the index of the comm (field @comm_field of
 * @rec) in the intern table, the timestamp as a delta from the last one of its kind
 * (*@last_ts, column @ts_col), and the pid (column @pid_col). */
static inline __attribute__((always_inline)) int compact_put_common(
                FtraceBundle *b, PageWalk *w, const EventInfo *e, const uint8_t *rec, int comm_field,
                uint64_t ts, uint64_t *last_ts, unsigned ts_col, int32_t pid, unsigned pid_col,
                uint32_t *ret_comm) {
        int r;

        r = compact_intern_comm(&b->compact, e, comm_field, rec, pid, ret_comm);
        if (r < 0)
                return r;
        col_put(w, ts_col, ts - *last_ts);
        *last_ts = ts;
        col_put(w, pid_col, (uint64_t) (int64_t) pid);
        return 0;
}

/* Timestamps are delta-encoded per kind within the bundle, the first one absolute.
 * Every field is read before the first column store. */
static inline __attribute__((always_inline)) int bundle_add_compact_switch(
                FtraceBundle *b, PageWalk *w, const EventInfo *e, const uint8_t *rec, uint64_t ts,
                int32_t next_pid) {
        uint64_t prev_state = compact_prev_state(e, rec);
        int32_t prio = compact_int(e, CS_NEXT_PRIO, rec);
        uint32_t comm;
        int r;

        r = compact_put_common(b, w, e, rec, CS_NEXT_COMM, ts, &w->last_switch_ts, COL_SWITCH_TIMESTAMP,
                               next_pid, COL_SWITCH_NEXT_PID, &comm);
        if (r < 0)
                return r;
        /* Nearly always one byte each: one test for the three. */
        if (_likely_(((prev_state | (uint64_t) (int64_t) prio | comm) & ~(uint64_t) 0x7f) == 0)) {
                *w->at[COL_SWITCH_PREV_STATE]++ = (uint8_t) prev_state;
                *w->at[COL_SWITCH_NEXT_PRIO]++ = (uint8_t) prio;
                *w->at[COL_SWITCH_NEXT_COMM_INDEX]++ = (uint8_t) comm;
                return 0;
        }
        col_put(w, COL_SWITCH_PREV_STATE, prev_state);
        col_put(w, COL_SWITCH_NEXT_PRIO, (uint64_t) (int64_t) prio);
        col_put(w, COL_SWITCH_NEXT_COMM_INDEX, comm);
        return 0;
}

static inline __attribute__((always_inline)) int bundle_add_compact_waking(
                FtraceBundle *b, PageWalk *w, const EventInfo *e, const uint8_t *rec, uint64_t ts,
                int32_t pid) {
        int32_t cpu = compact_int(e, CW_TARGET_CPU, rec), prio = compact_int(e, CW_PRIO, rec);
        /* Written for every waking or for none, so the column stays aligned. */
        uint8_t flags = e->has_common_flags ? rec[e->common_flags_offset] : 0;
        uint32_t comm;
        int r;

        r = compact_put_common(b, w, e, rec, CW_COMM, ts, &w->last_waking_ts, COL_WAKING_TIMESTAMP, pid,
                               COL_WAKING_PID, &comm);
        if (r < 0)
                return r;
        if (_likely_((((uint64_t) (int64_t) cpu | (uint64_t) (int64_t) prio | comm | flags) & ~(uint64_t) 0x7f) == 0)) {
                *w->at[COL_WAKING_TARGET_CPU]++ = (uint8_t) cpu;
                *w->at[COL_WAKING_PRIO]++ = (uint8_t) prio;
                *w->at[COL_WAKING_COMM_INDEX]++ = (uint8_t) comm;
                *w->at[COL_WAKING_COMMON_FLAGS]++ = flags;
                return 0;
        }
        col_put(w, COL_WAKING_TARGET_CPU, (uint64_t) (int64_t) cpu);
        col_put(w, COL_WAKING_PRIO, (uint64_t) (int64_t) prio);
        col_put(w, COL_WAKING_COMM_INDEX, comm);
        col_put(w, COL_WAKING_COMMON_FLAGS, flags);
        return 0;
}
