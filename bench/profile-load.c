/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * profile-load --threads N --work M
 *
 * The sampled workload of `bench/run --profile`: N
 * threads, each doing M fixed units of work through a known call chain
 * (main -> tb_load_a -> tb_load_b -> tb_load_c -> tb_load_spin), built with frame
 * pointers so that both frame-pointer and DWARF unwinding can follow it. Prints, as one
 * JSON line, the wall time from the first thread's start to the last one's end and the
 * process's CPU time: a profiler's overhead is how much longer the same work takes.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t work_units = 2000;

static uint64_t now_ns(clockid_t clock) {
        struct timespec ts;

        clock_gettime(clock, &ts);
        return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

/* noinline and a use of the result: every level stays a frame of its own. */
__attribute__((noinline)) static uint64_t tb_load_spin(uint64_t seed) {
        volatile uint64_t x = seed;

        for (int i = 0; i < 100000; i++)
                x = x * 6364136223846793005u + 1442695040888963407u;
        return x;
}

__attribute__((noinline)) static uint64_t tb_load_c(uint64_t seed) {
        return tb_load_spin(seed) ^ 1;
}

__attribute__((noinline)) static uint64_t tb_load_b(uint64_t seed) {
        return tb_load_c(seed + 1) ^ 2;
}

__attribute__((noinline)) static uint64_t tb_load_a(uint64_t seed) {
        return tb_load_b(seed + 2) ^ 4;
}

static void *thread_main(void *arg) {
        uint64_t acc = (uintptr_t) arg;

        for (uint64_t i = 0; i < work_units; i++)
                acc += tb_load_a(acc + i);
        return (void *) (uintptr_t) acc;
}

int main(int argc, char *argv[]) {
        unsigned n = 2;
        pthread_t *threads;
        uint64_t t0, c0, sum = 0;

        for (int i = 1; i + 1 < argc; i += 2) {
                if (strcmp(argv[i], "--threads") == 0)
                        n = (unsigned) strtoul(argv[i + 1], NULL, 10);
                else if (strcmp(argv[i], "--work") == 0)
                        work_units = strtoull(argv[i + 1], NULL, 10);
        }
        if (n == 0 || n > 1024 || work_units == 0) {
                fprintf(stderr, "usage: profile-load --threads N --work M\n");
                return 1;
        }
        threads = calloc(n, sizeof(*threads));
        if (!threads)
                return 1;
        t0 = now_ns(CLOCK_MONOTONIC);
        c0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
        for (unsigned i = 0; i < n; i++)
                if (pthread_create(&threads[i], NULL, thread_main, (void *) (uintptr_t) i) != 0)
                        return 1;
        for (unsigned i = 0; i < n; i++) {
                void *r;

                pthread_join(threads[i], &r);
                sum += (uintptr_t) r;
        }
        printf("{\"threads\": %u, \"work\": %" PRIu64 ", \"wall_ns\": %" PRIu64 ", \"cpu_ns\": %" PRIu64
               ", \"pid\": %d, \"check\": %" PRIu64 "}\n",
               n, work_units, now_ns(CLOCK_MONOTONIC) - t0, now_ns(CLOCK_PROCESS_CPUTIME_ID) - c0,
               (int) getpid(), sum & 0xff);
        free(threads);
        return 0;
}
