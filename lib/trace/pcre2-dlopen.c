/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "macro.h"
#include "pcre2-dlopen.h"

PCRE2_SYMBOLS(DLOPEN_DEFINE_SYMBOL)

static const DlopenSymbol pcre2_symbols[] = { PCRE2_SYMBOLS(DLOPEN_SYMBOL_ENTRY) };
static DlopenLibrary pcre2_library = DLOPEN_LIBRARY_INIT(PCRE2_SONAME, pcre2_symbols, ELEMENTSOF(pcre2_symbols));

int dlopen_pcre2(const char **reason) {
        return dlopen_library(&pcre2_library, reason);
}
