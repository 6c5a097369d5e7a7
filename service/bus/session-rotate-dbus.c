/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Session.SetNextOutput and the Rotated signal. A rotating session that writes into the
 * caller's fds gets the fd of each next chunk from its owner ahead of time, and tells the
 * owner (and nobody else) when a chunk began, so that the owner can hand over the next. */
#include <inttypes.h>

#include "bus-context.h"
#include "bus-errors.h"
#include "fd-util.h"
#include "log.h"
#include "session-dbus.h"

int session_rotate_dbus_set_next_output(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        Session *s = ASSERT_PTR(userdata);
        _cleanup_close_ int own = -EBADF;
        uid_t uid;
        int fd, r;

        r = sd_bus_message_read(m, "h", &fd);
        if (r < 0)
                return r;
        r = bus_sender_euid(m, &uid);
        if (r < 0)
                return r;
        /* Root sees every session's object: only the owner hands over its outputs. */
        if (uid != s->owner_uid)
                return sd_bus_error_set(error, TB_ERROR_NO_SUCH_SESSION, "You have no such tracing session.");
        r = bus_take_output_fd(fd, uid, &own, error);
        if (r < 0)
                return r;
        r = session_set_next_output(s, TAKE_FD(own));
        if (r == -ENOTCONN)
                return sd_bus_error_set(error, TB_ERROR_INVALID_ROTATION,
                                        "The session does not rotate into your outputs (no RotateEveryMs or "
                                        "RotateBytes, or it writes into the trace directory).");
        if (r == -ESTALE)
                return sd_bus_error_set(error, TB_ERROR_NO_SUCH_SESSION, "The tracing session is ending.");
        if (r < 0)
                return r;
        return sd_bus_reply_method_return(m, NULL);
}

void session_rotate_dbus_emit(sd_bus *bus, Session *s) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *signal = NULL;
        _cleanup_free_ char *path = session_dbus_path(s);
        const char *owner = session_dbus_owner(s);
        int r;

        if (!path || !bus || !owner)
                return;
        r = sd_bus_message_new_signal(bus, &signal, path, TB_SESSION_INTERFACE, "Rotated");
        if (r >= 0)
                r = sd_bus_message_set_destination(signal, owner);
        if (r >= 0)
                r = sd_bus_message_append(signal, "u", s->chunk_index);
        if (r < 0) {
                log_debug_errno(r, "Cannot build the Rotated signal, ignoring: %m");
                return;
        }
        r = sd_bus_send(bus, signal, NULL);
        if (r < 0)
                log_debug_errno(r, "Cannot send the Rotated signal, ignoring: %m");
}
