/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

/*
 * perf_event_open() on the calling thread: task-clock samples with the kernel's user
 * callchain (frame pointers), the user registers and a copy of the user stack, the
 * material tracebusd's perf sampler hands to perf-unwind. For the unit test and the
 * unwinding bench.
 */

#define PERF_SELF_MAX_CHAIN 128
#define PERF_SELF_MAX_REGS 17

typedef struct PerfSelfSample {
        uint64_t ip;
        uint64_t chain[PERF_SELF_MAX_CHAIN];    /* user entries only, leaf first */
        size_t n_chain;
        uint64_t regs[PERF_SELF_MAX_REGS];      /* the values of PERF_SELF_REGS_MASK's bits */
        uint8_t *stack;                         /* stack_len bytes from the SP */
        size_t stack_len;
} PerfSelfSample;

typedef struct PerfSelfSampler {
        int fd;
        void *ring;
        size_t ring_len;                        /* the header page and the data pages */
        PerfSelfSample *samples;
        size_t n_samples, lost;
} PerfSelfSampler;

/* AX..DI, BP, SP, IP, R8-R15: what DWARF unwinding needs (17 registers). */
uint64_t perf_self_regs_mask(void);

/* Opens the sampler disabled; @period_ns of task clock between samples, @stack_bytes
 * of stack copied. Returns 0 or -errno (perf_event_open's: EACCES under paranoia). */
int perf_self_open(PerfSelfSampler *s, uint64_t period_ns, uint32_t stack_bytes);
int perf_self_enable(PerfSelfSampler *s, int enable);
/* Moves the samples in the ring into s->samples. */
int perf_self_read(PerfSelfSampler *s);
void perf_self_close(PerfSelfSampler *s);
