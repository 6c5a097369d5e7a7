/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The recorder's decode path alone, on pages a real storm left in the kernel's buffer
 * (tb-bench floor --dump FILE): parse every page into per-CPU-like bundles, pack a
 * bundle every 200 pages (about one drain period at the storm's rate; --bundle-pages N
 * for another count), and report the CPU time per event. --deflate also compresses each
 * bundle as the service does for compression_type DEFLATE.
 * Usage: parse-bench PAGES [--full] [--deflate] [--bundle-pages N] [--loops N]
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ftrace-parser.h"

static char *slurp(const char *path, size_t *len) {
        FILE *f = fopen(path, "re");
        char *t = NULL;
        size_t n = 0;
        ssize_t r;

        if (!f)
                return NULL;
        r = getdelim(&t, &n, 0, f);
        fclose(f);
        *len = r > 0 ? (size_t) r : 0;
        return t;
}

static uint64_t cpu_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

int main(int argc, char **argv) {
        bool full = false, deflate = false;
        int loops = 5, bundle_pages = 200;
        uint8_t *z = NULL;
        size_t z_allocated = 0, z_bytes = 0;
        const char *events[] = { "sched/sched_switch", "sched/sched_waking" };
        long page_size = sysconf(_SC_PAGESIZE);
        FtraceParser *p;
        FtraceBundle *b;
        struct stat st;
        size_t len, n_pages, out_bytes = 0;
        uint64_t events_n = 0, t0, t1;
        const uint8_t *pages;
        char *text;
        int fd;

        if (argc < 2)
                return 2;
        for (int i = 2; i < argc; i++) {
                if (strcmp(argv[i], "--full") == 0)
                        full = true;
                else if (strcmp(argv[i], "--deflate") == 0)
                        deflate = true;
                else if (strcmp(argv[i], "--bundle-pages") == 0 && i + 1 < argc)
                        bundle_pages = atoi(argv[++i]);
                else if (strcmp(argv[i], "--loops") == 0 && i + 1 < argc)
                        loops = atoi(argv[++i]);
                else
                        return 2;
        }
        if (loops < 1 || bundle_pages < 1)
                return 2;
        if (ftrace_parser_new(&p) < 0 || ftrace_bundle_new(0, !full, &b) < 0)
                return 1;
        text = slurp("/sys/kernel/tracing/events/header_page", &len);
        if (!text || ftrace_parser_load_header_page(p, text, len) < 0)
                return 1;
        free(text);
        for (size_t i = 0; i < 2; i++) {
                char path[256], group[16];

                snprintf(path, sizeof(path), "/sys/kernel/tracing/events/%s/format", events[i]);
                snprintf(group, sizeof(group), "sched");
                text = slurp(path, &len);
                if (!text || ftrace_parser_add_event(p, group, text, len) < 0)
                        return 1;
                free(text);
        }
        fd = open(argv[1], O_RDONLY);
        if (fd < 0 || fstat(fd, &st) < 0)
                return 1;
        pages = mmap(NULL, (size_t) st.st_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
        n_pages = (size_t) st.st_size / (size_t) page_size;

        t0 = cpu_ns();
        for (int l = 0; l < loops; l++)
                for (size_t i = 0; i < n_pages; i++) {
                        int r = ftrace_parser_parse_page(p, pages + i * (size_t) page_size, (size_t) page_size, b);
                        if (r > 0)
                                events_n += (uint64_t) r;
                        if (i % (size_t) bundle_pages == (size_t) bundle_pages - 1 || i == n_pages - 1) {
                                const int32_t *pids;
                                const uint8_t *buf;

                                (void) ftrace_bundle_take_pids(b, &pids);
                                /* Through ftrace_bundle_pack_into(), as in the service. */
                                if (ftrace_bundle_pack(b, &buf, &len) < 0)
                                        return 1;
                                out_bytes += len;
                                if (deflate) {
                                        const DeflateSpan *spans;
                                        size_t n = ftrace_bundle_coded_spans(b, &spans);
                                        size_t bound = deflate_bound(len, 2 * n + 1);
                                        DeflateStream s;

                                        if (bound > z_allocated) {
                                                free(z);
                                                z = malloc(bound);
                                                if (!z)
                                                        return 1;
                                                z_allocated = bound;
                                        }
                                        deflate_begin(&s, z);
                                        deflate_spans(&s, buf, len, spans, n);
                                        z_bytes += deflate_end(&s);
                                }
                        }
                }
        t1 = cpu_ns();
        printf("{\"pages\": %zu, \"events\": %llu, \"ns_per_event\": %.2f, \"bytes_per_event\": %.2f",
               n_pages * (size_t) loops, (unsigned long long) events_n, (double) (t1 - t0) / (double) events_n,
               (double) out_bytes / (double) events_n);
        if (deflate)
                printf(", \"deflated_bytes_per_event\": %.2f", (double) z_bytes / (double) events_n);
        printf("}\n");
        free(z);
        return 0;
}
