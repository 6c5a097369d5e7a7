/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * DWARF unwinding of a perf sample's user stack with libdw's unwinder: the registers
 * and the stack copy the kernel took stand for the thread (dwfl_attach_state with our
 * own callbacks), so the target is never ptraced nor read. A read outside the copy is
 * served from the bytes of the ELF file mapped there, else it fails, and the unwind
 * ends at that frame with the frames found so far.
 */
#include "perf-unwind-local.h"

#if !defined(__x86_64__)
/* The sample's registers are in PERF_REG_X86_* order: other architectures have their
 * own layout, not mapped yet. Symbolization works everywhere. */
int perf_process_attach(PerfProcess *p) {
        return -EOPNOTSUPP;
}

int perf_unwind_dwarf(PerfProcess *p, const uint64_t *regs, uint64_t regs_mask,
                      const uint8_t *stack, size_t stack_len,
                      PerfFrame *frames, size_t max, size_t *ret_n) {
        *ret_n = 0;
        return -EOPNOTSUPP;
}
#else
#include <asm/perf_regs.h>

/* The x86-64 DWARF register numbers, by PERF_REG_X86_* bit. */
static const int8_t dwarf_of_perf[PERF_REG_X86_64_MAX] = {
        [PERF_REG_X86_AX] = 0, [PERF_REG_X86_DX] = 1, [PERF_REG_X86_CX] = 2, [PERF_REG_X86_BX] = 3,
        [PERF_REG_X86_SI] = 4, [PERF_REG_X86_DI] = 5, [PERF_REG_X86_BP] = 6, [PERF_REG_X86_SP] = 7,
        [PERF_REG_X86_R8] = 8, [PERF_REG_X86_R9] = 9, [PERF_REG_X86_R10] = 10, [PERF_REG_X86_R11] = 11,
        [PERF_REG_X86_R12] = 12, [PERF_REG_X86_R13] = 13, [PERF_REG_X86_R14] = 14, [PERF_REG_X86_R15] = 15,
        [PERF_REG_X86_IP] = -1, [PERF_REG_X86_FLAGS] = -1, [PERF_REG_X86_CS] = -1, [PERF_REG_X86_SS] = -1,
        [PERF_REG_X86_DS] = -1, [PERF_REG_X86_ES] = -1, [PERF_REG_X86_FS] = -1, [PERF_REG_X86_GS] = -1,
};

static pid_t next_thread(Dwfl *dwfl, void *dwfl_arg, void **thread_argp) {
        PerfProcess *p = dwfl_arg;

        if (*thread_argp)
                return 0;
        *thread_argp = p;
        return p->pid;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *dwfl_arg, void **thread_argp) {
        *thread_argp = dwfl_arg;
        return true;
}

static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *dwfl_arg) {
        PerfProcess *p = dwfl_arg;

        if (addr >= p->sp && p->stack_len >= 8 && addr - p->sp <= p->stack_len - 8) {
                memcpy(result, p->stack + (addr - p->sp), sizeof(*result));
                return true;
        }
        return perf_process_read_file_word(p, addr, result);
}

static bool set_initial_registers(Dwfl_Thread *thread, void *thread_arg) {
        PerfProcess *p = thread_arg;

        for (int i = 0; i < PERF_DWARF_NREGS; i++)
                if (p->regs_set & (1u << i) && !dwfl_thread_state_registers(thread, i, 1, &p->regs[i]))
                        return false;
        dwfl_thread_state_register_pc(thread, p->ip);
        return true;
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
        .next_thread = next_thread,
        .get_thread = get_thread,
        .memory_read = memory_read,
        .set_initial_registers = set_initial_registers,
};

int perf_process_attach(PerfProcess *p) {
        PerfUnwinder *u = p->unwinder;

        if (p->attached)
                return 0;
        if (p->attach_failed || !p->dwfl)
                return -EOPNOTSUPP;
        /* The architecture comes from an ELF: the vDSO copy, so that attaching opens no
         * file of the target (without one, dwfl opens the first module's). */
        if (u->vdso && !p->backend_elf)
                p->backend_elf = elf_memory((char *) u->vdso, u->vdso_len);
        if (!dwfl_attach_state(p->dwfl, p->backend_elf, p->pid, &thread_callbacks, p)) {
                p->attach_failed = true;
                return -EOPNOTSUPP;
        }
        p->attached = true;
        return 0;
}

/* Takes the sample's registers apart into the DWARF numbering. */
static int load_registers(PerfProcess *p, const uint64_t *regs, uint64_t mask) {
        bool have_ip = false, have_sp = false;
        size_t k = 0;

        p->regs_set = 0;
        for (unsigned bit = 0; bit < 64; bit++) {
                if (!(mask & (1ull << bit)))
                        continue;
                uint64_t v = regs[k++];
                if (bit == PERF_REG_X86_IP) {
                        p->ip = v;
                        have_ip = true;
                } else if (bit < PERF_REG_X86_64_MAX && dwarf_of_perf[bit] >= 0) {
                        int d = dwarf_of_perf[bit];
                        p->regs[d] = v;
                        p->regs_set |= 1u << d;
                        if (bit == PERF_REG_X86_SP) {
                                p->sp = v;
                                have_sp = true;
                        }
                }
        }
        return have_ip && have_sp ? 0 : -EINVAL;
}

static int frame_callback(Dwfl_Frame *state, void *arg) {
        PerfProcess *p = arg;
        Dwarf_Addr pc;
        bool activation;

        if (!dwfl_frame_pc(state, &pc, &activation) || pc == 0)
                return DWARF_CB_ABORT;
        /* A caller's pc is a return address: named by the call before it. */
        perf_process_name_frame(p, pc, activation ? pc : pc - 1, &p->frames[p->n_frames++]);
        return p->n_frames < p->max_frames ? DWARF_CB_OK : DWARF_CB_ABORT;
}

int perf_unwind_dwarf(PerfProcess *p, const uint64_t *regs, uint64_t regs_mask,
                      const uint8_t *stack, size_t stack_len,
                      PerfFrame *frames, size_t max, size_t *ret_n) {
        int r;

        *ret_n = 0;
        r = load_registers(p, regs, regs_mask);
        if (r < 0)
                return r;
        if (max == 0)
                return 0;
        p->stack = stack;
        p->stack_len = stack_len;
        p->frames = frames;
        p->max_frames = max;
        p->n_frames = 0;
        r = perf_process_attach(p);
        if (r < 0) {
                /* Without an unwinder the leaf still has a name. */
                perf_process_name_frame(p, p->ip, p->ip, &frames[0]);
                *ret_n = 1;
        } else {
                (void) dwfl_getthread_frames(p->dwfl, p->pid, frame_callback, p);
                *ret_n = p->n_frames;
        }
        p->stack = NULL;
        p->frames = NULL;
        return 0;
}
#endif
