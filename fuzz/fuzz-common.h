/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The captured tracefs tree (header_page, events/<group>/<event>/format) the
 * fuzzers use as their kernel: tests/fixtures/ftrace of the source tree. */
#ifndef FUZZ_FIXTURES_DIR
#error "FUZZ_FIXTURES_DIR must be defined"
#endif

static inline const char *fuzz_tracefs_root(void) {
        return FUZZ_FIXTURES_DIR;
}
