/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>

/*
 * Perfetto's predefined atrace categories (traced_probes' predefined tracepoints, v58):
 * the kernel events that an atrace category word ("sched", "freq", "idle", ...) enables
 * even where there is no atrace, as on Linux. Entries are "group/name" or "group/ *" (a
 * whole group). Events of a category that this kernel lacks are left out without a
 * warning, as Perfetto does for the accessible ones: a category is "what this kernel
 * has of it"; only a category with nothing at all here is a warning.
 */

/* The kernel events of category @name, NULL-terminated, or NULL when @name has no
 * kernel side (an Android userspace category such as "am", or no category at all). */
const char *const *atrace_category_events(const char *name);

/* The @i-th category with a kernel side, in name order; NULL past the last. */
const char *atrace_category_name(size_t i);
