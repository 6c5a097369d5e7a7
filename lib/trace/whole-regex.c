/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "pcre2-dlopen.h"
#include "whole-regex.h"

/* The pattern's size once every counted repetition is written out, as PCRE2 compiles it
 * ("(ab){3}" is six): ((a{1,100}){1,100}){1,100} would be a million. A few thousand is
 * far more than any regex over a process name needs, and compiles in microseconds. */
#define EXPANDED_BUDGET 4096u
/* Groups inside groups: more is refused before compiling, and by PCRE2 itself. */
#define NEST_MAX 32u
/* Per match, over names of a few dozen bytes: steps, backtracking depth, KiB of heap. */
#define MATCH_STEPS 100000u
#define MATCH_DEPTH 1000u
#define MATCH_HEAP_KIB 256u

struct WholeRegex {
        pcre2_code *code;
        pcre2_match_data *match;
        pcre2_match_context *limits;
};

typedef struct Frame {
        uint64_t total;   /* expanded size of the group so far */
        uint64_t last;    /* expanded size of its last item, which a quantifier repeats */
} Frame;

static uint64_t capped(uint64_t v) {
        return MIN(v, (uint64_t) EXPANDED_BUDGET + 1);
}

static void add_item(Frame *f, uint64_t size) {
        f->total = capped(f->total + size);
        f->last = size;
}

/* The last item written @times times in all. */
static void repeat_last(Frame *f, uint64_t times) {
        uint64_t extra = capped(f->last * (times > 0 ? times - 1 : 0));

        f->total = capped(f->total + extra);
        f->last = capped(f->last * MAX(times, 1u));
}

/* Bytes of the escape at @p ("\d", "\x{41}", "\cA"). */
static size_t escape_length(const char *p) {
        const char *close;

        if (!p[1])
                return 1;
        if (strchr("xopPgkN", p[1]) && p[2] == '{' && (close = strchr(p + 3, '}')))
                return close - p + 1;
        if (p[1] == 'c' && p[2])
                return 3;
        return 2;
}

/* Bytes of the character class at @p, "[" to its "]" (or to the end when unclosed). */
static size_t class_length(const char *p) {
        size_t j = 1;

        if (p[j] == '^')
                j++;
        if (p[j] == ']')
                j++;
        while (p[j] && p[j] != ']') {
                const char *close;

                if (p[j] == '\\' && p[j + 1])
                        j += 2;
                else if (p[j] == '[' && p[j + 1] == ':' && (close = strstr(p + j + 2, ":]")))
                        j = close - p + 2;
                else
                        j++;
        }
        return p[j] ? j + 1 : j;
}

/* A counted quantifier at @p ("{3}", "{2,}", "{1,100}", "{,5}"): its length, and in
 * *@ret_times the most copies it writes ({2,} writes two and a loop). 0 if @p is none. */
static size_t bound_length(const char *p, uint64_t *ret_times) {
        uint64_t low = 0, high = 0;
        bool digits = false, comma = false, high_digits = false;
        size_t j = 1;

        for (; p[j] >= '0' && p[j] <= '9'; j++, digits = true)
                low = capped(low * 10 + (uint64_t) (p[j] - '0'));
        if (p[j] == ',') {
                comma = true;
                for (j++; p[j] >= '0' && p[j] <= '9'; j++, high_digits = true)
                        high = capped(high * 10 + (uint64_t) (p[j] - '0'));
        }
        if (p[j] != '}' || (!digits && !high_digits))
                return 0;
        *ret_times = !comma ? low : high_digits ? high : capped(low + 1);
        return j + 1;
}

int regex_check_expansion(const char *pattern) {
        Frame stack[NEST_MAX + 1] = {};
        size_t depth = 0, len;
        uint64_t times;

        for (const char *p = pattern; *p; p += len) {
                len = 1;
                if (*p == '\\')
                        add_item(&stack[depth], 1), len = escape_length(p);
                else if (*p == '[')
                        add_item(&stack[depth], 1), len = class_length(p);
                else if (*p == '(') {
                        if (depth == NEST_MAX)
                                return -E2BIG;
                        stack[++depth] = (Frame) {};
                } else if (*p == ')' && depth > 0) {
                        depth--;
                        add_item(&stack[depth], MAX(stack[depth + 1].total, 1u));
                } else if (*p == '{' && (len = bound_length(p, &times)) > 0)
                        repeat_last(&stack[depth], times);
                else if (!strchr("*+?|^$", *p))
                        add_item(&stack[depth], 1), len = 1;
                else
                        len = 1;
                if (stack[depth].total > EXPANDED_BUDGET)
                        return -E2BIG;
        }
        return 0;
}

WholeRegex *whole_regex_free(WholeRegex *re) {
        if (!re)
                return NULL;
        sym_pcre2_match_context_free(re->limits);
        sym_pcre2_match_data_free(re->match);
        sym_pcre2_code_free(re->code);
        return mfree(re);
}

static void compile_context_freep(pcre2_compile_context **c) {
        if (*c)
                sym_pcre2_compile_context_free(*c);
}

static pcre2_code *compile_bounded(const char *pattern) {
        _cleanup_(compile_context_freep) pcre2_compile_context *cc = sym_pcre2_compile_context_create(NULL);
        PCRE2_SIZE offset;
        int error;

        if (!cc)
                return NULL;
        (void) sym_pcre2_set_max_pattern_length(cc, WHOLE_REGEX_MAX_PATTERN);
        (void) sym_pcre2_set_parens_nest_limit(cc, NEST_MAX);
        /* Anchored at both ends: the whole string must match, as std::regex_match. */
        return sym_pcre2_compile((PCRE2_SPTR) pattern, PCRE2_ZERO_TERMINATED,
                                 PCRE2_ANCHORED | PCRE2_ENDANCHORED | PCRE2_NEVER_BACKSLASH_C, &error, &offset, cc);
}

DEFINE_TRIVIAL_CLEANUP_FUNC(WholeRegex *, whole_regex_free);

int whole_regex_compile(const char *pattern, WholeRegex **ret, const char **ret_reason) {
        _cleanup_(whole_regex_freep) WholeRegex *re = NULL;

        if (strlen(pattern) > WHOLE_REGEX_MAX_PATTERN) {
                *ret_reason = "longer than 256 bytes";
                return -EINVAL;
        }
        if (regex_check_expansion(pattern) < 0) {
                *ret_reason = REGEX_EXPANSION_REASON;
                return -EINVAL;
        }
        if (dlopen_pcre2(ret_reason) < 0)
                return -EINVAL;
        re = calloc(1, sizeof(WholeRegex));
        if (!re)
                return -ENOMEM;
        re->code = compile_bounded(pattern);
        if (!re->code) {
                *ret_reason = "not a regular expression PCRE2 compiles within its limits";
                return -EINVAL;
        }
        re->match = sym_pcre2_match_data_create_from_pattern(re->code, NULL);
        re->limits = sym_pcre2_match_context_create(NULL);
        if (!re->match || !re->limits)
                return -ENOMEM;
        (void) sym_pcre2_set_match_limit(re->limits, MATCH_STEPS);
        (void) sym_pcre2_set_depth_limit(re->limits, MATCH_DEPTH);
        (void) sym_pcre2_set_heap_limit(re->limits, MATCH_HEAP_KIB);
        *ret = TAKE_PTR(re);
        return 0;
}

bool whole_regex_match(const WholeRegex *re, const char *s) {
        return sym_pcre2_match(re->code, (PCRE2_SPTR) s, strlen(s), 0, 0, re->match, re->limits) >= 0;
}
