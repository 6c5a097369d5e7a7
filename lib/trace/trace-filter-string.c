/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "trace-filter-local.h"
#include "whole-regex.h"

/* What a redacted group becomes, as Perfetto writes it: this text cut to the group's
 * length, then dashes for the rest. The string keeps its length, so the packet does. */
static const char REDACTED[] = "P60REDACTED";

/* Where the payload of an atrace string ("B|tgid|payload") starts, or NULL. "E|..." has
 * none, and the first '|' is at index 1, so the search starts at index 2. */
static const char *atrace_payload(const char *s, size_t len) {
        const char *pipe;

        if (len <= 2 || s[0] == 'E')
                return NULL;
        pipe = memchr(s + 2, '|', len - 2);
        return pipe ? pipe + 1 : NULL;
}

static bool payload_starts_with(const FilterRule *rule, const char *payload, const char *s, size_t len) {
        return payload && (size_t) (s + len - payload) >= rule->prefix_len &&
               memcmp(payload, rule->prefix, rule->prefix_len) == 0;
}

/* Overwrites every group the last match of @rule captured. */
static void redact_groups(const FilterRule *rule, char *s) {
        uint32_t n = sym_pcre2_get_ovector_count(rule->match);
        PCRE2_SIZE *ov = sym_pcre2_get_ovector_pointer(rule->match);

        for (uint32_t g = 1; g < n; g++) {
                size_t start = ov[2 * g], end = ov[2 * g + 1], glen, rlen;

                if (start == PCRE2_UNSET || end < start)
                        continue;
                glen = end - start;
                rlen = MIN(glen, sizeof(REDACTED) - 1);
                memcpy(s + start, REDACTED, rlen);
                memset(s + start + rlen, '-', glen - rlen);
        }
}

/* The whole of @s matches @rule's pattern (std::regex_match's meaning). */
static bool match_whole(const FilterRule *rule, const char *s, size_t len) {
        return sym_pcre2_match(rule->re, (PCRE2_SPTR) s, len, 0, PCRE2_ANCHORED | PCRE2_ENDANCHORED,
                               rule->match, rule->limits) >= 0;
}

/* Every match of @rule in @s, left to right, redacted; true if there was one. */
static bool redact_all(const FilterRule *rule, char *s, size_t len) {
        bool any = false;
        size_t at = 0;

        while (at <= len && sym_pcre2_match(rule->re, (PCRE2_SPTR) s, len, at, 0, rule->match, rule->limits) >= 0) {
                PCRE2_SIZE *ov = sym_pcre2_get_ovector_pointer(rule->match);

                redact_groups(rule, s);
                any = true;
                at = ov[1] > ov[0] ? ov[1] : ov[1] + 1;
        }
        return any;
}

int trace_filter_string(const TraceFilter *f, char *s, size_t len) {
        const char *payload = NULL;
        bool payload_found = false;

        for (size_t i = 0; i < f->n_rules; i++) {
                const FilterRule *rule = &f->rules[i];
                bool atrace = rule->policy != TRACE_FILTER_MATCH_REDACT_GROUPS &&
                              rule->policy != TRACE_FILTER_MATCH_BREAK;

                if (atrace && !payload_found) {
                        payload = atrace_payload(s, len);
                        payload_found = true;
                }
                if (atrace && !payload_starts_with(rule, payload, s, len))
                        continue;
                if (rule->policy == TRACE_FILTER_ATRACE_REPEATED_SEARCH_REDACT_GROUPS) {
                        if (redact_all(rule, s, len))
                                return 1;
                        continue;
                }
                if (!match_whole(rule, s, len))
                        continue;
                /* A "break" rule that matches ends the chain with the string untouched. */
                if (rule->policy == TRACE_FILTER_MATCH_BREAK || rule->policy == TRACE_FILTER_ATRACE_MATCH_BREAK)
                        return 0;
                redact_groups(rule, s);
                return 1;
        }
        return 0;
}

int trace_filter_add_rule(TraceFilter *f, int policy, const char *pattern, const char *atrace_prefix,
                          const char **ret_reason) {
        FilterRule rule = { .policy = policy }, *rules;
        PCRE2_SIZE offset;
        int error;

        if (policy < TRACE_FILTER_MATCH_REDACT_GROUPS || policy > TRACE_FILTER_ATRACE_REPEATED_SEARCH_REDACT_GROUPS)
                return *ret_reason = "a string filter rule has no known policy", -EINVAL;
        /* Bounded before it is compiled, as a producer_name_regex is. */
        if (regex_check_expansion(pattern ?: "") < 0)
                return *ret_reason = "a string filter rule's regex_pattern is refused: " REGEX_EXPANSION_REASON, -EINVAL;
        if (dlopen_pcre2(ret_reason) < 0)
                return -EINVAL;   /* the config cannot be honoured here: refused, saying why */
        rules = realloc(f->rules, (f->n_rules + 1) * sizeof(FilterRule));
        if (!rules)
                return -ENOMEM;
        f->rules = rules;
        rule.re = sym_pcre2_compile((PCRE2_SPTR) (pattern ?: ""), PCRE2_ZERO_TERMINATED, 0, &error, &offset, NULL);
        if (!rule.re)
                return *ret_reason = "a string filter rule's regex_pattern does not compile", -EINVAL;
        rule.match = sym_pcre2_match_data_create_from_pattern(rule.re, NULL);
        rule.limits = sym_pcre2_match_context_create(NULL);
        rule.prefix = strdup(atrace_prefix ?: "");
        if (!rule.match || !rule.limits || !rule.prefix) {
                sym_pcre2_match_context_free(rule.limits);
                sym_pcre2_match_data_free(rule.match);
                sym_pcre2_code_free(rule.re);
                free(rule.prefix);
                return -ENOMEM;
        }
        (void) sym_pcre2_set_match_limit(rule.limits, FILTER_MATCH_LIMIT);
        rule.prefix_len = strlen(rule.prefix);
        f->rules[f->n_rules++] = rule;
        return 0;
}

void trace_filter_rules_free(TraceFilter *f) {
        for (size_t i = 0; i < f->n_rules; i++) {
                sym_pcre2_match_data_free(f->rules[i].match);
                sym_pcre2_match_context_free(f->rules[i].limits);
                sym_pcre2_code_free(f->rules[i].re);
                free(f->rules[i].prefix);
        }
        f->rules = mfree(f->rules);
        f->n_rules = 0;
}
