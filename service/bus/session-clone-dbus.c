/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <string.h>

#include "bus-context.h"
#include "bus-dict.h"
#include "bus-errors.h"
#include "fd-util.h"
#include "log.h"
#include "session-dbus.h"

/* Session.Clone and Manager.CloneDetached: validate, authorize, hand the session to
 * manager_clone_session(), and answer when the snapshot is written. The owner clones
 * without asking polkit, just as it may stop the session; anyone else needs
 * org.tracebus.manage, and without it gets NoSuchSession, the same answer as for a path
 * that names no session, so a refused caller learns nothing about others' sessions. */

typedef struct CloneOptions {
        uid_t uid;
        int fd;
        sd_bus_error *error;
} CloneOptions;

static int read_clone_option(sd_bus_message *m, const char *key, void *userdata) {
        CloneOptions *o = userdata;
        int passed, r;

        if (strcmp(key, "Output") != 0)
                return sd_bus_error_setf(o->error, SD_BUS_ERROR_INVALID_ARGS, "Unknown option '%s'.", key);
        if (o->fd >= 0)
                return sd_bus_error_set(o->error, SD_BUS_ERROR_INVALID_ARGS, "Option 'Output' is given twice.");
        r = sd_bus_message_read(m, "v", "h", &passed);
        if (r < 0)
                return sd_bus_error_set(o->error, SD_BUS_ERROR_INVALID_ARGS, "Option 'Output' has the wrong type.");
        return bus_take_output_fd(passed, o->uid, &o->fd, o->error);
}

/* The options: only Output (h), once. The dictionary is read no further than a key it
 * refuses, so a long one costs nothing. */
static int read_clone_options(sd_bus_message *m, uid_t uid, int *ret_fd, sd_bus_error *error) {
        CloneOptions o = { .uid = uid, .fd = -EBADF, .error = error };
        int r;

        r = bus_message_read_dict(m, read_clone_option, &o);
        if (r < 0) {
                safe_close(o.fd);
                return r;
        }
        *ret_fd = o.fd;
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

        r = bus_message_new_return_container(m, 'a', "{sv}", &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_append(reply, "{sv}{sv}{sv}{sv}{sv}",
                                  "Bytes", "t", res->bytes,
                                  "Events", "t", res->events,
                                  "OutputPath", "s", path ?: "",
                                  "CopyUsec", "t", res->copy_usec,
                                  "TotalUsec", "t", res->total_usec);
        if (r < 0)
                return r;
        r = bus_message_append_strv_entry(reply, "Warnings", res->streamed ? streamed : streamed + 1);
        if (r < 0)
                return r;
        return bus_message_close_and_send(reply);
}

static void on_cloned(Manager *m, int r, const SessionCloneResult *res, const char *path, void *userdata) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *message = userdata;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;

        if (r < 0) {
                (void) clone_error(r, &error);
                (void) sd_bus_reply_method_error(message, &error);
                return;
        }
        r = reply_result(message, res, path);
        if (r < 0)
                (void) sd_bus_reply_method_errnof(message, r, "Failed to send the snapshot's result: %m");
}

static int clone_session(BusContext *c, Session *s, uid_t uid, int fd, sd_bus_message *m) {
        manager_clone_session(c->manager, s, uid, fd, on_cloned, sd_bus_message_ref(m));
        return 1;
}

/* The Output fd waits in the request as Start's does, counted as held. */
static int prepare_clone(BusRequest *req, sd_bus_error *error) {
        return read_clone_options(req->message, req->uid, &req->start.output_fd, error);
}

static int act_clone(BusContext *c, BusRequest *req, Session *s) {
        return clone_session(c, s, req->uid, TAKE_FD(req->start.output_fd), req->message);
}

int session_dbus_clone(BusContext *c, const char *path, sd_bus_message *message, sd_bus_error *error) {
        static const SessionAction clone = {
                .prepare = prepare_clone, .act = act_clone, .what = "Cloning another user's session" };

        return session_dbus_act(c, path, message, &clone, error);
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
        if (r < 0)
                return sd_bus_error_set_errnof(error, r, "Cannot read the detach key: %m");
        r = bus_sender_euid(message, &uid);
        if (r < 0)
                return sd_bus_error_set_errnof(error, r, "Failed to learn the caller's user: %m");
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
