/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>

#include "config/session-config.h"
#include "kernel/tracefs-instance.h"

/*
 * What a session sets up in the kernel for the ftgraph options, before its events are
 * enabled: its kprobes (kprobes.c), then the function_graph tracer of its own instance
 * (set_ftrace_filter, set_graph_function, max_graph_depth, current_tracer). What the
 * kernel refuses is a warning in @c and that part is skipped: the function graph is never
 * switched on over every function when its filter could not be set.
 */
int ftgraph_session_setup(TraceInstance *t, SessionConfig *c, uint64_t session_id);
