/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "libdw-dlopen.h"
#include "macro.h"

LIBDW_SYMBOLS(DLOPEN_DEFINE_SYMBOL)

static const DlopenSymbol libdw_symbols[] = { LIBDW_SYMBOLS(DLOPEN_SYMBOL_ENTRY) };
static DlopenLibrary libdw_library = DLOPEN_LIBRARY_INIT(LIBDW_SONAME, libdw_symbols, ELEMENTSOF(libdw_symbols));

int dlopen_libdw(const char **reason) {
        int r = dlopen_library(&libdw_library, reason);

        /* libelf's version handshake; it only records the version, so every call may. */
        if (r >= 0)
                (void) sym_elf_version(EV_CURRENT);
        return r;
}
