/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What the desktop app records: friendly categories that map to tracefs
 * events (Traceur's model), and the TraceConfig text it sends to Start.
 * Plain GLib, no GTK, so that a unit test can hold the table to its promises.
 */

#include <glib.h>

/* Counters a category records beside its events, read by the service's pollers (what
 * Perfetto's UI records for the same categories). */
typedef enum {
        TB_COUNTERS_MEMINFO = 1 << 0,       /* linux.sys_stats: /proc/meminfo */
        TB_COUNTERS_PROCESS_STATS = 1 << 1, /* linux.process_stats: each process's memory */
        TB_COUNTERS_CPUFREQ = 1 << 2,       /* linux.sys_stats: each CPU's frequency, from sysfs */
        /* linux.perf: call stacks sampled on every CPU */
        TB_COUNTERS_CPU_PROFILE = 1 << 3,
        /* track_event: the events of the apps built with the Perfetto SDK, every category */
        TB_COUNTERS_TRACK_EVENT = 1 << 4,
} TbCounters;

typedef struct {
        const char *id;          /* stable, for settings and the test mode */
        const char *name;        /* N_(), shown as the toggle's title */
        const char *description; /* N_(), the toggle's subtitle */
        const char *const *events; /* "group/name", or "group/ *" for a whole group */
        gboolean default_on;
        guint counters;          /* TbCounters */
} TbCategory;

/* The table, in the order the window shows it. */
const TbCategory *tb_categories_get(guint *ret_n);
const TbCategory *tb_category_lookup(const char *id);

/*
 * The category's events that the kernel offers: available is the sorted list
 * ListEvents("") returned (NULL: keep everything, expand nothing). Group
 * wildcards are expanded against it; events the kernel lacks are dropped.
 */
char **tb_category_available_events(const TbCategory *c, const char *const *available);

/*
 * The events a recording asks for: the union of the categories named in ids
 * and the custom events, deduplicated and sorted, without what the kernel
 * does not offer. ret_missing (may be NULL) gets the custom events that were
 * dropped, so the window can say so.
 */
char **tb_categories_resolve(const char *const *ids, const char *const *custom,
                             const char *const *available, char ***ret_missing);

/* The counters (TbCounters) of the categories named in ids. */
guint tb_categories_counters(const char *const *ids);

/* ---- recording settings -> TraceConfig text ---- */

typedef enum {
        TB_BUFFER_RING, /* the trace is kept in memory and written when it stops */
        TB_BUFFER_LONG, /* a long trace, written into the file as it goes */
} TbBufferMode;

/* Traceur's defaults. */
#define TB_DEFAULT_BUFFER_SIZE_KB 16384u                          /* 16 MB per CPU */
#define TB_MAX_BUFFER_SIZE_KB 65536u                              /* tracebusd's per-CPU limit */
#define TB_DEFAULT_DURATION_MS (30u * 60u * 1000u)                /* 30 minutes */
#define TB_MAX_DURATION_MS (7u * 24u * 3600u * 1000u)             /* tracebusd's limit */
#define TB_DEFAULT_LONG_TRACE_MAX_BYTES (10ull * 1024 * 1024 * 1024) /* 10 GB */
#define TB_LONG_TRACE_WRITE_PERIOD_MS 5000u
#define TB_MAX_TRACE_BUFFER_KB (256u * 1024u)                     /* tracebusd's service buffer limit */
/* Counters: read every second (Perfetto UI's default), into a buffer of their own so that a
 * ring of busy scheduling events never overwrites them. */
#define TB_COUNTERS_PERIOD_MS 1000u
#define TB_COUNTERS_BUFFER_KB 4096u
/* CPU profile: Perfetto's docs' rate, into a buffer of its own after the counters'. */
#define TB_PROFILE_HZ 100u
#define TB_PROFILE_BUFFER_KB (32u * 1024u)
/* The apps' track events: a buffer of their own after those, so that a busy app never
 * overwrites the kernel's events, nor they the app's. */
#define TB_TRACK_EVENT_BUFFER_KB (16u * 1024u)

typedef struct {
        const char *const *events;     /* tracefs group/name */
        TbBufferMode mode;
        guint buffer_size_kb;          /* kernel buffer per CPU; 0: the default */
        guint duration_ms;             /* 0: until stopped */
        guint64 max_file_size_bytes;   /* long traces only; 0: no limit */
        guint n_cpus;                  /* sizes the service's buffer; 0: 1 */
        guint counters;                /* TbCounters */
} TbRecordSettings;

/* A TraceConfig in protobuf text format for Manager.Start. */
char *tb_record_settings_to_config(const TbRecordSettings *s);
