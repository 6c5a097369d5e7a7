/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Stub: the API of perf-unwind.h, so that the perf sampler builds against it. */
#include <errno.h>

#include "perf-unwind.h"

int perf_unwinder_new(uint64_t max_memory_kb, PerfUnwinder **ret) {
        return -EOPNOTSUPP;
}

PerfUnwinder *perf_unwinder_free(PerfUnwinder *u) {
        return NULL;
}

int perf_unwinder_set_debug_dirs(PerfUnwinder *u, const char *dirs) {
        return -EOPNOTSUPP;
}

uint64_t perf_unwinder_memory_used(const PerfUnwinder *u) {
        return 0;
}

bool perf_unwinder_take_memory_exceeded(PerfUnwinder *u) {
        return false;
}

int perf_process_new(PerfUnwinder *u, pid_t pid, PerfProcess **ret) {
        return -EOPNOTSUPP;
}

PerfProcess *perf_process_free(PerfProcess *p) {
        return NULL;
}

int perf_process_reload_maps(PerfProcess *p) {
        return -EOPNOTSUPP;
}

size_t perf_process_mappings(const PerfProcess *p, const PerfMapping **ret) {
        *ret = NULL;
        return 0;
}

int perf_symbolize(PerfProcess *p, uint64_t pc, bool return_address, PerfFrame *ret) {
        *ret = (PerfFrame) { .pc = pc };
        return -EOPNOTSUPP;
}

int perf_unwind_dwarf(PerfProcess *p, const uint64_t *regs, uint64_t regs_mask,
                      const uint8_t *stack, size_t stack_len,
                      PerfFrame *frames, size_t max, size_t *ret_n) {
        *ret_n = 0;
        return -EOPNOTSUPP;
}
