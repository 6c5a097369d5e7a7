/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "recorder-local.h"

/* Packets handed to the recorder by other threads. The pollers read /proc and /sys on a
 * thread of their own and must not touch the writer, which only the recorder's thread
 * uses; they pass packed packets here, and the recorder appends them on its next pass.
 * Unpacking again costs little at polling rates (a few packets per period) and lets the
 * writer's one path set sequence ids and first-packet flags. */

typedef struct SubmittedPacket {
        struct SubmittedPacket *next;
        uint32_t sequence_id;
        uint32_t target_buffer;
        bool meta;
        bool stamped;            /* a producer's packet, packed and stamped: kept as it is */
        size_t len;
        uint8_t data[];
} SubmittedPacket;

/* The recorder takes the whole inbox at once after a wake-up: only a packet that finds it
 * empty wakes it, so that an app's thousands of packets a CommitData cost one eventfd
 * write, not one each. */
static int submit(Recorder *rec, const SubmittedPacket *head, const void *packet, const void *stamp,
                  size_t stamp_len) {
        SubmittedPacket *p;
        size_t len = head->len;
        bool was_empty = false;
        int r = 0;

        (void) pthread_mutex_lock(&rec->inbox_lock);
        if (len > RECORDER_MAX_SUBMITTED_BYTES - rec->inbox_bytes) {
                rec->inbox_dropped++;
                r = -ENOBUFS;
                goto unlock;
        }
        p = malloc(sizeof(*p) + len);
        if (!p) {
                rec->inbox_dropped++;
                r = -ENOMEM;
                goto unlock;
        }
        *p = *head;
        memcpy(p->data, packet, len - stamp_len);
        if (stamp_len > 0)
                memcpy(p->data + len - stamp_len, stamp, stamp_len);
        was_empty = !rec->inbox_head;
        if (rec->inbox_tail)
                rec->inbox_tail->next = p;
        else
                rec->inbox_head = p;
        rec->inbox_tail = p;
        rec->inbox_bytes += len;
unlock:
        (void) pthread_mutex_unlock(&rec->inbox_lock);
        if (was_empty)
                recorder_wake(rec);
        return r;
}

int recorder_submit_packet(Recorder *rec, uint32_t sequence_id, uint32_t target_buffer, bool meta,
                           const void *packet, size_t len) {
        assert(rec);
        assert(sequence_id > 0 && sequence_id < _TRACE_SEQUENCE_MAX);

        return submit(rec, &(SubmittedPacket) { .sequence_id = sequence_id, .target_buffer = target_buffer,
                                                .meta = meta, .len = len }, packet, NULL, 0);
}

int recorder_submit_stamped_packet(Recorder *rec, uint32_t target_buffer, const void *packet, size_t len,
                                   const void *stamp, size_t stamp_len) {
        assert(rec);
        assert(len <= SIZE_MAX - stamp_len);

        return submit(rec, &(SubmittedPacket) { .target_buffer = target_buffer, .stamped = true, .len = len + stamp_len },
                      packet, stamp, stamp_len);
}

uint64_t recorder_submitted_dropped(Recorder *rec) {
        uint64_t n;

        (void) pthread_mutex_lock(&rec->inbox_lock);
        n = rec->inbox_dropped;
        (void) pthread_mutex_unlock(&rec->inbox_lock);
        return n;
}

static SubmittedPacket *take_inbox(Recorder *rec) {
        SubmittedPacket *list;

        (void) pthread_mutex_lock(&rec->inbox_lock);
        list = rec->inbox_head;
        rec->inbox_head = rec->inbox_tail = NULL;
        rec->inbox_bytes = 0;
        (void) pthread_mutex_unlock(&rec->inbox_lock);
        return list;
}

static int append_one(Recorder *rec, const SubmittedPacket *p) {
        Tracebus__TracePacket *packet;
        int r;

        if (p->stamped) {
                /* Checked by the service when the producer's buffers were set up. */
                if (p->target_buffer >= rec->writer.n_buffers)
                        return 0;
                return trace_writer_append_packed_to(&rec->writer, p->target_buffer, p->data, p->len);
        }

        packet = tracebus__trace_packet__unpack(NULL, p->len, p->data);
        if (!packet) {
                /* Our own pollers built it: a bug, not the caller's input. */
                log_warning("A submitted packet of %zu bytes does not unpack, dropped.", p->len);
                return 0;
        }
        if (p->meta)
                r = trace_writer_append_meta(&rec->writer, packet, p->sequence_id);
        else if (p->target_buffer >= rec->writer.n_buffers) {
                /* The config's targets were checked when it was loaded: a poller's bug. */
                log_warning("A submitted packet names buffer %" PRIu32 " of %zu, dropped.",
                            p->target_buffer, rec->writer.n_buffers);
                r = 0;
        } else
                r = trace_writer_append_data_to(&rec->writer, p->target_buffer, packet, p->sequence_id);
        tracebus__trace_packet__free_unpacked(packet, NULL);
        return r;
}

int recorder_append_submitted(Recorder *rec) {
        SubmittedPacket *list = take_inbox(rec);
        int r = 0;

        while (list) {
                SubmittedPacket *next = list->next;

                if (r >= 0)
                        r = append_one(rec, list);
                free(list);
                list = next;
        }
        return r;
}

void recorder_inbox_free(Recorder *rec) {
        SubmittedPacket *list = take_inbox(rec);

        while (list) {
                SubmittedPacket *next = list->next;
                free(list);
                list = next;
        }
}
