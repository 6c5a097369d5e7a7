/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

/*
 * The kernel's trace events, indexed: read from tracefs's available_events in one read
 * (a captured tree without that file, such as tests/fixtures/ftrace, is listed instead)
 * into hash tables by "group/name", by group and by bare name. A Start resolves its
 * event names here, in constant time per name, instead of a stat() or a readdir of
 * tracefs per name, which a caller could multiply by thousands.
 *
 * The kernel's list changes when a module loads or unloads and when a probe is defined:
 * event_index_refresh() re-reads it, at most once per EVENT_INDEX_REFRESH_USEC, or at once
 * when a missing name turns out to exist (event_index_is_stale_for()).
 */

#define EVENT_INDEX_REFRESH_USEC (1000000ULL)

typedef struct EventIndex EventIndex;

/* The index of the events under @tracefs_root, read on first use and kept (one per
 * process, for the last root asked). -ENOENT when @tracefs_root lists no events. */
int event_index_get(const char *tracefs_root, EventIndex **ret);

/* Re-reads the kernel's events, unless (without @force) the last read is more recent than
 * EVENT_INDEX_REFRESH_USEC. Returns 1 if re-read, 0 if too soon. */
int event_index_refresh(EventIndex *idx, bool force);

/* Whether "group/name" @event, which the index lacks, exists in tracefs after all (one
 * stat()): a probe or module added since the last read. For a few misses only. */
bool event_index_is_stale_for(const EventIndex *idx, const char *event);

/* Whether @s (of @len bytes) is a plain group or event name. */
bool event_name_valid(const char *s, size_t len);

/* The events a Start selects, in the order first asked for, each once. Selections are
 * tied to the index as read: a refresh starts them over. */
typedef struct EventSelection {
        const EventIndex *index;
        uint64_t generation;    /* the read of the index it belongs to */
        uint8_t *chosen;        /* flags per event of the index */
        uint32_t *order;        /* indexes into the index, in the order chosen */
        size_t n_order;
} EventSelection;

void event_selection_done(EventSelection *sel);

/* Adds the events @pattern names ("group/name", "group/ *" or a bare "name", any group)
 * to @sel; with @named, a caller named them (a glob never names its events). Returns > 0
 * when events matched (already chosen ones count), 0 when none did, -EINVAL for a pattern
 * that is no plain event name, -ESTALE when the index was re-read since the selection
 * began. */
int event_index_select(const EventIndex *idx, const char *pattern, bool named, EventSelection *sel);

/* The @k-th event of @sel (k < n_order), valid while the index is not re-read: whether a
 * pattern of event_index_select() named it, and whether tracefs's dynamic_events lists it
 * (a kprobe, uprobe, eprobe or synthetic event someone defined, in any group). */
typedef struct EventSelected {
        const char *event;
        bool named;
        bool dynamic;
} EventSelected;
void event_selection_get(const EventSelection *sel, size_t k, EventSelected *ret);

/* The selection's names ("group/name"), in the order chosen; NULL for none. */
int event_selection_names(const EventSelection *sel, char ***ret);

/* Every event whose "group/name" or name matches the shell glob @glob, sorted. */
int event_index_list(const EventIndex *idx, const char *glob, char ***ret);
