/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/trace/whole-regex.c: a regex compiled once and matched against whole strings, its
 * cost bounded. Patterns whose counted repetitions multiply past the budget are refused
 * before PCRE2 sees them, in microseconds; ordinary patterns match whole names only.
 */
#include <errno.h>
#include <glib.h>
#include <string.h>

#include "whole-regex.h"

G_DEFINE_AUTOPTR_CLEANUP_FUNC(WholeRegex, whole_regex_free)

static void assert_refused(const char *pattern) {
        g_autoptr(WholeRegex) re = NULL;
        const char *reason = NULL;
        gint64 begin = g_get_monotonic_time();

        g_assert_cmpint(whole_regex_compile(pattern, &re, &reason), ==, -EINVAL);
        g_assert_null(re);
        g_assert_nonnull(reason);
        g_test_message("'%.40s': %s, in %" G_GINT64_FORMAT " us", pattern, reason, g_get_monotonic_time() - begin);
}

static WholeRegex *compiled(const char *pattern) {
        WholeRegex *re = NULL;
        const char *reason = NULL;

        g_assert_cmpint(whole_regex_compile(pattern, &re, &reason), ==, 0);
        g_assert_nonnull(re);
        return re;
}

static void test_pathological_refused(void) {
        g_autofree char *too_long = g_strnfill(WHOLE_REGEX_MAX_PATTERN + 1, 'a');
        g_autoptr(GString) deep = g_string_new("");

        assert_refused("((a{1,100}){1,100}){1,100}");
        assert_refused("(a{1,100}){1,100}");
        assert_refused("((((a{10}){10}){10}){10})");
        assert_refused("(x{2,}){3000}");
        assert_refused(too_long);
        for (int i = 0; i < 40; i++)
                g_string_append_c(deep, '(');
        g_string_append_c(deep, 'a');
        for (int i = 0; i < 40; i++)
                g_string_append_c(deep, ')');
        assert_refused(deep->str);
        assert_refused("(");
        assert_refused("a[b");
}

static void test_whole_names(void) {
        g_autoptr(WholeRegex) prefix = compiled("trace.*");
        g_autoptr(WholeRegex) alt = compiled("tracebus|perfetto");
        g_autoptr(WholeRegex) counted = compiled("[a-z]{3,20}[0-9]?");
        g_autoptr(WholeRegex) klass = compiled("[[:alpha:]]+");
        g_autoptr(WholeRegex) escape = compiled("a\\.b\\x{41}");
        g_autoptr(WholeRegex) exact = compiled("trace");

        g_assert_true(whole_regex_match(prefix, "tracebus"));
        g_assert_true(whole_regex_match(prefix, "trace"));
        g_assert_false(whole_regex_match(prefix, "mytracebus"));
        g_assert_true(whole_regex_match(alt, "tracebus"));
        g_assert_true(whole_regex_match(alt, "perfetto"));
        g_assert_false(whole_regex_match(alt, "tracebus2"));
        g_assert_false(whole_regex_match(alt, "xperfetto"));
        g_assert_true(whole_regex_match(counted, "bash7"));
        g_assert_false(whole_regex_match(counted, "ab"));
        g_assert_true(whole_regex_match(klass, "Xorg"));
        g_assert_false(whole_regex_match(klass, "Xorg "));
        g_assert_true(whole_regex_match(escape, "a.bA"));
        g_assert_false(whole_regex_match(escape, "axbA"));
        /* "$" would match before a final newline; the whole name must match. */
        g_assert_false(whole_regex_match(exact, "trace\n"));
        g_assert_true(whole_regex_match(exact, "trace"));
}

/* A match that would backtrack without end stops at its cap: no match, and soon. */
static void test_match_capped(void) {
        g_autoptr(WholeRegex) re = compiled("(a|aa)+(a|aa)+(a|aa)+b");
        gint64 begin = g_get_monotonic_time();

        g_assert_false(whole_regex_match(re, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"));
        g_assert_cmpint(g_get_monotonic_time() - begin, <, G_USEC_PER_SEC);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/whole-regex/pathological-refused", test_pathological_refused);
        g_test_add_func("/whole-regex/whole-names", test_whole_names);
        g_test_add_func("/whole-regex/match-capped", test_match_capped);
        return g_test_run();
}
