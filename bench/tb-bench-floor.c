/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tb-bench floor: the reference measurement. Its own tracefs instance with sched_switch and
 * sched_waking, every page read from per_cpu trace_pipe_raw and dropped (or, with --mmap, the
 * ring buffer mapped and each page's cache lines touched once): the least any recorder must
 * spend on the same events. --read-pages N asks read() for N pages at a time and --splice
 * moves whole pages through a pipe (splice(), then one read() of the pipe): how each way of
 * taking the pages compares with the one-page read() the floor itself uses.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tb-bench.h"

#define FLOOR_MAX_CPUS 256
/* A pipe's default capacity: what one splice() can move, unless --splice-pages asks for a
 * larger pipe (F_SETPIPE_SZ). */
#define SPLICE_PAGES 16
#define SPLICE_PAGES_MAX 256

typedef struct CpuStats {
        uint64_t entries, overrun, commit_overrun, dropped, read_events;
} CpuStats;

/* The mapped ring buffer's meta page (include/uapi/linux/trace_mmap.h, Linux 6.10;
 * Debian 12's headers are older). */
typedef struct TraceBufferMeta {
        uint32_t meta_page_size, meta_struct_len, subbuf_size, nr_subbufs;
        struct {
                uint64_t lost_events;
                uint32_t id, read;
        } reader;
        uint64_t flags, entries, overrun, read, reserved1, reserved2;
} TraceBufferMeta;

#define TRACE_MMAP_IOCTL_GET_READER _IO('R', 0x20)

typedef struct MappedCpu {
        TraceBufferMeta *meta;        /* the start of the mapping */
        size_t size;
        const uint8_t *subbufs;
        uint32_t id, offset;          /* the reader sub-buffer, and how far it was taken */
} MappedCpu;

typedef struct Floor {
        char dir[256];                /* the instance */
        char tracing_on[512];         /* its tracing_on, written 0 when the run ends */
        long n_cpus, page_size;
        int period_ms;
        bool mapped;                  /* --mmap */
        bool splice;                  /* --splice */
        long read_pages;              /* --read-pages: the size asked of each read() */
        long splice_pages;            /* --splice-pages: the pipe's size, so each splice()'s */
        int dump_fd;                  /* --dump FILE, or -1 */
        uint8_t *page;                /* where read() puts each page (SPLICE_PAGES of them) */
        int fds[FLOOR_MAX_CPUS];      /* per_cpu/cpuN/trace_pipe_raw */
        int pipes[FLOOR_MAX_CPUS][2]; /* --splice */
        MappedCpu maps[FLOOR_MAX_CPUS];
} Floor;

typedef struct FloorCounts {
        uint64_t pages, bytes, sum;
} FloorCounts;

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig) {
        stop_requested = 1;
}

static uint64_t stat_field(const char *text, const char *name) {
        const char *p = strstr(text, name);

        return p ? strtoull(p + strlen(name), NULL, 10) : 0;
}

static void read_cpu_stats(const char *dir, int cpu, CpuStats *s) {
        char path[512], text[2048];
        int fd;
        ssize_t n;

        snprintf(path, sizeof(path), "%s/per_cpu/cpu%d/stats", dir, cpu);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        n = fd >= 0 ? read(fd, text, sizeof(text) - 1) : -1;
        if (fd >= 0)
                close(fd);
        text[n > 0 ? n : 0] = 0;
        s->entries = stat_field(text, "entries: ");
        s->overrun = stat_field(text, "\noverrun: ");
        s->commit_overrun = stat_field(text, "commit overrun: ");
        s->dropped = stat_field(text, "dropped events: ");
        s->read_events = stat_field(text, "read events: ");
}

static void map_cpu(int fd, long page_size, MappedCpu *m) {
        TraceBufferMeta *first = mmap(NULL, (size_t) page_size, PROT_READ, MAP_SHARED, fd, 0);
        size_t meta_size, total;
        uint8_t *all;

        if (first == MAP_FAILED)
                die("mmap trace_pipe_raw (Linux 6.10 or later)", errno);
        meta_size = first->meta_page_size;
        total = meta_size + (size_t) first->nr_subbufs * first->subbuf_size;
        munmap(first, (size_t) page_size);
        all = mmap(NULL, total, PROT_READ, MAP_SHARED, fd, 0);
        if (all == MAP_FAILED)
                die("mmap trace_pipe_raw", errno);
        *m = (MappedCpu) { .meta = (TraceBufferMeta *) all, .size = total, .subbufs = all + meta_size,
                           .id = UINT32_MAX };
}

/* What a reader of the mapped buffer cannot avoid: GET_READER until the reader
 * sub-buffer holds nothing new, and one touch of each cache line of what it holds.
 * The header is a u64 timestamp and the commit word (8 bytes here). */
static void drain_mapped(int fd, MappedCpu *m, uint64_t *pages, uint64_t *bytes, uint64_t *sum) {
        for (;;) {
                const uint8_t *sub;
                uint64_t commit;

                if (ioctl(fd, TRACE_MMAP_IOCTL_GET_READER) < 0)
                        die("TRACE_MMAP_IOCTL_GET_READER", errno);
                if (m->meta->reader.id != m->id) {
                        m->id = m->meta->reader.id;
                        m->offset = 0;
                }
                sub = m->subbufs + (size_t) m->id * m->meta->subbuf_size;
                commit = __atomic_load_n((const uint64_t *) (sub + 8), __ATOMIC_ACQUIRE) & ((1u << 27) - 1);
                if (commit <= m->offset)
                        return;
                for (uint64_t i = m->offset; i < commit; i += 64)
                        *sum += sub[16 + i];
                (*pages)++;
                *bytes += commit - m->offset;
                m->offset = (uint32_t) commit;
        }
}

/* One file of the instance. */
static void floor_write(const Floor *f, const char *file, const char *value) {
        char path[512];

        snprintf(path, sizeof(path), "%s/%s", f->dir, file);
        write_file(path, value);
}

static void floor_create_instance(Floor *f, int buffer_kb) {
        char value[32];

        snprintf(f->dir, sizeof(f->dir), TRACEFS "/instances/tbbench-floor-%d", (int) getpid());
        if (mkdir(f->dir, 0700) < 0)
                die("mkdir instance", errno);
        snprintf(value, sizeof(value), "%d", buffer_kb);
        floor_write(f, "buffer_size_kb", value);
        floor_write(f, "trace_clock", "boot");
        floor_write(f, "events/sched/sched_switch/enable", "1");
        floor_write(f, "events/sched/sched_waking/enable", "1");
        snprintf(f->tracing_on, sizeof(f->tracing_on), "%s/tracing_on", f->dir);
}

static void floor_open_cpus(Floor *f) {
        char path[512];

        for (long cpu = 0; cpu < f->n_cpus; cpu++) {
                snprintf(path, sizeof(path), "%s/per_cpu/cpu%ld/trace_pipe_raw", f->dir, cpu);
                f->fds[cpu] = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
                if (f->fds[cpu] < 0)
                        die("open trace_pipe_raw", errno);
                if (f->mapped)
                        map_cpu(f->fds[cpu], f->page_size, &f->maps[cpu]);
                if (f->splice && pipe2(f->pipes[cpu], O_NONBLOCK | O_CLOEXEC) < 0)
                        die("pipe2", errno);
                if (f->splice && f->splice_pages != SPLICE_PAGES &&
                    fcntl(f->pipes[cpu][1], F_SETPIPE_SZ, (int) (f->splice_pages * f->page_size)) < 0)
                        die("F_SETPIPE_SZ", errno);
        }
}

/* read() until nothing is left: one page per call, whatever the size asked (the kernel's
 * tracing_buffers_read() copies out at most the rest of one page). */
static void drain_read(Floor *f, int fd, size_t size, FloorCounts *c) {
        for (;;) {
                ssize_t n = read(fd, f->page, size);
                if (n <= 0)
                        break;
                c->pages += (uint64_t) n / (uint64_t) f->page_size + (n % f->page_size != 0);
                c->bytes += (uint64_t) n;
                if (f->dump_fd >= 0) {
                        size_t padded = ((size_t) n + (size_t) f->page_size - 1) / (size_t) f->page_size *
                                        (size_t) f->page_size;

                        memset(f->page + n, 0, padded - (size_t) n);
                        (void) !write(f->dump_fd, f->page, padded);
                }
        }
}

/* splice() hands over only pages the kernel has finished writing, up to a pipe's worth at
 * a time; the page it is still writing is then taken by read(). */
static void drain_splice(Floor *f, long cpu, FloorCounts *c) {
        const size_t size = (size_t) f->splice_pages * (size_t) f->page_size;

        for (;;) {
                ssize_t n = splice(f->fds[cpu], NULL, f->pipes[cpu][1], NULL, size, SPLICE_F_NONBLOCK);
                if (n <= 0)
                        break;
                n = read(f->pipes[cpu][0], f->page, (size_t) n);
                if (n <= 0)
                        die("read pipe", errno);
                c->pages += (uint64_t) n / (uint64_t) f->page_size;
                c->bytes += (uint64_t) n;
        }
        drain_read(f, f->fds[cpu], (size_t) f->page_size, c);
}

/* The measured loop: each period every CPU's pages are taken until none is left; after
 * the deadline or a signal, tracing stops and one last round takes the rest. */
static void floor_drain(Floor *f, uint64_t end, FloorCounts *ret) {
        FloorCounts c = {};

        for (bool last = false;;) {
                if (stop_requested || now_ns(CLOCK_MONOTONIC) >= end) {
                        write_file(f->tracing_on, "0");
                        last = true;
                }
                for (long cpu = 0; cpu < f->n_cpus; cpu++)
                        if (f->mapped)
                                drain_mapped(f->fds[cpu], &f->maps[cpu], &c.pages, &c.bytes, &c.sum);
                        else if (f->splice)
                                drain_splice(f, cpu, &c);
                        else
                                drain_read(f, f->fds[cpu], (size_t) (f->read_pages * f->page_size), &c);
                if (last)
                        break;
                poll(NULL, 0, f->period_ms);
        }
        *ret = c;
}

/* The kernel's own count of the events read and lost, then the instance goes. */
static void floor_destroy(Floor *f, uint64_t *ret_events, uint64_t *ret_lost) {
        uint64_t events = 0, lost = 0;
        CpuStats st;

        for (long cpu = 0; cpu < f->n_cpus; cpu++) {
                read_cpu_stats(f->dir, (int) cpu, &st);
                events += st.read_events;
                lost += st.overrun + st.dropped;
                /* A mapped buffer keeps the instance busy: rmdir would fail. */
                if (f->mapped)
                        munmap(f->maps[cpu].meta, f->maps[cpu].size);
                close(f->fds[cpu]);
                if (f->splice) {
                        close(f->pipes[cpu][0]);
                        close(f->pipes[cpu][1]);
                }
        }
        floor_write(f, "events/enable", "0");
        if (rmdir(f->dir) < 0)
                die("rmdir instance", errno);
        *ret_events = events;
        *ret_lost = lost;
}

int cmd_floor(int argc, char **argv) {
        int buffer_kb = atoi(arg(argc, argv, "--buffer-kb", "2048"));
        double seconds = atof(arg(argc, argv, "--seconds", "0"));
        const char *dump = arg(argc, argv, "--dump", NULL);
        Floor f = {
                .period_ms = atoi(arg(argc, argv, "--period-ms", "100")),
                .n_cpus = sysconf(_SC_NPROCESSORS_CONF),
                .page_size = sysconf(_SC_PAGESIZE),
                .read_pages = atol(arg(argc, argv, "--read-pages", "1")),
                .splice_pages = atol(arg(argc, argv, "--splice-pages", "16")),
                .dump_fd = -1,
        };
        uint64_t cpu0, cpu1, end, events, lost;
        FloorCounts c;

        if (f.n_cpus > FLOOR_MAX_CPUS)
                f.n_cpus = FLOOR_MAX_CPUS;
        if (f.read_pages < 1 || f.read_pages > SPLICE_PAGES)
                die("--read-pages: 1 to 16", EINVAL);
        if (f.splice_pages < 1 || f.splice_pages > SPLICE_PAGES_MAX)
                die("--splice-pages: 1 to 256", EINVAL);
        f.page = malloc(SPLICE_PAGES_MAX * (size_t) f.page_size);
        if (!f.page)
                die("malloc", ENOMEM);
        for (int i = 2; i < argc; i++)
                f.mapped = f.mapped || strcmp(argv[i], "--mmap") == 0;
        for (int i = 2; i < argc; i++)
                f.splice = f.splice || strcmp(argv[i], "--splice") == 0;
        /* --dump FILE keeps every page (padded to the page size), for bench/parse-bench. */
        if (dump && (f.dump_fd = open(dump, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0)
                die(dump, errno);
        floor_create_instance(&f, buffer_kb);
        floor_open_cpus(&f);
        signal(SIGINT, on_stop);
        signal(SIGTERM, on_stop);
        write_file(f.tracing_on, "1");
        printf("ready\n");
        fflush(stdout);

        cpu0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
        end = seconds > 0 ? now_ns(CLOCK_MONOTONIC) + (uint64_t) (seconds * 1e9) : UINT64_MAX;
        floor_drain(&f, end, &c);
        cpu1 = now_ns(CLOCK_THREAD_CPUTIME_ID);

        floor_destroy(&f, &events, &lost);
        free(f.page);
        printf("{\"cpu_ns\": %" PRIu64 ", \"pages\": %" PRIu64 ", \"bytes\": %" PRIu64
               ", \"events\": %" PRIu64 ", \"lost\": %" PRIu64 ", \"mmap\": %s, \"splice\": %s, \"read_pages\": %ld, \"splice_pages\": %ld, \"touched\": %" PRIu64 "}\n",
               cpu1 - cpu0, c.pages, c.bytes, events, lost, f.mapped ? "true" : "false",
               f.splice ? "true" : "false", f.read_pages, f.splice_pages, c.sum & 1);
        return 0;
}
