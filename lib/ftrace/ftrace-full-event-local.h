/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Events written whole: FtraceEvent { timestamp 1, pid 2, then the event message } as
 * field 2 of the FtraceEventBundle (trace_processor's fast path wants that order), with
 * the typed message of a known event or a GenericFtraceEvent (ftrace-event-info.c says
 * which, and how each field is read). Inline in the page walker, its only caller,
 * because it pays: moved into ftrace-full-event.c as a call, the encoder cost 5.2% more
 * instructions per event on a sched storm's pages and 5.7% on the fixture pages
 * (callgrind, bench/parse-bench --full --bundle-pages 32: 368.3 -> 387.6 and 371.6 ->
 * 392.9).
 */
#include "ftrace-parser-local.h"

/* ftrace-full-event.c: the key and value of the fields that are neither numbers nor
 * char arrays (hashed addresses among them: @e holds the key). NULL if the record
 * contradicts its format. */
uint8_t *ftrace_put_field_other(uint8_t *p, const EventInfo *e, const FieldSpec *f, const uint8_t *rec,
                                size_t len);

/* If-chains, not switches: a jump table's indirect branch per field costs more here
 * than the few well-predicted compares (and kernel formats are mostly 4 and 8 bytes). */
static inline uint64_t read_number(const uint8_t *s, unsigned size, bool is_signed) {
        if (_likely_(size == 4)) {
                uint32_t v = rd32(s);

                return is_signed ? (uint64_t) (int64_t) (int32_t) v : v;
        }
        if (size == 8)
                return rd64(s);
        if (size == 2) {
                uint16_t v;

                memcpy(&v, s, sizeof(v));
                return is_signed ? (uint64_t) (int64_t) (int16_t) v : v;
        }
        return is_signed ? (uint64_t) (int64_t) (int8_t) s[0] : s[0];
}


/* A char array of @size bytes as a string; the bound reserved @size bytes of room. */
static inline uint8_t *put_chars(uint8_t *p, const uint8_t *s, size_t size) {
        size_t n = str_len(s, size);

        *p++ = (uint8_t) n;
        if (_likely_(size == 16 && n < 0x80)) {
                memcpy(p, s, 16);       /* fixed size: two moves, not a call */
                return p + n;
        }
        return pb_put_bytes(p - 1, s, n);
}


/* Writes the key and value of @f. NULL if the record contradicts its format. The caller
 * reserved EventInfo's bound, which covers every case. */
static inline uint8_t *put_field(uint8_t *p, const EventInfo *e, const FieldSpec *f, const uint8_t *rec,
                                 size_t len) {
        if (_likely_(f->source == SRC_INT)) {
                p = pb_put_key(p, &f->key);
                return pb_varint_encode(p, read_number(rec + f->offset, f->size, f->is_signed));
        }
        if (_likely_(f->source == SRC_CHARS)) {
                p = pb_put_key(p, &f->key);
                return put_chars(p, rec + f->offset, f->size);
        }
        return ftrace_put_field_other(p, e, f, rec, len);
}

static inline uint8_t *put_int32(uint8_t *p, const FieldSpec *f, const uint8_t *rec) {
        uint32_t v = rd32(rec + f->offset);

        p = pb_put_key(p, &f->key);
        return pb_varint_encode(p, f->is_signed ? (uint64_t) (int64_t) (int32_t) v : v);
}

static inline uint8_t *put_comm(uint8_t *p, const FieldSpec *f, const uint8_t *rec) {
        p = pb_put_key(p, &f->key);
        return put_chars(p, rec + f->offset, 16);
}

/* Layouts checked by event_info_setup_shape(). */
static inline uint8_t *put_sched_switch(uint8_t *p, const FieldSpec *f, const uint8_t *rec) {
        p = put_comm(p, &f[0], rec);
        p = put_int32(p, &f[1], rec);
        p = put_int32(p, &f[2], rec);
        p = pb_put_key(p, &f[3].key);
        p = pb_varint_encode(p, rd64(rec + f[3].offset));
        p = put_comm(p, &f[4], rec);
        p = put_int32(p, &f[5], rec);
        return put_int32(p, &f[6], rec);
}

static inline uint8_t *put_sched_waking(uint8_t *p, const FieldSpec *f, const uint8_t *rec) {
        p = put_comm(p, &f[0], rec);
        p = put_int32(p, &f[1], rec);
        p = put_int32(p, &f[2], rec);
        return put_int32(p, &f[3], rec);
}

static inline uint8_t *put_typed_fields(uint8_t *p, const EventInfo *e, const uint8_t *rec, size_t len) {
        for (size_t i = 0; p && i < e->n_fields; i++)
                p = put_field(p, e, &e->fields[i], rec, len);
        return p;
}

/* GenericFtraceEvent { event_name 1, field 2 { name 1, str_value 3 | int_value 4 | uint_value 5 } } */
static inline uint8_t *put_generic_fields(uint8_t *p, const EventInfo *e, const uint8_t *rec, size_t len) {
        memcpy(p, e->name_pb, e->name_pb_len);
        p += e->name_pb_len;
        for (size_t i = 0; p && i < e->n_fields; i++) {
                const FieldSpec *f = &e->fields[i];
                uint8_t *field_len;

                *p++ = (GENERIC_FIELD << 3) | PB_WIRE_LEN;
                field_len = p++;
                memcpy(p, f->name_pb, f->name_pb_len);
                p = put_field(p + f->name_pb_len, e, f, rec, len);
                if (p)
                        p = pb_close(field_len, p);
        }
        return p;
}

/* Appends the record @rec of @len bytes as a whole FtraceEvent. -EBADMSG, with nothing
 * appended, if the record contradicts its format. */
static inline int bundle_add_full(FtraceBundle *b, const EventInfo *e, const uint8_t *rec, size_t len,
                                  uint64_t ts) {
        uint8_t *p, *event_len, *message_len;
        int r;

        r = buf_reserve(&b->out, e->out_fixed + e->n_dynamic * 2 * len);
        if (r < 0)
                return r;
        p = b->out.data + b->out.len;
        *p++ = (BUNDLE_EVENT << 3) | PB_WIRE_LEN;
        event_len = p++;
        /* timestamp, pid, then the event: the order trace_processor's fast path expects. */
        *p++ = (EVENT_TIMESTAMP << 3) | PB_WIRE_VARINT;
        p = pb_varint_encode(p, ts);
        *p++ = (EVENT_PID << 3) | PB_WIRE_VARINT;
        p = pb_varint_encode(p, e->has_pid ? rd32(rec + e->pid_offset) : 0);
        p = pb_put_key(p, &e->key);
        message_len = p++;
        if (e->shape == SHAPE_SCHED_SWITCH)
                p = put_sched_switch(p, e->fields, rec);
        else if (e->shape == SHAPE_SCHED_WAKING)
                p = put_sched_waking(p, e->fields, rec);
        else if (e->generic)
                p = put_generic_fields(p, e, rec, len);
        else
                p = put_typed_fields(p, e, rec, len);
        if (!p)
                return -EBADMSG;        /* nothing committed: b->out.len is unchanged */
        p = pb_close(message_len, p);
        p = pb_close(event_len, p);
        b->out.len = (size_t) (p - b->out.data);
        return 0;
}
