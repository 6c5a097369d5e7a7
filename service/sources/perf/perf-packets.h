/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "perf-local.h"

/* A sample as the kernel wrote it (PERF_SAMPLE_TID | TIME | CPU | PERIOD | CALLCHAIN). */
typedef struct PerfRawSample {
        uint16_t misc;                 /* PERF_RECORD_MISC_CPUMODE_MASK bits */
        uint32_t pid, tid, cpu;
        uint64_t time, period;
        PerfStack stack;               /* callchain, and for UNWIND_DWARF the user registers and stack */
} PerfRawSample;

/* linux.perf's packets on TRACE_SEQUENCE_PERF: the TracePacketDefaults first, then each
 * read pass's new InternedData (metadata) and PerfSamples (the data source's buffer). */
typedef struct PerfWriter {
        Recorder *rec;
        const PerfSection *config;
        PerfScope scope;
        PerfIntern intern;
        int cpu;                       /* the ring being read */
        uint8_t *queued;               /* framed as [u32 length][packet], this pass's samples */
        size_t queued_len, queued_allocated;
        uint64_t samples, skipped, dropped, lost;
        uint64_t denied;               /* samples of processes the owner may not ptrace */
        uint64_t helper_dropped;       /* samples dropped: tracebus-unwind failed or was late */
        bool warned_memory, warned_files, warned_helper;
} PerfWriter;

int perf_writer_init(PerfWriter *w, Recorder *rec, const PerfSection *config, uid_t owner_uid);
int perf_writer_defaults(PerfWriter *w);
void perf_writer_sample(PerfWriter *w, const PerfRawSample *s);
void perf_writer_lost(PerfWriter *w, const PerfRawSample *s, uint64_t lost);
void perf_writer_exec(PerfWriter *w, pid_t pid);
void perf_writer_end_pass(PerfWriter *w);
/* After the last pass: the counts as a warning when samples were lost or dropped. */
void perf_writer_finish(PerfWriter *w);
/* Ends tracebus-unwind, on the sampler's thread after its last pass. */
void perf_writer_end_helper(PerfWriter *w);
void perf_writer_done(PerfWriter *w);
