/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "config/session-config.h"
#include "trace-writer.h"
#include "kernel/tracefs-instance.h"

/*
 * The recorder: a worker thread per session that drains the instance's per-CPU
 * ring buffers every drain period, decodes the pages and writes Perfetto packets
 * into the output fd. It never touches the bus or the event loop; it reports back
 * only through its counters (atomics) and by making done_fd readable when it ends.
 */

typedef enum RecorderEnd {
        RECORDER_END_STOPPED,       /* recorder_stop() was called */
        RECORDER_END_SIZE_REACHED,  /* max_file_size_bytes */
        RECORDER_END_OUTPUT_ERROR,  /* the output fd failed (ENOSPC, EPIPE, ...) */
        RECORDER_END_READ_ERROR,    /* a pass failed: reading tracefs, or adding a packet (logged) */
        RECORDER_END_QUOTA,         /* the owner's trace-directory quota is used up */
        RECORDER_END_OUTPUT_STALLED, /* a pipe or socket took nothing for the write deadline */
} RecorderEnd;

typedef struct Recorder Recorder;

typedef struct RecorderStats {
        uint64_t events;              /* events in the trace (recorded, not overwritten) */
        uint64_t bytes_written;       /* bytes written into the output */
        uint64_t events_lost;         /* all of the two below */
        uint64_t kernel_events_lost;  /* overruns and drops the kernel reports, over all CPUs */
        uint64_t events_overwritten;  /* recorded, then overwritten in (or refused by) the service's buffer */
} RecorderStats;

/* Prepares a recorder for @instance (whose events must already be enabled) writing into
 * @output_fd, which the recorder takes over. Tracing is not switched on yet. @instance
 * is NULL for a config without ftrace events: then only the service's packets and what
 * recorder_submit_packet() hands over are recorded. */
int recorder_new(const SessionConfig *config, TraceInstance *instance, int output_fd, Recorder **ret);
Recorder *recorder_free(Recorder *r);

/* Before recorder_start(): a pipe (opened O_NONBLOCK) or a socket output waits at most
 * @timeout_usec for its reader; every byte written is taken from @budget (may be NULL;
 * not owned: it must outlive the recorder). A caller's file (@budget NULL) on a
 * filesystem whose writes may never end (FUSE, a network filesystem) is written through
 * a relay process, within the same deadline, counted for @uid (output-relay.h). */
int recorder_set_output_limits(Recorder *r, uint64_t timeout_usec, TraceBudget *budget, uid_t uid);
DEFINE_TRIVIAL_CLEANUP_FUNC(Recorder *, recorder_free);

/* Writes the trace's opening packets, switches tracing on (@instance may be NULL, as
 * for recorder_new()) and starts the thread. */
int recorder_start(Recorder *r, TraceInstance *instance);

/* Asks the thread to drain what is left, finish the trace and end. Tracing must already
 * be switched off, so that the final drain empties the buffers. */
void recorder_stop(Recorder *r);

/* Readable once the thread has ended (then call recorder_join()). */
int recorder_done_fd(const Recorder *r);

/* Waits for the thread, closes the output and returns how it ended. */
RecorderEnd recorder_join(Recorder *r, int *ret_error);

void recorder_get_stats(const Recorder *r, RecorderStats *ret);

/* Marks a moment (a static string: "detached", "attached") on the trace's tracebus track. */
void recorder_annotate(Recorder *r, const char *name);

/* What other threads (the pollers of service/sources/poller.c) have the recorder write: a packed
 * TracePacket with no sequence id, copied and appended by the recorder's thread on its
 * next pass under @sequence_id (a TRACE_SEQUENCE_*), into @target_buffer's data, or into
 * the metadata that is never overwritten when @meta. At most RECORDER_MAX_SUBMITTED_BYTES
 * wait at a time: beyond that a packet is refused with -ENOBUFS and counted, so a stalled
 * recorder cannot make a poller grow the service's memory. Thread-safe. */
#define RECORDER_MAX_SUBMITTED_BYTES (8u * 1024u * 1024u)
int recorder_submit_packet(Recorder *r, uint32_t sequence_id, uint32_t target_buffer, bool meta,
                           const void *packet, size_t len);
/* The same for a packet an app wrote (service/producers/): already packed and validated,
 * @stamp (its trusted fields and sequence id) appended to it as it is copied, kept as it is
 * in @target_buffer's data. Bounded and counted with the packets above. Thread-safe. */
int recorder_submit_stamped_packet(Recorder *r, uint32_t target_buffer, const void *packet, size_t len,
                                   const void *stamp, size_t stamp_len);
/* Packets refused by recorder_submit_packet() so far. */
uint64_t recorder_submitted_dropped(Recorder *r);

/* A warning from any thread (a poller: "no battery: linux.sysfs_power skipped"), printf
 * format: written into the trace (an instant on the tracebus track) on the worker's next
 * pass, and taken by the session on the event loop (recorder_take_warnings(), at least
 * once a second) into its Warnings. At most SESSION_MAX_WARNINGS per recorder; the rest
 * are counted. Thread-safe; -ENOMEM or 0. */
int recorder_warn(Recorder *r, const char *fmt, ...) _printf_(2, 3);
/* For the event loop: the warnings since the last call (NULL if none), and in
 * *ret_dropped how many were left out since. */
char **recorder_take_warnings(Recorder *r, size_t *ret_dropped);
/* Puts a warning the session made on the event loop (session_warn()) into the trace. */
int recorder_trace_warning(Recorder *r, const char *text);

/* Rotation (recorder-rotate.c): with RotateEveryMs or RotateBytes, the trace is
 * written as chunks, each a trace that loads alone: at the end of a drain pass the
 * chunk gets its closing clock snapshot, then the next output gets the opening packets
 * again (clocks, system info, the config, track descriptors, every live process and
 * thread), each sequence's incremental state cleared. Every event goes into exactly one
 * chunk. The next chunk's output is a file the recorder creates in the trace directory
 * (recorder_set_chunk_dir()), or an fd handed over ahead (recorder_set_next_output());
 * without one the current chunk goes on, with a warning. */
bool recorder_rotates(const Recorder *r);
/* Chunks as DIR_FD/BASE.N, N from 1 (chunk 0 is the output the recorder was made with),
 * owned by @uid, the oldest beyond RotateKeep deleted. Takes @dir_fd, also on failure. */
int recorder_set_chunk_dir(Recorder *r, int dir_fd, const char *base, uid_t uid);
/* The output of the next chunk (taken; replaces one not used yet). -ENOTCONN when the
 * recorder does not rotate or creates its chunks itself. Thread-safe. */
int recorder_set_next_output(Recorder *r, int fd);
/* Readable after each rotation (read it to re-arm); recorder_chunk_index() then says
 * which chunk is being written. */
int recorder_rotated_fd(const Recorder *r);
uint32_t recorder_chunk_index(const Recorder *r);

/* Snapshots (recorder-clone.c): a snapshot of the session's data so far. The caller
 * (service/core/session-clone.c) fills in done_fd and keeps @c until done_fd has been
 * written. The worker drains the kernel's buffers at once, then copies every packet its
 * writer holds, framed by a snapshot's own opening and closing packets, into c->snapshot
 * (a writer of its own, for trace_writer_snapshot_write() on another thread), and
 * writes done_fd. The recording goes on meanwhile: the kernel's buffers hold the events
 * that arrive during the few ms of the copy. */
typedef struct RecorderClone {
        int done_fd;                  /* an eventfd, the caller's */
        /* Set by the worker before done_fd is written: */
        int error;                    /* 0, -ENOMEM, -ECANCELED (the recorder ended first) */
        TraceWriter snapshot;
        uint64_t events;              /* ftrace events in the copy */
        uint64_t copy_ns;             /* the worker's time on it, the drain included */
        bool streamed;                /* the session's writer is a STREAM: its buffers hold little */
} RecorderClone;

/* One request at a time per recorder: -EBUSY while another waits. */
int recorder_clone(Recorder *r, RecorderClone *c);
/* Takes back @c if the worker has not started on it (returns true): then done_fd is
 * never written. Otherwise the worker finishes it. */
bool recorder_clone_cancel(Recorder *r, RecorderClone *c);
/* "Drain now". The worker sleeps until a buffer passes its watermark (a
 * ring session reads nothing before Stop otherwise): this wakes it to drain every CPU's
 * buffer into the writer at once, then to call @callback(r, writer, @userdata) on the
 * worker thread, the only one that may touch the writer (a clone copies it there). The
 * callback must not block for long; it runs once, or never if the recorder ends first
 * (then it is called with writer NULL from recorder_free(), on the caller's thread).
 * At most RECORDER_MAX_DRAIN_REQUESTS wait at a time: -EBUSY beyond. Thread-safe. */
#define RECORDER_MAX_DRAIN_REQUESTS 8
typedef void (*RecorderDrainCallback)(Recorder *r, TraceWriter *writer, void *userdata);
int recorder_request_drain(Recorder *r, RecorderDrainCallback callback, void *userdata);
/* How many times the worker woke so far (tests: an idle session's worker sleeps). */
uint64_t recorder_wakeups(const Recorder *r);
