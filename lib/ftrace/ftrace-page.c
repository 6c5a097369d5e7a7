/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The ring-buffer page walker: the recorder's hot path.
 *
 * Our own record walker instead of kbuffer (libtraceevent 1.7.1):
 * - kbuffer_load_subbuffer() takes no size. It trusts the commit word (up to 2^27
 *   bytes) and every record's length word, and reads past the page on garbage; we
 *   are fuzzed, so every length is checked against the commit size here.
 * - It cannot tell a malformed page from its end (no FtraceError status).
 * - It reads every word through a function pointer (endian swapping we never need).
 *   Measured on the fixture pages (2 vCPU VM, -O2, best of 8 runs): walking the
 *   records with kbuffer_next_event() costs ~30 ns per event; this walker, looking
 *   up and skipping every event, ~3 ns.
 * - It adds the time delta of every padding record; the kernel's own validator
 *   (ring_buffer.c, check_buffer()/rb_read_data_buffer()) skips it when it is 1, the
 *   value rb_event_discard() and rb_reset_tail() force, and so do we.
 *
 * Page layout (events/header_page, events/header_event): u64 timestamp, then the
 * commit word (long: 8 bytes here) whose low 27 bits are the data length, bit 31
 * RB_MISSED_EVENTS and bit 30 RB_MISSED_STORED; then the records. Each record starts
 * with a u32: type_len (5 bits) and time_delta (27 bits). type_len 1..28: data of
 * 4 * type_len bytes; 0: length (including itself) in the next u32, then data;
 * 29 padding (the next u32 is its length, not counting the header; time_delta 0 is
 * the "null" padding that only ever lies beyond the commit); 30 time extend (delta
 * += next u32 << 27); 31 absolute time stamp (same 59-bit encoding; the top 5 bits
 * come from the running time, as rb_fix_abs_ts() does).
 */
#include <assert.h>

#include "ftrace-compact-local.h"
#include "ftrace-full-event-local.h"
#include "ftrace-parser-local.h"

/* The commit word: data length in the low 27 bits, flags in bits 30 and 31. */
static inline uint64_t page_commit(const FtraceParser *p, const uint8_t *page) {
        return p->commit_size == 8 ? rd64(page + 8) : rd32(page + 8);
}

/* The commit word of @page, once header_page is loaded and @size holds the page's header. */
static int page_commit_checked(const FtraceParser *p, const void *page, size_t size, uint64_t *ret) {
        assert(p);
        assert(page || size == 0);

        if (!p->header_loaded)
                return -EINVAL;
        if (size < p->data_offset)
                return -EBADMSG;
        *ret = page_commit(p, page);
        return 0;
}

ssize_t ftrace_parser_page_data_size(const FtraceParser *p, const void *page, size_t size) {
        uint64_t commit;
        int r = page_commit_checked(p, page, size, &commit);

        return r < 0 ? r : (ssize_t) (commit & RB_COMMIT_SIZE_MASK);
}

int ftrace_parser_page_lost_events(const FtraceParser *p, const void *page, size_t size) {
        uint64_t commit;
        int r = page_commit_checked(p, page, size, &commit);

        return r < 0 ? r : !!(commit & RB_MISSED_EVENTS);
}

/* Field 5 is the intern table, not a column. */
static inline bool is_column(unsigned i) {
        return i >= COL_SWITCH_TIMESTAMP && i != 5;
}

/* Takes the walk's state out of @p and @b; a compact bundle gets room in every column
 * for as many events as the page can hold, each value at most 10 bytes. */
static inline __attribute__((always_inline)) int page_walk_begin(PageWalk *w, const FtraceParser *p,
                                                                 FtraceBundle *b, size_t data_len) {
        CompactSched *c = &b->compact;

        *w = (PageWalk) { .by_id = p->by_id, .n_by_id = p->n_by_id, .compact = b->compact_sched };
        for (unsigned i = 0; i < _COMPACT_ROLE_MAX; i++)
                w->signature[i] = w->compact ? p->signature[i] : NO_SIGNATURE;
        if (!w->compact)
                return 0;
#pragma GCC unroll 16
        for (unsigned i = 0; i < _COL_MAX; i++)
                if (is_column(i)) {
                        int r = buf_reserve(&c->col[i], (data_len / p->compact_min_record + 1) * 10);
                        if (r < 0)
                                return r;
                        w->at[i] = c->col[i].data + c->col[i].len;
                }
        w->last_switch_ts = c->last_switch_ts;
        w->last_waking_ts = c->last_waking_ts;
        return 0;
}

static inline __attribute__((always_inline)) void page_walk_end(const PageWalk *w, FtraceParser *p,
                                                                 FtraceBundle *b) {
        CompactSched *c = &b->compact;

        if (w->compact) {
#pragma GCC unroll 16
                for (unsigned i = 0; i < _COL_MAX; i++)
                        if (is_column(i))
                                c->col[i].len = (size_t) (w->at[i] - c->col[i].data);
                c->last_switch_ts = w->last_switch_ts;
                c->last_waking_ts = w->last_waking_ts;
        }
        if (w->n_events > 0) {
                b->n_events += w->n_events;
                b->last_ts = w->last_ts;
                p->stats.events += w->n_events;
        }
}

/* The threads an event names: the one that ran it, and the one a switch runs next. */
static inline void note_pids(FtraceBundle *b, const EventInfo *e, const uint8_t *rec) {
        if (e->has_pid)
                bundle_note_pid(b, (int32_t) rd32(rec + e->pid_offset));
        if (e->compact_role == COMPACT_SWITCH)
                bundle_note_pid(b, compact_int(e, CS_NEXT_PID, rec));
}

/* Compact events note only the pid a switch runs next or a waking wakes: a thread that
 * runs (and so wakes others, or is switched out) was switched in first, or was running
 * when tracing started, and then the /proc scan, made after tracing_on, describes it; a
 * thread woken that never runs before the end is named by its waking. One pid-cache probe
 * per event instead of two. @role is a constant at each call, so each call folds into the
 * one encoder it names. */
static inline __attribute__((always_inline)) int walk_compact(
                FtraceBundle *b, PageWalk *w, const EventInfo *e, const uint8_t *rec, uint64_t ts,
                CompactRole role) {
        int32_t pid = compact_int(e, role == COMPACT_SWITCH ? CS_NEXT_PID : CW_PID, rec);
        int r;

        if (role == COMPACT_SWITCH)
                r = bundle_add_compact_switch(b, w, e, rec, ts, pid);
        else
                r = bundle_add_compact_waking(b, w, e, rec, ts, pid);
        if (r < 0)
                return r;
        bundle_note_pid(b, pid);
        w->n_events++;
        w->last_ts = ts;
        return 1;
}

/* One data record. Returns 1 if an event was appended, 0 if skipped, -EBADMSG if the
 * record does not fit its format, -ENOMEM. */
static inline __attribute__((always_inline)) int parser_add_record(
                FtraceParser *p, FtraceBundle *b, PageWalk *w, const uint8_t *rec, size_t len, uint64_t ts) {
        const EventInfo *e;
        uint16_t id;
        int r;

        memcpy(&id, rec, sizeof(id));   /* common_type */
        if (_unlikely_(id >= w->n_by_id || !(e = w->by_id[id]))) {
                b->n_skipped++;
                p->stats.skipped++;
                return 0;
        }
        if (_unlikely_(len < e->min_len))
                return -EBADMSG;
        if (_unlikely_(e->is_print) && p->n_print_rules > 0 && len > e->print_buf_offset &&
            !ftrace_print_filter_allows(p->print_rules, p->n_print_rules,
                                        (const char *) rec + e->print_buf_offset, len - e->print_buf_offset)) {
                p->stats.filtered++;
                return 0;
        }
        if (w->compact && e->compact_role == COMPACT_SWITCH)
                return walk_compact(b, w, e, rec, ts, COMPACT_SWITCH);
        if (w->compact && e->compact_role == COMPACT_WAKING)
                return walk_compact(b, w, e, rec, ts, COMPACT_WAKING);
        r = bundle_add_full(b, e, rec, len, ts);
        if (r < 0)
                return r;
        note_pids(b, e, rec);
        if (_unlikely_(e->is_rename))
                ftrace_bundle_note_renamed(b, (int32_t) rd32(rec + e->rename_pid_offset));
        if (_unlikely_(e->notes_task))
                ftrace_bundle_note_task(b, e, rec, ts);
        w->n_events++;
        w->last_ts = ts;
        return 1;
}

/* Same as rb_fix_abs_ts(): an absolute time stamp keeps 59 bits, the rest comes from
 * the running time. */
static inline uint64_t fix_abs_ts(uint64_t abs, uint64_t running) {
        if (running & RB_TS_MSB) {
                abs |= running & RB_TS_MSB;
                if (abs < running)
                        abs += 1ULL << 59;
        }
        return abs;
}

/* A padding, time-extend or time-stamp record at @ptr (@left bytes to the commit).
 * Updates *ts; returns the record's size, or the negative FtraceParseStatus. */
static inline int meta_record(FtraceParser *p, const uint8_t *ptr, size_t left, uint32_t type_len,
                              uint32_t delta, uint64_t *ts) {
        size_t len;

        if (type_len == RB_TYPE_PADDING) {
                if (delta == 0)
                        return -FTRACE_STATUS_ABI_NULL_PADDING;
                if (left < 8)
                        return -FTRACE_STATUS_ABI_SHORT_PADDING_LENGTH;
                len = rd32(ptr + 4);    /* counts itself, not the header */
                if (len < 4)
                        return -FTRACE_STATUS_ABI_INVALID_PADDING_LENGTH;
                if (len > left - 4)
                        return -FTRACE_STATUS_ABI_END_OVERFLOW;
                if (delta != RB_PADDING_NO_DELTA)
                        *ts += delta;
                p->stats.paddings++;
                return (int) (4 + len);
        }
        if (left < 8)
                return type_len == RB_TYPE_TIME_EXTEND ? -FTRACE_STATUS_ABI_SHORT_TIME_EXTEND :
                                                         -FTRACE_STATUS_ABI_SHORT_TIME_STAMP;
        if (type_len == RB_TYPE_TIME_EXTEND) {
                *ts += ((uint64_t) rd32(ptr + 4) << RB_TS_SHIFT) | delta;
                p->stats.time_extends++;
        } else {
                *ts = fix_abs_ts(((uint64_t) rd32(ptr + 4) << RB_TS_SHIFT) | delta, *ts);
                p->stats.time_stamps++;
        }
        return 8;
}

/* Where the payload of the data record at @ptr lies. Returns 0 or the negative
 * FtraceParseStatus. */
static inline int data_record(const uint8_t *ptr, size_t left, uint32_t type_len,
                              const uint8_t **ret_rec, size_t *ret_len) {
        size_t len;

        if (type_len == 0) {
                if (left < 8)
                        return -FTRACE_STATUS_ABI_SHORT_DATA_LENGTH;
                len = rd32(ptr + 4);    /* counts itself */
                if (len == 0)
                        return -FTRACE_STATUS_ABI_ZERO_DATA_LENGTH;
                if (len < 4)
                        return -FTRACE_STATUS_ABI_INVALID_DATA_LENGTH;
                len -= 4;
                ptr += 8;
                left -= 8;
        } else {
                len = 4 * (size_t) type_len;
                ptr += 4;
                left -= 4;
        }
        if (len > left)
                return -FTRACE_STATUS_ABI_END_OVERFLOW;
        if (len < 2)
                return -FTRACE_STATUS_ABI_SHORT_EVENT_ID;
        *ret_rec = ptr;
        *ret_len = len;
        return 0;
}

/* Walks the records in [ptr, end). Returns 0, or the negative FtraceParseStatus that
 * stopped it (or -ENOMEM, flagged in *ret_nomem). */
static inline __attribute__((always_inline)) int parser_walk_records(
                FtraceParser *p, FtraceBundle *b, PageWalk *w, const uint8_t *ptr, const uint8_t *end,
                uint64_t ts, bool *ret_nomem) {
        int r;

        while (ptr < end) {
                size_t left = (size_t) (end - ptr), len;
                uint32_t header, type_len;
                const uint8_t *rec;

                /* The storm's records, switches and wakings of their usual length, skip
                 * the general checks: their signature says what they are and how long. */
                if (_likely_(left >= 8)) {
                        uint64_t sig = rd64(ptr) & SIGNATURE_MASK;
                        size_t size = 4 + 4 * (size_t) (sig & 0x1f);

                        if (sig == w->signature[COMPACT_SWITCH] && size <= left) {
                                ts += rd32(ptr) >> 5;
                                r = walk_compact(b, w, &standard_switch, ptr + 4, ts, COMPACT_SWITCH);
                                if (r < 0)
                                        return *ret_nomem = true, r;
                                ptr += size;
                                continue;
                        }
                        if (sig == w->signature[COMPACT_WAKING] && size <= left) {
                                ts += rd32(ptr) >> 5;
                                r = walk_compact(b, w, &standard_waking, ptr + 4, ts, COMPACT_WAKING);
                                if (r < 0)
                                        return *ret_nomem = true, r;
                                ptr += size;
                                continue;
                        }
                }
                if (left < 4)
                        return -FTRACE_STATUS_ABI_SHORT_EVENT_HEADER;
                header = rd32(ptr);
                type_len = header & 0x1f;
                if (_unlikely_(type_len > RB_TYPE_DATA_MAX)) {
                        r = meta_record(p, ptr, left, type_len, header >> 5, &ts);
                        if (r < 0)
                                return r;
                        ptr += r;
                        continue;
                }
                r = data_record(ptr, left, type_len, &rec, &len);
                if (r < 0)
                        return r;
                ts += header >> 5;
                r = parser_add_record(p, b, w, rec, len, ts);
                if (r < 0) {
                        *ret_nomem = r == -ENOMEM;
                        return r == -ENOMEM ? r : -FTRACE_STATUS_INVALID_EVENT;
                }
                ptr = rec + len;
        }
        return 0;
}

/* Walks a page's records. Returns the number of events appended, or as
 * parser_walk_records(); the events appended before an error stay. */
static int parser_walk(FtraceParser *p, FtraceBundle *b, const uint8_t *ptr, size_t len, uint64_t ts,
                       bool *ret_nomem) {
        PageWalk w;
        int r;

        r = page_walk_begin(&w, p, b, len);
        if (r < 0) {
                *ret_nomem = true;
                return r;
        }
        r = parser_walk_records(p, b, &w, ptr, ptr + len, ts, ret_nomem);
        page_walk_end(&w, p, b);
        return r < 0 ? r : (int) w.n_events;
}

int ftrace_parser_parse_page(FtraceParser *p, const void *page, size_t size, FtraceBundle *b) {
        const uint8_t *data = page;
        uint64_t ts = 0, commit = 0;
        size_t data_len;
        bool nomem = false;
        int r;

        assert(p);
        assert(b);
        assert(page || size == 0);

        if (!p->header_loaded)
                return -EINVAL;
        r = ftrace_bundle_begin(b);
        if (r < 0)
                return r;
        p->stats.pages++;

        if (size >= p->data_offset) {
                ts = rd64(data);
                commit = page_commit(p, data);
        }
        data_len = commit & RB_COMMIT_SIZE_MASK;
        if (size < p->data_offset || data_len > size - p->data_offset) {
                r = -FTRACE_STATUS_ABI_INVALID_PAGE_HEADER;
        } else {
                if (commit & RB_MISSED_EVENTS) {
                        b->lost_events = true;
                        p->stats.lost_pages++;
                }
                r = parser_walk(p, b, data + p->data_offset, data_len, ts, &nomem);
        }
        if (nomem)
                return -ENOMEM;
        if (r >= 0)
                return r;

        ftrace_bundle_add_error(b, ts, (FtraceParseStatus) -r);
        p->stats.bad_pages++;
        return -EBADMSG;
}
