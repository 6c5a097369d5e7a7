/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A producer's packets, checked and stamped. A packet is its writer's bytes: the service
 * reads only its top level (the keys and lengths), drops it whole when it is no
 * TracePacket or when it writes a field only the service may write, and appends what the
 * service vouches for: who wrote it and on which sequence. Appending is enough, since
 * a reader takes the last value of a field and the packet holds none of these. */
#include <errno.h>

#include "pb-wire.h"
#include "producers.h"

/* TracePacket's fields that only the service writes, as Perfetto's service reserves them:
 * trusted_uid (3), trusted_packet_sequence_id (10), trusted_pid (79), and the service's
 * own packets' fields (trace config, stats, clone and trigger records...). */
static bool field_reserved(uint64_t field) {
        static const uint16_t reserved[] = { 3, 10, 33, 35, 36, 50, 69, 79, 98, 124, 125, 133 };

        for (size_t i = 0; i < ELEMENTSOF(reserved); i++)
                if (field == reserved[i])
                        return true;
        return false;
}

/* Moves *@p past one field's value of @wire_type; false when it runs past @end. */
static bool skip_value(const uint8_t **p, const uint8_t *end, unsigned wire_type) {
        uint64_t v;

        switch (wire_type) {
        case PB_WIRE_VARINT:
                return pb_varint_decode(p, end, &v);
        case PB_WIRE_I64:
                if (end - *p < 8)
                        return false;
                *p += 8;
                return true;
        case PB_WIRE_LEN:
                if (!pb_varint_decode(p, end, &v) || v > (uint64_t) (end - *p))
                        return false;
                *p += v;
                return true;
        case PB_WIRE_I32:
                if (end - *p < 4)
                        return false;
                *p += 4;
                return true;
        default:
                return false;
        }
}

int producer_packet_check(const uint8_t *data, size_t size) {
        const uint8_t *p = data, *end = data + size;
        bool reserved = false;

        while (p < end) {
                uint64_t key;

                if (!pb_varint_decode(&p, end, &key) || key >> 3 == 0 || key >> 3 > UINT32_MAX >> 3)
                        return -EBADMSG;
                if (!skip_value(&p, end, key & 7))
                        return -EBADMSG;
                reserved = reserved || field_reserved(key >> 3);
        }
        return reserved ? -EPERM : 0;
}

static uint8_t *put_varint_field(uint8_t *out, uint32_t field, uint64_t value) {
        out = pb_varint_encode(out, pb_tag(field, PB_WIRE_VARINT));
        return pb_varint_encode(out, value);
}

size_t producer_packet_stamp(uint8_t out[static PRODUCER_STAMP_MAX], uid_t uid, pid_t pid, uint32_t sequence_id,
                             bool dropped) {
        uint8_t *p = out;

        /* int32 fields: a negative value would take ten bytes; uids and pids are not. */
        p = put_varint_field(p, 3, (uint32_t) uid);
        p = put_varint_field(p, 10, sequence_id);
        p = put_varint_field(p, 79, (uint32_t) pid);
        if (dropped)
                p = put_varint_field(p, 42, 1);
        return (size_t) (p - out);
}
