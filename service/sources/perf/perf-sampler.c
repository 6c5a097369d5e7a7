/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * linux.perf's sampler: one perf event per CPU (pid -1: every process, as traced_perf
 * opens them; the scope is applied per sample), each with a ring buffer of
 * ring_buffer_pages read by the sampler's own thread every ring_buffer_read_period_ms.
 * Samples are kept, named and written by perf-scope.c, perf-intern.c and
 * perf-packets.c. perf_event_paranoid is never touched: the service opens the events
 * with its own capabilities and decides itself what the caller may see.
 */
#include <poll.h>
#include <stddef.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "kernel/ksyms-cache.h"
#include "log.h"
#include "perf-packets.h"
#include "perf-record.h"
#include "perf-sampler.h"
#include "time-util.h"

/* Stack copied per sample: enough for a few dozen frames, 8 KiB of ring per sample. */
#define PERF_DWARF_STACK_BYTES 8192u

struct PerfSampler {
        bool dwarf;                    /* samples carry REGS_USER and STACK_USER */
        uint64_t boot_offset;          /* a tracepoint's samples: BOOTTIME - MONOTONIC, added */
        Recorder *rec;
        const PerfSection *config;
        int n_cpus;
        int *fds;
        void **rings;
        size_t ring_bytes;             /* the data area, ring_pages pages */
        size_t page_size;
        int stop_fd;
        pthread_t thread;
        bool thread_started;
        PerfWriter writer;
};

static void sampler_attr(const PerfSection *c, struct perf_event_attr *attr) {
        *attr = (struct perf_event_attr) {
                .size = sizeof(*attr),
                .type = c->type,
                .config = c->event_config,
                .sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD |
                        (c->callstacks ? PERF_SAMPLE_CALLCHAIN : 0),
                .disabled = 1,
                .freq = c->freq,
                .use_clockid = 1,
                /* The tracepoint PMU takes only NMI-safe clocks (MONOTONIC, MONOTONIC_RAW):
                 * BOOTTIME is EINVAL there, so its samples are moved to BOOTTIME as read. */
                .clockid = c->type == PERF_TYPE_TRACEPOINT ? CLOCK_MONOTONIC : CLOCK_BOOTTIME,
                .comm = 1,
                .comm_exec = 1,
                /* Kernel-mode samples of a caller without org.tracebus.manage would show
                 * where other users' work enters the kernel: not taken at all. */
                .exclude_kernel = !c->manage,
                .exclude_hv = 1,
                .exclude_callchain_kernel = !c->kernel_frames,
                .exclude_callchain_user = !c->user_frames,
        };
#if defined(__x86_64__)
        /* UNWIND_DWARF: the user registers and a copy of the stack, for tracebus-unwind. */
        if (c->callstacks && c->unwind_dwarf) {
                attr->sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
                attr->sample_regs_user = PERF_DWARF_REGS;
                attr->sample_stack_user = PERF_DWARF_STACK_BYTES;
        }
#endif
        if (c->freq)
                attr->sample_freq = c->interval;
        else
                attr->sample_period = c->interval;
}

static int open_cpu(PerfSampler *s, int cpu) {
        struct perf_event_attr attr;
        void *ring;
        int fd;

        sampler_attr(s->config, &attr);
        fd = perf_event_open_fd(&attr, -1, cpu);
        if (fd == -ENODEV)
                return 0;       /* offline CPU */
        /* The kernel or a sandbox refused the service itself (perf_event_paranoid with no
         * CAP_PERFMON, a seccomp filter): not the caller's authorization, so not EPERM,
         * which clients would report as polkit's refusal. */
        if (fd == -EPERM || fd == -EACCES) {
                log_warning_errno(fd, "perf_event_open() refused to the service: %m");
                return -ENODEV;
        }
        if (fd < 0)
                return fd;
        s->fds[cpu] = fd;
        if (s->config->tracepoint_filter && ioctl(fd, PERF_EVENT_IOC_SET_FILTER, s->config->tracepoint_filter) < 0)
                return -errno;
        ring = mmap(NULL, s->page_size + s->ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        /* EPERM: the ring does not fit in what the kernel lets this process lock, that is
         * perf_event_mlock_kb (shared by all of root's processes) and then the unit's
         * LimitMEMLOCK=, which the other sessions' rings use too. Not the caller's
         * authorization either: the start fails for want of buffer memory. */
        if (ring == MAP_FAILED && errno == EPERM) {
                log_warning("linux.perf: the kernel refused CPU %d's ring of %zu KiB: the rings of the sessions "
                            "recording use up the memory the service may lock (LimitMEMLOCK=).",
                            cpu, (s->page_size + s->ring_bytes) >> 10);
                return -ENOBUFS;
        }
        if (ring == MAP_FAILED)
                return -errno;
        s->rings[cpu] = ring;
        return 0;
}

/* One record of the ring, copied out whole when it wraps around the end. */
static void handle_record(PerfSampler *s, const struct perf_event_header *h) {
        PerfRecord rec;

        if (perf_record_parse(h, s->config->callstacks, s->dwarf, &rec) < 0)
                return;
        switch (rec.kind) {
        case PERF_RECORD_KIND_SAMPLE:
                rec.sample.time += s->boot_offset;
                perf_writer_sample(&s->writer, &rec.sample);
                break;
        case PERF_RECORD_KIND_LOST:
                perf_writer_lost(&s->writer, &rec.sample, rec.lost);
                break;
        case PERF_RECORD_KIND_EXEC:
                perf_writer_exec(&s->writer, rec.exec_pid);
                break;
        default:
                break;
        }
}

static void read_ring(PerfSampler *s, int cpu) {
        struct perf_event_mmap_page *meta = s->rings[cpu];
        const uint8_t *data = (const uint8_t *) meta + s->page_size;
        uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
        uint64_t tail = meta->data_tail;
        _Alignas(8) uint8_t copy[PERF_RECORD_MAX_BYTES];
        const struct perf_event_header *h;

        while ((h = perf_ring_next(data, s->ring_bytes, &tail, head, copy))) {
                s->writer.cpu = cpu;
                handle_record(s, h);
        }
        __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
}

static void read_all(PerfSampler *s) {
        /* Read each pass: the two clocks part only while the machine is suspended (a sample
         * taken before a suspend and read after it is off by the suspension). */
        if (s->config->type == PERF_TYPE_TRACEPOINT)
                s->boot_offset = now_ns(CLOCK_BOOTTIME) - now_ns(CLOCK_MONOTONIC);
        for (int cpu = 0; cpu < s->n_cpus; cpu++)
                if (s->rings[cpu])
                        read_ring(s, cpu);
        perf_writer_end_pass(&s->writer);
}

static void *sampler_thread(void *userdata) {
        PerfSampler *s = userdata;
        struct pollfd pfd = { .fd = s->stop_fd, .events = POLLIN };

        for (;;) {
                int n = poll(&pfd, 1, (int) s->config->read_period_ms);

                read_all(s);
                if (n > 0)
                        break;
        }
        perf_writer_end_helper(&s->writer);
        return NULL;
}

static void close_events(PerfSampler *s) {
        for (int cpu = 0; s->fds && cpu < s->n_cpus; cpu++) {
                if (s->rings[cpu])
                        (void) munmap(s->rings[cpu], s->page_size + s->ring_bytes);
                safe_close(s->fds[cpu]);
        }
        free(s->fds);
        free(s->rings);
        s->fds = NULL;
        s->rings = NULL;
}

static int open_events(PerfSampler *s) {
        s->n_cpus = (int) sysconf(_SC_NPROCESSORS_CONF);
        if (s->n_cpus <= 0)
                return -EIO;
        s->fds = malloc(s->n_cpus * sizeof(int));
        s->rings = calloc(s->n_cpus, sizeof(void *));
        if (!s->fds || !s->rings)
                return -ENOMEM;
        for (int cpu = 0; cpu < s->n_cpus; cpu++)
                s->fds[cpu] = -EBADF;
        for (int cpu = 0; cpu < s->n_cpus; cpu++) {
                int r = open_cpu(s, cpu);
                if (r < 0)
                        return log_warning_errno(r, "linux.perf: opening the events of CPU %d failed: %m", cpu);
        }
        return 0;
}

static void enable_events(PerfSampler *s, bool on) {
        for (int cpu = 0; cpu < s->n_cpus; cpu++)
                if (s->fds[cpu] >= 0)
                        (void) ioctl(s->fds[cpu], on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0);
}

static PerfSampler *sampler_free(PerfSampler *s) {
        close_events(s);
        perf_writer_done(&s->writer);
        safe_close(s->stop_fd);
        return mfree(s);
}

int perf_sampler_start(const DataSourceContext *ctx, void *section, void **ret) {
        const PerfSection *config = section;
        Recorder *rec = ctx->recorder;
        PerfSampler *s;
        int r;

        *ret = NULL;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        *s = (PerfSampler) { .rec = rec, .config = config, .stop_fd = -EBADF, .page_size = (size_t) getpagesize() };
        s->ring_bytes = s->page_size * config->ring_pages;
#if defined(__x86_64__)
        s->dwarf = config->callstacks && config->unwind_dwarf;
#endif
        r = perf_writer_init(&s->writer, rec, config, ctx->owner_uid);
        if (r >= 0)
                r = open_events(s);
        if (r >= 0 && (s->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
                r = -errno;
        if (r >= 0)
                r = perf_writer_defaults(&s->writer);
        if (r >= 0) {
                enable_events(s, true);
                r = -pthread_create(&s->thread, NULL, sampler_thread, s);
        }
        if (r < 0) {
                sampler_free(s);
                return r;
        }
        s->thread_started = true;
        *ret = s;
        return 0;
}

void perf_sampler_stop(void *state) {
        PerfSampler *s = state;

        if (!s)
                return;
        if (s->thread_started) {
                enable_events(s, false);
                (void) eventfd_write(s->stop_fd, 1);
                (void) pthread_join(s->thread, NULL);
        }
        perf_writer_finish(&s->writer);
        sampler_free(s);
}
