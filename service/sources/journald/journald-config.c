/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * linux.systemd_journald (JournaldConfig of Perfetto v57/v58), checked into its section:
 * the priority bound and the identifier and unit filters. Which entries a caller sees is
 * decided when they are read (journald.c), from the caller's uid and groups.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "fd-util.h"
#include "journald-config.h"
#include "strv.h"

#define JOURNALD_SOURCE "linux.systemd_journald"
#define JOURNALD_MAX_FILTERS 64u

/* linux.journald is the name Perfetto's configs used before v57. */
const char *const journald_source_names[] = { JOURNALD_SOURCE, "linux.journald", NULL };

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

static int load_one(const Tracebus__TraceConfig *tc, const Tracebus__DataSourceConfig *ds, JournaldSection *section,
                    SessionConfig *c) {
        static const Tracebus__JournaldConfig defaults = TRACEBUS__JOURNALD_CONFIG__INIT;
        const Tracebus__JournaldConfig *j = ds->journald_config ?: &defaults;
        int r;

        /* Its target_buffer_name or target_buffer, checked by session_config_load_buffers(). */
        r = session_config_target_buffer(tc, ds, &section->target_buffer, NULL);
        if (r < 0)
                return r;
        /* Perfetto: 0 or unset captures every priority, as 7 (debug) does. */
        section->min_prio = j->min_prio == 0 ? 7 : MIN(j->min_prio, 7u);
        if (j->min_prio > 7) {
                r = session_config_warn(c, JOURNALD_SOURCE ": min_prio %u is past 7 (debug): 7 used", j->min_prio);
                if (r < 0)
                        return r;
        }
        r = session_config_copy_names(c, JOURNALD_SOURCE, "filter_identifiers", j->filter_identifiers,
                                      j->n_filter_identifiers, JOURNALD_MAX_FILTERS, JOURNALD_MAX_FILTER_LEN,
                                      &section->identifiers);
        if (r >= 0)
                r = session_config_copy_names(c, JOURNALD_SOURCE, "filter_units", j->filter_units, j->n_filter_units,
                                              JOURNALD_MAX_FILTERS, JOURNALD_MAX_FILTER_LEN, &section->units);
        return r;
}

/* The first journal data source, into a section, when this machine has a journal. */
static int load_first(const Tracebus__TraceConfig *tc, const Tracebus__DataSourceConfig *ds, SessionConfig *c,
                      JournaldSection **ret) {
        _cleanup_(journald_section_freep) JournaldSection *section = NULL;
        int r;

        if (!journal_exists())
                return session_config_warn(c, JOURNALD_SOURCE ": this machine has no systemd journal "
                                           "(/run/log/journal, /var/log/journal): skipped");
        section = calloc(1, sizeof(*section));
        if (!section)
                return -ENOMEM;
        r = load_one(tc, ds, section, c);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(section);
        return 0;
}

int journald_load(const Tracebus__TraceConfig *tc, const char *tracefs_root, SessionConfig *c, void **ret,
                  char **ret_error) {
        const Tracebus__DataSourceConfig *ds = data_source_first_config(journald_source_names, tc);
        _cleanup_(journald_section_freep) JournaldSection *section = NULL;
        int r;

        if (!ds)
                return 0;
        r = load_first(tc, ds, c, &section);
        if (r >= 0)
                r = data_source_warn_repeats(journald_source_names, tc, c, "journal data source");
        if (r < 0)
                return r;
        *ret = TAKE_PTR(section);
        return 0;
}

int journald_apply_rights(SessionConfig *c, void *section, uid_t owner_uid, bool manage) {
        JournaldSection *j = section;

        if (j)
                j->manage = manage;
        return 0;
}

void journald_section_free(void *section) {
        JournaldSection *j = section;

        if (!j)
                return;
        strv_free(j->identifiers);
        strv_free(j->units);
        free(j);
}
