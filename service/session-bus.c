/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "errors.h"
#include "log.h"
#include "manager.h"
#include "session-bus.h"
#include "strv.h"

struct SessionBus {
        sd_bus_track *track;         /* the connection the session belongs to */
        char *owner_name;
        sd_bus_message **stops;      /* Stop calls waiting for the end */
        size_t n_stops;
};

int bus_sender_euid(sd_bus_message *m, uid_t *ret) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
        int r;

        /* EUID from the bus itself; no SD_BUS_CREDS_AUGMENT, which would read racy /proc data. */
        r = sd_bus_query_sender_creds(m, SD_BUS_CREDS_EUID, &creds);
        if (r < 0)
                return r;
        return sd_bus_creds_get_euid(creds, ret);
}

char *session_bus_path(const Session *s) {
        char *p;

        if (asprintf(&p, SESSION_PATH_PREFIX "/%" PRIu64, s->id) < 0)
                return NULL;
        return p;
}

Session *session_from_path(Manager *m, const char *path) {
        const char *e;
        char *end;
        uint64_t id;

        e = path && strncmp(path, SESSION_PATH_PREFIX "/", strlen(SESSION_PATH_PREFIX) + 1) == 0 ?
                path + strlen(SESSION_PATH_PREFIX) + 1 : NULL;
        if (!e || *e < '1' || *e > '9')
                return NULL;
        errno = 0;
        id = strtoull(e, &end, 10);
        if (errno != 0 || *end)
                return NULL;
        return manager_find_session(m, id);
}

static int session_bus_ensure(Session *s) {
        if (s->bus)
                return 0;
        s->bus = calloc(1, sizeof(*s->bus));
        return s->bus ? 0 : -ENOMEM;
}

static int on_owner_vanished(sd_bus_track *track, void *userdata) {
        Session *s = ASSERT_PTR(userdata);

        log_info("The client of session %" PRIu64 " left the bus; stopping it.", s->id);
        s->bus->track = sd_bus_track_unref(s->bus->track);
        (void) session_stop(s, SESSION_END_CLIENT_VANISHED);
        return 0;
}

int session_bus_bind(Session *s, sd_bus_message *m) {
        int r;

        r = session_bus_ensure(s);
        if (r < 0)
                return r;
        s->bus->track = sd_bus_track_unref(s->bus->track);
        free(s->bus->owner_name);
        s->bus->owner_name = strdup(sd_bus_message_get_sender(m));
        if (!s->bus->owner_name)
                return -ENOMEM;

        r = sd_bus_track_new(sd_bus_message_get_bus(m), &s->bus->track, on_owner_vanished, s);
        if (r < 0)
                return r;
        return sd_bus_track_add_sender(s->bus->track, m);
}

int session_bus_queue_stop(Session *s, sd_bus_message *m) {
        sd_bus_message **stops;
        int r;

        r = session_bus_ensure(s);
        if (r < 0)
                return r;
        stops = realloc(s->bus->stops, sizeof(*stops) * (s->bus->n_stops + 1));
        if (!stops)
                return -ENOMEM;
        s->bus->stops = stops;
        stops[s->bus->n_stops++] = sd_bus_message_ref(m);
        return 0;
}

int session_bus_append_stats(sd_bus_message *reply, const Session *s) {
        bool ending = s->state == SESSION_ENDED || s->state == SESSION_STOPPING;
        RecorderStats st;
        int r;

        session_get_stats(s, &st);
        r = sd_bus_message_open_container(reply, 'a', "{sv}");
        if (r < 0)
                return r;
        r = sd_bus_message_append(reply, "{sv}{sv}{sv}{sv}",
                                  "Events", "t", st.events,
                                  "Bytes", "t", st.bytes_written,
                                  "EventsLost", "t", st.events_lost,
                                  "Reason", "s", ending ? session_end_reason_to_string(s->end_reason) : "");
        if (r < 0)
                return r;
        /* OutputPath only when the service chose the file; a passed fd has no path here. */
        if (s->output_path) {
                r = sd_bus_message_append(reply, "{sv}", "OutputPath", "s", s->output_path);
                if (r < 0)
                        return r;
        }
        return sd_bus_message_close_container(reply);
}

static void reply_stops(Session *s) {
        for (size_t i = 0; i < s->bus->n_stops; i++) {
                _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
                int r;

                r = sd_bus_message_new_method_return(s->bus->stops[i], &reply);
                if (r >= 0)
                        r = session_bus_append_stats(reply, s);
                if (r >= 0)
                        r = sd_bus_send(NULL, reply, NULL);
                if (r < 0)
                        log_warning_errno(r, "Failed to answer Stop of session %" PRIu64 ", ignoring: %m", s->id);
                s->bus->stops[i] = sd_bus_message_unref(s->bus->stops[i]);
        }
        s->bus->n_stops = 0;
}

/* SessionEnded goes to the owner's connection only: other users learn nothing. */
static int send_session_ended(Session *s) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *signal = NULL;
        _cleanup_free_ char *path = session_bus_path(s);
        int r;

        if (!path)
                return -ENOMEM;
        if (!s->bus->owner_name)
                return 0;
        r = sd_bus_message_new_signal(s->manager->bus, &signal, "/org/tracebus/Tracebus1",
                                      "org.tracebus.Tracebus1.Manager", "SessionEnded");
        if (r < 0)
                return r;
        r = sd_bus_message_set_destination(signal, s->bus->owner_name);
        if (r < 0)
                return r;
        r = sd_bus_message_append(signal, "os", path, session_end_reason_to_string(s->end_reason));
        if (r < 0)
                return r;
        r = session_bus_append_stats(signal, s);
        if (r < 0)
                return r;
        return sd_bus_send(s->manager->bus, signal, NULL);
}

void session_bus_ended(Session *s) {
        int r;

        if (session_bus_ensure(s) < 0)
                return;
        session_bus_emit_state(s);
        reply_stops(s);
        r = send_session_ended(s);
        if (r < 0)
                log_warning_errno(r, "Failed to send SessionEnded for session %" PRIu64 ", ignoring: %m", s->id);
}

static void emit_changed(Session *s, char **names) {
        _cleanup_free_ char *path = session_bus_path(s);
        int r;

        if (!path || !s->manager->bus)
                return;
        r = sd_bus_emit_properties_changed_strv(s->manager->bus, path, "org.tracebus.Tracebus1.Session", names);
        if (r < 0)
                log_debug_errno(r, "Failed to emit PropertiesChanged, ignoring: %m");
}

void session_bus_emit_state(Session *s) {
        emit_changed(s, (char *[]) { (char *) "State", NULL });
}

void session_bus_emit_progress(Session *s) {
        emit_changed(s, (char *[]) { (char *) "BytesWritten", (char *) "EventsRecorded", (char *) "EventsLost", NULL });
}

void session_bus_free(Session *s) {
        if (!s->bus)
                return;
        /* Calls still waiting are answered: the service never leaves a caller hanging. */
        for (size_t i = 0; i < s->bus->n_stops; i++) {
                (void) sd_bus_reply_method_errorf(s->bus->stops[i], TB_ERROR_NO_SUCH_SESSION,
                                                  "The session went away before it ended.");
                sd_bus_message_unref(s->bus->stops[i]);
        }
        free(s->bus->stops);
        sd_bus_track_unref(s->bus->track);
        free(s->bus->owner_name);
        s->bus = mfree(s->bus);
}

/* The object tree: a session is visible only to its owner (and root). */

static bool may_see(sd_bus *bus, const Session *s) {
        sd_bus_message *m = sd_bus_get_current_message(bus);
        uid_t uid;

        if (!m || bus_sender_euid(m, &uid) < 0)
                return false;
        return uid == 0 || uid == s->owner_uid;
}

int session_object_find(sd_bus *bus, const char *path, const char *interface, void *userdata,
                        void **ret_found, sd_bus_error *error) {
        Manager *m = ASSERT_PTR(userdata);
        Session *s = session_from_path(m, path);

        if (!s || !may_see(bus, s))
                return 0;
        *ret_found = s;
        return 1;
}

int session_node_enumerator(sd_bus *bus, const char *path, void *userdata, char ***nodes, sd_bus_error *error) {
        Manager *m = ASSERT_PTR(userdata);
        _cleanup_strv_free_ char **l = NULL;

        for (Session *s = m->sessions; s; s = s->next) {
                _cleanup_free_ char *p = NULL;

                if (!may_see(bus, s))
                        continue;
                p = session_bus_path(s);
                if (!p || strv_extend(&l, p) < 0)
                        return -ENOMEM;
        }
        *nodes = TAKE_PTR(l);
        return 1;
}

/* Properties. */

static int property_get_state(sd_bus *bus, const char *path, const char *interface, const char *property,
                              sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Session *s = ASSERT_PTR(userdata);
        return sd_bus_message_append(reply, "s", session_state_to_string(s->state));
}

static int property_get_output_path(sd_bus *bus, const char *path, const char *interface, const char *property,
                                    sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Session *s = ASSERT_PTR(userdata);
        return sd_bus_message_append(reply, "s", strempty(s->output_path));
}

static int property_get_events(sd_bus *bus, const char *path, const char *interface, const char *property,
                               sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Session *s = ASSERT_PTR(userdata);
        return sd_bus_message_append_strv(reply, s->config.events);
}

static int property_get_duration(sd_bus *bus, const char *path, const char *interface, const char *property,
                                 sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Session *s = ASSERT_PTR(userdata);
        return sd_bus_message_append(reply, "u", s->config.duration_ms);
}

static int property_get_stat(sd_bus *bus, const char *path, const char *interface, const char *property,
                             sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Session *s = ASSERT_PTR(userdata);
        RecorderStats st;

        session_get_stats(s, &st);
        if (strcmp(property, "BytesWritten") == 0)
                return sd_bus_message_append(reply, "t", st.bytes_written);
        if (strcmp(property, "EventsRecorded") == 0)
                return sd_bus_message_append(reply, "t", st.events);
        return sd_bus_message_append(reply, "t", st.events_lost);
}

static int method_session_stop(sd_bus_message *m, void *userdata, sd_bus_error *error);

const sd_bus_vtable session_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("State", "s", property_get_state, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("OutputPath", "s", property_get_output_path, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("OwnerUid", "u", NULL, offsetof(Session, owner_uid), SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Events", "as", property_get_events, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("DurationMs", "u", property_get_duration, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("StartedAt", "t", NULL, offsetof(Session, started_at_usec), SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("BytesWritten", "t", property_get_stat, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("EventsRecorded", "t", property_get_stat, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("EventsLost", "t", property_get_stat, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_METHOD_WITH_ARGS("Stop", SD_BUS_NO_ARGS, SD_BUS_RESULT("a{sv}", stats),
                                method_session_stop, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_VTABLE_END
};

/* Stop, on the Manager (with a path) or on the session itself. */
int session_bus_method_stop(Session *s, sd_bus_message *m, sd_bus_error *error) {
        uid_t uid;
        int r;

        r = bus_sender_euid(m, &uid);
        if (r < 0)
                return r;
        if (uid != 0 && uid != s->owner_uid)
                return sd_bus_error_set(error, SD_BUS_ERROR_ACCESS_DENIED,
                                        "This tracing session belongs to another user.");

        r = session_bus_queue_stop(s, m);
        if (r < 0)
                return r;
        (void) session_stop(s, SESSION_END_STOPPED);
        /* Answered from session_bus_ended(), once the trace is complete. */
        return 1;
}

static int method_session_stop(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        return session_bus_method_stop(ASSERT_PTR(userdata), m, error);
}
