/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <string.h>

#include "atrace-categories.h"
#include "session-config.h"
#include "strv.h"

/*
 * Perfetto's tolerance, and what it tells: an event this kernel lacks is
 * skipped with a warning and listed in FtraceStats.unknown_ftrace_events; an atrace
 * category enables the kernel events of Perfetto's predefined table; what has no kernel
 * side (Android's userspace categories, atrace_apps) is a warning and an atrace error.
 */

int session_config_atrace_patterns(const Tracebus__FtraceConfig *fc,
                                   int (*select)(const char *pattern, void *userdata), void *userdata) {
        int r;

        /* As Perfetto: atrace writes its markers through trace_marker, read as ftrace/print. */
        if (fc->n_atrace_categories + fc->n_atrace_apps > 0) {
                r = select("ftrace/print", userdata);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < fc->n_atrace_categories; i++) {
                const char *const *events = atrace_category_events(fc->atrace_categories[i]);

                for (size_t j = 0; events && events[j]; j++) {
                        r = select(events[j], userdata);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

int session_config_note_unknown_events(SessionConfig *c, char **unknown, size_t n_unknown) {
        size_t n_shown = strv_length(unknown);
        int r;

        STRV_FOREACH(e, unknown) {
                r = session_config_warn(c, "ftrace event '%s' does not exist on this kernel: skipped", *e);
                if (r >= 0)
                        r = strv_extend(&c->unknown_ftrace_events, *e);
                if (r < 0)
                        return r;
        }
        if (n_unknown > n_shown)
                return session_config_warn(c, "%zu more ftrace events do not exist on this kernel: skipped",
                                           n_unknown - n_shown);
        return 0;
}

/* FtraceStats.atrace_errors keeps the first few: the warnings count the rest. */
#define ATRACE_ERRORS_KEPT 32u

static int add_atrace_error(SessionConfig *c, const char *text) {
        if (strv_length(c->atrace_errors) >= ATRACE_ERRORS_KEPT)
                return 0;
        return strv_extend(&c->atrace_errors, text);
}

/* Whether @c records any event of @pattern ("group/name" or "group/ *"). */
static bool records_pattern(const SessionConfig *c, const char *pattern) {
        size_t n = strlen(pattern);
        bool group = n >= 2 && strcmp(pattern + n - 2, "/*") == 0;

        STRV_FOREACH(e, c->events)
                if (group ? strncmp(*e, pattern, n - 1) == 0 : strcmp(*e, pattern) == 0)
                        return true;
        return false;
}

static bool records_category(const SessionConfig *c, const char *const *events) {
        for (size_t i = 0; events[i]; i++)
                if (records_pattern(c, events[i]))
                        return true;
        return false;
}

static int atrace_error(SessionConfig *c, char **seen, const char *category) {
        const char *const *events = atrace_category_events(category);
        _cleanup_free_ char *text = NULL;
        int r;

        if (strv_contains(seen, category))
                return 0;
        if (events && records_category(c, events))
                return 0;
        if (asprintf(&text, "atrace category '%s' %s: skipped", category,
                     events ? "has none of its kernel events on this kernel" :
                              "has no kernel events (Android userspace only)") < 0)
                return -ENOMEM;
        r = session_config_warn(c, "%s", text);
        if (r < 0)
                return r;
        return add_atrace_error(c, text);
}

static int atrace_apps_error(SessionConfig *c, const Tracebus__FtraceConfig *fc) {
        _cleanup_free_ char *text = NULL;
        int r;

        if (fc->n_atrace_apps == 0)
                return 0;
        if (asprintf(&text, "atrace_apps ('%s'%s) is Android-only: skipped", fc->atrace_apps[0],
                     fc->n_atrace_apps > 1 ? " and more" : "") < 0)
                return -ENOMEM;
        r = session_config_warn(c, "%s", text);
        if (r < 0)
                return r;
        return add_atrace_error(c, text);
}

int session_config_load_atrace(const Tracebus__TraceConfig *tc, SessionConfig *c) {
        _cleanup_strv_free_ char **seen = NULL;
        const Tracebus__FtraceConfig *fc;
        int r;

        FOREACH_FTRACE_CONFIG(fc, tc) {
                for (size_t j = 0; j < fc->n_atrace_categories; j++) {
                        r = atrace_error(c, seen, fc->atrace_categories[j]);
                        if (r >= 0)
                                r = strv_extend(&seen, fc->atrace_categories[j]);
                        if (r < 0)
                                return r;
                }
                r = atrace_apps_error(c, fc);
                if (r < 0)
                        return r;
        }
        return 0;
}
