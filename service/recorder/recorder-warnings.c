/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "recorder-local.h"
#include "service-tracks.h"
#include "strv.h"

/*
 * The warnings in the trace. Those of the config go into the opening
 * packets: the ftrace setup errors in the FtraceStats at the start (where trace_processor
 * reads them, its ftrace_setup_errors stat), and every warning as an instant "warning: ..."
 * on the tracebus track, which trace_processor shows as a slice. The warnings of other
 * threads (recorder_warn()) wait here, under a lock, for the worker (the trace) and for
 * the event loop (the session's Warnings property).
 */

static int copy_list(char **from, char ***to) {
        STRV_FOREACH(s, from)
                if (strv_extend(to, *s) < 0)
                        return -ENOMEM;
        return 0;
}

int recorder_warnings_init(Recorder *rec, const SessionConfig *config) {
        /* Copies: the session's config grows with its warnings while the recorder runs. */
        if (copy_list(config->warnings, &rec->setup_warnings) < 0 ||
            copy_list(config->unknown_ftrace_events, &rec->unknown_events) < 0 ||
            copy_list(config->failed_ftrace_events, &rec->failed_events) < 0 ||
            copy_list(config->atrace_errors, &rec->atrace_errors) < 0)
                return -ENOMEM;
        return 0;
}

void recorder_warnings_free(Recorder *rec) {
        rec->setup_warnings = strv_free(rec->setup_warnings);
        rec->unknown_events = strv_free(rec->unknown_events);
        rec->failed_events = strv_free(rec->failed_events);
        rec->atrace_errors = strv_free(rec->atrace_errors);
        rec->warnings_for_session = strv_free(rec->warnings_for_session);
        rec->warnings_for_trace = strv_free(rec->warnings_for_trace);
        (void) pthread_mutex_destroy(&rec->warnings_lock);
}

static int append_instant(Recorder *rec, uint64_t timestamp, const char *text) {
        _cleanup_free_ char *name = NULL;

        if (asprintf(&name, "warning: %s", text) < 0)
                return -ENOMEM;
        return service_tracks_append_instant(&rec->writer, timestamp, name);
}

/* After the track descriptors: the config's warnings, at the start of the trace. */
int recorder_append_setup_warnings(Recorder *rec) {
        uint64_t now = now_ns(CLOCK_BOOTTIME);
        int r;

        STRV_FOREACH(w, rec->setup_warnings) {
                r = append_instant(rec, now, *w);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int queue_warning(Recorder *rec, const char *text, bool for_session) {
        int r = 0;

        (void) pthread_mutex_lock(&rec->warnings_lock);
        if (rec->n_warned >= SESSION_MAX_WARNINGS)
                rec->n_warnings_dropped++;
        else {
                r = strv_extend(&rec->warnings_for_trace, text);
                if (r >= 0 && for_session)
                        r = strv_extend(&rec->warnings_for_session, text);
                if (r >= 0)
                        rec->n_warned++;
        }
        (void) pthread_mutex_unlock(&rec->warnings_lock);
        recorder_wake(rec);
        return r;
}

int recorder_warn(Recorder *rec, const char *fmt, ...) {
        _cleanup_free_ char *text = NULL;
        va_list ap;
        int r;

        assert(rec);
        va_start(ap, fmt);
        r = vasprintf(&text, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        return queue_warning(rec, text, /* for_session= */ true);
}

int recorder_trace_warning(Recorder *rec, const char *text) {
        return queue_warning(rec, text, /* for_session= */ false);
}

char **recorder_take_warnings(Recorder *rec, size_t *ret_dropped) {
        char **l;

        (void) pthread_mutex_lock(&rec->warnings_lock);
        l = TAKE_PTR(rec->warnings_for_session);
        *ret_dropped = rec->n_warnings_dropped;
        rec->n_warnings_dropped = 0;
        (void) pthread_mutex_unlock(&rec->warnings_lock);
        return l;
}

/* On each pass of the worker, and at the end. */
int recorder_append_warnings(Recorder *rec) {
        _cleanup_strv_free_ char **l = NULL;
        uint64_t now = now_ns(CLOCK_BOOTTIME);
        int r;

        (void) pthread_mutex_lock(&rec->warnings_lock);
        l = TAKE_PTR(rec->warnings_for_trace);
        (void) pthread_mutex_unlock(&rec->warnings_lock);
        STRV_FOREACH(w, l) {
                r = append_instant(rec, now, *w);
                if (r < 0)
                        return r;
        }
        return 0;
}
