/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <string.h>

#include "bus-errors.h"
#include "log.h"
#include "manager-dbus.h"
#include "manager-start-dbus.h"
#include "manager-triggers-dbus.h"
#include "core/output-fd.h"
#include "sources/perf/perf-sampler.h"
#include "session-dbus.h"
#include "strv.h"
#include "core/trace-dir.h"
#include "kernel/tracefs-instance.h"

int bus_take_output_fd(int fd, uid_t uid, int *ret, sd_bus_error *error) {
        const char *why = NULL;
        int r;

        r = output_fd_take(fd, uid, ret, &why);
        if (r == -EPERM)
                return sd_bus_error_set(error, TB_ERROR_OUTPUT_REFUSED, why);
        if (r == -ENXIO)
                return sd_bus_error_set(error, TB_ERROR_OUTPUT_ERROR, why);
        if (why)
                return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS, why);
        if (r < 0)
                return sd_bus_error_set_errnof(error, r, "Cannot use the Output file descriptor: %m");
        return 0;
}

/* The session; for Start, also what of its config the service skipped or changed. */
static int reply_with_session(sd_bus_message *m, Session *s, bool warnings) {
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

static int trace_dir_error(Manager *m, uid_t uid, const StartResult *res, sd_bus_error *error) {
        _cleanup_free_ char *entry = res->refused_entry ? printable_copy(res->refused_entry) : NULL;

        if (!res->refused_entry)
                return sd_bus_error_setf(error, TB_ERROR_TRACE_DIRECTORY_REFUSED,
                                         "%s/traces/%u holds more than %u entries; delete some.",
                                         m->state_dir, (unsigned) uid, TRACE_DIR_MAX_ENTRIES);
        return sd_bus_error_setf(error, TB_ERROR_TRACE_DIRECTORY_REFUSED,
                                 "%s/traces/%u/%.128s is not a plain file (a directory, a link or a file with "
                                 "other names), which the quota cannot count; remove it.",
                                 m->state_dir, (unsigned) uid, strempty(entry));
}

static int start_error(Manager *m, int r, const StartResult *res, sd_bus_error *error) {
        const StartRequest *req = res->request;

        switch (res->failure) {
        case START_FAILURE_USER_LIMIT:
                return sd_bus_error_setf(error, TB_ERROR_TOO_MANY_SESSIONS,
                                         "You have %u tracing sessions already; stop one first.",
                                         m->limits.max_sessions_per_uid);
        case START_FAILURE_SERVICE_LIMIT:
                return sd_bus_error_setf(error, TB_ERROR_TOO_MANY_SESSIONS,
                                         "The service runs its limit of %u sessions; try again later.",
                                         m->limits.max_sessions);
        case START_FAILURE_KEY_IN_USE:
                return session_dbus_key_error(r, req->detach_key, error);
        case START_FAILURE_SESSION_ID:
                return sd_bus_error_set_errnof(error, r, "Failed to pick a session id: %m");
        case START_FAILURE_TRACE_DIR:
                return trace_dir_error(m, req->uid, res, error);
        case START_FAILURE_NAME_IN_USE:
                return sd_bus_error_setf(error, TB_ERROR_SESSION_NAME_IN_USE,
                                         "A trace with this unique session name (%.256s) already exists.",
                                         req->config.unique_session_name);
        case START_FAILURE_OUTPUT:
                if (r == -EDQUOT)
                        return sd_bus_error_setf(error, TB_ERROR_QUOTA_EXCEEDED,
                                                 "Your traces in %s/traces/%u use up the quota of %" PRIu64 " KiB; delete some.",
                                                 m->state_dir, (unsigned) req->uid, m->limits.trace_dir_quota_bytes >> 10);
                return sd_bus_error_set_errnof(error, r, "Failed to create a trace file in %s: %m", m->state_dir);
        case START_FAILURE_SHUTTING_DOWN:
        case START_FAILURE_USER_FILES:
        case START_FAILURE_SERVICE_FILES:
        case START_FAILURE_BUFFER_MEMORY:
                return bus_start_resource_error(m, req, res->failure, error);
        case START_FAILURE_TRACING:
        default:
                /* The unit's sandbox (or a drop-in) left tracefs read-only: the log said so
                 * at start; the caller hears it in the same words. */
                if (r == -EROFS)
                        return sd_bus_error_set(error, TB_ERROR_TRACING_UNAVAILABLE,
                                                "tracefs is read-only in this service's sandbox; "
                                                "an administrator must allow writing to /sys/kernel/tracing.");
                return sd_bus_error_set_errnof(error, r, "Failed to start tracing: %m");
        }
}

/* An event the index still had, gone from tracefs (a probe removed a moment ago), is
 * UnknownEvent, as if the index had been read after; any other failure start_error(). */
static int start_failed(Manager *m, sd_bus_message *message, int r, const StartResult *res, sd_bus_error *error) {
        if (r == -ENOENT && res->failure == START_FAILURE_TRACING && start_recheck_events(message, m, error) < 0)
                return r;
        return start_error(m, r, res, error);
}

/* The session (or the refusal) of a start, which may come from the worker. */
static void on_session_started(Manager *m, int r, const StartResult *res, void *userdata) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *message = userdata;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        Session *s = res->session;

        if (r == -ECANCELED) {
                (void) sd_bus_reply_method_errorf(message, TB_ERROR_SHUTTING_DOWN, BUS_SHUTTING_DOWN_TEXT);
                return;
        }
        if (r >= 0 && !session_is_detached(s)) {
                r = session_dbus_bind(s, message);
                if (r < 0) {
                        (void) session_stop(s, SESSION_END_CLIENT_VANISHED);
                        r = sd_bus_error_set_errnof(&error, r, "Failed to track the caller: %m");
                }
        } else if (r < 0)
                r = start_failed(m, message, r, res, &error);
        if (r >= 0)
                r = reply_with_session(message, s, /* warnings= */ true);
        if (r < 0 && sd_bus_error_is_set(&error))
                (void) sd_bus_reply_method_error(message, &error);
        else if (r < 0)
                (void) sd_bus_reply_method_errnof(message, r, "Failed to start tracing: %m");
}

static void start_and_reply(BusRequest *req) {
        /* Answered from on_session_started(), which takes this reference. */
        manager_start_session(req->context->manager, &req->start, on_session_started,
                              sd_bus_message_ref(req->message));
}

/* perf (issue 24): linux.perf's scope against what the caller may sample, once polkit
 * said whether it holds org.tracebus.manage (perf-scope.c). */
static void authorize_perf_and_start(BusRequest *req) {
        pid_t pid = 0;
        int r;

        r = perf_scope_authorize(&req->start.config, req->uid, req->start.config.kernel_pointers_raw, &pid);
        if (r == -EPERM) {
                (void) sd_bus_reply_method_errorf(req->message, TB_ERROR_PROCESS_NOT_YOURS,
                                                  "linux.perf: process %d is another user's; sampling it needs "
                                                  "org.tracebus.manage", (int) pid);
                return;
        }
        if (r < 0) {
                (void) sd_bus_reply_method_errnof(req->message, r, "Failed to start tracing: %m");
                return;
        }
        start_and_reply(req);
}

static void on_kernel_pointers_result(BusRequest *req, int result) {
        /* Refused, or polkit could not say: hashed addresses, like everyone who may only record. */
        req->start.config.kernel_pointers_raw = result > 0;
        authorize_perf_and_start(req);
}

/* One more polkit question about a Start: the Start moves into a request of its own,
 * as polkit's answer frees @req. */
static int authorize_again(BusRequest *req, const char *action, bool interactive, void (*callback)(BusRequest *, int)) {
        _cleanup_(bus_request_freep) BusRequest *next = NULL;
        int r;

        r = bus_request_new(req->message, &next);
        if (r < 0)
                return r;
        start_request_done(&next->start);
        next->start = req->start;
        req->start = (StartRequest) { .uid = req->uid, .output_fd = -EBADF };
        return bus_request_authorize(req->context, &next, action, interactive, callback);
}

/* Raw kernel addresses are for root and the holders of org.tracebus.manage (as
 * kptr_restrict=1 shows them only to the privileged); the others' traces hold them
 * hashed (recorder.c). One more question for polkit, never with a dialog: whoever may
 * record is not asked to authenticate again for this. */
static int authorize_kernel_pointers(BusRequest *req) {
        if (req->uid == 0) {
                req->start.config.kernel_pointers_raw = true;
                authorize_perf_and_start(req);
                return 0;
        }
        return authorize_again(req, ACTION_MANAGE, /* interactive= */ false, on_kernel_pointers_result);
}

static void on_kprobes_result(BusRequest *req, int result) {
        int r;

        if (result < 0)
                return bus_request_reply_refusal(req, result, ACTION_KPROBES, "Probing or tracing kernel functions");
        r = authorize_kernel_pointers(req);
        if (r < 0)
                (void) sd_bus_reply_method_errnof(req->message, r, "Failed to start tracing: %m");
}

/* kprobe_events and enable_function_graph patch kernel code: org.tracebus.kprobes
 * (admin by default), asked with a dialog as the record action is, before anything is
 * created. */
static int authorize_kprobes(BusRequest *req) {
        if (req->uid == 0 || !req->start.config.needs_kprobes_action)
                return authorize_kernel_pointers(req);
        return authorize_again(req, ACTION_KPROBES, /* interactive= */ true, on_kprobes_result);
}

/* helper "triggers": CLONE_SNAPSHOT writes FILE.N into the trace directory only. */
static int check_trigger_output(BusRequest *req, sd_bus_error *error) {
        _cleanup_free_ char *why = NULL;
        int r = session_config_check_trigger_output(&req->start.config, req->start.output_fd >= 0, &why);

        return r < 0 && why ? sd_bus_error_set(error, TB_ERROR_INVALID_CONFIG, why) : r;
}

static void on_start_result(BusRequest *req, int result) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        /* polkit.c has logged the refusal, in words. */
        if (result < 0)
                return bus_request_reply_refusal(req, result, ACTION_RECORD, "Recording kernel traces");
        r = start_load_config(req->message, req->context->manager, &req->start.config, &error);
        if (r >= 0)
                r = check_trigger_output(req, &error);
        if (r >= 0)
                r = authorize_kprobes(req);
        if (r < 0 && sd_bus_error_is_set(&error))
                (void) sd_bus_reply_method_error(req->message, &error);
        else if (r < 0)
                (void) sd_bus_reply_method_errnof(req->message, r, "Failed to start tracing: %m");
}

static int method_start(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        BusContext *c = ASSERT_PTR(userdata);
        _cleanup_(start_options_done) StartOptions o = { .output_fd = -EBADF };
        _cleanup_(bus_request_freep) BusRequest *req = NULL;
        int r;

        if (c->manager->exiting)
                return bus_start_resource_error(c->manager, NULL, START_FAILURE_SHUTTING_DOWN, error);
        /* Before polkit, only what costs the same whatever the caller sent: the message's
         * caps, the key, the fd. Parsing and the kernel's events come once polkit said
         * yes (start_load_config()), so a refused caller cannot keep the loop busy. */
        r = start_read_arguments(message, &o, error);
        if (r < 0)
                return r;
        r = bus_request_new(message, &req);
        if (r < 0)
                return r;
        if (o.detach_key) {
                r = manager_check_detach_key(c->manager, req->uid, o.detach_key);
                if (r < 0)
                        return session_dbus_key_error(r, o.detach_key, error);
                req->start.detach_key = strdup(o.detach_key);
                if (!req->start.detach_key)
                        return -ENOMEM;
        }
        if (o.output_fd >= 0) {
                r = bus_take_output_fd(o.output_fd, req->uid, &req->start.output_fd, error);
                if (r < 0)
                        return r;
        }
        return bus_request_authorize(c, &req, ACTION_RECORD, /* interactive= */ true, on_start_result);
}

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

/* Reads a key argument and finds the caller's recording session detached under it. */
static int read_key_find_detached(Manager *m, sd_bus_message *message, const char **ret_key,
                                  Session **ret, sd_bus_error *error) {
        uid_t uid;
        int r;

        r = sd_bus_message_read(message, "s", ret_key);
        if (r < 0)
                return r;
        if (!session_detach_key_valid(*ret_key))
                return session_dbus_key_error(-EINVAL, *ret_key, error);
        r = bus_sender_euid(message, &uid);
        if (r < 0)
                return r;
        r = manager_find_detached(m, uid, *ret_key, ret);
        if (r < 0)
                return session_dbus_key_error(r, *ret_key, error);
        return 0;
}

static int method_attach(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        BusContext *c = ASSERT_PTR(userdata);
        const char *key;
        Session *s;
        int r;

        r = read_key_find_detached(c->manager, message, &key, &s, error);
        if (r < 0)
                return r;
        if (!s)
                return sd_bus_error_setf(error, TB_ERROR_NO_SUCH_SESSION,
                                         "You have no session detached under the key '%s'.", key);

        r = session_dbus_bind(s, message);
        if (r < 0)
                return r;
        session_set_detached(s, false, NULL);
        return reply_with_session(message, s, /* warnings= */ false);
}

static int method_is_detached(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        BusContext *c = ASSERT_PTR(userdata);
        const char *key;
        Session *s;
        int r;

        r = read_key_find_detached(c->manager, message, &key, &s, error);
        if (r < 0)
                return r;
        return sd_bus_reply_method_return(message, "b", s != NULL);
}

static int reply_session_list(Manager *m, sd_bus_message *message, uid_t uid, bool all) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r;

        r = sd_bus_message_new_method_return(message, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', "o");
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
        r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static void on_list_result(BusRequest *req, int result) {
        int r;

        /* Not a manager: the caller's own sessions, which need no authorization. */
        r = reply_session_list(req->context->manager, req->message, req->uid, result > 0);
        if (r < 0)
                (void) sd_bus_reply_method_errnof(req->message, r, "Failed to list sessions: %m");
}

static int method_list_sessions(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        BusContext *c = ASSERT_PTR(userdata);
        _cleanup_(bus_request_freep) BusRequest *req = NULL;
        int r;

        r = bus_request_new(message, &req);
        if (r < 0)
                return r;
        /* The way depends on the caller alone, never on what others run: were polkit asked
         * only when someone else has a session, the answer's latency would tell whether
         * other users are tracing. Root, whom polkit always allows, is not asked. */
        if (req->uid == 0)
                return reply_session_list(c->manager, message, req->uid, true);
        /* Listing never pops up an authentication dialog: without it, one's own sessions. */
        return bus_request_authorize(c, &req, ACTION_MANAGE, /* interactive= */ false, on_list_result);
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
                return bus_request_reply_refusal(req, result, ACTION_RECORD, "Listing the trace events");
        r = sd_bus_message_rewind(req->message, /* complete= */ true);
        if (r >= 0)
                r = sd_bus_message_read(req->message, "s", &glob);
        if (r >= 0 && !trace_instance_tracefs_root()) {
                (void) sd_bus_reply_method_errorf(req->message, TB_ERROR_TRACING_UNAVAILABLE,
                                                  "tracefs is not mounted at /sys/kernel/tracing.");
                return;
        }
        if (r >= 0)
                r = session_config_list_events(trace_instance_tracefs_root(), isempty_str(glob) ? "*" : glob, &events);
        if (r >= 0)
                r = reply_strv(req->message, events);
        if (r < 0)
                (void) sd_bus_reply_method_errnof(req->message, r, "Failed to list the trace events: %m");
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
        return bus_request_authorize(c, &req, ACTION_RECORD, /* interactive= */ false, on_list_events_result);
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
