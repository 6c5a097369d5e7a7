/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

/* Manager.ListProducers(): the handler in the manager's vtable (manager-dbus.c); userdata
 * is the BusContext. */
int method_list_producers(sd_bus_message *message, void *userdata, sd_bus_error *error);
