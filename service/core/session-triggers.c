/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * trigger_config at run time, acted on as Perfetto v58's tracing service acts on it
 * (tracing_service_impl.cc ActivateTriggers, StartTracing, StopOnDurationMsExpiry):
 *  - START_TRACING: the session is armed; its first trigger starts the recording, which
 *    then lasts the trigger's stop_delay_ms (0: until stopped); trigger_timeout_ms ends
 *    a session still armed (reason trigger-timeout, an empty trace, as Perfetto returns
 *    no data).
 *  - STOP_TRACING: the session records at once; stop_delay_ms after its first trigger it
 *    ends (reason triggered); trigger_timeout_ms without one ends it (trigger-timeout).
 *  - CLONE_SNAPSHOT: the session records at once; stop_delay_ms after a trigger, its owner
 *    writes a snapshot FILE.N (SessionCallbacks.on_snapshot_due; one waits at a time, the
 *    triggers meanwhile are only written into the trace); trigger_timeout_ms ends it, as
 *    Perfetto sets its duration_ms to it (duration-reached once triggered).
 * Per trigger: producer_name_regex (the caller's name must match it whole), then
 * skip_probability, then max_per_24_h, in Perfetto's order. Perfetto counts
 * max_per_24_h across its service; tracebus counts it per session, so that another
 * user's triggers never use up a session's allowance. Every trigger a session takes is
 * a TracePacket.trigger on the service sequence, at the moment it came.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "log.h"
#include "session.h"
#include "strv.h"
#include "time-util.h"
#include "trace-writer.h"
#include "whole-regex.h"

#define DAY_NS (24ull * 3600ull * 1000000000ull)
/* Trigger packets a session writes: a caller looping on its own session cannot grow the
 * trace's metadata (never overwritten) without bound. */
#define SESSION_MAX_TRIGGER_PACKETS 1024u

typedef struct TriggerHistory {
        uint64_t *times;               /* BOOTTIME ns of the triggers taken, oldest first */
        size_t n;
} TriggerHistory;

typedef struct SessionTriggers {
        sd_event_source *timeout_source;  /* trigger_timeout_ms, until the first trigger */
        sd_event_source *stop_source;     /* stop_delay_ms after the first trigger */
        sd_event_source *snapshot_source; /* CLONE_SNAPSHOT: stop_delay_ms after a trigger */
        unsigned snapshots;               /* CLONE_SNAPSHOT: the next FILE.N */
        char **written;                   /* CLONE_SNAPSHOT: the files written, the last 64 */
        uint64_t received;
        bool packets_capped_warned;
        TriggerHistory history[];         /* one per config trigger */
} SessionTriggers;

void session_triggers_free(Session *s) {
        SessionTriggers *t = s->triggers;

        if (!t)
                return;
        sd_event_source_disable_unref(t->timeout_source);
        sd_event_source_disable_unref(t->stop_source);
        sd_event_source_disable_unref(t->snapshot_source);
        strv_free(t->written);
        for (size_t i = 0; i < s->config.n_triggers; i++)
                free(t->history[i].times);
        s->triggers = mfree(t);
}

static int on_trigger_timeout(sd_event_source *source, uint64_t usec, void *userdata) {
        Session *s = ASSERT_PTR(userdata);

        log_info("Session %" PRIu64 ": no trigger within trigger_timeout_ms (%" PRIu32 " ms), ending it.", s->id,
                 s->config.trigger_timeout_ms);
        (void) session_stop(s, s->triggers->received > 0 ? SESSION_END_DURATION_REACHED : SESSION_END_TRIGGER_TIMEOUT);
        return 0;
}

static int on_snapshot_due(sd_event_source *source, uint64_t usec, void *userdata) {
        Session *s = ASSERT_PTR(userdata);
        unsigned n = s->triggers->snapshots++;

        s->triggers->snapshot_source = sd_event_source_disable_unref(s->triggers->snapshot_source);
        if (s->state == SESSION_RECORDING && s->callbacks && s->callbacks->on_snapshot_due)
                s->callbacks->on_snapshot_due(s, n, s->callbacks_userdata);
        return 0;
}

static int on_stop_delay(sd_event_source *source, uint64_t usec, void *userdata) {
        Session *s = ASSERT_PTR(userdata);

        (void) session_stop(s, s->config.trigger_mode == SESSION_TRIGGER_STOP ? SESSION_END_TRIGGERED
                                                                               : SESSION_END_DURATION_REACHED);
        return 0;
}

int session_triggers_setup(Session *s) {
        SessionTriggers *t;
        size_t n = s->config.n_triggers;

        if (s->config.trigger_mode == SESSION_TRIGGER_NONE)
                return 0;
        t = calloc(1, sizeof(*t) + n * sizeof(TriggerHistory));
        if (!t)
                return -ENOMEM;
        s->triggers = t;
        for (size_t i = 0; i < n; i++)
                if (s->config.triggers[i].max_per_24_h > 0 &&
                    !(t->history[i].times = calloc(s->config.triggers[i].max_per_24_h, sizeof(uint64_t))))
                        return -ENOMEM;
        /* As duration_ms: time suspended does not count, hence CLOCK_MONOTONIC. */
        return sd_event_add_time_relative(s->event, &t->timeout_source, CLOCK_MONOTONIC,
                                          (uint64_t) s->config.trigger_timeout_ms * 1000ull, 0, on_trigger_timeout, s);
}

static bool producer_matches(const SessionTrigger *rule, const char *producer) {
        /* Compiled when the config was loaded, matched whole with its cost bounded. */
        return !rule->producer_regex || whole_regex_match(rule->producer_regex, producer);
}

/* A uniform double in [0, 1), as Perfetto's random_->GetValue(). */
static double random_unit(void) {
        uint64_t v = 0;

        if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != sizeof(v))
                v = now_ns(CLOCK_MONOTONIC) * UINT64_C(0x9e3779b97f4a7c15);
        return (double) (v >> 11) * 0x1.0p-53;
}

/* max_per_24_h: forgets the triggers older than a day, then returns false if one more
 * would pass the limit. */
static bool history_allows(TriggerHistory *h, uint32_t max, uint64_t now) {
        size_t old = 0;

        if (max == 0)
                return true;
        while (old < h->n && h->times[old] + DAY_NS <= now)
                old++;
        memmove(h->times, h->times + old, (h->n - old) * sizeof(uint64_t));
        h->n -= old;
        return h->n < max;
}

static void history_add(TriggerHistory *h, uint32_t max, uint64_t now) {
        if (max > 0 && h->n < max)
                h->times[h->n++] = now;
}

/* TracePacket { timestamp, trigger { trigger_name, producer_name, trusted_producer_uid } }
 * on the service sequence, in the metadata: kept whatever the ring overwrites. */
static int write_trigger_packet(Session *s, const char *name, const char *producer, uid_t uid, uint64_t now) {
        Tracebus__TracePacket packet = TRACEBUS__TRACE_PACKET__INIT;
        Tracebus__Trigger trigger = TRACEBUS__TRIGGER__INIT;
        _cleanup_free_ uint8_t *buf = NULL;
        size_t len;

        if (s->triggers->received > SESSION_MAX_TRIGGER_PACKETS) {
                if (s->triggers->packets_capped_warned)
                        return 0;
                s->triggers->packets_capped_warned = true;
                return session_warn(s, "more than %u triggers: the later ones are not written into the trace",
                                    SESSION_MAX_TRIGGER_PACKETS);
        }
        trigger.trigger_name = (char *) name;
        trigger.producer_name = (char *) producer;
        trigger.has_trusted_producer_uid = true;
        trigger.trusted_producer_uid = (int32_t) uid;
        packet.has_timestamp = true;
        packet.timestamp = now;
        packet.trigger = &trigger;
        len = tracebus__trace_packet__get_packed_size(&packet);
        buf = malloc(len);
        if (!buf)
                return -ENOMEM;
        tracebus__trace_packet__pack(&packet, buf);
        return recorder_submit_packet(s->recorder, TRACE_SEQUENCE_SERVICE, 0, /* meta= */ true, buf, len);
}

static int arm_stop(Session *s, uint32_t delay_ms) {
        SessionTriggers *t = s->triggers;

        t->timeout_source = sd_event_source_disable_unref(t->timeout_source);
        return sd_event_add_time_relative(s->event, &t->stop_source, CLOCK_MONOTONIC, (uint64_t) delay_ms * 1000ull, 0,
                                          on_stop_delay, s);
}

/* Acts on a trigger the session accepted, as its trigger mode says; @first is true for
 * the session's first trigger. */
static int act_on_trigger(Session *s, const SessionTrigger *rule, bool first) {
        int r;

        switch (s->config.trigger_mode) {
        case SESSION_TRIGGER_START:
                if (s->state != SESSION_ARMED)
                        return 0;
                r = session_begin_recording(s);
                if (r < 0) {
                        log_error_errno(r, "Session %" PRIu64 ": cannot start recording on trigger '%s': %m", s->id,
                                        rule->name);
                        (void) session_stop(s, SESSION_END_OUTPUT_ERROR);
                        return r;
                }
                log_info("Session %" PRIu64 " recording, trigger '%s'.", s->id, rule->name);
                if (rule->stop_delay_ms == 0) {
                        s->triggers->timeout_source = sd_event_source_disable_unref(s->triggers->timeout_source);
                        return 0;
                }
                return arm_stop(s, rule->stop_delay_ms);
        case SESSION_TRIGGER_STOP:
                if (!first)
                        return 0;
                log_info("Session %" PRIu64 " ends in %" PRIu32 " ms, trigger '%s'.", s->id, rule->stop_delay_ms,
                         rule->name);
                return arm_stop(s, rule->stop_delay_ms);
        case SESSION_TRIGGER_CLONE:
                if (s->triggers->snapshot_source)
                        return 0;
                return sd_event_add_time_relative(s->event, &s->triggers->snapshot_source, CLOCK_MONOTONIC,
                                                  (uint64_t) rule->stop_delay_ms * 1000ull, 0, on_snapshot_due, s);
        default:
                return 0;
        }
}

int session_activate_trigger(Session *s, const char *name, const char *producer, uid_t uid, uint64_t now_ns) {
        const SessionTrigger *rule = NULL;
        TriggerHistory *h;
        size_t i;
        int r;

        if (!s->triggers || !session_is_running(s))
                return 0;
        for (i = 0; i < s->config.n_triggers && !rule; i++)
                if (strcmp(s->config.triggers[i].name, name) == 0)
                        rule = &s->config.triggers[i];
        if (!rule || !producer_matches(rule, producer))
                return 0;
        if (rule->skip_probability > 0 && random_unit() < rule->skip_probability) {
                log_debug("Session %" PRIu64 ": trigger '%s' skipped (skip_probability).", s->id, name);
                return 0;
        }
        h = &s->triggers->history[i - 1];
        if (!history_allows(h, rule->max_per_24_h, now_ns)) {
                log_debug("Session %" PRIu64 ": trigger '%s' skipped (max_per_24_h).", s->id, name);
                return 0;
        }
        history_add(h, rule->max_per_24_h, now_ns);
        s->triggers->received++;
        r = write_trigger_packet(s, rule->name, producer, uid, now_ns);
        if (r < 0)
                log_warning_errno(r, "Session %" PRIu64 ": trigger '%s' not written into the trace: %m", s->id, name);
        r = act_on_trigger(s, rule, s->triggers->received == 1);
        return r < 0 ? r : 1;
}

char **session_trigger_snapshots(const Session *s) {
        return s->triggers ? s->triggers->written : NULL;
}

void session_note_trigger_snapshot(Session *s, const char *path) {
        SessionTriggers *t = s->triggers;
        size_t n;

        if (!t)
                return;
        n = strv_length(t->written);
        if (n >= SESSION_MAX_TRIGGER_SNAPSHOTS) {
                free(t->written[0]);
                memmove(t->written, t->written + 1, n * sizeof(char *));
        }
        if (strv_extend(&t->written, path) < 0)
                return;
        if (s->callbacks && s->callbacks->on_changed)
                s->callbacks->on_changed(s, SESSION_CHANGED_TRIGGER_SNAPSHOTS, s->callbacks_userdata);
}
