/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdlib.h>
#include <string.h>

#include "fd-util.h"
#include "macro.h"
#include "trace-writer.h"

/* Trace.packet is field 1, length-delimited: (1 << 3) | 2. */
#define TRACE_PACKET_TAG 0x0a
/* TracePacket fields written by hand around a pre-encoded bundle. */
#define TAG_FTRACE_EVENTS 0x0a                  /* field 1, length-delimited */
#define TAG_SEQUENCE_ID 0x50                    /* field 10, varint */
#define TAG_SEQUENCE_FLAGS 0x68                 /* field 13, varint */
#define TAG_FIRST_PACKET_ON_SEQUENCE 0xb8, 0x05 /* field 87, varint */
#define SEQ_INCREMENTAL_STATE_CLEARED 1

size_t varint_encode(uint64_t v, uint8_t out[static 10]) {
        size_t n = 0;

        do {
                out[n] = (uint8_t) (v & 0x7f);
                v >>= 7;
                if (v)
                        out[n] |= 0x80;
                n++;
        } while (v);
        return n;
}

void trace_writer_init(TraceWriter *w, int fd, uint64_t max_bytes) {
        *w = (TraceWriter) {
                .fd = fd,
                .max_bytes = max_bytes,
        };
}

void trace_writer_done(TraceWriter *w) {
        w->buf = mfree(w->buf);
        w->len = w->allocated = 0;
}

size_t trace_writer_pending(const TraceWriter *w) {
        return w->len;
}

static int writer_reserve(TraceWriter *w, size_t extra) {
        size_t need = w->len + extra;
        uint8_t *p;

        if (need <= w->allocated)
                return 0;
        need = MAX(need, MAX(w->allocated * 2, (size_t) 64 * 1024));
        p = realloc(w->buf, need);
        if (!p)
                return -ENOMEM;
        w->buf = p;
        w->allocated = need;
        return 0;
}

static void writer_put(TraceWriter *w, const void *data, size_t len) {
        memcpy(w->buf + w->len, data, len);
        w->len += len;
}

static void writer_put_varint(TraceWriter *w, uint64_t v) {
        uint8_t tmp[10];
        writer_put(w, tmp, varint_encode(v, tmp));
}

/* Marks the first packet of each sequence, as trace_processor expects (facts note 3.1). */
static bool writer_take_first_on_sequence(TraceWriter *w, uint32_t sequence_id) {
        assert(sequence_id < _TRACE_SEQUENCE_MAX);
        if (w->sequence_started[sequence_id])
                return false;
        w->sequence_started[sequence_id] = true;
        return true;
}

int trace_writer_append(TraceWriter *w, Tracebus__TracePacket *packet, uint32_t sequence_id) {
        size_t size;
        int r;

        assert(w);
        assert(packet);

        packet->has_trusted_packet_sequence_id = true;
        packet->trusted_packet_sequence_id = sequence_id;
        if (writer_take_first_on_sequence(w, sequence_id)) {
                packet->has_first_packet_on_sequence = packet->first_packet_on_sequence = true;
                packet->has_sequence_flags = true;
                packet->sequence_flags = SEQ_INCREMENTAL_STATE_CLEARED;
        }

        size = tracebus__trace_packet__get_packed_size(packet);
        r = writer_reserve(w, size + 11);
        if (r < 0)
                return r;
        w->buf[w->len++] = TRACE_PACKET_TAG;
        writer_put_varint(w, size);
        w->len += tracebus__trace_packet__pack(packet, w->buf + w->len);
        return 0;
}

int trace_writer_append_ftrace_bundle(TraceWriter *w, const uint8_t *bundle, size_t len) {
        static const uint8_t first_flags[] = {
                TAG_SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED,
                TAG_FIRST_PACKET_ON_SEQUENCE, 1,
        };
        uint8_t tmp[10];
        bool first;
        size_t packet_len;
        int r;

        first = writer_take_first_on_sequence(w, TRACE_SEQUENCE_FTRACE);
        packet_len = 1 + varint_encode(len, tmp) + len + 2 + (first ? sizeof(first_flags) : 0);

        r = writer_reserve(w, packet_len + 11);
        if (r < 0)
                return r;
        w->buf[w->len++] = TRACE_PACKET_TAG;
        writer_put_varint(w, packet_len);
        w->buf[w->len++] = TAG_FTRACE_EVENTS;
        writer_put_varint(w, len);
        writer_put(w, bundle, len);
        w->buf[w->len++] = TAG_SEQUENCE_ID;
        w->buf[w->len++] = TRACE_SEQUENCE_FTRACE;
        if (first)
                writer_put(w, first_flags, sizeof(first_flags));
        return 0;
}

/* Returns how many leading bytes of the buffer form whole packets that fit in @room. */
static size_t writer_whole_packets_within(const TraceWriter *w, uint64_t room) {
        size_t off = 0;

        while (off < w->len) {
                uint64_t len = 0;
                size_t p = off + 1;
                unsigned shift = 0;

                /* Our own framing: tag byte, then a varint length. */
                while (p < w->len) {
                        len |= (uint64_t) (w->buf[p] & 0x7f) << shift;
                        shift += 7;
                        if (!(w->buf[p++] & 0x80))
                                break;
                }
                if (p + len - off > room)
                        break;
                room -= p + len - off;
                off = p + len;
        }
        return off;
}

int trace_writer_flush(TraceWriter *w) {
        size_t n = w->len;
        int r;

        if (w->limit_reached)
                return -EFBIG;
        if (n == 0)
                return 0;

        if (w->max_bytes > 0) {
                uint64_t room = w->max_bytes > w->bytes_written ? w->max_bytes - w->bytes_written : 0;
                n = writer_whole_packets_within(w, room);
        }

        r = loop_write(w->fd, w->buf, n);
        if (r < 0)
                return r;
        w->bytes_written += n;

        if (n < w->len) {
                /* The rest would pass max_file_size_bytes: the file ends at a packet boundary. */
                w->limit_reached = true;
                w->len = 0;
                return -EFBIG;
        }
        w->len = 0;
        return 0;
}
