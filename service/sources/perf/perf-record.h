/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <linux/perf_event.h>
#include <stdbool.h>

#include "perf-packets.h"

/*
 * The records of a perf ring buffer, as the kernel writes them for the sampler's
 * events: walked from the reader's tail to the kernel's head, and each parsed into a
 * PerfRecord without trusting its sizes (a record may claim more than it holds).
 */

/* x86-64's PERF_REG_X86_BP, SP and IP (6, 7, 8): what tracebus-unwind's DWARF unwinder starts from. */
#define PERF_DWARF_REGS ((UINT64_C(1) << 6) | (UINT64_C(1) << 7) | (UINT64_C(1) << 8))
#define PERF_DWARF_NREGS 3u
/* The largest record: its size is 16 bits. */
#define PERF_RECORD_MAX_BYTES 65536u

typedef enum PerfRecordKind {
        PERF_RECORD_KIND_OTHER,        /* a record the sampler does not use, or a short one */
        PERF_RECORD_KIND_SAMPLE,
        PERF_RECORD_KIND_LOST,
        PERF_RECORD_KIND_EXEC,         /* a COMM record of an exec */
} PerfRecordKind;

typedef struct PerfRecord {
        PerfRecordKind kind;
        PerfRawSample sample;          /* SAMPLE (its stack points into the record); misc for all */
        uint64_t lost;                 /* LOST */
        pid_t exec_pid;                /* EXEC */
} PerfRecord;

/* The next whole record of the ring's data area @data (@ring_bytes, a multiple of 8)
 * between *@tail (a multiple of 8, as the kernel keeps it) and @head, moving *@tail
 * past it; copied into @copy when it wraps around the end of the area. NULL when no
 * whole, sane record is left. */
const struct perf_event_header *perf_ring_next(const uint8_t *data, size_t ring_bytes, uint64_t *tail, uint64_t head,
                                               uint8_t copy[static PERF_RECORD_MAX_BYTES]);

/* Parses @h, a record of an event with PERF_SAMPLE_TID | TIME | CPU | PERIOD, and
 * CALLCHAIN if @callstacks, and REGS_USER and STACK_USER if @dwarf. -EBADMSG for a
 * sample too short for what it should carry. */
int perf_record_parse(const struct perf_event_header *h, bool callstacks, bool dwarf, PerfRecord *ret);
