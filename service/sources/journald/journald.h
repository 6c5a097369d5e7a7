/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

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
