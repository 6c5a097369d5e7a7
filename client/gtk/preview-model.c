/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The trace preview's model (preview-model.h): one pass over the packets with
 * libtracebus's reader, each unpacked with protobuf-c, the counters appended to
 * their series as they come.
 */
#include <errno.h>
#include <glib/gi18n.h>
#include <stdlib.h>
#include <string.h>

#include "preview-model.h"
#include "trace-reader.h"

#define WARNING_PREFIX "warning: "
#define MAX_WARNINGS 64
#define MAX_CPUS 4096

/* Where the reading is: the series by (kind, key), the previous cpu_stat of each CPU
 * (idle % is between two samples), the FtraceStats at the start, process names. */
typedef struct {
        TbPreview *p;
        TbPreviewLimits limits;
        GHashTable *series;       /* (kind << 48 | key) -> TbSeries * (owned by p->series) */
        GHashTable *names;        /* pid -> char * */
        GHashTable *warning_set;  /* not owned: p->warnings' strings */
        guint n_processes;
        guint64 (*prev_cpu)[2];   /* [cpu] = { idle, total } ns */
        guint64 overrun_start, overrun_end;
        TbProfileReader *profile; /* PerfSample and its interned stacks, at the wire level */
} Reading;

static const char *const meminfo_names[] = {
        [1] = "MemTotal", [2] = "MemFree", [3] = "MemAvailable", [4] = "Buffers", [5] = "Cached",
        [6] = "SwapCached", [7] = "Active", [8] = "Inactive", [9] = "Active(anon)", [10] = "Inactive(anon)",
        [11] = "Active(file)", [12] = "Inactive(file)", [13] = "Unevictable", [14] = "Mlocked",
        [15] = "SwapTotal", [16] = "SwapFree", [17] = "Dirty", [18] = "Writeback", [19] = "AnonPages",
        [20] = "Mapped", [21] = "Shmem", [22] = "Slab", [23] = "SReclaimable", [24] = "SUnreclaim",
        [25] = "KernelStack", [26] = "PageTables", [27] = "CommitLimit", [28] = "Committed_AS",
        [29] = "VmallocTotal", [30] = "VmallocUsed", [31] = "VmallocChunk", [32] = "CmaTotal", [33] = "CmaFree",
};

const char *tb_meminfo_key_name(gint64 key) {
        if (key <= 0 || key >= (gint64) G_N_ELEMENTS(meminfo_names))
                return NULL;
        return meminfo_names[key];
}

const char *tb_series_kind_title(TbSeriesKind kind) {
        static const char *const titles[] = {
                [TB_SERIES_MEMINFO] = N_("System memory (/proc/meminfo)"),
                [TB_SERIES_CPUFREQ] = N_("Frequency of each CPU, sampled"),
                [TB_SERIES_CPUFREQ_EVENTS] = N_("Frequency changes (cpu_frequency events)"),
                [TB_SERIES_RSS] = N_("Resident memory of the processes that use the most"),
                [TB_SERIES_CPU_IDLE] = N_("Time idle between samples"),
                [TB_SERIES_IDLE_STATE] = N_("Idle states (cpu_idle events; -1: running)"),
        };

        return kind < _TB_SERIES_KIND_MAX ? titles[kind] : NULL;
}

const char *tb_series_kind_unit(TbSeriesKind kind) {
        static const char *const units[] = {
                [TB_SERIES_MEMINFO] = "KiB", [TB_SERIES_CPUFREQ] = "kHz", [TB_SERIES_CPUFREQ_EVENTS] = "kHz",
                [TB_SERIES_RSS] = "KiB",     [TB_SERIES_CPU_IDLE] = "%",  [TB_SERIES_IDLE_STATE] = "state",
        };

        return kind < _TB_SERIES_KIND_MAX ? units[kind] : NULL;
}

static void series_free(TbSeries *s) {
        g_free(s->name);
        g_free(s->points);
        g_free(s);
}

static gint64 series_id(TbSeriesKind kind, gint64 key) {
        return ((gint64) kind << 48) | (key & ((G_GINT64_CONSTANT(1) << 48) - 1));
}

static char *series_name(TbSeriesKind kind, gint64 key) {
        switch (kind) {
        case TB_SERIES_MEMINFO:
                return tb_meminfo_key_name(key) ? g_strdup(tb_meminfo_key_name(key))
                                                : g_strdup_printf("meminfo %" G_GINT64_FORMAT, key);
        case TB_SERIES_RSS:
                return g_strdup_printf("pid %" G_GINT64_FORMAT, key);
        default:
                return g_strdup_printf("CPU %" G_GINT64_FORMAT, key);
        }
}

/* The series of (kind, key), made on first use. NULL for a process beyond max_processes. */
static TbSeries *series_get(Reading *rd, TbSeriesKind kind, gint64 key) {
        gint64 id = series_id(kind, key);
        TbSeries *s = g_hash_table_lookup(rd->series, &id);

        if (s)
                return s;
        if (kind == TB_SERIES_RSS && rd->n_processes++ >= rd->limits.max_processes)
                return NULL;
        s = g_new0(TbSeries, 1);
        s->kind = kind;
        s->key = key;
        s->name = series_name(kind, key);
        s->stride = 1;
        s->points = g_new(TbPoint, rd->limits.max_points);
        g_ptr_array_add(rd->p->series, s);
        g_hash_table_insert(rd->series, g_memdup2(&id, sizeof(id)), s);
        return s;
}

/* Full: keep every other point, and from now on one sample in twice as many. */
static void series_halve(TbSeries *s) {
        guint n = 0;

        for (guint i = 0; i < s->n_points; i += 2)
                s->points[n++] = s->points[i];
        s->n_points = n;
        s->stride *= 2;
}

static void series_add(Reading *rd, TbSeries *s, guint64 ts, double value) {
        if (!s)
                return;
        if (s->n_samples == 0 || value < s->min)
                s->min = value;
        if (s->n_samples == 0 || value > s->max)
                s->max = value;
        if (s->n_samples++ % s->stride != 0)
                return;
        if (s->n_points == rd->limits.max_points)
                series_halve(s);
        /* Halving changed the stride: this sample may now fall between two kept ones. */
        if ((s->n_samples - 1) % s->stride != 0)
                return;
        s->points[s->n_points++] = (TbPoint) { ts, value };
}

static void see_ts(TbPreview *p, guint64 ts) {
        if (ts == 0)
                return;
        if (p->first_ts == 0 || ts < p->first_ts)
                p->first_ts = ts;
        if (ts > p->last_ts)
                p->last_ts = ts;
}

/* ---- the packets ---- */

static void read_cpu_stat(Reading *rd, guint64 ts, const Tracebus__SysStats__CpuTimes *c) {
        guint64 idle = c->idle_ns + c->io_wait_ns;
        guint64 total = c->user_ns + c->user_nice_ns + c->system_mode_ns + c->idle_ns + c->io_wait_ns +
                        c->irq_ns + c->softirq_ns + c->steal_ns;
        guint64 *prev;

        if (c->cpu_id >= MAX_CPUS)
                return;
        if (!rd->prev_cpu)
                rd->prev_cpu = g_malloc0(sizeof(*rd->prev_cpu) * MAX_CPUS);
        prev = rd->prev_cpu[c->cpu_id];
        /* The first sample only sets where the next one counts from. */
        if (prev[1] != 0 && total > prev[1] && idle >= prev[0])
                series_add(rd, series_get(rd, TB_SERIES_CPU_IDLE, c->cpu_id), ts,
                           100.0 * (double) (idle - prev[0]) / (double) (total - prev[1]));
        prev[0] = idle;
        prev[1] = total;
}

static void read_sys_stats(Reading *rd, guint64 ts, const Tracebus__SysStats *st) {
        for (size_t i = 0; i < st->n_meminfo; i++)
                if (st->meminfo[i]->has_key && st->meminfo[i]->has_value)
                        series_add(rd, series_get(rd, TB_SERIES_MEMINFO, st->meminfo[i]->key), ts,
                                   (double) st->meminfo[i]->value);
        /* 0: this CPU has no frequency (offline, or no cpufreq). */
        for (size_t cpu = 0; cpu < st->n_cpufreq_khz && cpu < MAX_CPUS; cpu++)
                if (st->cpufreq_khz[cpu] > 0)
                        series_add(rd, series_get(rd, TB_SERIES_CPUFREQ, (gint64) cpu), ts,
                                   (double) st->cpufreq_khz[cpu]);
        for (size_t i = 0; i < st->n_cpu_stat; i++)
                read_cpu_stat(rd, ts, st->cpu_stat[i]);
}

/* VmRSS, else its three parts; a process sends only the values that changed. */
static void read_process_stats(Reading *rd, guint64 ts, const Tracebus__ProcessStats *ps) {
        for (size_t i = 0; i < ps->n_processes; i++) {
                const Tracebus__ProcessStats__Process *pr = ps->processes[i];
                double rss;

                if (!pr->has_pid)
                        continue;
                if (pr->has_vm_rss_kb)
                        rss = (double) pr->vm_rss_kb;
                else if (pr->has_rss_anon_kb && pr->has_rss_file_kb && pr->has_rss_shmem_kb)
                        rss = (double) (pr->rss_anon_kb + pr->rss_file_kb + pr->rss_shmem_kb);
                else
                        continue;
                series_add(rd, series_get(rd, TB_SERIES_RSS, pr->pid), ts, rss);
        }
}

static void read_process_tree(Reading *rd, const Tracebus__ProcessTree *pt) {
        for (size_t i = 0; i < pt->n_processes; i++) {
                const Tracebus__ProcessTree__Process *pr = pt->processes[i];
                const char *name;

                if (!pr->has_pid || pr->n_cmdline == 0 || !pr->cmdline[0] || !pr->cmdline[0][0])
                        continue;
                name = strrchr(pr->cmdline[0], '/');
                name = name && name[1] ? name + 1 : pr->cmdline[0];
                g_hash_table_replace(rd->names, GINT_TO_POINTER(pr->pid), g_strdup(name));
        }
}

static void read_ftrace_event(Reading *rd, const Tracebus__FtraceEvent *e) {
        see_ts(rd->p, e->timestamp);
        rd->p->n_events++;
        if (e->cpu_frequency && e->cpu_frequency->has_cpu_id)
                series_add(rd, series_get(rd, TB_SERIES_CPUFREQ_EVENTS, e->cpu_frequency->cpu_id), e->timestamp,
                           (double) e->cpu_frequency->state);
        /* cpu_idle's state is (u32) -1 when the CPU leaves idle. */
        if (e->cpu_idle && e->cpu_idle->has_cpu_id)
                series_add(rd, series_get(rd, TB_SERIES_IDLE_STATE, e->cpu_idle->cpu_id), e->timestamp,
                           e->cpu_idle->state == G_MAXUINT32 ? -1.0 : (double) e->cpu_idle->state);
}

/* compact_sched's timestamps are deltas, the first from 0. */
static guint64 compact_span(TbPreview *p, const uint64_t *deltas, size_t n) {
        guint64 ts = 0;

        for (size_t i = 0; i < n; i++) {
                ts += deltas[i];
                see_ts(p, ts);
        }
        return n;
}

static void read_ftrace_bundle(Reading *rd, const Tracebus__FtraceEventBundle *b) {
        for (size_t i = 0; i < b->n_event; i++)
                read_ftrace_event(rd, b->event[i]);
        if (b->compact_sched) {
                rd->p->n_events += compact_span(rd->p, b->compact_sched->switch_timestamp,
                                                b->compact_sched->n_switch_timestamp);
                rd->p->n_events += compact_span(rd->p, b->compact_sched->waking_timestamp,
                                                b->compact_sched->n_waking_timestamp);
        }
        rd->p->n_lost_bundles += b->has_lost_events && b->lost_events;
}

static void read_ftrace_stats(Reading *rd, const Tracebus__FtraceStats *fs) {
        guint64 overrun = 0;

        for (size_t i = 0; i < fs->n_cpu_stats; i++)
                overrun += fs->cpu_stats[i]->overrun;
        if (fs->phase == TRACEBUS__FTRACE_STATS__PHASE__START_OF_TRACE)
                rd->overrun_start = overrun;
        else if (fs->phase == TRACEBUS__FTRACE_STATS__PHASE__END_OF_TRACE)
                rd->overrun_end = overrun;
}

static void read_track_event(Reading *rd, const Tracebus__TrackEvent *te) {
        const char *text;

        if (te->type != TRACEBUS__TRACK_EVENT__TYPE__TYPE_INSTANT || !te->name ||
            !g_str_has_prefix(te->name, WARNING_PREFIX))
                return;
        text = te->name + strlen(WARNING_PREFIX);
        if (rd->p->warnings->len >= MAX_WARNINGS || g_hash_table_contains(rd->warning_set, text))
                return;
        g_ptr_array_add(rd->p->warnings, g_strdup(text));
        g_hash_table_add(rd->warning_set, g_ptr_array_index(rd->p->warnings, rd->p->warnings->len - 1));
}

static void read_packet(Reading *rd, const Tracebus__TracePacket *pk) {
        guint64 ts = pk->has_timestamp ? pk->timestamp : 0;

        rd->p->n_packets++;
        see_ts(rd->p, ts);
        if (pk->sys_stats)
                read_sys_stats(rd, ts, pk->sys_stats);
        if (pk->process_stats)
                read_process_stats(rd, ts, pk->process_stats);
        if (pk->process_tree)
                read_process_tree(rd, pk->process_tree);
        if (pk->ftrace_events)
                read_ftrace_bundle(rd, pk->ftrace_events);
        if (pk->ftrace_stats)
                read_ftrace_stats(rd, pk->ftrace_stats);
        if (pk->track_event)
                read_track_event(rd, pk->track_event);
}

/* ---- after the last packet ---- */

static int point_cmp(gconstpointer a, gconstpointer b) {
        const TbPoint *x = a, *y = b;
        return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static int series_cmp(gconstpointer a, gconstpointer b) {
        const TbSeries *x = *(TbSeries *const *) a, *y = *(TbSeries *const *) b;

        if (x->kind != y->kind)
                return x->kind < y->kind ? -1 : 1;
        /* Processes by peak RSS, the highest first; the rest by key. */
        if (x->kind == TB_SERIES_RSS && x->max != y->max)
                return x->max > y->max ? -1 : 1;
        return x->key < y->key ? -1 : x->key > y->key;
}

/* Only the top processes stay, named "comm (pid)" when the trace named them. */
static void keep_top_processes(Reading *rd) {
        GPtrArray *all = rd->p->series;
        guint kept = 0;

        for (guint i = 0; i < all->len;) {
                TbSeries *s = g_ptr_array_index(all, i);
                const char *name;

                if (s->kind != TB_SERIES_RSS) {
                        i++;
                        continue;
                }
                if (kept++ >= rd->limits.top_processes) {
                        g_ptr_array_remove_index(all, i);
                        continue;
                }
                name = g_hash_table_lookup(rd->names, GINT_TO_POINTER((int) s->key));
                if (name) {
                        g_free(s->name);
                        s->name = g_strdup_printf("%s (%" G_GINT64_FORMAT ")", name, s->key);
                }
                i++;
        }
}

static void finish(Reading *rd) {
        TbPreview *p = rd->p;

        /* Events of one CPU may come in the bundles of others: each series by time. */
        for (guint i = 0; i < p->series->len; i++) {
                TbSeries *s = g_ptr_array_index(p->series, i);
                qsort(s->points, s->n_points, sizeof(TbPoint), point_cmp);
        }
        g_ptr_array_sort(p->series, series_cmp);
        keep_top_processes(rd);
        p->n_lost = rd->overrun_end > rd->overrun_start ? rd->overrun_end - rd->overrun_start : 0;
}

static void read_all(Reading *rd, const guint8 *data, gsize len) {
        TraceReader r;
        TraceRawPacket raw;
        int q;

        trace_reader_init(&r, data, len, 0);
        while ((q = trace_reader_next(&r, &raw)) != 0) {
                Tracebus__TracePacket *pk = NULL;

                if (q == -EPROTO)
                        continue; /* a compressed_packets that does not inflate: the rest is read */
                if (q < 0) {
                        rd->p->read_error = g_strdup_printf("the trace is torn or corrupt after %zu bytes: %s",
                                                            trace_reader_offset(&r), g_strerror(-q));
                        break;
                }
                tb_profile_reader_packet(rd->profile, raw.data, raw.len);
                if (trace_packet_unpack(&raw, &pk) < 0)
                        continue;
                read_packet(rd, pk);
                tracebus__trace_packet__free_unpacked(pk, NULL);
        }
        trace_reader_done(&r);
}

TbPreview *tb_preview_new_from_data(const guint8 *data, gsize len, const TbPreviewLimits *limits) {
        TbPreview *p = g_new0(TbPreview, 1);
        Reading rd = {
                .p = p,
                .limits = limits ? *limits : TB_PREVIEW_LIMITS_DEFAULT,
                .series = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL),
                .names = g_hash_table_new_full(NULL, NULL, NULL, g_free),
                .warning_set = g_hash_table_new(g_str_hash, g_str_equal),
                .profile = tb_profile_reader_new(),
        };

        rd.limits.max_points = MAX(rd.limits.max_points, 2);
        p->warnings = g_ptr_array_new_with_free_func(g_free);
        p->series = g_ptr_array_new_with_free_func((GDestroyNotify) series_free);
        read_all(&rd, data, len);
        finish(&rd);
        tb_profile_reader_finish(rd.profile, rd.limits.top_functions ?: TB_PREVIEW_TOP_FUNCTIONS, &p->perf,
                                 &p->functions);
        tb_profile_reader_free(rd.profile);
        g_hash_table_unref(rd.series);
        g_hash_table_unref(rd.names);
        g_hash_table_unref(rd.warning_set);
        g_free(rd.prev_cpu);
        return p;
}

TbPreview *tb_preview_new_from_file(const char *path, const TbPreviewLimits *limits, GError **error) {
        g_autoptr(GMappedFile) map = g_mapped_file_new(path, FALSE, error);

        if (!map)
                return NULL;
        return tb_preview_new_from_data((const guint8 *) g_mapped_file_get_contents(map),
                                        g_mapped_file_get_length(map), limits);
}

void tb_preview_free(TbPreview *p) {
        if (!p)
                return;
        g_ptr_array_unref(p->warnings);
        g_ptr_array_unref(p->series);
        if (p->functions)
                g_ptr_array_unref(p->functions);
        g_free(p->read_error);
        g_free(p);
}

const TbSeries *tb_preview_find(const TbPreview *p, TbSeriesKind kind, gint64 key) {
        for (guint i = 0; i < p->series->len; i++) {
                const TbSeries *s = g_ptr_array_index(p->series, i);
                if (s->kind == kind && s->key == key)
                        return s;
        }
        return NULL;
}

guint tb_preview_count_kind(const TbPreview *p, TbSeriesKind kind) {
        guint n = 0;

        for (guint i = 0; i < p->series->len; i++)
                n += ((const TbSeries *) g_ptr_array_index(p->series, i))->kind == kind;
        return n;
}

guint64 tb_preview_duration_ns(const TbPreview *p) {
        return p->last_ts - p->first_ts;
}

gboolean tb_series_plotted(const TbSeries *s) {
        static const gint64 moving[] = { 3, 2, 5, 4, 19, 21, 22 };

        if (s->kind != TB_SERIES_MEMINFO)
                return TRUE;
        for (size_t i = 0; i < G_N_ELEMENTS(moving); i++)
                if (s->key == moving[i])
                        return TRUE;
        return FALSE;
}

/* ---- sections ---- */

static const struct {
        const char *title;
        const char *missing;          /* the note's first words */
        const char *const *topics;    /* what a warning names when it is about this section */
} sections[] = {
        [TB_SECTION_MEMORY] = { N_("Memory"), N_("No memory counters from this machine"),
                                (const char *const[]) { "meminfo", NULL } },
        [TB_SECTION_FREQUENCY] = { N_("CPU frequency"), N_("No frequency data on this machine"),
                                   (const char *const[]) { "cpufreq", "cpu_frequency", NULL } },
        [TB_SECTION_PROCESSES] = { N_("Processes"), N_("No process memory from this machine"),
                                   (const char *const[]) { "process_stats", NULL } },
        [TB_SECTION_IDLE] = { N_("CPU idle"), N_("No CPU idle data from this machine"),
                              (const char *const[]) { "cpu_idle", "stat_counters", NULL } },
};

TbPreviewSection tb_series_kind_section(TbSeriesKind kind) {
        switch (kind) {
        case TB_SERIES_MEMINFO:
                return TB_SECTION_MEMORY;
        case TB_SERIES_CPUFREQ:
        case TB_SERIES_CPUFREQ_EVENTS:
                return TB_SECTION_FREQUENCY;
        case TB_SERIES_RSS:
                return TB_SECTION_PROCESSES;
        default:
                return TB_SECTION_IDLE;
        }
}

const char *tb_preview_section_title(TbPreviewSection section) {
        return section < _TB_SECTION_MAX ? sections[section].title : NULL;
}

gboolean tb_preview_section_has_series(const TbPreview *p, TbPreviewSection section) {
        for (guint i = 0; i < p->series->len; i++)
                if (tb_series_kind_section(((const TbSeries *) g_ptr_array_index(p->series, i))->kind) == section)
                        return TRUE;
        return FALSE;
}

static gboolean about_section(const char *warning, TbPreviewSection section) {
        for (const char *const *t = sections[section].topics; *t; t++)
                if (strstr(warning, *t))
                        return TRUE;
        return FALSE;
}

char *tb_preview_section_note(const TbPreview *p, TbPreviewSection section) {
        g_autoptr(GString) s = NULL;

        if (section >= _TB_SECTION_MAX || tb_preview_section_has_series(p, section))
                return NULL;
        for (guint i = 0; i < p->warnings->len; i++) {
                const char *w = g_ptr_array_index(p->warnings, i);

                if (!about_section(w, section))
                        continue;
                if (s)
                        g_string_append(s, "; ");
                else
                        s = g_string_append(g_string_new(_(sections[section].missing)), ": ");
                g_string_append(s, w);
        }
        return s ? g_string_free(g_steal_pointer(&s), FALSE) : NULL;
}
