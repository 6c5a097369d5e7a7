/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A producer's data sources: what it registered, copied out of its messages with every
 * string and count bounded, so that what the service keeps does not grow with what a
 * producer sends. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "producers.h"
#include "strv.h"

/* Bounds on what is kept of one data source: its name, and the names of its track_event
 * categories (the SDK's own apps have tens). */
#define DATA_SOURCE_NAME_MAX 256u
#define DATA_SOURCE_CATEGORIES_MAX 256u
#define CATEGORY_NAME_MAX 128u

static void source_done(ProducerDataSource *s) {
        free(s->name);
        strv_free(s->categories);
        *s = (ProducerDataSource) {};
}

void producer_free_sources(Producer *producer) {
        for (unsigned i = 0; i < producer->n_sources; i++)
                source_done(&producer->sources[i]);
        free(producer->sources);
        producer->sources = NULL;
        producer->n_sources = 0;
}

static ProducerDataSource *find_source(Producer *producer, const char *name) {
        for (unsigned i = 0; i < producer->n_sources; i++)
                if (strcmp(producer->sources[i].name, name) == 0)
                        return &producer->sources[i];
        return NULL;
}

static bool name_valid(const char *name) {
        return string_is_printable_name(name, DATA_SOURCE_NAME_MAX);
}

/* The categories' names that are valid names, up to the bound; the others are left out. */
static int copy_categories(const Tracebus__TrackEventDescriptor *te, ProducerDataSource *out) {
        size_t n = te ? MIN(te->n_available_categories, (size_t) DATA_SOURCE_CATEGORIES_MAX) : 0;
        char **categories;

        if (n == 0)
                return 0;
        categories = calloc(n + 1, sizeof(char *));
        if (!categories)
                return -ENOMEM;
        out->categories = categories;
        for (size_t i = 0; i < n; i++) {
                const char *name = te->available_categories[i]->name;

                if (!name_valid(name) || strlen(name) >= CATEGORY_NAME_MAX)
                        continue;
                categories[out->n_categories] = strdup(name);
                if (!categories[out->n_categories])
                        return -ENOMEM;
                out->n_categories++;
        }
        return 0;
}

static int copy_source(const Tracebus__DataSourceDescriptor *d, ProducerDataSource *out) {
        int r;

        *out = (ProducerDataSource) {};
        out->name = strdup(d->name);
        if (!out->name)
                return -ENOMEM;
        out->notifies_stop = d->will_notify_on_stop;
        r = copy_categories(d->track_event_descriptor, out);
        if (r < 0)
                source_done(out);
        return r;
}

int producer_register_source(Producer *producer, const Tracebus__DataSourceDescriptor *d, bool update) {
        ProducerDataSource copy, *existing, *grown;
        int r;

        if (!d || !name_valid(d->name))
                return -EINVAL;
        existing = find_source(producer, d->name);
        if (update != !!existing)
                return update ? -ENOENT : -EEXIST;
        if (!update && (producer->n_sources >= PRODUCER_DATA_SOURCES_MAX ||
                        producers_count_data_sources_uid(producer->owner, producer->uid) >=
                        producer->owner->limits.max_data_sources_per_uid))
                return -EUSERS;
        r = copy_source(d, &copy);
        if (r < 0)
                return r;
        if (existing) {
                source_done(existing);
                *existing = copy;
                return 0;
        }
        grown = reallocarray(producer->sources, producer->n_sources + 1, sizeof(*grown));
        if (!grown) {
                source_done(&copy);
                return -ENOMEM;
        }
        producer->sources = grown;
        producer->sources[producer->n_sources++] = copy;
        return 0;
}

int producer_unregister_source(Producer *producer, const char *name) {
        ProducerDataSource *s = name ? find_source(producer, name) : NULL;

        if (!s)
                return -ENOENT;
        source_done(s);
        *s = producer->sources[--producer->n_sources];
        return 0;
}

bool producer_has_source(const Producer *producer, const char *name) {
        return find_source((Producer *) producer, name) != NULL;
}
