/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * chunk-copy: the floor of what a tracing service pays for an app's events, the bytes of a
 * trace taken out of shared memory chunk by chunk and written into a file, and nothing
 * else (no IPC, no reassembly, no checks, no stamping).
 *
 *   chunk-copy TRACE OUT [CHUNK_BYTES]
 *
 * TRACE's bytes are put in a shared memory mapping first (not measured); then, measured by
 * this process's CPU clock, they are copied out CHUNK_BYTES (4096 unless given) at a time
 * into a 1 MiB buffer that is written into OUT each time it fills, and OUT is closed.
 * Prints "bytes N cpu_ns C".
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define OUT_BUFFER_SIZE (1024u * 1024u)

static uint64_t cpu_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

static int write_all(int fd, const uint8_t *p, size_t n) {
        while (n > 0) {
                ssize_t w = write(fd, p, n);
                if (w < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                p += w;
                n -= (size_t) w;
        }
        return 0;
}

/* The trace's bytes in a shared mapping, as a producer's buffer would hold them. */
static uint8_t *map_shared_copy(const char *path, size_t *ret_size) {
        int in = open(path, O_RDONLY | O_CLOEXEC), shm = memfd_create("chunk-copy", MFD_CLOEXEC);
        struct stat st;
        uint8_t *p;

        if (in < 0 || shm < 0 || fstat(in, &st) < 0 || st.st_size == 0 || ftruncate(shm, st.st_size) < 0)
                return NULL;
        p = mmap(NULL, (size_t) st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, shm, 0);
        if (p == MAP_FAILED || read(in, p, (size_t) st.st_size) != st.st_size)
                return NULL;
        close(in);
        close(shm);
        *ret_size = (size_t) st.st_size;
        return p;
}

int main(int argc, char **argv) {
        size_t chunk = argc > 3 ? strtoul(argv[3], NULL, 10) : 4096, size = 0, fill = 0;
        static uint8_t out_buffer[OUT_BUFFER_SIZE];
        uint8_t *shared;
        uint64_t t0;
        int out, r = 0;

        if (argc < 3 || chunk == 0 || chunk > OUT_BUFFER_SIZE) {
                fprintf(stderr, "usage: chunk-copy TRACE OUT [CHUNK_BYTES]\n");
                return 2;
        }
        shared = map_shared_copy(argv[1], &size);
        if (!shared) {
                fprintf(stderr, "chunk-copy: cannot map %s: %m\n", argv[1]);
                return 1;
        }
        t0 = cpu_ns();
        out = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        for (size_t off = 0; out >= 0 && r == 0 && off < size; off += chunk) {
                size_t n = size - off < chunk ? size - off : chunk;
                if (fill + n > OUT_BUFFER_SIZE) {
                        r = write_all(out, out_buffer, fill);
                        fill = 0;
                }
                memcpy(out_buffer + fill, shared + off, n);
                fill += n;
        }
        if (out < 0 || r < 0 || write_all(out, out_buffer, fill) < 0 || close(out) < 0) {
                fprintf(stderr, "chunk-copy: cannot write %s: %m\n", argv[2]);
                return 1;
        }
        printf("bytes %zu cpu_ns %llu\n", size, (unsigned long long) (cpu_ns() - t0));
        return 0;
}
