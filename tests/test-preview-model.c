/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The GTK app's trace preview model (client/gtk/preview-model.c), on traces written
 * here with libtracebus's writer: SysStats (meminfo, cpufreq_khz, cpu_stat),
 * ProcessStats with a ProcessTree, cpu_frequency and cpu_idle ftrace events,
 * FtraceStats and the service's warning instants. Every series value is checked. */
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include "preview-model.h"
#include "trace-writer.h"

#define MEMINFO_MEM_FREE 2
#define MEMINFO_MEM_AVAILABLE 3
#define MEMINFO_CACHED 5

typedef struct {
        int fd;
        TraceWriter w;
} Out;

static void out_init(Out *o) {
        o->fd = memfd_create("preview", MFD_CLOEXEC);
        g_assert_cmpint(o->fd, >=, 0);
        trace_writer_init(&o->w, o->fd, TRACE_WRITER_STREAM, 0, 0);
}

static GBytes *out_finish(Out *o) {
        off_t size;
        guint8 *buf;

        g_assert_cmpint(trace_writer_flush(&o->w), ==, 0);
        trace_writer_done(&o->w);
        size = lseek(o->fd, 0, SEEK_END);
        buf = g_malloc(size ?: 1);
        g_assert_cmpint(pread(o->fd, buf, size, 0), ==, size);
        close(o->fd);
        return g_bytes_new_take(buf, size);
}

static void append(Out *o, Tracebus__TracePacket *p, guint64 ts, uint32_t seq) {
        p->has_timestamp = ts != 0;
        p->timestamp = ts;
        g_assert_cmpint(trace_writer_append_data(&o->w, p, seq), ==, 0);
}

static void append_sys_stats(Out *o, guint64 ts, guint64 avail, guint64 free_kb, const uint32_t *khz, size_t n_cpu,
                             guint64 idle_ns, guint64 busy_ns) {
        Tracebus__TracePacket p = TRACEBUS__TRACE_PACKET__INIT;
        Tracebus__SysStats st = TRACEBUS__SYS_STATS__INIT;
        Tracebus__SysStats__MeminfoValue m[2] = { TRACEBUS__SYS_STATS__MEMINFO_VALUE__INIT,
                                                  TRACEBUS__SYS_STATS__MEMINFO_VALUE__INIT };
        Tracebus__SysStats__MeminfoValue *mp[2] = { &m[0], &m[1] };
        Tracebus__SysStats__CpuTimes c = TRACEBUS__SYS_STATS__CPU_TIMES__INIT;
        Tracebus__SysStats__CpuTimes *cp[1] = { &c };

        m[0].has_key = m[0].has_value = m[1].has_key = m[1].has_value = true;
        m[0].key = MEMINFO_MEM_AVAILABLE;
        m[0].value = avail;
        m[1].key = MEMINFO_MEM_FREE;
        m[1].value = free_kb;
        st.n_meminfo = 2;
        st.meminfo = mp;
        st.n_cpufreq_khz = n_cpu;
        st.cpufreq_khz = (uint32_t *) khz;
        c.has_cpu_id = c.has_idle_ns = c.has_user_ns = true;
        c.cpu_id = 1;
        c.idle_ns = idle_ns;
        c.user_ns = busy_ns;
        st.n_cpu_stat = 1;
        st.cpu_stat = cp;
        p.sys_stats = &st;
        append(o, &p, ts, TRACE_SEQUENCE_SYS_STATS);
}

static void append_rss(Out *o, guint64 ts, int32_t pid, guint64 rss_kb) {
        Tracebus__TracePacket p = TRACEBUS__TRACE_PACKET__INIT;
        Tracebus__ProcessStats ps = TRACEBUS__PROCESS_STATS__INIT;
        Tracebus__ProcessStats__Process pr = TRACEBUS__PROCESS_STATS__PROCESS__INIT;
        Tracebus__ProcessStats__Process *prp[1] = { &pr };

        pr.has_pid = pr.has_vm_rss_kb = true;
        pr.pid = pid;
        pr.vm_rss_kb = rss_kb;
        ps.n_processes = 1;
        ps.processes = prp;
        p.process_stats = &ps;
        append(o, &p, ts, TRACE_SEQUENCE_PROCESS_STATS);
}

static void append_process_name(Out *o, int32_t pid, const char *cmdline0) {
        Tracebus__TracePacket p = TRACEBUS__TRACE_PACKET__INIT;
        Tracebus__ProcessTree pt = TRACEBUS__PROCESS_TREE__INIT;
        Tracebus__ProcessTree__Process pr = TRACEBUS__PROCESS_TREE__PROCESS__INIT;
        Tracebus__ProcessTree__Process *prp[1] = { &pr };
        char *argv[1] = { (char *) cmdline0 };

        pr.has_pid = true;
        pr.pid = pid;
        pr.n_cmdline = 1;
        pr.cmdline = argv;
        pt.n_processes = 1;
        pt.processes = prp;
        p.process_tree = &pt;
        append(o, &p, 0, TRACE_SEQUENCE_PROCESSES);
}

/* One bundle of CPU @cpu: a cpu_frequency event for @target_cpu, a cpu_idle one. */
static void append_power_events(Out *o, uint32_t cpu, guint64 ts, uint32_t target_cpu, uint32_t khz,
                                uint32_t idle_state) {
        Tracebus__TracePacket p = TRACEBUS__TRACE_PACKET__INIT;
        Tracebus__FtraceEventBundle b = TRACEBUS__FTRACE_EVENT_BUNDLE__INIT;
        Tracebus__FtraceEvent e[2] = { TRACEBUS__FTRACE_EVENT__INIT, TRACEBUS__FTRACE_EVENT__INIT };
        Tracebus__FtraceEvent *ep[2] = { &e[0], &e[1] };
        Tracebus__CpuFrequencyFtraceEvent f = TRACEBUS__CPU_FREQUENCY_FTRACE_EVENT__INIT;
        Tracebus__CpuIdleFtraceEvent idle = TRACEBUS__CPU_IDLE_FTRACE_EVENT__INIT;

        f.has_state = f.has_cpu_id = idle.has_state = idle.has_cpu_id = true;
        f.state = khz;
        f.cpu_id = target_cpu;
        idle.state = idle_state;
        idle.cpu_id = cpu;
        e[0].has_timestamp = e[1].has_timestamp = true;
        e[0].timestamp = ts;
        e[0].cpu_frequency = &f;
        e[1].timestamp = ts + 1;
        e[1].cpu_idle = &idle;
        b.has_cpu = true;
        b.cpu = cpu;
        b.n_event = 2;
        b.event = ep;
        p.ftrace_events = &b;
        append(o, &p, 0, TRACE_SEQUENCE_FTRACE);
}

static void append_ftrace_stats(Out *o, Tracebus__FtraceStats__Phase phase, guint64 overrun) {
        Tracebus__TracePacket p = TRACEBUS__TRACE_PACKET__INIT;
        Tracebus__FtraceStats fs = TRACEBUS__FTRACE_STATS__INIT;
        Tracebus__FtraceCpuStats c = TRACEBUS__FTRACE_CPU_STATS__INIT;
        Tracebus__FtraceCpuStats *cp[1] = { &c };

        fs.has_phase = true;
        fs.phase = phase;
        c.has_cpu = c.has_overrun = true;
        c.overrun = overrun;
        fs.n_cpu_stats = 1;
        fs.cpu_stats = cp;
        p.ftrace_stats = &fs;
        append(o, &p, 0, TRACE_SEQUENCE_SERVICE);
}

static void append_instant(Out *o, guint64 ts, const char *name) {
        Tracebus__TracePacket p = TRACEBUS__TRACE_PACKET__INIT;
        Tracebus__TrackEvent te = TRACEBUS__TRACK_EVENT__INIT;

        te.has_type = true;
        te.type = TRACEBUS__TRACK_EVENT__TYPE__TYPE_INSTANT;
        te.name = (char *) name;
        p.track_event = &te;
        append(o, &p, ts, TRACE_SEQUENCE_TRACKS);
}

static void assert_points(const TbSeries *s, const guint64 *ts, const double *values, guint n) {
        g_assert_nonnull(s);
        g_assert_cmpuint(s->n_points, ==, n);
        for (guint i = 0; i < n; i++) {
                g_assert_cmpuint(s->points[i].ts, ==, ts[i]);
                g_assert_cmpfloat_with_epsilon(s->points[i].value, values[i], 1e-9);
        }
}

static GBytes *counters_trace(void) {
        static const uint32_t khz[3][3] = { { 1800000, 0, 2400000 }, { 1900000, 0, 2400000 }, { 800000, 0, 2500000 } };
        /* CPU 1: 100 ns a period, 75 of them idle, then 25. */
        static const guint64 idle[3] = { 1000, 1075, 1100 }, busy[3] = { 1000, 1025, 1100 };
        Out o;

        out_init(&o);
        append_ftrace_stats(&o, TRACEBUS__FTRACE_STATS__PHASE__START_OF_TRACE, 5);
        append_instant(&o, 500, "warning: linux.sys_stats cpufreq: this kernel has no cpufreq: skipped");
        append_instant(&o, 600, "not a warning");
        append_process_name(&o, 42, "/usr/bin/firefox");
        for (guint i = 0; i < 3; i++) {
                append_sys_stats(&o, 1000 * (i + 1), 4000 - 100 * i, 3000 + i, khz[i], 3, idle[i], busy[i]);
                append_rss(&o, 1000 * (i + 1) + 10, 42, 100 * (i + 1));
                append_rss(&o, 1000 * (i + 1) + 20, 7, 50);
                append_rss(&o, 1000 * (i + 1) + 30, 9, 500 - i);
        }
        /* CPU 2's frequency change comes in CPU 0's bundle, before CPU 2's earlier one. */
        append_power_events(&o, 0, 5000, 2, 1200000, 1);
        append_power_events(&o, 2, 4000, 2, 2000000, G_MAXUINT32);
        append_ftrace_stats(&o, TRACEBUS__FTRACE_STATS__PHASE__END_OF_TRACE, 12);
        return out_finish(&o);
}

static void test_summary(void) {
        g_autoptr(GBytes) bytes = counters_trace();
        TbPreviewLimits limits = TB_PREVIEW_LIMITS_DEFAULT;
        g_autoptr(TbPreview) p = NULL;

        limits.top_processes = 2;
        p = tb_preview_new_from_data(g_bytes_get_data(bytes, NULL), g_bytes_get_size(bytes), &limits);
        g_assert_null(p->read_error);
        g_assert_cmpuint(p->first_ts, ==, 500);
        g_assert_cmpuint(p->last_ts, ==, 5001);
        g_assert_cmpuint(tb_preview_duration_ns(p), ==, 4501);
        g_assert_cmpuint(p->n_events, ==, 4);
        g_assert_cmpuint(p->n_lost, ==, 7);
        g_assert_cmpuint(p->warnings->len, ==, 1);
        g_assert_cmpstr(g_ptr_array_index(p->warnings, 0), ==,
                        "linux.sys_stats cpufreq: this kernel has no cpufreq: skipped");
}

static void test_meminfo_cpufreq(void) {
        g_autoptr(GBytes) bytes = counters_trace();
        g_autoptr(TbPreview) p = tb_preview_new_from_data(g_bytes_get_data(bytes, NULL), g_bytes_get_size(bytes), NULL);
        const TbSeries *s;

        s = tb_preview_find(p, TB_SERIES_MEMINFO, MEMINFO_MEM_AVAILABLE);
        assert_points(s, (guint64[]) { 1000, 2000, 3000 }, (double[]) { 4000, 3900, 3800 }, 3);
        g_assert_cmpstr(s->name, ==, "MemAvailable");
        g_assert_cmpfloat(s->min, ==, 3800);
        g_assert_cmpfloat(s->max, ==, 4000);
        assert_points(tb_preview_find(p, TB_SERIES_MEMINFO, MEMINFO_MEM_FREE), (guint64[]) { 1000, 2000, 3000 },
                      (double[]) { 3000, 3001, 3002 }, 3);
        g_assert_null(tb_preview_find(p, TB_SERIES_MEMINFO, MEMINFO_CACHED));
        g_assert_true(tb_series_plotted(s));
        g_assert_false(tb_series_plotted(&(TbSeries) { .kind = TB_SERIES_MEMINFO, .key = 1 /* MemTotal */ }));
        g_assert_true(tb_series_plotted(tb_preview_find(p, TB_SERIES_CPUFREQ, 0)));
        g_assert_cmpuint(tb_preview_count_kind(p, TB_SERIES_MEMINFO), ==, 2);

        /* CPU 1 has no cpufreq (0 in the array): no series, not a line at 0. */
        assert_points(tb_preview_find(p, TB_SERIES_CPUFREQ, 0), (guint64[]) { 1000, 2000, 3000 },
                      (double[]) { 1800000, 1900000, 800000 }, 3);
        assert_points(tb_preview_find(p, TB_SERIES_CPUFREQ, 2), (guint64[]) { 1000, 2000, 3000 },
                      (double[]) { 2400000, 2400000, 2500000 }, 3);
        g_assert_null(tb_preview_find(p, TB_SERIES_CPUFREQ, 1));
        g_assert_cmpstr(tb_preview_find(p, TB_SERIES_CPUFREQ, 2)->name, ==, "CPU 2");

        /* The events of CPU 2 by time, whichever bundle carried them. */
        assert_points(tb_preview_find(p, TB_SERIES_CPUFREQ_EVENTS, 2), (guint64[]) { 4000, 5000 },
                      (double[]) { 2000000, 1200000 }, 2);
        g_assert_cmpuint(tb_preview_count_kind(p, TB_SERIES_CPUFREQ_EVENTS), ==, 1);
        assert_points(tb_preview_find(p, TB_SERIES_IDLE_STATE, 0), (guint64[]) { 5001 }, (double[]) { 1 }, 1);
        assert_points(tb_preview_find(p, TB_SERIES_IDLE_STATE, 2), (guint64[]) { 4001 }, (double[]) { -1 }, 1);
}

/* Idle % between two cpu_stat samples: the first one only starts the count. */
static void test_cpu_idle(void) {
        g_autoptr(GBytes) bytes = counters_trace();
        g_autoptr(TbPreview) p = tb_preview_new_from_data(g_bytes_get_data(bytes, NULL), g_bytes_get_size(bytes), NULL);

        /* idle 1000, 1075, 1100; busy 1000, 1025, 1100: +75 of 100, then +25 of 100. */
        assert_points(tb_preview_find(p, TB_SERIES_CPU_IDLE, 1), (guint64[]) { 2000, 3000 }, (double[]) { 75, 25 }, 2);
        g_assert_null(tb_preview_find(p, TB_SERIES_CPU_IDLE, 0));
}

/* The top processes by peak RSS, named from the ProcessTree where it named them. */
static void test_rss_top(void) {
        g_autoptr(GBytes) bytes = counters_trace();
        TbPreviewLimits limits = TB_PREVIEW_LIMITS_DEFAULT;
        g_autoptr(TbPreview) p = NULL;
        const TbSeries *first, *second;
        guint i;

        limits.top_processes = 2;
        p = tb_preview_new_from_data(g_bytes_get_data(bytes, NULL), g_bytes_get_size(bytes), &limits);
        g_assert_cmpuint(tb_preview_count_kind(p, TB_SERIES_RSS), ==, 2);
        for (i = 0; ((TbSeries *) g_ptr_array_index(p->series, i))->kind != TB_SERIES_RSS; i++)
                ;
        first = g_ptr_array_index(p->series, i);
        second = g_ptr_array_index(p->series, i + 1);
        g_assert_cmpint(first->key, ==, 9);
        g_assert_cmpstr(first->name, ==, "pid 9");
        assert_points(first, (guint64[]) { 1030, 2030, 3030 }, (double[]) { 500, 499, 498 }, 3);
        g_assert_cmpint(second->key, ==, 42);
        g_assert_cmpstr(second->name, ==, "firefox (42)");
        assert_points(second, (guint64[]) { 1010, 2010, 3010 }, (double[]) { 100, 200, 300 }, 3);
        g_assert_null(tb_preview_find(p, TB_SERIES_RSS, 7));
}

/* A full series keeps every other point and then one sample in two, and so on:
 * of samples 0..9 with 4 points at most, 0, 4 and 8 stay; min and max are of all. */
static void test_downsample(void) {
        TbPreviewLimits limits = { .max_points = 4, .max_processes = 1, .top_processes = 8 };
        g_autoptr(GBytes) bytes = NULL;
        g_autoptr(TbPreview) p = NULL;
        Out o;

        out_init(&o);
        for (guint i = 0; i < 10; i++)
                append_rss(&o, 100 * (i + 1), 1, 10 * i);
        /* Beyond max_processes: not followed. */
        append_rss(&o, 2000, 2, 1 << 20);
        bytes = out_finish(&o);
        p = tb_preview_new_from_data(g_bytes_get_data(bytes, NULL), g_bytes_get_size(bytes), &limits);
        assert_points(tb_preview_find(p, TB_SERIES_RSS, 1), (guint64[]) { 100, 500, 900 }, (double[]) { 0, 40, 80 }, 3);
        g_assert_cmpuint(tb_preview_find(p, TB_SERIES_RSS, 1)->n_samples, ==, 10);
        g_assert_cmpfloat(tb_preview_find(p, TB_SERIES_RSS, 1)->max, ==, 90);
        g_assert_null(tb_preview_find(p, TB_SERIES_RSS, 2));
        g_assert_cmpuint(p->last_ts, ==, 2000);
}

/* A torn end keeps what came before and says why it stopped. */
static void test_torn(void) {
        g_autoptr(GBytes) bytes = counters_trace();
        gsize len = g_bytes_get_size(bytes);
        g_autoptr(TbPreview) whole = tb_preview_new_from_data(g_bytes_get_data(bytes, NULL), len, NULL);
        g_autoptr(TbPreview) torn = tb_preview_new_from_data(g_bytes_get_data(bytes, NULL), len - 3, NULL);
        g_autoptr(TbPreview) empty = tb_preview_new_from_data((const guint8 *) "", 0, NULL);

        g_assert_null(whole->read_error);
        g_assert_nonnull(torn->read_error);
        g_assert_cmpuint(torn->n_packets, ==, whole->n_packets - 1);
        g_assert_cmpuint(torn->n_lost, ==, 0); /* the end's FtraceStats was the torn packet */
        g_assert_nonnull(tb_preview_find(torn, TB_SERIES_MEMINFO, MEMINFO_MEM_AVAILABLE));
        g_assert_cmpuint(empty->series->len, ==, 0);
        g_assert_cmpuint(tb_preview_duration_ns(empty), ==, 0);
}

/* A section without series but with warnings about it says so with them; one the
 * trace says nothing of is left out; one with series needs no note. */
static void test_notes(void) {
        g_autoptr(GBytes) counters = counters_trace(), bytes = NULL;
        g_autoptr(TbPreview) with = tb_preview_new_from_data(g_bytes_get_data(counters, NULL),
                                                             g_bytes_get_size(counters), NULL);
        g_autoptr(TbPreview) p = NULL;
        g_autofree char *freq = NULL, *mem = NULL;
        Out o;

        g_assert_null(tb_preview_section_note(with, TB_SECTION_FREQUENCY));
        g_assert_true(tb_preview_section_has_series(with, TB_SECTION_FREQUENCY));
        out_init(&o);
        append_instant(&o, 10, "warning: linux.sys_stats cpufreq: this kernel has no /sys/x: skipped");
        append_instant(&o, 20, "warning: ftrace event 'power/cpu_frequency' does not exist on this kernel: skipped");
        append_instant(&o, 30, "warning: something else");
        append_rss(&o, 40, 1, 10);
        bytes = out_finish(&o);
        p = tb_preview_new_from_data(g_bytes_get_data(bytes, NULL), g_bytes_get_size(bytes), NULL);
        freq = tb_preview_section_note(p, TB_SECTION_FREQUENCY);
        g_assert_cmpstr(freq, ==, "No frequency data on this machine: linux.sys_stats cpufreq: this kernel has no "
                                  "/sys/x: skipped; ftrace event 'power/cpu_frequency' does not exist on this kernel: skipped");
        g_assert_false(tb_preview_section_has_series(p, TB_SECTION_FREQUENCY));
        mem = tb_preview_section_note(p, TB_SECTION_MEMORY);
        g_assert_null(mem);
        g_assert_null(tb_preview_section_note(p, TB_SECTION_PROCESSES));
        g_assert_true(tb_preview_section_has_series(p, TB_SECTION_PROCESSES));
        g_assert_cmpstr(tb_preview_section_title(TB_SECTION_FREQUENCY), ==, "CPU frequency");
        g_assert_cmpint(tb_series_kind_section(TB_SERIES_CPUFREQ_EVENTS), ==, TB_SECTION_FREQUENCY);
}

static void test_file(void) {
        g_autoptr(GBytes) bytes = counters_trace();
        g_autoptr(GError) error = NULL;
        g_autofree char *dir = g_dir_make_tmp("preview-XXXXXX", &error), *path = NULL;
        g_autoptr(TbPreview) p = NULL;

        g_assert_no_error(error);
        path = g_build_filename(dir, "t.pftrace", NULL);
        g_assert_true(g_file_set_contents(path, g_bytes_get_data(bytes, NULL), g_bytes_get_size(bytes), &error));
        p = tb_preview_new_from_file(path, NULL, &error);
        g_assert_no_error(error);
        g_assert_cmpuint(tb_preview_count_kind(p, TB_SERIES_MEMINFO), ==, 2);
        g_assert_cmpint(unlink(path), ==, 0);
        g_assert_cmpint(rmdir(dir), ==, 0);
        g_assert_null(tb_preview_new_from_file(path, NULL, &error));
        g_assert_error(error, G_FILE_ERROR, G_FILE_ERROR_NOENT);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/preview/summary", test_summary);
        g_test_add_func("/preview/meminfo-cpufreq", test_meminfo_cpufreq);
        g_test_add_func("/preview/cpu-idle", test_cpu_idle);
        g_test_add_func("/preview/rss-top", test_rss_top);
        g_test_add_func("/preview/downsample", test_downsample);
        g_test_add_func("/preview/torn", test_torn);
        g_test_add_func("/preview/notes", test_notes);
        g_test_add_func("/preview/file", test_file);
        return g_test_run();
}
