/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <asm/perf_regs.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "perf-self-sample.h"

uint64_t perf_self_regs_mask(void) {
        uint64_t m = 0;

        for (int r = PERF_REG_X86_AX; r <= PERF_REG_X86_IP; r++)
                m |= 1ull << r;
        for (int r = PERF_REG_X86_R8; r <= PERF_REG_X86_R15; r++)
                m |= 1ull << r;
        return m;
}

int perf_self_open(PerfSelfSampler *s, uint64_t period_ns, uint32_t stack_bytes) {
        struct perf_event_attr attr = {
                .size = sizeof(attr),
                .type = PERF_TYPE_SOFTWARE,
                .config = PERF_COUNT_SW_TASK_CLOCK,
                .sample_period = period_ns,
                .sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_CALLCHAIN |
                               PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER,
                .sample_regs_user = perf_self_regs_mask(),
                .sample_stack_user = stack_bytes,
                .disabled = 1,
                .exclude_kernel = 1,
                .exclude_hv = 1,
                .exclude_callchain_kernel = 1,
        };
        static const size_t pages[] = { 512, 64, 16 };
        long page = sysconf(_SC_PAGESIZE);

        *s = (PerfSelfSampler) { .fd = -1 };
        s->fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
        if (s->fd < 0)
                return -errno;
        /* The locked-memory allowance of an unprivileged user is smaller. */
        for (size_t i = 0; i < sizeof(pages) / sizeof(pages[0]); i++) {
                s->ring_len = (pages[i] + 1) * page;
                s->ring = mmap(NULL, s->ring_len, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
                if (s->ring != MAP_FAILED)
                        return 0;
        }
        s->ring = NULL;
        perf_self_close(s);
        return -ENOMEM;
}

int perf_self_enable(PerfSelfSampler *s, int enable) {
        return ioctl(s->fd, enable ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0) < 0 ? -errno : 0;
}

/* One PERF_RECORD_SAMPLE, laid out as perf_self_open's sample_type says. */
static int parse_sample(PerfSelfSample *out, const uint8_t *p, const uint8_t *end) {
        uint64_t nr, abi, size;
        size_t nregs = __builtin_popcountll(perf_self_regs_mask());

#define TAKE(dst, n) do { if ((size_t) (end - p) < (n)) return -EBADMSG; memcpy((dst), p, (n)); p += (n); } while (0)
        *out = (PerfSelfSample) {};
        TAKE(&out->ip, 8);
        p += 8;                                 /* pid, tid */
        TAKE(&nr, 8);
        for (uint64_t i = 0; i < nr; i++) {
                uint64_t ip;
                TAKE(&ip, 8);
                if (ip >= PERF_CONTEXT_MAX)
                        continue;               /* the PERF_CONTEXT_USER marker */
                if (out->n_chain < PERF_SELF_MAX_CHAIN)
                        out->chain[out->n_chain++] = ip;
        }
        TAKE(&abi, 8);
        if (abi != PERF_SAMPLE_REGS_ABI_64)
                return -EBADMSG;
        TAKE(out->regs, nregs * 8);
        TAKE(&size, 8);
        if (size > 0) {
                uint64_t dyn;
                const uint8_t *data = p;
                p += size;
                TAKE(&dyn, 8);
                out->stack = malloc(dyn ?: 1);
                if (!out->stack)
                        return -ENOMEM;
                memcpy(out->stack, data, dyn);
                out->stack_len = dyn;
        }
#undef TAKE
        return 0;
}

/* Copies the record at @tail out of the ring, which may wrap it. */
static void ring_copy(const uint8_t *data, uint64_t size, uint64_t pos, void *dst, size_t len) {
        uint64_t off = pos % size;
        size_t first = len < size - off ? len : size - off;

        memcpy(dst, data + off, first);
        memcpy((uint8_t *) dst + first, data, len - first);
}

int perf_self_read(PerfSelfSampler *s) {
        struct perf_event_mmap_page *meta = s->ring;
        const uint8_t *data = (const uint8_t *) s->ring + meta->data_offset;
        uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
        uint64_t tail = meta->data_tail;
        uint8_t *rec = malloc(65536);

        if (!rec)
                return -ENOMEM;
        while (tail < head) {
                struct perf_event_header h;
                ring_copy(data, meta->data_size, tail, &h, sizeof(h));
                if (h.size < sizeof(h))
                        break;
                ring_copy(data, meta->data_size, tail, rec, h.size);
                tail += h.size;
                if (h.type == PERF_RECORD_LOST) {
                        s->lost += ((uint64_t *) (rec + sizeof(h)))[1];
                        continue;
                }
                if (h.type != PERF_RECORD_SAMPLE)
                        continue;
                PerfSelfSample *n = realloc(s->samples, (s->n_samples + 1) * sizeof(*n));
                if (!n)
                        break;
                s->samples = n;
                if (parse_sample(&s->samples[s->n_samples], rec + sizeof(h), rec + h.size) == 0)
                        s->n_samples++;
        }
        __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
        free(rec);
        return 0;
}

void perf_self_close(PerfSelfSampler *s) {
        for (size_t i = 0; i < s->n_samples; i++)
                free(s->samples[i].stack);
        free(s->samples);
        s->samples = NULL;
        s->n_samples = 0;
        if (s->ring)
                munmap(s->ring, s->ring_len);
        s->ring = NULL;
        if (s->fd >= 0)
                close(s->fd);
        s->fd = -1;
}
