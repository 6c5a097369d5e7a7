/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * stop-write --dir DIR [--mb 64] [--delay-ms 2500] [--rounds 3] [--pieces 1024,2044,2048,4096]
 *            [--fresh] [--staged]
 *
 * What Stop of a full ring costs, and why: writes --mb MB, held as the
 * service's ring holds them (chunks of 80 KB), into a file of DIR truncated first, with
 * writev() of at most one --pieces KiB per call, no fsync, as the service writes Stop's
 * file; each size once per round, --delay-ms after the last write. --fresh: the chunks are
 * new memory for each write, filled here, as a ring's are (not reused from the last
 * write, from which the kernel has read already); --staged: copied into one 1 MiB buffer
 * first, written a buffer at a time, as lib/trace/trace-writer.c writes a ring's chunks.
 * Prints one line per write: the size per call in KiB and the wall time in ms.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define CHUNK ((size_t) 80 << 10)
#define MAX_PIECES 16

static double now_ms(void) {
        struct timespec t;

        clock_gettime(CLOCK_MONOTONIC, &t);
        return (double) t.tv_sec * 1e3 + (double) t.tv_nsec / 1e6;
}

static const char *arg(int argc, char **argv, const char *name, const char *def) {
        for (int i = 1; i + 1 < argc; i++)
                if (strcmp(argv[i], name) == 0)
                        return argv[i + 1];
        return def;
}

/* One writev() of the chunks from *next on, at most @max bytes (at least one chunk). */
static int write_call(int fd, char *chunks, size_t n, size_t *next, size_t max) {
        struct iovec iov[256];
        size_t bytes = 0;
        int k = 0;

        while (*next + k < n && k < 256 && (k == 0 || bytes + CHUNK <= max)) {
                iov[k] = (struct iovec) { chunks + (*next + k) * CHUNK, CHUNK };
                bytes += CHUNK;
                k++;
        }
        *next += (size_t) k;
        return writev(fd, iov, k) == (ssize_t) bytes ? 0 : -1;
}

/* The chunks through one stage of at most @max bytes (and 1 MiB), one write() each. */
static int write_staged(int fd, char *chunks, size_t n, size_t max) {
        static char stage[1 << 20];
        size_t len = 0;

        max = max < sizeof(stage) ? max : sizeof(stage);
        for (size_t i = 0; i <= n; i++) {
                if (len > 0 && (i == n || len + CHUNK > max)) {
                        if (write(fd, stage, len) != (ssize_t) len)
                                return -1;
                        len = 0;
                }
                if (i < n) {
                        memcpy(stage + len, chunks + i * CHUNK, CHUNK);
                        len += CHUNK;
                }
        }
        return 0;
}

static double write_file(const char *path, char *chunks, size_t n, size_t max, int staged) {
        double t = now_ms();
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        size_t next = 0;
        int r = 0;

        if (fd < 0) {
                perror(path);
                exit(1);
        }
        if (staged)
                r = write_staged(fd, chunks, n, max);
        while (!staged && r == 0 && next < n)
                r = write_call(fd, chunks, n, &next, max);
        if (r < 0) {
                perror("write");
                exit(1);
        }
        close(fd);
        return now_ms() - t;
}

/* The chunks, in new memory filled here. */
static char *new_chunks(size_t n) {
        char *p = mmap(NULL, n * CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

        if (p == MAP_FAILED) {
                perror("mmap");
                exit(1);
        }
        for (size_t i = 0; i < n; i++)
                memset(p + i * CHUNK, (int) i, CHUNK);
        return p;
}

static bool has(int argc, char **argv, const char *name) {
        for (int i = 1; i < argc; i++)
                if (strcmp(argv[i], name) == 0)
                        return true;
        return false;
}

int main(int argc, char **argv) {
        const char *dir = arg(argc, argv, "--dir", NULL);
        size_t n = (size_t) atol(arg(argc, argv, "--mb", "64")) * (1 << 20) / CHUNK, pieces[MAX_PIECES], n_pieces = 0;
        int delay_ms = atoi(arg(argc, argv, "--delay-ms", "2500")), rounds = atoi(arg(argc, argv, "--rounds", "3"));
        bool fresh = has(argc, argv, "--fresh"), staged = has(argc, argv, "--staged");
        char path[4096], list[256], *chunks;

        if (!dir || n == 0) {
                fprintf(stderr, "usage: stop-write --dir DIR [--mb 64] [--delay-ms 2500] [--rounds 3] "
                        "[--pieces KIB,...] [--fresh] [--staged]\n");
                return 2;
        }
        snprintf(list, sizeof(list), "%s", arg(argc, argv, "--pieces", "1024,2044,2048,4096"));
        for (char *s = strtok(list, ","); s && n_pieces < MAX_PIECES; s = strtok(NULL, ","))
                pieces[n_pieces++] = (size_t) atol(s) << 10;
        snprintf(path, sizeof(path), "%s/stop-write.bin", dir);
        chunks = new_chunks(n);
        for (int r = 0; r < rounds; r++)
                for (size_t p = 0; p < n_pieces; p++) {
                        if (fresh) {
                                munmap(chunks, n * CHUNK);
                                chunks = new_chunks(n);
                        }
                        usleep((useconds_t) delay_ms * 1000);
                        printf("%zu %.1f\n", pieces[p] >> 10, write_file(path, chunks, n, pieces[p], staged));
                        fflush(stdout);
                }
        unlink(path);
        return 0;
}
