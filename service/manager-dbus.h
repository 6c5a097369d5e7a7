/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "manager.h"

#define TRACEBUS_BUS_NAME "org.tracebus.Tracebus1"
#define TRACEBUS_OBJECT_PATH "/org/tracebus/Tracebus1"
#define TRACEBUS_MANAGER_INTERFACE "org.tracebus.Tracebus1.Manager"

/* Connects to the system bus ($DBUS_SYSTEM_BUS_ADDRESS honoured), exports the objects
 * and requests the name. */
int manager_connect_bus(Manager *m);
/* Cancels pending polkit queries and answers their callers. */
void manager_bus_done(Manager *m);

/* Stop and Detach, shared by the Manager's methods and the Session's own. */
/* Stop and Detach of the session at @path, from the Manager or the session object. A path
 * that is not the caller's session answers NoSuchSession, whether it exists or not. */
int manager_bus_stop(Manager *m, const char *path, sd_bus_message *message, sd_bus_error *error);
int manager_bus_detach(Manager *m, const char *path, const char *key, sd_bus_message *message,
                       sd_bus_error *error);
