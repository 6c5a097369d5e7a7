/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>
#include <time.h>

#define NSEC_PER_SEC 1000000000ull
#define NSEC_PER_MSEC 1000000ull

/* @clock's time now. clock_gettime() cannot fail for the clocks we use
 * (CLOCK_MONOTONIC, CLOCK_BOOTTIME, CLOCK_REALTIME). */
static inline uint64_t now_ns(clockid_t clock) {
        struct timespec ts;

        (void) clock_gettime(clock, &ts);
        return (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}

static inline uint64_t now_usec(clockid_t clock) {
        return now_ns(clock) / 1000ull;
}
