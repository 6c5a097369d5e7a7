/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* lib/basic/dlopen-util.c: a library loaded the first time it is needed, with every
 * symbol it must have, or refused with a reason and nothing left set. */
#include <errno.h>
#include <glib.h>
#include <string.h>

#include "dlopen-util.h"

typedef size_t StrlenFunc(const char *);

static void test_loads(void) {
        void *len_fn = NULL;
        const DlopenSymbol symbols[] = { { &len_fn, "strlen" } };
        DlopenLibrary lib = DLOPEN_LIBRARY_INIT("libc.so.6", symbols, G_N_ELEMENTS(symbols));
        const char *reason = NULL;

        g_assert_cmpint(dlopen_library(&lib, &reason), ==, 0);
        g_assert_nonnull(len_fn);
        g_assert_cmpuint(((StrlenFunc *) len_fn)("tracebus"), ==, 8);
        g_assert_nonnull(reason);
        /* Later calls give the first result and load nothing again. */
        len_fn = NULL;
        g_assert_cmpint(dlopen_library(&lib, NULL), ==, 0);
        g_assert_null(len_fn);
}

/* One symbol missing: refused, naming it, and the symbol found before it is not left
 * pointing into a library that was closed. */
static void test_missing_symbol(void) {
        void *len_fn = NULL, *none = NULL;
        const DlopenSymbol symbols[] = { { &len_fn, "strlen" }, { &none, "tb_no_such_function" } };
        DlopenLibrary lib = DLOPEN_LIBRARY_INIT("libc.so.6", symbols, G_N_ELEMENTS(symbols));
        const char *reason = NULL;

        g_assert_cmpint(dlopen_library(&lib, &reason), ==, -EOPNOTSUPP);
        g_assert_nonnull(strstr(reason, "libc.so.6 cannot be loaded"));
        g_assert_nonnull(strstr(reason, "tb_no_such_function"));
        g_assert_null(len_fn);
        g_assert_null(none);
}

static void test_missing_library(void) {
        void *fn = NULL;
        const DlopenSymbol symbols[] = { { &fn, "tb_function" } };
        DlopenLibrary lib = DLOPEN_LIBRARY_INIT("libtracebus-missing.so.9", symbols, G_N_ELEMENTS(symbols));
        const char *reason = NULL, *again = NULL;

        g_assert_cmpint(dlopen_library(&lib, &reason), ==, -EOPNOTSUPP);
        g_assert_nonnull(strstr(reason, "libtracebus-missing.so.9 cannot be loaded"));
        g_assert_cmpint(dlopen_library(&lib, &again), ==, -EOPNOTSUPP);
        g_assert_cmpstr(again, ==, reason);
        g_assert_null(fn);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/dlopen/loads", test_loads);
        g_test_add_func("/dlopen/missing-symbol", test_missing_symbol);
        g_test_add_func("/dlopen/missing-library", test_missing_library);
        return g_test_run();
}
