/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdarg.h>
#include <stdio.h>

#include "log.h"
#include "session.h"
#include "strv.h"

/*
 * A session's warnings: first those of its config (SessionConfig.warnings, returned in
 * Start's reply), then those raised while it records, either on the event loop
 * (session_warn()) or on another thread (recorder_warn(), collected here at least once a
 * second). All of them end up in one capped list, the Warnings property; the owner is
 * told each time the list grows.
 */

static void report_warnings(Session *s) {
        if (s->callbacks && s->callbacks->on_changed)
                s->callbacks->on_changed(s, SESSION_CHANGED_WARNINGS, s->callbacks_userdata);
}

int session_warn(Session *s, const char *fmt, ...) {
        _cleanup_free_ char *text = NULL;
        va_list ap;
        int r;

        assert(s);
        va_start(ap, fmt);
        r = vasprintf(&text, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        log_info("Session %" PRIu64 ": %s", s->id, text);
        r = session_config_warn(&s->config, "%s", text);
        if (r < 0)
                return r;
        if (s->recorder)
                (void) recorder_trace_warning(s->recorder, text);
        report_warnings(s);
        return 0;
}

/* Packets of the polling data sources that the recorder's inbox refused (it fell behind):
 * never silently. One warning when it starts, with the count so far. */
static void warn_submitted_dropped(Session *s) {
        uint64_t n = recorder_submitted_dropped(s->recorder);

        if (n == 0 || s->submitted_dropped_warned > 0)
                return;
        s->submitted_dropped_warned = n;
        (void) session_warn(s, "the recorder fell behind: %" PRIu64 " packets of the polling data sources dropped "
                            "(and any after)", n);
}

void session_collect_warnings(Session *s) {
        _cleanup_strv_free_ char **l = NULL;
        size_t dropped = 0;
        int r = 0;

        if (!s->recorder)
                return;
        warn_submitted_dropped(s);
        l = recorder_take_warnings(s->recorder, &dropped);
        if (!l && dropped == 0)
                return;
        STRV_FOREACH(w, l) {
                log_info("Session %" PRIu64 ": %s", s->id, *w);
                if (r >= 0)
                        r = session_config_warn(&s->config, "%s", *w);
        }
        if (r >= 0 && dropped > 0)
                r = session_config_warn(&s->config, "%zu more warnings of the recorder left out", dropped);
        if (r < 0)
                log_warning_errno(r, "Failed to keep the warnings of session %" PRIu64 ", ignoring: %m", s->id);
        report_warnings(s);
}
