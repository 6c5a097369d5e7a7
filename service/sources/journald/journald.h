/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <sys/types.h>

#include "sources/poller.h"
#include "recorder/recorder.h"
#include "config/session-config.h"

/*
 * linux.systemd_journald: the journal entries written during the session, read with
 * sd-journal on the pollers' thread, as Perfetto v58's SystemdJournaldEvent. Only entries the
 * caller could read itself: its own (_UID or _SYSTEMD_OWNER_UID is the caller's), or all
 * of them for root and the members of the journal-reading groups (adm, systemd-journal).
 */

typedef struct JournaldSource JournaldSource;

/* Starts reading for @config's session (owned by @owner_uid) into @rec; *ret is NULL
 * when the config has no journal data source. */
int journald_start(Poller *poller, Recorder *rec, const SessionConfig *config, uid_t owner_uid, JournaldSource **ret);
/* Stops reading (a running read finishes first), hands the recorder the counts, frees
 * @s; NULL is a no-op. */
JournaldSource *journald_stop(JournaldSource *s);

/* Queues one last read on the poller's thread (poller_call() under @owner): the entries
 * written since the last poll, at Stop. NULL: 0. */
int journald_queue_final(JournaldSource *s, const void *owner);
