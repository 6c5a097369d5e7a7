/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite, the recorder (tests/recorder.h says what every piece checks), part 06:
 * numbered markers through a storm, without and with kernel loss.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "system-bus.h"
#include "tb-client.h"
#include "trace-file.h"
#include "trace-reader.h"
#include "trace.pb-c.h"
#include "recorder.h"

/* ---- 6. loss, said honestly: numbered markers through a storm ---- */

typedef struct {
        int fd;
        guint n;
        const char *tag;
        guint64 spacing_ns;
} MarkerRun;

static void *marker_thread(void *data) {
        MarkerRun *m = data;
        char buf[96];
        cpu_set_t set;
        guint64 t0;

        CPU_ZERO(&set);
        CPU_SET(0, &set);
        (void) sched_setaffinity(0, sizeof set, &set);
        (void) prctl(PR_SET_TIMERSLACK, 1);
        t0 = boottime();
        for (guint i = 0; i < m->n; i++) {
                int len = g_snprintf(buf, sizeof buf, "%s %u\n", m->tag, i);
                guint64 due = t0 + (guint64) i * m->spacing_ns;
                struct timespec ts = { .tv_sec = (time_t) (due / 1000000000ull), .tv_nsec = (long) (due % 1000000000ull) };
                (void) clock_nanosleep(CLOCK_BOOTTIME, TIMER_ABSTIME, &ts, NULL);
                if (write(m->fd, buf, (size_t) len) != len)
                        g_error("trace_marker write %u: %s", i, g_strerror(errno));
        }
        return NULL;
}

/* The per-CPU "Events lost by the kernel" counter tracks: their sum, as of ts. */
static guint64 lost_counter_sum(const Trace *t, guint64 ts, guint *ret_samples) {
        g_autoptr(GHashTable) lost_tracks = g_hash_table_new(g_direct_hash, g_direct_equal);
        g_autoptr(GHashTable) last = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
        GHashTableIter it;
        gpointer k, v;
        guint64 sum = 0;
        guint n = 0;

        for (guint i = 0; i < t->pkts->len; i++) {
                const Tracebus__TrackDescriptor *d = PKT(t, i)->p->track_descriptor;
                if (d && d->name && g_str_has_prefix(d->name, "Events lost by the kernel, CPU "))
                        g_hash_table_add(lost_tracks, GSIZE_TO_POINTER(d->uuid));
        }
        for (guint i = 0; i < t->pkts->len; i++) {
                const Tracebus__TracePacket *p = PKT(t, i)->p;
                const Tracebus__TrackEvent *e = p->track_event;
                guint64 *val;
                if (!e || !g_hash_table_contains(lost_tracks, GSIZE_TO_POINTER(e->track_uuid)) || p->timestamp > ts)
                        continue;
                n++;
                val = g_new(guint64, 2);
                val[0] = p->timestamp;
                val[1] = e->has_double_counter_value ? (guint64) e->double_counter_value : (guint64) e->counter_value;
                {
                        guint64 *old = g_hash_table_lookup(last, GSIZE_TO_POINTER(e->track_uuid));
                        if (old && old[0] > val[0]) {
                                g_free(val);
                                continue;
                        }
                }
                g_hash_table_insert(last, GSIZE_TO_POINTER(e->track_uuid), val);
        }
        g_hash_table_iter_init(&it, last);
        while (g_hash_table_iter_next(&it, &k, &v))
                sum += ((guint64 *) v)[1];
        if (ret_samples)
                *ret_samples = n;
        return sum;
}

/* The live EventsLost property (read between t0 and t1), the trace's loss
 * counter tracks and Stop's KernelEventsLost tell one story. */
static void check_lost_counters(const Trace *t, guint64 prop, guint64 t0, guint64 t1, guint64 stop_klost) {
        guint n;
        guint64 final = lost_counter_sum(t, G_MAXUINT64, &n);
        guint64 lo = lost_counter_sum(t, t0 > 2000000000ull ? t0 - 2000000000ull : 0, NULL);
        guint64 hi = lost_counter_sum(t, t1, NULL);

        note("lost counters: %u samples, %" G_GUINT64_FORMAT " at the end; %" G_GUINT64_FORMAT "..%" G_GUINT64_FORMAT
             " around the property read, which said %" G_GUINT64_FORMAT "\n", n, final, lo, hi, prop);
        expect(final == stop_klost, "the loss counter tracks end at %" G_GUINT64_FORMAT ", Stop says KernelEventsLost %"
               G_GUINT64_FORMAT, final, stop_klost);
        expect(prop >= lo && prop <= hi, "the EventsLost property said %" G_GUINT64_FORMAT " while the trace's loss "
               "counters went from %" G_GUINT64_FORMAT " to %" G_GUINT64_FORMAT, prop, lo, hi);
}

static void fidelity(bool with_loss) {
        const guint n = 20000;
        const char *const events[] = { "sched/sched_switch", "sched/sched_waking", "ftrace/print", NULL };
        g_autofree char *tag = g_strdup_printf("tbmark-%d-%d", (int) getpid(), with_loss);
        g_autofree char *cfg = ftrace_config("write_into_file: true\nfile_write_period_ms: 1000\nbuffers { size_kb: 65536 }\n",
                                             events,
                                             with_loss ? "  buffer_size_kb: 64\n  drain_period_ms: 500\n"
                                                       : "  buffer_size_kb: 16384\n");
        g_autoptr(GHashTable) st = NULL;
        g_autofree char *prop_lost = NULL, *prop_events = NULL;
        g_auto(Trace) t = { 0 };
        g_auto(Rec) r = { 0 };
        g_auto(Markers) m = { 0 };
        /* Without loss the service must keep up with the markers and the storm: a slower
         * build gets them at a slower rate. With loss, a slower service only loses more. */
        MarkerRun run = { .n = n, .tag = tag, .spacing_ns = 60 * 1000 * (with_loss ? 1 : tb_time_factor()) };
        pthread_t th;
        guint present, dup = 0, gaps = 0, unaccounted = 0, misplaced = 0;
        guint64 klost, lost0, t0, t1;
        GPid storm;

        rec_start(&r, "tbuser", with_loss ? "fidelity-loss.pftrace" : "fidelity.pftrace", cfg);
        run.fd = marker_open(&r);
        storm = storm_start(120000, !with_loss);
        g_assert_cmpint(pthread_create(&th, NULL, marker_thread, &run), ==, 0);
        g_assert_cmpint(pthread_join(th, NULL), ==, 0);
        storm_wait(storm);
        close(run.fd);
        g_usleep(1000 * 1000);
        t0 = boottime();
        prop_lost = rec_get(&r, "EventsLost");
        prop_events = rec_get(&r, "EventsRecorded");
        t1 = boottime();
        st = rec_stop(&r);
        trace_load(r.out, false, &t);
        check_trace(&t, &(CheckOpts) { .closed = true });
        check_tracks(&t, NULL);
        check_stop_stats(st, &t, true);
        klost = stat_u64(st, "KernelEventsLost");
        lost0 = ftrace_stats_lost(&t, 0);
        check_lost_counters(&t, g_ascii_strtoull(prop_lost, NULL, 10), t0, t1, klost);
        expect(g_ascii_strtoull(prop_events, NULL, 10) <= stat_u64(st, "Events"),
               "the EventsRecorded property (%s) is above Stop's Events", prop_events);

        markers_collect(&t, tag, n, &m);
        present = markers_present(&m);
        for (guint i = 0; i < n; i++)
                dup += m.count[i] > 1;
        note("markers: %u written, %u present, %u lost; kernel lost %" G_GUINT64_FORMAT " (CPU 0: %" G_GUINT64_FORMAT
             "), %u bundles with lost_events (CPU 0: %u)\n", n, present, n - present, klost, lost0, n_lost_bundles(&t, -1),
             n_lost_bundles(&t, 0));
        expect(dup == 0, "%u markers are in the trace more than once", dup);
        expect(m.out_of_order == 0, "%u markers out of order", m.out_of_order);
        expect(n - present <= lost0, "%u markers missing, but only %" G_GUINT64_FORMAT " events reported lost on CPU 0",
               n - present, lost0);
        /* Every gap has a lost_events bundle on CPU 0 between the markers around it. */
        for (guint i = 0; i < n;) {
                guint j, lo, hi;
                bool flagged = false;
                if (m.count[i]) {
                        i++;
                        continue;
                }
                for (j = i; j < n && !m.count[j]; j++)
                        ;
                gaps++;
                lo = i > 0 ? m.bundle[i - 1] : 0;
                hi = j < n ? m.bundle[j] : t.bundles->len - 1;
                for (guint b = lo; b <= hi && b < t.bundles->len; b++) {
                        const Tracebus__FtraceEventBundle *bb = BUNDLE(&t, b)->b;
                        if (bb->cpu == 0 && bb->lost_events && (b > lo || i == 0))
                                flagged = true;
                }
                if (!flagged && lo == hi && BUNDLE(&t, lo)->b->lost_events) {
                        /* Said, but not where: lost_events means "lost before this bundle". */
                        if (misplaced++ < 3)
                                shortfall("markers %u..%u are missing in the middle of bundle %u (CPU 0, lost_events set): "
                                          "the loss is not given its own bundle, so its place is wrong", i, j - 1, lo);
                } else if (!flagged && unaccounted++ < 3)
                        shortfall("markers %u..%u are missing with no lost_events bundle on CPU 0 between bundles %u and %u: "
                                  "a silent gap", i, j - 1, lo, hi);
                i = j;
        }
        expect(unaccounted == 0, "%u of %u gaps in the markers are silent", unaccounted, gaps);
        expect(misplaced == 0, "%u of %u gaps in the markers fall inside a bundle", misplaced, gaps);
        if (with_loss) {
                expect(klost > 0, "the loss variant (64 KiB kernel buffer, 500 ms drain) lost nothing: it tests nothing");
                expect(present < n, "no marker lost in the loss variant");
        } else {
                expect(klost == 0, "with 16 MiB per CPU and a 100 ms drain the kernel lost %" G_GUINT64_FORMAT " events",
                       klost);
                expect(present == n, "%u of %u markers missing without loss", n - present, n);
        }
        verdict();
}

static void test_fidelity(void) {
        fidelity(false);
}

static void test_fidelity_loss(void) {
        fidelity(true);
}

RECORDER_WRAP(test_fidelity)
RECORDER_WRAP(test_fidelity_loss)

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();
        RECORDER_CASE("06-fidelity", test_fidelity);
        RECORDER_CASE("06-fidelity-loss", test_fidelity_loss);
        return tb_test_run(TB_START_SERVICE);
}
