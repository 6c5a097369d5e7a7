/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite, the recorder (tests/recorder.h says what every piece checks), part 02:
 * compact_sched against full events, recorded at once by two sessions;
 * compression_type DEFLATE against none, the same way.
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

/* ---- 2. compact_sched ---- */

typedef struct {
        guint32 cpu;
        guint64 ts;
        gint64 a, b, c; /* switch: next_pid, next_prio, prev_state; waking: pid, target_cpu, prio */
        char comm[17];
} SchedRow;

static gint sched_row_cmp(gconstpointer x, gconstpointer y) {
        const SchedRow *a = x, *b = y;
        if (a->cpu != b->cpu)
                return a->cpu < b->cpu ? -1 : 1;
        if (a->ts != b->ts)
                return a->ts < b->ts ? -1 : 1;
        return memcmp(a, b, sizeof *a);
}

static char *sched_row_str(const SchedRow *r) {
        return g_strdup_printf("cpu %u ts %" G_GUINT64_FORMAT " %" G_GINT64_FORMAT "/%" G_GINT64_FORMAT "/%" G_GINT64_FORMAT
                               " \"%s\"", r->cpu, r->ts, r->a, r->b, r->c, r->comm);
}

/* sched_switch (waking false) or sched_waking rows of a trace within (from, to). */
static GArray *sched_rows(const Trace *t, bool waking, guint64 from, guint64 to) {
        GArray *a = g_array_new(FALSE, TRUE, sizeof(SchedRow));

        for (guint i = 0; i < t->evs->len; i++) {
                const Ev *e = EV(t, i);
                SchedRow r = { .cpu = e->cpu, .ts = e->ts };
                if (e->ts <= from || e->ts >= to)
                        continue;
                if (!waking && e->kind == EV_SCHED_SWITCH) {
                        g_autofree char *c = ev_str(e, 5);
                        r.a = ev_int(e, 6, 0);
                        r.b = ev_int(e, 7, 0);
                        r.c = ev_int(e, 4, 0);
                        g_strlcpy(r.comm, c ? c : "", sizeof r.comm);
                } else if (waking && e->kind == EV_SCHED_WAKING) {
                        g_autofree char *c = ev_str(e, 1);
                        r.a = ev_int(e, 2, 0);
                        r.b = ev_int(e, 5, 0);
                        r.c = ev_int(e, 3, 0);
                        g_strlcpy(r.comm, c ? c : "", sizeof r.comm);
                } else if (!waking && e->kind == EV_COMPACT_SWITCH) {
                        const Tracebus__FtraceEventBundle__CompactSched *c = ev_compact(t, e);
                        const char *comm = compact_comm(c, c->n_switch_next_comm_index, c->switch_next_comm_index, e->ci);
                        r.a = e->ci < c->n_switch_next_pid ? c->switch_next_pid[e->ci] : -1;
                        r.b = e->ci < c->n_switch_next_prio ? c->switch_next_prio[e->ci] : -1;
                        r.c = e->ci < c->n_switch_prev_state ? c->switch_prev_state[e->ci] : -1;
                        g_strlcpy(r.comm, comm ? comm : "(bad index)", sizeof r.comm);
                } else if (waking && e->kind == EV_COMPACT_WAKING) {
                        const Tracebus__FtraceEventBundle__CompactSched *c = ev_compact(t, e);
                        const char *comm = compact_comm(c, c->n_waking_comm_index, c->waking_comm_index, e->ci);
                        r.a = e->ci < c->n_waking_pid ? c->waking_pid[e->ci] : -1;
                        r.b = e->ci < c->n_waking_target_cpu ? c->waking_target_cpu[e->ci] : -1;
                        r.c = e->ci < c->n_waking_prio ? c->waking_prio[e->ci] : -1;
                        g_strlcpy(r.comm, comm ? comm : "(bad index)", sizeof r.comm);
                } else
                        continue;
                g_array_append_val(a, r);
        }
        g_array_sort(a, sched_row_cmp);
        return a;
}

static bool sched_row_same(const SchedRow *a, const SchedRow *b) {
        return a->cpu == b->cpu && a->a == b->a && a->b == b->b && a->c == b->c && g_str_equal(a->comm, b->comm);
}

/* The two sessions' instances each take their own timestamp for the same
 * kernel event (tens of microseconds apart under load), and a ping-pong pair
 * repeats the same rows every few microseconds: so the rows are compared as
 * sequences per CPU, not by timestamp. Every row of inner (a window a few ms
 * inside) must appear, in order, in outer (the whole window) of the other
 * trace. */
static void compare_rows(const char *what, const char *inner_name, GArray *inner, const char *outer_name, GArray *outer,
                         guint n_cpus) {
        guint missing = 0;

        for (guint cpu = 0; cpu < n_cpus; cpu++) {
                guint j = 0, i;
                for (i = 0; i < inner->len; i++) {
                        const SchedRow *x = &g_array_index(inner, SchedRow, i);
                        if (x->cpu != cpu)
                                continue;
                        while (j < outer->len && !sched_row_same(x, &g_array_index(outer, SchedRow, j)))
                                j++;
                        if (j == outer->len) {
                                g_autofree char *sx = sched_row_str(x);
                                guint left = 0;
                                for (guint k = i; k < inner->len; k++)
                                        left += g_array_index(inner, SchedRow, k).cpu == cpu;
                                shortfall("%s, CPU %u: the %s trace's rows from %s on (%u of them) are not in the %s "
                                          "trace in that order", what, cpu, inner_name, sx, left, outer_name);
                                for (guint k = 0; k < outer->len; k++) {
                                        const SchedRow *y = &g_array_index(outer, SchedRow, k);
                                        if (y->cpu == cpu && y->ts + 200000 > x->ts && y->ts < x->ts + 200000) {
                                                g_autofree char *sy = sched_row_str(y);
                                                note("   %s row near it: %s\n", outer_name, sy);
                                        }
                                }
                                missing += left;
                                break;
                        }
                        j++;
                }
        }
        note("%s: %u %s rows against %u %s rows\n", what, inner->len, inner_name, outer->len, outer_name);
        expect(missing == 0, "%s: %u %s rows missing from the %s trace", what, missing, inner_name, outer_name);
        expect(inner->len > 100, "%s: only %u rows in the window", what, inner->len);
}

/* Both ways: every sched_switch and sched_waking row of one trace, away from the ends of
 * (from, to), is in the other's rows of all of it. */
static void compare_sched_traces(const char *a_name, const Trace *a, const char *b_name, const Trace *b,
                                 guint64 from, guint64 to) {
        const guint64 m = 5000000;

        for (int waking = 0; waking < 2; waking++) {
                const char *what = waking ? "sched_waking" : "sched_switch";
                g_autoptr(GArray) a_in = sched_rows(a, waking, from + m, to - m), a_out = sched_rows(a, waking, from, to);
                g_autoptr(GArray) b_in = sched_rows(b, waking, from + m, to - m), b_out = sched_rows(b, waking, from, to);

                compare_rows(what, a_name, a_in, b_name, b_out, a->n_cpus);
                compare_rows(what, b_name, b_in, a_name, a_out, a->n_cpus);
        }
}

static void check_intern_tables(const Trace *t) {
        guint dups = 0, bad = 0;

        for (guint i = 0; i < t->bundles->len; i++) {
                const Tracebus__FtraceEventBundle__CompactSched *c = BUNDLE(t, i)->b->compact_sched;
                g_autoptr(GHashTable) h = NULL;
                if (!c)
                        continue;
                h = g_hash_table_new(g_str_hash, g_str_equal);
                for (size_t j = 0; j < c->n_intern_table; j++) {
                        if (g_hash_table_contains(h, c->intern_table[j]))
                                dups++;
                        g_hash_table_add(h, c->intern_table[j]);
                }
                bad += c->n_switch_next_comm_index != c->n_switch_timestamp || c->n_switch_next_pid != c->n_switch_timestamp ||
                       c->n_switch_next_prio != c->n_switch_timestamp || c->n_switch_prev_state != c->n_switch_timestamp;
                bad += c->n_waking_comm_index != c->n_waking_timestamp || c->n_waking_pid != c->n_waking_timestamp ||
                       c->n_waking_prio != c->n_waking_timestamp || c->n_waking_target_cpu != c->n_waking_timestamp ||
                       (c->n_waking_common_flags && c->n_waking_common_flags != c->n_waking_timestamp);
        }
        expect(dups == 0, "%u comms interned twice in one bundle's intern_table", dups);
        expect(bad == 0, "%u compact_sched columns of unequal length", bad);
}

static void test_compact_sched(void) {
        const char *const events[] = { "sched/sched_switch", "sched/sched_waking", NULL };
        g_autofree char *compact_cfg = ftrace_config("buffers { size_kb: 65536 }\n", events, "  buffer_size_kb: 8192\n");
        g_autofree char *full_cfg = ftrace_config("buffers { size_kb: 65536 }\n", events,
                                                  "  buffer_size_kb: 8192\n  compact_sched { enabled: false }\n");
        g_autoptr(GHashTable) st_c = NULL, st_f = NULL;
        g_auto(Trace) tc = { 0 }, tf = { 0 };
        g_auto(Rec) rc = { 0 }, rf = { 0 };
        g_autoptr(GError) error = NULL;
        guint64 from, to;
        guint full_in_compact = 0, compact_in_full = 0;
        TbBusy busy;

        /* Two sessions at once see the same kernel events in their own instances. */
        rec_start(&rc, "tbuser", "compact.pftrace", compact_cfg);
        rec_start(&rf, "tbuser", "full.pftrace", full_cfg);
        from = boottime();
        g_assert_true(tb_busy_start("tbbusy-compact", &busy, &error));
        g_usleep(1500 * 1000);
        tb_busy_stop(&busy);
        g_usleep(100 * 1000);
        to = boottime();
        st_f = rec_stop(&rf);
        st_c = rec_stop(&rc);
        trace_load(rc.out, false, &tc);
        trace_load(rf.out, false, &tf);
        check_trace(&tc, &(CheckOpts) { .closed = true });
        check_trace(&tf, &(CheckOpts) { .closed = true });
        expect(stat_u64(st_c, "EventsLost") == 0 && stat_u64(st_f, "EventsLost") == 0,
               "events were lost; the comparison needs none");
        for (guint i = 0; i < tc.evs->len; i++)
                full_in_compact += EV(&tc, i)->kind == EV_SCHED_SWITCH || EV(&tc, i)->kind == EV_SCHED_WAKING;
        for (guint i = 0; i < tf.evs->len; i++)
                compact_in_full += EV(&tf, i)->kind == EV_COMPACT_SWITCH || EV(&tf, i)->kind == EV_COMPACT_WAKING;
        expect(full_in_compact == 0, "with compact_sched unset (Perfetto's default: on), %u sched_switch/sched_waking "
               "came as full events", full_in_compact);
        expect(compact_in_full == 0, "with compact_sched disabled, %u compact entries", compact_in_full);
        /* (prev_pid is not checked against the previous next_pid: this kernel itself
         * leaves out idle -> task switches, in its own text output too.) */
        check_intern_tables(&tc);
        compare_sched_traces("full", &tf, "compact", &tc, from, to);
        expect(tc.len < tf.len, "the compact trace (%" G_GSIZE_FORMAT " bytes) is not smaller than the full one (%"
               G_GSIZE_FORMAT ")", tc.len, tf.len);
        verdict();
}

/* Bundles outside compressed_packets, or in them, of a trace. */
static guint n_plain_bundles(const Trace *t) {
        guint n = 0;

        for (guint i = 0; i < t->bundles->len; i++)
                n += PKT(t, BUNDLE(t, i)->pkt)->raw < t->data + t->len && PKT(t, BUNDLE(t, i)->pkt)->raw >= t->data;
        return n;
}

/* compression_type DEFLATE: the same events as an uncompressed session recording at the
 * same time, every bundle inside compressed_packets that zlib inflates, compact columns
 * and full events alike, and a file a fraction of the size. */
static void test_compressed(void) {
        const char *const events[] = { "sched/sched_switch", "sched/sched_waking", NULL };
        g_autofree char *plain_cfg = ftrace_config("buffers { size_kb: 65536 }\n", events, "  buffer_size_kb: 8192\n");
        g_autofree char *compact_cfg = ftrace_config("buffers { size_kb: 65536 }\ncompression_type: COMPRESSION_TYPE_DEFLATE\n",
                                                     events, "  buffer_size_kb: 8192\n");
        g_autofree char *full_cfg = ftrace_config("buffers { size_kb: 65536 }\ncompression_type: COMPRESSION_TYPE_DEFLATE\n",
                                                  events, "  buffer_size_kb: 8192\n  compact_sched { enabled: false }\n");
        g_autoptr(GHashTable) st_p = NULL, st_c = NULL, st_f = NULL;
        g_auto(Trace) tp = { 0 }, tc = { 0 }, tf = { 0 };
        g_auto(Rec) rp = { 0 }, rc = { 0 }, rf = { 0 };
        g_autoptr(GError) error = NULL;
        guint64 from, to;
        TbBusy busy;

        rec_start(&rp, "tbuser", "plain.pftrace", plain_cfg);
        rec_start(&rc, "tbuser", "compressed.pftrace", compact_cfg);
        rec_start(&rf, "tbuser", "compressed-full.pftrace", full_cfg);
        from = boottime();
        g_assert_true(tb_busy_start("tbbusy-deflate", &busy, &error));
        g_usleep(1500 * 1000);
        tb_busy_stop(&busy);
        g_usleep(100 * 1000);
        to = boottime();
        st_f = rec_stop(&rf);
        st_c = rec_stop(&rc);
        st_p = rec_stop(&rp);
        trace_load(rp.out, false, &tp);
        trace_load(rc.out, false, &tc);
        trace_load(rf.out, false, &tf);
        check_trace(&tc, &(CheckOpts) { .closed = true });
        check_trace(&tf, &(CheckOpts) { .closed = true });
        expect(stat_u64(st_p, "EventsLost") == 0 && stat_u64(st_c, "EventsLost") == 0 && stat_u64(st_f, "EventsLost") == 0,
               "events were lost; the comparison needs none");
        expect(tp.n_compressed == 0, "%u compressed_packets without compression_type", tp.n_compressed);
        for (const Trace *t = &tc; t; t = t == &tc ? &tf : NULL) {
                expect(t->bundles->len > 0 && n_plain_bundles(t) == 0,
                       "%s: %u of %u bundles outside compressed_packets", t->path, n_plain_bundles(t), t->bundles->len);
                expect(t->n_compressed >= t->bundles->len, "%s: %u compressed_packets for %u bundles", t->path,
                       t->n_compressed, t->bundles->len);
                expect(n_events(t) == stat_u64(t == &tc ? st_c : st_f, "Events"),
                       "%s: %" G_GUINT64_FORMAT " events in the file, Stop said %" G_GUINT64_FORMAT, t->path,
                       n_events(t), stat_u64(t == &tc ? st_c : st_f, "Events"));
        }
        check_intern_tables(&tc);
        compare_sched_traces("plain", &tp, "compressed", &tc, from, to);
        compare_sched_traces("plain", &tp, "compressed full", &tf, from, to);
        note("plain %" G_GSIZE_FORMAT " bytes (%" G_GUINT64_FORMAT " events), compressed %" G_GSIZE_FORMAT
             " (%" G_GUINT64_FORMAT "), compressed full events %" G_GSIZE_FORMAT " (%" G_GUINT64_FORMAT ")\n",
             tp.len, n_events(&tp), tc.len, n_events(&tc), tf.len, n_events(&tf));
        expect(tc.len * 2 < tp.len, "the compressed trace (%" G_GSIZE_FORMAT " bytes) is not under half the plain one (%"
               G_GSIZE_FORMAT ")", tc.len, tp.len);
        verdict();
}

RECORDER_WRAP(test_compact_sched)
RECORDER_WRAP(test_compressed)

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();
        RECORDER_CASE("02-compact-sched", test_compact_sched);
        RECORDER_CASE("02-compressed", test_compressed);
        return tb_test_run(TB_START_SERVICE);
}
