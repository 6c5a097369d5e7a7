/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The benchmark's helper program (bench/run drives it; it is not a test).
 *
 *   tb-bench storm --rate EVENTS_PER_S|max --seconds S   scheduling storm: two threads, one per
 *                                                        CPU, ping-pong a byte through pipes
 *   tb-bench marker --count N --interval-us U            trace_marker lines "tbbench-marker-I"
 *   tb-bench floor --seconds S [--buffer-kb K] [--period-ms P] [--mmap]
 *                                                        the floor: its own tracefs instance with
 *                                                        sched_switch + sched_waking, pages read
 *                                                        from per_cpu trace_pipe_raw and dropped
 *                                                        (--mmap: the ring buffer mapped instead,
 *                                                        kernel 6.10+, each page's cache lines
 *                                                        touched once)
 *   tb-bench record --config FILE --out FILE             Start with that text config and an
 *                                                        Output fd; Stop at EOF on stdin
 *   tb-bench analyze FILE                                bytes per event by kind, first event
 *                                                        (compressed_packets inflated in their
 *                                                        place by libtracebus's trace reader)
 *   tb-bench control --runs N --full-runs M --dir DIR    control-plane latencies
 *   tb-bench forkstorm --count N [--pad BYTES]           N short-lived processes (tb-bench-forkstorm.c)
 *   tb-bench hostile [--victim U] [--attacker U] [--probes N]
 *                                                        IsDetached latency under a refused
 *                                                        user's hostile Starts / quiet
 *                                                        (tb-bench-hostile.c)
 *   tb-bench sysread --seconds S --period-ms P           the pollers' floor: the files of every
 *                                                        linux.sys_stats group read each period,
 *                                                        nothing parsed (tb-bench-sysread.c)
 *
 * Every subcommand prints one JSON object on stdout. floor lives in tb-bench-floor.c, record
 * and control in tb-bench-control.c; this file has storm, marker, analyze and the helpers
 * they share (tb-bench.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tb-bench.h"
#include "trace-reader.h"
#include "trace.pb-c.h"

const char *arg(int argc, char **argv, const char *name, const char *def) {
        for (int i = 2; i + 1 < argc; i++)
                if (strcmp(argv[i], name) == 0)
                        return argv[i + 1];
        return def;
}

int write_file(const char *path, const char *value) {
        int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
        ssize_t n;

        if (fd < 0)
                return -errno;
        n = write(fd, value, strlen(value));
        close(fd);
        return n < 0 ? -errno : 0;
}

void die(const char *what, int r) {
        fprintf(stderr, "tb-bench: %s: %s\n", what, strerror(r < 0 ? -r : r));
        exit(1);
}

/* ---- storm ----------------------------------------------------------------------------- */

typedef struct Storm {
        int to_b[2], to_a[2];
        uint64_t rounds_per_s;     /* 0: as fast as possible */
        uint64_t end_ns;
        uint64_t rounds;
} Storm;

static void pin(int cpu) {
        cpu_set_t set;
        long n = sysconf(_SC_NPROCESSORS_ONLN);

        CPU_ZERO(&set);
        CPU_SET(cpu % (n > 0 ? n : 1), &set);
        (void) sched_setaffinity(0, sizeof(set), &set);
}

static void *storm_b(void *userdata) {
        Storm *s = userdata;
        char c;

        pin(1);
        while (read(s->to_b[0], &c, 1) == 1 && c == 'x')
                if (write(s->to_a[1], &c, 1) != 1)
                        break;
        return NULL;
}

static int cmd_storm(int argc, char **argv) {
        const char *rate = arg(argc, argv, "--rate", "max");
        double seconds = atof(arg(argc, argv, "--seconds", "5"));
        Storm s = {};
        pthread_t b;
        uint64_t start, next_check;
        char c = 'x';

        /* One round trip A -> B -> A is about 6 events: 2 sched_waking, 4 sched_switch
         * (each side switches to idle and back). */
        if (strcmp(rate, "max") != 0)
                s.rounds_per_s = (uint64_t) (atof(rate) / 6.0);
        if (pipe(s.to_b) < 0 || pipe(s.to_a) < 0)
                die("pipe", errno);
        pin(0);
        pthread_create(&b, NULL, storm_b, &s);
        start = now_ns(CLOCK_MONOTONIC);
        s.end_ns = start + (uint64_t) (seconds * 1e9);
        next_check = start;
        for (;;) {
                if (write(s.to_b[1], &c, 1) != 1 || read(s.to_a[0], &c, 1) != 1)
                        break;
                s.rounds++;
                if ((s.rounds & 63) != 0 && s.rounds_per_s == 0)
                        continue;
                uint64_t now = now_ns(CLOCK_MONOTONIC);
                if (now >= s.end_ns)
                        break;
                if (s.rounds_per_s > 0 && now >= next_check) {
                        /* Where the schedule says we should be; sleep when ahead. */
                        uint64_t due = start + s.rounds * 1000000000ull / s.rounds_per_s;
                        if (due > now) {
                                struct timespec ts = { .tv_sec = due / 1000000000ull, .tv_nsec = due % 1000000000ull };
                                clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
                        }
                        next_check = now + 1000000;
                }
        }
        c = 'q';
        (void) !write(s.to_b[1], &c, 1);
        pthread_join(b, NULL);
        printf("{\"rounds\": %" PRIu64 ", \"seconds\": %.3f}\n", s.rounds,
               (double) (now_ns(CLOCK_MONOTONIC) - start) / 1e9);
        return 0;
}

/* ---- marker ---------------------------------------------------------------------------- */

static int cmd_marker(int argc, char **argv) {
        int count = atoi(arg(argc, argv, "--count", "100"));
        int interval = atoi(arg(argc, argv, "--interval-us", "10000"));
        int size = atoi(arg(argc, argv, "--size", "0"));
        const char *prefix = arg(argc, argv, "--prefix", "tbbench-marker-");
        int fd = open(TRACEFS "/trace_marker", O_WRONLY | O_CLOEXEC);
        char *buf = malloc((size_t) size + 64);
        int ok = 0;

        if (fd < 0)
                die("open trace_marker", errno);
        for (int i = 0; i < count; i++) {
                int n = snprintf(buf, 64, "%s%d", prefix, i);
                if (size > n) {
                        memset(buf + n, 'm', (size_t) (size - n));
                        n = size;
                }
                if (write(fd, buf, (size_t) n) == n)
                        ok++;
                if (interval > 0)
                        usleep((useconds_t) interval);
        }
        close(fd);
        printf("{\"markers\": %d}\n", ok);
        return 0;
}

/* ---- analyze --------------------------------------------------------------------------- */

/* The bytes of the compact_sched columns as the file has them: each field whole, its key
 * and length included. */
static void analyze_compact_bytes(const uint8_t *bundle, size_t len, Analysis *a) {
        const uint8_t *p, *end;
        TraceField c, f;

        if (trace_field_find(bundle, len, 4, TRACE_WIRE_LEN, &c) <= 0)
                return;
        p = c.data;
        end = c.data + c.len;
        while (trace_field_next(&p, end, &f) > 0) {
                if (f.number <= 4 || f.number == 6)         /* switch_* columns */
                        a->switch_bytes += f.framed_len;
                else if (f.number >= 7 && f.number <= 12)   /* waking_* columns */
                        a->waking_bytes += f.framed_len;
        }
}

static void analyze_events(const Tracebus__FtraceEventBundle *b, const uint8_t *bundle, size_t len, Analysis *a) {
        const uint8_t *p = bundle, *end = bundle + len;
        size_t i = 0;
        TraceField f;

        /* The events in file order, each with the bytes it takes in its bundle. */
        while (trace_field_next(&p, end, &f) > 0) {
                const Tracebus__FtraceEvent *e;

                if (f.number != 2 || f.wire_type != TRACE_WIRE_LEN || i >= b->n_event)
                        continue;
                e = b->event[i++];
                if (!a->first_event_ts || (e->timestamp && e->timestamp < a->first_event_ts))
                        a->first_event_ts = e->timestamp;
                if (e->sched_switch) {
                        a->n_switch++;
                        a->switch_bytes += f.framed_len;
                } else if (e->sched_waking) {
                        a->n_waking++;
                        a->waking_bytes += f.framed_len;
                } else {
                        a->n_other++;
                        if (e->print && e->print->buf && strstr(e->print->buf, "tbbench-marker-"))
                                a->markers++;
                }
        }
}

static void analyze_bundle(const Tracebus__FtraceEventBundle *b, const TraceRawPacket *k, Analysis *a) {
        const Tracebus__FtraceEventBundle__CompactSched *c = b->compact_sched;
        TraceField raw;

        a->bundles++;
        a->lost_bundles += b->lost_events;
        if (trace_field_find(k->data, k->len, 1, TRACE_WIRE_LEN, &raw) > 0) {
                analyze_events(b, raw.data, raw.len, a);
                analyze_compact_bytes(raw.data, raw.len, a);
        }
        if (!c)
                return;
        if (c->n_switch_timestamp > 0 && (!a->first_event_ts || c->switch_timestamp[0] < a->first_event_ts))
                a->first_event_ts = c->switch_timestamp[0];
        if (c->n_waking_timestamp > 0 && (!a->first_event_ts || c->waking_timestamp[0] < a->first_event_ts))
                a->first_event_ts = c->waking_timestamp[0];
        a->n_switch += c->n_switch_timestamp;
        a->n_waking += c->n_waking_timestamp;
}

static void analyze_packet(const TraceRawPacket *k, Analysis *a) {
        Tracebus__TracePacket *pkt = NULL;

        a->packets++;
        if (trace_packet_unpack(k, &pkt) < 0)
                return;
        if (pkt->ftrace_events) {
                analyze_bundle(pkt->ftrace_events, k, a);
                a->ftrace_packet_bytes += k->framed_len;
                a->bundle_bytes += k->len;
        }
        if (pkt->service_event && pkt->service_event->has_tracing_started && !a->first_started_ts)
                a->first_started_ts = pkt->timestamp;
        tracebus__trace_packet__free_unpacked(pkt, NULL);
}

/* With libtracebus's trace reader: compressed_packets are inflated in their place, as
 * trace_processor reads them; a torn tail ends the analysis. */
int analyze_file(const char *file, Analysis *a) {
        uint8_t *data = NULL;
        size_t len = 0;
        TraceReader reader;
        TraceRawPacket k;
        int r;

        memset(a, 0, sizeof(*a));
        r = trace_file_load(file, &data, &len);
        if (r < 0)
                return r;
        a->file_bytes = len;
        trace_reader_init(&reader, data, len, 0);
        while ((r = trace_reader_next(&reader, &k)) != 0 && r != -EBADMSG) {
                if (r == -ENOMEM)
                        break;
                if (r > 0)
                        analyze_packet(&k, a);
        }
        trace_reader_done(&reader);
        free(data);
        return r == -ENOMEM ? r : 0;
}

static void print_analysis(const Analysis *a) {
        printf("{\"file_bytes\": %" PRIu64 ", \"packets\": %" PRIu64 ", \"bundles\": %" PRIu64
               ", \"lost_bundles\": %" PRIu64 ", \"sched_switch\": %" PRIu64 ", \"sched_waking\": %" PRIu64
               ", \"other_events\": %" PRIu64 ", \"markers\": %" PRIu64 ", \"switch_bytes\": %" PRIu64
               ", \"waking_bytes\": %" PRIu64 ", \"ftrace_packet_bytes\": %" PRIu64 "}\n",
               a->file_bytes, a->packets, a->bundles, a->lost_bundles, a->n_switch, a->n_waking,
               a->n_other, a->markers, a->switch_bytes, a->waking_bytes, a->ftrace_packet_bytes);
}

static int cmd_analyze(int argc, char **argv) {
        Analysis a;
        int r;

        if (argc < 3)
                return 2;
        r = analyze_file(argv[2], &a);
        if (r < 0)
                die("analyze", r);
        print_analysis(&a);
        return 0;
}

int main(int argc, char **argv) {
        if (argc < 2) {
                fprintf(stderr, "usage: tb-bench storm|marker|floor|record|analyze|control|forkstorm|hostile|sysread ...\n");
                return 2;
        }
        if (strcmp(argv[1], "storm") == 0)
                return cmd_storm(argc, argv);
        if (strcmp(argv[1], "marker") == 0)
                return cmd_marker(argc, argv);
        if (strcmp(argv[1], "floor") == 0)
                return cmd_floor(argc, argv);
        if (strcmp(argv[1], "analyze") == 0)
                return cmd_analyze(argc, argv);
        if (strcmp(argv[1], "record") == 0)
                return cmd_record(argc, argv);
        if (strcmp(argv[1], "control") == 0)
                return cmd_control(argc, argv);
        if (strcmp(argv[1], "forkstorm") == 0)
                return cmd_forkstorm(argc, argv);
        if (strcmp(argv[1], "hostile") == 0)
                return cmd_hostile(argc, argv);
        if (strcmp(argv[1], "sysread") == 0)
                return cmd_sysread(argc, argv);
        fprintf(stderr, "tb-bench: unknown command %s\n", argv[1]);
        return 2;
}
