/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "pb-wire.h"

bool pb_varint_decode(const uint8_t **p, const uint8_t *end, uint64_t *ret) {
        const uint8_t *s = *p;
        uint64_t v = 0;

        for (unsigned shift = 0; shift < 7 * PB_VARINT_MAX && s < end; shift += 7) {
                uint8_t byte = *s++;

                /* The tenth byte's shift is 63: only its lowest bit still fits. */
                v |= (uint64_t) (byte & 0x7f) << shift;
                if (!(byte & 0x80)) {
                        *p = s;
                        *ret = v;
                        return true;
                }
        }
        return false;
}
