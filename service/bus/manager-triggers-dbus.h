/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

/* Manager.ActivateTriggers(as names) the handler of the
 * manager's vtable (manager-dbus.c), userdata the BusContext. */
int method_activate_triggers(sd_bus_message *message, void *userdata, sd_bus_error *error);
