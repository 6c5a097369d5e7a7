/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * linux.process_stats (ProcessStatsConfig of Perfetto v58), checked into SessionConfig.
 * The service describes processes in every session, as if the data source with
 * scan_all_processes_on_start and record_thread_names were always there (a trace without
 * names is of little use); the data source adds the periodic ProcessStats, the optional
 * process age, and the quirks that turn the two descriptions off.
 */
#include <string.h>
#include <unistd.h>

#include "config/session-config.h"

#define PROCESS_STATS_SOURCE "linux.process_stats"

static int load_quirks(const Tracebus__ProcessStatsConfig *p, SessionConfig *c) {
        for (size_t i = 0; i < p->n_quirks; i++)
                switch (p->quirks[i]) {
                case TRACEBUS__PROCESS_STATS_CONFIG__QUIRKS__DISABLE_INITIAL_DUMP:
                        c->process_initial_dump_off = true;
                        break;
                case TRACEBUS__PROCESS_STATS_CONFIG__QUIRKS__DISABLE_ON_DEMAND:
                        c->process_on_demand_off = true;
                        break;
                default: {
                        int r = session_config_warn(c, PROCESS_STATS_SOURCE ": quirk %d is not one of Perfetto v58's: "
                                                    "skipped", (int) p->quirks[i]);
                        if (r < 0)
                                return r;
                }
                }
        return 0;
}

/* What is asked but not recorded, one warning each. */
static int warn_skipped(const Tracebus__ProcessStatsConfig *p, SessionConfig *c) {
        int r = 0;

        if (p->resolve_process_fds)
                r = session_config_warn(c, PROCESS_STATS_SOURCE ": resolve_process_fds (deprecated since Perfetto "
                                        "v52) would show the files other users' processes hold open: skipped");
        if (r >= 0 && p->record_process_dmabuf_rss)
                r = session_config_warn(c, PROCESS_STATS_SOURCE ": record_process_dmabuf_rss: %s: skipped",
                                        access("/proc/self/dmabuf_rss", F_OK) < 0 ?
                                        "this kernel has no /proc/PID/dmabuf_rss (an Android kernel's)" :
                                        "not recorded by tracebus");
        return r;
}

/* The period: Perfetto raises one under 100 ms to 100 ms, and so does the service,
 * with a warning. */
static int load_period(const Tracebus__ProcessStatsConfig *p, SessionConfig *c) {
        c->process_stats_poll_ms = p->proc_stats_poll_ms;
        if (p->proc_stats_poll_ms == 0 || p->proc_stats_poll_ms >= PROCESS_STATS_MIN_POLL_MS)
                return 0;
        c->process_stats_poll_ms = PROCESS_STATS_MIN_POLL_MS;
        return session_config_warn(c, PROCESS_STATS_SOURCE ": proc_stats_poll_ms %u is under the minimum of %u ms: "
                                   "raised to %u ms", p->proc_stats_poll_ms, PROCESS_STATS_MIN_POLL_MS,
                                   PROCESS_STATS_MIN_POLL_MS);
}

static int load_one(const Tracebus__TraceConfig *tc, const Tracebus__DataSourceConfig *ds, SessionConfig *c) {
        static const Tracebus__ProcessStatsConfig defaults = TRACEBUS__PROCESS_STATS_CONFIG__INIT;
        const Tracebus__ProcessStatsConfig *p = ds->process_stats_config ?: &defaults;
        int r;

        c->process_stats = true;
        /* Its target_buffer_name or target_buffer, checked by session_config_load_buffers(). */
        r = session_config_target_buffer(tc, ds, &c->process_stats_target_buffer, NULL);
        if (r < 0)
                return r;
        c->process_stats_cache_ttl_ms = p->proc_stats_cache_ttl_ms;
        c->process_stats_smaps = p->scan_smaps_rollup;
        c->process_stats_runtime = p->record_process_runtime;
        c->process_age = p->record_process_age;
        c->process_skip_main_thread = p->skip_main_thread_message;
        r = load_period(p, c);
        if (r >= 0)
                r = load_quirks(p, c);
        if (r >= 0)
                r = warn_skipped(p, c);
        return r;
}

int session_config_load_process_stats(const Tracebus__TraceConfig *tc, SessionConfig *c) {
        for (size_t i = 0; i < tc->n_data_sources; i++) {
                const Tracebus__DataSourceConfig *ds = tc->data_sources[i]->config;
                int r;

                if (!ds || !ds->name || strcmp(ds->name, PROCESS_STATS_SOURCE) != 0)
                        continue;
                if (c->process_stats)
                        r = session_config_warn(c, PROCESS_STATS_SOURCE ": a second data source of this name: skipped");
                else
                        r = load_one(tc, ds, c);
                if (r < 0)
                        return r;
        }
        return 0;
}

int session_config_load_process_sources(const Tracebus__TraceConfig *tc, SessionConfig *c) {
        int r = session_config_load_process_stats(tc, c);

        return r < 0 ? r : session_config_load_journald(tc, c);
}
