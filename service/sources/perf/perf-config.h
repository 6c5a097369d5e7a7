/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/perf_event.h>
#include <sys/types.h>

#include "config/session-config.h"
#include "macro.h"
#include "sources/data-source.h"

/* linux.perf as a session records it (perf-config.c). */
typedef struct PerfSection {
        uint32_t target_buffer;
        uint32_t counter;              /* PerfEvents.Counter of the timebase; 0 for a tracepoint */
        uint32_t type;                 /* perf_event_attr type and config */
        uint64_t event_config;
        char *tracepoint;              /* a tracepoint timebase's "group:name", NULL: a counter */
        char *tracepoint_filter;       /* its filter, NULL: none */
        char *timebase_name;           /* Timebase.name, NULL: none */
        bool freq;                     /* interval is a frequency (Hz), else a period */
        uint64_t interval;
        bool callstacks;               /* callstack_sampling: samples with their callchain */
        bool kernel_frames;            /* asked for; kept only with org.tracebus.manage */
        bool user_frames;
        bool unwind_dwarf;             /* UNWIND_DWARF asked for (frame pointers used) */
        int32_t *target_pids, *exclude_pids;
        size_t n_target_pids, n_exclude_pids;
        char **target_cmdlines, **exclude_cmdlines;
        uint32_t additional_cmdline_count;
        uint32_t process_shard_count;
        uint32_t ring_pages;           /* data pages per CPU, a power of two */
        uint32_t read_period_ms;
        uint64_t max_enqueued_kb;      /* samples read but not yet written */
        uint32_t max_memory_kb;        /* the sampler's interning tables and caches */
        bool manage;                   /* the caller holds org.tracebus.manage (or is root) */
} PerfSection;

/* The data source names it serves: linux.perf. */
extern const char *const perf_source_names[];

/* linux.perf's defaults (Perfetto's) and caps. */
#define PERF_DEFAULT_FREQUENCY 10u
#define PERF_DEFAULT_RING_PAGES 128u
#define PERF_MAX_RING_PAGES 1024u
#define PERF_DEFAULT_READ_PERIOD_MS 100u
#define PERF_DEFAULT_MAX_ENQUEUED_KB (8u * 1024u)
#define PERF_DEFAULT_MAX_MEMORY_KB (64u * 1024u)
#define PERF_MAX_SCOPE_ENTRIES 64u
#define PERF_MAX_CMDLINE_LEN 256u
#define PERF_MAX_FILTER_LEN 1024u

/* perf_event_open(2): the fd, or -errno. The loader probes the counters with it, the
 * sampler opens its events. */
int perf_event_open_fd(struct perf_event_attr *attr, pid_t pid, int cpu);

/* DataSourceOps.load: the linux.perf data source of @tc into *ret (a PerfSection; NULL:
 * none in the config); a tracepoint
 * timebase is looked up under the tracefs @root. A second one is skipped with a warning.
 * -EINVAL with *ret_error on a bad value. */
int perf_load(const Tracebus__TraceConfig *tc, const char *root, SessionConfig *c, void **ret, char **ret_error);
/* DataSourceOps.free_section. */
void perf_section_free(void *section);
DEFINE_TRIVIAL_CLEANUP_FUNC_VOID(PerfSection *, perf_section_free);
