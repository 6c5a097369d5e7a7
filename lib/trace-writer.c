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

struct TracePacketChunk {
        TracePacketChunk *next;
        size_t len;
        size_t events;       /* ftrace events inside, for the loss accounting */
        uint8_t data[];
};

size_t varint_encode(uint64_t v, uint8_t out[static 10]) {
        return (size_t) (pb_varint_encode(out, v) - out);
}

void trace_writer_init(TraceWriter *w, int fd, TraceWriterMode mode, size_t capacity, uint64_t max_bytes) {
        *w = (TraceWriter) {
                .fd = fd,
                .mode = mode,
                .capacity = capacity,
                .max_bytes = max_bytes,
        };
}

static TracePacketChunk *pop_oldest(TraceWriter *w) {
        TracePacketChunk *c = w->head;

        if (!c)
                return NULL;
        w->head = c->next;
        if (!w->head)
                w->tail = NULL;
        w->data_len -= c->len;
        return c;
}

void trace_writer_done(TraceWriter *w) {
        w->meta = mfree(w->meta);
        w->meta_len = w->meta_allocated = 0;
        w->stream = mfree(w->stream);
        w->stream_allocated = 0;
        w->deflated = mfree(w->deflated);
        w->deflated_allocated = 0;
        if (w->mode == TRACE_WRITER_STREAM)
                w->data_len = 0;
        while (w->head)
                free(pop_oldest(w));
}

size_t trace_writer_pending(const TraceWriter *w) {
        return w->meta_len + w->data_len;
}

static size_t frame_header(uint8_t out[static 11], size_t packet_len) {
        out[0] = TRACE_PACKET_TAG;
        return (size_t) (pb_varint_encode(out + 1, packet_len) - out);
}

/* Room for @extra more bytes after @len in *@buf. */
static int flat_reserve(uint8_t **buf, size_t *allocated, size_t len, size_t extra) {
        size_t need = len + extra;
        uint8_t *p;

        if (need <= *allocated)
                return 0;
        need = MAX(need, MAX(*allocated * 2, (size_t) 16 * 1024));
        p = realloc(*buf, need);
        if (!p)
                return -ENOMEM;
        *buf = p;
        *allocated = need;
        return 0;
}

static int meta_reserve(TraceWriter *w, size_t extra) {
        return flat_reserve(&w->meta, &w->meta_allocated, w->meta_len, extra);
}

/* Where a data packet of @len bytes goes: the end of the stream buffer, or a new chunk
 * (@events ftrace events inside). Returns NULL on ENOMEM. */
static uint8_t *data_append(TraceWriter *w, size_t len, size_t events) {
        TracePacketChunk *c;
        uint8_t *p;

        if (w->mode == TRACE_WRITER_STREAM) {
                if (flat_reserve(&w->stream, &w->stream_allocated, w->data_len, len) < 0)
                        return NULL;
                p = w->stream + w->data_len;
                w->data_len += len;
                return p;
        }
        c = malloc(sizeof(TracePacketChunk) + len);
        if (!c)
                return NULL;
        *c = (TracePacketChunk) { .len = len, .events = events };
        if (w->tail)
                w->tail->next = c;
        else
                w->head = c;
        w->tail = c;
        w->data_len += len;
        return c->data;
}

/* Marks the first packet of each sequence, as trace_processor expects (facts note 3.1). */
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

static int append_meta_packet(TraceWriter *w, const Tracebus__TracePacket *packet) {
        size_t size = tracebus__trace_packet__get_packed_size(packet);
        int r;

        r = meta_reserve(w, size + 11);
        if (r < 0)
                return r;
        w->meta_len += frame_header(w->meta + w->meta_len, size);
        w->meta_len += tracebus__trace_packet__pack(packet, w->meta + w->meta_len);
        return 0;
}

/* Room for a data packet of @len bytes: drops the oldest (RING) or refuses it (DISCARD). */
static bool data_make_room(TraceWriter *w, size_t len, size_t events) {
        if (w->mode == TRACE_WRITER_STREAM)
                return true;
        if (w->mode == TRACE_WRITER_DISCARD) {
                /* Once full, nothing more: a smaller packet later would leave a hole. */
                if (!w->stats.packets_discarded && w->data_len + len <= w->capacity)
                        return true;
                w->stats.packets_discarded++;
                w->stats.bytes_discarded += len;
                w->stats.events_discarded += events;
                return false;
        }
        while (w->head && w->data_len + len > w->capacity) {
                TracePacketChunk *c = pop_oldest(w);
                w->stats.packets_overwritten++;
                w->stats.bytes_overwritten += c->len;
                w->stats.events_overwritten += c->events;
                free(c);
        }
        return true;
}

int trace_writer_append_meta(TraceWriter *w, Tracebus__TracePacket *packet, uint32_t sequence_id) {
        assert(w);
        assert(packet);

        (void) prepare_packet(w, packet, sequence_id);
        return append_meta_packet(w, packet);
}

int trace_writer_append_data(TraceWriter *w, Tracebus__TracePacket *packet, uint32_t sequence_id) {
        uint8_t header[11], *p;
        size_t size, hlen;

        assert(w);
        assert(packet);

        /* The first packet on a sequence says "incremental state cleared": never overwrite it. */
        if (prepare_packet(w, packet, sequence_id))
                return append_meta_packet(w, packet);

        size = tracebus__trace_packet__get_packed_size(packet);
        hlen = frame_header(header, size);
        if (!data_make_room(w, hlen + size, 0))
                return 0;
        p = data_append(w, hlen + size, 0);
        if (!p)
                return -ENOMEM;
        memcpy(p, header, hlen);
        tracebus__trace_packet__pack(packet, p + hlen);
        return 0;
}

/* Room for a data packet of @packet_len bytes, framed: *ret is where its body goes (the
 * frame header is written), NULL when a full DISCARD writer drops it. */
static int data_append_packet(TraceWriter *w, size_t packet_len, size_t n_events, uint8_t **ret) {
        uint8_t header[11], *p;
        size_t hlen = frame_header(header, packet_len);

        *ret = NULL;
        if (!data_make_room(w, hlen + packet_len, n_events))
                return 0;
        p = data_append(w, hlen + packet_len, n_events);
        if (!p)
                return -ENOMEM;
        memcpy(p, header, hlen);
        *ret = p + hlen;
        return 0;
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
        packet_len = 1 + pb_varint_size(len) + len + 2;
        r = data_append_packet(w, packet_len, n_events, &p);
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
        uint8_t *p;
        int r;

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
        r = flat_reserve(&w->deflated, &w->deflated_allocated, 0, bound);
        if (r < 0)
                return r;
        deflate_begin(&s, w->deflated);
        deflate_stored(&s, header, hlen);
        deflate_spans(&s, bundle, len, coded, n_coded);
        deflate_stored(&s, trailer, sizeof(trailer));
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
        zlen = deflate_ftrace_packet(w, bundle, len, coded, n_coded);
        if (zlen < 0)
                return (int) zlen;
        /* As Perfetto's service writes it: the packet holds compressed_packets alone. */
        packet_len = pb_len_field_size(FIELD_COMPRESSED_PACKETS, (size_t) zlen);
        r = data_append_packet(w, packet_len, n_events, &p);
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

/* One writev() per FLUSH_IOV packets instead of one write() each (a long trace flushes
 * a packet per CPU per drain period). */
#define FLUSH_IOV 256

/* Bytes of whole packets at the start of what @iov (each buffer whole packets) held,
 * when @written of it went out. */
static uint64_t whole_prefix(const struct iovec *iov, int n, uint64_t written) {
        uint64_t whole = 0;

        for (int i = 0; i < n && written > 0; i++) {
                if (written < iov[i].iov_len)
                        return whole + whole_packets_within(iov[i].iov_base, iov[i].iov_len, written);
                whole += iov[i].iov_len;
                written -= iov[i].iov_len;
        }
        return whole;
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

/* Writes @n (at most FLUSH_IOV) buffers of whole packets, counting what went out; on
 * failure the output keeps whole packets only, where it can. */
static int write_packets(TraceWriter *w, struct iovec *iov, int n) {
        struct iovec orig[FLUSH_IOV];
        uint64_t written = 0;
        int r;

        assert(n > 0 && n <= FLUSH_IOV);
        memcpy(orig, iov, sizeof(struct iovec) * (size_t) n);
        r = trace_writer_output_writev(w, iov, n, &written);
        w->stats.bytes_written += written;
        if (r < 0)
                drop_torn_tail(w, written - whole_prefix(orig, n, written));
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
        struct iovec iov;
        int r, limit_error;
        size_t n = take_within_limits(w, buf, len, &limit_error);

        iov = (struct iovec) { (void *) buf, n };
        r = n > 0 ? write_packets(w, &iov, 1) : 0;
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

/* Everything pending fits the size limit and was taken from the budget. */
static int flush_batched(TraceWriter *w) {
        struct iovec iov[FLUSH_IOV];
        TracePacketChunk *batch[FLUSH_IOV];
        int r = 0;

        if (w->meta_len > 0) {
                iov[0] = (struct iovec) { w->meta, w->meta_len };
                r = write_packets(w, iov, 1);
                w->meta_len = 0;
                if (r < 0)
                        return r;
        }
        if (w->stream && w->data_len > 0) {
                iov[0] = (struct iovec) { w->stream, w->data_len };
                w->data_len = 0;
                return write_packets(w, iov, 1);
        }
        while (w->head && r >= 0) {
                int n = 0;

                while (w->head && n < FLUSH_IOV) {
                        batch[n] = pop_oldest(w);
                        iov[n] = (struct iovec) { batch[n]->data, batch[n]->len };
                        n++;
                }
                r = write_packets(w, iov, n);
                for (int i = 0; i < n; i++)
                        free(batch[i]);
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
        if (r < 0)
                return r;
        if (w->stream && w->data_len > 0) {
                size_t len = w->data_len;

                w->data_len = 0;
                return write_within_limit(w, w->stream, len);
        }

        while (w->head) {
                TracePacketChunk *c = pop_oldest(w);

                r = write_within_limit(w, c->data, c->len);
                free(c);
                if (r < 0)
                        return r;
        }
        return 0;
}
