/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace.pb-c.h"

/*
 * Reads a Perfetto trace: the one reader of the project (the CLI, the tests and the
 * benchmark alike). A trace is a serialized Trace message, a concatenation of
 * (0x0a, varint length, TracePacket bytes). Three levels:
 *
 *  - the field walker (trace_field_next()): the fields of any message, one by one,
 *    with their wire type and the bytes each takes, for what is checked at the wire
 *    level (field order, byte counts);
 *  - the packet walker (TraceReader): the packets of a trace with their offsets, the
 *    packets inside compressed_packets (TracePacket field 50, a zlib stream of
 *    TracePackets) inflated with zlib in their place, as trace_processor reads them;
 *  - trace_packet_unpack(): a packet as protobuf-c's Tracebus__TracePacket.
 *
 * Torn or invalid input is a negative errno, never a crash and never a read past the
 * end. Nothing here allocates but the inflated packets and the unpacked messages.
 */

enum {
        TRACE_FIELD_PACKET = 1,                       /* Trace.packet */
        TRACE_PACKET_FIELD_COMPRESSED_PACKETS = 50,   /* TracePacket.compressed_packets */
};

typedef enum TraceWireType {
        TRACE_WIRE_VARINT = 0,
        TRACE_WIRE_FIXED64 = 1,
        TRACE_WIRE_LEN = 2,
        TRACE_WIRE_FIXED32 = 5,
} TraceWireType;

typedef struct TraceField {
        uint32_t number;
        TraceWireType wire_type;
        uint64_t value;         /* varint, fixed32 and fixed64 fields */
        const uint8_t *data;    /* length-delimited fields: their bytes */
        size_t len;
        size_t framed_len;      /* what the field takes in its message: key, length, payload */
} TraceField;

/**
 * trace_field_next() - the next field of a message
 * @p: where the field starts; moved past it on success
 * @end: the end of the message
 * @ret: the field
 *
 * Returns 1 with a field, 0 at the end of the message, -EBADMSG when the field is
 * malformed or runs past @end (@p is then left where it was).
 */
int trace_field_next(const uint8_t **p, const uint8_t *end, TraceField *ret);

/**
 * trace_field_find() - the last field @number of wire type @wire_type in a message
 * (protobuf's rule for a non-repeated field: the last one wins).
 *
 * Returns 1 with it in @ret, 0 when there is none, -EBADMSG when the message is
 * malformed before one is found.
 */
int trace_field_find(const uint8_t *msg, size_t len, uint32_t number, TraceWireType wire_type, TraceField *ret);

/**
 * trace_zlib_inflate() - inflates one whole zlib stream (RFC 1950) with zlib
 * @ret: malloc()ed output (a valid pointer even when empty), free() it
 *
 * Returns 0, -EBADMSG when @data is not exactly one whole stream (torn, corrupt or
 * followed by other bytes), -ENOMEM.
 */
int trace_zlib_inflate(const uint8_t *data, size_t len, uint8_t **ret, size_t *ret_len);

typedef struct TraceRawPacket {
        const uint8_t *data;   /* the TracePacket's bytes */
        size_t len;
        size_t framed_len;     /* with its tag and length: what it takes in the trace */
        size_t offset;         /* where it starts in the trace; inside compressed_packets,
                                * where the packet that held them starts */
        bool inflated;         /* it came out of compressed_packets */
} TraceRawPacket;

typedef enum TraceReaderFlags {
        /* Yield a compressed_packets packet itself rather than the packets inside. */
        TRACE_READER_KEEP_COMPRESSED = 1 << 0,
} TraceReaderFlags;

typedef struct TraceReader {
        const uint8_t *data;
        size_t len;
        size_t pos;              /* the end of the whole outer packets read */
        TraceReaderFlags flags;
        uint8_t **inflated;      /* every inflated stream: yielded packets point into them */
        size_t n_inflated;
        const uint8_t *inner;    /* the stream being walked, NULL when none */
        size_t inner_len, inner_pos, inner_offset;
        unsigned n_compressed;   /* compressed_packets met, whether they inflated or not */
        size_t n_inflated_bytes; /* what they inflated to */
} TraceReader;

/**
 * trace_reader_init() - reads the trace @data (which must outlive the reader)
 */
void trace_reader_init(TraceReader *r, const uint8_t *data, size_t len, TraceReaderFlags flags);

/**
 * trace_reader_done() - frees the inflated packets; the packets read point into them
 */
void trace_reader_done(TraceReader *r);

/**
 * trace_reader_next() - the next packet
 *
 * Returns 1 with a packet in @ret, 0 at the end, or:
 * -EBADMSG  the trace is torn or is not a Trace at trace_reader_offset(); reading
 *           stops there (every later call returns the same);
 * -EPROTO   a compressed_packets does not inflate, holds a torn packet or another
 *           compressed_packets; the rest of it is skipped and the next call goes on
 *           after it;
 * -ENOMEM.
 */
int trace_reader_next(TraceReader *r, TraceRawPacket *ret);

/**
 * trace_reader_offset() - the bytes of whole packets read from the start of the trace
 */
size_t trace_reader_offset(const TraceReader *r);

/**
 * trace_packet_unpack() - the packet as a protobuf-c message
 * @ret: free with tracebus__trace_packet__free_unpacked(*ret, NULL)
 *
 * Returns 0, or -EBADMSG when it does not unpack as a TracePacket.
 */
int trace_packet_unpack(const TraceRawPacket *packet, Tracebus__TracePacket **ret);

/**
 * trace_file_load() - the whole file at @path
 * @ret: malloc()ed (a valid pointer even when empty), free() it
 *
 * Returns 0 or a negative errno.
 */
int trace_file_load(const char *path, uint8_t **ret, size_t *ret_len);
