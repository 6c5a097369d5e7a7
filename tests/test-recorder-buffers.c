/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite, the recorder (tests/recorder.h says what every piece checks), part 05:
 * long trace with max_file_size_bytes, ring buffer wrapped 100 times, DISCARD, two
 * buffers as configured, a config without linux.ftrace.
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

/* ---- 5. buffer modes ---- */

/* write_into_file with max_file_size_bytes: periodic writes, and the session
 * ends by itself at a packet boundary within the limit. */
static void test_long_trace_size_limit(void) {
        const guint64 max = 4 * 1024 * 1024;
        const char *const events[] = { "sched/sched_switch", "sched/sched_waking", "ftrace/print", NULL };
        g_autofree char *top = g_strdup_printf("duration_ms: 60000\nwrite_into_file: true\nfile_write_period_ms: 500\n"
                                               "max_file_size_bytes: %" G_GUINT64_FORMAT "\nbuffers { size_kb: 16384 }\n",
                                               max);
        g_autofree char *cfg = ftrace_config(top, events, "  compact_sched { enabled: false }\n");
        g_autoptr(GHashTable) st = NULL;
        g_autoptr(GPtrArray) inst = g_ptr_array_new_with_free_func(g_free);
        g_auto(Trace) mid = { 0 }, t = { 0 };
        g_auto(Rec) r = { 0 };
        g_autoptr(GError) error = NULL;
        struct stat sb;
        guint n_periodic = 0;
        TbBusy busy;

        rec_start(&r, "tbuser", "long.pftrace", cfg);
        tb_sleep_scaled(1200);
        trace_load(r.out, true, &mid);
        expect(mid.bundles->len > 0, "after %.1f s with file_write_period_ms 500 the file has no ftrace bundle yet",
               tb_scaled_ms(1200) / 1000.0);
        expect(!mid.torn, "the file read while recording is torn: periodic writes are not whole packets");
        g_assert_true(tb_busy_start("tbbusy-long", &busy, &error));
        st = rec_wait_end(&r, tb_scaled_ms(30000));
        tb_busy_stop(&busy);
        expect(g_strcmp0(g_hash_table_lookup(st, "Reason"), "size-reached") == 0, "the session ended with \"%s\", not "
               "size-reached", (const char *) g_hash_table_lookup(st, "Reason"));
        g_assert_cmpint(stat(r.out, &sb), ==, 0);
        note("file %" G_GINT64_FORMAT " bytes, max_file_size_bytes %" G_GUINT64_FORMAT "\n", (gint64) sb.st_size, max);
        expect((guint64) sb.st_size <= max, "the file is %" G_GINT64_FORMAT " bytes, above max_file_size_bytes %"
               G_GUINT64_FORMAT, (gint64) sb.st_size, max);
        /* Whole packets up to the limit: the next one (a bundle of one drain, which can
         * be large) did not fit. */
        expect((guint64) sb.st_size >= max / 4, "the file is only %" G_GINT64_FORMAT " bytes of %" G_GUINT64_FORMAT,
               (gint64) sb.st_size, max);
        trace_load(r.out, false, &t);
        check_trace(&t, &(CheckOpts) { .closed = false, .describe_all = false });
        check_tracks(&t, inst);
        for (guint i = 0; i < inst->len; i++) {
                note("instant: %s\n", (const char *) g_ptr_array_index(inst, i));
                n_periodic += g_str_has_prefix(g_ptr_array_index(inst, i), "periodic write@");
        }
        {
                /* Data from after ~700 ms means the write at 500 ms was whole, with the
                 * instant at its end. */
                guint64 last_ev = 0, started = tracing_started_ts(&t);
                for (guint i = 0; i < t.evs->len; i++)
                        last_ev = MAX(last_ev, EV(&t, i)->ts);
                note("events up to %.2f s after tracing_started\n", (double) (last_ev - started) / 1e9);
                if (last_ev > started + 700000000ull)
                        expect(n_periodic >= 1, "%u \"periodic write\" instants, though the file holds data of a later "
                               "write", n_periodic);
        }
        expect(stat_u64(st, "Bytes") == (guint64) sb.st_size, "SessionEnded says Bytes=%s, the file has %" G_GINT64_FORMAT,
               (const char *) g_hash_table_lookup(st, "Bytes"), (gint64) sb.st_size);
        verdict();
}

/* A service-side ring: the oldest packets go, the newest and every name stay. */
static void test_ring_buffer_wrap(void) {
        const char *const events[] = { "sched/sched_switch", "sched/sched_waking", "ftrace/print", NULL };
        g_autofree char *cfg = ftrace_config("buffers { size_kb: 256 fill_policy: RING_BUFFER }\n", events,
                                             "  buffer_size_kb: 8192\n  compact_sched { enabled: false }\n");
        g_autoptr(GHashTable) st = NULL;
        g_auto(Trace) mid = { 0 }, t = { 0 };
        g_auto(Rec) r = { 0 };
        g_auto(Described) d = { 0 };
        g_autoptr(GError) error = NULL;
        g_autofree char *tag = g_strdup_printf("tb-ring-%d", (int) getpid());
        g_autofree char *early = g_strdup_printf("%s-early", tag), *late = g_strdup_printf("%s-late", tag);
        const Tracebus__TraceStats *ts;
        const Tracebus__ProcessTree__Process *pp;
        bool early_seen = false, late_seen = false;
        TbBusy busy;
        GPid storm;
        int mfd;
        pid_t np;
        int status;

        g_assert_true(tb_busy_start("tbbusy-ring", &busy, &error));
        rec_start(&r, "tbuser", "ring.pftrace", cfg);
        mfd = marker_open(&r);
        marker_write(mfd, early);
        /* A process that comes and goes while the ring wraps. */
        fflush(NULL);
        np = fork();
        if (np == 0) {
                (void) prctl(PR_SET_NAME, "tbring-new");
                usleep(500 * 1000);
                _exit(0);
        }
        /* Some 150 wraps' worth; a slower service may fall behind and the kernel drop
         * some, so a slower build gets a longer storm. */
        storm = storm_start(200000 * tb_time_factor(), false);
        storm_wait(storm);
        g_assert_cmpint(waitpid(np, &status, 0), ==, np);
        /* Let the reader catch up with the kernel buffers: data is kept in the order
         * it is read, so a backlog read after the last marker would push it out. */
        wait_caught_up(&r, tb_scaled_ms(10000));
        trace_load(r.out, true, &mid);
        expect(mid.bundles->len == 0, "a ring buffer (no write_into_file) wrote %u bundles before Stop",
               mid.bundles->len);
        /* The last marker right before Stop: among the newest data. */
        tb_busy_stop(&busy);
        marker_write(mfd, late);
        close(mfd);
        st = rec_stop(&r);
        trace_load(r.out, false, &t);
        check_trace(&t, &(CheckOpts) { .closed = true, .wrapped = true, .describe_all = true });
        check_tracks(&t, NULL);
        check_stop_stats(st, &t, true);
        described_collect(&t, &d);
        for (guint i = 0; i < t.evs->len; i++) {
                const Ev *e = EV(&t, i);
                g_autofree char *b = e->kind == EV_PRINT ? ev_str(e, 2) : NULL;
                if (b && g_str_has_prefix(b, early))
                        early_seen = true;
                if (b && g_str_has_prefix(b, late))
                        late_seen = true;
        }
        expect(!early_seen, "the marker written first is still there: the ring did not overwrite the oldest data");
        expect(late_seen, "the marker written last is gone: a ring keeps the newest data");
        if (!late_seen)
                for (guint i = t.bundles->len > 6 ? t.bundles->len - 6 : 0; i < t.bundles->len; i++) {
                        const Bundle *b = BUNDLE(&t, i);
                        note("   bundle %u: CPU %u, %u events (%zu full), %zu errors, lost %d, %" G_GUINT64_FORMAT "..%"
                             G_GUINT64_FORMAT ", %" G_GSIZE_FORMAT " bytes\n", i, b->b->cpu, b->n_ev, b->b->n_event,
                             b->b->n_error, b->b->lost_events, b->min_ts, b->max_ts, PKT(&t, b->pkt)->raw_len);
                }
        ts = last_trace_stats(&t);
        if (ts && ts->n_buffer_stats) {
                const Tracebus__TraceStats__BufferStats *b = ts->buffer_stats[0];
                double wraps = b->buffer_size ? (double) b->bytes_overwritten / (double) b->buffer_size : 0;
                note("TraceStats: buffer %" G_GUINT64_FORMAT ", written %" G_GUINT64_FORMAT ", overwritten %" G_GUINT64_FORMAT
                     " bytes in %" G_GUINT64_FORMAT " chunks: %.0f wraps\n", b->buffer_size, b->bytes_written,
                     b->bytes_overwritten, b->chunks_overwritten, wraps);
                expect(wraps >= 100, "the ring wrapped only %.0f times (the case wants 100)", wraps);
                {
                        gsize data = 0;
                        for (guint i = 0; i < t.pkts->len; i++)
                                if (PKT(&t, i)->p->ftrace_events || PKT(&t, i)->p->track_event)
                                        data += PKT(&t, i)->raw_len;
                        guint64 avg = b->chunks_overwritten ? b->bytes_overwritten / b->chunks_overwritten : 0;
                        note("the ring kept %" G_GSIZE_FORMAT " bytes of data of %" G_GUINT64_FORMAT "; overwritten packets "
                             "averaged %" G_GUINT64_FORMAT " bytes\n", data, b->buffer_size, avg);
                        /* The ring drops whole packets: packets near its size leave it
                         * holding a fraction of size_kb (a small last packet pushes out a
                         * big one and the ring is nearly empty). */
                        expect(avg <= b->buffer_size / 8, "the packets the ring overwrote average %" G_GUINT64_FORMAT
                               " bytes, %.0f%% of the %" G_GUINT64_FORMAT "-byte ring: dropping whole packets that big, the "
                               "ring holds anything from one small packet to size_kb at Stop (%" G_GSIZE_FORMAT
                               " bytes of data this time)", avg,
                               100.0 * (double) avg / (double) b->buffer_size, b->buffer_size, data);
                }
                expect(b->chunks_overwritten > 0, "TraceStats counts no overwritten chunks");
        } else
                shortfall("no TraceStats.buffer_stats");
        expect(stat_u64(st, "EventsOverwritten") > 0, "Stop's EventsOverwritten is 0 after the ring wrapped");
        /* Names survive: the test, the busy pair from before the trace, the
         * process from during it. */
        expect(g_strcmp0(g_hash_table_lookup(d.threads, GINT_TO_POINTER(busy.pid)), busy.comm) == 0,
               "after the wrap, the busy thread %d has no name \"%s\"", busy.pid, busy.comm);
        pp = g_hash_table_lookup(d.processes, GINT_TO_POINTER(getpid()));
        expect(pp != NULL, "after the wrap, the test process %d is not described", getpid());
        expect(g_strcmp0(g_hash_table_lookup(d.threads, GINT_TO_POINTER(np)), "tbring-new") == 0,
               "after the wrap, thread %d \"tbring-new\" (started during the trace) is not named", np);
        verdict();
}

/* Marker "TAG-early", a fork storm, marker "TAG-late", then Stop: the stats; the trace
 * loaded and checked; whether each marker is in it. */
static GHashTable *storm_between_markers(Rec *r, Trace *t, const char *tag, bool *ret_early, bool *ret_late) {
        g_autofree char *early = g_strdup_printf("%s-early", tag), *late = g_strdup_printf("%s-late", tag);
        GHashTable *st;
        GPid storm;
        int mfd;

        mfd = marker_open(r);
        marker_write(mfd, early);
        /* The early marker must be in the service's buffer before the storm fills it: the
         * configs drain every 100 ms, so after a few passes it is. Without the wait, a pass
         * that reads another CPU's storm first could fill a small buffer before it, on a
         * slow (sanitizer) build. */
        tb_sleep_scaled(400);
        storm = storm_start(100000, false);
        storm_wait(storm);
        marker_write(mfd, late);
        close(mfd);
        g_usleep(200 * 1000);
        st = rec_stop(r);
        trace_load(r->out, false, t);
        check_trace(t, &(CheckOpts) { .closed = true });
        check_tracks(t, NULL);
        *ret_early = *ret_late = false;
        for (guint i = 0; i < t->evs->len; i++) {
                const Ev *e = EV(t, i);
                g_autofree char *b = e->kind == EV_PRINT ? ev_str(e, 2) : NULL;
                *ret_early = *ret_early || (b && g_str_has_prefix(b, early));
                *ret_late = *ret_late || (b && g_str_has_prefix(b, late));
        }
        return st;
}

/* DISCARD: the service stops accepting when full and counts what it refused. */
static void test_discard(void) {
        const char *const events[] = { "sched/sched_switch", "sched/sched_waking", "ftrace/print", NULL };
        g_autofree char *cfg = ftrace_config("buffers { size_kb: 256 fill_policy: DISCARD }\n", events,
                                             "  buffer_size_kb: 8192\n  drain_period_ms: 100\n");
        g_autoptr(GHashTable) st = NULL;
        g_auto(Trace) t = { 0 };
        g_auto(Rec) r = { 0 };
        g_autofree char *tag = g_strdup_printf("tb-discard-%d", (int) getpid());
        const Tracebus__TraceStats *ts;
        bool early_seen, late_seen;

        rec_start(&r, "tbuser", "discard.pftrace", cfg);
        st = storm_between_markers(&r, &t, tag, &early_seen, &late_seen);
        check_stop_stats(st, &t, true);
        expect(early_seen, "DISCARD lost the first marker: it must keep the oldest data");
        expect(!late_seen, "DISCARD kept the marker written after the buffer was full");
        expect(stat_u64(st, "EventsOverwritten") > 0, "Stop's EventsOverwritten (refused by DISCARD) is 0");
        ts = last_trace_stats(&t);
        expect(ts && ts->n_buffer_stats && ts->buffer_stats[0]->chunks_discarded > 0,
               "TraceStats counts no discarded chunks");
        expect(t.len <= 256 * 1024 + 512 * 1024, "a 256 KiB DISCARD buffer made a %" G_GSIZE_FORMAT " byte file", t.len);
        verdict();
}

/* Two buffers: the ftrace data source writes to the one target_buffer_name names (a
 * small DISCARD buffer), which fills and refuses; the other (a RING buffer holding the
 * service's own instants) loses nothing. TraceStats says so per buffer, in config order. */
static void test_two_buffers(void) {
        const char *const events[] = { "sched/sched_switch", "sched/sched_waking", "ftrace/print", NULL };
        g_autofree char *ft = NULL, *cfg = NULL;
        g_autoptr(GHashTable) st = NULL;
        g_auto(Trace) t = { 0 };
        g_auto(Rec) r = { 0 };
        g_autofree char *tag = g_strdup_printf("tb-two-%d", (int) getpid());
        const Tracebus__TraceStats *ts;
        bool early_seen, late_seen;

        ft = ftrace_config("buffers { size_kb: 1024 fill_policy: RING_BUFFER }\n"
                            "buffers { size_kb: 128 fill_policy: DISCARD name: \"sched\" }\n", events,
                            "  buffer_size_kb: 8192\n  drain_period_ms: 100\n");
        /* The data source's name for its buffer, after its ftrace_config. */
        g_assert_true(g_str_has_suffix(ft, "} } }\n"));
        ft[strlen(ft) - 4] = 0;
        cfg = g_strconcat(ft, " target_buffer: 0 target_buffer_name: \"sched\" } }\n", NULL);
        rec_start(&r, "tbuser", "two-buffers.pftrace", cfg);
        st = storm_between_markers(&r, &t, tag, &early_seen, &late_seen);
        expect(early_seen && !late_seen, "the ftrace data did not go to its 128 KiB DISCARD buffer (early marker %s, "
               "late marker %s)", early_seen ? "kept" : "lost", late_seen ? "kept" : "refused");
        ts = last_trace_stats(&t);
        expect(ts && ts->n_buffer_stats == 2 && ts->total_buffers == 2, "TraceStats has %zu buffer_stats, not 2",
               ts ? ts->n_buffer_stats : 0);
        if (ts && ts->n_buffer_stats == 2) {
                const Tracebus__TraceStats__BufferStats *b0 = ts->buffer_stats[0], *b1 = ts->buffer_stats[1];

                note("buffer 0: size %" G_GUINT64_FORMAT ", written %" G_GUINT64_FORMAT ", read %" G_GUINT64_FORMAT
                     "; buffer 1: size %" G_GUINT64_FORMAT ", written %" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT
                     " chunks discarded\n", b0->buffer_size, b0->bytes_written, b0->bytes_read, b1->buffer_size,
                     b1->bytes_written, b1->chunks_discarded);
                expect(b0->buffer_size == 1024 * 1024 && b1->buffer_size == 128 * 1024,
                       "buffer sizes %" G_GUINT64_FORMAT " and %" G_GUINT64_FORMAT ", not as configured",
                       b0->buffer_size, b1->buffer_size);
                expect(b1->chunks_discarded > 0 && b1->bytes_written <= 128 * 1024,
                       "the DISCARD buffer took %" G_GUINT64_FORMAT " bytes and refused %" G_GUINT64_FORMAT " chunks",
                       b1->bytes_written, b1->chunks_discarded);
                expect(b0->chunks_discarded == 0 && b0->chunks_overwritten == 0 && b0->bytes_read == b0->bytes_written,
                       "buffer 0, which the storm does not write to, lost data");
                expect(b1->bytes_read == b1->bytes_written, "buffer 1 read %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
                       " bytes", b1->bytes_read, b1->bytes_written);
        }
        expect(stat_u64(st, "EventsOverwritten") > 0, "Stop's EventsOverwritten (refused by DISCARD) is 0");
        verdict();
}

/* A data source's target buffer that does not exist: InvalidConfig naming it. */
static void test_bad_target_buffer(void) {
        const char *cfg = "buffers { size_kb: 1024 }\n"
                          "data_sources { config { name: \"linux.ftrace\" target_buffer: 3 "
                          "ftrace_config { ftrace_events: \"sched/sched_switch\" } } }\n";
        ClientSpec spec = { .user = "tbuser", .op = OP_START, .config = cfg, .output_fd = -1 };
        g_autofree char *full = NULL, *err = client_run_full(&spec, NULL, &full);

        g_assert_cmpstr(err, ==, ERR_INVALID_CONFIG);
        expect(strstr(full, "linux.ftrace") && strstr(full, "target_buffer 3"),
               "the refusal does not name the data source and its buffer: %s", full);
        verdict();
}

/* A config without linux.ftrace records what it asks for, with no tracefs instance: a
 * whole trace (clocks, system info, the config, the service's events, TraceStats) and
 * no ftrace packets. */
static void test_no_ftrace(void) {
        const char *cfg = "buffers { size_kb: 1024 }\n"
                          "data_sources { config { name: \"linux.sys_stats\" "
                          "sys_stats_config { meminfo_period_ms: 100 } } }\n";
        g_autoptr(GHashTable) st = NULL;
        g_auto(Trace) t = { 0 };
        g_auto(Rec) r = { 0 };
        guint n_clock = 0, n_info = 0, n_config = 0, n_started = 0, n_disabled = 0, n_ftrace = 0, n_meminfo = 0;
        const Tracebus__TraceStats *ts;

        rec_start(&r, "tbuser", "no-ftrace.pftrace", cfg);
        expect(!g_file_test(r.instance, G_FILE_TEST_EXISTS), "a session without ftrace events made instance %s",
               r.instance);
        tb_sleep_scaled(300);
        st = rec_stop(&r);
        trace_load(r.out, false, &t);
        for (guint i = 0; i < t.pkts->len; i++) {
                const Tracebus__TracePacket *p = PKT(&t, i)->p;
                n_clock += p->clock_snapshot != NULL;
                n_info += p->system_info != NULL;
                n_config += p->trace_config != NULL;
                n_started += p->service_event && p->service_event->tracing_started;
                n_disabled += p->service_event && p->service_event->tracing_disabled;
                n_ftrace += p->ftrace_events != NULL || p->ftrace_stats != NULL || p->has_compressed_packets;
                n_meminfo += p->sys_stats && p->sys_stats->n_meminfo > 0;
        }
        /* 300 ms at 100 ms: the counters it asked for, read by linux.sys_stats. */
        expect(n_meminfo >= 2, "%u SysStats packets with meminfo in a sys_stats-only trace", n_meminfo);
        expect(n_clock >= 2 && n_info == 1 && n_config == 1 && n_started == 1 && n_disabled == 1,
               "the trace is not whole: %u clock snapshots, %u system_info, %u trace_config, %u started, %u disabled",
               n_clock, n_info, n_config, n_started, n_disabled);
        expect(n_ftrace == 0, "%u ftrace packets in a trace without linux.ftrace", n_ftrace);
        ts = last_trace_stats(&t);
        expect(ts && ts->n_buffer_stats == 1 && ts->buffer_stats[0]->buffer_size == 1024 * 1024,
               "no TraceStats for the one 1 MiB buffer");
        /* The first SysStats opens its sequence (metadata); the others are the buffer's. */
        expect(ts && ts->n_buffer_stats == 1 && ts->buffer_stats[0]->chunks_written >= n_meminfo - 1,
               "buffer 0 took %" G_GUINT64_FORMAT " chunks for %u SysStats packets",
               ts && ts->n_buffer_stats ? ts->buffer_stats[0]->chunks_written : 0, n_meminfo);
        expect(stat_u64(st, "Events") == 0, "Stop counts %" G_GUINT64_FORMAT " events", stat_u64(st, "Events"));
        verdict();
}

/* A small process-stats buffer beside a large ftrace stream that wraps its own small
 * ring many times: every ProcessStats poll is still in the trace, and TraceStats says the
 * ring overwrote and the process-stats buffer did not. A poll writes only what changed, as
 * traced_probes does, and a quiet poll nothing: the cache ttl of one period makes each poll
 * write every process, so that each is a packet to count. */
static void test_process_stats_kept(void) {
        const char *const events[] = { "sched/sched_switch", "sched/sched_waking", NULL };
        g_autofree char *ft = ftrace_config("buffers { size_kb: 256 fill_policy: RING_BUFFER }\n"
                                            "buffers { size_kb: 2048 fill_policy: RING_BUFFER name: \"ps\" }\n",
                                            events, "  buffer_size_kb: 8192\n");
        g_autofree char *cfg = g_strconcat(ft, "data_sources { config { name: \"linux.process_stats\" "
                                           "target_buffer_name: \"ps\" process_stats_config { "
                                           "proc_stats_poll_ms: 100 proc_stats_cache_ttl_ms: 100 } } }\n", NULL);
        g_autoptr(GHashTable) st = NULL;
        g_auto(Trace) t = { 0 };
        g_auto(Rec) r = { 0 };
        const Tracebus__TraceStats *ts;
        guint64 first = 0, last = 0;
        guint n_polls = 0;
        GPid storm;

        rec_start(&r, "tbuser", "ps-kept.pftrace", cfg);
        storm = storm_start(100000, false);
        storm_wait(storm);
        g_usleep(300 * 1000);
        st = rec_stop(&r);
        trace_load(r.out, false, &t);
        for (guint i = 0; i < t.pkts->len; i++) {
                const Tracebus__TracePacket *p = PKT(&t, i)->p;
                if (!p->process_stats)
                        continue;
                n_polls++;
                first = first ? MIN(first, p->timestamp) : p->timestamp;
                last = MAX(last, p->timestamp);
        }
        ts = last_trace_stats(&t);
        expect(ts && ts->n_buffer_stats == 2, "TraceStats has no 2 buffer_stats");
        if (ts && ts->n_buffer_stats == 2) {
                const Tracebus__TraceStats__BufferStats *b0 = ts->buffer_stats[0], *b1 = ts->buffer_stats[1];

                note("%u ProcessStats over %.2f s; ring: %" G_GUINT64_FORMAT " bytes overwritten; process stats: %"
                     G_GUINT64_FORMAT " chunks written, %" G_GUINT64_FORMAT " overwritten\n", n_polls,
                     (double) (last - first) / 1e9, b0->bytes_overwritten, b1->chunks_written, b1->chunks_overwritten);
                expect(b0->bytes_overwritten > b0->buffer_size, "the 256 KiB ring did not wrap (%" G_GUINT64_FORMAT
                       " bytes overwritten): the case needs a stream that does", b0->bytes_overwritten);
                expect(b1->chunks_overwritten == 0 && b1->chunks_discarded == 0,
                       "the process-stats buffer lost %" G_GUINT64_FORMAT " chunks beside the ftrace stream",
                       b1->chunks_overwritten + b1->chunks_discarded);
                /* The first poll opens its sequence (metadata): every other one is the buffer's. */
                expect(b1->chunks_written + 1 >= n_polls && n_polls > 0,
                       "%u ProcessStats in the trace, %" G_GUINT64_FORMAT " chunks in their buffer", n_polls,
                       b1->chunks_written);
        }
        /* About one poll per 100 ms from the first to the last: none evicted in between. */
        expect(n_polls >= 3 && (double) n_polls >= 0.8 * ((double) (last - first) / 1e8 + 1),
               "%u ProcessStats packets over %.2f s of polling every 100 ms: polls were evicted", n_polls,
               (double) (last - first) / 1e9);
        verdict();
}

RECORDER_WRAP(test_long_trace_size_limit)
RECORDER_WRAP(test_ring_buffer_wrap)
RECORDER_WRAP(test_discard)
RECORDER_WRAP(test_two_buffers)
RECORDER_WRAP(test_bad_target_buffer)
RECORDER_WRAP(test_no_ftrace)
RECORDER_WRAP(test_process_stats_kept)

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();
        RECORDER_CASE("05-long-trace-size-limit", test_long_trace_size_limit);
        RECORDER_CASE("05-ring-buffer-wrap", test_ring_buffer_wrap);
        RECORDER_CASE("05-discard", test_discard);
        RECORDER_CASE("05-two-buffers", test_two_buffers);
        RECORDER_CASE("05-bad-target-buffer", test_bad_target_buffer);
        RECORDER_CASE("05-no-ftrace", test_no_ftrace);
        RECORDER_CASE("05-process-stats-kept", test_process_stats_kept);
        return tb_test_run(TB_START_SERVICE);
}
