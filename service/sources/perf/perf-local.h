/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "ksyms.h"
#include "recorder/recorder.h"
#include "perf-config.h"
#include "trace.pb-c.h"

/* The sampler's parts, on its thread only: who is in scope (perf-scope.c), the mappings
 * of the sampled processes and the interning of callstacks (perf-intern.c), the packets
 * (perf-packets.c). */

/* A map of 64-bit keys (hashes, pids) to 64-bit values, open addressing. */
typedef struct U64Map {
        uint64_t *keys, *values;       /* key 0 is "empty": keys are stored + 1 */
        size_t n, allocated;
} U64Map;
int u64map_put(U64Map *m, uint64_t key, uint64_t value);
bool u64map_get(const U64Map *m, uint64_t key, uint64_t *ret);
void u64map_done(U64Map *m);
uint64_t perf_hash(uint64_t h, const void *data, size_t n);

#define PERF_MAX_FRAMES 256u
#define PERF_MAX_UNWIND_PROCS 256u
#define PERF_SEQ_NEEDS_INCREMENTAL_STATE 2u

/* One mapping of a process, as a Perfetto Mapping describes it. */
typedef struct PerfMap {
        uint64_t start, end, pgoff, start_offset;
        uint64_t dev, inode;
        bool has_start_offset;         /* start_offset read from the file's first line, else pgoff */
        char *path;
} PerfMap;

typedef struct PerfProc {
        pid_t pid;
        bool in_scope;
        bool denied;                   /* the owner's by uid, not the owner's to ptrace */
} PerfProc;

/* Which processes a session samples. Verdicts are cached for one read pass: a process
 * that execs or changes its uid is judged again at the next pass (or at once, on its
 * PERF_RECORD_COMM exec record). */
typedef struct PerfScope {
        const PerfSection *config;
        uid_t owner_uid;
        bool manage;
        uint32_t chosen_shard;
        PerfProc *procs;            /* this pass's, by pid */
        size_t n_procs, allocated;
        pid_t *additional;             /* pids admitted by additional_cmdline_count */
        size_t n_additional;
} PerfScope;

PerfProc *perf_scope_lookup(PerfScope *s, pid_t pid);
void perf_scope_forget(PerfScope *s, pid_t pid);
void perf_scope_new_pass(PerfScope *s);
void perf_scope_done(PerfScope *s);

typedef struct PerfPending {
        void *items;
        size_t n, allocated;
} PerfPending;

/* The callstacks, frames, mappings and names written so far, and what the next
 * InternedData must add. */
typedef struct PerfIntern {
        U64Map names, mappings, frames, callstacks, paths, build_ids;
        uint64_t next_iid;
        Ksyms *ksyms;                  /* kernel frames only */
        /* tracebus-unwind, which names user frames (NULL: user frames not asked for), the
         * pids that exec'd since their last request, what it left out since the last pass. */
        struct PerfHelper *helper;
        U64Map exec_pids;
        bool helper_memory_cap, helper_files_denied;
        bool manage;                   /* samples the owner may not ptrace keep their kernel frames */
        /* New entries for the next InternedData: InternedStrings (names, paths, build
         * ids), Frames, Mappings, Callstacks, their data owned. */
        PerfPending p_names, p_paths, p_build_ids, p_frames, p_mappings, p_callstacks;
        size_t bytes;                  /* memory of the tables and pending entries */
        size_t max_bytes;
        bool full;                     /* max_daemon_memory_kb reached: no more callstacks */
} PerfIntern;

/* The callstack of a sample of process @p (NULL: pid 0) into *ret_iid (0: none could
 * be interned). -EACCES: the owner may not ptrace @p; -ENOTCONN: the helper is gone;
 * either way the sample is to be dropped. */
typedef struct PerfStack {
        pid_t tid;                     /* the sampled thread */
        const uint64_t *ips;           /* the kernel's callchain, leaf first, with PERF_CONTEXT_* markers */
        size_t n_ips;
        const uint64_t *regs;          /* UNWIND_DWARF: BP, SP, IP of user mode (NULL: none) */
        uint64_t regs_mask;
        const uint8_t *stack;          /* ... and the copy of the user stack from SP */
        size_t stack_len;
} PerfStack;
int perf_intern_callstack(PerfIntern *in, PerfProc *p, const PerfStack *st, uint64_t *ret_iid);
/* @pid exec'd: the helper reads its maps again. */
void perf_intern_forget(PerfIntern *in, pid_t pid);
/* Hands the pending InternedData to the recorder (metadata, never overwritten). */
int perf_intern_flush(PerfIntern *in, Recorder *rec);
void perf_intern_done(PerfIntern *in);
