/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The registry of the data sources, and what the service does with all of them: load
 * their sections, set up the session's instance, start, stop and flush them for a session. A new source is
 * its folder under sources/ and one line in REGISTERED_SOURCES; the order of the lines
 * is the order in which they load (their warnings), start and stop.
 */
#include <errno.h>
#include <string.h>

#include "data-source.h"

#define REGISTERED_SOURCES(X)                     \
        X(ftrace_data_source)                     \
        X(sys_stats_data_source)                  \
        X(process_stats_data_source)              \
        X(journald_data_source)                   \
        X(perf_data_source)

#define DECLARE_SOURCE(ops) extern const DataSourceOps ops;
REGISTERED_SOURCES(DECLARE_SOURCE)

#define LIST_SOURCE(ops) &ops,
static const DataSourceOps *const registry[] = { REGISTERED_SOURCES(LIST_SOURCE) };

_Static_assert(ELEMENTSOF(registry) <= SESSION_MAX_SECTIONS, "more data sources than SESSION_MAX_SECTIONS");

size_t data_sources_count(void) {
        return ELEMENTSOF(registry);
}

const DataSourceOps *data_source_nth(size_t i) {
        return i < ELEMENTSOF(registry) ? registry[i] : NULL;
}

void *data_source_section(const SessionConfig *c, const DataSourceOps *ops) {
        for (size_t i = 0; i < ELEMENTSOF(registry); i++)
                if (registry[i] == ops)
                        return c->sections[i].data;
        return NULL;
}

static bool named(const char *const *names, const char *name) {
        for (const char *const *n = names; *n; n++)
                if (strcmp(*n, name) == 0)
                        return true;
        return false;
}

const Tracebus__DataSourceConfig *data_source_next_config(const char *const *names, const Tracebus__TraceConfig *tc,
                                                          size_t *i) {
        const Tracebus__DataSourceConfig *ds;

        for (; (ds = session_config_next_source(tc, NULL, i)); (*i)++)
                if (named(names, ds->name))
                        return ds;
        return NULL;
}

const Tracebus__DataSourceConfig *data_source_first_config(const char *const *names, const Tracebus__TraceConfig *tc) {
        size_t i = 0;

        return data_source_next_config(names, tc, &i);
}

int data_source_warn_repeats(const char *const *names, const Tracebus__TraceConfig *tc, SessionConfig *c,
                             const char *what) {
        const Tracebus__DataSourceConfig *ds;
        bool first = true;

        FOREACH_SOURCE_CONFIG(ds, names, tc) {
                int r;

                if (first) {
                        first = false;
                        continue;
                }
                r = session_config_warn(c, "%s: a second %s: skipped", ds->name, what);
                if (r < 0)
                        return r;
        }
        return 0;
}

int data_sources_load(const Tracebus__TraceConfig *tc, const char *tracefs_root, SessionConfig *c,
                      char **ret_error) {
        for (size_t i = 0; i < ELEMENTSOF(registry); i++) {
                void *section = NULL;
                int r;

                if (!registry[i]->load)
                        continue;
                r = registry[i]->load(tc, tracefs_root, c, &section, ret_error);
                if (section)
                        c->sections[i] = (SessionSection) { .data = section, .free = registry[i]->free_section };
                if (r < 0)
                        return r;
        }
        return 0;
}

int data_sources_apply_rights(SessionConfig *c, uid_t owner_uid, bool manage) {
        for (size_t i = 0; i < ELEMENTSOF(registry); i++) {
                int r;

                if (!registry[i]->apply_rights)
                        continue;
                r = registry[i]->apply_rights(c, c->sections[i].data, owner_uid, manage);
                if (r < 0)
                        return r;
        }
        return 0;
}

int data_sources_setup_instance(DataSourceInstance *si) {
        for (size_t i = 0; i < ELEMENTSOF(registry); i++) {
                int r;

                if (!registry[i]->setup_instance)
                        continue;
                r = registry[i]->setup_instance(si);
                if (r < 0)
                        return r;
        }
        return 0;
}

void data_sources_teardown_instance(const SessionConfig *c, uint64_t session_id) {
        for (size_t i = 0; i < ELEMENTSOF(registry); i++)
                if (registry[i]->teardown_instance)
                        registry[i]->teardown_instance(c, session_id);
}

int data_sources_start(const DataSourceContext *ctx, DataSourcesRunning *running) {
        for (size_t i = 0; i < ELEMENTSOF(registry); i++) {
                void *section = ctx->config->sections[i].data;
                int r;

                if (!section || !registry[i]->start)
                        continue;
                r = registry[i]->start(ctx, section, &running->state[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

void data_sources_stop(DataSourcesRunning *running) {
        for (size_t i = 0; i < ELEMENTSOF(registry); i++)
                if (running->state[i]) {
                        registry[i]->stop(running->state[i]);
                        running->state[i] = NULL;
                }
}

bool data_sources_have_final_reads(const DataSourcesRunning *running) {
        for (size_t i = 0; i < ELEMENTSOF(registry); i++)
                if (running->state[i] && registry[i]->queue_final)
                        return true;
        return false;
}

int data_sources_queue_final(DataSourcesRunning *running, const void *owner) {
        for (size_t i = 0; i < ELEMENTSOF(registry); i++) {
                int r;

                if (!running->state[i] || !registry[i]->queue_final)
                        continue;
                r = registry[i]->queue_final(running->state[i], owner);
                if (r < 0)
                        return r;
        }
        return 0;
}
