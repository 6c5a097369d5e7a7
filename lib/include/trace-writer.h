/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "deflate.h"
#include "trace-filter.h"
#include "trace.pb-c.h"

/*
 * Builds a Perfetto trace: each packet is framed as field 1 of the Trace message
 * (0x0a, varint length, TracePacket bytes) and written whole, so a file is a valid
 * trace after every write.
 *
 * Packets go into one of two regions. Metadata (clocks, system info, the config, process
 * and track descriptions, the first packet of each sequence) is never dropped. Data
 * (ftrace bundles, track events, polled counters) goes into one of the writer's data
 * buffers, TraceConfig.buffers as configured: each a FIFO of its own size that is either
 * written out as it goes (TRACE_WRITER_STREAM, write_into_file) or kept in memory until
 * the end, with its oldest packets overwritten when it is full (TRACE_WRITER_RING) or new
 * ones refused (TRACE_WRITER_DISCARD). So a ring buffer that wrapped many times still
 * opens with every name and clock, and a busy buffer never evicts a quiet one's packets.
 */

/* Sequence ids: 1 for the service's own packets, as Perfetto's service does, 2 for the
 * ftrace data, 3 for the process descriptions, 4 for the service's own tracks; then one
 * per polling data source, each a writer of its own as in Perfetto. */
enum {
        TRACE_SEQUENCE_SERVICE = 1,
        TRACE_SEQUENCE_FTRACE = 2,
        TRACE_SEQUENCE_PROCESSES = 3,
        TRACE_SEQUENCE_TRACKS = 4,
        TRACE_SEQUENCE_SYS_STATS = 5,      /* linux.sys_stats */
        TRACE_SEQUENCE_PROCESS_STATS = 6,  /* linux.process_stats */
        TRACE_SEQUENCE_SYSTEM_INFO = 7,    /* linux.system_info */
        TRACE_SEQUENCE_POWER = 8,          /* linux.sysfs_power */
        TRACE_SEQUENCE_JOURNALD = 9,       /* linux.systemd_journald */
        TRACE_SEQUENCE_PERF = 10,          /* linux.perf (perf) */
        _TRACE_SEQUENCE_MAX,
};

typedef enum TraceWriterMode {
        TRACE_WRITER_STREAM,
        TRACE_WRITER_RING,
        TRACE_WRITER_DISCARD,
} TraceWriterMode;

typedef struct TracePacketChunk TracePacketChunk;

/* Perfetto's kMaxBuffersPerConsumer. */
#define TRACE_WRITER_MAX_BUFFERS 128u

/* What one data buffer did: TraceStats.BufferStats. */
typedef struct TraceWriterBufferStats {
        uint64_t bytes_written;       /* accepted into the buffer */
        uint64_t packets_written;
        uint64_t bytes_read;          /* taken out of it into the output */
        uint64_t packets_read;
        uint64_t packets_overwritten; /* RING: oldest dropped for newer */
        uint64_t bytes_overwritten;
        uint64_t packets_discarded;   /* DISCARD: refused when full */
        uint64_t bytes_discarded;
        uint64_t write_wrap_count;    /* RING: times the buffer filled and began overwriting */
} TraceWriterBufferStats;

/* One data buffer. In a STREAM writer the capacity is what it holds between writes: the
 * caller writes once trace_writer_buffer_full() says so, and nothing is dropped. */
typedef struct TraceWriterBuffer {
        TraceWriterMode mode;
        size_t capacity;
        /* Framed data packets not written yet, oldest first: RING and DISCARD keep a
         * chunk per packet, to drop the oldest or refuse the newest; STREAM drops nothing
         * and appends to one buffer, whose memory stays for the next period. */
        TracePacketChunk *head, *tail;
        uint8_t *stream;
        size_t stream_allocated;
        size_t data_len;              /* bytes in the chunks, or in stream */
        bool wrapping;                /* RING: full since the last write */
        TraceWriterBufferStats stats;
} TraceWriterBuffer;

/* A buffer as TraceConfig.BufferConfig asks for it. */
typedef struct TraceWriterBufferConfig {
        size_t capacity;
        bool discard;                 /* fill_policy DISCARD; else RING_BUFFER */
} TraceWriterBufferConfig;

/* The writer's totals over all its buffers. */
typedef struct TraceWriterStats {
        uint64_t bytes_written;       /* into the output */
        uint64_t packets_overwritten; /* RING: oldest data dropped for newer */
        uint64_t bytes_overwritten;
        uint64_t events_overwritten;  /* ftrace events in those packets */
        uint64_t packets_discarded;   /* DISCARD: data refused when full */
        uint64_t bytes_discarded;
        uint64_t events_discarded;
} TraceWriterStats;

/* TraceStats.FilterStats: what the trace filter took in and gave out. */
typedef struct TraceWriterFilterStats {
        uint64_t input_packets;
        uint64_t input_bytes;
        uint64_t output_bytes;
        uint64_t errors;              /* malformed packets, dropped */
        uint64_t time_taken_ns;
} TraceWriterFilterStats;

/* Bytes that several writers, each in its own thread, may write together: a UID's quota
 * in the service's trace directory. A writer takes whole packets from it before writing
 * them and gives back what it could not write, so @used never passes @limit. */
typedef struct TraceBudget {
        uint64_t limit;                /* set before a writer takes from it, then fixed */
        _Atomic uint64_t used;
} TraceBudget;

/* How the output is written. A FILE blocks in write() as any file does; a PIPE (opened
 * O_NONBLOCK) and a SOCKET (sendmsg(MSG_DONTWAIT)) are waited for with poll() at most
 * timeout_usec without progress, after which the flush fails with -ETIMEDOUT. */
typedef enum TraceWriterOutput {
        TRACE_OUTPUT_FILE,
        TRACE_OUTPUT_PIPE,
        TRACE_OUTPUT_SOCKET,
} TraceWriterOutput;

typedef struct TraceWriter {
        int fd;                       /* not owned */
        TraceWriterOutput output;
        uint64_t timeout_usec;        /* PIPE, SOCKET: UINT64_MAX waits forever */
        TraceBudget *budget;          /* not owned; NULL: none */
        TraceWriterMode mode;         /* STREAM, or the first buffer's policy */
        uint64_t max_bytes;           /* the file's size limit, 0: none */

        uint8_t *meta;                /* framed metadata packets not written yet */
        size_t meta_len, meta_allocated;
        /* The data buffers: @single until trace_writer_set_buffers() allocates them. */
        TraceWriterBuffer *buffers;
        size_t n_buffers;
        TraceWriterBuffer single;
        uint32_t ftrace_buffer;       /* where ftrace bundles go */
        size_t data_len;              /* bytes in all data buffers */
        uint8_t *deflated;            /* a packet being compressed */
        size_t deflated_allocated;

        bool sequence_started[_TRACE_SEQUENCE_MAX];
        int limit_error;              /* -EFBIG (max_bytes) or -EDQUOT (budget) once reached */
        TraceWriterStats stats;

        /* TraceConfig.trace_filter (lib/trace/trace-writer-filter.c). */
        const TraceFilter *filter;    /* not owned; NULL: packets kept as they are */
        uint8_t *filter_in, *filter_out; /* a packet packed, then filtered */
        size_t filter_in_allocated, filter_out_allocated;
        size_t filter_in_len;         /* the last ftrace packet packed into filter_in */
        TraceWriterFilterStats filter_stats;

        /* Snapshots (lib/trace/trace-writer-snapshot.c): a snapshot's data, shared with the
         * writer it was taken of, written after the first @shared_at bytes of meta. */
        TracePacketChunk **shared;
        size_t n_shared, shared_allocated;
        size_t shared_at;
} TraceWriter;

/* A writer with one data buffer of @capacity bytes. */
void trace_writer_init(TraceWriter *w, int fd, TraceWriterMode mode, size_t capacity, uint64_t max_bytes);
void trace_writer_done(TraceWriter *w);
/* Before anything is appended: @n (1..TRACE_WRITER_MAX_BUFFERS) data buffers instead of
 * the one of trace_writer_init(), each with its own size and fill policy (ignored by a
 * STREAM writer); ftrace bundles go into buffer @ftrace_buffer. */
int trace_writer_set_buffers(TraceWriter *w, const TraceWriterBufferConfig *buffers, size_t n,
                             uint32_t ftrace_buffer);
/* STREAM: a buffer holds its capacity or more, time to write. */
bool trace_writer_buffer_full(const TraceWriter *w);
/* A PIPE or SOCKET output (see TraceWriterOutput) with its write deadline. */
void trace_writer_set_output(TraceWriter *w, TraceWriterOutput output, uint64_t timeout_usec);
/* Every byte written from now on is taken from @budget (shared, not owned). */
void trace_writer_set_budget(TraceWriter *w, TraceBudget *budget);

/* Every packet appended from now on goes through @filter (not owned, outlives @w) before
 * it is kept, metadata and data alike, as Perfetto filters every packet it reads out.
 * trace_writer_reserve_ftrace_bundle() then fails with -EOPNOTSUPP: the bundle must be
 * whole to be filtered, so callers use trace_writer_append_ftrace_bundle(). */
void trace_writer_set_filter(TraceWriter *w, const TraceFilter *filter);

/* Sets the trusted sequence id on @packet (and the first-packet flags on the first packet
 * of that sequence, which then always goes into the metadata), packs and keeps it. */
int trace_writer_append_meta(TraceWriter *w, Tracebus__TracePacket *packet, uint32_t sequence_id);
int trace_writer_append_data(TraceWriter *w, Tracebus__TracePacket *packet, uint32_t sequence_id);
/* The same, into data buffer @buffer (an index below n_buffers, else -EINVAL). */
int trace_writer_append_data_to(TraceWriter *w, uint32_t buffer, Tracebus__TracePacket *packet,
                                uint32_t sequence_id);

/* A TracePacket already packed and stamped by its caller (a producer's, whose sequence
 * id and flags are its own), kept as it is in data buffer @buffer: -EINVAL past n_buffers. */
int trace_writer_append_packed_to(TraceWriter *w, uint32_t buffer, const uint8_t *packet, size_t len);

/* Keeps a TracePacket carrying an already-encoded FtraceEventBundle of @n_events, as data. */
int trace_writer_append_ftrace_bundle(TraceWriter *w, const uint8_t *bundle, size_t len, size_t n_events);
/* The same, with the bundle's @len bytes left for the caller to write at *ret before the
 * next call into @w (saves a copy). *ret is NULL when a full discard-mode writer drops it. */
int trace_writer_reserve_ftrace_bundle(TraceWriter *w, size_t len, size_t n_events, uint8_t **ret);

/* The same packet as trace_writer_append_ftrace_bundle(), as Perfetto's compressed_packets:
 * a zlib stream in which the bundle's @coded spans are entropy coded and the rest stored. */
int trace_writer_append_ftrace_bundle_deflated(TraceWriter *w, const uint8_t *bundle, size_t len,
                                               const DeflateSpan *coded, size_t n_coded, size_t n_events);

/* Writes the metadata, then the data, oldest first. With max_bytes set, writes whole
 * packets up to the limit and returns -EFBIG once the next one would not fit; with a
 * budget, the same with -EDQUOT once the budget is spent. Either way the output ends at
 * a packet boundary. -ETIMEDOUT: a PIPE or SOCKET output took nothing for timeout_usec. */
int trace_writer_flush(TraceWriter *w);

/* Bytes kept in memory, not written yet. */
size_t trace_writer_pending(const TraceWriter *w);

/* Rotation: from now on the writer writes into @fd (not owned), a FILE output
 * until trace_writer_set_output() says otherwise, as a new trace: the first packet of
 * every sequence marks it first again and clears its incremental state. Call it with
 * nothing pending (after trace_writer_flush()). */
void trace_writer_begin_output(TraceWriter *w, int fd);

/* Encoding functions, exposed for the unit tests. */
size_t varint_encode(uint64_t v, uint8_t out[static 10]);

/* Snapshots (lib/trace/trace-writer-snapshot.c): a self-contained copy of a running
 * writer, for Session.Clone, triggers' CLONE_SNAPSHOT and rotation. A snapshot is itself
 * a TraceWriter with no output yet, whose metadata region takes everything in order:
 *   trace_writer_snapshot_init(&snap);
 *   ...the header packets, appended with trace_writer_append_meta(&snap, ...): each
 *      sequence's first packet in the snapshot clears its incremental state...
 *   trace_writer_snapshot_copy(&snap, &live, &events);   (live's packets, as they are)
 *   ...the closing packets (TraceStats)...
 *   trace_writer_snapshot_write(&snap, fd, ...);          (on any thread: snap is its own)
 *   trace_writer_done(&snap);
 * The copy is in memory: the live writer goes on at once, and the write may be slow. */
void trace_writer_snapshot_init(TraceWriter *snap);
/* Appends @w's pending metadata, then every data buffer's packets, oldest first: a ring's
 * or discard buffer's packets are shared, not copied (taking them costs a pointer each),
 * and @w's thread goes on appending and dropping as before. Once per snapshot. Adds the
 * ftrace events in them to *ret_events (may be NULL). -ENOMEM, -EALREADY. */
int trace_writer_snapshot_copy(TraceWriter *snap, const TraceWriter *w, uint64_t *ret_events);
/* Writes @snap into @fd (not taken) as @output, within @max_bytes (0: none) and @budget
 * (may be NULL), as trace_writer_flush() does; its bytes_written says how much went out. */
int trace_writer_snapshot_write(TraceWriter *snap, int fd, TraceWriterOutput output, uint64_t timeout_usec,
                                TraceBudget *budget, uint64_t max_bytes);
