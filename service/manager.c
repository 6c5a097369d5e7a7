/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "log.h"
#include "manager-bus.h"
#include "manager.h"
#include "tracefs-instance.h"

#define DEFAULT_MAX_SESSIONS 16u
#define DEFAULT_MAX_SESSIONS_PER_UID 5u
#define DEFAULT_TRACE_DIR_QUOTA_BYTES (4ull * 1024 * 1024 * 1024)

int manager_new(Manager **ret) {
        _cleanup_(manager_freep) Manager *m = NULL;
        const char *state_dir;
        int r;

        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->limits = (ManagerLimits) {
                .max_sessions = DEFAULT_MAX_SESSIONS,
                .max_sessions_per_uid = DEFAULT_MAX_SESSIONS_PER_UID,
                .trace_dir_quota_bytes = DEFAULT_TRACE_DIR_QUOTA_BYTES,
        };

        /* systemd passes StateDirectory= as $STATE_DIRECTORY (possibly a list: take the first). */
        state_dir = getenv("STATE_DIRECTORY");
        m->state_dir = strndup(state_dir ?: TRACEBUS_STATE_DIR, state_dir ? strcspn(state_dir, ":") : strlen(TRACEBUS_STATE_DIR));
        if (!m->state_dir)
                return -ENOMEM;

        r = sd_event_default(&m->event);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(m);
        return 0;
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        manager_bus_done(m);
        while (m->sessions) {
                Session *s = m->sessions;
                m->sessions = s->next;
                session_free(s);
        }
        sd_bus_flush_close_unref(m->bus);
        sd_event_unref(m->event);
        free(m->state_dir);
        return mfree(m);
}

Session *manager_find_session(Manager *m, uint64_t id) {
        for (Session *s = m->sessions; s; s = s->next)
                if (s->id == id)
                        return s;
        return NULL;
}

unsigned manager_count_sessions(Manager *m, uid_t uid) {
        unsigned n = 0;

        for (Session *s = m->sessions; s; s = s->next)
                if (s->owner_uid == uid)
                        n++;
        return n;
}

int manager_check_limits(Manager *m, uid_t uid, bool *ret_per_uid) {
        if (manager_count_sessions(m, uid) >= m->limits.max_sessions_per_uid) {
                *ret_per_uid = true;
                return -EUSERS;
        }
        if (m->n_sessions >= m->limits.max_sessions) {
                *ret_per_uid = false;
                return -EUSERS;
        }
        return 0;
}

void manager_add_session(Manager *m, Session *s) {
        Session **tail = &m->sessions;

        /* Appended, so that ListSessions answers in the order the sessions started. */
        while (*tail) {
                s->prev = *tail;
                tail = &(*tail)->next;
        }
        *tail = s;
        m->n_sessions++;
}

void manager_session_ended(Manager *m, Session *s) {
        if (s->prev)
                s->prev->next = s->next;
        else
                m->sessions = s->next;
        if (s->next)
                s->next->prev = s->prev;
        m->n_sessions--;
        session_free(s);

        if (m->exiting && !m->sessions)
                (void) sd_event_exit(m->event, 0);
}

void manager_shutdown(Manager *m) {
        if (m->exiting)
                return;
        m->exiting = true;
        log_info("Shutting down: finishing %u session(s).", m->n_sessions);
        if (!m->sessions) {
                (void) sd_event_exit(m->event, 0);
                return;
        }
        for (Session *s = m->sessions; s; s = s->next)
                (void) session_stop(s, SESSION_END_SERVICE_SHUTDOWN);
}
