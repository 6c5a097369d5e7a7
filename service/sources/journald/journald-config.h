/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>

#include "config/session-config.h"
#include "macro.h"
#include "sources/data-source.h"

/* linux.systemd_journald as a session records it (journald-config.c). */
typedef struct JournaldSection {
        uint32_t min_prio;             /* entries of PRIORITY up to this (7: all) */
        char **identifiers;            /* only these SYSLOG_IDENTIFIERs, when not NULL */
        char **units;                  /* only these _SYSTEMD_UNITs, when not NULL */
        uint32_t target_buffer;
        bool manage;                   /* the owner is root or holds org.tracebus.manage */
} JournaldSection;

/* The data source names it serves: linux.systemd_journald, linux.journald. */
extern const char *const journald_source_names[];

/* DataSourceOps.load: the journal data source of @tc (linux.systemd_journald, or its
 * older name linux.journald) into *ret (a JournaldSection): NULL when the config has none, or this machine has no
 * journal (a warning). A second one is skipped with a warning. */
int journald_load(const Tracebus__TraceConfig *tc, const char *tracefs_root, SessionConfig *c, void **ret,
                  char **ret_error);
/* DataSourceOps.apply_rights: whether the session's owner holds org.tracebus.manage
 * (@manage), which reads the whole journal. */
int journald_apply_rights(SessionConfig *c, void *section, uid_t owner_uid, bool manage);
/* DataSourceOps.free_section. */
void journald_section_free(void *section);
DEFINE_TRIVIAL_CLEANUP_FUNC_VOID(JournaldSection *, journald_section_free);
