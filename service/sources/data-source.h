/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config/session-config.h"
#include "kernel/tracefs-instance.h"
#include "recorder/recorder.h"
#include "sources/poller.h"

/*
 * A data source, as the rest of the service sees it: the TraceConfig data sources it
 * serves, how it reads and checks its part of the config, what it does on the session's
 * tracefs instance, how it runs for a session and what a caller may see of it. Each lives
 * in a folder of its own under sources/ and describes itself with one DataSourceOps;
 * data-sources.c lists them, one line each, and is the only place that knows which there
 * are. The loader of the sessions' configs (core/) loads their sections through it, and a
 * session sets up its instance, starts, stops and frees them through it, naming none.
 *
 * linux.ftrace (sources/ftrace/) is one of them, with two differences that are the
 * kernel's ring buffer's. Its part of the config is SessionConfig's ftrace fields, not a
 * section: config/ loads it itself, first, because the buffers and the other sources refer
 * to its events and the recorder (below sources/) reads its events and options to drain
 * and parse the kernel's buffers; so its load is NULL. And its work is done on the
 * session's tracefs instance when the session is made (setup_instance), before the
 * recorder exists and before an armed session records; the recorder's own start and stop
 * record it, so it has no start or stop.
 */

/* The session's kernel side when the session is made, before its recorder. */
typedef struct DataSourceInstance {
        SessionConfig *config;       /* the session's: a step may narrow it (events not enabled) */
        uint64_t session_id;
        TraceInstance *instance;     /* its tracefs instance: NULL until a source makes one */
} DataSourceInstance;

/* What a source starts with. */
typedef struct DataSourceContext {
        Poller *poller;              /* the service's pollers' thread */
        Recorder *recorder;          /* the session's: where its packets go */
        uid_t owner_uid;             /* the session's owner: whose data it may read */
        const SessionConfig *config; /* the session's whole config, its limits */
} DataSourceContext;

/* What a caller records of the source: the rules the source applies today. */
typedef struct DataSourceVisibility {
        /* A caller without org.tracebus.manage, in one sentence. */
        const char *unprivileged;
        /* What org.tracebus.manage (or root) adds; NULL: nothing, the source asks polkit
         * nothing more than Start's own action. */
        const char *with_manage;
} DataSourceVisibility;

typedef struct DataSourceOps {
        /* The TraceConfig data source names it serves, NULL-terminated; the first is its
         * current name, the others older or sibling ones. */
        const char *const *names;
        /* Reads and checks its data sources of @tc into a section it allocates (*ret_section;
         * NULL when the config has none of them, or the machine cannot record them), with
         * a warning in @c for each thing skipped or changed. A bad value is -EINVAL with
         * the field named in *ret_error; on failure the loader frees what it allocated.
         * The config owns the section and frees it with free_section. NULL: the source's
         * part is loaded by config/ itself (linux.ftrace), it has no section. */
        int (*load)(const Tracebus__TraceConfig *tc, const char *tracefs_root, SessionConfig *c,
                    void **ret_section, char **ret_error);
        void (*free_section)(void *section);
        /* Starts recording @section for the session of @ctx: *ret_state is its running
         * state (NULL: nothing to run, such as no period). NULL for a source without a
         * section (load NULL): it is never started. */
        int (*start)(const DataSourceContext *ctx, void *section, void **ret_state);
        /* Queues its last read at Stop on the pollers' thread (poller_call() under @owner).
         * NULL: the source has no final read on the poller. */
        int (*queue_final)(void *state, const void *owner);
        /* Stops it (a running read finishes first) and frees @state: after it returns,
         * nothing reaches the recorder from it. Called before the recorder's final drain. */
        void (*stop)(void *state);
        /* Its work on the session's tracefs instance when the session is made, before the
         * recorder exists: may make si->instance (the session owns it then). On failure
         * the session is freed, teardown_instance included. NULL: nothing to do there. */
        int (*setup_instance)(DataSourceInstance *si);
        /* Undoes what setup_instance made outside the instance (global to the machine),
         * after the instance is removed; for a session it may have run for in part. */
        void (*teardown_instance)(const SessionConfig *c, uint64_t session_id);
        /* Once polkit answered, before the session is made: narrows @section (NULL when
         * the config has none of its data sources) and @c to what the session's owner
         * @owner_uid may have; @manage: the owner is root or holds org.tracebus.manage.
         * What it leaves out of what the config asked is a warning in @c. NULL: the
         * source shows everyone the same, or applies its rule elsewhere (linux.perf's
         * scope, perf_scope_authorize()). */
        int (*apply_rights)(SessionConfig *c, void *section, uid_t owner_uid, bool manage);
        DataSourceVisibility visibility;
} DataSourceOps;

/* The registry (data-sources.c). */
size_t data_sources_count(void);
const DataSourceOps *data_source_nth(size_t i);

/* @ops's section in @c: NULL when the config has none of its data sources. */
void *data_source_section(const SessionConfig *c, const DataSourceOps *ops);

/* The next data source of @tc named one of @names (NULL-terminated, a source's
 * DataSourceOps.names), at or after *@i (as session_config_next_source()); NULL when
 * there is none. */
const Tracebus__DataSourceConfig *data_source_next_config(const char *const *names, const Tracebus__TraceConfig *tc,
                                                          size_t *i);
#define FOREACH_SOURCE_CONFIG(ds, names, tc) \
        for (size_t ds##_index = 0; ((ds) = data_source_next_config((names), (tc), &ds##_index)); ds##_index++)

/* For a source that records one data source of its names: the first one of @tc, NULL
 * when there is none; and, once it is loaded, a warning in @c for each later one
 * ("NAME: a second @what: skipped"). Returns 0 or -ENOMEM. */
const Tracebus__DataSourceConfig *data_source_first_config(const char *const *names, const Tracebus__TraceConfig *tc);
int data_source_warn_repeats(const char *const *names, const Tracebus__TraceConfig *tc, SessionConfig *c,
                             const char *what);

/* Every registered source's section of @tc into @c (after session_config_load()), for the
 * sources that have a load. On failure the sections loaded so far stay in @c, freed by
 * session_config_done(). */
int data_sources_load(const Tracebus__TraceConfig *tc, const char *tracefs_root, SessionConfig *c,
                      char **ret_error);

/* Every source's apply_rights, in the registry's order: the rights of the session's owner
 * applied to @c (manager_grant_start_rights()). The first failure is returned. */
int data_sources_apply_rights(SessionConfig *c, uid_t owner_uid, bool manage);

/* Every source's setup_instance for a session being made, in the registry's order; the
 * first failure is returned. */
int data_sources_setup_instance(DataSourceInstance *si);
/* Every source's teardown_instance for session @session_id of config @c. */
void data_sources_teardown_instance(const SessionConfig *c, uint64_t session_id);

/* A session's running sources, one state per registered source. */
typedef struct DataSourcesRunning {
        void *state[SESSION_MAX_SECTIONS];
} DataSourcesRunning;

/* Starts every source that has a section in ctx->config, in the registry's order. On
 * failure the ones started stay in @running, for data_sources_stop(). */
int data_sources_start(const DataSourceContext *ctx, DataSourcesRunning *running);
/* Stops every running source, in the registry's order; @running is left empty. */
void data_sources_stop(DataSourcesRunning *running);
/* Whether a running source has a final read to queue at Stop. */
bool data_sources_have_final_reads(const DataSourcesRunning *running);
/* Queues the running sources' final reads on the pollers' thread under @owner. */
int data_sources_queue_final(DataSourcesRunning *running, const void *owner);
