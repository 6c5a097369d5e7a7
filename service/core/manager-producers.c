/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The producer socket's place among the manager's limits, and who may see which producer. */
#include <errno.h>

#include "log.h"
#include "manager.h"

/* Apps of one user connected at once: each SDK app holds one connection. */
#define PRODUCERS_PER_UID 64u
/* Data sources one user's apps register together: the SDK allows 32 per app. */
#define PRODUCER_DATA_SOURCES_PER_UID 256u

/* Each connection takes one of the service's descriptors: all producers together keep
 * at most a quarter of them, so that sessions and calls always have the rest. */
static void producer_limits(const Manager *m, ProducerLimits *ret) {
        *ret = (ProducerLimits) {
                .max_producers = MAX(m->max_files / 4, 1u),
                .max_producers_per_uid = PRODUCERS_PER_UID,
                .max_data_sources_per_uid = PRODUCER_DATA_SOURCES_PER_UID,
                .handshake_timeout_usec = m->limits.producer_handshake_timeout_usec,
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
        r = producers_listen(m->producers, TAKE_FD(owned));
        if (r < 0) {
                m->producers = producers_free(m->producers);
                return r;
        }
        log_info("Producer socket: %u apps at most, %u per user, %u data sources per user.",
                 limits.max_producers, limits.max_producers_per_uid, limits.max_data_sources_per_uid);
        return 0;
}

bool manager_producer_visible(const Producer *producer, uid_t uid, bool may_manage) {
        return may_manage || producer->uid == uid;
}
