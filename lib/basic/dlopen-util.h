/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

/* A library loaded when first needed rather than at start, so that a program that never
 * needs it does not map it (tracebusd's idle RSS: libdw, libpcre2). Each user keeps a
 * list of its functions as X-macros and calls through sym_ pointers, as systemd does for
 * its optional libraries. */
typedef struct DlopenSymbol {
        void **pointer;           /* where the function's address goes */
        const char *name;         /* its name in the library (after the headers' macros) */
} DlopenSymbol;

#define DLOPEN_STRINGIFY_(x) #x
/* The symbol's name after macro expansion: pcre2_compile is pcre2_compile_8. */
#define DLOPEN_NAME(x) DLOPEN_STRINGIFY_(x)

/* For a list LIB_SYMBOLS(X): the header declares, one file defines, and the table lists
 * each sym_NAME, typed as the header declares NAME. */
#define DLOPEN_DECLARE_SYMBOL(name) extern typeof(name) *sym_##name;
#define DLOPEN_DEFINE_SYMBOL(name) typeof(name) *sym_##name;
#define DLOPEN_SYMBOL_ENTRY(name) { (void **) &sym_##name, DLOPEN_NAME(name) },

typedef struct DlopenLibrary {
        const char *soname;
        const DlopenSymbol *symbols;
        size_t n_symbols;
        pthread_mutex_t lock;
        bool tried;
        int result;
        char reason[256];
} DlopenLibrary;

#define DLOPEN_LIBRARY_INIT(soname_, symbols_, n_)                                          \
        { .soname = (soname_), .symbols = (symbols_), .n_symbols = (n_),                    \
          .lock = PTHREAD_MUTEX_INITIALIZER }

/* Loads @lib and every one of its symbols, the first time for the whole process (any
 * thread; later calls return the first result; never unloaded, so the pointers stay
 * valid): 0, or -EOPNOTSUPP when the library or a symbol is missing, with *@reason
 * (owned by @lib, never NULL) saying why. */
int dlopen_library(DlopenLibrary *lib, const char **reason);
