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
 *
 * Every subcommand prints one JSON object on stdout.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <systemd/sd-bus.h>
#include <time.h>
#include <unistd.h>

#include "trace-reader.h"
#include "trace.pb-c.h"
#include "tracebus-bus.h"

#define TRACEFS "/sys/kernel/tracing"

static uint64_t now_ns(clockid_t clock) {
        struct timespec ts;

        clock_gettime(clock, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

static const char *arg(int argc, char **argv, const char *name, const char *def) {
        for (int i = 2; i + 1 < argc; i++)
                if (strcmp(argv[i], name) == 0)
                        return argv[i + 1];
        return def;
}

static int write_file(const char *path, const char *value) {
        int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
        ssize_t n;

        if (fd < 0)
                return -errno;
        n = write(fd, value, strlen(value));
        close(fd);
        return n < 0 ? -errno : 0;
}

static void die(const char *what, int r) {
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

/* ---- floor ----------------------------------------------------------------------------- */

typedef struct CpuStats {
        uint64_t entries, overrun, commit_overrun, dropped, read_events;
} CpuStats;

static uint64_t stat_field(const char *text, const char *name) {
        const char *p = strstr(text, name);

        return p ? strtoull(p + strlen(name), NULL, 10) : 0;
}

static void read_cpu_stats(const char *dir, int cpu, CpuStats *s) {
        char path[512], text[2048];
        int fd;
        ssize_t n;

        snprintf(path, sizeof(path), "%s/per_cpu/cpu%d/stats", dir, cpu);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        n = fd >= 0 ? read(fd, text, sizeof(text) - 1) : -1;
        if (fd >= 0)
                close(fd);
        text[n > 0 ? n : 0] = 0;
        s->entries = stat_field(text, "entries: ");
        s->overrun = stat_field(text, "\noverrun: ");
        s->commit_overrun = stat_field(text, "commit overrun: ");
        s->dropped = stat_field(text, "dropped events: ");
        s->read_events = stat_field(text, "read events: ");
}

static volatile sig_atomic_t stop_requested;

/* The mapped ring buffer's meta page (include/uapi/linux/trace_mmap.h, Linux 6.10;
 * Debian 12's headers are older). */
typedef struct TraceBufferMeta {
        uint32_t meta_page_size, meta_struct_len, subbuf_size, nr_subbufs;
        struct {
                uint64_t lost_events;
                uint32_t id, read;
        } reader;
        uint64_t flags, entries, overrun, read, reserved1, reserved2;
} TraceBufferMeta;

#define TRACE_MMAP_IOCTL_GET_READER _IO('R', 0x20)

typedef struct MappedCpu {
        TraceBufferMeta *meta;        /* the start of the mapping */
        size_t size;
        const uint8_t *subbufs;
        uint32_t id, offset;          /* the reader sub-buffer, and how far it was taken */
} MappedCpu;

static void map_cpu(int fd, long page_size, MappedCpu *m) {
        TraceBufferMeta *first = mmap(NULL, (size_t) page_size, PROT_READ, MAP_SHARED, fd, 0);
        size_t meta_size, total;
        uint8_t *all;

        if (first == MAP_FAILED)
                die("mmap trace_pipe_raw (Linux 6.10 or later)", errno);
        meta_size = first->meta_page_size;
        total = meta_size + (size_t) first->nr_subbufs * first->subbuf_size;
        munmap(first, (size_t) page_size);
        all = mmap(NULL, total, PROT_READ, MAP_SHARED, fd, 0);
        if (all == MAP_FAILED)
                die("mmap trace_pipe_raw", errno);
        *m = (MappedCpu) { .meta = (TraceBufferMeta *) all, .size = total, .subbufs = all + meta_size,
                           .id = UINT32_MAX };
}

/* What a reader of the mapped buffer cannot avoid: GET_READER until the reader
 * sub-buffer holds nothing new, and one touch of each cache line of what it holds.
 * The header is a u64 timestamp and the commit word (8 bytes here). */
static void drain_mapped(int fd, MappedCpu *m, uint64_t *pages, uint64_t *bytes, uint64_t *sum) {
        for (;;) {
                const uint8_t *sub;
                uint64_t commit;

                if (ioctl(fd, TRACE_MMAP_IOCTL_GET_READER) < 0)
                        die("TRACE_MMAP_IOCTL_GET_READER", errno);
                if (m->meta->reader.id != m->id) {
                        m->id = m->meta->reader.id;
                        m->offset = 0;
                }
                sub = m->subbufs + (size_t) m->id * m->meta->subbuf_size;
                commit = __atomic_load_n((const uint64_t *) (sub + 8), __ATOMIC_ACQUIRE) & ((1u << 27) - 1);
                if (commit <= m->offset)
                        return;
                for (uint64_t i = m->offset; i < commit; i += 64)
                        *sum += sub[16 + i];
                (*pages)++;
                *bytes += commit - m->offset;
                m->offset = (uint32_t) commit;
        }
}

static void on_stop(int sig) {
        stop_requested = 1;
}

static int cmd_floor(int argc, char **argv) {
        int buffer_kb = atoi(arg(argc, argv, "--buffer-kb", "2048"));
        int period_ms = atoi(arg(argc, argv, "--period-ms", "100"));
        double seconds = atof(arg(argc, argv, "--seconds", "0"));
        long n_cpus = sysconf(_SC_NPROCESSORS_CONF), page_size = sysconf(_SC_PAGESIZE);
        char dir[256], path[512], value[32];
        int fds[256];
        uint8_t *page = malloc((size_t) page_size);
        uint64_t cpu0, cpu1, pages = 0, bytes = 0, read_events = 0, lost = 0, end;
        const char *dump = arg(argc, argv, "--dump", NULL);
        bool mapped = false;
        MappedCpu maps[256];
        uint64_t sum = 0;
        int dump_fd = -1;
        CpuStats st;

        for (int i = 2; i < argc; i++)
                mapped = mapped || strcmp(argv[i], "--mmap") == 0;
        /* --dump FILE keeps every page (padded to the page size), for bench/parse-bench. */
        if (dump && (dump_fd = open(dump, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0)
                die(dump, errno);

        snprintf(dir, sizeof(dir), TRACEFS "/instances/tbbench-floor-%d", (int) getpid());
        if (mkdir(dir, 0700) < 0)
                die("mkdir instance", errno);
        snprintf(path, sizeof(path), "%s/buffer_size_kb", dir);
        snprintf(value, sizeof(value), "%d", buffer_kb);
        write_file(path, value);
        snprintf(path, sizeof(path), "%s/trace_clock", dir);
        write_file(path, "boot");
        snprintf(path, sizeof(path), "%s/events/sched/sched_switch/enable", dir);
        write_file(path, "1");
        snprintf(path, sizeof(path), "%s/events/sched/sched_waking/enable", dir);
        write_file(path, "1");
        for (long cpu = 0; cpu < n_cpus && cpu < 256; cpu++) {
                snprintf(path, sizeof(path), "%s/per_cpu/cpu%ld/trace_pipe_raw", dir, cpu);
                fds[cpu] = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
                if (fds[cpu] < 0)
                        die("open trace_pipe_raw", errno);
                if (mapped)
                        map_cpu(fds[cpu], page_size, &maps[cpu]);
        }
        signal(SIGINT, on_stop);
        signal(SIGTERM, on_stop);
        snprintf(path, sizeof(path), "%s/tracing_on", dir);
        write_file(path, "1");
        printf("ready\n");
        fflush(stdout);

        cpu0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
        end = seconds > 0 ? now_ns(CLOCK_MONOTONIC) + (uint64_t) (seconds * 1e9) : UINT64_MAX;
        for (bool last = false;;) {
                if (stop_requested || now_ns(CLOCK_MONOTONIC) >= end) {
                        write_file(path, "0");
                        last = true;
                }
                for (long cpu = 0; cpu < n_cpus && mapped; cpu++)
                        drain_mapped(fds[cpu], &maps[cpu], &pages, &bytes, &sum);
                for (long cpu = 0; cpu < n_cpus && !mapped; cpu++)
                        for (;;) {
                                ssize_t n = read(fds[cpu], page, (size_t) page_size);
                                if (n <= 0)
                                        break;
                                pages++;
                                bytes += (uint64_t) n;
                                if (dump_fd >= 0) {
                                        memset(page + n, 0, (size_t) (page_size - n));
                                        (void) !write(dump_fd, page, (size_t) page_size);
                                }
                        }
                if (last)
                        break;
                poll(NULL, 0, period_ms);
        }
        cpu1 = now_ns(CLOCK_THREAD_CPUTIME_ID);

        for (long cpu = 0; cpu < n_cpus; cpu++) {
                read_cpu_stats(dir, (int) cpu, &st);
                read_events += st.read_events;
                lost += st.overrun + st.dropped;
                /* A mapped buffer keeps the instance busy: rmdir would fail. */
                if (mapped)
                        munmap(maps[cpu].meta, maps[cpu].size);
                close(fds[cpu]);
        }
        snprintf(path, sizeof(path), "%s/events/enable", dir);
        write_file(path, "0");
        if (rmdir(dir) < 0)
                die("rmdir instance", errno);
        printf("{\"cpu_ns\": %" PRIu64 ", \"pages\": %" PRIu64 ", \"bytes\": %" PRIu64
               ", \"events\": %" PRIu64 ", \"lost\": %" PRIu64 ", \"mmap\": %s, \"touched\": %" PRIu64 "}\n",
               cpu1 - cpu0, pages, bytes, read_events, lost, mapped ? "true" : "false", sum & 1);
        return 0;
}

/* ---- analyze --------------------------------------------------------------------------- */

typedef struct Analysis {
        uint64_t file_bytes, packets, bundles, lost_bundles;
        uint64_t n_switch, n_waking, n_other, markers;
        uint64_t switch_bytes, waking_bytes, bundle_bytes, ftrace_packet_bytes;
        uint64_t first_event_ts, first_started_ts;
} Analysis;

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
static int analyze_file(const char *file, Analysis *a) {
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

/* ---- the bus --------------------------------------------------------------------------- */

#define TB_NAME TB_BUS_NAME
#define TB_PATH TB_MANAGER_PATH
#define TB_MANAGER TB_MANAGER_INTERFACE

typedef struct StopStats {
        uint64_t events, bytes, lost;
} StopStats;

static char *read_text(const char *path) {
        FILE *f = fopen(path, "re");
        char *text = NULL;
        size_t n = 0;

        if (!f)
                die(path, errno);
        if (getdelim(&text, &n, 0, f) < 0)
                die(path, EIO);
        fclose(f);
        return text;
}

static int bus_start(sd_bus *bus, const char *config, int out_fd, char **ret_path) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        const char *path;
        int r;

        r = sd_bus_call_method(bus, TB_NAME, TB_PATH, TB_MANAGER, "Start", &error, &reply,
                               "sa{sv}", config, 1, "Output", "h", out_fd);
        if (r < 0) {
                fprintf(stderr, "tb-bench: Start: %s\n", error.message ?: strerror(-r));
                sd_bus_error_free(&error);
                return r;
        }
        r = sd_bus_message_read(reply, "o", &path);
        if (r >= 0)
                *ret_path = strdup(path);
        sd_bus_message_unref(reply);
        return r;
}

static int bus_stop(sd_bus *bus, const char *session, StopStats *ret) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        int r;

        memset(ret, 0, sizeof(*ret));
        r = sd_bus_call_method(bus, TB_NAME, TB_PATH, TB_MANAGER, "Stop", &error, &reply, "o", session);
        if (r < 0) {
                fprintf(stderr, "tb-bench: Stop: %s\n", error.message ?: strerror(-r));
                sd_bus_error_free(&error);
                return r;
        }
        r = sd_bus_message_enter_container(reply, 'a', "{sv}");
        while (r >= 0 && (r = sd_bus_message_enter_container(reply, 'e', "sv")) > 0) {
                const char *key;
                uint64_t *dst = NULL;

                sd_bus_message_read(reply, "s", &key);
                if (strcmp(key, "Events") == 0)
                        dst = &ret->events;
                else if (strcmp(key, "Bytes") == 0)
                        dst = &ret->bytes;
                else if (strcmp(key, "EventsLost") == 0)
                        dst = &ret->lost;
                if (dst)
                        r = sd_bus_message_read(reply, "v", "t", dst);
                else
                        r = sd_bus_message_skip(reply, "v");
                if (r >= 0)
                        r = sd_bus_message_exit_container(reply);
        }
        sd_bus_message_unref(reply);
        return r < 0 ? r : 0;
}

static sd_bus *bus_open(void) {
        sd_bus *bus = NULL;
        int r = sd_bus_open_system(&bus);

        if (r < 0)
                die("connect to the system bus", r);
        /* Many calls in a row, each timed: no default 25 s surprise either. */
        sd_bus_set_method_call_timeout(bus, 60ull * 1000000ull);
        return bus;
}

static int cmd_record(int argc, char **argv) {
        const char *config_path = arg(argc, argv, "--config", NULL), *out = arg(argc, argv, "--out", NULL);
        sd_bus *bus = bus_open();
        char *config, *session = NULL, buf[64];
        StopStats st;
        uint64_t t0, t1;
        int fd;

        if (!config_path || !out)
                return 2;
        config = read_text(config_path);
        fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0)
                die(out, errno);
        if (bus_start(bus, config, fd, &session) < 0)
                return 1;
        close(fd);
        printf("started\n");
        fflush(stdout);
        while (read(STDIN_FILENO, buf, sizeof(buf)) > 0)
                ;
        t0 = now_ns(CLOCK_MONOTONIC);
        if (bus_stop(bus, session, &st) < 0)
                return 1;
        t1 = now_ns(CLOCK_MONOTONIC);
        printf("{\"events\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"lost\": %" PRIu64 ", \"stop_ns\": %" PRIu64 "}\n",
               st.events, st.bytes, st.lost, t1 - t0);
        return 0;
}

/* polkit's own answer time for the check Start makes (subject: our bus name). */
static int polkit_check(sd_bus *bus, uint64_t *ret_ns) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        const char *unique = NULL;
        uint64_t t0;
        int r;

        sd_bus_get_unique_name(bus, &unique);
        t0 = now_ns(CLOCK_MONOTONIC);
        r = sd_bus_call_method(bus, "org.freedesktop.PolicyKit1", "/org/freedesktop/PolicyKit1/Authority",
                               "org.freedesktop.PolicyKit1.Authority", "CheckAuthorization", &error, &reply,
                               "(sa{sv})sa{ss}us", "system-bus-name", 1, "name", "s", unique,
                               "org.tracebus.record", 0, 0, "");
        *ret_ns = now_ns(CLOCK_MONOTONIC) - t0;
        sd_bus_error_free(&error);
        sd_bus_message_unref(reply);
        return r;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

        return x < y ? -1 : x > y;
}

static void print_dist(const char *name, uint64_t *v, size_t n, bool comma) {
        double med = 0, p99 = 0;

        if (n > 0) {
                qsort(v, n, sizeof(*v), cmp_u64);
                med = (double) v[n / 2] / 1e6;
                p99 = (double) v[(n * 99 + 99) / 100 - 1 < n ? (n * 99 + 99) / 100 - 1 : n - 1] / 1e6;
        }
        printf("\"%s\": {\"n\": %zu, \"median_ms\": %.3f, \"p99_ms\": %.3f}%s", name, n, med, p99, comma ? ", " : "");
}

static int cmd_control(int argc, char **argv) {
        int runs = atoi(arg(argc, argv, "--runs", "200"));
        int full_runs = atoi(arg(argc, argv, "--full-runs", "20"));
        const char *dir = arg(argc, argv, "--dir", "/tmp");
        const char *empty_cfg = read_text(arg(argc, argv, "--empty-config", "bench/configs/ring-64mb.pbtxt"));
        const char *full_cfg = read_text(arg(argc, argv, "--full-config", "bench/configs/ring-64mb-print.pbtxt"));
        sd_bus *bus = bus_open();
        uint64_t *start_reply = calloc((size_t) runs, 8), *first_event = calloc((size_t) runs, 8);
        uint64_t *first_event_nopk = calloc((size_t) runs, 8), *polkit = calloc((size_t) runs, 8);
        uint64_t *stop_empty = calloc((size_t) runs, 8), *stop_full = calloc((size_t) full_runs, 8);
        uint64_t *is_detached = calloc((size_t) runs, 8), full_bytes_min = UINT64_MAX;
        size_t n_first = 0, n_full = 0;
        char out[512];

        snprintf(out, sizeof(out), "%s/control.pftrace", dir);
        for (int i = 0; i < runs; i++) {
                char *session = NULL;
                uint64_t t0, t1, t2, pk;
                StopStats st;
                Analysis a;
                int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

                if (fd < 0)
                        die(out, errno);
                polkit_check(bus, &pk);
                polkit[i] = pk;
                t0 = now_ns(CLOCK_BOOTTIME);
                if (bus_start(bus, empty_cfg, fd, &session) < 0)
                        return 1;
                t1 = now_ns(CLOCK_BOOTTIME);
                close(fd);
                start_reply[i] = t1 - t0;
                usleep(20000);
                t1 = now_ns(CLOCK_MONOTONIC);
                if (bus_stop(bus, session, &st) < 0)
                        return 1;
                t2 = now_ns(CLOCK_MONOTONIC);
                stop_empty[i] = t2 - t1;
                free(session);
                if (analyze_file(out, &a) >= 0 && a.first_event_ts > t0) {
                        first_event[n_first] = a.first_event_ts - t0;
                        first_event_nopk[n_first] = first_event[n_first] > pk ? first_event[n_first] - pk : 0;
                        n_first++;
                }
        }
        for (int i = 0; i < runs; i++) {
                sd_bus_message *reply = NULL;
                uint64_t t0 = now_ns(CLOCK_MONOTONIC);
                int r = sd_bus_call_method(bus, TB_NAME, TB_PATH, TB_MANAGER, "IsDetached", NULL, &reply,
                                           "s", "tbbench-no-such-key");
                is_detached[i] = now_ns(CLOCK_MONOTONIC) - t0;
                sd_bus_message_unref(reply);
                if (r < 0)
                        die("IsDetached", r);
        }
        for (int i = 0; i < full_runs; i++) {
                char *session = NULL;
                uint64_t t1;
                StopStats st;
                int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
                int mfd = open(TRACEFS "/trace_marker", O_WRONLY | O_CLOEXEC);
                static char line[3000];

                if (fd < 0 || mfd < 0)
                        die("open", errno);
                if (bus_start(bus, full_cfg, fd, &session) < 0)
                        return 1;
                close(fd);
                /* About 96 MB of markers at about 100 MB/s, so the 64 MB ring wraps. */
                memset(line, 'f', sizeof(line));
                for (int k = 0; k < 32 * 1024; k++) {
                        (void) !write(mfd, line, sizeof(line));
                        if ((k & 255) == 255)
                                usleep(7000);
                }
                close(mfd);
                usleep(250000);
                t1 = now_ns(CLOCK_MONOTONIC);
                if (bus_stop(bus, session, &st) < 0)
                        return 1;
                stop_full[n_full++] = now_ns(CLOCK_MONOTONIC) - t1;
                if (st.bytes < full_bytes_min)
                        full_bytes_min = st.bytes;
                free(session);
        }
        unlink(out);

        printf("{");
        print_dist("start_reply", start_reply, (size_t) runs, true);
        print_dist("start_to_first_event", first_event, n_first, true);
        print_dist("start_to_first_event_without_polkit", first_event_nopk, n_first, true);
        print_dist("polkit_check", polkit, (size_t) runs, true);
        print_dist("stop_empty", stop_empty, (size_t) runs, true);
        print_dist("stop_full", stop_full, n_full, true);
        print_dist("is_detached", is_detached, (size_t) runs, true);
        printf("\"full_file_bytes_min\": %" PRIu64 "}\n", n_full ? full_bytes_min : 0);
        return 0;
}

int main(int argc, char **argv) {
        if (argc < 2) {
                fprintf(stderr, "usage: tb-bench storm|marker|floor|record|analyze|control ...\n");
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
        fprintf(stderr, "tb-bench: unknown command %s\n", argv[1]);
        return 2;
}
