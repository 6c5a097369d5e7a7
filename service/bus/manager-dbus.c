/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <string.h>

#include "bus-dict.h"
#include "bus-errors.h"
#include "log.h"
#include "manager-dbus.h"
#include "manager-start-dbus.h"
#include "manager-triggers-dbus.h"
#include "producers-dbus.h"
#include "session-dbus.h"
#include "strv.h"
#include "kernel/tracefs-instance.h"


static int method_stop(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        BusContext *c = ASSERT_PTR(userdata);
        const char *path;
        int r;

        r = sd_bus_message_read(message, "o", &path);
        if (r < 0)
                return r;
        return session_dbus_stop(c, path, message, error);
}

static int method_detach(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        BusContext *c = ASSERT_PTR(userdata);
        const char *path, *key;
        int r;

        r = sd_bus_message_read(message, "os", &path, &key);
        if (r < 0)
                return r;
        return session_dbus_detach(c, path, key, message, error);
}

/* Reads a key argument and finds the caller's recording session detached under it:
 * Attach binds the caller to it, IsDetached only says whether there is one. */
static int find_detached(sd_bus_message *message, void *userdata, bool attach, sd_bus_error *error) {
        BusContext *c = ASSERT_PTR(userdata);
        const char *key;
        Session *s;
        uid_t uid;
        int r;

        r = sd_bus_message_read(message, "s", &key);
        if (r < 0)
                return r;
        if (!session_detach_key_valid(key))
                return session_dbus_key_error(-EINVAL, key, error);
        r = bus_sender_euid(message, &uid);
        if (r < 0)
                return r;
        r = manager_find_detached(c->manager, uid, key, &s);
        if (r < 0)
                return session_dbus_key_error(r, key, error);
        if (!attach)
                return sd_bus_reply_method_return(message, "b", s != NULL);
        if (!s)
                return sd_bus_error_setf(error, TB_ERROR_NO_SUCH_SESSION,
                                         "You have no session detached under the key '%s'.", key);
        r = session_dbus_bind(s, message);
        if (r < 0)
                return r;
        session_set_detached(s, false, NULL);
        return session_dbus_reply_path(message, s, /* warnings= */ false);
}

static int method_attach(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        return find_detached(message, userdata, /* attach= */ true, error);
}

static int method_is_detached(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        return find_detached(message, userdata, /* attach= */ false, error);
}

static int reply_session_list(Manager *m, sd_bus_message *message, uid_t uid, bool all) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r;

        r = bus_message_new_return_container(message, 'a', "o", &reply);
        if (r < 0)
                return r;
        for (Session *s = m->sessions; s; s = s->next) {
                _cleanup_free_ char *path = NULL;

                if (!all && s->owner_uid != uid)
                        continue;
                path = session_dbus_path(s);
                if (!path)
                        return -ENOMEM;
                r = sd_bus_message_append(reply, "o", path);
                if (r < 0)
                        return r;
        }
        return bus_message_close_and_send(reply);
}

static void on_list_result(BusRequest *req, int result) {
        int r;

        /* Not a manager: the caller's own sessions, which need no authorization. */
        r = reply_session_list(req->context->manager, req->message, req->uid, result > 0);
        if (r < 0)
                (void) sd_bus_reply_method_errnof(req->message, r, "Failed to list sessions: %m");
}

static int method_list_sessions(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        /* The way depends on the caller alone, never on what others run: were polkit asked
         * only when someone else has a session, the answer's latency would tell whether
         * other users are tracing. Listing never pops up an authentication dialog: without
         * it, one's own sessions. */
        return bus_request_authorize_listing(ASSERT_PTR(userdata), message, on_list_result);
}

static int reply_strv(sd_bus_message *message, char **l) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r;

        r = sd_bus_message_new_method_return(message, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_append_strv(reply, l);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

/* ListEvents' glob, in bytes. The longest event, "group/name", is 257 bytes; a glob
 * that spells it with brackets or escapes is longer, and 512 leaves room for any glob
 * that names real events while bounding the matching each listing costs. */
#define LIST_EVENTS_GLOB_MAX 512u

static void on_list_events_result(BusRequest *req, int result) {
        _cleanup_strv_free_ char **events = NULL;
        const char *glob;
        int r;

        /* Asked without interaction: a challenge is a refusal here, said as one. */
        if (result == -EBADR)
                result = -EACCES;
        if (result < 0)
                return bus_request_reply_refusal(req, result, TB_ACTION_RECORD, "Listing the trace events");
        r = sd_bus_message_rewind(req->message, /* complete= */ true);
        if (r >= 0)
                r = sd_bus_message_read(req->message, "s", &glob);
        if (r < 0) {
                (void) sd_bus_reply_method_errnof(req->message, r, "Failed to read the glob again: %m");
                return;
        }
        if (!trace_instance_tracefs_root()) {
                (void) sd_bus_reply_method_errorf(req->message, TB_ERROR_TRACING_UNAVAILABLE,
                                                  "tracefs is not mounted at /sys/kernel/tracing.");
                return;
        }
        r = session_config_list_events(trace_instance_tracefs_root(), isempty_str(glob) ? "*" : glob, &events);
        if (r < 0) {
                (void) sd_bus_reply_method_errnof(req->message, r, "Failed to list the trace events: %m");
                return;
        }
        r = reply_strv(req->message, events);
        if (r < 0)
                (void) sd_bus_reply_method_errnof(req->message, r, "Failed to send the list of trace events: %m");
}

static int method_list_events(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        BusContext *c = ASSERT_PTR(userdata);
        _cleanup_(bus_request_freep) BusRequest *req = NULL;
        const char *glob;
        int r;

        r = sd_bus_message_read(message, "s", &glob);
        if (r < 0)
                return r;
        /* The glob is matched against every event on the event loop: its length is capped
         * before polkit is asked. */
        if (strlen(glob) > LIST_EVENTS_GLOB_MAX)
                return sd_bus_error_setf(error, TB_ERROR_REQUEST_TOO_LARGE,
                                         "The glob is %zu bytes, above the cap of %u bytes.", strlen(glob),
                                         LIST_EVENTS_GLOB_MAX);
        if (!trace_instance_tracefs_root())
                return sd_bus_error_set(error, TB_ERROR_TRACING_UNAVAILABLE,
                                        "tracefs is not mounted at /sys/kernel/tracing.");
        r = bus_request_new(message, &req);
        if (r < 0)
                return r;
        /* The events are for those who may enable them: polkit's record right, asked
         * without a dialog (a listing is no reason to authenticate). */
        return bus_request_authorize(c, &req, TB_ACTION_RECORD, /* interactive= */ false, on_list_events_result);
}

static int method_clone_detached(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        return manager_dbus_clone_detached(userdata, m, error);
}

static int method_clone(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        const char *path;
        int r = sd_bus_message_read(m, "o", &path);

        return r < 0 ? r : session_dbus_clone(userdata, path, m, error);
}

static const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD_WITH_ARGS("Start",
                                SD_BUS_ARGS("s", config, "a{sv}", options),
                                SD_BUS_RESULT("o", session, "as", warnings),
                                method_start, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Stop",
                                SD_BUS_ARGS("o", session),
                                SD_BUS_RESULT("a{sv}", stats),
                                method_stop, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Detach",
                                SD_BUS_ARGS("o", session, "s", key),
                                SD_BUS_NO_RESULT,
                                method_detach, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Attach",
                                SD_BUS_ARGS("s", key),
                                SD_BUS_RESULT("o", session),
                                method_attach, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("IsDetached",
                                SD_BUS_ARGS("s", key),
                                SD_BUS_RESULT("b", detached),
                                method_is_detached, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListEvents",
                                SD_BUS_ARGS("s", glob),
                                SD_BUS_RESULT("as", events),
                                method_list_events, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListSessions",
                                SD_BUS_NO_ARGS,
                                SD_BUS_RESULT("ao", sessions),
                                method_list_sessions, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListProducers",
                                SD_BUS_NO_ARGS,
                                SD_BUS_RESULT("a(tsuua(sas))", producers),
                                method_list_producers, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ActivateTriggers",
                                SD_BUS_ARGS("as", names),
                                SD_BUS_NO_RESULT,
                                method_activate_triggers, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Clone",
                                SD_BUS_ARGS("o", session, "a{sv}", options),
                                SD_BUS_RESULT("a{sv}", result),
                                method_clone, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("CloneDetached",
                                SD_BUS_ARGS("s", key, "a{sv}", options),
                                SD_BUS_RESULT("a{sv}", result),
                                method_clone_detached, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_SIGNAL_WITH_ARGS("SessionEnded",
                                SD_BUS_ARGS("o", session, "s", reason, "a{sv}", stats), 0),
        SD_BUS_VTABLE_END
};

static int export_objects(BusContext *c) {
        int r;

        r = sd_bus_add_object_vtable(c->bus, NULL, TB_MANAGER_PATH, TB_MANAGER_INTERFACE, manager_vtable, c);
        if (r < 0)
                return log_error_errno(r, "Failed to export the manager: %m");
        r = sd_bus_add_fallback_vtable(c->bus, NULL, TB_SESSION_PATH_PREFIX, TB_SESSION_INTERFACE,
                                       session_vtable, session_object_find, c->manager);
        if (r < 0)
                return log_error_errno(r, "Failed to export sessions: %m");
        r = sd_bus_add_node_enumerator(c->bus, NULL, TB_SESSION_PATH_PREFIX, session_node_enumerator, c->manager);
        if (r < 0)
                return log_error_errno(r, "Failed to add the session enumerator: %m");
        return 0;
}

int manager_dbus_connect(Manager *m, BusContext **ret) {
        _cleanup_(manager_dbus_freep) BusContext *c = NULL;
        int r;

        c = calloc(1, sizeof(*c));
        if (!c)
                return log_oom();
        c->manager = m;
        manager_set_observer(m, &session_dbus_observer, c);
        r = sd_bus_open_system(&c->bus);
        if (r < 0)
                return log_error_errno(r, "Failed to connect to the system bus: %m");
        r = export_objects(c);
        if (r < 0)
                return r;
        r = sd_bus_error_add_map(tracebus_error_map);
        if (r < 0)
                return r;
        r = sd_bus_attach_event(c->bus, m->event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                return log_error_errno(r, "Failed to attach the bus to the event loop: %m");
        r = sd_bus_request_name(c->bus, TB_BUS_NAME, 0);
        if (r < 0)
                return log_error_errno(r, "Failed to own %s: %m", TB_BUS_NAME);
        *ret = TAKE_PTR(c);
        return 0;
}

BusContext *manager_dbus_free(BusContext *c) {
        if (!c)
                return NULL;
        bus_context_cancel_requests(c);
        for (Session *s = c->manager->sessions; s; s = s->next)
                session_dbus_release(s);
        manager_set_observer(c->manager, NULL, NULL);
        sd_bus_flush_close_unref(c->bus);
        return mfree(c);
}

bool manager_dbus_check_idle(void *userdata) {
        BusContext *c = ASSERT_PTR(userdata);

        /* The only method calls the service itself makes are polkit queries, and each
         * belongs to a request on c->requests until polkit has answered. */
        return manager_is_idle(c->manager) && !c->requests;
}
