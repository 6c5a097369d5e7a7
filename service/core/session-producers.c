/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The apps that record for a session: which producers it sets up (its owner's, or every
 * user's when the owner is root or held org.tracebus.manage at Start), the data source
 * instances it started in them, the trusted sequence ids it gave their writers, and the
 * bounded wait for them at Stop. A producer's packet reaches the session only through a
 * buffer the session gave it, stamped with what the service knows of its writer. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "session.h"
#include "time-util.h"

/* Writers of all producers one session keeps a sequence id for; packets of more are
 * dropped and counted. The SDK uses one writer per thread that traces. */
#define SESSION_MAX_PRODUCER_SEQUENCES 4096u
/* How long Stop waits for the apps to flush and stop when the config does not say
 * (data_source_stop_timeout_ms), as Perfetto's service: 5 s. Never more than 30 s. */
#define SESSION_PRODUCERS_STOP_TIMEOUT_MS 5000u
#define SESSION_PRODUCERS_STOP_TIMEOUT_MAX_MS 30000u

/* The periodic flushes' request ids, apart from a stop's (which is its instance's id). */
#define PERIODIC_FLUSH_ID (UINT64_C(1) << 63)
#define SNAPSHOT_FLUSH_ID (UINT64_C(1) << 62)

typedef struct ProducerLink {
        uint64_t producer_id;
        uint64_t instance_id;
        size_t source;                 /* index in config.producer_sources */
} ProducerLink;

typedef struct ProducerSequence {
        uint64_t producer_id;
        uint16_t writer_id;
        uint32_t sequence_id;
} ProducerSequence;

typedef struct SessionProducers {
        Producers *producers;
        uint32_t buffer_base;          /* service-global id of the config's buffer 0 */
        ProducerLink *links;
        size_t n_links;
        ProducerSequence *sequences;
        size_t n_sequences;
        uint64_t packets_dropped;      /* over the sequences' bound */
        uint64_t packets_refused;      /* not TracePackets, or forging the service's fields */
        sd_event_source *stop_timer;
        void (*stop_done)(Session *s);
        sd_event_source *flush_timer;  /* flush_period_ms, or file_write_period_ms when written as it goes */
        sd_event_source *clear_timer;  /* incremental_state_config.clear_period_ms */
        uint64_t last_flush_id;
        /* The flush before a snapshot: its id, the acks it waits for, its bound. */
        void (*snapshot_done)(Session *s);
        uint64_t snapshot_flush_id;
        size_t snapshot_pending;
        sd_event_source *snapshot_timer;
} SessionProducers;

Producer *session_producers_list(Session *s) {
        return s->apps && s->apps->producers ? s->apps->producers->list : NULL;
}

bool session_producers_allowed(const Session *s, const Producer *producer) {
        return s->config.producers_any_uid || producer->uid == s->owner_uid;
}

static bool linked(const SessionProducers *a, uint64_t producer_id, size_t source) {
        for (size_t i = 0; i < a->n_links; i++)
                if (a->links[i].producer_id == producer_id && a->links[i].source == source)
                        return true;
        return false;
}

/* The producer of link @i, NULL once it is gone. */
static Producer *link_producer(const SessionProducers *a, size_t i) {
        return a->producers ? producers_find(a->producers, a->links[i].producer_id) : NULL;
}

static int start_one(Session *s, Producer *producer, size_t source) {
        SessionProducers *a = s->apps;
        const SessionProducerSource *src = &s->config.producer_sources[source];
        ProducerStart start = {
                .name = src->name,
                .config = src->config,
                .config_len = src->config_len,
                .target_buffer = a->buffer_base + src->buffer,
                .tracing_session_id = s->id,
                .duration_ms = s->config.duration_ms,
                .stop_timeout_ms = s->config.stop_timeout_ms ?: SESSION_PRODUCERS_STOP_TIMEOUT_MS,
        };
        ProducerLink *grown;
        uint64_t instance_id;
        int r;

        grown = reallocarray(a->links, a->n_links + 1, sizeof(*grown));
        if (!grown)
                return -ENOMEM;
        a->links = grown;
        r = producer_start_instance(producer, &start, &instance_id);
        if (r < 0)
                return session_warn(s, "%s: the app %s (PID %d) could not be set up: %s", src->name,
                                    producer->name ?: "unnamed", (int) producer->pid,
                                    r == -EUSERS ? "over its user's shared memory limit" : strerror(-r));
        grown[a->n_links++] = (ProducerLink) { .producer_id = producer->id, .instance_id = instance_id, .source = source };
        log_debug("Session %" PRIu64 ": %s started in producer %" PRIu64 " (instance %" PRIu64 ").", s->id, src->name,
                  producer->id, instance_id);
        return 0;
}

void session_producers_offer(Session *s, Producer *producer, const char *name) {
        if (!s->apps || s->state != SESSION_RECORDING || !producer->name || !session_producers_allowed(s, producer))
                return;
        for (size_t i = 0; i < s->config.n_producer_sources; i++) {
                const SessionProducerSource *src = &s->config.producer_sources[i];

                if ((name && strcmp(name, src->name) != 0) || !producer_has_source(producer, src->name) ||
                    !session_producer_source_accepts(src, producer->name) || linked(s->apps, producer->id, i))
                        continue;
                (void) start_one(s, producer, i);
        }
}

/* A data source no allowed app has registered yet starts when one does: a warning. */
static int warn_unregistered(Session *s) {
        for (size_t i = 0; i < s->config.n_producer_sources; i++) {
                const SessionProducerSource *src = &s->config.producer_sources[i];
                bool found = false;
                int r;

                for (size_t j = 0; j < s->apps->n_links && !found; j++)
                        found = s->apps->links[j].source == i;
                if (found)
                        continue;
                r = session_warn(s, "%s: no producer has registered it: it starts when one does", src->name);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The apps commit a chunk when it is full: a quiet app's last events would wait for Stop.
 * Flushed every period instead, as Perfetto's service does, without waiting for them. */
static uint32_t flush_period_ms(const Session *s) {
        if (s->config.flush_period_ms > 0)
                return MAX(s->config.flush_period_ms, SESSION_MIN_WRITE_PERIOD_MS);
        return s->config.write_into_file ? s->config.file_write_period_ms : 0;
}

static int on_flush_timer(sd_event_source *source, uint64_t usec, void *userdata) {
        Session *s = userdata;
        SessionProducers *a = s->apps;

        for (size_t i = 0; i < a->n_links && s->state == SESSION_RECORDING; i++) {
                Producer *p = link_producer(a, i);

                if (p)
                        (void) producer_flush_instance(p, a->links[i].instance_id, PERIODIC_FLUSH_ID | ++a->last_flush_id);
        }
        (void) sd_event_source_set_time_relative(source, (uint64_t) flush_period_ms(s) * 1000);
        return 0;
}

/* A timer of the session's apps every @period_ms from now on (none for 0): on, not once,
 * so that each handler only sets its next time. */
static int arm_periodic(Session *s, sd_event_source **timer, uint32_t period_ms, sd_event_time_handler_t handler) {
        int r;

        if (period_ms == 0)
                return 0;
        r = sd_event_add_time_relative(s->event, timer, CLOCK_MONOTONIC, (uint64_t) period_ms * 1000, 0, handler, s);
        if (r < 0)
                return r;
        return sd_event_source_set_enabled(*timer, SD_EVENT_ON);
}

/* Every clear period the apps' instances drop their interned state and write it again, so
 * that what a ring keeps after wrapping still has the names it refers to. */
static int on_clear_timer(sd_event_source *source, uint64_t usec, void *userdata) {
        Session *s = userdata;
        SessionProducers *a = s->apps;

        for (size_t i = 0; i < a->n_links && s->state == SESSION_RECORDING; i++) {
                Producer *p = link_producer(a, i);

                if (p)
                        (void) producer_clear_instance_state(p, a->links[i].instance_id);
        }
        (void) sd_event_source_set_time_relative(source, (uint64_t) s->config.incremental_clear_period_ms * 1000);
        return 0;
}

int session_producers_start(Session *s, Producers *producers) {
        if (s->config.n_producer_sources == 0 || s->apps)
                return 0;
        s->apps = calloc(1, sizeof(SessionProducers));
        if (!s->apps)
                return -ENOMEM;
        s->apps->producers = producers;
        if (arm_periodic(s, &s->apps->flush_timer, flush_period_ms(s), on_flush_timer) < 0)
                log_warning("Session %" PRIu64 ": the apps will not be flushed periodically.", s->id);
        if (arm_periodic(s, &s->apps->clear_timer, s->config.incremental_clear_period_ms, on_clear_timer) < 0)
                log_warning("Session %" PRIu64 ": the apps will not clear their incremental state periodically.", s->id);
        if (producers) {
                s->apps->buffer_base = producers_allocate_buffers(producers, MAX(s->config.n_buffers, (size_t) 1));
                for (Producer *p = producers->list; p; p = p->next)
                        session_producers_offer(s, p, NULL);
        }
        /* Armed, it sets nothing up before a trigger: no warning yet either. */
        return s->state == SESSION_RECORDING ? warn_unregistered(s) : 0;
}

/* The trusted sequence id of @producer's writer in this session, given on its first
 * packet above the service's own ids; 0 past the bound. */
static uint32_t sequence_of(SessionProducers *a, uint64_t producer_id, uint16_t writer_id, bool *ret_first) {
        ProducerSequence *grown;

        *ret_first = false;
        for (size_t i = 0; i < a->n_sequences; i++)
                if (a->sequences[i].producer_id == producer_id && a->sequences[i].writer_id == writer_id)
                        return a->sequences[i].sequence_id;
        if (a->n_sequences >= SESSION_MAX_PRODUCER_SEQUENCES)
                return 0;
        grown = reallocarray(a->sequences, a->n_sequences + 1, sizeof(*grown));
        if (!grown)
                return 0;
        a->sequences = grown;
        grown[a->n_sequences] = (ProducerSequence) {
                .producer_id = producer_id,
                .writer_id = writer_id,
                .sequence_id = _TRACE_SEQUENCE_MAX + (uint32_t) a->n_sequences,
        };
        *ret_first = true;
        return grown[a->n_sequences++].sequence_id;
}

/* Whether the service-global @target_buffer is one of @s's. */
static bool owns_buffer(const Session *s, uint32_t target_buffer) {
        const SessionProducers *a = s->apps;

        return a && target_buffer >= a->buffer_base &&
               target_buffer - a->buffer_base < MAX(s->config.n_buffers, (size_t) 1);
}

bool session_producers_packet_refused(Session *s, uint32_t target_buffer) {
        if (!owns_buffer(s, target_buffer))
                return false;
        s->apps->packets_refused++;
        return true;
}

bool session_producers_packet(Session *s, Producer *producer, uint32_t target_buffer, uint16_t writer_id,
                              bool dropped, const uint8_t *data, size_t size) {
        SessionProducers *a = s->apps;
        size_t stamp_len;
        uint8_t stamp[PRODUCER_STAMP_MAX];
        uint32_t sequence_id;
        bool first;

        if (!owns_buffer(s, target_buffer))
                return false;
        if (!s->recorder || (s->state != SESSION_RECORDING && !a->stop_done))
                return true;
        sequence_id = sequence_of(a, producer->id, writer_id, &first);
        if (sequence_id == 0) {
                a->packets_dropped++;
                return true;
        }
        /* The first packet the trace holds of a sequence cannot know what came before. */
        stamp_len = producer_packet_stamp(stamp, producer->uid, producer->pid, sequence_id, dropped || first);
        /* Refused when the recorder's inbox is full: counted there, and warned about. */
        (void) recorder_submit_stamped_packet(s->recorder, target_buffer - a->buffer_base, data, size, stamp, stamp_len);
        return true;
}

static void finish_stop(Session *s) {
        SessionProducers *a = s->apps;
        void (*done)(Session *s) = a->stop_done;

        a->stop_timer = sd_event_source_disable_unref(a->stop_timer);
        a->flush_timer = sd_event_source_disable_unref(a->flush_timer);
        a->clear_timer = sd_event_source_disable_unref(a->clear_timer);
        /* What the apps wrote and did not commit is still in their buffers. */
        for (size_t i = 0; i < a->n_links; i++) {
                Producer *p = link_producer(a, i);

                if (!p)
                        continue;
                producer_scrape(p);
                producer_forget_instance(p, a->links[i].instance_id);
        }
        if (a->packets_dropped > 0)
                (void) session_warn(s, "%" PRIu64 " packets of apps dropped: more than %u trace writers", a->packets_dropped,
                                    SESSION_MAX_PRODUCER_SEQUENCES);
        if (a->packets_refused > 0)
                (void) session_warn(s, "%" PRIu64 " packets of apps dropped: not a TracePacket, or writing a field only "
                                    "the service writes (trusted_uid, trusted_pid, its sequence id...)", a->packets_refused);
        a->n_links = 0;
        a->stop_done = NULL;
        if (done)
                done(s);
}

static int on_stop_timeout(sd_event_source *source, uint64_t usec, void *userdata) {
        Session *s = userdata;

        (void) session_warn(s, "apps did not stop within %u ms: their data so far is kept",
                            s->config.stop_timeout_ms ?: SESSION_PRODUCERS_STOP_TIMEOUT_MS);
        finish_stop(s);
        return 0;
}

static bool all_stopped(const SessionProducers *a) {
        for (size_t i = 0; i < a->n_links; i++) {
                Producer *p = link_producer(a, i);

                if (p && !producer_instance_stopped(p, a->links[i].instance_id))
                        return false;
        }
        return true;
}

void session_producers_instance_stopped(Session *s, Producer *producer, uint64_t instance_id) {
        if (s->apps && s->apps->stop_done && all_stopped(s->apps))
                finish_stop(s);
}

int session_producers_stop(Session *s, void (*done)(Session *s)) {
        SessionProducers *a = s->apps;
        uint32_t timeout_ms;
        int r;

        if (!a || a->n_links == 0)
                return 0;
        timeout_ms = MIN(s->config.stop_timeout_ms ?: SESSION_PRODUCERS_STOP_TIMEOUT_MS, SESSION_PRODUCERS_STOP_TIMEOUT_MAX_MS);
        for (size_t i = 0; i < a->n_links; i++) {
                Producer *p = link_producer(a, i);

                /* The flush's request id is the instance's, unique in the service. */
                if (p)
                        (void) producer_stop_instance(p, a->links[i].instance_id, a->links[i].instance_id);
        }
        a->stop_done = done;
        if (all_stopped(a)) {
                finish_stop(s);
                return 1;
        }
        r = sd_event_add_time_relative(s->event, &a->stop_timer, CLOCK_MONOTONIC, (uint64_t) timeout_ms * 1000, 0,
                                       on_stop_timeout, s);
        if (r < 0) {
                finish_stop(s);
                return 1;
        }
        return 1;
}

void session_producers_free(Session *s) {
        SessionProducers *a = s->apps;

        if (!a)
                return;
        for (size_t i = 0; i < a->n_links; i++) {
                Producer *p = link_producer(a, i);

                if (p) {
                        (void) producer_stop_instance(p, a->links[i].instance_id, 0);
                        producer_forget_instance(p, a->links[i].instance_id);
                }
        }
        sd_event_source_disable_unref(a->stop_timer);
        sd_event_source_disable_unref(a->flush_timer);
        sd_event_source_disable_unref(a->clear_timer);
        sd_event_source_disable_unref(a->snapshot_timer);
        free(a->links);
        free(a->sequences);
        s->apps = mfree(a);
}

static void snapshot_flushed(Session *s) {
        SessionProducers *a = s->apps;
        void (*done)(Session *s) = a->snapshot_done;

        a->snapshot_timer = sd_event_source_disable_unref(a->snapshot_timer);
        a->snapshot_done = NULL;
        if (done)
                done(s);
}

static int on_snapshot_timeout(sd_event_source *source, uint64_t usec, void *userdata) {
        Session *s = userdata;

        log_info("Session %" PRIu64 ": %zu apps did not flush in time for the snapshot.", s->id, s->apps->snapshot_pending);
        snapshot_flushed(s);
        return 0;
}

int session_producers_flush(Session *s, void (*done)(Session *s)) {
        SessionProducers *a = s->apps;
        uint32_t timeout_ms;

        if (!a || a->snapshot_done)
                return 0;
        a->snapshot_flush_id = SNAPSHOT_FLUSH_ID | ++a->last_flush_id;
        a->snapshot_pending = 0;
        for (size_t i = 0; i < a->n_links; i++) {
                Producer *p = link_producer(a, i);

                if (p && producer_flush_instance(p, a->links[i].instance_id, a->snapshot_flush_id) >= 0)
                        a->snapshot_pending++;
        }
        if (a->snapshot_pending == 0)
                return 0;
        timeout_ms = MIN(s->config.stop_timeout_ms ?: SESSION_PRODUCERS_STOP_TIMEOUT_MS, SESSION_PRODUCERS_STOP_TIMEOUT_MAX_MS);
        if (sd_event_add_time_relative(s->event, &a->snapshot_timer, CLOCK_MONOTONIC, (uint64_t) timeout_ms * 1000, 0,
                                       on_snapshot_timeout, s) < 0)
                return 0;
        a->snapshot_done = done;
        return 1;
}

void session_producers_cancel_flush(Session *s) {
        if (!s->apps)
                return;
        s->apps->snapshot_timer = sd_event_source_disable_unref(s->apps->snapshot_timer);
        s->apps->snapshot_done = NULL;
}

void session_producers_flush_acked(Session *s, Producer *producer, uint64_t flush_request_id) {
        SessionProducers *a = s->apps;

        if (!a || !a->snapshot_done || flush_request_id != a->snapshot_flush_id)
                return;
        if (a->snapshot_pending > 0)
                a->snapshot_pending--;
        if (a->snapshot_pending == 0)
                snapshot_flushed(s);
}
