/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>

#include "config/session-config.h"

/*
 * kprobe_events: a session's probes. Dynamic events are global to the machine, so each
 * session's are in groups of its own, tbk<kind>_<pid>_<session>, kind p (kprobe) or r
 * (kretprobe), b and e for the kprobe and kretprobe of a KPROBE_TYPE_BOTH (the letter
 * gives the trace encoder the KprobeEvent type), named after the function as Perfetto
 * names its (perfetto_kprobes/<function>): sessions never clash, and what a crashed
 * service left is recognised at the next start. The events appear in every instance; a
 * session enables them in its own only.
 */

/* Creates @c's probes and adds their "group/name" to @c->events. A probe the kernel
 * refuses (no such function, not probeable) is a warning and skipped. */
int kprobes_create(SessionConfig *c, uint64_t session_id);
/* Removes the probes of session @session_id of this service. */
void kprobes_remove_session(uint64_t session_id);
/* Removes the probes of services no longer running (a crash). Returns how many. */
int kprobes_remove_stale(void);
