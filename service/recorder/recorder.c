/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "kernel/ksyms-cache.h"
#include "log.h"
#include "recorder-local.h"
#include "service-tracks.h"
#include "strv.h"

/* Unless the caller may see them, kernel addresses reach the trace as a keyed hash,
 * under a key of this trace's own that no one keeps: two traces cannot be matched up. */
static int hide_kernel_pointers(FtraceParser *parser, bool raw) {
        uint8_t key[FTRACE_ADDRESS_KEY_SIZE];

        if (raw)
                return 0;
        if (getrandom(key, sizeof(key), 0) != (ssize_t) sizeof(key))
                return -errno ?: -EIO;
        return ftrace_parser_hash_addresses(parser, key);
}

static int load_formats(Recorder *rec, TraceInstance *instance, char **events, bool kernel_pointers_raw) {
        _cleanup_free_ char *header = NULL;
        size_t len;
        int r;

        r = ftrace_parser_new(&rec->parser);
        if (r < 0)
                return r;
        r = hide_kernel_pointers(rec->parser, kernel_pointers_raw);
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
                return log_error_errno(n, "Failed to count the CPUs of %s: %m", trace_instance_name(instance));
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
        rec->read_since_stats = calloc(n, sizeof(uint64_t));
        if (!rec->pipe_fds || !rec->stats_fds || !rec->start_stats || !rec->last_stats ||
            !rec->lost_before_reset || !rec->bundles || !rec->read_since_stats ||
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
                        return log_error_errno(rec->stats_fds[cpu], "Failed to open the stats of CPU %d: %m", cpu);
                r = ftrace_bundle_new(cpu, compact_sched, &rec->bundles[cpu]);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The writer's data buffers, as the config's buffers; the default one when it has none. */
static int configure_buffers(Recorder *rec, const SessionConfig *config) {
        TraceWriterBufferConfig buffers[TRACE_WRITER_MAX_BUFFERS];

        if (config->n_buffers == 0)
                return 0;
        assert(config->n_buffers <= TRACE_WRITER_MAX_BUFFERS);
        for (size_t i = 0; i < config->n_buffers; i++)
                buffers[i] = (TraceWriterBufferConfig) {
                        .capacity = (size_t) config->buffers[i].size_kb * 1024u,
                        .discard = config->buffers[i].discard,
                };
        return trace_writer_set_buffers(&rec->writer, buffers, config->n_buffers, config->ftrace_buffer);
}

/* How the worker drains and writes: its periods, thresholds and the writer's mode. */
static int recorder_configure(Recorder *rec, const SessionConfig *config, int output_fd) {
        size_t ftrace_kb = config->n_buffers > 0 ? config->buffers[config->ftrace_buffer].size_kb : config->trace_buffer_kb;

        rec->drain_period_ms = config->drain_period_ms;
        /* flush_period_ms: the recorder's flush is its drain (and, writing into the file,
         * its write): at least that often. */
        if (config->flush_period_ms > 0)
                rec->drain_period_ms = MIN(rec->drain_period_ms, config->flush_period_ms);
        rec->buffer_size_kb = config->buffer_size_kb;
        rec->compress = config->compress;
        rec->symbolize_ksyms = config->symbolize_ksyms && config->events;
        rec->ksyms_retain = config->ksyms_retain;
        /* write_into_file: whole packets every file_write_period_ms, so the file is valid
         * after every write, and at once when the buffer is full: a long trace loses
         * nothing. Otherwise the buffer is a ring (or discards when full) written at the end. */
        rec->write_period_ns = config->write_into_file ?
                (uint64_t) config->file_write_period_ms * 1000000ull : UINT64_MAX;
        if (config->write_into_file && config->flush_period_ms > 0)
                rec->write_period_ns = MIN(rec->write_period_ns,
                                           (uint64_t) MAX(config->flush_period_ms, SESSION_MIN_WRITE_PERIOD_MS) * 1000000ull);
        rec->disable_clock_snapshotting = config->disable_clock_snapshotting;
        rec->disable_trace_config = config->disable_trace_config;
        rec->disable_system_info = config->disable_system_info;
        rec->disable_service_events = config->disable_service_events;
        rec->snapshot_interval_ns = (uint64_t) (config->snapshot_interval_ms ?: SESSION_DEFAULT_SNAPSHOT_INTERVAL_MS) * 1000000ull;
        rec->has_trace_uuid = config->has_trace_uuid;
        rec->trace_uuid_msb = config->trace_uuid_msb;
        rec->trace_uuid_lsb = config->trace_uuid_lsb;
        rec->stop_timeout_ns = config->stop_timeout_ms ? (uint64_t) config->stop_timeout_ms * 1000000ull : UINT64_MAX;
        rec->write_threshold = (size_t) config->trace_buffer_kb * 1024u;
        /* A bundle holds at most 1/16 of the ftrace buffer in raw pages (and 32 pages). */
        rec->pages_per_bundle = (unsigned) MIN((size_t) MAX_PAGES_PER_BUNDLE,
                                               MAX(ftrace_kb * 1024u / 16 / 4096, (size_t) 1));
        trace_writer_init(&rec->writer, output_fd,
                          config->write_into_file ? TRACE_WRITER_STREAM :
                          config->discard_when_full ? TRACE_WRITER_DISCARD : TRACE_WRITER_RING,
                          (size_t) config->trace_buffer_kb * 1024u, config->max_file_size_bytes);
        /* The session's config, which owns the filter, outlives its recorder. */
        trace_writer_set_filter(&rec->writer, config->trace_filter);
        return configure_buffers(rec, config);
}

/* The FtraceConfig options the worker carries out: the print filter in the parser, the
 * clock the bundles name. The buffer watermark is recorder-wake.c's. */
static int recorder_apply_ftrace_options(Recorder *rec, const SessionConfig *config) {
        int r;

        /* A session of polling data sources only has no instance, hence no parser. */
        if (!rec->parser)
                return 0;
        r = ftrace_parser_set_print_filter(rec->parser, config->print_rules, config->n_print_rules);
        if (r < 0)
                return r;
        for (unsigned cpu = 0; config->mono_raw_clock && cpu < rec->n_cpus; cpu++)
                ftrace_bundle_set_clock(rec->bundles[cpu], FTRACE_CLOCK_MONO_RAW);
        return 0;
}

/* The process descriptions: how many are kept, and which are kept when the buffer
 * wraps or fills, follow the writer's mode; linux.process_stats' options; what of each
 * process the session's owner may see. */
static int setup_process_tree(Recorder *rec, const SessionConfig *config) {
        int r = process_tree_builder_new(&rec->processes);
        if (r < 0)
                return r;
        process_tree_builder_set_limits(rec->processes, config->max_process_entries ?: PROCESS_TREE_DEFAULT_MAX_ENTRIES,
                                        rec->writer.mode == TRACE_WRITER_STREAM ? PROCESS_TREE_WRITE :
                                        rec->writer.mode == TRACE_WRITER_RING ? PROCESS_TREE_KEEP_LATEST :
                                                                                PROCESS_TREE_KEEP_FIRST);
        process_tree_builder_set_options(rec->processes, config->process_tree.age,
                                         config->process_tree.skip_main_thread);
        rec->process_view = process_view_make(config->process_tree.owner_uid, config->process_tree.owner_sees_all);
        process_tree_builder_set_view(rec->processes, rec->process_view);
        rec->initial_dump = !config->process_tree.initial_dump_off;
        rec->on_demand = !config->process_tree.on_demand_off;
        return 0;
}

/* Every fd "none" and every lock ready, so that recorder_free() may run from here on. */
static void recorder_init_fds_and_locks(Recorder *rec) {
        rec->stop_fd = rec->done_fd = rec->wake_fd = -EBADF;
        rec->splice_pipe[0] = rec->splice_pipe[1] = -EBADF;
        rec->next_fd = rec->rotated_fd = rec->chunk_dir_fd = -EBADF;
        (void) pthread_mutex_init(&rec->next_lock, NULL);
        (void) pthread_mutex_init(&rec->annotations_lock, NULL);
        (void) pthread_mutex_init(&rec->drain_lock, NULL);
        (void) pthread_mutex_init(&rec->inbox_lock, NULL);
        (void) pthread_mutex_init(&rec->warnings_lock, NULL);
}

int recorder_new(const SessionConfig *config, TraceInstance *instance, int output_fd, Recorder **ret) {
        _cleanup_(recorder_freep) Recorder *rec = NULL;
        int r;

        assert(config);
        assert(output_fd >= 0);

        rec = calloc(1, sizeof(*rec));
        if (!rec) {
                safe_close(output_fd);
                return -ENOMEM;
        }
        rec->output_fd = output_fd;
        recorder_init_fds_and_locks(rec);
        r = recorder_configure(rec, config, output_fd);
        if (r >= 0)
                r = recorder_rotate_init(rec, config);
        if (r < 0)
                return r;

        rec->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        rec->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (rec->stop_fd < 0 || rec->done_fd < 0)
                return -errno;

        rec->page_size = (size_t) sysconf(_SC_PAGESIZE);
        rec->page = malloc(rec->page_size);
        if (!rec->page)
                return -ENOMEM;
        r = recorder_splice_init(rec);
        if (r < 0)
                return r;

        r = setup_process_tree(rec, config);
        if (r < 0)
                return r;

        rec->trace_config = tracebus__trace_config__unpack(NULL, config->trace_config_len, config->trace_config);
        if (!rec->trace_config)
                return -ENOMEM;
        r = recorder_warnings_init(rec, config);
        if (r < 0)
                return r;

        /* No instance: a config without ftrace events. The thread still runs for the
         * inbox, the snapshots and the end; it drains no CPU. */
        r = instance ? load_formats(rec, instance, config->events, config->kernel_pointers_raw) : 0;
        if (r < 0)
                return r;
        r = instance ? open_cpus(rec, instance, config->compact_sched) : 0;
        if (r < 0)
                return r;
        r = recorder_apply_ftrace_options(rec, config);
        if (r < 0)
                return r;
        r = recorder_wake_init(rec, config, instance);
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
        free(rec->read_since_stats);
        free(rec->page);
        safe_close(rec->splice_pipe[0]);
        safe_close(rec->splice_pipe[1]);
        free(rec->splice_buf);
        recorder_wake_done(rec);
        (void) pthread_mutex_destroy(&rec->drain_lock);
        (void) pthread_mutex_destroy(&rec->annotations_lock);
        recorder_inbox_free(rec);
        (void) pthread_mutex_destroy(&rec->inbox_lock);
        recorder_warnings_free(rec);
        ftrace_parser_free(rec->parser);
        ksyms_cache_put(rec->ksyms);
        process_tree_builder_free(rec->processes);
        free(rec->task_notes);
        if (rec->trace_config)
                tracebus__trace_config__free_unpacked(rec->trace_config, NULL);
        trace_writer_done(&rec->writer);
        safe_close(rec->output_fd);
        safe_close(rec->stop_fd);
        safe_close(rec->done_fd);
        recorder_rotate_free(rec);
        return mfree(rec);
}

void recorder_set_output_limits(Recorder *rec, uint64_t timeout_usec, TraceBudget *budget) {
        struct stat st;
        int flags;

        trace_writer_set_budget(&rec->writer, budget);
        rec->output_timeout_usec = timeout_usec;
        if (fstat(rec->output_fd, &st) < 0 || (flags = fcntl(rec->output_fd, F_GETFL)) < 0)
                return;
        /* A regular file is written as any file is; a pipe only when its own open file
         * description is non-blocking (output-fd.c reopens it so), or a wait could not
         * end. */
        if (S_ISSOCK(st.st_mode))
                trace_writer_set_output(&rec->writer, TRACE_OUTPUT_SOCKET, timeout_usec);
        else if (S_ISFIFO(st.st_mode) && (flags & O_NONBLOCK))
                trace_writer_set_output(&rec->writer, TRACE_OUTPUT_PIPE, timeout_usec);
}

int recorder_start(Recorder *rec, TraceInstance *instance) {
        uint64_t started;
        int r;

        assert(rec);
        assert(!rec->thread_started);

        r = recorder_append_opening_packets(rec);
        if (r < 0)
                return r;

        /* tracing_started must come before the first event, or trace_processor drops events. */
        started = rec->started_ns = now_ns(CLOCK_BOOTTIME);
        r = recorder_append_service_event(rec, /* started= */ true, started);
        if (r >= 0)
                r = service_tracks_append_instant(&rec->writer, started, "started");
        if (r < 0)
                return r;
        rec->last_snapshot_ns = now_ns(CLOCK_MONOTONIC);
        r = instance ? trace_instance_set_tracing(instance, true) : 0;
        if (r < 0)
                return log_error_errno(r, "Failed to switch tracing on in %s: %m", trace_instance_name(instance));

        r = -pthread_create(&rec->thread, NULL, recorder_thread_main, rec);
        if (r < 0) {
                if (instance)
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
