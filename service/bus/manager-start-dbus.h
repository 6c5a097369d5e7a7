/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

/* Manager.Start(s config, a{sv} options): the handler of the manager's vtable
 * (manager-dbus.c), userdata the BusContext. */
int method_start(sd_bus_message *message, void *userdata, sd_bus_error *error);
