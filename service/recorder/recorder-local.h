/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The recorder's internals, shared by its files: recorder.c (setting up, starting and
 * ending), recorder-thread.c (the worker: the drain loop), recorder-drain.c (Stop's
 * parallel final drain), recorder-wake.c (what wakes the worker), recorder-packets.c
 * (the service's own packets), recorder-stats.c (the kernel's counters, the live stats),
 * recorder-inbox.c (packets from other threads), recorder-warnings.c, recorder-rotate.c
 * (chunks) and recorder-clone.c (snapshots). */

#include <pthread.h>

#include "ftrace-parser.h"
#include "kernel/process-scan.h"
#include "recorder.h"
#include "time-util.h"
#include "trace-writer.h"

/* At most this many pages per CPU in one pass, so one busy CPU cannot starve the others;
 * a CPU that hit the bound is drained again right away. */
#define MAX_PAGES_PER_CPU_PER_PASS 256
#define MAX_PAGES_PER_BUNDLE 32

typedef struct RecorderDrainRequest {
        RecorderDrainCallback callback;
        void *userdata;
} RecorderDrainRequest;

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
        /* The drain's pipe for splice() of whole pages (recorder-thread.c), and where a
         * pipe's worth of them is read into; splice_pipe[0] < 0: read() only. */
        int splice_pipe[2];
        uint8_t *splice_buf;
        size_t splice_size;

        ProcessTreeBuilder *processes;
        ProcessView process_view;     /* what of each process the session's owner may see */
        bool initial_dump, on_demand;  /* linux.process_stats's quirks, both on by default */
        FtraceTaskNote *task_notes;   /* worker: the task notes of all CPUs in one pass */
        size_t task_notes_allocated;

        /* Moments the main thread asks to mark on the tracebus track (detached, attached). */
        pthread_mutex_t annotations_lock;
        struct { uint64_t timestamp; const char *name; } annotations[16];
        size_t n_annotations;

        /* Packets other threads submitted (recorder-inbox.c), oldest first. */
        pthread_mutex_t inbox_lock;
        struct SubmittedPacket *inbox_head, *inbox_tail;
        size_t inbox_bytes;
        uint64_t inbox_dropped;

        /* Worker-only state for the service tracks and the loss accounting. */
        uint64_t *lost_reported;      /* per CPU, what the lost counter track last said */
        unsigned *bundle_pages;       /* per CPU, pages in the current bundle */
        unsigned pages_per_bundle;
        double *fill_reported;        /* per CPU, percent */
        uint64_t last_stats_ns;       /* CLOCK_MONOTONIC: the last sample of the CPUs' stats */
        uint64_t lost_pages_sampled;  /* the parser's lost pages at that sample */
        uint64_t *read_since_stats;   /* per CPU, events parsed since that sample */
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

        /* Warnings (recorder-warnings.c): the config's warnings and the ftrace setup errors,
         * written into the opening packets; and the warnings of other threads
         * (recorder_warn()), kept twice: once for the session, taken on the event loop,
         * and once for the trace, written by the worker. */
        char **setup_warnings, **unknown_events, **failed_events, **atrace_errors;
        pthread_mutex_t warnings_lock;
        char **warnings_for_session, **warnings_for_trace;
        size_t n_warned, n_warnings_dropped;
        /* ftgraph: symbolize_ksyms. The table is read on the worker (ksyms-cache.c). */
        bool symbolize_ksyms, ksyms_retain;
        Ksyms *ksyms;
        /* The TraceConfig's builtin_data_sources, trace_uuid and data_source_stop_timeout_ms. */
        bool disable_clock_snapshotting, disable_trace_config, disable_system_info, disable_service_events;
        uint64_t snapshot_interval_ns;
        bool has_trace_uuid;
        int64_t trace_uuid_msb, trace_uuid_lsb;
        uint64_t stop_timeout_ns;     /* the final drain ends after this, data left or not */
        /* Rotation (recorder-rotate.c): the trace written as chunks FILE.0, FILE.1, ...,
         * each of which loads alone. */
        uint64_t rotate_every_ns, rotate_bytes;  /* both 0: no rotation */
        uint32_t rotate_keep;                    /* 0: keep every chunk */
        uint64_t chunk_started_ns;               /* CLOCK_MONOTONIC */
        uint64_t chunk_start_bytes;              /* writer.stats.bytes_written then */
        _Atomic uint32_t chunk_index;            /* the chunk being written */
        bool next_missing_warned;                /* for this chunk */
        pthread_mutex_t next_lock;
        int next_fd;                             /* SetNextOutput's, under next_lock; -EBADF: none */
        int rotated_fd;                          /* eventfd: worker -> loop, after each rotation */
        int chunk_dir_fd;                        /* the trace directory's chunks: the UID's directory */
        char *chunk_base;                        /* their name without ".N" */
        uid_t chunk_uid;
        /* With RotateKeep there: the last RotateKeep + 1 chunks' files and what was written
         * into each, so that deleting one gives back to the quota no more than it charged,
         * whatever the user put under its name since. */
        struct RecorderChunkFile { ino_t ino; uint64_t bytes; } *chunk_files;
        uint64_t output_timeout_usec;            /* a pipe or socket chunk's write deadline */
        size_t max_process_entries;
        bool process_age, process_skip_main;
        /* The snapshot asked for (recorder-clone.c), served by the worker after its next
         * drain. */
        _Atomic(RecorderClone *) clone_request;
        uint64_t started_ns;          /* CLOCK_BOOTTIME: tracing_started, for snapshots */

        /* Waking (recorder-wake.c, recorder-drain.c): the worker sleeps in poll() on
         * stop_fd, wake_fd and, with a watermark, every CPU's trace_pipe_raw, which polls
         * readable once the CPU's buffer passes the instance's buffer_percent (Linux 6.9+).
         * It wakes on a period only for what asks for one: drain_period_ms or
         * flush_period_ms (periodic_drain), file_write_period_ms, snapshot_interval_ms. */
        int wake_fd;                  /* other threads -> worker: inbox, annotations, warnings, drains */
        struct pollfd *poll_fds;      /* stop_fd, wake_fd, then the pipes when watermark */
        size_t n_poll_fds;
        bool watermark, periodic_drain;
        uint64_t last_drain_ns;
        uint64_t pages_read;          /* worker: pages read so far */
        uint64_t data_read;           /* worker: bytes of events in them */
        bool busy;                    /* the last pass read a page of events or more: drain on the period */
        unsigned stop_drain_threads;  /* CPUs the final drain reads at once */
        pthread_mutex_t drain_lock;
        RecorderDrainRequest drain_requests[RECORDER_MAX_DRAIN_REQUESTS];
        size_t n_drain_requests;
        _Atomic uint64_t wakeups;     /* the worker's passes, for tests and bench/ */
};

/* recorder-packets.c: the service's packets (sequence 1) and the process tree. */
int recorder_append_opening_packets(Recorder *rec);
int recorder_append_service_event(Recorder *rec, bool started, uint64_t timestamp);
int recorder_append_periodic_snapshot(Recorder *rec, bool force);
int recorder_append_annotations(Recorder *rec);
int recorder_append_process_tree(Recorder *rec);
int recorder_describe_all_processes(Recorder *rec);
/* Gone threads still waiting for the kernel's saved tables: a last look, before a trace
 * or a chunk of it ends. */
int recorder_describe_gone_threads(Recorder *rec);
/* On failure, *ret_step says which step failed. */
int recorder_write_closing_packets(Recorder *rec, const char **ret_step);
/* The end of the trace or of a chunk: the pending annotations and warnings, an instant
 * named @what on the tracebus track, and a last clock snapshot. */
int recorder_append_ending(Recorder *rec, const char *what, const char **ret_step);

/* recorder-inbox.c: packets from other threads, appended by the worker; freed at the end. */
int recorder_append_submitted(Recorder *rec);
void recorder_inbox_free(Recorder *rec);

/* recorder-warnings.c */
int recorder_warnings_init(Recorder *rec, const SessionConfig *config);
void recorder_warnings_free(Recorder *rec);
int recorder_append_setup_warnings(Recorder *rec);
int recorder_append_warnings(Recorder *rec);

/* recorder-stats.c */
int recorder_sample_cpu_stats(Recorder *rec);
/* Whether a drain pass samples the CPUs' stats first; @urgent: Stop, a watermark, a
 * clone or a drain asked for. */
bool recorder_cpu_stats_due(Recorder *rec, bool urgent);
void recorder_publish_stats(Recorder *rec);

/* recorder-rotate.c */
int recorder_rotate_init(Recorder *rec, const SessionConfig *config);
void recorder_rotate_free(Recorder *rec);
/* When a chunk is due by time (CLOCK_MONOTONIC), for the worker's sleep; UINT64_MAX: never. */
uint64_t recorder_rotate_next_ns(const Recorder *rec);
/* After a pass: starts a new chunk when one is due and its output is there. On failure,
 * *ret_step says which step of the rotation failed. */
int recorder_rotate_if_due(Recorder *rec, const char **ret_step);

/* recorder-thread.c */
int recorder_flush_output(Recorder *rec);
/* Ends every CPU's open bundle (a stream written on a period keeps them open across
 * passes): before a chunk ends, so that what was drained before the cut is in it. */
int recorder_end_bundles(Recorder *rec);
void *recorder_thread_main(void *userdata);

/* recorder-packets.c: a snapshot's own opening and closing packets, written into its
 * writer @w. recorder-clone.c: the request the worker serves after a drain. */
int recorder_append_snapshot_header(Recorder *rec, TraceWriter *w);
int recorder_append_snapshot_trailer(Recorder *rec, TraceWriter *w);
void recorder_serve_clone(Recorder *rec);
void recorder_cancel_clone(Recorder *rec);
/* One page read from @cpu's pipe (@n bytes) into its bundle. */
int recorder_take_page(Recorder *rec, unsigned cpu, const uint8_t *page, size_t n);
/* The drain's splice() pipe, or none (read() then takes every page). */
int recorder_splice_init(Recorder *rec);

/* recorder-wake.c: what the worker waits for and what woke it. */
typedef enum RecorderWake {
        RECORDER_WAKE_STOP = 1 << 0,
        RECORDER_WAKE_INBOX = 1 << 1,       /* wake_fd: the inbox, annotations, warnings, drains */
        RECORDER_WAKE_WATERMARK = 1 << 2,   /* a CPU's buffer passed buffer_percent */
} RecorderWake;
int recorder_wake_init(Recorder *rec, const SessionConfig *config, TraceInstance *instance);
void recorder_wake_done(Recorder *rec);
void recorder_wake(Recorder *rec);
unsigned recorder_wait(Recorder *rec);
bool recorder_drain_due(Recorder *rec);
/* The pass's drain requests, taken: their callbacks to run after the drain. */
size_t recorder_take_drain_requests(Recorder *rec, RecorderDrainRequest ret[static RECORDER_MAX_DRAIN_REQUESTS]);

/* recorder-drain.c: Stop's final drain reads the CPUs' pipes on several threads at once,
 * each CPU into a staging buffer of its own; the worker then parses them CPU after CPU
 * as it parses a pipe (one bundle sequence per CPU, the writer touched by one thread). */
int recorder_drain_parallel(Recorder *rec);
