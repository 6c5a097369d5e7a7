/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

#include "session.h"

#define SESSION_PATH_PREFIX "/org/tracebus/Tracebus1/session"
#define SESSION_INTERFACE "org.tracebus.Tracebus1.Session"

extern const sd_bus_vtable session_vtable[];

int session_object_find(sd_bus *bus, const char *path, const char *interface, void *userdata,
                        void **ret_found, sd_bus_error *error);
int session_node_enumerator(sd_bus *bus, const char *path, void *userdata, char ***nodes, sd_bus_error *error);

/* The object path of @s, malloc'd. */
char *session_bus_path(const Session *s);
/* Finds the session for an object path, or NULL. */
Session *session_from_path(Manager *m, const char *path);

/* Binds the session's lifetime to the sender of @m: when it leaves the bus, the session stops. */
int session_bus_bind(Session *s, sd_bus_message *m);
/* Detaches the session from its connection: it keeps recording when the client leaves. */
void session_bus_unbind(Session *s);
/* Keeps a Stop call to answer once the trace is complete. */
int session_bus_queue_stop(Session *s, sd_bus_message *m);
/* Stop's a{sv} stats. */
int session_bus_append_stats(sd_bus_message *reply, const Session *s);

/* Answers the queued Stop calls and sends SessionEnded to the owner. */
void session_bus_ended(Session *s);
void session_bus_emit_state(Session *s);
void session_bus_emit_progress(Session *s);
void session_bus_free(Session *s);

/* The caller's EUID, as the bus reports it (SO_PEERCRED): never from the message. */
int bus_sender_euid(sd_bus_message *m, uid_t *ret);
