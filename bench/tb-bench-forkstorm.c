/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tb-bench forkstorm --count N [--width W] [--life-us U] [--pad BYTES]
 *
 * A storm of N short-lived processes, W alive at a time, each sleeping U µs and exiting
 * (bench/run --forkstorm records it and follows the service's RSS). With --life-us 0 each
 * is a vfork() that exits at once, one at a time: some 20,000 a second on a small VM, where
 * fork() manages 1,000; such a process is gone before the service looks at /proc, and is
 * described from the kernel's saved tables. With --pad, the
 * driver first execs itself with one more argument of BYTES bytes, which every child
 * then shares as its command line: what a hostile user makes each description weigh.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tb-bench.h"

#define PADDED "--padded"

/* Execs this program again with its arguments, PADDED and @bytes of padding. */
static void exec_padded(int argc, char **argv, size_t bytes) {
        char **args = calloc((size_t) argc + 3, sizeof(char *));
        char *pad = malloc(bytes + 1);

        if (!args || !pad)
                die("forkstorm", -ENOMEM);
        memset(pad, 'p', bytes);
        pad[bytes] = 0;
        memcpy(args, argv, (size_t) argc * sizeof(char *));
        args[argc] = (char *) PADDED;
        args[argc + 1] = pad;
        execv("/proc/self/exe", args);
        die("exec /proc/self/exe", errno);
}

static bool has_arg(int argc, char **argv, const char *name) {
        for (int i = 2; i < argc; i++)
                if (strcmp(argv[i], name) == 0)
                        return true;
        return false;
}

int cmd_forkstorm(int argc, char **argv) {
        uint64_t count = strtoull(arg(argc, argv, "--count", "100000"), NULL, 10);
        unsigned width = (unsigned) strtoul(arg(argc, argv, "--width", "256"), NULL, 10), alive = 0;
        useconds_t life_us = (useconds_t) strtoul(arg(argc, argv, "--life-us", "50000"), NULL, 10);
        size_t pad = strtoull(arg(argc, argv, "--pad", "0"), NULL, 10);
        uint64_t t0, forked = 0, failed = 0;

        if (pad > 0 && !has_arg(argc, argv, PADDED))
                exec_padded(argc, argv, pad);
        t0 = now_ns(CLOCK_MONOTONIC);
        for (uint64_t i = 0; i < count && life_us == 0; i++) {
                pid_t pid = vfork();

                if (pid == 0)
                        _exit(0);
                if (pid < 0 || waitpid(pid, NULL, 0) < 0)
                        failed++;
                else
                        forked++;
        }
        for (uint64_t i = 0; i < count && life_us > 0; i++) {
                pid_t pid;

                if (alive >= width && wait(NULL) > 0)
                        alive--;
                pid = fork();
                if (pid == 0) {
                        usleep(life_us);
                        _exit(0);
                }
                if (pid < 0) {
                        failed++;
                        continue;
                }
                alive++;
                forked++;
        }
        while (wait(NULL) > 0)
                ;
        printf("{\"processes\": %" PRIu64 ", \"fork_failures\": %" PRIu64 ", \"seconds\": %.3f}\n", forked, failed,
               (double) (now_ns(CLOCK_MONOTONIC) - t0) / 1e9);
        return 0;
}
