/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The trace preview's model: a finished trace read with libtracebus's reader
 * into a summary (time span, events, lost, warnings) and the counter series
 * the preview plots. Plain GLib, no display: the window draws what this
 * returns (tb-preview.c), the unit test checks it (tests/test-preview-model.c).
 *
 * Memory is bounded whatever the trace's size: the file is mapped, not read;
 * each series keeps at most TbPreviewLimits.max_points points (halved by
 * dropping every other one each time it fills, after which only every
 * stride-th sample is kept); at most max_processes processes are followed, and
 * only the top_processes with the highest RSS are kept at the end.
 */

#include <glib.h>

#include "preview-profile.h"

G_BEGIN_DECLS

typedef enum {
        TB_SERIES_MEMINFO,          /* SysStats.meminfo, KiB; key: the MeminfoCounters value */
        TB_SERIES_CPUFREQ,          /* SysStats.cpufreq_khz, kHz; key: the CPU */
        TB_SERIES_CPUFREQ_EVENTS,   /* power/cpu_frequency ftrace events, kHz; key: cpu_id */
        TB_SERIES_RSS,              /* ProcessStats, KiB; key: the pid */
        TB_SERIES_CPU_IDLE,         /* SysStats.cpu_stat, % idle between samples; key: the CPU */
        TB_SERIES_IDLE_STATE,       /* power/cpu_idle ftrace events, the state (-1: running); key: cpu_id */
        _TB_SERIES_KIND_MAX,
} TbSeriesKind;

typedef struct {
        guint64 ts;   /* ns, the trace's clock (boot time) */
        double value;
} TbPoint;

typedef struct {
        TbSeriesKind kind;
        gint64 key;
        char *name;         /* "MemAvailable", "CPU 0", "firefox (1234)" */
        TbPoint *points;    /* by time */
        guint n_points;
        guint64 n_samples;  /* what the trace held, before downsampling */
        guint stride;       /* one sample kept out of stride */
        double min, max;
} TbSeries;

typedef struct {
        guint max_points;      /* per series */
        guint max_processes;   /* followed while reading */
        guint top_processes;   /* kept at the end, by peak RSS */
        guint top_functions;   /* CPU profile: kept at the end, by samples; 0: the default */
} TbPreviewLimits;

#define TB_PREVIEW_TOP_FUNCTIONS 25u
#define TB_PREVIEW_LIMITS_DEFAULT ((TbPreviewLimits) { .max_points = 1024, .max_processes = 2048, .top_processes = 8, \
                                                       .top_functions = TB_PREVIEW_TOP_FUNCTIONS })


typedef struct {
        guint64 first_ts, last_ts;  /* of every timestamp met; 0, 0 when none */
        guint64 n_packets;
        guint64 n_events;           /* ftrace events, compact sched ones included */
        guint64 n_lost;             /* ftrace overruns: FtraceStats end minus start, as trace_processor */
        guint n_lost_bundles;       /* bundles the kernel said lost events before */
        GPtrArray *warnings;        /* char *: the service's "warning: ..." instants, without the prefix */
        GPtrArray *series;          /* TbSeries *, by kind then key */
        char *read_error;           /* why reading stopped early (a torn trace), or NULL */

        /* CPU profile (preview-profile.c): PerfSample packets. */
        TbProfileCounts perf;
        GPtrArray *functions;       /* TbFunction *, the most samples (self, then total) first */
} TbPreview;

/* Reads the trace in @data. A torn or corrupt end is not an error: what came
 * before is kept and read_error says why it stopped. */
TbPreview *tb_preview_new_from_data(const guint8 *data, gsize len, const TbPreviewLimits *limits);
/* Maps the file at @path and reads it; NULL with @error when it cannot be opened. */
TbPreview *tb_preview_new_from_file(const char *path, const TbPreviewLimits *limits, GError **error);
void tb_preview_free(TbPreview *p);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TbPreview, tb_preview_free)

/* The series of @kind for @key, or NULL. */
const TbSeries *tb_preview_find(const TbPreview *p, TbSeriesKind kind, gint64 key);
guint tb_preview_count_kind(const TbPreview *p, TbSeriesKind kind);
guint64 tb_preview_duration_ns(const TbPreview *p);

/* "MemAvailable" for MEMINFO_MEM_AVAILABLE (3), or NULL for a key it does not name. */
const char *tb_meminfo_key_name(gint64 key);
/* The section a kind is drawn in ("Memory", ...) and its unit ("KiB", ...). */
const char *tb_series_kind_title(TbSeriesKind kind);
const char *tb_series_kind_unit(TbSeriesKind kind);

/* Whether the preview draws @s: every series but the meminfo counters other than
 * the few that move with use (MemAvailable, MemFree, Cached, Buffers, AnonPages,
 * Shmem, Slab) — MemTotal or VmallocTotal on the same axis would flatten them. */
gboolean tb_series_plotted(const TbSeries *s);

/* The preview's sections, each the plots of one or two kinds. */
typedef enum {
        TB_SECTION_MEMORY,      /* MEMINFO */
        TB_SECTION_FREQUENCY,   /* CPUFREQ, CPUFREQ_EVENTS */
        TB_SECTION_PROCESSES,   /* RSS */
        TB_SECTION_IDLE,        /* CPU_IDLE, IDLE_STATE */
        _TB_SECTION_MAX,
} TbPreviewSection;

TbPreviewSection tb_series_kind_section(TbSeriesKind kind);
/* Untranslated (N_()): the window translates them. */
const char *tb_preview_section_title(TbPreviewSection section);
/* What the preview says instead of a section's plots when the trace has none
 * of its series but warned about them ("No frequency data on this machine:
 * linux.sys_stats cpufreq: ...: skipped"). NULL when the section has series,
 * or when the trace says nothing of it (the section is then left out). */
char *tb_preview_section_note(const TbPreview *p, TbPreviewSection section);
gboolean tb_preview_section_has_series(const TbPreview *p, TbPreviewSection section);

G_END_DECLS
