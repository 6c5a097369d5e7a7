/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * TraceConfig.trigger_config, refused where Perfetto v58's
 * EnableTracing refuses it: an unknown mode, no trigger_timeout_ms or one over 7 days,
 * duration_ms with triggers, STOP_TRACING or CLONE_SNAPSHOT with write_into_file,
 * use_clone_snapshot_if_available without STOP_TRACING, a name twice. tracebus adds caps
 * (names of 64 bytes, as ActivateTriggers takes them; 64 triggers; short regexes, whose
 * cost is bounded: see whole-regex.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session-config.h"

typedef Tracebus__TraceConfig__TriggerConfig TriggerConfig;
typedef Tracebus__TraceConfig__TriggerConfig__Trigger TriggerMsg;

bool session_trigger_name_valid(const char *name) {
        size_t n = name ? strlen(name) : 0;

        if (n == 0 || n > SESSION_TRIGGER_NAME_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if ((unsigned char) name[i] < 0x20 || name[i] == 0x7f)
                        return false;
        return true;
}

void session_config_triggers_done(SessionConfig *c) {
        for (size_t i = 0; i < c->n_triggers; i++) {
                free(c->triggers[i].name);
                whole_regex_free(c->triggers[i].producer_regex);
        }
        c->triggers = mfree(c->triggers);
        c->n_triggers = 0;
        c->trigger_mode = SESSION_TRIGGER_NONE;
}

/* The mode Perfetto's service acts in (its GetTriggerMode()): the workaround flag turns
 * STOP_TRACING into CLONE_SNAPSHOT on services that have it. */
static int trigger_mode(const TriggerConfig *t, char **ret_error) {
        int mode = t->trigger_mode;

        if (mode != TRACEBUS__TRACE_CONFIG__TRIGGER_CONFIG__TRIGGER_MODE__UNSPECIFIED &&
            mode != TRACEBUS__TRACE_CONFIG__TRIGGER_CONFIG__TRIGGER_MODE__START_TRACING &&
            mode != TRACEBUS__TRACE_CONFIG__TRIGGER_CONFIG__TRIGGER_MODE__STOP_TRACING &&
            mode != TRACEBUS__TRACE_CONFIG__TRIGGER_CONFIG__TRIGGER_MODE__CLONE_SNAPSHOT)
                return session_config_error(ret_error, "trigger_config.trigger_mode %d is not a trigger mode of Perfetto "
                                            "v58 (START_TRACING, STOP_TRACING, CLONE_SNAPSHOT)", mode);
        if (t->use_clone_snapshot_if_available) {
                if (mode != TRACEBUS__TRACE_CONFIG__TRIGGER_CONFIG__TRIGGER_MODE__STOP_TRACING)
                        return session_config_error(ret_error, "trigger_config.use_clone_snapshot_if_available needs "
                                                    "trigger_mode STOP_TRACING");
                mode = TRACEBUS__TRACE_CONFIG__TRIGGER_CONFIG__TRIGGER_MODE__CLONE_SNAPSHOT;
        }
        return mode;
}

static int check_session_fields(const Tracebus__TraceConfig *tc, int mode, char **ret_error) {
        const TriggerConfig *t = tc->trigger_config;

        if (t->trigger_timeout_ms == 0 || t->trigger_timeout_ms > SESSION_MAX_DURATION_MS)
                return session_config_error(ret_error, "trigger_config.trigger_timeout_ms must be positive and at most "
                                            "7 days (received %u ms)", t->trigger_timeout_ms);
        if (tc->duration_ms != 0)
                return session_config_error(ret_error, "duration_ms must not be set with trigger_config: "
                                            "trigger_timeout_ms and stop_delay_ms bound the session");
        if (mode != SESSION_TRIGGER_START && tc->write_into_file)
                return session_config_error(ret_error, "trigger_mode STOP_TRACING or CLONE_SNAPSHOT and "
                                            "write_into_file together are not supported (as in Perfetto)");
        if (t->n_triggers > SESSION_MAX_TRIGGERS)
                return session_config_error(ret_error, "trigger_config: %zu triggers, at most %u", t->n_triggers,
                                            SESSION_MAX_TRIGGERS);
        return 0;
}

/* producer_name_regex, compiled once here: a trigger matches it against each caller's
 * process name, whole, as Perfetto's std::regex_match. A pattern refused, or one PCRE2
 * cannot compile within the limits, is an invalid config naming the field. */
static int compile_regex(const char *name, const char *re, WholeRegex **ret, char **ret_error) {
        const char *reason = NULL;
        int r;

        if (strlen(re) > SESSION_TRIGGER_REGEX_MAX)
                return session_config_error(ret_error, "trigger_config: trigger '%s': producer_name_regex longer "
                                            "than %u bytes", name, SESSION_TRIGGER_REGEX_MAX);
        r = whole_regex_compile(re, ret, &reason);
        if (r == -EINVAL)
                return session_config_error(ret_error, "trigger_config: trigger '%s': producer_name_regex '%s': %s",
                                            name, re, reason);
        return r;
}

static int load_one(const TriggerMsg *m, SessionConfig *c, SessionTrigger *ret, char **ret_error) {
        int r;

        if (!session_trigger_name_valid(m->name))
                return session_config_error(ret_error, "trigger_config: a trigger name must be 1 to %u bytes, no "
                                            "control characters", SESSION_TRIGGER_NAME_MAX);
        for (size_t i = 0; i < c->n_triggers; i++)
                if (strcmp(c->triggers[i].name, m->name) == 0)
                        return session_config_error(ret_error, "Duplicate trigger name: %s", m->name);
        *ret = (SessionTrigger) {
                .stop_delay_ms = m->stop_delay_ms,
                .max_per_24_h = m->max_per_24_h,
                .skip_probability = m->skip_probability,
        };
        if (ret->max_per_24_h > SESSION_TRIGGER_MAX_PER_24H) {
                ret->max_per_24_h = SESSION_TRIGGER_MAX_PER_24H;
                r = session_config_warn(c, "trigger '%s': max_per_24_h %u lowered to %u", m->name, m->max_per_24_h,
                                        SESSION_TRIGGER_MAX_PER_24H);
                if (r < 0)
                        return r;
        }
        if (m->producer_name_regex && *m->producer_name_regex) {
                r = compile_regex(m->name, m->producer_name_regex, &ret->producer_regex, ret_error);
                if (r < 0)
                        return r;
        }
        ret->name = strdup(m->name);
        if (!ret->name) {
                ret->producer_regex = whole_regex_free(ret->producer_regex);
                return -ENOMEM;
        }
        return 0;
}

int session_config_load_triggers(const Tracebus__TraceConfig *tc, SessionConfig *c, char **ret_error) {
        const TriggerConfig *t = tc->trigger_config;
        int mode, r;

        if (!t)
                return 0;
        mode = trigger_mode(t, ret_error);
        if (mode < 0)
                return mode;
        if (mode == SESSION_TRIGGER_NONE)
                /* Perfetto's service treats the session as one without triggers. */
                return t->n_triggers > 0 ?
                        session_config_warn(c, "trigger_config has no trigger_mode: its triggers are ignored") : 0;
        r = check_session_fields(tc, mode, ret_error);
        if (r < 0)
                return r;
        c->triggers = calloc(MAX(t->n_triggers, 1u), sizeof(SessionTrigger));
        if (!c->triggers)
                return -ENOMEM;
        for (size_t i = 0; i < t->n_triggers; i++) {
                r = load_one(t->triggers[i], c, &c->triggers[c->n_triggers], ret_error);
                if (r < 0)
                        return r;
                c->n_triggers++;
        }
        c->trigger_mode = mode;
        c->trigger_timeout_ms = t->trigger_timeout_ms;
        c->trigger_clone_if_available = t->use_clone_snapshot_if_available;
        return 0;
}

int session_config_check_trigger_output(SessionConfig *c, bool caller_fd, char **ret_error) {
        if (c->trigger_mode != SESSION_TRIGGER_CLONE || !caller_fd)
                return 0;
        /* "If available", as Perfetto's flag says: a service that cannot clone stops. */
        if (c->trigger_clone_if_available) {
                c->trigger_mode = SESSION_TRIGGER_STOP;
                return session_config_warn(c, "trigger_config.use_clone_snapshot_if_available: snapshots need the "
                                           "service's trace directory (start without an Output, e.g. tracebus "
                                           "--detach=KEY without -o): with this Output a trigger stops the session, "
                                           "as STOP_TRACING");
        }
        return session_config_error(ret_error, "trigger_mode CLONE_SNAPSHOT needs the service's trace directory: "
                                    "each trigger's snapshot is a new file FILE.N beside the trace, and the service "
                                    "creates files only there, never beside a file it did not open (start without "
                                    "an Output, e.g. tracebus --detach=KEY without -o)");
}
