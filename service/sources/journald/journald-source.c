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
        .visibility = {
                .unprivileged = "the entries the session's owner could read with journalctl: its own (_UID or "
                                "_SYSTEMD_OWNER_UID is its uid), or the whole journal for root and the members "
                                "of the groups adm and systemd-journal",
        },
};
