/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The FtraceConfig options that live in tracefs, written into the session's instance.
 * Every name and value was checked when the config was loaded (session-config-ftrace.c):
 * the option names come from an allowlist, the others are numbers the service formats.
 */
#include <stdio.h>
#include <string.h>

#include "ftrace-options.h"
#include "log.h"
#include "strv.h"

static int write_tids(TraceInstance *t, const SessionConfig *c) {
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        FILE *f;

        if (c->n_tids_to_trace == 0)
                return 0;
        f = open_memstream(&text, &size);
        if (!f)
                return -ENOMEM;
        for (size_t i = 0; i < c->n_tids_to_trace; i++)
                fprintf(f, "%s%u", i > 0 ? " " : "", c->tids_to_trace[i]);
        if (fclose(f) != 0)
                return -ENOMEM;
        return trace_instance_write_file(t, "set_event_pid", text);
}

static int write_options(TraceInstance *t, const SessionConfig *c) {
        int r;

        for (char **o = c->tracefs_options; o && o[0] && o[1]; o += 2) {
                _cleanup_free_ char *file = NULL;

                if (asprintf(&file, "options/%s", o[0]) < 0)
                        return -ENOMEM;
                r = trace_instance_write_file(t, file, o[1]);
                if (r < 0)
                        return log_error_errno(r, "Failed to set tracefs option %s: %m", o[0]);
        }
        return 0;
}

/* Only for the raw_syscalls events the session records (syscall_events adds them). */
static int write_syscall_filter(TraceInstance *t, const SessionConfig *c) {
        int r;

        if (!c->syscall_filter)
                return 0;
        for (size_t i = 0; i < 2; i++) {
                const char *e = i == 0 ? "raw_syscalls/sys_enter" : "raw_syscalls/sys_exit";
                _cleanup_free_ char *file = NULL;

                if (!strv_contains(c->events, e))
                        continue;
                if (asprintf(&file, "events/%s/filter", e) < 0)
                        return -ENOMEM;
                r = trace_instance_write_file(t, file, c->syscall_filter);
                if (r < 0)
                        return log_error_errno(r, "Failed to filter %s on the syscall numbers: %m", e);
        }
        return 0;
}

int ftrace_options_apply(TraceInstance *t, const SessionConfig *c) {
        char number[16];
        int r;

        if (c->mono_raw_clock) {
                r = trace_instance_write_file(t, "trace_clock", "mono_raw");
                if (r < 0)
                        return log_error_errno(r, "Failed to select the mono_raw trace clock: %m");
        }
        if (c->tracing_cpumask) {
                r = trace_instance_write_file(t, "tracing_cpumask", c->tracing_cpumask);
                if (r < 0)
                        return log_error_errno(r, "Failed to set tracing_cpumask %s: %m", c->tracing_cpumask);
        }
        r = write_tids(t, c);
        if (r < 0)
                return log_error_errno(r, "Failed to write set_event_pid: %m");
        r = write_options(t, c);
        if (r < 0)
                return r;
        if (c->drain_buffer_percent > 0) {
                snprintf(number, sizeof(number), "%u", c->drain_buffer_percent);
                r = trace_instance_write_file(t, "buffer_percent", number);
                if (r < 0)
                        return log_error_errno(r, "Failed to set buffer_percent: %m");
        }
        return write_syscall_filter(t, c);
}
