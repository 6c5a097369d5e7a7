/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <stdlib.h>
#include "macro.h"
#include "perf-unwind.h"

/* The x86-64 DWARF registers the unwinder starts from: rax..r15 (0-15); the pc apart. */
#define PERF_DWARF_NREGS 16

struct PerfUnwinder {
        uint64_t max_bytes;             /* 0: no cap */
        uint64_t used_bytes;            /* file bytes held by all processes */
        bool exceeded;                  /* a file was left out since the last take */
        bool denied;                    /* a file was refused by the kernel since then */
        char *debug_dirs;               /* colon-separated, searched by build id */
        Dwfl_Callbacks callbacks;       /* shared by every Dwfl */
        uint8_t *vdso;                  /* a copy of the service's vDSO: the kernel's, */
        size_t vdso_len;                /* the same image every process maps */
};

/* What maps says of a mapping that PerfMapping does not carry. */
typedef struct PerfMapInfo {
        uint64_t inode;
        bool exec;
} PerfMapInfo;

/* A named address: PerfFrame for any pc looked up at @lookup (rel_pc = pc - rel_base).
 * libdw's symbol search is a scan of the whole table: the cache makes a frame seen
 * before cost a hash instead. */
typedef struct PerfNameSlot {
        uint64_t lookup;
        uint64_t rel_base;
        const char *function;
        const PerfMapping *mapping;
} PerfNameSlot;

#define PERF_NAME_CACHE_BITS 10

/* A versioned symbol's name without its version, by the pointer libdw gave. */
typedef struct PerfNameCopy {
        const char *source;
        char *copy;
} PerfNameCopy;

/* A run of mappings of one file with some code in it: one Dwfl module (its userdata). */
typedef struct PerfModule {
        PerfProcess *process;
        size_t first, n;                /* in PerfProcess.maps */
        uint64_t inode;
        Dwfl_Module *mod;
        uint64_t bytes;                 /* its files' share of PerfProcess.bytes */
        bool described;                 /* build id and load bias copied to the mappings */
} PerfModule;

struct PerfProcess {
        PerfUnwinder *unwinder;
        pid_t pid;
        char *maps_text;                /* /proc/PID/maps; the mappings' paths point into it */
        PerfMapping *maps;
        PerfMapInfo *info;              /* parallel to maps */
        size_t n_maps;
        PerfModule *modules;
        size_t n_modules;
        Dwfl *dwfl;
        Elf *backend_elf;               /* the vDSO image dwfl_attach_state picked the arch from */
        bool attached, attach_failed;
        uint64_t bytes;                 /* this process's share of unwinder->used_bytes */
        PerfNameSlot *names;            /* 1 << PERF_NAME_CACHE_BITS slots; NULL: none yet */
        PerfNameCopy *copies;           /* open addressing, n_copies <= cap_copies / 2 */
        size_t n_copies, cap_copies;

        /* The sample being unwound (perf-unwind-dwarf.c). */
        Dwarf_Word regs[PERF_DWARF_NREGS];
        uint32_t regs_set;              /* bit n: regs[n] is known */
        uint64_t ip, sp;
        const uint8_t *stack;
        size_t stack_len;
        PerfFrame *frames;
        size_t max_frames, n_frames;
};

DEFINE_TRIVIAL_CLEANUP_FUNC(PerfUnwinder *, perf_unwinder_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(PerfProcess *, perf_process_free);

static inline bool streq(const char *a, const char *b) {
        return strcmp(a, b) == 0;
}

/* Accounts @size bytes about to be held; false (and flagged) over the cap. */
bool perf_process_charge(PerfProcess *p, uint64_t size);
void perf_process_uncharge(PerfProcess *p, uint64_t size);

/* Fills @f for @pc, looked up as @lookup (pc - 1 for a return address). */
void perf_process_name_frame(PerfProcess *p, uint64_t pc, uint64_t lookup, PerfFrame *f);
/* Reads 8 bytes at @addr from the file bytes of the module mapped there. */
bool perf_process_read_file_word(PerfProcess *p, uint64_t addr, uint64_t *ret);
/* The attach state with the unwinder's callbacks, once per Dwfl. */
int perf_process_attach(PerfProcess *p);
