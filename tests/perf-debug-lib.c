/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A library the unwinding test strips and gives a separate debug file: its static
 * function has a name only in .symtab, its exported one in .dynsym too. */
#include <stdint.h>

__attribute__((noinline, used)) static uint64_t perf_debug_lib_hidden(uint64_t x) {
        return x * 3 + 1;
}

uintptr_t perf_debug_lib_entry(void);
uintptr_t perf_debug_lib_entry(void) {
        return (uintptr_t) perf_debug_lib_hidden;
}
