/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The producer socket's place among the manager's limits, and who may see which producer. */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "log.h"
#include "manager.h"
#include "strv.h"

/* Apps of one user connected at once: each SDK app holds one connection. */
#define PRODUCERS_PER_UID 64u
/* Data sources one user's apps register together: the SDK allows 32 per app. */
#define PRODUCER_DATA_SOURCES_PER_UID 256u
/* Shared memory all of one user's apps are given together: two buffers of the largest
 * size, or 256 of the SDK's default 256 KiB, which is 64 MiB of the machine's memory. */
#define PRODUCER_SMB_BYTES_PER_UID (2ull * SMB_SIZE_MAX)
/* Triggers one ActivateTriggers of an app may carry, and a name's length. */
#define PRODUCER_TRIGGERS_MAX 32u
#define PRODUCER_TRIGGER_NAME_MAX 128u

static void on_source_registered(Producer *producer, const char *name, void *userdata) {
        Manager *m = userdata;

        for (Session *s = m->sessions; s; s = s->next)
                session_producers_offer(s, producer, name);
}

static void on_packet(Producer *producer, uint32_t target_buffer, uint16_t writer_id, bool dropped,
                      const uint8_t *data, size_t size, void *userdata) {
        Manager *m = userdata;

        for (Session *s = m->sessions; s; s = s->next)
                if (session_producers_packet(s, producer, target_buffer, writer_id, dropped, data, size))
                        return;
}

static void on_packet_refused(Producer *producer, uint32_t target_buffer, int error, void *userdata) {
        Manager *m = userdata;

        for (Session *s = m->sessions; s; s = s->next)
                if (session_producers_packet_refused(s, target_buffer))
                        return;
}

static void on_instance_stopped(Producer *producer, uint64_t instance_id, void *userdata) {
        Manager *m = userdata;

        for (Session *s = m->sessions; s; s = s->next)
                session_producers_instance_stopped(s, producer, instance_id);
}

static void on_flush_acked(Producer *producer, uint64_t flush_request_id, void *userdata) {
        Manager *m = userdata;

        for (Session *s = m->sessions; s; s = s->next)
                session_producers_flush_acked(s, producer, flush_request_id);
}

/* A session waiting at Stop for this app waits no more for it. */
static void on_gone(Producer *producer, void *userdata) {
        on_instance_stopped(producer, 0, userdata);
}

/* An app's triggers reach its own user's sessions, as Manager.ActivateTriggers does for
 * a caller without org.tracebus.manage; names are bounded as the bus bounds them. */
static void on_triggers(Producer *producer, char **names, size_t n_names, void *userdata) {
        Manager *m = userdata;
        _cleanup_strv_free_ char **valid = NULL;

        for (size_t i = 0; i < MIN(n_names, (size_t) PRODUCER_TRIGGERS_MAX); i++)
                if (string_is_printable_name(names[i], PRODUCER_TRIGGER_NAME_MAX) && strv_extend(&valid, names[i]) < 0)
                        return;
        if (valid)
                (void) manager_activate_triggers(m, valid, producer->uid, false, producer->name ?: "unnamed app");
}

static const ProducerSink manager_producer_sink = {
        .source_registered = on_source_registered,
        .packet = on_packet,
        .packet_refused = on_packet_refused,
        .instance_stopped = on_instance_stopped,
        .flush_acked = on_flush_acked,
        .gone = on_gone,
        .triggers = on_triggers,
};

/* Each connection takes one of the service's descriptors: all producers together keep
 * at most a quarter of them, so that sessions and calls always have the rest. */
static void producer_limits(const Manager *m, ProducerLimits *ret) {
        *ret = (ProducerLimits) {
                .max_producers = MAX(m->max_files / 4, 1u),
                .max_producers_per_uid = PRODUCERS_PER_UID,
                .max_data_sources_per_uid = PRODUCER_DATA_SOURCES_PER_UID,
                .handshake_timeout_usec = m->limits.producer_handshake_timeout_usec,
                .max_smb_bytes_per_uid = PRODUCER_SMB_BYTES_PER_UID,
        };
}

int manager_listen_producers(Manager *m, int fd) {
        _cleanup_close_ int owned = fd;
        ProducerLimits limits;
        int r;

        producer_limits(m, &limits);
        r = producers_new(m->event, &limits, &m->producers);
        if (r < 0)
                return r;
        producers_set_sink(m->producers, &manager_producer_sink, m);
        r = producers_listen(m->producers, TAKE_FD(owned));
        if (r < 0) {
                m->producers = producers_free(m->producers);
                return r;
        }
        log_info("Producer socket: %u apps at most, %u per user, %u data sources and %" PRIu64 " MiB of shared "
                 "memory per user.", limits.max_producers, limits.max_producers_per_uid,
                 limits.max_data_sources_per_uid, limits.max_smb_bytes_per_uid >> 20);
        return 0;
}

bool manager_producer_visible(const Producer *producer, uid_t uid, bool may_manage) {
        return may_manage || producer->uid == uid;
}
