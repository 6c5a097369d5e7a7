/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <string.h>

#include "bus-errors.h"
#include "fd-util.h"
#include "log.h"
#include "manager-dbus.h"
#include "session-dbus.h"

/* Session.Clone and Manager.CloneDetached (helper "clone"): validate, authorize, hand the
 * session to manager_clone_session(), answer when the snapshot is written. The owner
 * clones without polkit, as it stops; anyone else needs org.tracebus.manage and, without
 * it, hears NoSuchSession, as for a path that is no session. */

/* The options: only Output (h), once. The dictionary is read no further than a key it
 * refuses, so a long one costs nothing. */
static int read_clone_options(sd_bus_message *m, uid_t uid, int *ret_fd, sd_bus_error *error) {
        _cleanup_close_ int fd = -EBADF;
        const char *key;
        int r;

        r = sd_bus_message_enter_container(m, 'a', "{sv}");
        while (r >= 0 && (r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
                int passed;

                r = sd_bus_message_read(m, "s", &key);
                if (r < 0)
                        return r;
                if (strcmp(key, "Output") != 0)
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "Unknown option '%s'.", key);
                if (fd >= 0)
                        return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS, "Option 'Output' is given twice.");
                r = sd_bus_message_read(m, "v", "h", &passed);
                if (r >= 0)
                        r = bus_take_output_fd(passed, uid, &fd, error);
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        if (r < 0)
                return r;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

static int clone_error(int r, sd_bus_error *error) {
        switch (r) {
        case -ESRCH:
        case -ECANCELED:
                return sd_bus_error_set(error, TB_ERROR_NO_SUCH_SESSION,
                                        "The tracing session is not recording (it is starting or ending).");
        case -EBUSY:
                return sd_bus_error_set(error, TB_ERROR_CLONE_RATE_LIMITED,
                                        "A snapshot of this session is being written, or the last one began less than "
                                        "CloneMinIntervalSec= (tracebusd.conf) ago.");
        case -ENOTDIR:
        case -ELOOP:
        case -EMLINK:
        case -E2BIG:
                return sd_bus_error_set(error, TB_ERROR_TRACE_DIRECTORY_REFUSED,
                                        "Your trace directory holds a subdirectory, a link or too many files.");
        default:
                return sd_bus_error_set_errnof(error, r, "Failed to write the snapshot: %m");
        }
}

static int reply_result(sd_bus_message *m, const SessionCloneResult *res, const char *path) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        /* A streamed session's buffers hold only what it has not written yet. */
        char *streamed[] = { (char *) "the session writes its trace into its output as it goes: the snapshot "
                                      "holds only what it had not written yet", NULL };
        int r;

        r = sd_bus_message_new_method_return(m, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "{sv}");
        if (r >= 0)
                r = sd_bus_message_append(reply, "{sv}{sv}{sv}{sv}{sv}",
                                          "Bytes", "t", res->bytes,
                                          "Events", "t", res->events,
                                          "OutputPath", "s", path ?: "",
                                          "CopyUsec", "t", res->copy_usec,
                                          "TotalUsec", "t", res->total_usec);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'e', "sv");
        if (r >= 0)
                r = sd_bus_message_append(reply, "s", "Warnings");
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'v', "as");
        if (r >= 0)
                r = sd_bus_message_append_strv(reply, res->streamed ? streamed : streamed + 1);
        for (int i = 0; i < 3 && r >= 0; i++)
                r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static void on_cloned(Manager *m, int r, const SessionCloneResult *res, const char *path, void *userdata) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *message = userdata;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;

        if (r >= 0)
                r = reply_result(message, res, path);
        if (r < 0) {
                (void) clone_error(r, &error);
                (void) sd_bus_reply_method_error(message, &error);
        }
}

static int clone_session(BusContext *c, Session *s, uid_t uid, int fd, sd_bus_message *m) {
        manager_clone_session(c->manager, s, uid, fd, on_cloned, sd_bus_message_ref(m));
        return 1;
}

static void on_clone_authorized(BusRequest *req, int result) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        Session *s;

        if (result == -EBADR)
                return bus_request_reply_refusal(req, result, TB_ACTION_MANAGE, "Cloning another user's session");
        s = manager_find_live_session(req->context->manager, session_id_from_path(req->session_path));
        if (result < 0 || !s) {
                (void) sd_bus_error_set(&error, TB_ERROR_NO_SUCH_SESSION, "You have no such tracing session.");
                (void) sd_bus_reply_method_error(req->message, &error);
                return;
        }
        (void) clone_session(req->context, s, req->uid, TAKE_FD(req->start.output_fd), req->message);
}

int session_dbus_clone(BusContext *c, const char *path, sd_bus_message *message, sd_bus_error *error) {
        _cleanup_(bus_request_freep) BusRequest *req = NULL;
        Session *s;
        int r;

        r = bus_request_new(message, &req);
        if (r < 0)
                return r;
        /* The Output fd waits in the request as Start's does, counted as held. */
        r = read_clone_options(message, req->uid, &req->start.output_fd, error);
        if (r < 0)
                return r;
        s = manager_find_own_session(c->manager, session_id_from_path(path), req->uid);
        if (s)
                return clone_session(c, s, req->uid, TAKE_FD(req->start.output_fd), message);
        req->session_path = strdup(path);
        if (!req->session_path)
                return -ENOMEM;
        return bus_request_authorize(c, &req, TB_ACTION_MANAGE, /* interactive= */ true, on_clone_authorized);
}

/* Manager.CloneDetached(s key, a{sv} options): the caller's own session detached under
 * @key (keys are per user: another user's never match). */
int manager_dbus_clone_detached(BusContext *c, sd_bus_message *message, sd_bus_error *error) {
        _cleanup_close_ int fd = -EBADF;
        const char *key;
        Session *s = NULL;
        uid_t uid;
        int r;

        r = sd_bus_message_read(message, "s", &key);
        if (r >= 0)
                r = bus_sender_euid(message, &uid);
        if (r < 0)
                return r;
        if (!session_detach_key_valid(key))
                return session_dbus_key_error(-EINVAL, key, error);
        r = read_clone_options(message, uid, &fd, error);
        if (r < 0)
                return r;
        r = manager_find_detached(c->manager, uid, key, &s);
        if (r < 0)
                return session_dbus_key_error(r, key, error);
        if (!s)
                return sd_bus_error_setf(error, TB_ERROR_NO_SUCH_SESSION,
                                         "You have no session detached under the key '%s'.", key);
        return clone_session(c, s, uid, TAKE_FD(fd), message);
}
