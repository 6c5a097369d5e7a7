/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "macro.h"
#include "perf-record.h"

const struct perf_event_header *perf_ring_next(const uint8_t *data, size_t ring_bytes, uint64_t *tail, uint64_t head,
                                               uint8_t copy[static PERF_RECORD_MAX_BYTES]) {
        size_t off = *tail % ring_bytes, first = ring_bytes - off;
        struct perf_event_header hdr;

        if (*tail + sizeof(hdr) > head)
                return NULL;
        /* The kernel keeps records 8-byte aligned (so a header never straddles the end):
         * a size that is not a multiple of 8, or larger than the ring, is not a record. */
        memcpy(&hdr, data + off, sizeof(hdr));
        if (hdr.size < sizeof(hdr) || hdr.size % 8 != 0 || hdr.size > ring_bytes || *tail + hdr.size > head)
                return NULL;
        *tail += hdr.size;
        if (hdr.size <= first)
                return (const struct perf_event_header *) (data + off);
        memcpy(copy, data + off, first);
        memcpy(copy + first, data, hdr.size - first);
        return (const struct perf_event_header *) copy;
}

/* The sample's CALLCHAIN, then for UNWIND_DWARF its REGS_USER (abi, then BP, SP, IP
 * when abi is not 0) and STACK_USER (size, the bytes, dyn_size: how many are valid). */
static int parse_stack(bool dwarf, const uint8_t *p, const uint8_t *end, PerfStack *st) {
        uint64_t nr, abi, size, dyn;

        if (end - p < 8)
                return -EBADMSG;
        memcpy(&nr, p, 8);
        p += 8;
        if (nr > (uint64_t) (end - p) / 8)
                return -EBADMSG;
        st->ips = (const uint64_t *) p;
        st->n_ips = nr;
        p += nr * 8;
        if (!dwarf)
                return 0;
        if (end - p < 8)
                return -EBADMSG;
        memcpy(&abi, p, 8);
        p += 8;
        if (abi != 0) {
                if (end - p < (ptrdiff_t) (PERF_DWARF_NREGS * 8))
                        return -EBADMSG;
                st->regs = (const uint64_t *) p;
                st->regs_mask = PERF_DWARF_REGS;
                p += PERF_DWARF_NREGS * 8;
        }
        if (end - p < 8)
                return -EBADMSG;
        memcpy(&size, p, 8);
        p += 8;
        if (size == 0 || size > (uint64_t) (end - p) || (uint64_t) (end - p) - size < 8) {
                st->regs = NULL;   /* no stack: nothing to unwind */
                return 0;
        }
        memcpy(&dyn, p + size, 8);
        st->stack = p;
        st->stack_len = MIN(dyn, size);
        return 0;
}

static int parse_sample(const uint8_t *p, const uint8_t *end, bool callstacks, bool dwarf, PerfRawSample *s) {
        if (end - p < 32)
                return -EBADMSG;
        memcpy(&s->pid, p, 4);
        memcpy(&s->tid, p + 4, 4);
        memcpy(&s->time, p + 8, 8);
        memcpy(&s->cpu, p + 16, 4);
        memcpy(&s->period, p + 24, 8);
        p += 32;
        s->stack.tid = (pid_t) s->tid;
        return callstacks ? parse_stack(dwarf, p, end, &s->stack) : 0;
}

int perf_record_parse(const struct perf_event_header *h, bool callstacks, bool dwarf, PerfRecord *ret) {
        const uint8_t *p = (const uint8_t *) (h + 1), *end = (const uint8_t *) h + h->size;
        uint32_t pid;
        int r;

        *ret = (PerfRecord) { .kind = PERF_RECORD_KIND_OTHER, .sample.misc = h->misc };
        switch (h->type) {
        case PERF_RECORD_SAMPLE:
                r = parse_sample(p, end, callstacks, dwarf, &ret->sample);
                if (r < 0)
                        return r;
                ret->kind = PERF_RECORD_KIND_SAMPLE;
                return 0;
        case PERF_RECORD_LOST:
                if (end - p < 16)
                        return 0;
                memcpy(&ret->lost, p + 8, 8);
                ret->kind = PERF_RECORD_KIND_LOST;
                return 0;
        case PERF_RECORD_COMM:
                if (end - p < 8 || !(h->misc & PERF_RECORD_MISC_COMM_EXEC))
                        return 0;
                memcpy(&pid, p, 4);
                ret->exec_pid = (pid_t) pid;
                ret->kind = PERF_RECORD_KIND_EXEC;
                return 0;
        default:
                return 0;
        }
}
