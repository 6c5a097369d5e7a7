/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "journald-config.h"
#include "recorder/recorder.h"
#include "sources/data-source.h"
#include "sources/poller.h"

/*
 * linux.systemd_journald: the journal entries written during the session, read with
 * sd-journal on the pollers' thread, as Perfetto v58's SystemdJournaldEvent. Only entries the
 * caller could read itself: its own processes' (_UID is the caller's, audit records
 * excepted), or all of them for root, the holders of org.tracebus.manage and the members
 * of the journal-reading groups (adm, systemd-journal).
 */

typedef struct JournaldSource JournaldSource;

/* The registry's entry for the journal (journald-source.c). */
extern const DataSourceOps journald_data_source;

/* DataSourceOps.start: reads @section (a JournaldSection) for the session of @ctx,
 * entries its owner may read only; *ret is a JournaldSource. */
int journald_start(const DataSourceContext *ctx, void *section, void **ret);
/* DataSourceOps.stop: stops reading (a running read finishes first), hands the recorder
 * the counts, frees @state; NULL is a no-op. */
void journald_stop(void *state);

/* DataSourceOps.queue_final: one last read on the poller's thread (poller_call() under
 * @owner), the entries written since the last poll, at Stop. NULL: 0. */
int journald_queue_final(void *state, const void *owner);

/* An entry's field values are cut to this many bytes, MESSAGE to the second. */
#define JOURNALD_MAX_FIELD 256u
#define JOURNALD_MAX_MESSAGE 4096u

/* How an entry's fields are got: sd_journal_get_data()'s contract ("FIELD=value",
 * @ret_len bytes, not NUL-terminated; negative if the entry has no such field). */
typedef int (*JournaldGetData)(void *userdata, const char *field, const void **ret, size_t *ret_len);
/* Whether a caller of @uid (without the right to read the whole journal) could read the
 * entry whose fields @get gives: journald writes an entry of a process of the caller's
 * uid (_UID) into the caller's own journal file; an audit record, whose _UID says whom it
 * is about, goes to the system journal. */
bool journald_entry_visible(uid_t uid, JournaldGetData get, void *userdata);
/* The event of an entry of priority @prio, its fields got through @get: the numbers
 * that are numbers, the strings cut to the caps. journald_event_done() frees them. */
void journald_event_fill(Tracebus__SystemdJournaldEvent *e, uint32_t prio, JournaldGetData get, void *userdata);
void journald_event_done(Tracebus__SystemdJournaldEvent *e);
/* @e as a TracePacket at @ts_ns on @clock_id (0: the trace's boot clock), packed into
 * *ret (malloc'd). */
int journald_event_pack(Tracebus__SystemdJournaldEvent *e, uint64_t ts_ns, uint32_t clock_id, uint8_t **ret,
                        size_t *ret_len);
