/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The config's data sources that apps built with the Perfetto SDK record (track_event,
 * gpu.*, vulkan.*, any name tracebus has no source of): each kept as the producers will
 * receive it, its DataSourceConfig packed as written, its target buffer resolved, and its
 * producer name filters bounded, the regexes checked before they are compiled. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "session-config-fields.h"
#include "session-config.h"
#include "strv.h"

static void producer_source_done(SessionProducerSource *s) {
        free(s->name);
        free(s->config);
        strv_free(s->name_filter);
        for (size_t i = 0; i < s->n_name_regexes; i++)
                whole_regex_free(s->name_regexes[i]);
        free(s->name_regexes);
        *s = (SessionProducerSource) {};
}

void session_config_producers_done(SessionConfig *c) {
        for (size_t i = 0; i < c->n_producer_sources; i++)
                producer_source_done(&c->producer_sources[i]);
        c->producer_sources = mfree(c->producer_sources);
        c->n_producer_sources = 0;
}

bool session_config_is_producer_source(const char *name) {
        const SourceRule *rule;

        if (!name || !*name)
                return false;
        rule = session_config_source_rule(name);
        return !rule || rule->disposition == FIELD_PRODUCER;
}

static int load_name_filter(const Tracebus__TraceConfig__DataSource *d, SessionProducerSource *s, char **ret_error) {
        if (d->n_producer_name_filter > SESSION_MAX_PRODUCER_FILTERS)
                return session_config_error(ret_error, "data source '%.64s': more than %u producer_name_filter entries",
                                            s->name, SESSION_MAX_PRODUCER_FILTERS);
        for (size_t i = 0; i < d->n_producer_name_filter; i++) {
                if (!string_is_printable_name(d->producer_name_filter[i], SESSION_MAX_PRODUCER_NAME))
                        return session_config_error(ret_error, "data source '%.64s': producer_name_filter %zu is empty, "
                                                    "not printable or longer than %u bytes", s->name, i,
                                                    SESSION_MAX_PRODUCER_NAME - 1);
                if (strv_extend(&s->name_filter, d->producer_name_filter[i]) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static int load_name_regexes(const Tracebus__TraceConfig__DataSource *d, SessionProducerSource *s, char **ret_error) {
        size_t n = d->n_producer_name_regex_filter;

        if (n > SESSION_MAX_PRODUCER_FILTERS)
                return session_config_error(ret_error, "data source '%.64s': more than %u producer_name_regex_filter entries",
                                            s->name, SESSION_MAX_PRODUCER_FILTERS);
        if (n == 0)
                return 0;
        s->name_regexes = calloc(n, sizeof(WholeRegex *));
        if (!s->name_regexes)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                const char *pattern = d->producer_name_regex_filter[i] ?: "", *reason = NULL;
                int r;

                if (strlen(pattern) > WHOLE_REGEX_MAX_PATTERN || regex_check_expansion(pattern) < 0)
                        return session_config_error(ret_error, "data source '%.64s': producer_name_regex_filter %zu is "
                                                    "longer than %u bytes, or %s", s->name, i,
                                                    WHOLE_REGEX_MAX_PATTERN, REGEX_EXPANSION_REASON);
                r = whole_regex_compile(pattern, &s->name_regexes[i], &reason);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return session_config_error(ret_error, "data source '%.64s': producer_name_regex_filter %zu: %s",
                                                    s->name, i, reason ?: "does not compile");
                s->n_name_regexes++;
        }
        return 0;
}

/* The DataSourceConfig as the producers receive it, packed once; the fields the service
 * sets (session id, durations, target buffer) are written when each producer is set up. */
static int pack_source_config(const Tracebus__DataSourceConfig *ds, SessionProducerSource *s, char **ret_error) {
        size_t len = tracebus__data_source_config__get_packed_size(ds);

        if (len > SESSION_MAX_PRODUCER_CONFIG_BYTES)
                return session_config_error(ret_error, "data source '%.64s': its config is %zu bytes, above the limit of %u",
                                            s->name, len, SESSION_MAX_PRODUCER_CONFIG_BYTES);
        s->config = malloc(MAX(len, 1u));
        if (!s->config)
                return -ENOMEM;
        s->config_len = tracebus__data_source_config__pack(ds, s->config);
        return 0;
}

static int load_one(const Tracebus__TraceConfig *tc, const Tracebus__TraceConfig__DataSource *d,
                    SessionProducerSource *s, char **ret_error) {
        const Tracebus__DataSourceConfig *ds = d->config;
        int r;

        if (!string_is_printable_name(ds->name, SESSION_MAX_PRODUCER_NAME))
                return session_config_error(ret_error, "data source '%.64s': its name is not printable or longer than "
                                            "%u bytes", ds->name, SESSION_MAX_PRODUCER_NAME - 1);
        s->name = strdup(ds->name);
        if (!s->name)
                return -ENOMEM;
        r = session_config_target_buffer(tc, ds, &s->buffer, ret_error);
        if (r >= 0)
                r = load_name_filter(d, s, ret_error);
        if (r >= 0)
                r = load_name_regexes(d, s, ret_error);
        if (r >= 0)
                r = pack_source_config(ds, s, ret_error);
        return r;
}

int session_config_load_producers(const Tracebus__TraceConfig *tc, SessionConfig *c, char **ret_error) {
        int r;

        for (size_t i = 0; i < tc->n_data_sources; i++) {
                const Tracebus__TraceConfig__DataSource *d = tc->data_sources[i];
                SessionProducerSource *grown;

                if (!d->config || !session_config_is_producer_source(d->config->name))
                        continue;
                if (c->n_producer_sources >= SESSION_MAX_PRODUCER_SOURCES)
                        return session_config_error(ret_error, "more than %u data sources for apps to record",
                                                    SESSION_MAX_PRODUCER_SOURCES);
                grown = reallocarray(c->producer_sources, c->n_producer_sources + 1, sizeof(*grown));
                if (!grown)
                        return -ENOMEM;
                c->producer_sources = grown;
                grown[c->n_producer_sources] = (SessionProducerSource) {};
                r = load_one(tc, d, &grown[c->n_producer_sources++], ret_error);
                if (r < 0)
                        return r;
        }
        return 0;
}

bool session_producer_source_accepts(const SessionProducerSource *s, const char *producer_name) {
        if (!s->name_filter && s->n_name_regexes == 0)
                return true;
        if (strv_contains(s->name_filter, producer_name))
                return true;
        for (size_t i = 0; i < s->n_name_regexes; i++)
                if (whole_regex_match(s->name_regexes[i], producer_name))
                        return true;
        return false;
}
