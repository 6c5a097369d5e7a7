/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

#include "tracebus-bus.h"

/* Maps our names to errno values, so that sd-bus clients get a meaningful errno
 * from sd_bus_error_get_errno(). Register with sd_bus_error_add_map(). */
extern const sd_bus_error_map tracebus_error_map[];

/* A sentence a person can act on for a D-Bus error name, or NULL if we have none. */
const char *tracebus_error_explain(const char *name);
