/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * linux.ftrace in the registry of data sources: the kernel's ring buffer, read by the
 * session's recorder. Its part of the config is SessionConfig's ftrace fields, which
 * config/ loads itself, before every other section (the buffers and other sources refer
 * to its events): so it has no load, no section of its own, and nothing to start or stop
 * beside the recorder. What it does is the session's tracefs instance, when the session is
 * made: created, set up (options, function graph, kprobes) and its events enabled, before
 * the recorder exists and before an armed session records.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ftrace-funcgraph.h"
#include "ftrace-options.h"
#include "ftrace-source.h"
#include "kprobes.h"
#include "log.h"
#include "strv.h"

static const char *const ftrace_source_names[] = { "linux.ftrace", NULL };

/* As Perfetto: an event the kernel refuses to enable is skipped, with a warning, and listed
 * in FtraceStats.failed_ftrace_events; only a session that asked for events and is left
 * with none fails (the error of the first, so that a removed event is still UnknownEvent). */
#define FAILED_EVENTS_KEPT 32u

static int enable_events(TraceInstance *instance, SessionConfig *c) {
        _cleanup_strv_free_ char **enabled = NULL;
        int r, first_error = 0;

        STRV_FOREACH(e, c->events) {
                r = trace_instance_enable_event(instance, *e);
                if (r >= 0) {
                        if (strv_extend(&enabled, *e) < 0)
                                return -ENOMEM;
                        continue;
                }
                if (r == -ENOMEM)
                        return r;
                log_warning_errno(r, "Failed to enable event %s, skipping it: %m", *e);
                first_error = first_error ?: r;
                if (strv_length(c->failed_ftrace_events) < FAILED_EVENTS_KEPT &&
                    strv_extend(&c->failed_ftrace_events, *e) < 0)
                        return -ENOMEM;
                if (session_config_warn(c, "ftrace event '%s' could not be enabled (%s): skipped", *e, strerror(-r)) < 0)
                        return -ENOMEM;
        }
        if (!enabled && first_error < 0)
                return first_error;
        strv_free(c->events);
        c->events = TAKE_PTR(enabled);
        return 0;
}

static int ftrace_setup_instance(DataSourceInstance *si) {
        SessionConfig *c = si->config;
        char name[64];
        int r;

        /* No ftrace events (a config of polling data sources only): no instance at all,
         * so no kernel buffer memory and nothing in tracefs. */
        if (!c->events)
                return 0;
        snprintf(name, sizeof(name), "tracebus-%d-%" PRIu64, (int) getpid(), si->session_id);
        r = trace_instance_new(name, c->buffer_size_kb, &si->instance);
        if (r < 0)
                return log_error_errno(r, "Failed to create tracefs instance %s: %m", name);
        r = ftrace_options_apply(si->instance, c);
        if (r >= 0)
                r = ftgraph_session_setup(si->instance, c, si->session_id);
        if (r < 0)
                return r;

        r = enable_events(si->instance, c);
        if (r < 0)
                return log_error_errno(r, "Failed to enable the session's events: %m");
        return 0;
}

/* kprobe_events are global to the machine, not the instance's: removed by session. */
static void ftrace_teardown_instance(const SessionConfig *c, uint64_t session_id) {
        if (c->kprobes)
                kprobes_remove_session(session_id);
}

/* A caller without org.tracebus.manage records the events of config/session-config-access.c's
 * table only: a named refused event, or none left, refuses the Start (-EKEYREJECTED). */
static int ftrace_apply_rights(SessionConfig *c, void *section, uid_t owner_uid, bool manage) {
        if (manage) {
                session_config_forget_refused(c);
                return 0;
        }
        return session_config_restrict_to_record_only(c);
}

const DataSourceOps ftrace_data_source = {
        .names = ftrace_source_names,
        .setup_instance = ftrace_setup_instance,
        .teardown_instance = ftrace_teardown_instance,
        .apply_rights = ftrace_apply_rights,
        .visibility = {
                .unprivileged = "the kernel events of config/session-config-access.c's table the config names "
                                "(scheduling, interrupts, timers, power, block I/O, writeback, syscalls, memory, "
                                "network packets...: what /proc and sysfs show every user), from every process "
                                "and CPU of the machine; never the kernel log, virtual machines, bus data or "
                                "probes someone else defined (EventNotAllowed when named, a warning when a glob "
                                "chose them); every pointer-sized number not known to hold no address (kernel "
                                "addresses, page frames, user addresses) replaced by a keyed hash of that trace "
                                "alone, as kptr_restrict would hide them, except the code addresses "
                                "symbolize_ksyms names as functions; kprobes and the function graph ask polkit's "
                                "org.tracebus.kprobes first",
                .with_manage = "every kernel event, and its numbers as the kernel wrote them (the Start asks "
                               "whether the caller holds org.tracebus.manage)",
        },
};
