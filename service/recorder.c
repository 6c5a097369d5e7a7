/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/utsname.h>
#include <time.h>

#include "config.h"
#include "ftrace-parser.h"
#include "log.h"
#include "process-scan.h"
#include "service-tracks.h"
#include "recorder.h"
#include "strv.h"
#include "trace-writer.h"

/* At most this many pages per CPU in one pass, so one busy CPU cannot starve the others;
 * a CPU that hit the bound is drained again right away. */
#define MAX_PAGES_PER_CPU_PER_PASS 256
#define MAX_PAGES_PER_BUNDLE 32

struct Recorder {
        pthread_t thread;
        bool thread_started;
        int stop_fd;     /* main -> worker */
        int done_fd;     /* worker -> main */
        int output_fd;

        unsigned n_cpus;
        int *pipe_fds;
        int *stats_fds;
        TraceCpuStats *start_stats;   /* per CPU, at the start or at the kernel's last reset */
        TraceCpuStats *last_stats;    /* per CPU, the last sample */
        uint64_t *lost_before_reset;  /* per CPU, kernel losses counted before its resets */
        FtraceBundle **bundles;
        FtraceParser *parser;
        size_t page_size;
        uint8_t *page;

        ProcessTreeBuilder *processes;

        /* Moments the main thread asks to mark on the tracebus track (detached, attached). */
        pthread_mutex_t annotations_lock;
        struct { uint64_t timestamp; const char *name; } annotations[16];
        size_t n_annotations;

        /* Worker-only state for the service tracks and the loss accounting. */
        uint64_t *lost_reported;      /* per CPU, what the lost counter track last said */
        unsigned *bundle_pages;       /* per CPU, pages in the current bundle */
        unsigned pages_per_bundle;
        double *fill_reported;        /* per CPU, percent */
        uint32_t buffer_size_kb;
        uint64_t packed_events, kernel_lost;
        uint64_t last_snapshot_ns;

        uint32_t drain_period_ms;
        uint64_t write_period_ns;     /* UINT64_MAX: only when the buffer fills, and at the end */
        size_t write_threshold;       /* bytes: write at once when this much is pending */
        uint64_t last_write_ns;
        bool compress;                /* bundles go out as compressed_packets */
        Tracebus__TraceConfig *trace_config;  /* echoed into the trace */
        TraceWriter writer;

        _Atomic uint64_t events, bytes_written, events_lost, kernel_events_lost, events_overwritten;
        RecorderEnd end;
        int error;
};

static uint64_t now_ns(clockid_t clock) {
        struct timespec ts;

        (void) clock_gettime(clock, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

static int load_formats(Recorder *rec, TraceInstance *instance, char **events) {
        _cleanup_free_ char *header = NULL;
        size_t len;
        int r;

        r = ftrace_parser_new(&rec->parser);
        if (r < 0)
                return r;
        r = trace_instance_read_file(instance, "events/header_page", &header, &len);
        if (r < 0)
                return log_error_errno(r, "Failed to read events/header_page: %m");
        r = ftrace_parser_load_header_page(rec->parser, header, len);
        if (r < 0)
                return log_error_errno(r, "Failed to parse events/header_page: %m");

        STRV_FOREACH(e, events) {
                _cleanup_free_ char *file = NULL, *format = NULL, *group = NULL;

                group = strndup(*e, strcspn(*e, "/"));
                if (!group || asprintf(&file, "events/%s/format", *e) < 0)
                        return -ENOMEM;
                r = trace_instance_read_file(instance, file, &format, &len);
                if (r < 0)
                        return log_error_errno(r, "Failed to read %s: %m", file);
                r = ftrace_parser_add_event(rec->parser, group, format, len);
                if (r < 0)
                        return log_error_errno(r, "Failed to parse the format of %s: %m", *e);
        }
        return 0;
}

static int open_cpus(Recorder *rec, TraceInstance *instance, bool compact_sched) {
        int n, r;

        n = trace_instance_n_cpus(instance);
        if (n < 0)
                return n;
        rec->n_cpus = (unsigned) n;
        rec->pipe_fds = malloc(sizeof(int) * n);
        rec->stats_fds = malloc(sizeof(int) * n);
        rec->start_stats = calloc(n, sizeof(TraceCpuStats));
        rec->last_stats = calloc(n, sizeof(TraceCpuStats));
        rec->lost_before_reset = calloc(n, sizeof(uint64_t));
        rec->bundles = calloc(n, sizeof(FtraceBundle *));
        rec->lost_reported = calloc(n, sizeof(uint64_t));
        rec->bundle_pages = calloc(n, sizeof(unsigned));
        rec->fill_reported = calloc(n, sizeof(double));
        if (!rec->pipe_fds || !rec->stats_fds || !rec->start_stats || !rec->last_stats ||
            !rec->lost_before_reset || !rec->bundles ||
            !rec->lost_reported || !rec->fill_reported || !rec->bundle_pages)
                return -ENOMEM;
        for (int cpu = 0; cpu < n; cpu++)
                rec->pipe_fds[cpu] = rec->stats_fds[cpu] = -EBADF;

        for (int cpu = 0; cpu < n; cpu++) {
                rec->pipe_fds[cpu] = trace_instance_open_cpu_pipe(instance, cpu);
                if (rec->pipe_fds[cpu] < 0)
                        return log_error_errno(rec->pipe_fds[cpu], "Failed to open trace_pipe_raw of CPU %d: %m", cpu);
                rec->stats_fds[cpu] = trace_instance_open_cpu_stats(instance, cpu);
                if (rec->stats_fds[cpu] < 0)
                        return rec->stats_fds[cpu];
                r = ftrace_bundle_new(cpu, compact_sched, &rec->bundles[cpu]);
                if (r < 0)
                        return r;
        }
        return 0;
}

int recorder_new(const SessionConfig *config, TraceInstance *instance, int output_fd, Recorder **ret) {
        _cleanup_(recorder_freep) Recorder *rec = NULL;
        int r;

        assert(config);
        assert(instance);
        assert(output_fd >= 0);

        rec = calloc(1, sizeof(*rec));
        if (!rec) {
                safe_close(output_fd);
                return -ENOMEM;
        }
        rec->output_fd = output_fd;
        rec->stop_fd = rec->done_fd = -EBADF;
        rec->drain_period_ms = config->drain_period_ms;
        rec->buffer_size_kb = config->buffer_size_kb;
        rec->compress = config->compress;
        (void) pthread_mutex_init(&rec->annotations_lock, NULL);
        /* write_into_file: whole packets every file_write_period_ms, so the file is valid
         * after every write, and at once when the buffer is full: a long trace loses
         * nothing. Otherwise the buffer is a ring (or discards when full) written at the end. */
        rec->write_period_ns = config->write_into_file ?
                (uint64_t) config->file_write_period_ms * 1000000ull : UINT64_MAX;
        rec->write_threshold = (size_t) config->trace_buffer_kb * 1024u;
        /* A bundle holds at most 1/16 of the service's buffer in raw pages (and 32 pages). */
        rec->pages_per_bundle = (unsigned) MIN((size_t) MAX_PAGES_PER_BUNDLE,
                                               MAX(rec->write_threshold / 16 / 4096, (size_t) 1));
        trace_writer_init(&rec->writer, output_fd,
                          config->write_into_file ? TRACE_WRITER_STREAM :
                          config->discard_when_full ? TRACE_WRITER_DISCARD : TRACE_WRITER_RING,
                          (size_t) config->trace_buffer_kb * 1024u, config->max_file_size_bytes);

        rec->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        rec->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (rec->stop_fd < 0 || rec->done_fd < 0)
                return -errno;

        rec->page_size = (size_t) sysconf(_SC_PAGESIZE);
        rec->page = malloc(rec->page_size);
        if (!rec->page)
                return -ENOMEM;

        r = process_tree_builder_new(&rec->processes);
        if (r < 0)
                return r;

        rec->trace_config = tracebus__trace_config__unpack(NULL, config->trace_config_len, config->trace_config);
        if (!rec->trace_config)
                return -ENOMEM;

        r = load_formats(rec, instance, config->events);
        if (r < 0)
                return r;
        r = open_cpus(rec, instance, config->compact_sched);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(rec);
        return 0;
}

Recorder *recorder_free(Recorder *rec) {
        if (!rec)
                return NULL;
        if (rec->thread_started) {
                recorder_stop(rec);
                (void) pthread_join(rec->thread, NULL);
        }
        for (unsigned cpu = 0; cpu < rec->n_cpus; cpu++) {
                if (rec->pipe_fds)
                        safe_close(rec->pipe_fds[cpu]);
                if (rec->stats_fds)
                        safe_close(rec->stats_fds[cpu]);
                if (rec->bundles)
                        ftrace_bundle_free(rec->bundles[cpu]);
        }
        free(rec->pipe_fds);
        free(rec->stats_fds);
        free(rec->start_stats);
        free(rec->last_stats);
        free(rec->lost_before_reset);
        free(rec->bundles);
        free(rec->lost_reported);
        free(rec->bundle_pages);
        free(rec->fill_reported);
        free(rec->page);
        (void) pthread_mutex_destroy(&rec->annotations_lock);
        ftrace_parser_free(rec->parser);
        process_tree_builder_free(rec->processes);
        if (rec->trace_config)
                tracebus__trace_config__free_unpacked(rec->trace_config, NULL);
        trace_writer_done(&rec->writer);
        safe_close(rec->output_fd);
        safe_close(rec->stop_fd);
        safe_close(rec->done_fd);
        return mfree(rec);
}

/* The service's packets (sequence 1) that tell trace_processor how to read the rest. */

static int append_clock_snapshot(Recorder *rec) {
        static const struct { clockid_t id; uint32_t builtin; } clocks[] = {
                /* BOOTTIME first: it is the trace clock, and the clock of the ftrace events. */
                { CLOCK_BOOTTIME,       TRACEBUS__BUILTIN_CLOCK__BUILTIN_CLOCK_BOOTTIME },
                { CLOCK_REALTIME,       TRACEBUS__BUILTIN_CLOCK__BUILTIN_CLOCK_REALTIME },
                { CLOCK_REALTIME_COARSE, TRACEBUS__BUILTIN_CLOCK__BUILTIN_CLOCK_REALTIME_COARSE },
                { CLOCK_MONOTONIC,      TRACEBUS__BUILTIN_CLOCK__BUILTIN_CLOCK_MONOTONIC },
                { CLOCK_MONOTONIC_COARSE, TRACEBUS__BUILTIN_CLOCK__BUILTIN_CLOCK_MONOTONIC_COARSE },
                { CLOCK_MONOTONIC_RAW,  TRACEBUS__BUILTIN_CLOCK__BUILTIN_CLOCK_MONOTONIC_RAW },
        };
        Tracebus__ClockSnapshot__Clock c[ELEMENTSOF(clocks)];
        Tracebus__ClockSnapshot__Clock *cp[ELEMENTSOF(clocks)];
        Tracebus__ClockSnapshot snapshot = TRACEBUS__CLOCK_SNAPSHOT__INIT;
        Tracebus__TracePacket packet = TRACEBUS__TRACE_PACKET__INIT;

        for (size_t i = 0; i < ELEMENTSOF(clocks); i++) {
                tracebus__clock_snapshot__clock__init(&c[i]);
                c[i].has_clock_id = c[i].has_timestamp = true;
                c[i].clock_id = clocks[i].builtin;
                c[i].timestamp = now_ns(clocks[i].id);
                cp[i] = &c[i];
        }
        snapshot.clocks = cp;
        snapshot.n_clocks = ELEMENTSOF(clocks);
        snapshot.has_primary_trace_clock = true;
        snapshot.primary_trace_clock = TRACEBUS__BUILTIN_CLOCK__BUILTIN_CLOCK_BOOTTIME;

        packet.has_timestamp = true;
        packet.timestamp = c[0].timestamp;
        packet.clock_snapshot = &snapshot;
        return trace_writer_append_meta(&rec->writer, &packet, TRACE_SEQUENCE_SERVICE);
}

static int append_system_info(Recorder *rec) {
        Tracebus__TracePacket packet = TRACEBUS__TRACE_PACKET__INIT;
        Tracebus__SystemInfo info = TRACEBUS__SYSTEM_INFO__INIT;
        Tracebus__Utsname uts = TRACEBUS__UTSNAME__INIT;
        struct utsname u;

        /* trace_processor decodes sched_switch prev_state by kernel version: without
         * utsname it assumes 4.4 and gets modern kernels' states wrong. */
        if (uname(&u) < 0)
                return -errno;
        uts.sysname = u.sysname;
        uts.version = u.version;
        uts.release = u.release;
        uts.machine = u.machine;
        info.utsname = &uts;
        info.tracing_service_version = (char *) "tracebus " PACKAGE_VERSION;
        info.has_hz = info.has_page_size = info.has_num_cpus = true;
        info.hz = sysconf(_SC_CLK_TCK);
        info.page_size = (uint32_t) rec->page_size;
        info.num_cpus = rec->n_cpus;

        packet.system_info = &info;
        return trace_writer_append_meta(&rec->writer, &packet, TRACE_SEQUENCE_SERVICE);
}

static int append_trace_config_and_uuid(Recorder *rec) {
        Tracebus__TracePacket packet = TRACEBUS__TRACE_PACKET__INIT;
        Tracebus__TraceUuid uuid = TRACEBUS__TRACE_UUID__INIT;
        int64_t random[2];
        int r;

        packet.trace_config = rec->trace_config;
        r = trace_writer_append_meta(&rec->writer, &packet, TRACE_SEQUENCE_SERVICE);
        if (r < 0)
                return r;

        if (getrandom(random, sizeof(random), 0) != sizeof(random))
                return -errno;
        uuid.has_msb = uuid.has_lsb = true;
        uuid.msb = random[0];
        uuid.lsb = random[1];
        tracebus__trace_packet__init(&packet);
        packet.trace_uuid = &uuid;
        return trace_writer_append_meta(&rec->writer, &packet, TRACE_SEQUENCE_SERVICE);
}

static int append_service_event(Recorder *rec, bool started, uint64_t timestamp) {
        Tracebus__TracePacket packet = TRACEBUS__TRACE_PACKET__INIT;
        Tracebus__TracingServiceEvent event = TRACEBUS__TRACING_SERVICE_EVENT__INIT;

        if (started)
                event.has_tracing_started = event.tracing_started = true;
        else
                event.has_tracing_disabled = event.tracing_disabled = true;
        packet.has_timestamp = true;
        packet.timestamp = timestamp;
        packet.service_event = &event;
        return trace_writer_append_meta(&rec->writer, &packet, TRACE_SEQUENCE_SERVICE);
}

static void cpu_stats_to_proto(unsigned cpu, const TraceCpuStats *s, Tracebus__FtraceCpuStats *p) {
        tracebus__ftrace_cpu_stats__init(p);
        p->has_cpu = p->has_entries = p->has_overrun = p->has_commit_overrun = true;
        p->has_bytes_read = p->has_oldest_event_ts = p->has_now_ts = true;
        p->has_dropped_events = p->has_read_events = true;
        p->cpu = cpu;
        p->entries = s->entries;
        p->overrun = s->overrun;
        p->commit_overrun = s->commit_overrun;
        p->bytes_read = s->bytes;
        p->oldest_event_ts = s->oldest_event_ts;
        p->now_ts = s->now_ts;
        p->dropped_events = s->dropped_events;
        p->read_events = s->read_events;
}

/* FtraceStats at the start and the end of the trace: the kernel's own loss counters. */
static int append_ftrace_stats(Recorder *rec, bool end) {
        Tracebus__TracePacket packet = TRACEBUS__TRACE_PACKET__INIT;
        Tracebus__FtraceStats stats = TRACEBUS__FTRACE_STATS__INIT;
        _cleanup_free_ Tracebus__FtraceCpuStats *cpu_stats = NULL;
        _cleanup_free_ Tracebus__FtraceCpuStats **ptrs = NULL;
        int r;

        cpu_stats = calloc(rec->n_cpus, sizeof(*cpu_stats));
        ptrs = calloc(rec->n_cpus, sizeof(*ptrs));
        if (!cpu_stats || !ptrs)
                return -ENOMEM;

        for (unsigned cpu = 0; cpu < rec->n_cpus; cpu++) {
                TraceCpuStats s;

                r = trace_instance_read_cpu_stats_fd(rec->stats_fds[cpu], &s);
                if (r < 0)
                        return r;
                if (!end)
                        rec->start_stats[cpu] = s;
                cpu_stats_to_proto(cpu, &s, &cpu_stats[cpu]);
                ptrs[cpu] = &cpu_stats[cpu];
        }

        stats.has_phase = true;
        stats.phase = end ? TRACEBUS__FTRACE_STATS__PHASE__END_OF_TRACE : TRACEBUS__FTRACE_STATS__PHASE__START_OF_TRACE;
        stats.cpu_stats = ptrs;
        stats.n_cpu_stats = rec->n_cpus;
        packet.has_timestamp = true;
        packet.timestamp = now_ns(CLOCK_BOOTTIME);
        packet.ftrace_stats = &stats;
        return trace_writer_append_meta(&rec->writer, &packet, TRACE_SEQUENCE_FTRACE);
}

static int append_sync_marker(Recorder *rec);

static int append_opening_packets(Recorder *rec) {
        int r;

        r = append_clock_snapshot(rec);
        if (r < 0)
                return r;
        /* The first sync marker before any data, as Perfetto writes one at its first read. */
        r = append_sync_marker(rec);
        if (r < 0)
                return r;
        r = append_trace_config_and_uuid(rec);
        if (r < 0)
                return r;
        r = append_system_info(rec);
        if (r < 0)
                return r;
        r = append_ftrace_stats(rec, /* end= */ false);
        if (r < 0)
                return r;
        return service_tracks_append_descriptors(&rec->writer, rec->n_cpus);
}

/* Perfetto's service marks every 10 s: a clock snapshot (clocks drift) and the sync
 * marker that lets tools split a huge trace without parsing it. */
#define SNAPSHOT_INTERVAL_NS (10ull * 1000 * 1000 * 1000)
static const uint8_t sync_marker[16] = {
        0x82, 0x47, 0x7a, 0x76, 0xb2, 0x8d, 0x42, 0xba, 0x81, 0xdc, 0x33, 0x32, 0x6d, 0x57, 0xa0, 0x79,
};

static int append_sync_marker(Recorder *rec) {
        Tracebus__TracePacket packet = TRACEBUS__TRACE_PACKET__INIT;

        /* Fixed layout: trusted_uid, the sequence id, then the marker last. */
        packet.has_trusted_uid = true;
        packet.trusted_uid = (int32_t) getuid();
        packet.has_synchronization_marker = true;
        packet.synchronization_marker.data = (uint8_t *) sync_marker;
        packet.synchronization_marker.len = sizeof(sync_marker);
        return trace_writer_append_meta(&rec->writer, &packet, TRACE_SEQUENCE_SERVICE);
}

static int append_periodic_snapshot(Recorder *rec, bool force) {
        uint64_t now = now_ns(CLOCK_MONOTONIC);
        int r;

        if (!force && now - rec->last_snapshot_ns < SNAPSHOT_INTERVAL_NS)
                return 0;
        rec->last_snapshot_ns = now;
        r = append_sync_marker(rec);
        if (r < 0)
                return r;
        return append_clock_snapshot(rec);
}

/* TraceStats at the end: what the service's own buffer did. */
static int append_trace_stats(Recorder *rec) {
        Tracebus__TracePacket packet = TRACEBUS__TRACE_PACKET__INIT;
        Tracebus__TraceStats stats = TRACEBUS__TRACE_STATS__INIT;
        Tracebus__TraceStats__BufferStats buffer = TRACEBUS__TRACE_STATS__BUFFER_STATS__INIT;
        Tracebus__TraceStats__BufferStats *buffers[] = { &buffer };
        const TraceWriterStats *ws = &rec->writer.stats;

        buffer.has_buffer_size = buffer.has_bytes_written = buffer.has_bytes_overwritten = true;
        buffer.has_chunks_overwritten = buffer.has_chunks_discarded = true;
        buffer.buffer_size = rec->writer.capacity;
        buffer.bytes_written = ws->bytes_written + trace_writer_pending(&rec->writer);
        buffer.bytes_overwritten = ws->bytes_overwritten;
        buffer.chunks_overwritten = ws->packets_overwritten;
        buffer.chunks_discarded = ws->packets_discarded;
        stats.buffer_stats = buffers;
        stats.n_buffer_stats = 1;
        stats.has_tracing_sessions = stats.has_total_buffers = true;
        stats.tracing_sessions = 1;
        stats.total_buffers = 1;
        packet.has_timestamp = true;
        packet.timestamp = now_ns(CLOCK_BOOTTIME);
        packet.trace_stats = &stats;
        return trace_writer_append_meta(&rec->writer, &packet, TRACE_SEQUENCE_SERVICE);
}

static uint64_t cpu_lost_since_start(const Recorder *rec, unsigned cpu, const TraceCpuStats *s) {
        return (s->overrun - rec->start_stats[cpu].overrun) +
               (s->dropped_events - rec->start_stats[cpu].dropped_events);
}

/* The kernel clears an instance's buffers when an event that was ever enabled in it is
 * removed (an administrator deletes a kprobe or uprobe the session records): what they
 * held is gone without a page saying so, and the counters start again from zero. A
 * counter that only grows went backwards: keep the losses counted so far, and mark the
 * CPU's next bundle as following lost events, so that the trace says where. */
static void check_buffer_reset(Recorder *rec, unsigned cpu, const TraceCpuStats *s) {
        const TraceCpuStats *last = &rec->last_stats[cpu];

        if (s->read_events >= last->read_events && s->overrun >= last->overrun &&
            s->dropped_events >= last->dropped_events)
                return;
        rec->lost_before_reset[cpu] += cpu_lost_since_start(rec, cpu, last);
        rec->start_stats[cpu] = (TraceCpuStats) {};
        ftrace_bundle_set_lost_events(rec->bundles[cpu]);
        log_warning("The kernel cleared the trace buffer of CPU %u (was an event of the session removed?): "
                    "the events it held are lost.", cpu);
}

/* Samples the kernel's per-CPU counters: loss and fill on the timeline, and the
 * session's EventsLost, live. */
static int sample_cpu_stats(Recorder *rec) {
        uint64_t now = now_ns(CLOCK_BOOTTIME), kernel_lost = 0;
        int r;

        for (unsigned cpu = 0; cpu < rec->n_cpus; cpu++) {
                TraceCpuStats s;
                uint64_t lost;
                double fill = 0;

                r = trace_instance_read_cpu_stats_fd(rec->stats_fds[cpu], &s);
                if (r < 0)
                        return r;
                check_buffer_reset(rec, cpu, &s);
                rec->last_stats[cpu] = s;
                lost = rec->lost_before_reset[cpu] + cpu_lost_since_start(rec, cpu, &s);
                kernel_lost += lost;
                if (lost != rec->lost_reported[cpu]) {
                        rec->lost_reported[cpu] = lost;
                        r = service_tracks_append_counter(&rec->writer, now, service_track_lost_uuid(cpu), (double) lost);
                        if (r < 0)
                                return r;
                }
                /* entries waiting, times the average event size read so far, of the buffer. */
                if (s.read_events > 0 && rec->buffer_size_kb > 0)
                        fill = MIN(100.0, 100.0 * (double) s.entries * ((double) s.bytes / (double) s.read_events) /
                                          ((double) rec->buffer_size_kb * 1024.0));
                fill = (double) (int64_t) (fill * 10.0) / 10.0;
                if (fill != rec->fill_reported[cpu]) {
                        rec->fill_reported[cpu] = fill;
                        r = service_tracks_append_counter(&rec->writer, now, service_track_fill_uuid(cpu), fill);
                        if (r < 0)
                                return r;
                }
        }
        rec->kernel_lost = kernel_lost;
        return 0;
}

/* What Stop and the Session properties say, from the worker's own counters. */
static void publish_stats(Recorder *rec) {
        const TraceWriterStats *ws = &rec->writer.stats;
        uint64_t dropped = ws->events_overwritten + ws->events_discarded;

        atomic_store(&rec->events, rec->packed_events - dropped);
        atomic_store(&rec->events_overwritten, dropped);
        atomic_store(&rec->kernel_events_lost, rec->kernel_lost);
        atomic_store(&rec->events_lost, rec->kernel_lost + dropped);
        atomic_store(&rec->bytes_written, ws->bytes_written);
}

static int append_annotations(Recorder *rec) {
        int r = 0;

        (void) pthread_mutex_lock(&rec->annotations_lock);
        for (size_t i = 0; i < rec->n_annotations && r >= 0; i++)
                r = service_tracks_append_instant(&rec->writer, rec->annotations[i].timestamp,
                                                  rec->annotations[i].name);
        rec->n_annotations = 0;
        (void) pthread_mutex_unlock(&rec->annotations_lock);
        return r;
}

void recorder_annotate(Recorder *rec, const char *name) {
        (void) pthread_mutex_lock(&rec->annotations_lock);
        if (rec->n_annotations < ELEMENTSOF(rec->annotations)) {
                rec->annotations[rec->n_annotations].timestamp = now_ns(CLOCK_BOOTTIME);
                rec->annotations[rec->n_annotations].name = name;
                rec->n_annotations++;
        }
        (void) pthread_mutex_unlock(&rec->annotations_lock);
}

/* Writes what the process builder collected, if anything. */
static int append_process_tree(Recorder *rec) {
        Tracebus__TracePacket packet = TRACEBUS__TRACE_PACKET__INIT;
        Tracebus__ProcessTree tree;
        int r;

        r = process_tree_builder_retry_gone(rec->processes, /* force= */ false);
        if (r < 0)
                return r;
        if (process_tree_builder_n_entries(rec->processes) == 0)
                return 0;
        tree = *process_tree_builder_tree(rec->processes);
        tree.has_collection_end_timestamp = true;
        tree.collection_end_timestamp = now_ns(CLOCK_BOOTTIME);
        packet.has_timestamp = true;
        packet.timestamp = tree.collection_end_timestamp;
        packet.process_tree = &tree;
        r = trace_writer_append_meta(&rec->writer, &packet, TRACE_SEQUENCE_PROCESSES);
        process_tree_builder_reset(rec->processes);
        return r;
}

/* Every process and thread alive when tracing started, so that threads which never
 * fork or rename during the trace still have their names and processes. */
static int describe_all_processes(Recorder *rec) {
        int r;

        r = process_tree_builder_add_all(rec->processes);
        if (r < 0)
                log_warning_errno(r, "Failed to scan /proc, process names may be missing: %m");
        return append_process_tree(rec);
}

/* The worker thread. */

/* Compressed, the bundle is packed into its own buffer and deflated from there into
 * the writer's; otherwise packed straight into the writer's memory: one copy fewer. */
static int pack_bundle(Recorder *rec, unsigned cpu) {
        FtraceBundle *b = rec->bundles[cpu];
        size_t n = ftrace_bundle_n_events(b), len, n_coded;
        const DeflateSpan *coded;
        const uint8_t *packed;
        uint8_t *dst;
        int r;

        if (n == 0 && !ftrace_bundle_lost_events(b))
                return 0;
        if (rec->compress) {
                r = ftrace_bundle_pack(b, &packed, &len);
                if (r < 0)
                        return r;
                n_coded = ftrace_bundle_coded_spans(b, &coded);
                r = trace_writer_append_ftrace_bundle_deflated(&rec->writer, packed, len, coded, n_coded, n);
        } else {
                r = ftrace_bundle_packed_size(b, &len);
                if (r < 0)
                        return r;
                r = trace_writer_reserve_ftrace_bundle(&rec->writer, len, n, &dst);
                if (r >= 0)
                        ftrace_bundle_pack_into(b, dst);
        }
        if (r < 0)
                return r;
        rec->packed_events += n;
        return 0;
}

/* Threads first seen in the events since the last pass: their names and processes. */
static int describe_new_threads(Recorder *rec, unsigned cpu) {
        const int32_t *pids;
        size_t n = ftrace_bundle_take_pids(rec->bundles[cpu], &pids);

        for (size_t i = 0; i < n; i++) {
                int r = process_tree_builder_add_thread(rec->processes, pids[i]);
                if (r < 0)
                        return r;
        }
        n = ftrace_bundle_take_renamed(rec->bundles[cpu], &pids);
        for (size_t i = 0; i < n; i++) {
                int r = process_tree_builder_redescribe_thread(rec->processes, pids[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Ends the CPU's current bundle: its new threads described, the bundle packed. */
static int flush_bundle(Recorder *rec, unsigned cpu) {
        int r = describe_new_threads(rec, cpu);
        if (r < 0)
                return r;
        rec->bundle_pages[cpu] = 0;
        return pack_bundle(rec, cpu);
}

/* Reads up to MAX_PAGES_PER_CPU_PER_PASS pages of one CPU. Returns 1 if more may be waiting.
 *
 * trace_pipe_raw hands out the page the kernel is still writing as soon as it holds
 * anything, so a reader that goes on until EAGAIN while events keep coming chases the
 * writer, one syscall per page holding an event or two. A page less than half full
 * (after the first of a pass, which may be the rest of a page read last time) says we
 * have caught up: the rest waits for the next period, as traced_probes does. */
static int drain_cpu(Recorder *rec, unsigned cpu) {
        for (unsigned i = 0; i < MAX_PAGES_PER_CPU_PER_PASS; i++) {
                ssize_t n = read(rec->pipe_fds[cpu], rec->page, rec->page_size);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                return 0;
                        return -errno;
                }
                if (n == 0)
                        return 0;
                /* Events lost before this page: the loss starts a bundle of its own, so that
                 * lost_events marks the place where it happened, as traced_probes does. */
                if (ftrace_parser_page_lost_events(rec->parser, rec->page, (size_t) n) > 0 &&
                    ftrace_bundle_n_events(rec->bundles[cpu]) > 0) {
                        int r = flush_bundle(rec, cpu);
                        if (r < 0)
                                return r;
                }
                /* A damaged page is recorded as an FtraceError in the bundle; go on. */
                (void) ftrace_parser_parse_page(rec->parser, rec->page, (size_t) n, rec->bundles[cpu]);
                /* Bundles small next to the service's buffer, so a ring keeps close to its size. */
                if (++rec->bundle_pages[cpu] >= rec->pages_per_bundle) {
                        int r = flush_bundle(rec, cpu);
                        if (r < 0)
                                return r;
                }
                if (i > 0 && ftrace_parser_page_data_size(rec->parser, rec->page, (size_t) n) < (ssize_t) (rec->page_size / 2))
                        return 0;
        }
        return 1;
}

static int drain_all(Recorder *rec) {
        bool more;
        int r;

        do {
                more = false;
                for (unsigned cpu = 0; cpu < rec->n_cpus; cpu++) {
                        r = drain_cpu(rec, cpu);
                        if (r < 0)
                                return r;
                        more = more || r > 0;
                        r = flush_bundle(rec, cpu);
                        if (r < 0)
                                return r;
                }
        } while (more);
        return append_process_tree(rec);
}

static int flush_output(Recorder *rec) {
        int r = trace_writer_flush(&rec->writer);

        rec->last_write_ns = now_ns(CLOCK_MONOTONIC);
        publish_stats(rec);
        return r;
}

static bool write_due(Recorder *rec) {
        if (rec->writer.mode != TRACE_WRITER_STREAM)
                return false;
        if (trace_writer_pending(&rec->writer) >= rec->write_threshold)
                return true;
        return rec->write_period_ns != UINT64_MAX &&
               now_ns(CLOCK_MONOTONIC) - rec->last_write_ns >= rec->write_period_ns;
}

static bool wait_for_stop(Recorder *rec) {
        struct pollfd p = { .fd = rec->stop_fd, .events = POLLIN };
        uint64_t v;

        if (poll(&p, 1, (int) rec->drain_period_ms) <= 0)
                return false;
        return read(rec->stop_fd, &v, sizeof(v)) == sizeof(v);
}

static void finish(Recorder *rec, RecorderEnd end, int error) {
        uint64_t one = 1;

        rec->end = end;
        rec->error = error;
        (void) write(rec->done_fd, &one, sizeof(one));
}

static int write_closing_packets(Recorder *rec) {
        FtraceParserStats ps;
        int r;

        ftrace_parser_get_stats(rec->parser, &ps);
        log_debug("Read %" PRIu64 " pages, %" PRIu64 " events.", ps.pages, ps.events);

        /* Gone threads still waiting for the kernel's saved tables: a last look. */
        r = process_tree_builder_retry_gone(rec->processes, /* force= */ true);
        if (r > 0)
                r = append_process_tree(rec);
        if (r < 0)
                return r;

        r = sample_cpu_stats(rec);
        if (r >= 0)
                r = append_annotations(rec);
        if (r >= 0)
                r = service_tracks_append_instant(&rec->writer, now_ns(CLOCK_BOOTTIME), "stopped");
        if (r >= 0)
                r = append_periodic_snapshot(rec, /* force= */ true);
        if (r >= 0)
                r = append_trace_stats(rec);
        if (r < 0)
                return r;
        r = append_ftrace_stats(rec, /* end= */ true);
        if (r < 0)
                return r;
        r = append_service_event(rec, /* started= */ false, now_ns(CLOCK_BOOTTIME));
        if (r < 0)
                return r;
        return flush_output(rec);
}

static RecorderEnd end_for_write_error(int r) {
        return r == -EFBIG ? RECORDER_END_SIZE_REACHED : RECORDER_END_OUTPUT_ERROR;
}

static void *recorder_thread(void *userdata) {
        Recorder *rec = userdata;
        int r;

        /* The opening packets go out at once, from this thread: a write to a passed fd
         * may block, and the event loop must not. The file is a valid trace from here on. */
        r = describe_all_processes(rec);
        if (r >= 0)
                r = flush_output(rec);
        if (r < 0)
                return finish(rec, end_for_write_error(r), r), NULL;

        for (;;) {
                bool stopping = wait_for_stop(rec);

                /* Sampled before the drain: the fill is at its highest then. */
                r = sample_cpu_stats(rec);
                if (r >= 0)
                        r = append_annotations(rec);
                if (r >= 0)
                        r = append_periodic_snapshot(rec, /* force= */ false);
                if (r >= 0)
                        r = drain_all(rec);
                if (r < 0) {
                        /* What was read so far still makes a complete trace. */
                        log_error_errno(r, "Failed to read the kernel's trace buffers, ending the session: %m");
                        (void) write_closing_packets(rec);
                        return finish(rec, RECORDER_END_READ_ERROR, r), NULL;
                }
                publish_stats(rec);
                if (stopping)
                        break;
                if (!write_due(rec))
                        continue;
                r = service_tracks_append_instant(&rec->writer, now_ns(CLOCK_BOOTTIME), "periodic write");
                if (r >= 0)
                        r = flush_output(rec);
                if (r < 0)
                        return finish(rec, end_for_write_error(r), r), NULL;
        }

        r = write_closing_packets(rec);
        finish(rec, r < 0 ? end_for_write_error(r) : RECORDER_END_STOPPED, r < 0 ? r : 0);
        return NULL;
}

int recorder_start(Recorder *rec, TraceInstance *instance) {
        uint64_t started;
        int r;

        assert(rec);
        assert(!rec->thread_started);

        r = append_opening_packets(rec);
        if (r < 0)
                return r;

        /* tracing_started must come before the first event, or trace_processor drops events. */
        started = now_ns(CLOCK_BOOTTIME);
        r = append_service_event(rec, /* started= */ true, started);
        if (r >= 0)
                r = service_tracks_append_instant(&rec->writer, started, "started");
        if (r < 0)
                return r;
        rec->last_snapshot_ns = now_ns(CLOCK_MONOTONIC);
        r = trace_instance_set_tracing(instance, true);
        if (r < 0)
                return log_error_errno(r, "Failed to switch tracing on in %s: %m", trace_instance_name(instance));

        r = -pthread_create(&rec->thread, NULL, recorder_thread, rec);
        if (r < 0) {
                (void) trace_instance_set_tracing(instance, false);
                return r;
        }
        rec->thread_started = true;
        return 0;
}

void recorder_stop(Recorder *rec) {
        uint64_t one = 1;

        (void) write(rec->stop_fd, &one, sizeof(one));
}

int recorder_done_fd(const Recorder *rec) {
        return rec->done_fd;
}

RecorderEnd recorder_join(Recorder *rec, int *ret_error) {
        if (rec->thread_started) {
                (void) pthread_join(rec->thread, NULL);
                rec->thread_started = false;
        }
        rec->output_fd = safe_close(rec->output_fd);
        if (ret_error)
                *ret_error = rec->error;
        return rec->end;
}

void recorder_get_stats(const Recorder *rec, RecorderStats *ret) {
        *ret = (RecorderStats) {
                .events = atomic_load(&rec->events),
                .bytes_written = atomic_load(&rec->bytes_written),
                .events_lost = atomic_load(&rec->events_lost),
                .kernel_events_lost = atomic_load(&rec->kernel_events_lost),
                .events_overwritten = atomic_load(&rec->events_overwritten),
        };
}
