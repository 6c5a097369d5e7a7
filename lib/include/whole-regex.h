/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * A short regex, compiled once, matched against the whole of short strings, with its cost
 * bounded: a pattern whose counted repetitions multiply past a budget is refused before it
 * is compiled, the compile caps the pattern's length and nesting, and each match caps its
 * steps, depth and memory (a match that reaches a cap is no match). The syntax is PCRE2's,
 * close to the ECMAScript of Perfetto's std::regex; libpcre2-8 is loaded on first use.
 */
#include <stdbool.h>

typedef struct WholeRegex WholeRegex;

/* The longest pattern compiled, in bytes. */
#define WHOLE_REGEX_MAX_PATTERN 256u

/* Why regex_check_expansion() refused a pattern, for a refusal's text. */
#define REGEX_EXPANSION_REASON "its counted repetitions ({n,m}) multiply past 4096 or its groups nest deeper than 32"

/* 0, or -E2BIG when @pattern, with every counted repetition written out as PCRE2 compiles
 * it ("(ab){3}" is six), is over 4096 bytes, or its groups nest deeper than 32: what
 * makes PCRE2's compile slow and large. Linear in the pattern's length, so it runs
 * before any pattern a caller wrote is compiled. */
int regex_check_expansion(const char *pattern);

/* 0 and the compiled @pattern in *@ret; -EINVAL with *@ret_reason (static text) when the
 * pattern is refused, does not compile, or libpcre2-8 cannot be loaded; -ENOMEM. */
int whole_regex_compile(const char *pattern, WholeRegex **ret, const char **ret_reason);
/* Whether all of @s matches: false when it does not, or when the match reached a cap. */
bool whole_regex_match(const WholeRegex *re, const char *s);
WholeRegex *whole_regex_free(WholeRegex *re);
