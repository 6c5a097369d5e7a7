/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit suite: the pollers' thread (service/sources/poller.c): periods kept relative to each other,
 * an entry removed while it runs never runs again once poller_remove() returns, slow
 * polls reported and not starving the others, one-off calls (the final reads at Stop). */
#include <stdatomic.h>
#include <unistd.h>

/* Before glib.h, which redefines MIN and MAX over macro.h's. */
#include "poller.h"
#include "session-config.h"

#include <glib.h>

typedef struct Counter {
        _Atomic unsigned calls;
        _Atomic bool inside;
        unsigned sleep_ms;
} Counter;

static void count(uint64_t now_ns, void *userdata) {
        Counter *c = userdata;

        g_assert_cmpuint(now_ns, >, 0);
        c->inside = true;
        if (c->sleep_ms)
                g_usleep(c->sleep_ms * 1000);
        c->calls++;
        c->inside = false;
}

/* A 10 ms entry runs about three times as often as a 30 ms one: a ratio, not a time. */
static void test_periods(void) {
        Poller *p = NULL;
        PollerEntry *fast, *slow;
        Counter a = {}, b = {};

        g_assert_cmpint(poller_new(&p), ==, 0);
        g_assert_cmpint(poller_add(p, 10, count, &a, &fast), ==, 0);
        g_assert_cmpint(poller_add(p, 30, count, &b, &slow), ==, 0);
        while (b.calls < 8)
                g_usleep(5000);
        poller_remove(p, fast);
        poller_remove(p, slow);
        g_assert_cmpfloat((double) a.calls / b.calls, >, 2.0);
        g_assert_cmpfloat((double) a.calls / b.calls, <, 4.5);
        poller_free(p);
}

/* Periods under the minimum are raised to it: a 0 ms entry is no busy loop. */
static void test_minimum_period(void) {
        Poller *p = NULL;
        PollerEntry *zero, *ten;
        Counter a = {}, b = {};

        g_assert_cmpint(poller_new(&p), ==, 0);
        g_assert_cmpint(poller_add(p, 0, count, &a, &zero), ==, 0);
        g_assert_cmpint(poller_add(p, POLLER_MIN_PERIOD_MS, count, &b, &ten), ==, 0);
        while (b.calls < 10)
                g_usleep(5000);
        poller_remove(p, zero);
        poller_remove(p, ten);
        g_assert_cmpuint(a.calls, <=, b.calls + 2);
        poller_free(p);
}

/* Removal waits for a running poll: the caller may free what the poll uses. */
static void test_remove_while_running(void) {
        Poller *p = NULL;
        PollerEntry *e;
        Counter c = { .sleep_ms = 50 };
        unsigned calls;

        g_assert_cmpint(poller_new(&p), ==, 0);
        g_assert_cmpint(poller_add(p, 10, count, &c, &e), ==, 0);
        while (!c.inside)
                g_usleep(1000);
        poller_remove(p, e);
        g_assert_false(c.inside);
        calls = c.calls;
        g_usleep(100 * 1000);
        g_assert_cmpuint(c.calls, ==, calls);
        poller_free(p);
}

typedef struct Slow {
        Counter c;
        _Atomic unsigned told;
        _Atomic uint64_t took_ns, period_ns;
} Slow;

static void slow_told(uint64_t took_ns, uint64_t period_ns, void *userdata) {
        Slow *s = userdata;

        s->took_ns = took_ns;
        s->period_ns = period_ns;
        s->told++;
}

/* A poll slower than its period is reported once, after POLLER_SLOW_RUNS in a row, with
 * its time; a quick entry beside it is not reported and still runs between the slow
 * polls (at least as often as the slow one: the earliest due runs first). */
static void test_slow_poll(void) {
        Poller *p = NULL;
        PollerEntry *slow, *quick;
        Slow a = { .c.sleep_ms = 30 }, b = {};

        g_assert_cmpint(poller_new(&p), ==, 0);
        g_assert_cmpint(poller_add(p, 10, count, &a, &slow), ==, 0);
        g_assert_cmpint(poller_add(p, 10, count, &b, &quick), ==, 0);
        poller_on_slow(p, slow, slow_told);
        poller_on_slow(p, quick, slow_told);
        while (a.c.calls < 2 * POLLER_SLOW_RUNS + 2)
                g_usleep(5000);
        poller_remove(p, slow);
        poller_remove(p, quick);
        g_assert_cmpuint(a.told, ==, 1);
        g_assert_cmpuint(a.took_ns, >, a.period_ns);
        g_assert_cmpuint(a.period_ns, ==, 10 * 1000 * 1000);
        g_assert_cmpuint(b.told, ==, 0);
        g_assert_cmpuint(b.c.calls, >=, a.c.calls - 1);
        poller_free(p);
}

typedef struct Calls {
        _Atomic unsigned n;
        int order[8];
} Calls;

static Calls calls;

static void record_call(uint64_t now_ns, void *userdata) {
        unsigned i = calls.n++;

        g_assert_cmpuint(now_ns, >, 0);
        if (i < G_N_ELEMENTS(calls.order))
                calls.order[i] = GPOINTER_TO_INT(userdata);
}

/* poller_call(): once each, in the order queued, while a slow entry keeps the thread
 * busy; poller_cancel() drops an owner's queued calls and only those. */
static void test_calls(void) {
        static const int owner_a, owner_b;
        Poller *p = NULL;
        PollerEntry *e;
        Counter busy = { .sleep_ms = 40 };

        g_assert_cmpint(poller_new(&p), ==, 0);
        g_assert_cmpint(poller_add(p, 10, count, &busy, &e), ==, 0);
        while (!busy.inside)
                g_usleep(1000);
        for (int i = 1; i <= 3; i++) {
                g_assert_cmpint(poller_call(p, record_call, GINT_TO_POINTER(i), &owner_a), ==, 0);
                g_assert_cmpint(poller_call(p, record_call, GINT_TO_POINTER(-i), &owner_b), ==, 0);
        }
        poller_cancel(p, &owner_b);
        while (calls.n < 3)
                g_usleep(1000);
        g_usleep(100 * 1000);
        poller_remove(p, e);
        g_assert_cmpuint(calls.n, ==, 3);
        g_assert_cmpint(calls.order[0], ==, 1);
        g_assert_cmpint(calls.order[1], ==, 2);
        g_assert_cmpint(calls.order[2], ==, 3);
        poller_cancel(p, &owner_a);   /* nothing queued: a no-op */
        poller_free(p);
}

/* Warnings are kept to SESSION_MAX_WARNINGS, the last counting what was left out. */
static void test_config_warnings_capped(void) {
        SessionConfig c = {};

        for (unsigned i = 0; i < 1000; i++)
                g_assert_cmpint(session_config_warn(&c, "event %u is missing", i), ==, 0);
        g_assert_cmpuint(g_strv_length(c.warnings), ==, SESSION_MAX_WARNINGS);
        g_assert_cmpstr(c.warnings[0], ==, "event 0 is missing");
        g_assert_cmpstr(c.warnings[SESSION_MAX_WARNINGS - 1], ==, "937 more warnings left out");
        session_config_done(&c);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/poller/periods", test_periods);
        g_test_add_func("/poller/minimum-period", test_minimum_period);
        g_test_add_func("/poller/remove-while-running", test_remove_while_running);
        g_test_add_func("/poller/slow-poll", test_slow_poll);
        g_test_add_func("/poller/calls", test_calls);
        g_test_add_func("/session-config/warnings-capped", test_config_warnings_capped);
        return g_test_run();
}
