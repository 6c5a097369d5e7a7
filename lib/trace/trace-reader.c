/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "trace-reader.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "fd-util.h"
#include "macro.h"
#include "pb-wire.h"

/* The payload of a field whose key is read: *q moves past it. */
static int field_payload(const uint8_t **q, const uint8_t *end, TraceField *f) {
        uint64_t len;

        switch (f->wire_type) {
        case TRACE_WIRE_VARINT:
                return pb_varint_decode(q, end, &f->value) ? 0 : -EBADMSG;
        case TRACE_WIRE_FIXED64:
        case TRACE_WIRE_FIXED32: {
                size_t n = f->wire_type == TRACE_WIRE_FIXED64 ? 8 : 4;
                uint8_t le[8] = {};

                if ((size_t) (end - *q) < n)
                        return -EBADMSG;
                memcpy(le, *q, n);
                /* Little-endian on the wire, whatever the host is. */
                for (size_t i = n; i > 0; i--)
                        f->value = f->value << 8 | le[i - 1];
                *q += n;
                return 0;
        }
        case TRACE_WIRE_LEN:
                if (!pb_varint_decode(q, end, &len) || len > (uint64_t) (end - *q))
                        return -EBADMSG;
                f->data = *q;
                f->len = (size_t) len;
                *q += len;
                return 0;
        default:
                /* Groups (3, 4) are not in any of our messages; 6 and 7 are not wire types. */
                return -EBADMSG;
        }
}

int trace_field_next(const uint8_t **p, const uint8_t *end, TraceField *ret) {
        const uint8_t *q;
        uint64_t key;
        TraceField f;
        int r;

        assert(p && *p && end && ret);

        q = *p;
        if (q >= end)
                return 0;
        if (!pb_varint_decode(&q, end, &key) || key >> 3 == 0 || key >> 3 > UINT32_MAX)
                return -EBADMSG;
        f = (TraceField) { .number = (uint32_t) (key >> 3), .wire_type = (TraceWireType) (key & 7) };
        r = field_payload(&q, end, &f);
        if (r < 0)
                return r;
        f.framed_len = (size_t) (q - *p);
        *p = q;
        *ret = f;
        return 1;
}

int trace_field_find(const uint8_t *msg, size_t len, uint32_t number, TraceWireType wire_type, TraceField *ret) {
        const uint8_t *p = msg, *end = msg + len;
        TraceField f, found = {};
        bool any = false;
        int r;

        assert(msg || len == 0);
        assert(ret);

        if (!msg)
                return 0;
        while ((r = trace_field_next(&p, end, &f)) > 0)
                if (f.number == number && f.wire_type == wire_type) {
                        found = f;
                        any = true;
                }
        if (!any)
                return r < 0 ? r : 0;
        *ret = found;
        return 1;
}

/* One round of inflate() into the free tail of *buf, which doubles when full. */
static int inflate_some(z_stream *z, uint8_t **buf, size_t *size, size_t *used) {
        int zr;

        if (*used == *size) {
                size_t n = *size * 2;
                uint8_t *b;

                if (n < *size)
                        return -ENOMEM;
                b = realloc(*buf, n);
                if (!b)
                        return -ENOMEM;
                *buf = b;
                *size = n;
        }
        z->next_out = *buf + *used;
        z->avail_out = (uInt) MIN(*size - *used, (size_t) UINT_MAX);
        zr = inflate(z, Z_NO_FLUSH);
        *used = (size_t) (z->next_out - *buf);
        if (zr == Z_STREAM_END)
                return 1;
        if (zr == Z_MEM_ERROR)
                return -ENOMEM;
        /* No progress with all the input given: the stream is torn. */
        if (zr == Z_BUF_ERROR && z->avail_in == 0)
                return -EBADMSG;
        if (zr != Z_OK && zr != Z_BUF_ERROR)
                return -EBADMSG;
        return 0;
}

int trace_zlib_inflate(const uint8_t *data, size_t len, uint8_t **ret, size_t *ret_len) {
        _cleanup_free_ uint8_t *buf = NULL;
        size_t size = MAX(len * 4, (size_t) 4096), used = 0;
        z_stream z = {};
        int r;

        assert(data || len == 0);
        assert(ret && ret_len);

        if (len > UINT_MAX)
                return -EBADMSG;
        buf = malloc(size);
        if (!buf)
                return -ENOMEM;
        if (inflateInit(&z) != Z_OK)
                return -ENOMEM;
        z.next_in = (Bytef *) data;
        z.avail_in = (uInt) len;
        do
                r = inflate_some(&z, &buf, &size, &used);
        while (r == 0);
        /* Bytes after the stream's end would be lost on trace_processor: not one whole stream. */
        if (r > 0 && z.avail_in > 0)
                r = -EBADMSG;
        (void) inflateEnd(&z);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(buf);
        *ret_len = used;
        return 0;
}

void trace_reader_init(TraceReader *r, const uint8_t *data, size_t len, TraceReaderFlags flags) {
        assert(r);
        assert(data || len == 0);

        *r = (TraceReader) { .data = data, .len = len, .flags = flags };
}

void trace_reader_done(TraceReader *r) {
        if (!r)
                return;
        for (size_t i = 0; i < r->n_inflated; i++)
                free(r->inflated[i]);
        free(r->inflated);
        r->inflated = NULL;
        r->n_inflated = 0;
        r->inner = NULL;
}

size_t trace_reader_offset(const TraceReader *r) {
        assert(r);
        return r->pos;
}

/* One framed packet (field 1 of Trace) at *pos of data: *pos moves past it. */
static int read_framed(const uint8_t *data, size_t len, size_t *pos, size_t offset, TraceRawPacket *ret) {
        const uint8_t *p = data + *pos;
        TraceField f;

        if (trace_field_next(&p, data + len, &f) <= 0 || f.number != TRACE_FIELD_PACKET ||
            f.wire_type != TRACE_WIRE_LEN)
                return -EBADMSG;
        *ret = (TraceRawPacket) {
                .data = f.data,
                .len = f.len,
                .framed_len = f.framed_len,
                .offset = offset,
        };
        *pos += f.framed_len;
        return 0;
}

static bool packet_compressed(const TraceRawPacket *k, TraceField *ret) {
        /* A packet whose fields do not walk is not one to inflate; unpacking it will say why. */
        return trace_field_find(k->data, k->len, TRACE_PACKET_FIELD_COMPRESSED_PACKETS, TRACE_WIRE_LEN, ret) > 0;
}

/* Inflates the compressed_packets of the packet at offset, to be walked next. */
static int reader_push_inflated(TraceReader *r, const TraceField *z, size_t offset) {
        _cleanup_free_ uint8_t *out = NULL;
        uint8_t **list;
        size_t out_len;
        int k;

        r->n_compressed++;
        k = trace_zlib_inflate(z->data, z->len, &out, &out_len);
        if (k == -EBADMSG)
                return -EPROTO;
        if (k < 0)
                return k;
        list = reallocarray(r->inflated, r->n_inflated + 1, sizeof(*list));
        if (!list)
                return -ENOMEM;
        r->inflated = list;
        r->n_inflated_bytes += out_len;
        r->inner = r->inflated[r->n_inflated++] = TAKE_PTR(out);
        r->inner_len = out_len;
        r->inner_pos = 0;
        r->inner_offset = offset;
        return 0;
}

/* 1: a packet from the inflated stream; 0: its end; -EPROTO: the rest of it skipped. */
static int reader_next_inner(TraceReader *r, TraceRawPacket *ret) {
        TraceRawPacket k;
        TraceField z;

        if (r->inner_pos >= r->inner_len) {
                r->inner = NULL;
                return 0;
        }
        if (read_framed(r->inner, r->inner_len, &r->inner_pos, r->inner_offset, &k) < 0 ||
            packet_compressed(&k, &z)) {
                /* Perfetto's service never nests compressed_packets. */
                r->inner = NULL;
                return -EPROTO;
        }
        k.inflated = true;
        *ret = k;
        return 1;
}

int trace_reader_next(TraceReader *r, TraceRawPacket *ret) {
        TraceRawPacket k;
        TraceField z;
        int q;

        assert(r && ret);

        for (;;) {
                if (r->inner) {
                        q = reader_next_inner(r, ret);
                        if (q != 0)
                                return q;
                }
                if (r->pos >= r->len)
                        return 0;
                q = read_framed(r->data, r->len, &r->pos, r->pos, &k);
                if (q < 0)
                        return q;
                if ((r->flags & TRACE_READER_KEEP_COMPRESSED) || !packet_compressed(&k, &z)) {
                        *ret = k;
                        return 1;
                }
                q = reader_push_inflated(r, &z, k.offset);
                if (q < 0)
                        return q;
        }
}

int trace_packet_unpack(const TraceRawPacket *packet, Tracebus__TracePacket **ret) {
        Tracebus__TracePacket *p;

        assert(packet && ret);

        p = tracebus__trace_packet__unpack(NULL, packet->len, packet->data);
        if (!p)
                return -EBADMSG;
        *ret = p;
        return 0;
}

int trace_file_load(const char *path, uint8_t **ret, size_t *ret_len) {
        assert(path && ret && ret_len);

        /* A trace may be as large as the address space allows. */
        return read_full_file(path, SIZE_MAX - 1, (char **) ret, ret_len);
}
