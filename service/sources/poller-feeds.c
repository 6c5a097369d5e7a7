/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "macro.h"
#include "poller-feeds.h"

static PollerFeed *feed_find(PollerFeeds *feeds, Poller *p, uint32_t kind, uint32_t period_ms) {
        for (PollerFeed *f = feeds->list; f; f = f->next)
                if (f->poller == p && f->kind == kind && f->period_ms == period_ms)
                        return f;
        return NULL;
}

static void feed_free(PollerFeeds *feeds, PollerFeed *f) {
        if (feeds->done)
                feeds->done(f);
        (void) pthread_mutex_destroy(&f->lock);
        free(f);
}

/* Called with @feeds's lock held. */
static void feed_unlink(PollerFeeds *feeds, PollerFeed *f) {
        for (PollerFeed **j = &feeds->list; *j; j = &(*j)->next)
                if (*j == f) {
                        *j = f->next;
                        return;
                }
}

/* The feed of (@kind, @period_ms) on @p, made if needed. Called with @feeds's lock held. */
static int feed_get(PollerFeeds *feeds, Poller *p, uint32_t kind, uint32_t period_ms, PollerFeed **ret) {
        PollerFeed *f = feed_find(feeds, p, kind, period_ms);
        int r;

        if (f) {
                *ret = f;
                return 0;
        }
        f = calloc(1, feeds->feed_size);
        if (!f)
                return -ENOMEM;
        *f = (PollerFeed) { .poller = p, .kind = kind, .period_ms = period_ms };
        (void) pthread_mutex_init(&f->lock, NULL);
        r = poller_add(p, period_ms, feeds->poll, f, &f->entry);
        if (r < 0) {
                feed_free(feeds, f);
                return r;
        }
        if (feeds->slow)
                poller_on_slow(p, f->entry, feeds->slow);
        f->next = feeds->list;
        feeds->list = f;
        *ret = f;
        return 0;
}

/* Called with @feeds's lock held, which it releases: @f, when @drop, is unlinked, then
 * removed from its poller (which waits for a poll in progress) and freed. */
static void feeds_unlock_dropping(PollerFeeds *feeds, PollerFeed *f, bool drop) {
        if (drop)
                feed_unlink(feeds, f);
        (void) pthread_mutex_unlock(&feeds->lock);
        if (drop) {
                poller_remove(f->poller, f->entry);
                feed_free(feeds, f);
        }
}

int poller_feed_join(PollerFeeds *feeds, Poller *p, uint32_t kind, uint32_t period_ms,
                     int (*add)(PollerFeed *f, void *userdata), void *userdata, PollerFeed **ret) {
        PollerFeed *f = NULL;
        bool unused;
        int r;

        (void) pthread_mutex_lock(&feeds->lock);
        r = feed_get(feeds, p, kind, period_ms, &f);
        if (r < 0) {
                (void) pthread_mutex_unlock(&feeds->lock);
                return r;
        }
        (void) pthread_mutex_lock(&f->lock);
        r = add(f, userdata);
        if (r >= 0)
                f->n_subscribers++;
        unused = f->n_subscribers == 0;
        (void) pthread_mutex_unlock(&f->lock);
        feeds_unlock_dropping(feeds, f, unused);
        if (r >= 0)
                *ret = f;
        return r;
}

void poller_feed_leave(PollerFeeds *feeds, PollerFeed *f, void (*remove)(PollerFeed *f, void *userdata),
                       void *userdata) {
        bool last;

        (void) pthread_mutex_lock(&feeds->lock);
        (void) pthread_mutex_lock(&f->lock);   /* waits for a poll in progress */
        remove(f, userdata);
        f->n_subscribers--;
        last = f->n_subscribers == 0;
        (void) pthread_mutex_unlock(&f->lock);
        feeds_unlock_dropping(feeds, f, last);
}
