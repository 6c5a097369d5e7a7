/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite, the recorder (tests/recorder.h says what every piece checks), part 07:
 * the whole trace against protos/ (protoc --decode), service packets.
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

/* ---- protoc ---- */

/* Lines protoc --decode prints for fields our protos do not define ("123: 4", "36 {").
 * It walks the text with memchr(), not g_strsplit(): that calls strstr(), whose ASan
 * interceptor measures the whole rest of the string at each call: on the tens of MB
 * of a full decode, quadratic, and the case ran past its 240 s. */
static guint unknown_field_lines(const char *text, GString *examples) {
        g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        const char *end = text + strlen(text), *next;
        guint n = 0;

        for (const char *line = text; line < end; line = next) {
                const char *eol = memchr(line, '\n', (size_t) (end - line));
                const char *s = line;
                const char *d;
                next = eol ? eol + 1 : end;
                while (*s == ' ')
                        s++;
                d = s;
                while (g_ascii_isdigit(*d))
                        d++;
                if (d == s || !(g_str_has_prefix(d, ": ") || g_str_has_prefix(d, " {")))
                        continue;
                n++;
                {
                        g_autofree char *num = g_strndup(s, (gsize) (d - s));
                        if (!g_hash_table_contains(seen, num) && g_hash_table_size(seen) < 20) {
                                g_string_append_printf(examples, " %s", num);
                                g_hash_table_add(seen, g_steal_pointer(&num));
                        }
                }
        }
        return n;
}

static void check_protoc_decodes(const char *path) {
        g_autoptr(GError) error = NULL;
        g_autofree char *text = NULL;
        g_autoptr(GString) ex = g_string_new(NULL);
        guint n;

        if (!tb_trace_protoc_decode(tb_bus()->source_dir, path, &text, &error)) {
                shortfall("protoc --decode=tracebus.Trace fails on %s: %s", path, error->message);
                return;
        }
        n = unknown_field_lines(text, ex);
        note("protoc --decode: %zu bytes of text, %u unknown-field lines\n", strlen(text), n);
        expect(n == 0, "protoc --decode of %s prints %u unknown fields (field numbers:%s): protos/trace.proto does not "
               "describe everything the service writes", path, n, ex->str);
}

/* ---- 7. service packets, and the whole trace against protos/ ---- */

static const guint8 sync_marker_packet[] = {
        0x18, 0x00, 0x50, 0x01, 0xa2, 0x02, 0x10, 0x82, 0x47, 0x7a, 0x76, 0xb2, 0x8d, 0x42,
        0xba, 0x81, 0xdc, 0x33, 0x32, 0x6d, 0x57, 0xa0, 0x79,
};

static gint u64_cmp(gconstpointer a, gconstpointer b) {
        guint64 x = *(const guint64 *) a, y = *(const guint64 *) b;
        return x < y ? -1 : x > y;
}

/* The "done" trace: sched/ *, power/cpu_idle, irq/ * and a few generic
 * events decode completely against protos/ and meet what trace_processor needs. */
static void test_full_decode(void) {
        const char *const events[] = { "sched/*", "power/cpu_idle", "irq/*", "signal/signal_generate",
                                       "timer/hrtimer_start", "sock/inet_sock_set_state", "ftrace/print", NULL };
        g_autofree char *cfg = ftrace_config("buffers { size_kb: 65536 }\n", events, "  buffer_size_kb: 8192\n");
        g_autoptr(GHashTable) st = NULL;
        g_auto(Trace) t = { 0 };
        g_auto(Rec) r = { 0 };
        g_autoptr(GError) error = NULL;
        TbBusy busy;
        pid_t late;

        rec_start(&r, "root", "full-decode.pftrace", cfg);
        g_assert_true(tb_busy_start("tbbusy-decode", &busy, &error));
        late = idle_child("tbdecode-late");
        g_usleep(300 * 1000);
        (void) kill(late, SIGUSR1);
        tb_busy_stop(&busy);
        g_usleep(1500 * 1000);
        st = rec_stop(&r);
        kill_reap(late);
        trace_load(r.out, false, &t);
        /* A 64 MiB ring; should it have wrapped, the first bundles follow lost ones. */
        check_trace(&t, &(CheckOpts) { .closed = true, .describe_all = true,
                                       .wrapped = stat_u64(st, "EventsOverwritten") > 0 });
        check_tracks(&t, NULL);
        check_stop_stats(st, &t, true);
        check_protoc_decodes(r.out);
        verdict();
}

/* Service packets over more than one 10 s interval, in a long trace written
 * as it goes: periodic clock snapshots, synchronization markers through the
 * file, trace_uuid, tracing_started/disabled, TraceStats at the end. */
static void test_service_packets(void) {
        const char *const events[] = { "sched/sched_switch", "sched/sched_waking", NULL };
        g_autofree char *cfg = ftrace_config("write_into_file: true\nfile_write_period_ms: 2000\n"
                                             "buffers { size_kb: 16384 }\n", events, NULL);
        g_autoptr(GHashTable) st = NULL;
        g_auto(Trace) t = { 0 };
        g_auto(Rec) r = { 0 };
        g_autoptr(GArray) snaps = g_array_new(FALSE, FALSE, sizeof(guint64));
        guint n_sync = 0, n_bad_sync = 0, first_sync = G_MAXUINT, first_bundle = G_MAXUINT, last_stats = 0, last_pkt;
        guint n_sparse = 0, sync_so_far = 0;
        guint64 started, disabled, max_gap = 0;

        rec_start(&r, "tbuser", "service-packets.pftrace", cfg);
        /* Past the 10 s interval. */
        g_usleep(11000 * 1000);
        st = rec_stop(&r);
        trace_load(r.out, false, &t);
        check_trace(&t, &(CheckOpts) { .closed = true });
        check_stop_stats(st, &t, true);

        started = tracing_started_ts(&t);
        disabled = tracing_disabled_ts(&t);
        last_pkt = t.pkts->len ? t.pkts->len - 1 : 0;
        for (guint i = 0; i < t.pkts->len; i++) {
                const Pkt *k = PKT(&t, i);
                if (k->p->ftrace_events) {
                        const Bundle *bd = NULL;
                        for (guint j = 0; j < t.bundles->len && !bd; j++)
                                if (BUNDLE(&t, j)->pkt == i)
                                        bd = BUNDLE(&t, j);
                        if (first_bundle == G_MAXUINT)
                                first_bundle = i;
                        /* One marker at the start and one every 10 s (plus a write period
                         * and a second of slack) before any data of that time. */
                        if (bd && bd->n_ev && bd->min_ts > started &&
                            sync_so_far < 1 + (bd->min_ts - started) / 13000000000ull)
                                n_sparse++;
                }
                if (k->p->has_synchronization_marker) {
                        n_sync++;
                        sync_so_far++;
                        first_sync = MIN(first_sync, i);
                        if (k->raw_len != sizeof sync_marker_packet || memcmp(k->raw, sync_marker_packet, k->raw_len) != 0)
                                n_bad_sync++;
                }
                if (k->p->clock_snapshot)
                        g_array_append_val(snaps, k->p->timestamp);
                if (k->p->trace_stats)
                        last_stats = i;
        }
        g_array_sort(snaps, u64_cmp);
        {
                guint64 prev = started;
                for (guint i = 0; i < snaps->len; i++) {
                        guint64 s = g_array_index(snaps, guint64, i);
                        if (s > prev)
                                max_gap = MAX(max_gap, s - prev);
                        prev = MAX(prev, s);
                }
                if (disabled > prev)
                        max_gap = MAX(max_gap, disabled - prev);
        }
        note("%u clock snapshots (largest gap %.1f s), %u sync markers (first at packet %u, first bundle %u), trace "
             "%.1f s\n", snaps->len, (double) max_gap / 1e9, n_sync, first_sync, first_bundle,
             (double) (disabled - started) / 1e9);
        expect(snaps->len >= 2, "%u clock snapshots in an 11 s trace", snaps->len);
        expect(max_gap <= 10500000000ull, "%.1f s without a clock snapshot", (double) max_gap / 1e9);
        expect(n_sync >= 2, "%u synchronization markers in an 11 s trace (one at the start, one every 10 s)", n_sync);
        expect(n_bad_sync == 0, "%u synchronization marker packets are not trusted_uid, sequence 1, then the 16 "
               "marker bytes", n_bad_sync);
        expect(first_sync < first_bundle, "no synchronization marker before the first ftrace data (packet %u, data at "
               "%u): Perfetto writes one at the first read", first_sync, first_bundle);
        expect(n_sparse == 0, "%u bundles come later in the file than one synchronization marker per 10 s allows",
               n_sparse);
        {
                const Tracebus__TraceStats *ts = last_trace_stats(&t);
                guint64 tts = PKT(&t, last_stats)->p->timestamp, last_ev = 0;
                for (guint i = 0; i < t.evs->len; i++)
                        last_ev = MAX(last_ev, EV(&t, i)->ts);
                expect(ts && tts >= last_ev, "the last TraceStats (packet %u of %u, at %" G_GUINT64_FORMAT
                       ") is older than the last event (%" G_GUINT64_FORMAT "): not taken at the end", last_stats,
                       last_pkt, tts, last_ev);
        }
        verdict();
}

RECORDER_WRAP(test_full_decode)
RECORDER_WRAP(test_service_packets)

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();
        RECORDER_CASE("07-full-decode", test_full_decode);
        RECORDER_CASE("07-service-packets", test_service_packets);
        return tb_test_run(TB_START_SERVICE);
}
