/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "config.h"
#include "log.h"
#include "manager-local.h"
#include "kernel/tracefs-instance.h"

int manager_new(Manager **ret) {
        _cleanup_(manager_freep) Manager *m = NULL;
        DaemonConfig defaults;
        const char *state_dir;
        int r;

        m = calloc(1, sizeof(*m));
        if (!m)
                return log_oom();
        /* The caller applies tracebusd.conf on top. */
        daemon_config_init(&defaults);
        m->limits = defaults.limits;

        /* systemd passes StateDirectory= as $STATE_DIRECTORY (possibly a list: take the first). */
        state_dir = getenv("STATE_DIRECTORY");
        m->state_dir = strndup(state_dir ?: TRACEBUS_STATE_DIR, state_dir ? strcspn(state_dir, ":") : strlen(TRACEBUS_STATE_DIR));
        if (!m->state_dir)
                return log_oom();

        r = sd_event_default(&m->event);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the service: cannot create the event loop: %m");

        *ret = TAKE_PTR(m);
        return 0;
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        while (m->sessions) {
                Session *s = m->sessions;
                m->sessions = s->next;
                session_free(s);
        }
        producers_free(m->producers);
        manager_free_trace_dir(m);
        poller_free(m->poller);
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

/* Session ids are random, not a sequence: a sequence would let any user count the
 * sessions others started (from the id of their own next one), and guess their paths.
 * 48 bits keep the ids short enough to type; unguessable enough, as a path that is not
 * the caller's answers exactly like one that does not exist. */
int manager_new_session_id(Manager *m, uint64_t *ret) {
        for (unsigned attempt = 0; attempt < 16; attempt++) {
                uint64_t id;

                if (getrandom(&id, sizeof(id), 0) != sizeof(id))
                        return -errno ?: -EIO;
                id &= SESSION_ID_MASK;
                if (id != 0 && !manager_find_session(m, id)) {
                        *ret = id;
                        return 0;
                }
        }
        return -EBUSY;
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

void manager_set_observer(Manager *m, const SessionCallbacks *observer, void *userdata) {
        m->observer = observer;
        m->observer_userdata = userdata;
}

static void on_session_changed(Session *s, SessionChange what, void *userdata) {
        Manager *m = ASSERT_PTR(userdata);

        if (m->observer && m->observer->on_changed)
                m->observer->on_changed(s, what, m->observer_userdata);
}

/* The trace is complete: the observers hear of it (Stop answered, SessionEnded sent),
 * then the session goes away, and with the last one a service that is shutting down. */
static void on_session_ended(Session *s, void *userdata) {
        Manager *m = ASSERT_PTR(userdata);

        if (m->observer && m->observer->on_ended)
                m->observer->on_ended(s, m->observer_userdata);

        if (s->prev)
                s->prev->next = s->next;
        else
                m->sessions = s->next;
        if (s->next)
                s->next->prev = s->prev;
        m->n_sessions--;
        manager_release_quota(m, s);
        session_free(s);

        if (m->exiting && !m->sessions)
                (void) sd_event_exit(m->event, 0);
}

static void on_session_free(Session *s, void *userdata) {
        Manager *m = ASSERT_PTR(userdata);

        if (m->observer && m->observer->on_free)
                m->observer->on_free(s, m->observer_userdata);
}

static const SessionCallbacks manager_session_callbacks = {
        .on_changed = on_session_changed,
        .on_ended = on_session_ended,
        .on_free = on_session_free,
        .on_snapshot_due = manager_snapshot_on_trigger,
};

void manager_add_session(Manager *m, Session *s) {
        Session **tail = &m->sessions;

        s->manager = m;
        s->callbacks = &manager_session_callbacks;
        s->callbacks_userdata = m;
        /* Appended, so that ListSessions answers in the order the sessions started. */
        while (*tail) {
                s->prev = *tail;
                tail = &(*tail)->next;
        }
        *tail = s;
        m->n_sessions++;
        /* The apps that record its data sources, set up now (or, armed, when it records). */
        if (session_producers_start(s, m->producers) < 0)
                log_warning("Session %" PRIu64 ": the apps of its data sources cannot be set up.", s->id);
}

bool manager_is_idle(Manager *m) {
        /* Connected apps keep the service: they would activate it again at once, as the
         * SDK reconnects whenever the socket answers. */
        return !m->sessions && !m->pending_starts && !m->exiting && !(m->producers && m->producers->list);
}

void manager_shutdown(Manager *m) {
        if (m->exiting)
                return;
        m->exiting = true;
        log_info("Shutting down: finishing %u session(s).", m->n_sessions);
        manager_cancel_starts(m);
        if (!m->sessions) {
                (void) sd_event_exit(m->event, 0);
                return;
        }
        for (Session *s = m->sessions; s; s = s->next)
                (void) session_stop(s, SESSION_END_SERVICE_SHUTDOWN);
}
