/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A CPU-bound program with a known call chain, for the linux.perf tests and bench:
 * main -> tb_fa -> tb_fb -> tb_fc -> tb_spin, where tb_spin burns the CPU for the
 * seconds given (default 10). Built twice (tests/meson.build): perf-target-fp with
 * frame pointers and perf-target-nofp without, so a profile of each shows what
 * frame-pointer callchains and DWARF unwinding recover.
 *
 *   perf-target [SECONDS [nodump]]
 *
 * With "nodump" it makes itself non-dumpable (PR_SET_DUMPABLE 0) first: its owner may no
 * longer ptrace it, nor read its /proc/PID/maps.
 * It prints "ready PID" on stdout once it spins, so a test knows when to sample.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

/* Each step is its own frame: noinline, and the empty asm after the call keeps the
 * compiler from turning it into a tail call that would drop the caller's frame. */
#define KEEP_FRAME() __asm__ __volatile__("" ::: "memory")

static double now_seconds(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

__attribute__((noinline)) unsigned long tb_spin(double seconds);
__attribute__((noinline)) unsigned long tb_fc(double seconds);
__attribute__((noinline)) unsigned long tb_fb(double seconds);
__attribute__((noinline)) unsigned long tb_fa(double seconds);

/* Spins in user code: the clock is read every 64k iterations only, so almost every
 * sample lands in this function and not in the vDSO. */
__attribute__((noinline)) unsigned long tb_spin(double seconds) {
        double end = now_seconds() + seconds;
        volatile unsigned long x = 0;

        do {
                for (unsigned i = 0; i < 65536; i++)
                        x = x * 2862933555777941757ul + 3037000493ul;
        } while (now_seconds() < end);
        return x;
}

__attribute__((noinline)) unsigned long tb_fc(double seconds) {
        unsigned long r = tb_spin(seconds);

        KEEP_FRAME();
        return r + 3;
}

__attribute__((noinline)) unsigned long tb_fb(double seconds) {
        unsigned long r = tb_fc(seconds);

        KEEP_FRAME();
        return r + 2;
}

__attribute__((noinline)) unsigned long tb_fa(double seconds) {
        unsigned long r = tb_fb(seconds);

        KEEP_FRAME();
        return r + 1;
}

int main(int argc, char **argv) {
        double seconds = argc > 1 ? strtod(argv[1], NULL) : 10.0;
        unsigned long r;

        if (seconds <= 0 || seconds > 3600) {
                fprintf(stderr, "usage: %s [SECONDS (0-3600]]\n", argv[0]);
                return 2;
        }
        if (argc > 2 && strcmp(argv[2], "nodump") == 0 && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
                return 1;
        printf("ready %d\n", (int) getpid());
        fflush(stdout);
        r = tb_fa(seconds);
        return r == 42 ? 1 : 0;
}
