/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * --query-raw: what --query shows, as the TracingServiceState message perfetto --query-raw
 * writes. The service is one producer with its own data sources; each app connected to the
 * producer socket (Manager.ListProducers: the caller's own, everyone's for an admin) is
 * another, with the data sources it registered and track_event's categories.
 *
 * Protobuf merges concatenated messages, appending repeated fields: the state is written
 * as one message for the service and the sessions, then one for each app and each of its
 * data sources, so that no piece needs more than its own small arrays.
 */
#include <string.h>

#include "cli.h"
#include "strv.h"
#include "trace.pb-c.h"

static int write_state(const Tracebus__TracingServiceState *state) {
        _cleanup_free_ uint8_t *buf = NULL;
        size_t len = tracebus__tracing_service_state__get_packed_size(state);

        buf = malloc(MAX(len, 1u));
        if (!buf)
                return -ENOMEM;
        len = tracebus__tracing_service_state__pack(state, buf);
        return fwrite(buf, 1, len, stdout) == len ? 0 : -EIO;
}

static int write_data_source(int32_t producer_id, const char *name, char **categories) {
        Tracebus__TracingServiceState state = TRACEBUS__TRACING_SERVICE_STATE__INIT;
        Tracebus__TracingServiceState__DataSource source = TRACEBUS__TRACING_SERVICE_STATE__DATA_SOURCE__INIT;
        Tracebus__TracingServiceState__DataSource *sources[] = { &source };
        Tracebus__DataSourceDescriptor descriptor = TRACEBUS__DATA_SOURCE_DESCRIPTOR__INIT;
        Tracebus__TrackEventDescriptor track_event = TRACEBUS__TRACK_EVENT_DESCRIPTOR__INIT;
        _cleanup_free_ Tracebus__TrackEventCategory *items = NULL;
        _cleanup_free_ Tracebus__TrackEventCategory **pointers = NULL;
        size_t n = strv_length(categories);

        descriptor.name = (char *) name;
        if (n > 0) {
                items = calloc(n, sizeof(*items));
                pointers = calloc(n, sizeof(*pointers));
                if (!items || !pointers)
                        return -ENOMEM;
                for (size_t i = 0; i < n; i++) {
                        items[i] = (Tracebus__TrackEventCategory) TRACEBUS__TRACK_EVENT_CATEGORY__INIT;
                        items[i].name = categories[i];
                        pointers[i] = &items[i];
                }
                track_event.available_categories = pointers;
                track_event.n_available_categories = n;
                descriptor.track_event_descriptor = &track_event;
        }
        source.descriptor = &descriptor;
        source.has_producer_id = true;
        source.producer_id = producer_id;
        state.data_sources = sources;
        state.n_data_sources = 1;
        return write_state(&state);
}

static int write_producer(int32_t id, const char *name, uid_t uid) {
        Tracebus__TracingServiceState state = TRACEBUS__TRACING_SERVICE_STATE__INIT;
        Tracebus__TracingServiceState__Producer producer = TRACEBUS__TRACING_SERVICE_STATE__PRODUCER__INIT;
        Tracebus__TracingServiceState__Producer *producers[] = { &producer };

        producer.has_id = producer.has_uid = true;
        producer.id = id;
        producer.name = (char *) name;
        producer.uid = (int32_t) uid;
        state.producers = producers;
        state.n_producers = 1;
        return write_state(&state);
}

static int write_app(const ProducerInfo *p) {
        int r = write_producer((int32_t) p->id, p->name, p->uid);

        for (size_t i = 0; r >= 0 && i < p->n_sources; i++)
                r = write_data_source((int32_t) p->id, p->sources[i].name, p->sources[i].categories);
        return r;
}

/* The service's own producer: numbered after the apps, whose numbers are the ones --query shows. */
static int32_t service_producer_id(const ProducerList *apps) {
        uint64_t highest = 0;

        for (size_t i = 0; i < apps->n; i++)
                highest = MAX(highest, apps->items[i].id);
        return (int32_t) MIN(highest + 1, (uint64_t) INT32_MAX);
}

int cli_print_query_raw(const SessionInfo *items, size_t n, const ProducerList *apps) {
        Tracebus__TracingServiceState state = TRACEBUS__TRACING_SERVICE_STATE__INIT;
        int32_t service_id = service_producer_id(apps);
        int r;

        state.has_num_sessions = state.has_num_sessions_started = true;
        state.num_sessions = (int32_t) n;
        for (size_t i = 0; i < n; i++)
                state.num_sessions_started += strcmp(strempty(items[i].state), "recording") == 0;
        r = write_state(&state);
        if (r >= 0)
                r = write_producer(service_id, "tracebusd", 0);
        if (r >= 0)
                r = write_data_source(service_id, "linux.ftrace", NULL);
        for (size_t i = 0; r >= 0 && i < apps->n; i++)
                r = write_app(&apps->items[i]);
        if (r >= 0 && fflush(stdout) != 0)
                r = -EIO;
        return r;
}
