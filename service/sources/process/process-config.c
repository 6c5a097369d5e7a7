/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * linux.process_stats (ProcessStatsConfig of Perfetto v58), checked into its section and
 * the config's process descriptions (SessionConfig.process_tree). The service describes processes in every session, as if the data source with
 * scan_all_processes_on_start and record_thread_names were always there (a trace without
 * names is of little use); the data source adds the periodic ProcessStats, the optional
 * process age, and the quirks that turn the two descriptions off.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "process-config.h"

#define PROCESS_STATS_SOURCE "linux.process_stats"

const char *const process_stats_source_names[] = { PROCESS_STATS_SOURCE, NULL };

static int load_quirks(const Tracebus__ProcessStatsConfig *p, SessionConfig *c) {
        for (size_t i = 0; i < p->n_quirks; i++)
                switch (p->quirks[i]) {
                case TRACEBUS__PROCESS_STATS_CONFIG__QUIRKS__DISABLE_INITIAL_DUMP:
                        c->process_tree.initial_dump_off = true;
                        break;
                case TRACEBUS__PROCESS_STATS_CONFIG__QUIRKS__DISABLE_ON_DEMAND:
                        c->process_tree.on_demand_off = true;
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
static int load_period(const Tracebus__ProcessStatsConfig *p, ProcessStatsSection *section, SessionConfig *c) {
        section->poll_ms = p->proc_stats_poll_ms;
        if (p->proc_stats_poll_ms == 0 || p->proc_stats_poll_ms >= PROCESS_STATS_MIN_POLL_MS)
                return 0;
        section->poll_ms = PROCESS_STATS_MIN_POLL_MS;
        return session_config_warn(c, PROCESS_STATS_SOURCE ": proc_stats_poll_ms %u is under the minimum of %u ms: "
                                   "raised to %u ms", p->proc_stats_poll_ms, PROCESS_STATS_MIN_POLL_MS,
                                   PROCESS_STATS_MIN_POLL_MS);
}

static int load_one(const Tracebus__TraceConfig *tc, const Tracebus__DataSourceConfig *ds, ProcessStatsSection *section,
                    SessionConfig *c) {
        static const Tracebus__ProcessStatsConfig defaults = TRACEBUS__PROCESS_STATS_CONFIG__INIT;
        const Tracebus__ProcessStatsConfig *p = ds->process_stats_config ?: &defaults;
        int r;

        /* Its target_buffer_name or target_buffer, checked by session_config_load_buffers(). */
        r = session_config_target_buffer(tc, ds, &section->target_buffer, NULL);
        if (r < 0)
                return r;
        section->cache_ttl_ms = p->proc_stats_cache_ttl_ms;
        section->smaps = p->scan_smaps_rollup;
        section->runtime = p->record_process_runtime;
        c->process_tree.age = p->record_process_age;
        c->process_tree.skip_main_thread = p->skip_main_thread_message;
        r = load_period(p, section, c);
        if (r >= 0)
                r = load_quirks(p, c);
        if (r >= 0)
                r = warn_skipped(p, c);
        return r;
}

int process_stats_load(const Tracebus__TraceConfig *tc, const char *tracefs_root, SessionConfig *c, void **ret,
                       char **ret_error) {
        const Tracebus__DataSourceConfig *ds = data_source_first_config(process_stats_source_names, tc);
        _cleanup_free_ ProcessStatsSection *section = NULL;
        int r;

        if (!ds)
                return 0;
        section = calloc(1, sizeof(*section));
        if (!section)
                return -ENOMEM;
        r = load_one(tc, ds, section, c);
        if (r >= 0)
                r = data_source_warn_repeats(process_stats_source_names, tc, c, "data source of this name");
        if (r < 0)
                return r;
        *ret = TAKE_PTR(section);
        return 0;
}

int process_apply_rights(SessionConfig *c, void *section, uid_t owner_uid, bool manage) {
        c->process_tree.owner_uid = owner_uid;
        c->process_tree.owner_sees_all = manage;
        return 0;
}
