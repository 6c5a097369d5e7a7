/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "bus-errors.h"
#include "log.h"
#include "manager-dbus.h"
#include "manager.h"
#include "session-dbus.h"
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

void session_bus_unbind(Session *s) {
        if (!s->bus)
                return;
        s->bus->track = sd_bus_track_unref(s->bus->track);
        s->bus->owner_name = mfree(s->bus->owner_name);
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
        /* EventsLost counts every event that is not in the trace: lost by the kernel, or
         * overwritten in (or refused by) the service's own buffer, as the next two say. */
        r = sd_bus_message_append(reply, "{sv}{sv}{sv}{sv}{sv}{sv}",
                                  "Events", "t", st.events,
                                  "Bytes", "t", st.bytes_written,
                                  "EventsLost", "t", st.events_lost,
                                  "KernelEventsLost", "t", st.kernel_events_lost,
                                  "EventsOverwritten", "t", st.events_overwritten,
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

static int append_property(sd_bus_message *reply, const Session *s, const char *property);

/* PropertiesChanged goes to the owner's connection only, like SessionEnded: a broadcast
 * would tell every user on the machine what this session records. */
static void emit_changed(Session *s, char **names) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *signal = NULL;
        _cleanup_free_ char *path = session_bus_path(s);
        int r;

        if (!path || !s->manager->bus || !s->bus || !s->bus->owner_name)
                return;
        r = sd_bus_message_new_signal(s->manager->bus, &signal, path, "org.freedesktop.DBus.Properties",
                                      "PropertiesChanged");
        if (r >= 0)
                r = sd_bus_message_set_destination(signal, s->bus->owner_name);
        if (r >= 0)
                r = sd_bus_message_append(signal, "s", SESSION_INTERFACE);
        if (r >= 0)
                r = sd_bus_message_open_container(signal, 'a', "{sv}");
        STRV_FOREACH(n, names) {
                if (r >= 0)
                        r = sd_bus_message_open_container(signal, 'e', "sv");
                if (r >= 0)
                        r = sd_bus_message_append(signal, "s", *n);
                if (r >= 0)
                        r = append_property(signal, s, *n);
                if (r >= 0)
                        r = sd_bus_message_close_container(signal);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(signal);
        if (r >= 0)
                r = sd_bus_message_append(signal, "as", 0);
        if (r >= 0)
                r = sd_bus_send(s->manager->bus, signal, NULL);
        if (r < 0)
                log_debug_errno(r, "Failed to emit PropertiesChanged, ignoring: %m");
}

void session_bus_emit_state(Session *s) {
        emit_changed(s, (char *[]) { (char *) "State", (char *) "Detached", NULL });
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

/* The object tree. A session object exists only for its owner and root: for everyone
 * else its path is no object at all (UnknownObject, as for a path no session has), it
 * is not enumerated, and nothing about it can be read. */

static bool session_visible(sd_bus *bus, const Session *s) {
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

        if (!s || !session_visible(bus, s))
                return 0;
        *ret_found = s;
        return 1;
}

int session_node_enumerator(sd_bus *bus, const char *path, void *userdata, char ***nodes, sd_bus_error *error) {
        Manager *m = ASSERT_PTR(userdata);
        _cleanup_strv_free_ char **l = NULL;

        for (Session *s = m->sessions; s; s = s->next) {
                _cleanup_free_ char *p = NULL;

                if (!session_visible(bus, s))
                        continue;
                p = session_bus_path(s);
                if (!p || strv_extend(&l, p) < 0)
                        return -ENOMEM;
        }
        *nodes = TAKE_PTR(l);
        return 1;
}

static const struct {
        const char *name;
        const char *signature;
} session_properties[] = {
        { "State", "s" }, { "OwnerUid", "u" }, { "OutputPath", "s" }, { "Detached", "b" },
        { "Events", "as" }, { "DurationMs", "u" }, { "StartedAt", "t" },
        { "BytesWritten", "t" }, { "EventsRecorded", "t" }, { "EventsLost", "t" },
};

/* Appends the bare value of @property. */
static int append_value(sd_bus_message *reply, const Session *s, const char *property) {
        RecorderStats st;

        session_get_stats(s, &st);
        if (strcmp(property, "State") == 0)
                return sd_bus_message_append(reply, "s", session_state_to_string(s->state));
        if (strcmp(property, "OwnerUid") == 0)
                return sd_bus_message_append(reply, "u", (uint32_t) s->owner_uid);
        if (strcmp(property, "OutputPath") == 0)
                return sd_bus_message_append(reply, "s", strempty(s->output_path));
        if (strcmp(property, "Detached") == 0)
                return sd_bus_message_append(reply, "b", session_is_detached(s));
        if (strcmp(property, "Events") == 0)
                return sd_bus_message_append_strv(reply, s->config.events);
        if (strcmp(property, "DurationMs") == 0)
                return sd_bus_message_append(reply, "u", s->config.duration_ms);
        if (strcmp(property, "StartedAt") == 0)
                return sd_bus_message_append(reply, "t", s->started_at_usec);
        if (strcmp(property, "BytesWritten") == 0)
                return sd_bus_message_append(reply, "t", st.bytes_written);
        if (strcmp(property, "EventsRecorded") == 0)
                return sd_bus_message_append(reply, "t", st.events);
        if (strcmp(property, "EventsLost") == 0)
                return sd_bus_message_append(reply, "t", st.events_lost);
        return -ENOENT;
}

/* Appends @property as a variant, for our own PropertiesChanged. */
static int append_property(sd_bus_message *reply, const Session *s, const char *property) {
        for (size_t i = 0; i < ELEMENTSOF(session_properties); i++) {
                int r;

                if (strcmp(session_properties[i].name, property) != 0)
                        continue;
                r = sd_bus_message_open_container(reply, 'v', session_properties[i].signature);
                if (r >= 0)
                        r = append_value(reply, s, property);
                return r < 0 ? r : sd_bus_message_close_container(reply);
        }
        return -ENOENT;
}

static int property_get(sd_bus *bus, const char *path, const char *interface, const char *property,
                        sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Session *s = ASSERT_PTR(userdata);

        /* Found only for the owner and root (session_object_find()). */
        return append_value(reply, s, property);
}

static int method_session_stop(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        Session *s = ASSERT_PTR(userdata);
        return manager_bus_stop(s->manager, sd_bus_message_get_path(m), m, error);
}

static int method_session_detach(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        Session *s = ASSERT_PTR(userdata);
        const char *key;
        int r;

        r = sd_bus_message_read(m, "s", &key);
        if (r < 0)
                return r;
        return manager_bus_detach(s->manager, sd_bus_message_get_path(m), key, m, error);
}

#define SESSION_PROPERTY(name, sig, flags) SD_BUS_PROPERTY(name, sig, property_get, 0, flags)

const sd_bus_vtable session_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SESSION_PROPERTY("State", "s", SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SESSION_PROPERTY("OwnerUid", "u", SD_BUS_VTABLE_PROPERTY_CONST),
        SESSION_PROPERTY("OutputPath", "s", SD_BUS_VTABLE_PROPERTY_CONST),
        SESSION_PROPERTY("Detached", "b", SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SESSION_PROPERTY("Events", "as", SD_BUS_VTABLE_PROPERTY_CONST),
        SESSION_PROPERTY("DurationMs", "u", SD_BUS_VTABLE_PROPERTY_CONST),
        SESSION_PROPERTY("StartedAt", "t", SD_BUS_VTABLE_PROPERTY_CONST),
        SESSION_PROPERTY("BytesWritten", "t", SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SESSION_PROPERTY("EventsRecorded", "t", SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SESSION_PROPERTY("EventsLost", "t", SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_METHOD_WITH_ARGS("Stop", SD_BUS_NO_ARGS, SD_BUS_RESULT("a{sv}", stats),
                                method_session_stop, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Detach", SD_BUS_ARGS("s", key), SD_BUS_NO_RESULT,
                                method_session_detach, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_VTABLE_END
};
