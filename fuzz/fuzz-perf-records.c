/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target: a perf ring buffer's data area with arbitrary contents, walked by
 * perf_ring_next() from the reader's tail to the kernel's head and each record parsed
 * by perf_record_parse(), as the sampler's thread does; every pointer a parsed sample
 * holds is read whole, so that one past its record shows.
 *
 * The input: a flags byte (bit 0: samples carry CALLCHAIN, bit 1: and REGS_USER and
 * STACK_USER), a byte for the ring's size (8 << (b % 14) bytes), two bytes for the
 * tail's offset (rounded down to 8), two for how far the head is past the tail (at most twice the ring:
 * the kernel keeps it within one), then the ring's bytes (zeroes past the input).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "perf-record.h"

static uint64_t sink;

static void touch(const void *p, size_t n) {
        const uint8_t *b = p;

        for (size_t i = 0; i < n; i++)
                sink += b[i];
}

static void check_sample(const struct perf_event_header *h, const PerfRawSample *s) {
        const uint8_t *begin = (const uint8_t *) h, *end = begin + h->size;

        if (s->stack.n_ips > 0 && ((const uint8_t *) s->stack.ips < begin ||
                                   (const uint8_t *) (s->stack.ips + s->stack.n_ips) > end))
                abort();
        touch(s->stack.ips, s->stack.n_ips * sizeof(uint64_t));
        if (s->stack.regs)
                touch(s->stack.regs, PERF_DWARF_NREGS * sizeof(uint64_t));
        if (s->stack.stack && (s->stack.stack < begin || s->stack.stack + s->stack.stack_len > end))
                abort();
        touch(s->stack.stack, s->stack.stack_len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static _Alignas(8) uint8_t copy[PERF_RECORD_MAX_BYTES];
        const struct perf_event_header *h;
        uint64_t tail, head;
        size_t ring_bytes;
        uint8_t *ring;
        bool callstacks, dwarf;

        if (size < 6)
                return 0;
        callstacks = data[0] & 1;
        dwarf = data[0] & 2;
        ring_bytes = (size_t) 8 << (data[1] % 14);
        tail = ((uint64_t) data[2] << 8 | data[3]) & ~UINT64_C(7);   /* the kernel's records are 8-aligned */
        head = tail + (((uint64_t) data[4] << 8 | data[5]) % (2 * ring_bytes + 1));
        data += 6;
        size -= 6;
        ring = aligned_alloc(8, ring_bytes);
        if (!ring)
                abort();
        memset(ring, 0, ring_bytes);
        memcpy(ring, data, size < ring_bytes ? size : ring_bytes);
        while ((h = perf_ring_next(ring, ring_bytes, &tail, head, copy))) {
                PerfRecord rec;

                if (perf_record_parse(h, callstacks, dwarf, &rec) >= 0 && rec.kind == PERF_RECORD_KIND_SAMPLE)
                        check_sample(h, &rec.sample);
        }
        free(ring);
        return 0;
}
