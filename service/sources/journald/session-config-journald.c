/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * linux.systemd_journald (JournaldConfig of Perfetto v57/v58), checked into SessionConfig:
 * the priority bound and the identifier and unit filters. Which entries a caller sees is
 * decided when they are read (journald.c), from the caller's uid and groups.
 */
#include <dirent.h>
#include <stdio.h>
#include <string.h>

#include "fd-util.h"
#include "config/session-config.h"
#include "strv.h"

#define JOURNALD_SOURCE "linux.systemd_journald"
#define JOURNALD_MAX_FILTERS 64u
#define JOURNALD_MAX_FILTER_LEN 256u

/* Whether the journal of this machine has a directory: journald writes into
 * /run/log/journal/MACHINE-ID (volatile) or /var/log/journal/MACHINE-ID. */
static bool journal_exists(void) {
        _cleanup_free_ char *id = NULL;
        char path[128];

        if (read_full_file("/etc/machine-id", 64, &id, NULL) < 0)
                return false;
        id[strcspn(id, "\n")] = 0;
        for (unsigned i = 0; i < 2; i++) {
                DIR *d;

                snprintf(path, sizeof(path), "%s/%s", i == 0 ? "/run/log/journal" : "/var/log/journal", id);
                d = opendir(path);
                if (d) {
                        closedir(d);
                        return true;
                }
        }
        return false;
}

static int load_one(const Tracebus__TraceConfig *tc, const Tracebus__DataSourceConfig *ds, SessionConfig *c) {
        static const Tracebus__JournaldConfig defaults = TRACEBUS__JOURNALD_CONFIG__INIT;
        const Tracebus__JournaldConfig *j = ds->journald_config ?: &defaults;
        int r;

        if (!journal_exists())
                return session_config_warn(c, JOURNALD_SOURCE ": this machine has no systemd journal "
                                           "(/run/log/journal, /var/log/journal): skipped");
        c->journald = true;
        /* Its target_buffer_name or target_buffer, checked by session_config_load_buffers(). */
        r = session_config_target_buffer(tc, ds, &c->journald_target_buffer, NULL);
        if (r < 0)
                return r;
        /* Perfetto: 0 or unset captures every priority, as 7 (debug) does. */
        c->journald_min_prio = j->min_prio == 0 ? 7 : MIN(j->min_prio, 7u);
        if (j->min_prio > 7) {
                r = session_config_warn(c, JOURNALD_SOURCE ": min_prio %u is past 7 (debug): 7 used", j->min_prio);
                if (r < 0)
                        return r;
        }
        r = session_config_copy_names(c, JOURNALD_SOURCE, "filter_identifiers", j->filter_identifiers,
                                      j->n_filter_identifiers, JOURNALD_MAX_FILTERS, JOURNALD_MAX_FILTER_LEN,
                                      &c->journald_identifiers);
        if (r >= 0)
                r = session_config_copy_names(c, JOURNALD_SOURCE, "filter_units", j->filter_units, j->n_filter_units,
                                              JOURNALD_MAX_FILTERS, JOURNALD_MAX_FILTER_LEN, &c->journald_units);
        return r;
}

int session_config_load_journald(const Tracebus__TraceConfig *tc, SessionConfig *c) {
        bool seen = false;

        for (size_t i = 0; i < tc->n_data_sources; i++) {
                const Tracebus__DataSourceConfig *ds = tc->data_sources[i]->config;
                int r;

                if (!ds || !ds->name || (strcmp(ds->name, JOURNALD_SOURCE) != 0 && strcmp(ds->name, "linux.journald") != 0))
                        continue;
                if (seen)
                        r = session_config_warn(c, "%s: a second journal data source: skipped", ds->name);
                else
                        r = load_one(tc, ds, c);
                seen = true;
                if (r < 0)
                        return r;
        }
        return 0;
}
