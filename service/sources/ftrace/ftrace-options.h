/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "config/session-config.h"
#include "kernel/tracefs-instance.h"

/* Writes the FtraceConfig options session-config-ftrace.c checked into the session's own
 * instance, before its events are enabled and before tracing is switched on: clock,
 * CPU mask, thread ids (set_event_pid), options/, buffer_percent, the syscall filter. */
int ftrace_options_apply(TraceInstance *t, const SessionConfig *c);
