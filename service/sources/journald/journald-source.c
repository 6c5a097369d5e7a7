/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* linux.systemd_journald in the registry of data sources. */
#include "journald.h"

const DataSourceOps journald_data_source = {
        .names = journald_source_names,
        .load = journald_load,
        .free_section = journald_section_free,
        .start = journald_start,
        .queue_final = journald_queue_final,
        .stop = journald_stop,
        .apply_rights = journald_apply_rights,
        .visibility = {
                .unprivileged = "the entries the caller could read with journalctl: those of its own processes "
                                "(_UID is its uid), never audit records nor root's entries from its session; the "
                                "whole journal for the members of the groups adm and systemd-journal",
                .with_manage = "the whole journal (journald_apply_rights() is given whether the caller holds "
                               "org.tracebus.manage)",
        },
};
