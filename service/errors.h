/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

/* Errors a client can act on, beyond the standard org.freedesktop.DBus.Error.* ones. */
#define TB_ERROR_PREFIX                 "org.tracebus.Tracebus1.Error."
#define TB_ERROR_INVALID_CONFIG         TB_ERROR_PREFIX "InvalidConfig"
#define TB_ERROR_UNKNOWN_EVENT          TB_ERROR_PREFIX "UnknownEvent"
#define TB_ERROR_NO_SUCH_SESSION        TB_ERROR_PREFIX "NoSuchSession"
#define TB_ERROR_TOO_MANY_SESSIONS      TB_ERROR_PREFIX "TooManySessions"
#define TB_ERROR_KEY_IN_USE             TB_ERROR_PREFIX "KeyInUse"
#define TB_ERROR_OUTPUT_ERROR           TB_ERROR_PREFIX "OutputError"
#define TB_ERROR_QUOTA_EXCEEDED         TB_ERROR_PREFIX "QuotaExceeded"
#define TB_ERROR_TRACING_UNAVAILABLE    TB_ERROR_PREFIX "TracingUnavailable"
/* polkit gave no answer: the request is refused, but nobody decided it. */
#define TB_ERROR_AUTHORIZATION_UNAVAILABLE TB_ERROR_PREFIX "AuthorizationUnavailable"

/* Maps our names to errno values, so that sd-bus clients get a meaningful errno
 * from sd_bus_error_get_errno(). Register with sd_bus_error_add_map(). */
extern const sd_bus_error_map tracebus_error_map[];

/* A sentence a person can act on for a D-Bus error name, or NULL if we have none. */
const char *tracebus_error_explain(const char *name);
