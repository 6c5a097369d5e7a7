/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* libpcre2-8 is loaded by the first trace_filter with string rules or trigger with a
 * producer_name_regex, not at start: most sessions have none, and an idle tracebusd then
 * does not map it. The types come from the header; every call goes through the sym_
 * pointers below, set by dlopen_pcre2(). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "dlopen-util.h"

#define PCRE2_SONAME "libpcre2-8.so.0"

#define PCRE2_SYMBOLS(X)                                                                      \
        X(pcre2_code_free) X(pcre2_compile) X(pcre2_get_ovector_count)                       \
        X(pcre2_get_ovector_pointer) X(pcre2_match) X(pcre2_match_context_create)            \
        X(pcre2_match_context_free) X(pcre2_match_data_create_from_pattern)                  \
        X(pcre2_match_data_free) X(pcre2_set_match_limit) X(pcre2_compile_context_create)     \
        X(pcre2_compile_context_free) X(pcre2_set_max_pattern_length)                        \
        X(pcre2_set_parens_nest_limit) X(pcre2_set_depth_limit) X(pcre2_set_heap_limit)

PCRE2_SYMBOLS(DLOPEN_DECLARE_SYMBOL)

/* Loads libpcre2-8 once for the whole process, as dlopen_library() does: 0, or
 * -EOPNOTSUPP with *reason (never NULL) saying why. */
int dlopen_pcre2(const char **reason);
