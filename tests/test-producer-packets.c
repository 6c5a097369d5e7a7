/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit: a producer's packet as the service checks and stamps it (service/producers/
 * producer-packets.c): a TracePacket's top level is read, never more; a packet that is no
 * TracePacket, or writes a field only the service writes, is refused; the stamp is the
 * fields a reader takes as the service's word, once each.
 */
#include <errno.h>

/* Before glib.h, which redefines MIN and MAX over macro.h's. */
#include "pb-wire.h"
#include "producers/producers.h"
#include "trace.pb-c.h"

#include <glib.h>

static size_t pack_test_packet(uint8_t *buf, const char *str, bool forge_uid) {
        Tracebus__TracePacket p = TRACEBUS__TRACE_PACKET__INIT;
        Tracebus__TestEvent e = TRACEBUS__TEST_EVENT__INIT;

        e.str = (char *) str;
        p.for_testing = &e;
        p.has_timestamp = true;
        p.timestamp = 42;
        if (forge_uid) {
                p.has_trusted_uid = true;
                p.trusted_uid = 0;
        }
        return tracebus__trace_packet__pack(&p, buf);
}

static void test_check(void) {
        uint8_t buf[256];
        size_t len = pack_test_packet(buf, "payload", false);

        g_assert_cmpint(producer_packet_check(buf, len), ==, 0);
        g_assert_cmpint(producer_packet_check(buf, 0), ==, 0);
        /* Cut inside a field: not a packet. */
        g_assert_cmpint(producer_packet_check(buf, len - 1), ==, -EBADMSG);
        /* Field 0, and wire types 3, 4 (groups), 6 and 7. */
        g_assert_cmpint(producer_packet_check((const uint8_t *) "\x00\x01", 2), ==, -EBADMSG);
        for (uint8_t wire = 3; wire <= 7; wire++) {
                uint8_t key[2] = { (uint8_t) (1 << 3 | wire), 0 };

                if (wire != 5)
                        g_assert_cmpint(producer_packet_check(key, 2), ==, -EBADMSG);
        }
        /* A length past the end. */
        g_assert_cmpint(producer_packet_check((const uint8_t *) "\x0a\x05\x01", 3), ==, -EBADMSG);
        len = pack_test_packet(buf, "forged", true);
        g_assert_cmpint(producer_packet_check(buf, len), ==, -EPERM);
}

/* Each reserved field refuses the packet it is in, whatever its wire type. */
static void test_reserved(void) {
        static const uint32_t reserved[] = { 3, 10, 33, 35, 36, 50, 69, 79, 98, 124, 125, 133 };

        for (size_t i = 0; i < G_N_ELEMENTS(reserved); i++) {
                uint8_t buf[16], *p = buf;

                p = pb_varint_encode(p, pb_tag(reserved[i], PB_WIRE_VARINT));
                *p++ = 1;
                g_assert_cmpint(producer_packet_check(buf, p - buf), ==, -EPERM);
                p = buf;
                p = pb_varint_encode(p, pb_tag(reserved[i] + 1000, PB_WIRE_VARINT));
                *p++ = 1;
                g_assert_cmpint(producer_packet_check(buf, p - buf), ==, 0);
        }
}

/* The packet and its stamp read back as one TracePacket with the service's values. */
static void test_stamp(void) {
        uint8_t buf[256 + PRODUCER_STAMP_MAX];
        size_t len = pack_test_packet(buf, "stamped", false);
        Tracebus__TracePacket *p;

        len += producer_packet_stamp(buf + len, 1001, 4242, 77, true);
        g_assert_cmpint(producer_packet_check(buf, len), ==, -EPERM);   /* now it holds them */
        p = tracebus__trace_packet__unpack(NULL, len, buf);
        g_assert_nonnull(p);
        g_assert_cmpstr(p->for_testing->str, ==, "stamped");
        g_assert_cmpint(p->trusted_uid, ==, 1001);
        g_assert_cmpint(p->trusted_pid, ==, 4242);
        g_assert_cmpuint(p->trusted_packet_sequence_id, ==, 77);
        g_assert_cmpuint(p->previous_packet_dropped, ==, 1);
        tracebus__trace_packet__free_unpacked(p, NULL);
        g_assert_cmpuint(producer_packet_stamp(buf, UINT32_MAX >> 1, INT32_MAX, UINT32_MAX, true), <=, PRODUCER_STAMP_MAX);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/producer-packets/check", test_check);
        g_test_add_func("/producer-packets/reserved", test_reserved);
        g_test_add_func("/producer-packets/stamp", test_stamp);
        return g_test_run();
}
