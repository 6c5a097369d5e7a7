/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "bus-dict.h"
#include "bus-errors.h"
#include "log.h"
#include "session-dbus.h"
#include "strv.h"

/* What the bus layer keeps for a session (Session.observer_data). */
typedef struct SessionDBus {
        sd_bus_track *track;         /* the connection the session belongs to */
        char *owner_name;
        sd_bus_message **stops;      /* Stop calls waiting for the end */
        size_t n_stops;
} SessionDBus;

static BusContext *context_of(const Session *s) {
        return s->manager->observer_userdata;
}

char *session_dbus_path(const Session *s) {
        char *p;

        if (asprintf(&p, TB_SESSION_PATH_PREFIX "/%" PRIu64, s->id) < 0)
                return NULL;
        return p;
}

uint64_t session_id_from_path(const char *path) {
        const char *e;
        char *end;
        uint64_t id;

        e = path && strncmp(path, TB_SESSION_PATH_PREFIX "/", strlen(TB_SESSION_PATH_PREFIX) + 1) == 0 ?
                path + strlen(TB_SESSION_PATH_PREFIX) + 1 : NULL;
        if (!e || *e < '1' || *e > '9')
                return 0;
        errno = 0;
        id = strtoull(e, &end, 10);
        if (errno != 0 || *end)
                return 0;
        return id;
}

static SessionDBus *session_dbus_ensure(Session *s) {
        if (!s->observer_data)
                s->observer_data = calloc(1, sizeof(SessionDBus));
        return s->observer_data;
}

static int on_owner_vanished(sd_bus_track *track, void *userdata) {
        Session *s = ASSERT_PTR(userdata);
        SessionDBus *d = s->observer_data;

        d->track = sd_bus_track_unref(d->track);
        session_client_vanished(s);
        return 0;
}

int session_dbus_bind(Session *s, sd_bus_message *m) {
        SessionDBus *d = session_dbus_ensure(s);
        int r;

        if (!d)
                return -ENOMEM;
        d->track = sd_bus_track_unref(d->track);
        free(d->owner_name);
        d->owner_name = strdup(sd_bus_message_get_sender(m));
        if (!d->owner_name)
                return -ENOMEM;

        r = sd_bus_track_new(sd_bus_message_get_bus(m), &d->track, on_owner_vanished, s);
        if (r < 0)
                return r;
        return sd_bus_track_add_sender(d->track, m);
}

/* Detaches the session from its connection: it keeps recording when the client leaves. */
static void session_dbus_unbind(Session *s) {
        SessionDBus *d = s->observer_data;

        if (!d)
                return;
        d->track = sd_bus_track_unref(d->track);
        d->owner_name = mfree(d->owner_name);
}

/* Keeps a Stop call to answer once the trace is complete. */
static int session_dbus_queue_stop(Session *s, sd_bus_message *m) {
        SessionDBus *d = session_dbus_ensure(s);
        sd_bus_message **stops;

        if (!d)
                return -ENOMEM;
        stops = realloc(d->stops, sizeof(*stops) * (d->n_stops + 1));
        if (!stops)
                return -ENOMEM;
        d->stops = stops;
        stops[d->n_stops++] = sd_bus_message_ref(m);
        return 0;
}

/* Stop's a{sv} stats. */
static int append_stats(sd_bus_message *reply, const Session *s) {
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
        /* Every warning, those of the last moments included: a client that printed the
         * Warnings property as it grew may have missed the ones of the final drain. */
        r = bus_message_append_strv_entry(reply, "Warnings", s->config.warnings);
        if (r < 0)
                return r;
        return sd_bus_message_close_container(reply);
}

static void reply_stops(Session *s, SessionDBus *d) {
        for (size_t i = 0; i < d->n_stops; i++) {
                _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
                int r;

                r = sd_bus_message_new_method_return(d->stops[i], &reply);
                if (r >= 0)
                        r = append_stats(reply, s);
                if (r < 0)
                        log_warning_errno(r, "Stop of session %" PRIu64 ": cannot build the reply, ignoring: %m",
                                          s->id);
                else {
                        r = sd_bus_send(NULL, reply, NULL);
                        if (r < 0)
                                log_warning_errno(r, "Stop of session %" PRIu64 ": cannot send the reply, ignoring: %m",
                                                  s->id);
                }
                d->stops[i] = sd_bus_message_unref(d->stops[i]);
        }
        d->n_stops = 0;
}

/* SessionEnded goes to the owner's connection only: other users learn nothing. */
static int send_session_ended(sd_bus *bus, Session *s, const SessionDBus *d) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *signal = NULL;
        _cleanup_free_ char *path = session_dbus_path(s);
        int r;

        if (!d->owner_name)
                return 0;
        if (!path)
                return log_warning_errno(-ENOMEM, "Session %" PRIu64 ": cannot name its object path for "
                                         "SessionEnded, ignoring: %m", s->id);
        r = sd_bus_message_new_signal(bus, &signal, TB_MANAGER_PATH, TB_MANAGER_INTERFACE, "SessionEnded");
        if (r >= 0)
                r = sd_bus_message_set_destination(signal, d->owner_name);
        if (r >= 0)
                r = sd_bus_message_append(signal, "os", path, session_end_reason_to_string(s->end_reason));
        if (r >= 0)
                r = append_stats(signal, s);
        if (r < 0)
                return log_warning_errno(r, "Session %" PRIu64 ": cannot build the SessionEnded signal, ignoring: %m",
                                         s->id);
        r = sd_bus_send(bus, signal, NULL);
        if (r < 0)
                return log_warning_errno(r, "Session %" PRIu64 ": cannot send SessionEnded, ignoring: %m", s->id);
        return 0;
}

static int append_property(sd_bus_message *reply, const Session *s, const char *property);

static int append_changed(sd_bus_message *signal, const Session *s, char **names) {
        int r;

        r = sd_bus_message_append(signal, "s", TB_SESSION_INTERFACE);
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
        return r;
}

/* PropertiesChanged goes to the owner's connection only, like SessionEnded: a broadcast
 * would tell every user on the machine what this session records. */
static void emit_changed(sd_bus *bus, Session *s, char **names) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *signal = NULL;
        _cleanup_free_ char *path = session_dbus_path(s);
        SessionDBus *d = s->observer_data;
        int r;

        if (!path || !bus || !d || !d->owner_name)
                return;
        r = sd_bus_message_new_signal(bus, &signal, path, "org.freedesktop.DBus.Properties",
                                      "PropertiesChanged");
        if (r >= 0)
                r = sd_bus_message_set_destination(signal, d->owner_name);
        if (r >= 0)
                r = append_changed(signal, s, names);
        if (r < 0) {
                log_debug_errno(r, "Cannot build PropertiesChanged, ignoring: %m");
                return;
        }
        r = sd_bus_send(bus, signal, NULL);
        if (r < 0)
                log_debug_errno(r, "Cannot send PropertiesChanged, ignoring: %m");
}

static void emit_state(sd_bus *bus, Session *s) {
        emit_changed(bus, s, (char *[]) { (char *) "State", (char *) "Detached", NULL });
}

static void on_changed(Session *s, SessionChange what, void *userdata) {
        BusContext *c = ASSERT_PTR(userdata);

        if (what & SESSION_CHANGED_STATE)
                emit_state(c->bus, s);
        if (what & SESSION_CHANGED_PROGRESS)
                emit_changed(c->bus, s, (char *[]) { (char *) "BytesWritten", (char *) "EventsRecorded",
                                                     (char *) "EventsLost", NULL });
        if (what & SESSION_CHANGED_WARNINGS)
                emit_changed(c->bus, s, (char *[]) { (char *) "Warnings", NULL });
        if (what & SESSION_CHANGED_ROTATED)
                session_rotate_dbus_emit(c->bus, s);
        if (what & SESSION_CHANGED_TRIGGER_SNAPSHOTS)
                emit_changed(c->bus, s, (char *[]) { (char *) "TriggerSnapshots", NULL });
}

const char *session_dbus_owner(const Session *s) {
        const SessionDBus *d = s->observer_data;

        return d ? d->owner_name : NULL;
}

/* Answers the queued Stop calls and sends SessionEnded to the owner. */
static void on_ended(Session *s, void *userdata) {
        BusContext *c = ASSERT_PTR(userdata);
        SessionDBus *d = session_dbus_ensure(s);

        if (!d)
                return;
        emit_state(c->bus, s);
        reply_stops(s, d);
        (void) send_session_ended(c->bus, s, d);
}

void session_dbus_release(Session *s) {
        SessionDBus *d = s->observer_data;

        if (!d)
                return;
        /* Calls still waiting are answered: the service never leaves a caller hanging. */
        for (size_t i = 0; i < d->n_stops; i++) {
                (void) sd_bus_reply_method_errorf(d->stops[i], TB_ERROR_NO_SUCH_SESSION,
                                                  "The session went away before it ended.");
                sd_bus_message_unref(d->stops[i]);
        }
        free(d->stops);
        sd_bus_track_unref(d->track);
        free(d->owner_name);
        s->observer_data = mfree(d);
}

static void on_free(Session *s, void *userdata) {
        session_dbus_release(s);
}

const SessionCallbacks session_dbus_observer = {
        .on_changed = on_changed,
        .on_ended = on_ended,
        .on_free = on_free,
};

/* The object tree. A session object exists only for its owner and root: for everyone
 * else its path is no object at all (UnknownObject, as for a path no session has), it
 * is not enumerated, and nothing about it can be read. */

static bool session_visible(sd_bus *bus, const Session *s) {
        sd_bus_message *m = sd_bus_get_current_message(bus);
        uid_t uid;

        if (!m || bus_sender_euid(m, &uid) < 0)
                return false;
        return session_visible_to(s, uid);
}

int session_object_find(sd_bus *bus, const char *path, const char *interface, void *userdata,
                        void **ret_found, sd_bus_error *error) {
        Manager *m = ASSERT_PTR(userdata);
        Session *s = manager_find_session(m, session_id_from_path(path));

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
                p = session_dbus_path(s);
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
        { "Events", "as" }, { "DataSources", "as" }, { "DurationMs", "u" }, { "StartedAt", "t" },
        { "BytesWritten", "t" }, { "EventsRecorded", "t" }, { "EventsLost", "t" },
        { "Warnings", "as" },
        { "UniqueSessionName", "s" },
        { "TriggerSnapshots", "as" },
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
        if (strcmp(property, "DataSources") == 0)
                return sd_bus_message_append_strv(reply, s->config.data_sources);
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
        if (strcmp(property, "Warnings") == 0)
                return sd_bus_message_append_strv(reply, s->config.warnings);
        if (strcmp(property, "UniqueSessionName") == 0)
                return sd_bus_message_append(reply, "s", strempty(s->config.unique_session_name));
        if (strcmp(property, "TriggerSnapshots") == 0)
                return sd_bus_message_append_strv(reply, session_trigger_snapshots(s));
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

/* The one answer for a session the caller may not see. Another user's session and no
 * session at all get the same error, word for word, so that no one learns whether
 * someone else is recording. */
static int no_such_session(sd_bus_error *error) {
        return sd_bus_error_set(error, TB_ERROR_NO_SUCH_SESSION, "You have no such tracing session.");
}

static int stop_session(BusContext *c, BusRequest *req, Session *s) {
        int r;

        r = session_dbus_queue_stop(s, req->message);
        if (r < 0)
                return r;
        (void) session_stop(s, SESSION_END_STOPPED);
        /* Answered from on_ended(), once the trace is complete. */
        return 1;
}

/* The session, if polkit allowed and it still lives. Otherwise NULL, the call answered:
 * NoSuchSession whether the session exists or not, or InteractiveAuthorizationRequired. */
static Session *authorized_session(BusRequest *req, int result) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        Session *s;

        /* Only the interactive-authorization answer differs from "no such session", and
         * it is the same whether the session exists or not. */
        if (result == -EBADR) {
                bus_request_reply_refusal(req, result, TB_ACTION_MANAGE, req->session_action->what);
                return NULL;
        }
        /* The session may have ended while polkit thought. */
        s = manager_find_live_session(req->context->manager, req->session_id);
        if (result < 0 || !s) {
                (void) no_such_session(&error);
                (void) sd_bus_reply_method_error(req->message, &error);
                return NULL;
        }
        return s;
}

static void on_other_session_result(BusRequest *req, int result) {
        Session *s = authorized_session(req, result);
        int r;

        if (!s)
                return;
        r = req->session_action->act(req->context, req, s);
        if (r < 0)
                (void) sd_bus_reply_method_errnof(req->message, r, "%s failed: %m", req->session_action->what);
}

/* The longest path a session can have: the prefix, a slash and a 64-bit id in decimal. */
#define SESSION_PATH_MAX (sizeof(TB_SESSION_PATH_PREFIX "/18446744073709551615") - 1)

int session_dbus_act(BusContext *c, const char *path, sd_bus_message *message, const SessionAction *action,
                     sd_bus_error *error) {
        _cleanup_(bus_request_freep) BusRequest *req = NULL;
        Session *s;
        int r;

        /* A path longer than any session's names none, whoever runs what: refused at once,
         * before anything is kept of it. */
        if (strlen(path) > SESSION_PATH_MAX)
                return sd_bus_error_setf(error, TB_ERROR_REQUEST_TOO_LARGE,
                                         "The session argument is %zu bytes, longer than any session's path "
                                         "(%zu bytes).", strlen(path), SESSION_PATH_MAX);
        r = bus_request_new(message, &req);
        if (r < 0)
                return r;
        if (action->prepare) {
                r = action->prepare(req, error);
                if (r < 0)
                        return r;
        }
        req->session_id = session_id_from_path(path);
        s = manager_find_own_session(c->manager, req->session_id, req->uid);
        if (s)
                return action->act(c, req, s);
        /* Another user's session or none at all takes the same way: holders of
         * org.tracebus.manage may act on it, everyone else learns nothing, not even
         * from how long the answer took. */
        req->session_action = action;
        return bus_request_authorize(c, &req, TB_ACTION_MANAGE, /* interactive= */ true, on_other_session_result);
}

int session_dbus_stop(BusContext *c, const char *path, sd_bus_message *message, sd_bus_error *error) {
        static const SessionAction stop = { .act = stop_session, .what = "Stopping another user's session" };

        return session_dbus_act(c, path, message, &stop, error);
}

int session_dbus_key_error(int r, const char *key, sd_bus_error *error) {
        if (r == -EINVAL)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "A detach key is 1 to %u printable ASCII characters.", SESSION_DETACH_KEY_MAX);
        if (r == -EADDRINUSE)
                return sd_bus_error_setf(error, TB_ERROR_KEY_IN_USE,
                                         "Another of your sessions is detached under the key '%s'; "
                                         "attach to it, or pick another key.", key);
        return r;
}

static int detach_error(int r, const char *key, sd_bus_error *error) {
        if (r == -ESRCH)
                return no_such_session(error);
        if (r == -ESTALE)
                return sd_bus_error_set(error, TB_ERROR_NO_SUCH_SESSION, "The tracing session is ending.");
        if (r == -EEXIST)
                return sd_bus_error_setf(error, TB_ERROR_KEY_IN_USE, "The session is already detached under a key.");
        return session_dbus_key_error(r, key, error);
}

int session_dbus_detach(BusContext *c, const char *path, const char *key, sd_bus_message *message,
                        sd_bus_error *error) {
        _cleanup_free_ char *copy = NULL;
        Session *s;
        uid_t uid;
        int r;

        if (!session_detach_key_valid(key))
                return session_dbus_key_error(-EINVAL, key, error);
        r = bus_sender_euid(message, &uid);
        if (r < 0)
                return r;
        r = manager_check_detach(c->manager, session_id_from_path(path), uid, key, &s);
        if (r < 0)
                return detach_error(r, key, error);

        copy = strdup(key);
        if (!copy)
                return -ENOMEM;
        /* Unbound first: the client that detached hears no more of the session. */
        session_dbus_unbind(s);
        session_set_detached(s, true, TAKE_PTR(copy));
        return sd_bus_reply_method_return(message, NULL);
}

static int method_session_stop(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        Session *s = ASSERT_PTR(userdata);
        return session_dbus_stop(context_of(s), sd_bus_message_get_path(m), m, error);
}

static int method_session_detach(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        Session *s = ASSERT_PTR(userdata);
        const char *key;
        int r;

        r = sd_bus_message_read(m, "s", &key);
        if (r < 0)
                return r;
        return session_dbus_detach(context_of(s), sd_bus_message_get_path(m), key, m, error);
}

static int method_session_clone(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        Session *s = ASSERT_PTR(userdata);
        return session_dbus_clone(context_of(s), sd_bus_message_get_path(m), m, error);
}

int session_dbus_reply_path(sd_bus_message *m, Session *s, bool warnings) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ char *path = session_dbus_path(s);
        int r;

        if (!path)
                return -ENOMEM;
        r = sd_bus_message_new_method_return(m, &reply);
        if (r >= 0)
                r = sd_bus_message_append(reply, "o", path);
        if (r >= 0 && warnings)
                r = sd_bus_message_append_strv(reply, s->config.warnings);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

#define SESSION_PROPERTY(name, sig, flags) SD_BUS_PROPERTY(name, sig, property_get, 0, flags)

const sd_bus_vtable session_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SESSION_PROPERTY("State", "s", SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SESSION_PROPERTY("OwnerUid", "u", SD_BUS_VTABLE_PROPERTY_CONST),
        SESSION_PROPERTY("OutputPath", "s", SD_BUS_VTABLE_PROPERTY_CONST),
        SESSION_PROPERTY("Detached", "b", SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SESSION_PROPERTY("Events", "as", SD_BUS_VTABLE_PROPERTY_CONST),
        SESSION_PROPERTY("DataSources", "as", SD_BUS_VTABLE_PROPERTY_CONST),
        SESSION_PROPERTY("DurationMs", "u", SD_BUS_VTABLE_PROPERTY_CONST),
        SESSION_PROPERTY("StartedAt", "t", SD_BUS_VTABLE_PROPERTY_CONST),
        SESSION_PROPERTY("BytesWritten", "t", SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SESSION_PROPERTY("EventsRecorded", "t", SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SESSION_PROPERTY("EventsLost", "t", SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SESSION_PROPERTY("Warnings", "as", SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SESSION_PROPERTY("UniqueSessionName", "s", SD_BUS_VTABLE_PROPERTY_CONST),
        SESSION_PROPERTY("TriggerSnapshots", "as", SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_METHOD_WITH_ARGS("Stop", SD_BUS_NO_ARGS, SD_BUS_RESULT("a{sv}", stats),
                                method_session_stop, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Detach", SD_BUS_ARGS("s", key), SD_BUS_NO_RESULT,
                                method_session_detach, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("SetNextOutput", SD_BUS_ARGS("h", fd), SD_BUS_NO_RESULT,
                                session_rotate_dbus_set_next_output, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_SIGNAL_WITH_ARGS("Rotated", SD_BUS_ARGS("u", index), 0),
        SD_BUS_METHOD_WITH_ARGS("Clone", SD_BUS_ARGS("a{sv}", options), SD_BUS_RESULT("a{sv}", result),
                                method_session_clone, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_VTABLE_END
};
