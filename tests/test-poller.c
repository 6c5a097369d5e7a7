/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit suite: the pollers' thread (service/poller.c): periods kept relative to each other,
 * and an entry removed while it runs never runs again once poller_remove() returns. */
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
        g_test_add_func("/session-config/warnings-capped", test_config_warnings_capped);
        return g_test_run();
}
