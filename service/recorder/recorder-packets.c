/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <sys/random.h>
#include <sys/utsname.h>

#include "config.h"
#include "log.h"
#include "recorder-local.h"
#include "service-tracks.h"
#include "strv.h"

/* The service's packets (sequence 1) that tell trace_processor how to read the rest. */

static int append_clock_snapshot(Recorder *rec, TraceWriter *w) {
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

        if (rec->disable_clock_snapshotting)
                return 0;
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
        return trace_writer_append_meta(w, &packet, TRACE_SEQUENCE_SERVICE);
}

static int append_system_info(Recorder *rec, TraceWriter *w) {
        Tracebus__TracePacket packet = TRACEBUS__TRACE_PACKET__INIT;
        Tracebus__SystemInfo info = TRACEBUS__SYSTEM_INFO__INIT;
        Tracebus__Utsname uts = TRACEBUS__UTSNAME__INIT;
        struct utsname u;

        if (rec->disable_system_info)
                return 0;
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
        /* Without ftrace no CPU buffer was opened: the CPUs the system has. */
        info.num_cpus = rec->n_cpus > 0 ? rec->n_cpus : (uint32_t) sysconf(_SC_NPROCESSORS_CONF);

        packet.system_info = &info;
        return trace_writer_append_meta(w, &packet, TRACE_SEQUENCE_SERVICE);
}

static int append_trace_config_and_uuid(Recorder *rec, TraceWriter *w) {
        Tracebus__TracePacket packet = TRACEBUS__TRACE_PACKET__INIT;
        Tracebus__TraceUuid uuid = TRACEBUS__TRACE_UUID__INIT;
        int64_t random[2];
        int r;

        if (!rec->disable_trace_config) {
                packet.trace_config = rec->trace_config;
                r = trace_writer_append_meta(w, &packet, TRACE_SEQUENCE_SERVICE);
                if (r < 0)
                        return r;
        }

        /* As traced: the config's trace_uuid_msb/lsb when either is set, else a random one. */
        if (rec->has_trace_uuid) {
                random[0] = rec->trace_uuid_msb;
                random[1] = rec->trace_uuid_lsb;
        } else if (getrandom(random, sizeof(random), 0) != sizeof(random))
                return -errno;
        uuid.has_msb = uuid.has_lsb = true;
        uuid.msb = random[0];
        uuid.lsb = random[1];
        tracebus__trace_packet__init(&packet);
        packet.trace_uuid = &uuid;
        r = trace_writer_append_meta(w, &packet, TRACE_SEQUENCE_SERVICE);
        if (r < 0 || !rec->trace_config->trace_attributes || rec->trace_config->trace_attributes->n_attribute == 0)
                return r;
        /* The config's trace_attributes as a packet of their own, as Perfetto v58's service
         * writes them (trace_processor's metadata), whether or not the config is echoed. */
        tracebus__trace_packet__init(&packet);
        packet.trace_attributes = rec->trace_config->trace_attributes;
        return trace_writer_append_meta(w, &packet, TRACE_SEQUENCE_SERVICE);
}

static int append_service_event(Recorder *rec, TraceWriter *w, bool started, uint64_t timestamp) {
        Tracebus__TracePacket packet = TRACEBUS__TRACE_PACKET__INIT;
        Tracebus__TracingServiceEvent event = TRACEBUS__TRACING_SERVICE_EVENT__INIT;

        if (rec->disable_service_events)
                return 0;
        if (started)
                event.has_tracing_started = event.tracing_started = true;
        else
                event.has_tracing_disabled = event.tracing_disabled = true;
        packet.has_timestamp = true;
        packet.timestamp = timestamp;
        packet.service_event = &event;
        return trace_writer_append_meta(w, &packet, TRACE_SEQUENCE_SERVICE);
}

int recorder_append_service_event(Recorder *rec, bool started, uint64_t timestamp) {
        return append_service_event(rec, &rec->writer, started, timestamp);
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
static int append_ftrace_stats(Recorder *rec, TraceWriter *w, bool end) {
        Tracebus__TracePacket packet = TRACEBUS__TRACE_PACKET__INIT;
        Tracebus__FtraceStats stats = TRACEBUS__FTRACE_STATS__INIT;
        _cleanup_free_ Tracebus__FtraceCpuStats *cpu_stats = NULL;
        _cleanup_free_ Tracebus__FtraceCpuStats **ptrs = NULL;
        _cleanup_free_ char *atrace = NULL;
        int r;

        cpu_stats = calloc(MAX(rec->n_cpus, 1u), sizeof(*cpu_stats));
        ptrs = calloc(MAX(rec->n_cpus, 1u), sizeof(*ptrs));
        if (!cpu_stats || !ptrs)
                return -ENOMEM;

        /* Without a kernel buffer (every event asked for is missing here) there are no
         * per-CPU counters, only the setup errors. */
        for (unsigned cpu = 0; rec->parser && cpu < rec->n_cpus; cpu++) {
                TraceCpuStats s;

                /* A snapshot opens with the trace's own start: its loss is the session's so far. */
                if (!end && w != &rec->writer)
                        s = rec->start_stats[cpu];
                else if ((r = trace_instance_read_cpu_stats_fd(rec->stats_fds[cpu], &s)) < 0)
                        return r;
                /* The loss accounting starts at the trace's start, not at a snapshot's. */
                if (!end && w == &rec->writer)
                        rec->start_stats[cpu] = s;
                cpu_stats_to_proto(cpu, &s, &cpu_stats[cpu]);
                ptrs[cpu] = &cpu_stats[cpu];
        }

        /* The config's setup errors, at the start only: where trace_processor reads them. */
        if (!end) {
                stats.unknown_ftrace_events = rec->unknown_events;
                stats.n_unknown_ftrace_events = strv_length(rec->unknown_events);
                stats.failed_ftrace_events = rec->failed_events;
                stats.n_failed_ftrace_events = strv_length(rec->failed_events);
                atrace = strv_join(rec->atrace_errors, "\n");
                if (!atrace)
                        return -ENOMEM;
                stats.atrace_errors = isempty_str(atrace) ? NULL : atrace;
        }
        stats.has_phase = true;
        stats.phase = end ? TRACEBUS__FTRACE_STATS__PHASE__END_OF_TRACE : TRACEBUS__FTRACE_STATS__PHASE__START_OF_TRACE;
        stats.cpu_stats = ptrs;
        stats.n_cpu_stats = rec->parser ? rec->n_cpus : 0;
        if (end && rec->ksyms) {
                stats.has_kernel_symbols_parsed = stats.has_kernel_symbols_mem_kb = true;
                stats.kernel_symbols_parsed = (uint32_t) ksyms_count(rec->ksyms);
                stats.kernel_symbols_mem_kb = (uint32_t) (ksyms_mem_bytes(rec->ksyms) / 1024);
        }
        packet.has_timestamp = true;
        packet.timestamp = now_ns(CLOCK_BOOTTIME);
        packet.ftrace_stats = &stats;
        return trace_writer_append_meta(w, &packet, TRACE_SEQUENCE_FTRACE);
}

static int append_sync_marker(Recorder *rec, TraceWriter *w);

/* The opening FtraceStats, also with no kernel buffer when the config's ftrace events all
 * failed: the setup errors are what trace_processor's ftrace_setup_errors stat shows. */
static bool wants_opening_ftrace_stats(const Recorder *rec) {
        return rec->parser || rec->unknown_events || rec->failed_events || rec->atrace_errors;
}

int recorder_append_opening_packets(Recorder *rec) {
        int r;

        r = append_clock_snapshot(rec, &rec->writer);
        if (r < 0)
                return r;
        /* The first sync marker before any data, as Perfetto writes one at its first read. */
        r = append_sync_marker(rec, &rec->writer);
        if (r < 0)
                return r;
        r = append_trace_config_and_uuid(rec, &rec->writer);
        if (r < 0)
                return r;
        r = append_system_info(rec, &rec->writer);
        if (r < 0)
                return r;
        r = wants_opening_ftrace_stats(rec) ? append_ftrace_stats(rec, &rec->writer, /* end= */ false) : 0;
        if (r < 0)
                return r;
        r = service_tracks_append_descriptors(&rec->writer, rec->n_cpus);
        if (r < 0)
                return r;
        return recorder_append_setup_warnings(rec);
}

/* Perfetto's service marks every snapshot_interval_ms (10 s by default): a clock
 * snapshot (clocks drift) and the sync marker that lets tools split a huge trace
 * without parsing it. Checked once per drain pass, so never more often than that. */
static const uint8_t sync_marker[16] = {
        0x82, 0x47, 0x7a, 0x76, 0xb2, 0x8d, 0x42, 0xba, 0x81, 0xdc, 0x33, 0x32, 0x6d, 0x57, 0xa0, 0x79,
};

static int append_sync_marker(Recorder *rec, TraceWriter *w) {
        Tracebus__TracePacket packet = TRACEBUS__TRACE_PACKET__INIT;

        /* Fixed layout: trusted_uid, the sequence id, then the marker last. */
        packet.has_trusted_uid = true;
        packet.trusted_uid = (int32_t) getuid();
        packet.has_synchronization_marker = true;
        packet.synchronization_marker.data = (uint8_t *) sync_marker;
        packet.synchronization_marker.len = sizeof(sync_marker);
        return trace_writer_append_meta(w, &packet, TRACE_SEQUENCE_SERVICE);
}

int recorder_append_periodic_snapshot(Recorder *rec, bool force) {
        uint64_t now = now_ns(CLOCK_MONOTONIC);
        int r;

        if (!force && now - rec->last_snapshot_ns < rec->snapshot_interval_ns)
                return 0;
        rec->last_snapshot_ns = now;
        r = append_sync_marker(rec, &rec->writer);
        if (r < 0)
                return r;
        return append_clock_snapshot(rec, &rec->writer);
}

/* One BufferStats as Perfetto fills it: its packets are our chunks. */
static void fill_buffer_stats(Tracebus__TraceStats__BufferStats *out, const TraceWriterBuffer *b) {
        const TraceWriterBufferStats *s = &b->stats;

        tracebus__trace_stats__buffer_stats__init(out);
        out->has_buffer_size = out->has_bytes_written = out->has_bytes_overwritten = out->has_bytes_read = true;
        out->has_chunks_written = out->has_chunks_overwritten = out->has_chunks_discarded = true;
        out->has_chunks_read = out->has_write_wrap_count = true;
        out->buffer_size = b->capacity;
        out->bytes_written = s->bytes_written;
        out->bytes_overwritten = s->bytes_overwritten;
        /* Written just before the last read, as Perfetto writes its TraceStats in the
         * same pass: what the buffer still holds is read next. */
        out->bytes_read = s->bytes_read + b->data_len;
        out->chunks_written = s->packets_written;
        out->chunks_overwritten = s->packets_overwritten;
        out->chunks_discarded = s->packets_discarded;
        out->chunks_read = s->packets_written - s->packets_overwritten;
        out->write_wrap_count = s->write_wrap_count;
}

/* TraceStats at the end: what each of the service's buffers did, in config order (the
 * index trace_processor gives its traced_buf_* stats). */
static int append_trace_stats(Recorder *rec, TraceWriter *w) {
        Tracebus__TracePacket packet = TRACEBUS__TRACE_PACKET__INIT;
        Tracebus__TraceStats stats = TRACEBUS__TRACE_STATS__INIT;
        _cleanup_free_ Tracebus__TraceStats__BufferStats *buffers = NULL;
        _cleanup_free_ Tracebus__TraceStats__BufferStats **ptrs = NULL;
        Tracebus__TraceStats__FilterStats filter_stats = TRACEBUS__TRACE_STATS__FILTER_STATS__INIT;
        const TraceWriterFilterStats *fs = &rec->writer.filter_stats;
        size_t n = rec->writer.n_buffers;

        buffers = calloc(n, sizeof(*buffers));
        ptrs = calloc(n, sizeof(*ptrs));
        if (!buffers || !ptrs)
                return -ENOMEM;
        /* trace_filter: what it took and gave up to this packet, which it filters too. */
        filter_stats.has_input_packets = filter_stats.has_input_bytes = filter_stats.has_output_bytes = true;
        filter_stats.has_errors = filter_stats.has_time_taken_ns = true;
        filter_stats.input_packets = fs->input_packets;
        filter_stats.input_bytes = fs->input_bytes;
        filter_stats.output_bytes = fs->output_bytes;
        filter_stats.errors = fs->errors;
        filter_stats.time_taken_ns = fs->time_taken_ns;
        for (size_t i = 0; i < n; i++) {
                fill_buffer_stats(&buffers[i], &rec->writer.buffers[i]);
                ptrs[i] = &buffers[i];
        }
        stats.buffer_stats = ptrs;
        stats.n_buffer_stats = n;
        stats.has_tracing_sessions = stats.has_total_buffers = true;
        stats.tracing_sessions = 1;
        stats.total_buffers = (uint32_t) n;
        if (rec->writer.filter)
                stats.filter_stats = &filter_stats;
        packet.has_timestamp = true;
        packet.timestamp = now_ns(CLOCK_BOOTTIME);
        packet.trace_stats = &stats;
        return trace_writer_append_meta(w, &packet, TRACE_SEQUENCE_SERVICE);
}

int recorder_append_annotations(Recorder *rec) {
        int r = 0;

        (void) pthread_mutex_lock(&rec->annotations_lock);
        for (size_t i = 0; i < rec->n_annotations && r >= 0; i++)
                r = service_tracks_append_instant(&rec->writer, rec->annotations[i].timestamp,
                                                  rec->annotations[i].name);
        rec->n_annotations = 0;
        (void) pthread_mutex_unlock(&rec->annotations_lock);
        if (r < 0)
                return r;
        return recorder_append_warnings(rec);
}

void recorder_annotate(Recorder *rec, const char *name) {
        (void) pthread_mutex_lock(&rec->annotations_lock);
        if (rec->n_annotations < ELEMENTSOF(rec->annotations)) {
                rec->annotations[rec->n_annotations].timestamp = now_ns(CLOCK_BOOTTIME);
                rec->annotations[rec->n_annotations].name = name;
                rec->n_annotations++;
        }
        (void) pthread_mutex_unlock(&rec->annotations_lock);
        recorder_wake(rec);
}

/* A ProcessTree as metadata of the writer @userdata, at its collection time. */
static int write_process_tree(const Tracebus__ProcessTree *collected, void *userdata) {
        Tracebus__TracePacket packet = TRACEBUS__TRACE_PACKET__INIT;
        Tracebus__ProcessTree tree = *collected;
        TraceWriter *w = userdata;

        packet.has_timestamp = true;
        packet.timestamp = tree.collection_end_timestamp;
        packet.process_tree = &tree;
        return trace_writer_append_meta(w, &packet, TRACE_SEQUENCE_PROCESSES);
}

static int write_collected(Recorder *rec) {
        Tracebus__ProcessTree tree = *process_tree_builder_tree(rec->processes);
        int r;

        tree.has_collection_end_timestamp = true;
        tree.collection_end_timestamp = now_ns(CLOCK_BOOTTIME);
        r = write_process_tree(&tree, &rec->writer);
        process_tree_builder_reset(rec->processes);
        return r;
}

/* Writes what the process builder collected, if anything. A ring or discard trace is
 * written at its end, and keeps its metadata in memory until then: there the builder
 * keeps the descriptions, within its budget, and they are written at the end. */
int recorder_append_process_tree(Recorder *rec) {
        int r;

        r = process_tree_builder_retry_gone(rec->processes, /* force= */ false);
        if (r < 0)
                return r;
        if (process_tree_builder_n_entries(rec->processes) == 0)
                return 0;
        if (rec->writer.mode == TRACE_WRITER_STREAM)
                return write_collected(rec);
        process_tree_builder_keep(rec->processes, now_ns(CLOCK_BOOTTIME));
        return 0;
}

/* Every process and thread alive when tracing started, so that threads which never
 * fork or rename during the trace still have their names and processes. Written at
 * once in every mode: the opening packets go out before the trace starts. */
int recorder_describe_all_processes(Recorder *rec) {
        int r;

        if (!rec->initial_dump)
                return 0;   /* linux.process_stats quirk DISABLE_INITIAL_DUMP */
        r = process_tree_builder_add_all(rec->processes);
        if (r < 0)
                log_warning_errno(r, "Failed to scan /proc, process names may be missing: %m");
        if (process_tree_builder_n_entries(rec->processes) == 0)
                return 0;
        return write_collected(rec);
}

int recorder_describe_gone_threads(Recorder *rec) {
        int r = process_tree_builder_retry_gone(rec->processes, /* force= */ true);

        return r > 0 ? recorder_append_process_tree(rec) : r;
}

/* The threads the trace has yet to describe: those that exited since the last look,
 * and those a ring or discard session kept back until the end. */
static int append_closing_threads(Recorder *rec, const char **ret_step) {
        int r;

        *ret_step = "cannot describe the exited threads";
        r = recorder_describe_gone_threads(rec);
        if (r < 0)
                return r;
        *ret_step = "cannot write the kept process tree";
        return process_tree_builder_write_kept(rec->processes, write_process_tree, &rec->writer);
}

int recorder_append_ending(Recorder *rec, const char *what, const char **ret_step) {
        int r;

        *ret_step = "cannot add the annotations and warnings";
        r = recorder_append_annotations(rec);
        if (r < 0)
                return r;
        *ret_step = "cannot mark the end on the tracebus track";
        r = service_tracks_append_instant(&rec->writer, now_ns(CLOCK_BOOTTIME), what);
        if (r < 0)
                return r;
        *ret_step = "cannot add the closing clock snapshot";
        return recorder_append_periodic_snapshot(rec, /* force= */ true);
}

/* The statistics that close the trace. FtraceStats only where linux.ftrace ran, as
 * Perfetto's traced_probes writes them. */
static int append_closing_stats(Recorder *rec, const char **ret_step) {
        int r;

        *ret_step = "cannot sample the CPUs' buffer stats";
        r = recorder_sample_cpu_stats(rec);
        if (r < 0)
                return r;
        r = recorder_append_ending(rec, "stopped", ret_step);
        if (r < 0)
                return r;
        *ret_step = "cannot add the TraceStats";
        r = append_trace_stats(rec, &rec->writer);
        if (r < 0)
                return r;
        *ret_step = "cannot add the closing FtraceStats";
        return rec->parser ? append_ftrace_stats(rec, &rec->writer, /* end= */ true) : 0;
}

int recorder_write_closing_packets(Recorder *rec, const char **ret_step) {
        FtraceParserStats ps;
        int r;

        if (rec->parser) {
                ftrace_parser_get_stats(rec->parser, &ps);
                log_debug("Read %" PRIu64 " pages, %" PRIu64 " events.", ps.pages, ps.events);
        }

        r = append_closing_threads(rec, ret_step);
        if (r < 0)
                return r;
        r = append_closing_stats(rec, ret_step);
        if (r < 0)
                return r;
        *ret_step = "cannot add the end of tracing";
        r = recorder_append_service_event(rec, /* started= */ false, now_ns(CLOCK_BOOTTIME));
        if (r < 0)
                return r;
        *ret_step = "cannot write the end of the trace";
        return recorder_flush_output(rec);
}

/* The packets that make a snapshot load on its own (recorder-clone.c), written into @w,
 * the snapshot's own writer. They are the first packets on their sequences, and each
 * clears its sequence's incremental state. For threads: the trace's first /proc scan
 * went out with the trace's opening packets, which a snapshot lacks, so /proc is read
 * again; a ring or discard session also adds what it kept of the threads described
 * since then, including those that have exited. */
static int append_snapshot_processes(Recorder *rec, TraceWriter *w) {
        ProcessTreeBuilder *b = NULL;
        Tracebus__ProcessTree tree;
        int r;

        r = process_tree_builder_new(&b);
        if (r < 0)
                return r;
        process_tree_builder_set_limits(b, PROCESS_TREE_DEFAULT_MAX_ENTRIES, PROCESS_TREE_WRITE);
        process_tree_builder_set_view(b, rec->process_view);
        r = process_tree_builder_add_all(b);
        if (r >= 0 && process_tree_builder_n_entries(b) > 0) {
                tree = *process_tree_builder_tree(b);
                tree.has_collection_end_timestamp = true;
                tree.collection_end_timestamp = now_ns(CLOCK_BOOTTIME);
                r = write_process_tree(&tree, w);
        }
        process_tree_builder_free(b);
        if (r < 0 || rec->writer.mode == TRACE_WRITER_STREAM)
                return r < 0 ? r : 0;
        return process_tree_builder_write_kept(rec->processes, write_process_tree, w);
}

int recorder_append_snapshot_header(Recorder *rec, TraceWriter *w) {
        int r;

        r = append_clock_snapshot(rec, w);
        if (r >= 0)
                r = append_sync_marker(rec, w);
        if (r >= 0)
                r = append_trace_config_and_uuid(rec, w);
        if (r >= 0)
                r = append_system_info(rec, w);
        if (r >= 0 && wants_opening_ftrace_stats(rec))
                r = append_ftrace_stats(rec, w, /* end= */ false);
        if (r >= 0)
                r = service_tracks_append_descriptors(w, rec->n_cpus);
        /* Where the trace began: trace_processor keeps the events after it. */
        if (r >= 0)
                r = append_service_event(rec, w, /* started= */ true, rec->started_ns);
        if (r >= 0)
                r = append_snapshot_processes(rec, w);
        return r;
}

/* After the copy: what the session's buffers and the kernel's did so far, and a last
 * clock snapshot. */
int recorder_append_snapshot_trailer(Recorder *rec, TraceWriter *w) {
        int r = append_trace_stats(rec, w);

        if (r >= 0 && rec->parser)
                r = append_ftrace_stats(rec, w, /* end= */ true);
        return r < 0 ? r : append_clock_snapshot(rec, w);
}
