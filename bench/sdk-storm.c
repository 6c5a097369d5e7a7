/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * sdk-storm: an app built with Perfetto's C SDK (system backend) that writes track_event
 * slices as fast as it can while a session has its category "bench" enabled, so that
 * bench/run can compare what a tracing service pays per event of an instrumented app.
 *
 *   sdk-storm [SHMEM_KB [WAIT_SECONDS]]
 *
 * It connects to the producer socket ($PERFETTO_PRODUCER_SOCK_NAME or the system one)
 * with a shared memory buffer of SHMEM_KB (1024 unless given), prints "ready", waits up to
 * WAIT_SECONDS (60) for a session to enable "bench", writes begin/end pairs named "tick"
 * until the session disables it, then prints one line:
 *
 *   slices N seconds S app_cpu_seconds C
 *
 * and stays one second more so that the service reads what the stop flushed.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "perfetto/public/producer.h"
#include "perfetto/public/te_category_macros.h"
#include "perfetto/public/te_macros.h"
#include "perfetto/public/track_event.h"

#define STORM_CATEGORIES(C) C(bench_category, "bench", "tracebus's producer benchmark")

PERFETTO_TE_CATEGORIES_DEFINE(STORM_CATEGORIES)

static bool category_enabled(void) {
        return PERFETTO_ATOMIC_LOAD_EXPLICIT(bench_category.enabled, PERFETTO_MEMORY_ORDER_RELAXED);
}

static double clock_seconds(clockid_t id) {
        struct timespec ts;

        clock_gettime(id, &ts);
        return ts.tv_sec + ts.tv_nsec / 1e9;
}

static bool wait_enabled(unsigned seconds) {
        for (unsigned i = 0; i < seconds * 1000u; i++) {
                if (category_enabled())
                        return true;
                usleep(1000);
        }
        return false;
}

int main(int argc, char **argv) {
        struct PerfettoProducerInitArgs args = PERFETTO_PRODUCER_INIT_ARGS_INIT();
        unsigned shmem_kb = argc > 1 ? (unsigned) strtoul(argv[1], NULL, 10) : 1024;
        unsigned wait_seconds = argc > 2 ? (unsigned) strtoul(argv[2], NULL, 10) : 60;
        uint64_t slices = 0;
        double t0, cpu0;

        args.backends = PERFETTO_BACKEND_SYSTEM;
        args.shmem_size_hint_kb = shmem_kb;
        PerfettoProducerInit(args);
        PerfettoTeInit();
        PERFETTO_TE_REGISTER_CATEGORIES(STORM_CATEGORIES);
        printf("ready\n");
        fflush(stdout);

        if (!wait_enabled(wait_seconds)) {
                fprintf(stderr, "sdk-storm: no session enabled \"bench\" in %u s\n", wait_seconds);
                return 1;
        }
        t0 = clock_seconds(CLOCK_MONOTONIC);
        cpu0 = clock_seconds(CLOCK_PROCESS_CPUTIME_ID);
        while (category_enabled()) {
                PERFETTO_TE(bench_category, PERFETTO_TE_SLICE_BEGIN("tick"));
                PERFETTO_TE(bench_category, PERFETTO_TE_SLICE_END());
                slices++;
        }
        printf("slices %llu seconds %.3f app_cpu_seconds %.3f\n", (unsigned long long) slices,
               clock_seconds(CLOCK_MONOTONIC) - t0, clock_seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu0);
        fflush(stdout);
        sleep(1);
        return 0;
}
