/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>

#include "macro.h"

/*
 * The pollers' thread: the data sources that read /proc and /sys on a period
 * (linux.sys_stats, linux.process_stats, linux.sysfs_power, ...) run here, off the
 * D-Bus event loop and off every session's ftrace drain. One thread for the service,
 * owned by the manager: a period's reads are small, and sessions that ask for the same
 * counter at the same period share one entry (the source keeps its subscribers).
 * A poll function builds packets and hands them to each subscriber's recorder with
 * recorder_submit_packet(); it must not block for long, as every other poll waits.
 */

typedef struct Poller Poller;
typedef struct PollerEntry PollerEntry;

/* Called on the poller's thread, once per period, with the time (CLOCK_BOOTTIME, ns)
 * the period came due. */
typedef void (*PollerFunc)(uint64_t now_ns, void *userdata);

/* No poller may run more often: Perfetto's sys_stats refuses periods under 10 ms too. */
#define POLLER_MIN_PERIOD_MS 10u

int poller_new(Poller **ret);
/* Stops the thread. Every entry must have been removed. */
Poller *poller_free(Poller *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(Poller *, poller_free);

/* Runs @func every @period_ms (raised to POLLER_MIN_PERIOD_MS), the first time at once.
 * A period that was missed (a slow poll) is skipped, not run twice. */
int poller_add(Poller *p, uint32_t period_ms, PollerFunc func, void *userdata, PollerEntry **ret);

/* After it returns, @e's function is not running and never runs again; @e is freed.
 * Must not be called from a poll function. NULL is a no-op. */
void poller_remove(Poller *p, PollerEntry *e);

/* A poll that takes longer than its period POLLER_SLOW_RUNS times in a row is slow:
 * @func (on the poller's thread) is told once, with the last poll's time, so that the
 * source can warn its sessions. Other entries still run between two slow polls (the
 * earliest due runs first), but no thread can cut a poll short: sources bound their
 * own work (MaxProcessEntries, the journal's limits). */
#define POLLER_SLOW_RUNS 3u
typedef void (*PollerSlowFunc)(uint64_t took_ns, uint64_t period_ns, void *userdata);
void poller_on_slow(Poller *p, PollerEntry *e, PollerSlowFunc func);

/* Queues a call of @func(now, @userdata) on the poller's thread, once, before any
 * periodic entry that is due; calls run in the order they were queued. @owner names
 * the calls for poller_cancel(). The way to run a source's final read at Stop without
 * blocking the event loop: queue the reads, then a call that wakes the loop. */
int poller_call(Poller *p, PollerFunc func, void *userdata, const void *owner);
/* Drops @owner's queued calls; after it returns none of them runs (a running one has
 * finished). Must not be called from a poll function. */
void poller_cancel(Poller *p, const void *owner);
