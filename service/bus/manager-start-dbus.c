/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Manager.Start, top to bottom:
 *   method_start()        the arguments read against their caps (nothing parsed), the
 *                         key and the Output fd checked; polkit asked for recording.
 *   on_record_result()    the config parsed and loaded once, kept in the request; the
 *                         further rights it needs asked of polkit in one step.
 *   on_rights_result()    the rights applied (core/manager-sessions.c holds the rules);
 *                         the session started.
 *   on_session_started()  the reply: the session, or which step refused it.
 */
#include <inttypes.h>
#include <stdlib.h>

#include "bus-errors.h"
#include "manager-start-dbus.h"
#include "session-dbus.h"
#include "core/trace-dir.h"

/* The polkit action of each right a Start may need, and whether it is asked with a
 * dialog: kprobes patch kernel code, asked as recording is; raw addresses never with
 * one, as whoever may record is not asked to authenticate again for them. */
static const struct {
        StartRight right;
        PolkitAction action;
        const char *what;       /* for the refusal of a required right */
} start_rights[] = {
        { START_RIGHT_KPROBES, { TB_ACTION_KPROBES, /* interactive= */ true }, "Probing or tracing kernel functions" },
        { START_RIGHT_MANAGE, { TB_ACTION_MANAGE, /* interactive= */ false }, "Raw kernel pointers" },
};

/* What waits for the session to start: the caller's message, and the parsed config for
 * a recheck of the kernel's events when tracefs refused one. */
typedef struct StartReply {
        sd_bus_message *message;
        Tracebus__TraceConfig *trace_config;
        SessionConfigFlags flags;
} StartReply;

static StartReply *start_reply_free(StartReply *reply) {
        if (!reply)
                return NULL;
        sd_bus_message_unref(reply->message);
        trace_config_freep(&reply->trace_config);
        return mfree(reply);
}
DEFINE_TRIVIAL_CLEANUP_FUNC(StartReply *, start_reply_free);

static void on_record_result(BusRequest *req, int result);
static int authorize_rights(BusRequest *req);
static void on_rights_result(BusRequest *req, const int *results);
static void reply_event_not_allowed(BusRequest *req);
static int start_session(BusRequest *req);
static void on_session_started(Manager *m, int r, const StartResult *res, void *userdata);
static void reply_failure(sd_bus_message *m, int r, const sd_bus_error *error);
static int take_key_and_output(BusContext *c, BusRequest *req, sd_bus_error *error);
static int start_error(Manager *m, int r, const StartResult *res, sd_bus_error *error);

int method_start(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        BusContext *c = ASSERT_PTR(userdata);
        _cleanup_(bus_request_freep) BusRequest *req = NULL;
        int r;

        if (c->manager->exiting)
                return bus_start_resource_error(c->manager, NULL, START_FAILURE_SHUTTING_DOWN, error);
        r = bus_request_new(message, &req);
        if (r < 0)
                return r;
        /* Before polkit, only what costs the same whatever the caller sent: the message's
         * caps, the key, the fd. The config is parsed once polkit said yes, so a refused
         * caller cannot keep the loop busy. */
        r = start_read_arguments(message, &req->start_options, error);
        if (r < 0)
                return r;
        r = take_key_and_output(c, req, error);
        if (r < 0)
                return r;
        return bus_request_authorize(c, &req, TB_ACTION_RECORD, /* interactive= */ true, on_record_result);
}

/* polkit's answer on recording: the config parsed and loaded, once. */
static void on_record_result(BusRequest *req, int result) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        /* polkit.c has logged the refusal, in words. */
        if (result < 0)
                return bus_request_reply_refusal(req, result, TB_ACTION_RECORD, "Recording kernel traces");
        r = start_load_config(req->context->manager, &req->start_options, &req->trace_config, &req->start.config,
                              &error);
        if (r < 0)
                return reply_failure(req->message, r, &error);
        r = authorize_rights(req);
        if (r < 0)
                (void) sd_bus_reply_method_errnof(req->message, r, "Failed to ask polkit about the config's rights: %m");
}

/* Asks polkit, in one step, about every further right the loaded config needs or would
 * use; none to ask (root) goes on at once. */
static int authorize_rights(BusRequest *req) {
        static const int none[ELEMENTSOF(start_rights)] = {};
        PolkitAction actions[ELEMENTSOF(start_rights)];
        unsigned required, optional;
        size_t n = 0;

        manager_start_rights(&req->start, &required, &optional);
        for (size_t i = 0; i < ELEMENTSOF(start_rights); i++)
                if ((required | optional) & start_rights[i].right)
                        actions[n++] = start_rights[i].action;
        if (n == 0) {
                on_rights_result(req, none);
                return 0;
        }
        return bus_request_authorize_again(req, actions, n, on_rights_result);
}

/* polkit's answers on the further rights, in start_rights' order of those asked: a
 * required right refused refuses the start; the optional ones only change what it
 * records. */
static void on_rights_result(BusRequest *req, const int *results) {
        unsigned required, optional, granted = 0;
        size_t k = 0;
        pid_t pid = 0;
        int r;

        manager_start_rights(&req->start, &required, &optional);
        for (size_t i = 0; i < ELEMENTSOF(start_rights); i++) {
                if (!((required | optional) & start_rights[i].right))
                        continue;
                if (results[k] < 0 && (required & start_rights[i].right))
                        return bus_request_reply_refusal(req, results[k], start_rights[i].action.id,
                                                         start_rights[i].what);
                if (results[k++] > 0)
                        granted |= start_rights[i].right;
        }
        r = manager_grant_start_rights(&req->start, granted, &pid);
        if (r == -EKEYREJECTED)
                return reply_event_not_allowed(req);
        if (r == -EPERM) {
                (void) sd_bus_reply_method_errorf(req->message, TB_ERROR_PROCESS_NOT_YOURS,
                                                  "linux.perf: process %d is another user's; sampling it needs "
                                                  TB_ACTION_MANAGE, (int) pid);
                return;
        }
        if (r < 0) {
                (void) sd_bus_reply_method_errnof(req->message, r, "Failed to apply the caller's rights: %m");
                return;
        }
        r = start_session(req);
        if (r < 0)
                (void) sd_bus_reply_method_errnof(req->message, r, "Failed to start the session: %m");
}

/* A caller without org.tracebus.manage named kernel events only that right records. */
static void reply_event_not_allowed(BusRequest *req) {
        _cleanup_free_ char *text = session_config_refusal_text(&req->start.config);

        if (!text) {
                (void) sd_bus_reply_method_errnof(req->message, ENOMEM, "Failed to apply the caller's rights: %m");
                return;
        }
        (void) sd_bus_reply_method_errorf(req->message, TB_ERROR_EVENT_NOT_ALLOWED, "%s", text);
}

/* Hands the request's session to the manager, which answers through on_session_started(). */
static int start_session(BusRequest *req) {
        _cleanup_(start_reply_freep) StartReply *reply = calloc(1, sizeof(*reply));

        if (!reply)
                return -ENOMEM;
        reply->message = sd_bus_message_ref(req->message);
        reply->trace_config = TAKE_PTR(req->trace_config);
        reply->flags = start_config_flags(&req->start_options);
        manager_start_session(req->context->manager, &req->start, on_session_started, TAKE_PTR(reply));
        return 0;
}

/* The session (or the refusal) of a start, which may come from the worker. An event
 * the index still had, gone from tracefs (a probe removed a moment ago), is
 * UnknownEvent, as if the index had been read after. */
static void on_session_started(Manager *m, int r, const StartResult *res, void *userdata) {
        _cleanup_(start_reply_freep) StartReply *reply = userdata;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        Session *s = res->session;

        if (r == -ECANCELED) {
                (void) sd_bus_reply_method_errorf(reply->message, TB_ERROR_SHUTTING_DOWN, BUS_SHUTTING_DOWN_TEXT);
                return;
        }
        if (r < 0) {
                if (r != -ENOENT || res->failure != START_FAILURE_TRACING ||
                    start_recheck_events(m, reply->trace_config, reply->flags, &error) >= 0)
                        (void) start_error(m, r, res, &error);
                return reply_failure(reply->message, r, &error);
        }
        if (!session_is_detached(s)) {
                r = session_dbus_bind(s, reply->message);
                if (r < 0) {
                        (void) session_stop(s, SESSION_END_CLIENT_VANISHED);
                        (void) sd_bus_error_set_errnof(&error, r, "Failed to track the caller: %m");
                        return reply_failure(reply->message, r, &error);
                }
        }
        r = session_dbus_reply_path(reply->message, s, /* warnings= */ true);
        if (r < 0)
                (void) sd_bus_reply_method_errnof(reply->message, r, "Failed to send the session's path: %m");
}

/* ---- the replies ---- */

/* Answers @m with @error when it is set, else with @r's errno, saying that tracing did
 * not start. */
static void reply_failure(sd_bus_message *m, int r, const sd_bus_error *error) {
        if (sd_bus_error_is_set(error))
                (void) sd_bus_reply_method_error(m, error);
        else
                (void) sd_bus_reply_method_errnof(m, r, "Failed to start tracing: %m");
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

static int tracing_error(int r, sd_bus_error *error) {
        /* The unit's sandbox (or a drop-in) left tracefs read-only: the log said so at
         * start; the caller hears it in the same words. */
        if (r == -EROFS)
                return sd_bus_error_set(error, TB_ERROR_TRACING_UNAVAILABLE,
                                        "tracefs is read-only in this service's sandbox; "
                                        "an administrator must allow writing to /sys/kernel/tracing.");
        return sd_bus_error_set_errnof(error, r, "Failed to start tracing: %m");
}

/* The named error of a start that manager_start_session() refused, by the step that did. */
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
                return tracing_error(r, error);
        }
}

/* The detach key's shape and that it is free, and the Output fd, before polkit: they
 * cost the same whatever the caller sent. */
static int take_key_and_output(BusContext *c, BusRequest *req, sd_bus_error *error) {
        const StartOptions *o = &req->start_options;
        int r;

        if (o->detach_key) {
                r = manager_check_detach_key(c->manager, req->uid, o->detach_key);
                if (r < 0)
                        return session_dbus_key_error(r, o->detach_key, error);
                req->start.detach_key = strdup(o->detach_key);
                if (!req->start.detach_key)
                        return -ENOMEM;
        }
        if (o->output_fd >= 0)
                return bus_take_output_fd(o->output_fd, req->uid, &req->start.output_fd, error);
        return 0;
}
