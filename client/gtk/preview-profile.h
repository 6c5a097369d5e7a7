/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The trace preview's CPU profile: PerfSample packets
 * (TracePacket.perf_sample, 66) and the call stacks, frames, mappings and function names
 * interned for them (InternedData 5, 6, 7, 17, 19), read at the wire level as Perfetto v58
 * defines them, into the preview's top-functions list. Interned ids are per packet
 * sequence (trusted_packet_sequence_id); Perfetto never reuses one within a session, so the
 * tables are kept for the whole trace and the stacks resolved once, at the end.
 * Memory is bounded: at most TB_PROFILE_MAX_INTERNED entries a table, names cut at
 * TB_PROFILE_MAX_NAME bytes, stacks at TB_PROFILE_MAX_FRAMES frames.
 */

#include <glib.h>

/* A function of a CPU profile (linux.perf's PerfSample call stacks). */
typedef struct {
        char *name;        /* the function's name; "[libc.so.6]" when only its file is known,
                            * "[unknown]" when neither is */
        guint64 self;      /* samples it was the innermost frame of */
        guint64 total;     /* samples it was in the stack of (once per sample, recursion or not) */
} TbFunction;

typedef struct {
        guint64 n_samples;     /* samples with a call stack the trace defines */
        guint64 n_unresolved;  /* samples whose call stack is not (or no longer) in the trace */
        guint64 n_lost;        /* kernel_records_lost, summed */
        guint64 n_skipped;     /* samples the profiler skipped (sample_skipped_reason) */
} TbProfileCounts;

#define TB_PROFILE_MAX_INTERNED (256u * 1024u)
#define TB_PROFILE_MAX_NAME 512u
#define TB_PROFILE_MAX_FRAMES 512u

typedef struct TbProfileReader TbProfileReader;

TbProfileReader *tb_profile_reader_new(void);
void tb_profile_reader_free(TbProfileReader *r);
/* One TracePacket's bytes: its perf_sample and interned_data, if any. */
void tb_profile_reader_packet(TbProfileReader *r, const guint8 *data, gsize len);
/* The counts, and the @top functions with the most samples (TbFunction *, owned). */
void tb_profile_reader_finish(TbProfileReader *r, guint top, TbProfileCounts *ret_counts, GPtrArray **ret_functions);
