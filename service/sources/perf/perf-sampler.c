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
#include "perf-sampler.h"
#include "time-util.h"

/* x86-64's PERF_REG_X86_BP, SP and IP (6, 7, 8): what tracebus-unwind's DWARF unwinder starts from. */
#define PERF_DWARF_REGS ((UINT64_C(1) << 6) | (UINT64_C(1) << 7) | (UINT64_C(1) << 8))
#define PERF_DWARF_NREGS 3u
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

/* The sample's CALLCHAIN, then for UNWIND_DWARF its REGS_USER (abi, then BP, SP, IP
 * when abi is not 0) and STACK_USER (size, the bytes, dyn_size: how many are valid). */
static int parse_stack(PerfSampler *s, const uint8_t *p, const uint8_t *end, PerfStack *st) {
        uint64_t nr, abi, size, dyn;

        if (end - p < 8)
                return -EBADMSG;
        memcpy(&nr, p, 8);
        p += 8;
        if (nr > (uint64_t) (end - p) / 8)
                return -EBADMSG;
        st->ips = (const uint64_t *) p;
        st->n_ips = nr;
        p += nr * 8;
        if (!s->dwarf)
                return 0;
        if (end - p < 8)
                return -EBADMSG;
        memcpy(&abi, p, 8);
        p += 8;
        if (abi != 0) {
                if (end - p < (ptrdiff_t) (PERF_DWARF_NREGS * 8))
                        return -EBADMSG;
                st->regs = (const uint64_t *) p;
                st->regs_mask = PERF_DWARF_REGS;
                p += PERF_DWARF_NREGS * 8;
        }
        if (end - p < 8)
                return -EBADMSG;
        memcpy(&size, p, 8);
        p += 8;
        if (size == 0 || size > (uint64_t) (end - p) || (uint64_t) (end - p) - size < 8) {
                st->regs = NULL;   /* no stack: nothing to unwind */
                return 0;
        }
        memcpy(&dyn, p + size, 8);
        st->stack = p;
        st->stack_len = MIN(dyn, size);
        return 0;
}

/* One record of the ring, copied out whole when it wraps around the end. */
static void handle_record(PerfSampler *s, const struct perf_event_header *h) {
        const uint8_t *p = (const uint8_t *) (h + 1), *end = (const uint8_t *) h + h->size;
        PerfRawSample sample = { .misc = h->misc };

        switch (h->type) {
        case PERF_RECORD_SAMPLE:
                if (end - p < 32)
                        return;
                memcpy(&sample.pid, p, 4), memcpy(&sample.tid, p + 4, 4);
                memcpy(&sample.time, p + 8, 8);
                sample.time += s->boot_offset;
                memcpy(&sample.cpu, p + 16, 4);
                memcpy(&sample.period, p + 24, 8);
                p += 32;
                if (s->config->callstacks && parse_stack(s, p, end, &sample.stack) < 0)
                        return;
                sample.stack.tid = (pid_t) sample.tid;
                perf_writer_sample(&s->writer, &sample);
                break;
        case PERF_RECORD_LOST: {
                uint64_t lost;

                if (end - p < 16)
                        return;
                memcpy(&lost, p + 8, 8);
                perf_writer_lost(&s->writer, &sample, lost);
                break;
        }
        case PERF_RECORD_COMM: {
                uint32_t pid;

                if (end - p >= 8 && (h->misc & PERF_RECORD_MISC_COMM_EXEC)) {
                        memcpy(&pid, p, 4);
                        perf_writer_exec(&s->writer, (pid_t) pid);
                }
                break;
        }
        default:
                break;
        }
}

static void read_ring(PerfSampler *s, int cpu) {
        struct perf_event_mmap_page *meta = s->rings[cpu];
        const uint8_t *data = (const uint8_t *) meta + s->page_size;
        uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
        uint64_t tail = meta->data_tail;
        _Alignas(8) uint8_t copy[65536];

        while (tail + sizeof(struct perf_event_header) <= head) {
                size_t off = tail % s->ring_bytes;
                const struct perf_event_header *h;
                struct perf_event_header hdr;

                memcpy(&hdr, data + off, sizeof(hdr));   /* a header never straddles the end: 8-byte aligned */
                if (hdr.size < sizeof(hdr) || tail + hdr.size > head)
                        break;
                if (off + hdr.size <= s->ring_bytes)
                        h = (const struct perf_event_header *) (data + off);
                else {
                        size_t first = s->ring_bytes - off;

                        memcpy(copy, data + off, first);
                        memcpy(copy + first, data, hdr.size - first);
                        h = (const struct perf_event_header *) copy;
                }
                s->writer.cpu = cpu;
                handle_record(s, h);
                tail += hdr.size;
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
