/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Naming and unwinding the user frames of perf samples (linux.perf), with
 * elfutils' libdw, in tracebus-unwind, which runs as the session owner: the kernel's own
 * checks decide what it may read. Symbols come from the ELF files the sampled process
 * maps, opened through /proc/PID/map_files or /proc/PID/root (never a path anyone names),
 * their .symtab/.dynsym, and separate debug files found by build id in the debug
 * directories (never by .gnu_debuglink, a name next to the binary).
 * DWARF unwinding runs libdw's unwinder over the registers and the stack copy of a
 * sample (PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER): the target is never ptraced
 * nor read. JIT, anonymous and stripped code give frames without names, never an error.
 *
 * Not thread-safe: one thread (the perf sampler's worker) owns a PerfUnwinder and the
 * PerfProcess objects made from it. x86-64 (64-bit ABI samples) only.
 */

/* One file-backed or anonymous mapping of /proc/PID/maps. */
typedef struct PerfMapping {
        uint64_t start, end;            /* the mapping's addresses */
        uint64_t pgoff;                 /* file offset of start (Perfetto's start_offset) */
        uint64_t load_bias;             /* p_vaddr - p_offset of the ELF's executable PT_LOAD; 0 unknown */
        const char *path;               /* as maps shows it; "" for anonymous memory, "[vdso]"... */
        const uint8_t *build_id;        /* NULL: none (not an ELF, not read yet, no note) */
        size_t build_id_len;
} PerfMapping;

/* One frame. The strings and the mapping belong to the PerfProcess: valid until
 * its next perf_process_reload_maps() or perf_process_free(). */
typedef struct PerfFrame {
        uint64_t pc;                    /* absolute address (a return address for callers) */
        uint64_t rel_pc;                /* the ELF's virtual address of pc; pc - start + pgoff without an ELF */
        const char *function;           /* NULL: unknown (stripped, JIT, anonymous, over the memory cap) */
        const PerfMapping *mapping;     /* NULL: pc is in no mapping */
} PerfFrame;

/* What all the processes of one sampler share: the memory cap and where debug files are. */
typedef struct PerfUnwinder PerfUnwinder;
/* Per-pid cache: the process's maps, the ELF files opened, their symbols and CFI. */
typedef struct PerfProcess PerfProcess;

/* @max_memory_kb: the cap (PerfEventConfig's max_daemon_memory_kb; 0: none) on what
 * the processes hold: the ELF and debug files mapped (their sizes), the maps and the
 * caches of names. A file that would cross it is not opened: its frames have no names
 * and DWARF unwinding stops there. libdw's own tables over the files (CFI, sorted
 * symbols) are not counted: they are a fraction of the files. */
int perf_unwinder_new(uint64_t max_memory_kb, PerfUnwinder **ret);
/* All the PerfProcess objects of @u must be freed first. NULL-safe. */
PerfUnwinder *perf_unwinder_free(PerfUnwinder *u);
/* Colon-separated directories searched for <dir>/.build-id/xx/rest.debug;
 * the default is "/usr/lib/debug". For tests and for packagers. */
int perf_unwinder_set_debug_dirs(PerfUnwinder *u, const char *dirs);
/* Bytes held now (files, maps, caches), and whether something was left out for the cap since the
 * last call (the caller warns once: "max_daemon_memory_kb reached"). */
uint64_t perf_unwinder_memory_used(const PerfUnwinder *u);
bool perf_unwinder_take_memory_exceeded(PerfUnwinder *u);
/* Whether the kernel refused a mapped file since the last call (EACCES/EPERM on
 * /proc/PID/root or on the file itself: the owner may not ptrace the process or read
 * the file), so that the caller warns once that those frames have no names. */
bool perf_unwinder_take_files_denied(PerfUnwinder *u);

/* Reads /proc/PID/maps now. -ESRCH: the process is gone; -ENOBUFS: its maps alone
 * would cross the memory cap (flagged as for a file). */
int perf_process_new(PerfUnwinder *u, pid_t pid, PerfProcess **ret);
PerfProcess *perf_process_free(PerfProcess *p);
/* Reads the maps again (after an exec, or an mmap record; cheaper still: when a pc
 * falls in no mapping). The files of mappings that did not change stay open; the
 * PerfMapping and name pointers handed out before are invalid. Errors as
 * perf_process_new(); after one, the process names nothing until a reload works. */
int perf_process_reload_maps(PerfProcess *p);
/* The process's mappings, in address order. */
size_t perf_process_mappings(const PerfProcess *p, const PerfMapping **ret);

/* Names @pc (for a callchain entry after the first, a return address: looked up as
 * pc - 1 so that a call that ends its function names the caller). Always fills @ret;
 * returns 0. */
int perf_symbolize(PerfProcess *p, uint64_t pc, bool return_address, PerfFrame *ret);

/* Unwinds one sample: @regs holds the values of the bits set in @regs_mask
 * (PERF_REG_X86_* bits, in bit order, as the sample carries them; at least IP, SP and
 * BP are needed), @stack the stack copy starting at SP (its dyn_size bytes). Fills at
 * most @max frames, the leaf first; *ret_n frames were filled even on a partial unwind.
 * Returns 0 (possibly a partial unwind), -EINVAL without IP/SP, -EOPNOTSUPP off x86-64. */
int perf_unwind_dwarf(PerfProcess *p, const uint64_t *regs, uint64_t regs_mask,
                      const uint8_t *stack, size_t stack_len,
                      PerfFrame *frames, size_t max, size_t *ret_n);
