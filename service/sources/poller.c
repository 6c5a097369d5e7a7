/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "poller.h"
#include "time-util.h"

struct PollerEntry {
        PollerEntry *next;
        uint64_t period_ns;
        uint64_t due_ns;          /* CLOCK_MONOTONIC */
        PollerFunc func;
        void *userdata;
        PollerSlowFunc slow;
        unsigned overruns;        /* polls in a row that took longer than the period */
        bool slow_told;
};

typedef struct PollerCall {
        struct PollerCall *next;
        PollerFunc func;
        void *userdata;
        const void *owner;
} PollerCall;

struct Poller {
        pthread_t thread;
        pthread_mutex_t lock;
        pthread_cond_t changed;   /* entries added or removed, or quitting */
        pthread_cond_t idle;      /* @running finished */
        PollerEntry *entries;
        PollerEntry *running;
        PollerCall *calls, **calls_tail;   /* poller_call()'s, first in first out */
        const void *calling;      /* the owner of the call running, NULL if none */
        bool quit;
};

static PollerEntry *earliest(Poller *p) {
        PollerEntry *best = NULL;

        for (PollerEntry *e = p->entries; e; e = e->next)
                if (!best || e->due_ns < best->due_ns)
                        best = e;
        return best;
}

static void wait_until(Poller *p, uint64_t due_ns) {
        struct timespec ts = {
                .tv_sec = (time_t) (due_ns / NSEC_PER_SEC),
                .tv_nsec = (long) (due_ns % NSEC_PER_SEC),
        };

        (void) pthread_cond_timedwait(&p->changed, &p->lock, &ts);
}

/* Counts @e's polls that outlast its period; tells its source once when they repeat. */
static void note_time(PollerEntry *e, PollerSlowFunc slow, uint64_t took_ns) {
        e->overruns = took_ns > e->period_ns ? e->overruns + 1 : 0;
        if (e->overruns < POLLER_SLOW_RUNS || e->slow_told || !slow)
                return;
        e->slow_told = true;
        slow(took_ns, e->period_ns, e->userdata);
}

/* Runs @e with the lock dropped; poller_remove() waits on @idle for it. */
static void run_entry(Poller *p, PollerEntry *e, uint64_t now) {
        PollerSlowFunc slow = e->slow;

        p->running = e;
        (void) pthread_mutex_unlock(&p->lock);
        e->func(now_ns(CLOCK_BOOTTIME), e->userdata);
        note_time(e, slow, now_ns(CLOCK_MONOTONIC) - now);
        (void) pthread_mutex_lock(&p->lock);
        p->running = NULL;
        (void) pthread_cond_broadcast(&p->idle);

        e->due_ns += e->period_ns;
        if (e->due_ns <= now)
                e->due_ns = now + e->period_ns;
}

/* Runs the first queued call with the lock dropped; poller_cancel() waits for it. */
static void run_call(Poller *p) {
        PollerCall *c = p->calls;

        p->calls = c->next;
        if (!p->calls)
                p->calls_tail = &p->calls;
        p->calling = c->owner;
        (void) pthread_mutex_unlock(&p->lock);
        c->func(now_ns(CLOCK_BOOTTIME), c->userdata);
        (void) pthread_mutex_lock(&p->lock);
        p->calling = NULL;
        (void) pthread_cond_broadcast(&p->idle);
        free(c);
}

static void *poller_main(void *userdata) {
        Poller *p = userdata;

        /* Named so that its CPU time can be told from the recorders' (bench/run --pollers). */
        (void) pthread_setname_np(pthread_self(), "tb-poller");
        (void) pthread_mutex_lock(&p->lock);
        while (!p->quit) {
                PollerEntry *e = earliest(p);
                uint64_t now = now_ns(CLOCK_MONOTONIC);

                if (p->calls)
                        run_call(p);
                else if (!e)
                        (void) pthread_cond_wait(&p->changed, &p->lock);
                else if (e->due_ns > now)
                        wait_until(p, e->due_ns);
                else
                        run_entry(p, e, now);
        }
        (void) pthread_mutex_unlock(&p->lock);
        return NULL;
}

int poller_new(Poller **ret) {
        pthread_condattr_t attr;
        Poller *p;
        int r;

        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        (void) pthread_mutex_init(&p->lock, NULL);
        (void) pthread_condattr_init(&attr);
        (void) pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        (void) pthread_cond_init(&p->changed, &attr);
        (void) pthread_condattr_destroy(&attr);
        (void) pthread_cond_init(&p->idle, NULL);
        p->calls_tail = &p->calls;

        r = pthread_create(&p->thread, NULL, poller_main, p);
        if (r != 0) {
                (void) pthread_cond_destroy(&p->changed);
                (void) pthread_cond_destroy(&p->idle);
                (void) pthread_mutex_destroy(&p->lock);
                free(p);
                return -r;
        }
        *ret = p;
        return 0;
}

Poller *poller_free(Poller *p) {
        if (!p)
                return NULL;
        (void) pthread_mutex_lock(&p->lock);
        p->quit = true;
        (void) pthread_cond_broadcast(&p->changed);
        (void) pthread_mutex_unlock(&p->lock);
        (void) pthread_join(p->thread, NULL);

        /* Entries left behind are a caller's bug; free them rather than leak. */
        while (p->entries) {
                PollerEntry *e = p->entries;
                p->entries = e->next;
                free(e);
        }
        while (p->calls) {
                PollerCall *c = p->calls;
                p->calls = c->next;
                free(c);
        }
        (void) pthread_cond_destroy(&p->changed);
        (void) pthread_cond_destroy(&p->idle);
        (void) pthread_mutex_destroy(&p->lock);
        return mfree(p);
}

int poller_add(Poller *p, uint32_t period_ms, PollerFunc func, void *userdata, PollerEntry **ret) {
        PollerEntry *e;

        e = calloc(1, sizeof(*e));
        if (!e)
                return -ENOMEM;
        e->period_ns = (uint64_t) MAX(period_ms, POLLER_MIN_PERIOD_MS) * NSEC_PER_MSEC;
        e->due_ns = now_ns(CLOCK_MONOTONIC);
        e->func = func;
        e->userdata = userdata;

        (void) pthread_mutex_lock(&p->lock);
        e->next = p->entries;
        p->entries = e;
        (void) pthread_cond_broadcast(&p->changed);
        (void) pthread_mutex_unlock(&p->lock);
        if (ret)
                *ret = e;
        return 0;
}

void poller_remove(Poller *p, PollerEntry *e) {
        if (!e)
                return;
        (void) pthread_mutex_lock(&p->lock);
        for (PollerEntry **i = &p->entries; *i; i = &(*i)->next)
                if (*i == e) {
                        *i = e->next;
                        break;
                }
        while (p->running == e)
                (void) pthread_cond_wait(&p->idle, &p->lock);
        (void) pthread_cond_broadcast(&p->changed);
        (void) pthread_mutex_unlock(&p->lock);
        free(e);
}

void poller_on_slow(Poller *p, PollerEntry *e, PollerSlowFunc func) {
        (void) pthread_mutex_lock(&p->lock);
        e->slow = func;
        (void) pthread_mutex_unlock(&p->lock);
}

int poller_call(Poller *p, PollerFunc func, void *userdata, const void *owner) {
        PollerCall *c;

        assert(owner);
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        *c = (PollerCall) { .func = func, .userdata = userdata, .owner = owner };
        (void) pthread_mutex_lock(&p->lock);
        *p->calls_tail = c;
        p->calls_tail = &c->next;
        (void) pthread_cond_broadcast(&p->changed);
        (void) pthread_mutex_unlock(&p->lock);
        return 0;
}

void poller_cancel(Poller *p, const void *owner) {
        (void) pthread_mutex_lock(&p->lock);
        for (PollerCall **i = &p->calls; *i;) {
                PollerCall *c = *i;

                if (c->owner != owner) {
                        i = &c->next;
                        continue;
                }
                *i = c->next;
                free(c);
        }
        p->calls_tail = &p->calls;
        while (*p->calls_tail)
                p->calls_tail = &(*p->calls_tail)->next;
        while (p->calling == owner)
                (void) pthread_cond_wait(&p->idle, &p->lock);
        (void) pthread_mutex_unlock(&p->lock);
}
