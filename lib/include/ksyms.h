/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * The kernel's symbol table, as /proc/kallsyms lists it ("ffffffff81000000 T _stext",
 * a module's symbols followed by "\t[module]"), sorted by address, for naming the code
 * addresses in ftrace events (FtraceConfig.symbolize_ksyms). Read-only once built, so
 * that the recorders of several sessions can share one; counted references.
 */

typedef struct Ksyms Ksyms;

/* Refuses more symbols than this (a kernel has about 150,000 with its modules). */
#define KSYMS_MAX_SYMBOLS (4u * 1024u * 1024u)

/* Parses the text of /proc/kallsyms. -EPERM when every address reads as zero (what
 * kptr_restrict shows a reader it hides them from); -EBADMSG for a line of another
 * shape; -E2BIG past KSYMS_MAX_SYMBOLS. The table holds one reference. */
int ksyms_parse(const char *text, size_t len, Ksyms **ret);

Ksyms *ksyms_ref(Ksyms *k);
Ksyms *ksyms_unref(Ksyms *k);
static inline void ksyms_unrefp(Ksyms **k) {
        ksyms_unref(*k);
}

size_t ksyms_count(const Ksyms *k);
/* Bytes the table takes in memory (FtraceStats.kernel_symbols_mem_kb). */
size_t ksyms_mem_bytes(const Ksyms *k);

/* The function holding @address: the text symbol ("t", "T", "w", "W") with the highest
 * address not above it, when the next symbol of any kind starts above @address (so that
 * an address past the end of the kernel's text is not taken for its last function).
 * Returns its index, or -ENOENT. */
ssize_t ksyms_lookup(const Ksyms *k, uint64_t address);

/* The name of symbol @i (without its module). */
const char *ksyms_name(const Ksyms *k, size_t i);
uint64_t ksyms_address(const Ksyms *k, size_t i);
