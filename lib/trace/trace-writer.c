/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "deflate.h"
#include "fd-util.h"
#include "macro.h"
#include "pb-wire.h"
#include "trace-writer-local.h"

/* Trace.packet is field 1, length-delimited: (1 << 3) | 2. */
#define TRACE_PACKET_TAG 0x0a
/* TracePacket fields written by hand around a pre-encoded bundle. */
#define TAG_FTRACE_EVENTS 0x0a                  /* field 1, length-delimited */
#define TAG_SEQUENCE_ID 0x50                    /* field 10, varint */
/* TracePacket.compressed_packets, field 50, length-delimited. */
#define FIELD_COMPRESSED_PACKETS 50
#define SEQ_INCREMENTAL_STATE_CLEARED 1

size_t varint_encode(uint64_t v, uint8_t out[static 10]) {
        return (size_t) (pb_varint_encode(out, v) - out);
}

void trace_writer_init(TraceWriter *w, int fd, TraceWriterMode mode, size_t capacity, uint64_t max_bytes) {
        *w = (TraceWriter) {
                .fd = fd,
                .mode = mode,
                .max_bytes = max_bytes,
        };
        trace_writer_buffers_init(w, mode, capacity);
}

void trace_writer_done(TraceWriter *w) {
        w->meta = mfree(w->meta);
        w->meta_len = w->meta_allocated = 0;
        w->deflated = mfree(w->deflated);
        w->deflated_allocated = 0;
        trace_writer_buffers_done(w);
        trace_writer_filter_done(w);
        trace_writer_snapshot_release(w);
}

size_t trace_writer_pending(const TraceWriter *w) {
        return w->meta_len + w->data_len;
}

static size_t frame_header(uint8_t out[static 11], size_t packet_len) {
        out[0] = TRACE_PACKET_TAG;
        return (size_t) (pb_varint_encode(out + 1, packet_len) - out);
}

static int meta_reserve(TraceWriter *w, size_t extra) {
        return trace_writer_flat_reserve(&w->meta, &w->meta_allocated, w->meta_len, extra);
}

/* Marks the first packet of each sequence, as trace_processor expects. */
static bool take_first_on_sequence(TraceWriter *w, uint32_t sequence_id) {
        assert(sequence_id < _TRACE_SEQUENCE_MAX);
        if (w->sequence_started[sequence_id])
                return false;
        w->sequence_started[sequence_id] = true;
        return true;
}

static bool prepare_packet(TraceWriter *w, Tracebus__TracePacket *packet, uint32_t sequence_id) {
        bool first = take_first_on_sequence(w, sequence_id);

        packet->has_trusted_packet_sequence_id = true;
        packet->trusted_packet_sequence_id = sequence_id;
        if (first) {
                packet->has_first_packet_on_sequence = packet->first_packet_on_sequence = true;
                packet->has_sequence_flags = true;
                packet->sequence_flags = SEQ_INCREMENTAL_STATE_CLEARED;
        }
        return first;
}

/* A packet the filter gave, framed into the metadata. */
static int append_meta_bytes(TraceWriter *w, const uint8_t *packet, size_t len) {
        int r;

        if (!packet)
                return 0;
        r = meta_reserve(w, len + 11);
        if (r < 0)
                return r;
        w->meta_len += frame_header(w->meta + w->meta_len, len);
        memcpy(w->meta + w->meta_len, packet, len);
        w->meta_len += len;
        return 0;
}

static int append_meta_packet(TraceWriter *w, const Tracebus__TracePacket *packet) {
        size_t size = tracebus__trace_packet__get_packed_size(packet);
        const uint8_t *filtered;
        int r;

        if (w->filter) {
                r = trace_writer_filter_message(w, packet, &filtered, &size);
                return r < 0 ? r : append_meta_bytes(w, filtered, size);
        }

        r = meta_reserve(w, size + 11);
        if (r < 0)
                return r;
        w->meta_len += frame_header(w->meta + w->meta_len, size);
        w->meta_len += tracebus__trace_packet__pack(packet, w->meta + w->meta_len);
        return 0;
}

int trace_writer_append_meta(TraceWriter *w, Tracebus__TracePacket *packet, uint32_t sequence_id) {
        assert(w);
        assert(packet);

        (void) prepare_packet(w, packet, sequence_id);
        return append_meta_packet(w, packet);
}

/* Room for a data packet of @packet_len bytes in @buffer, framed: *ret is where its body
 * goes (the frame header is written), NULL when a full DISCARD buffer drops it. */
static int data_append_packet(TraceWriter *w, uint32_t buffer, size_t packet_len, size_t n_events, uint8_t **ret) {
        uint8_t header[11], *p;
        size_t hlen = frame_header(header, packet_len);
        int r;

        assert(buffer < w->n_buffers);
        r = trace_writer_buffer_reserve(w, &w->buffers[buffer], hlen + packet_len, n_events, &p);
        *ret = NULL;
        if (r < 0 || !p)
                return r;
        memcpy(p, header, hlen);
        *ret = p + hlen;
        return 0;
}

/* A filtered data packet (NULL: dropped) into @buffer. */
static int append_data_bytes(TraceWriter *w, uint32_t buffer, const uint8_t *packet, size_t len, size_t n_events) {
        uint8_t *p;
        int r;

        if (!packet)
                return 0;
        r = data_append_packet(w, buffer, len, n_events, &p);
        if (r < 0 || !p)
                return r;
        memcpy(p, packet, len);
        return 0;
}

int trace_writer_append_data_to(TraceWriter *w, uint32_t buffer, Tracebus__TracePacket *packet,
                                uint32_t sequence_id) {
        uint8_t *p;
        int r;

        assert(w);
        assert(packet);

        if (buffer >= w->n_buffers)
                return -EINVAL;
        /* The first packet on a sequence says "incremental state cleared": never overwrite it. */
        if (prepare_packet(w, packet, sequence_id))
                return append_meta_packet(w, packet);
        if (w->filter) {
                const uint8_t *filtered;
                size_t len;

                r = trace_writer_filter_message(w, packet, &filtered, &len);
                return r < 0 ? r : append_data_bytes(w, buffer, filtered, len, 0);
        }

        r = data_append_packet(w, buffer, tracebus__trace_packet__get_packed_size(packet), 0, &p);
        if (r < 0 || !p)
                return r;
        tracebus__trace_packet__pack(packet, p);
        return 0;
}

int trace_writer_append_packed_to(TraceWriter *w, uint32_t buffer, const uint8_t *packet, size_t len) {
        const uint8_t *filtered;
        int r;

        assert(w);
        assert(packet || len == 0);

        if (buffer >= w->n_buffers)
                return -EINVAL;
        if (w->filter) {
                r = trace_writer_filter(w, packet, len, &filtered, &len);
                return r < 0 ? r : append_data_bytes(w, buffer, filtered, len, 0);
        }
        return append_data_bytes(w, buffer, packet, len, 0);
}

int trace_writer_append_data(TraceWriter *w, Tracebus__TracePacket *packet, uint32_t sequence_id) {
        return trace_writer_append_data_to(w, 0, packet, sequence_id);
}

int trace_writer_reserve_ftrace_bundle(TraceWriter *w, size_t len, size_t n_events, uint8_t **ret) {
        uint8_t *p, *start;
        size_t packet_len;
        int r;

        assert(ret);
        *ret = NULL;
        /* The FTRACE sequence starts with a metadata packet (FtraceStats), so bundles never
         * carry the first-packet flags. Written by hand: no copy through protobuf-c. */
        if (!w->sequence_started[TRACE_SEQUENCE_FTRACE])
                return -EINVAL;
        if (w->filter)
                return -EOPNOTSUPP;
        packet_len = 1 + pb_varint_size(len) + len + 2;
        r = data_append_packet(w, w->ftrace_buffer, packet_len, n_events, &p);
        if (r < 0 || !p)
                return r;
        start = p;
        *p++ = TAG_FTRACE_EVENTS;
        p = pb_varint_encode(p, len);
        *ret = p;
        p += len;
        *p++ = TAG_SEQUENCE_ID;
        *p++ = TRACE_SEQUENCE_FTRACE;
        assert((size_t) (p - start) == packet_len);
        return 0;
}

int trace_writer_append_ftrace_bundle(TraceWriter *w, const uint8_t *bundle, size_t len, size_t n_events) {
        const uint8_t *filtered;
        uint8_t *p;
        int r;

        if (w->filter) {
                if (!w->sequence_started[TRACE_SEQUENCE_FTRACE])
                        return -EINVAL;
                r = trace_writer_filter_ftrace(w, bundle, len, &filtered, &len);
                return r < 0 ? r : append_data_bytes(w, w->ftrace_buffer, filtered, len, n_events);
        }
        r = trace_writer_reserve_ftrace_bundle(w, len, n_events, &p);
        if (r < 0)
                return r;
        if (p)
                memcpy(p, bundle, len);
        return 0;
}

/* The zlib stream of the packet trace_writer_append_ftrace_bundle() would keep, into
 * w->deflated. Returns its length, or -ENOMEM. */
static ssize_t deflate_ftrace_packet(TraceWriter *w, const uint8_t *bundle, size_t len,
                                     const DeflateSpan *coded, size_t n_coded) {
        static const uint8_t trailer[] = { TAG_SEQUENCE_ID, TRACE_SEQUENCE_FTRACE };
        uint8_t header[11 + 1 + 10];
        size_t hlen, bound;
        DeflateStream s;
        int r;

        hlen = frame_header(header, 1 + pb_varint_size(len) + len + sizeof(trailer));
        header[hlen++] = TAG_FTRACE_EVENTS;
        hlen = (size_t) (pb_varint_encode(header + hlen, len) - header);
        bound = deflate_bound(hlen + len + sizeof(trailer), 2 * n_coded + 3);
        r = trace_writer_flat_reserve(&w->deflated, &w->deflated_allocated, 0, bound);
        if (r < 0)
                return r;
        deflate_begin(&s, w->deflated);
        deflate_stored(&s, header, hlen);
        deflate_spans(&s, bundle, len, coded, n_coded);
        deflate_stored(&s, trailer, sizeof(trailer));
        return (ssize_t) deflate_end(&s);
}

/* With a filter: the filtered packet, all of it coded, since the bundle's spans no longer
 * line up with it; when the filter kept it as it was, the spans still do. 0: dropped. */
static ssize_t deflate_filtered_ftrace(TraceWriter *w, const uint8_t *bundle, size_t len,
                                       const DeflateSpan *coded, size_t n_coded) {
        const uint8_t *filtered;
        uint8_t header[11];
        size_t flen, hlen;
        DeflateStream s;
        int r;

        r = trace_writer_filter_ftrace(w, bundle, len, &filtered, &flen);
        if (r < 0 || !filtered)
                return r;
        if (flen == w->filter_in_len && memcmp(filtered, w->filter_in, flen) == 0)
                return deflate_ftrace_packet(w, bundle, len, coded, n_coded);
        hlen = frame_header(header, flen);
        r = trace_writer_flat_reserve(&w->deflated, &w->deflated_allocated, 0, deflate_bound(hlen + flen, 2));
        if (r < 0)
                return r;
        deflate_begin(&s, w->deflated);
        deflate_stored(&s, header, hlen);
        deflate_coded(&s, filtered, flen);
        return (ssize_t) deflate_end(&s);
}

int trace_writer_append_ftrace_bundle_deflated(TraceWriter *w, const uint8_t *bundle, size_t len,
                                               const DeflateSpan *coded, size_t n_coded, size_t n_events) {
        size_t packet_len;
        ssize_t zlen;
        uint8_t *p;
        int r;

        if (!w->sequence_started[TRACE_SEQUENCE_FTRACE])
                return -EINVAL;
        zlen = (w->filter ? deflate_filtered_ftrace : deflate_ftrace_packet)(w, bundle, len, coded, n_coded);
        if (zlen <= 0)
                return (int) zlen;
        /* As Perfetto's service writes it: the packet holds compressed_packets alone. */
        packet_len = pb_len_field_size(FIELD_COMPRESSED_PACKETS, (size_t) zlen);
        r = data_append_packet(w, w->ftrace_buffer, packet_len, n_events, &p);
        if (r < 0 || !p)
                return r;
        p = pb_put_len_header(p, FIELD_COMPRESSED_PACKETS, (size_t) zlen);
        memcpy(p, w->deflated, (size_t) zlen);
        return 0;
}

/* How many leading bytes of @buf form whole packets that fit in @room. */
static size_t whole_packets_within(const uint8_t *buf, size_t len, uint64_t room) {
        size_t off = 0;

        while (off < len) {
                const uint8_t *p = buf + off + 1;
                uint64_t plen, size;

                /* Our own framing: tag byte, then a varint length. */
                if (!pb_varint_decode(&p, buf + len, &plen))
                        break;
                size = (uint64_t) (p - (buf + off)) + plen;
                if (size > room)
                        break;
                room -= size;
                off += size;
        }
        return off;
}

/* A write that failed part way (ENOSPC, EFBIG, EIO) left the start of a packet at the
 * end of the output, and a reader would stop there with a torn packet. A regular file
 * is cut back to the last whole packet; a pipe or a socket cannot take bytes back.
 * (What this cannot cover: a SIGKILL that lands inside one write() of several pages,
 * which the kernel then cuts short between two pages, with nobody left to cut back.) */
static void drop_torn_tail(TraceWriter *w, uint64_t torn) {
        struct stat st;
        off_t end;

        if (torn == 0 || fstat(w->fd, &st) < 0 || !S_ISREG(st.st_mode))
                return;
        end = lseek(w->fd, 0, SEEK_CUR);
        if (end < 0 || (uint64_t) end < torn)
                return;
        end -= (off_t) torn;
        /* Where the next write goes too: a later packet must follow the last whole one. */
        if (ftruncate(w->fd, end) < 0 || lseek(w->fd, end, SEEK_SET) < 0)
                return;
        w->stats.bytes_written -= torn;
}

/* Writes @len bytes of whole packets, counting what went out; on failure the output
 * keeps whole packets only, where it can. */
static int write_packets(TraceWriter *w, const uint8_t *buf, size_t len) {
        struct iovec iov = { (void *) buf, len };
        uint64_t written = 0;
        int r;

        r = trace_writer_output_writev(w, &iov, 1, &written);
        w->stats.bytes_written += written;
        if (r < 0)
                drop_torn_tail(w, written - whole_packets_within(buf, len, written));
        return r;
}

void trace_writer_set_budget(TraceWriter *w, TraceBudget *budget) {
        w->budget = budget;
}

/* Takes @n bytes from @b, if that many are left. */
static bool budget_take(TraceBudget *b, uint64_t n) {
        uint64_t used = atomic_load(&b->used);

        do {
                if (used > b->limit || n > b->limit - used)
                        return false;
        } while (!atomic_compare_exchange_weak(&b->used, &used, used + n));
        return true;
}

static uint64_t budget_left(TraceBudget *b) {
        uint64_t used = atomic_load(&b->used);

        return used < b->limit ? b->limit - used : 0;
}

/* Of @taken bytes from the budget, those that did not go out since bytes_written was
 * @before go back. */
static void budget_give_back(TraceWriter *w, uint64_t taken, uint64_t before) {
        uint64_t written = w->stats.bytes_written - before;

        if (w->budget && taken > written)
                atomic_fetch_sub(&w->budget->used, taken - written);
}

/* How many leading bytes of @buf (whole packets) may go out: within max_bytes, and
 * taken from the budget. *ret_error says which limit cut it short. */
static size_t take_within_limits(TraceWriter *w, const uint8_t *buf, size_t len, int *ret_error) {
        uint64_t file_room = UINT64_MAX;

        if (w->max_bytes > 0)
                file_room = w->max_bytes > w->stats.bytes_written ? w->max_bytes - w->stats.bytes_written : 0;
        for (;;) {
                uint64_t budget_room = w->budget ? budget_left(w->budget) : UINT64_MAX;
                size_t n = whole_packets_within(buf, len, MIN(file_room, budget_room));

                *ret_error = budget_room < file_room ? -EDQUOT : -EFBIG;
                /* Another writer may have taken some in between: then count again. */
                if (!w->budget || budget_take(w->budget, n))
                        return n;
        }
}

/* Writes whole packets of @buf within the size limit and the budget; -EFBIG or -EDQUOT
 * if not all of it fits. */
static int write_within_limit(TraceWriter *w, const uint8_t *buf, size_t len) {
        uint64_t before = w->stats.bytes_written;
        int r, limit_error;
        size_t n = take_within_limits(w, buf, len, &limit_error);

        r = n > 0 ? write_packets(w, buf, n) : 0;
        budget_give_back(w, n, before);
        if (r < 0)
                return r;
        if (n < len) {
                /* The rest would pass max_file_size_bytes or the quota: the file ends at
                 * a packet boundary. */
                w->limit_error = limit_error;
                return limit_error;
        }
        return 0;
}

int trace_writer_write_whole(TraceWriter *w, const uint8_t *buf, size_t len) {
        if (w->limit_error < 0)
                return w->limit_error;
        return len > 0 ? write_within_limit(w, buf, len) : 0;
}

/* A STREAM buffer's data, taken out whole: its length, 0 if none. */
static size_t take_stream(TraceWriter *w, TraceWriterBuffer *b) {
        size_t len = b->data_len;

        if (!b->stream || len == 0)
                return 0;
        /* A stream drops nothing: what it holds is all it took since the last read. */
        trace_writer_buffer_read(b, len, b->stats.packets_written - b->stats.packets_read);
        w->data_len -= len;
        b->data_len = 0;
        return len;
}

static TracePacketChunk *take_chunk(TraceWriter *w, TraceWriterBuffer *b) {
        TracePacketChunk *c = trace_writer_buffer_pop(w, b);

        if (c)
                trace_writer_buffer_read(b, c->len, 1);
        return c;
}

/* The most a ring's or a discard buffer's chunks are gathered into for one write; and
 * what is used when that much memory cannot be had. */
#define STAGE_SIZE ((size_t) 1 << 20)
#define STAGE_FALLBACK_SIZE ((size_t) 64 << 10)

/* @b's chunks, copied whole into @stage (@size bytes) and written a stage at a time; a
 * chunk larger than the stage goes out on its own. */
static int flush_chunks_staged(TraceWriter *w, TraceWriterBuffer *b, uint8_t *stage, size_t size) {
        int r = 0;

        while (b->head && r >= 0) {
                size_t len = 0;

                if (b->head->len > size) {
                        TracePacketChunk *c = take_chunk(w, b);

                        r = write_packets(w, c->data, c->len);
                        trace_packet_chunk_unref(c);
                        continue;
                }
                while (b->head && len + b->head->len <= size) {
                        TracePacketChunk *c = take_chunk(w, b);

                        memcpy(stage + len, c->data, c->len);
                        len += c->len;
                        trace_packet_chunk_unref(c);
                }
                r = write_packets(w, stage, len);
        }
        return r;
}

/* All of @b's data, when it fits the size limit and was taken from the budget.
 *
 * A ring's chunks (a full one's 64 MB at Stop) are not handed to writev() where they
 * lie: on the development VM (a PVM guest, on shadow page tables) the kernel's first read
 * of a page of ours is slow, likely a fault on the host, and a ring's chunks are memory
 * the kernel has never read: 120 ms for a full ring, against 20 ms when they are first
 * copied here into one buffer of STAGE_SIZE that every write reuses (README, Performance;
 * bench/stop-write.c --fresh). Where such reads cost nothing, this is one more copy of
 * memory, a few ms for 64 MB. */
static int flush_buffer_batched(TraceWriter *w, TraceWriterBuffer *b) {
        uint8_t fallback[STAGE_FALLBACK_SIZE];
        _cleanup_free_ uint8_t *stage = NULL;
        size_t len = take_stream(w, b);

        if (len > 0)
                return write_packets(w, b->stream, len);
        if (!b->head)
                return 0;
        len = MIN(b->data_len, STAGE_SIZE);
        stage = malloc(len);
        if (!stage)
                return flush_chunks_staged(w, b, fallback, sizeof(fallback));
        return flush_chunks_staged(w, b, stage, len);
}

/* Everything pending fits the size limit and was taken from the budget. */
static int flush_batched(TraceWriter *w) {
        int r = 0;

        if (w->meta_len > 0) {
                r = write_packets(w, w->meta, w->meta_len);
                w->meta_len = 0;
        }
        for (size_t i = 0; i < w->n_buffers && r >= 0; i++)
                r = flush_buffer_batched(w, &w->buffers[i]);
        return r;
}

/* @b's data, whole packets while they fit the limits. */
static int flush_buffer_within_limit(TraceWriter *w, TraceWriterBuffer *b) {
        size_t len = take_stream(w, b);
        int r = 0;

        if (len > 0)
                return write_within_limit(w, b->stream, len);
        while (b->head && r >= 0) {
                TracePacketChunk *c = take_chunk(w, b);

                r = write_within_limit(w, c->data, c->len);
                trace_packet_chunk_unref(c);
        }
        return r;
}

int trace_writer_flush(TraceWriter *w) {
        uint64_t pending = trace_writer_pending(w), before = w->stats.bytes_written;
        int r;

        if (w->limit_error < 0)
                return w->limit_error;
        if ((w->max_bytes == 0 || before + pending <= w->max_bytes) &&
            (!w->budget || budget_take(w->budget, pending))) {
                r = flush_batched(w);
                budget_give_back(w, pending, before);
                return r;
        }

        r = write_within_limit(w, w->meta, w->meta_len);
        w->meta_len = 0;
        for (size_t i = 0; i < w->n_buffers && r >= 0; i++)
                r = flush_buffer_within_limit(w, &w->buffers[i]);
        return r;
}
