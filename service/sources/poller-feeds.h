/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "poller.h"

/*
 * Poller entries that sessions share. A source that reads the same thing for every
 * session asking at the same period (sys_stats's counter groups, process_stats's walk of
 * /proc) keeps one feed per (kind, period) on the pollers' thread: made by its first
 * subscriber, removed with its last. The source embeds a PollerFeed first in its own
 * feed struct, beside its subscribers, which it adds and removes in the callbacks below,
 * under the feed's @lock. Its poll function holds that lock through a read, so that once
 * a subscriber is removed nothing more goes to its session.
 */

typedef struct PollerFeed {
        struct PollerFeed *next;
        Poller *poller;
        uint32_t kind;                 /* the source's own distinction between feeds */
        uint32_t period_ms;
        PollerEntry *entry;
        pthread_mutex_t lock;          /* the subscribers */
        size_t n_subscribers;
} PollerFeed;

/* One source's feeds, a static of the source. */
typedef struct PollerFeeds {
        pthread_mutex_t lock;          /* the list; taken before a feed's lock */
        PollerFeed *list;
        size_t feed_size;              /* of the source's feed struct, PollerFeed first */
        PollerFunc poll;               /* called with the feed */
        PollerSlowFunc slow;           /* NULL: no warning for slow polls */
        void (*done)(PollerFeed *f);   /* frees the source's part; NULL: nothing to free */
} PollerFeeds;

#define POLLER_FEEDS_INIT(type, poll_func, slow_func, done_func)                            \
        { .lock = PTHREAD_MUTEX_INITIALIZER, .feed_size = sizeof(type), .poll = (poll_func), \
          .slow = (slow_func), .done = (done_func) }

/* Adds a subscriber to the feed of (@kind, @period_ms) on @p, made if there is none (its
 * source's part zeroed): @add is called under the feed's lock and adds it. *ret is the
 * feed. A feed left without a subscriber by a failed @add is removed. */
int poller_feed_join(PollerFeeds *feeds, Poller *p, uint32_t kind, uint32_t period_ms,
                     int (*add)(PollerFeed *f, void *userdata), void *userdata, PollerFeed **ret);

/* Removes a subscriber from @f: @remove is called under the feed's lock (once a poll in
 * progress is over). The last one's leaving removes the feed from the poller and frees
 * it. Must not be called from a poll function. */
void poller_feed_leave(PollerFeeds *feeds, PollerFeed *f, void (*remove)(PollerFeed *f, void *userdata),
                       void *userdata);
