/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "daemon-config.h"
#include "session.h"

typedef struct BusRequest BusRequest;

typedef struct Manager {
        sd_event *event;
        sd_bus *bus;

        Session *sessions;                /* linked list */
        unsigned n_sessions;

        BusRequest *requests;             /* calls waiting for polkit */

        char *state_dir;                  /* traces go to STATE/traces/<uid>/ */
        const char *tracefs_root;
        ManagerLimits limits;             /* from tracebusd.conf (daemon-config.h) */
        bool exiting;
} Manager;

int manager_new(Manager **ret);
Manager *manager_free(Manager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(Manager *, manager_free);

Session *manager_find_session(Manager *m, uint64_t id);
/* A fresh random session id, 1 .. SESSION_ID_MASK, not used by any session. */
int manager_new_session_id(Manager *m, uint64_t *ret);
unsigned manager_count_sessions(Manager *m, uid_t uid);

/* Checks the session limits for @uid: -EUSERS if one is reached. */
int manager_check_limits(Manager *m, uid_t uid, bool *ret_per_uid);

void manager_add_session(Manager *m, Session *s);
/* Called once a session has ended and told the bus: frees it; exits when shutting down. */
void manager_session_ended(Manager *m, Session *s);

/* True when the service may exit for being idle: no session (detached ones included),
 * no call waiting for polkit (our only outgoing method calls), not shutting down. */
bool manager_check_idle(void *userdata);

/* SIGTERM: finalizes every session (reason service-shutdown), then leaves the event loop. */
void manager_shutdown(Manager *m);
