/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * FtraceConfig.print_filter: which ftrace/print records (what programs write to
 * trace_marker) reach the trace. The kernel has no filter file for ftrace/print, so the
 * rules run here, on the record, before it is encoded. Semantics as Perfetto v58's
 * ftrace_config.proto states them: rules in order, the first match decides, no match
 * keeps the print.
 */
#include <assert.h>
#include <ctype.h>

#include "ftrace-parser-local.h"

static bool has_prefix(const char *s, size_t n, const char *prefix) {
        size_t k = strlen(prefix);

        return k <= n && memcmp(s, prefix, k) == 0;
}

/* "<type>|<digits>|<prefix>...": the shape atrace gives "B|1234|name". */
static bool atrace_matches(const FtracePrintRule *r, const char *s, size_t n) {
        size_t i, k = strlen(r->type);

        if (!has_prefix(s, n, r->type) || k >= n || s[k] != '|')
                return false;
        for (i = k + 1; i < n && s[i] != '|'; i++)
                if (!isdigit((unsigned char) s[i]))
                        return false;
        if (i >= n)
                return false;
        i++;
        return has_prefix(s + i, n - i, r->prefix ?: "");
}

bool ftrace_print_filter_allows(const FtracePrintRule *rules, size_t n, const char *buf, size_t size) {
        size_t len = strnlen(buf, size);

        for (size_t i = 0; i < n; i++) {
                bool match = rules[i].type ? atrace_matches(&rules[i], buf, len)
                                           : has_prefix(buf, len, rules[i].prefix ?: "");
                if (match)
                        return rules[i].allow;
        }
        return true;
}

static void print_rules_free(FtracePrintRule *rules, size_t n) {
        for (size_t i = 0; rules && i < n; i++) {
                free((char *) rules[i].type);
                free((char *) rules[i].prefix);
        }
        free(rules);
}

void ftrace_parser_free_print_filter(FtraceParser *p) {
        print_rules_free(p->print_rules, p->n_print_rules);
        p->print_rules = NULL;
        p->n_print_rules = 0;
}

int ftrace_parser_set_print_filter(FtraceParser *p, const FtracePrintRule *rules, size_t n) {
        FtracePrintRule *copy;

        assert(p);
        assert(rules || n == 0);

        copy = n > 0 ? calloc(n, sizeof(*copy)) : NULL;
        if (n > 0 && !copy)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                copy[i].allow = rules[i].allow;
                copy[i].prefix = strdup(rules[i].prefix ?: "");
                copy[i].type = rules[i].type ? strdup(rules[i].type) : NULL;
                if (!copy[i].prefix || (rules[i].type && !copy[i].type)) {
                        print_rules_free(copy, n);
                        return -ENOMEM;
                }
        }
        ftrace_parser_free_print_filter(p);
        p->print_rules = copy;
        p->n_print_rules = n;
        return 0;
}
