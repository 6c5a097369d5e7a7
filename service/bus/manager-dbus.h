/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "bus-context.h"

/* The Manager object, TB_MANAGER_PATH: Start, Stop, Detach, Attach, IsDetached,
 * ListEvents, ListSessions and SessionEnded. */

/* Connects to the system bus ($DBUS_SYSTEM_BUS_ADDRESS honoured), exports the manager
 * and the session objects, hears of @m's sessions and requests the name. */
int manager_dbus_connect(Manager *m, BusContext **ret);

/* Answers the calls still waiting for polkit and for sessions' ends, stops hearing of
 * the sessions and closes the connection. */
BusContext *manager_dbus_free(BusContext *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(BusContext *, manager_dbus_free);

/* True when the service may exit for being idle: the manager has nothing to do and no
 * call waits for polkit (the only method calls the service makes itself). */
bool manager_dbus_check_idle(void *userdata);
