/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

#include "bus-context.h"
#include "core/session.h"

/* The session objects, TB_SESSION_PATH_PREFIX/<id>: their properties, their own Stop
 * and Detach, and what the bus hears of a session (session_dbus_observer). */

extern const sd_bus_vtable session_vtable[];

/* The bus layer's SessionCallbacks (userdata: the BusContext): PropertiesChanged, the
 * answers to Stop and SessionEnded, all to the session's owner only. */
extern const SessionCallbacks session_dbus_observer;

int session_object_find(sd_bus *bus, const char *path, const char *interface, void *userdata,
                        void **ret_found, sd_bus_error *error);
int session_node_enumerator(sd_bus *bus, const char *path, void *userdata, char ***nodes, sd_bus_error *error);

/* The object path of @s, malloc'd. */
char *session_dbus_path(const Session *s);
/* The session id in an object path; 0 (no session's id) if it names none. */
uint64_t session_id_from_path(const char *path);

/* Binds the session's lifetime to the sender of @m: when it leaves the bus, the session stops. */
int session_dbus_bind(Session *s, sd_bus_message *m);
/* Drops what the bus layer keeps for @s; calls still waiting for its end are answered. */
void session_dbus_release(Session *s);

/* Stop and Detach of the session at @path, from the Manager or the session object. A path
 * that is not the caller's session answers NoSuchSession, whether it exists or not. */
int session_dbus_stop(BusContext *c, const char *path, sd_bus_message *message, sd_bus_error *error);
int session_dbus_detach(BusContext *c, const char *path, const char *key, sd_bus_message *message,
                        sd_bus_error *error);

/* The error for a detach key that manager_check_detach_key() refused. */
int session_dbus_key_error(int r, const char *key, sd_bus_error *error);

/* The unique name of the connection the session is bound to, or NULL. */
const char *session_dbus_owner(const Session *s);

/* session-rotate-dbus.c: Session.SetNextOutput(h), and the Rotated(u) signal sent to the
 * owner after each new chunk of a rotating session. */
int session_rotate_dbus_set_next_output(sd_bus_message *m, void *userdata, sd_bus_error *error);
void session_rotate_dbus_emit(sd_bus *bus, Session *s);
/* session-clone-dbus.c: Session.Clone of the session at @path, and Manager.CloneDetached;
 * both reply once the snapshot is written. */
int session_dbus_clone(BusContext *c, const char *path, sd_bus_message *message, sd_bus_error *error);
int manager_dbus_clone_detached(BusContext *c, sd_bus_message *message, sd_bus_error *error);

/* Replies to @m with @s's object path and, with @warnings, what of its config the
 * service skipped or changed (Start's reply; Attach's has the path alone). */
int session_dbus_reply_path(sd_bus_message *m, Session *s, bool warnings);

/* Runs @action on the session at @path: at once on the caller's own session, else (another
 * user's session, or none) once polkit allowed org.tracebus.manage, asked with a dialog.
 * Refused or gone, the caller hears NoSuchSession either way. */
int session_dbus_act(BusContext *c, const char *path, sd_bus_message *message, const SessionAction *action,
                     sd_bus_error *error);
