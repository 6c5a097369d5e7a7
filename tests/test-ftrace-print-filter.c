/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit: FtraceConfig.print_filter's rules (lib/ftrace/ftrace-print-filter.c) against what
 * Perfetto v58's ftrace_config.proto says of them: rules in order, the first match
 * decides; no match allows; a prefix matches the beginning of buf exactly; atrace_msg
 * matches "<type>|pid|<prefix>..."; an empty prefix with allow=false denies everything.
 */
#include <glib.h>
#include <string.h>

#include "ftrace-parser.h"

static bool allows(const FtracePrintRule *r, size_t n, const char *buf) {
        return ftrace_print_filter_allows(r, n, buf, strlen(buf) + 1);
}

static void test_no_rules(void) {
        g_assert_true(allows(NULL, 0, "anything"));
        g_assert_true(allows(NULL, 0, ""));
}

static void test_first_match_decides(void) {
        const FtracePrintRule r[] = {
                { NULL, "keep", true }, { NULL, "ke", false }, { NULL, "", false },
        };

        g_assert_true(allows(r, 3, "keep me"));
        g_assert_false(allows(r, 3, "kettle"));
        g_assert_false(allows(r, 3, "other"));
        g_assert_false(allows(r, 3, ""));
        /* Without the last rule, what matches nothing is allowed. */
        g_assert_true(allows(r, 2, "other"));
        /* A prefix longer than buf does not match. */
        g_assert_true(allows(r, 1, "kee"));
}

static void test_atrace(void) {
        const FtracePrintRule r[] = {
                { "B", "binder", false }, { "C", "", false },
        };

        g_assert_false(allows(r, 2, "B|1234|binder transaction"));
        g_assert_true(allows(r, 2, "B|1234|other"));
        g_assert_false(allows(r, 2, "C|1|counter|5"));
        g_assert_true(allows(r, 2, "E|1234"));
        /* The pid must be digits, closed by '|'. */
        g_assert_true(allows(r, 2, "B|12a|binder"));
        g_assert_true(allows(r, 2, "B|1234"));
        g_assert_true(allows(r, 2, "Binder|1|binder"));
        /* The empty pid is allowed by the rule's shape: digits, possibly none. */
        g_assert_false(allows(r, 2, "B||binder"));
}

static void test_bounded(void) {
        const FtracePrintRule r[] = { { NULL, "abcdef", false } };
        const char buf[3] = { 'a', 'b', 'c' };   /* no NUL: the size bounds it */

        g_assert_true(ftrace_print_filter_allows(r, 1, buf, sizeof(buf)));
        g_assert_false(ftrace_print_filter_allows(r, 1, "abcdefg", 7));
        g_assert_true(ftrace_print_filter_allows(r, 1, "abcdefg", 5));
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/ftrace-print-filter/no-rules", test_no_rules);
        g_test_add_func("/ftrace-print-filter/first-match-decides", test_first_match_decides);
        g_test_add_func("/ftrace-print-filter/atrace", test_atrace);
        g_test_add_func("/ftrace-print-filter/bounded", test_bounded);
        return g_test_run();
}
