/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* elfutils (libdw and the libelf it needs) is loaded when a session first names user
 * frames, not at the service's start: an idle service maps neither (about 340 KiB of
 * its RSS), as systemd loads libdw for coredumps only. The types come from the headers;
 * every call goes through the sym_ pointers below, set by dlopen_libdw(). */
#include <elfutils/libdwfl.h>
#include <gelf.h>

#include "dlopen-util.h"

#define LIBDW_SONAME "libdw.so.1"

#define LIBDW_SYMBOLS(X)                                                       \
        X(dwfl_addrmodule) X(dwfl_attach_state) X(dwfl_begin) X(dwfl_end)      \
        X(dwfl_frame_pc) X(dwfl_getthread_frames) X(dwfl_module_addrinfo)      \
        X(dwfl_module_build_id) X(dwfl_module_getelf) X(dwfl_module_info)      \
        X(dwfl_report_begin) X(dwfl_report_end) X(dwfl_report_module)          \
        X(dwfl_standard_find_debuginfo) X(dwfl_thread_state_register_pc)       \
        X(dwfl_thread_state_registers)                                         \
        X(elf_begin) X(elf_cntl) X(elf_end) X(elf_getphdrnum) X(elf_kind)      \
        X(elf_memory) X(elf_rawfile) X(elf_version) X(gelf_getphdr)

LIBDW_SYMBOLS(DLOPEN_DECLARE_SYMBOL)

/* Loads libdw once for the whole process, as dlopen_library() does: 0, or -EOPNOTSUPP
 * with *reason (never NULL) saying why, for the session's warning. */
int dlopen_libdw(const char **reason);
