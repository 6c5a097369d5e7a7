/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite, the recorder (tests/recorder.h says what every piece checks), part 08:
 * an idle session's worker sleeps until a buffer passes its
 * watermark instead of waking every drain period; Stop's final drain, reading the CPUs
 * on several threads at once, keeps every marker the kernel held.
 */
#include <dirent.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "system-bus.h"
#include "tb-client.h"
#include "recorder.h"

/* The service's "tb-recorder" threads, as a set of TIDs. */
static GHashTable *recorder_threads(void) {
        g_autofree char *dir = g_strdup_printf("/proc/%d/task", (int) tb_bus()->service_pid);
        GHashTable *set = g_hash_table_new(g_direct_hash, g_direct_equal);
        DIR *d = opendir(dir);
        struct dirent *de;

        g_assert_nonnull(d);
        while ((de = readdir(d))) {
                g_autofree char *path = g_strdup_printf("%s/%s/comm", dir, de->d_name);
                g_autofree char *comm = NULL;

                if (de->d_name[0] != '.' && g_file_get_contents(path, &comm, NULL, NULL) &&
                    g_str_has_prefix(comm, "tb-recorder"))
                        g_hash_table_add(set, GINT_TO_POINTER(atoi(de->d_name)));
        }
        closedir(d);
        return set;
}

/* The recorder thread that appeared since @before. */
static int new_recorder_thread(GHashTable *before) {
        g_autoptr(GHashTable) now = recorder_threads();
        GHashTableIter it;
        gpointer tid;
        int found = 0;

        g_hash_table_iter_init(&it, now);
        while (g_hash_table_iter_next(&it, &tid, NULL))
                if (!g_hash_table_contains(before, tid)) {
                        g_assert_cmpint(found, ==, 0);
                        found = GPOINTER_TO_INT(tid);
                }
        g_assert_cmpint(found, >, 0);
        return found;
}

/* Times the thread was scheduled in (/proc/.../schedstat: run time, wait time, slices). */
static guint64 thread_slices(int tid) {
        g_autofree char *path = g_strdup_printf("/proc/%d/task/%d/schedstat", (int) tb_bus()->service_pid, tid);
        g_autofree char *text = NULL;
        unsigned long long run, wait, slices;

        g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
        g_assert_cmpint(sscanf(text, "%llu %llu %llu", &run, &wait, &slices), ==, 3);
        return slices;
}

static int start_watched(Rec *r, const char *name, const char *ftrace_extra, const char *top) {
        const char *const events[] = { "sched/sched_switch", "sched/sched_waking", NULL };
        g_autofree char *cfg = ftrace_config(top, events, ftrace_extra);
        g_autoptr(GHashTable) before = recorder_threads();

        rec_start(r, "tbuser", name, cfg);
        return new_recorder_thread(before);
}

/* Two ring sessions of the same events over the same seconds: one names a 100 ms
 * drain_period_ms, the other nothing. The first worker wakes about 20 times; the other
 * sleeps in poll() until its 4 MiB per CPU pass a tenth full, which the machine's own
 * events do not reach in 2 s. A ratio in one run, not an absolute count. */
static void test_idle(void) {
        g_auto(Rec) idle = { 0 };
        g_auto(Rec) periodic = { 0 };
        g_auto(Trace) t = { 0 };
        g_autoptr(GHashTable) st = NULL;
        guint64 i0, p0, i1, p1;
        int idle_tid = start_watched(&idle, "idle.pftrace", "  buffer_size_kb: 4096\n", "buffers { size_kb: 8192 }\n");
        int periodic_tid = start_watched(&periodic, "periodic.pftrace", "  buffer_size_kb: 4096\n  drain_period_ms: 100\n",
                                         "buffers { size_kb: 8192 }\n");

        g_usleep(300 * 1000);
        i0 = thread_slices(idle_tid);
        p0 = thread_slices(periodic_tid);
        g_usleep(2000 * 1000);
        i1 = thread_slices(idle_tid);
        p1 = thread_slices(periodic_tid);
        note("in 2 s the idle session's worker ran %" G_GUINT64_FORMAT " times, the periodic one's %" G_GUINT64_FORMAT "\n",
             i1 - i0, p1 - p0);
        expect(p1 - p0 >= 10, "the session with a 100 ms drain_period_ms ran only %" G_GUINT64_FORMAT " times in 2 s",
               p1 - p0);
        expect((i1 - i0) * 4 < p1 - p0, "the idle session's worker ran %" G_GUINT64_FORMAT " times, the periodic one's %"
               G_GUINT64_FORMAT ": it still wakes on a timer", i1 - i0, p1 - p0);

        /* What it did not read meanwhile is all in its trace at Stop. */
        g_hash_table_unref(rec_stop(&periodic));
        st = rec_stop(&idle);
        trace_load(idle.out, false, &t);
        check_trace(&t, &(CheckOpts) { .closed = true });
        check_stop_stats(st, &t, true);
        expect(n_events(&t) > 0, "the idle session recorded no event at all");
        verdict();
}

/* A long trace written every second and drained every 100 ms, of the machine's own
 * events: a CPU's bundle stays open across passes until the next write or until it is
 * full, instead of one bundle (a packet, a deflate block) per CPU per pass, which held
 * only the events of the ~100 ms since the pass before. Some bundle must hold events of
 * more than three passes; busy enough to fill a bundle in three passes (some 30 pages a
 * second per CPU), the machine would make this fail. */
static void test_quiet_bundles(void) {
        g_auto(Rec) r = { 0 };
        g_auto(Trace) t = { 0 };
        g_autoptr(GHashTable) st = NULL;
        guint64 s0, s1, longest = 0;
        int tid;

        tid = start_watched(&r, "quiet-bundles.pftrace", "  buffer_size_kb: 4096\n  drain_period_ms: 100\n",
                            "write_into_file: true\nfile_write_period_ms: 1000\nbuffers { size_kb: 8192 }\n");
        g_usleep(300 * 1000);
        s0 = thread_slices(tid);
        g_usleep(2000 * 1000);
        s1 = thread_slices(tid);
        st = rec_stop(&r);
        trace_load(r.out, false, &t);
        check_trace(&t, &(CheckOpts) { .closed = true });
        check_stop_stats(st, &t, true);
        for (guint i = 0; i < t.bundles->len; i++) {
                const Bundle *bd = BUNDLE(&t, i);

                if (bd->n_ev >= 2)
                        longest = MAX(longest, bd->max_ts - bd->min_ts);
        }
        note("the worker ran %" G_GUINT64_FORMAT " times in 2 s; %u bundles, the longest over %.0f ms of events\n",
             s1 - s0, t.bundles->len, longest / 1e6);
        expect(s1 - s0 >= 10, "the session with a 100 ms drain_period_ms ran only %" G_GUINT64_FORMAT " times in 2 s",
               s1 - s0);
        expect(n_events(&t) > 0, "the session recorded no event at all");
        expect(longest > 300 * G_GUINT64_CONSTANT(1000000), "no bundle holds more than %.0f ms of events: a bundle "
               "a pass", longest / 1e6);
        verdict();
}

/* Numbered markers on every CPU into a ring session that never drained before Stop (they
 * stay under the watermark): the final drain reads the CPUs at once, each into a stage of
 * its own; every marker must be in the trace once, each CPU's in order. */
static void test_stop_parallel(void) {
        const char *const events[] = { "ftrace/print", NULL };
        const guint n = 8000;
        long n_cpus = sysconf(_SC_NPROCESSORS_ONLN);
        g_autofree char *tag = g_strdup_printf("tbidle-%d", (int) getpid());
        g_autofree char *cfg = ftrace_config("buffers { size_kb: 65536 }\n", events, "  buffer_size_kb: 16384\n");
        g_autoptr(GHashTable) st = NULL;
        g_auto(Trace) t = { 0 };
        g_auto(Rec) r = { 0 };
        g_auto(Markers) m = { 0 };
        guint dup = 0;
        cpu_set_t old;
        int fd;

        rec_start(&r, "tbuser", "stop-parallel.pftrace", cfg);
        fd = marker_open(&r);
        for (guint i = 0; i < n; i++) {
                g_autofree char *line = g_strdup_printf("%s %u\n", tag, i);

                if (i % 500 == 0)
                        pin_to_cpu((int) ((i / 500) % (guint) n_cpus), i == 0 ? &old : NULL);
                marker_write(fd, line);
        }
        g_assert_cmpint(sched_setaffinity(0, sizeof old, &old), ==, 0);
        close(fd);
        st = rec_stop(&r);
        trace_load(r.out, false, &t);
        check_trace(&t, &(CheckOpts) { .closed = true });
        check_stop_stats(st, &t, true);
        markers_collect(&t, tag, n, &m);
        for (guint i = 0; i < n; i++)
                dup += m.count[i] > 1;
        note("markers: %u written, %u present, on %ld CPUs\n", n, markers_present(&m), n_cpus);
        expect(markers_present(&m) == n, "%u of %u markers missing after the parallel final drain",
               n - markers_present(&m), n);
        expect(dup == 0, "%u markers are in the trace more than once", dup);
        verdict();
}

RECORDER_WRAP(test_idle)
RECORDER_WRAP(test_stop_parallel)
RECORDER_WRAP(test_quiet_bundles)

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();
        /* More threads than this machine's CPUs: the drain takes at most one a CPU. */
        g_setenv(TB_TEST_TRACEBUSD_CONF, "[Limits]\nStopDrainThreads=4\n", TRUE);
        RECORDER_CASE("08-idle", test_idle);
        RECORDER_CASE("08-stop-parallel", test_stop_parallel);
        RECORDER_CASE("08-quiet-bundles", test_quiet_bundles);
        return tb_test_run(TB_START_SERVICE);
}
