/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

#include "macro.h"
#include "pcre2-dlopen.h"
#include "trace-filter.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(TraceFilter *, trace_filter_free);

/* A field's state in the tables: not kept, kept as is, kept through the string rules, or
 * 1 + the index of the message type its content is filtered as. */
#define FILTER_DROP 0u
#define FILTER_SIMPLE UINT32_MAX
#define FILTER_STRING (UINT32_MAX - 1u)

/* A pattern's backtracking per string: a rule that would take longer does not match, so
 * a caller's regex cannot stall the recorder (std::regex in Perfetto has no bound). */
#define FILTER_MATCH_LIMIT 100000u

/* Field ids below this are looked up by index, the rest through ranges, as the bytecode
 * gives few message types many fields past it. */
#define FILTER_DIRECT_LIMIT 128u

typedef struct FilterRule {
        int policy;
        pcre2_code *re;
        pcre2_match_data *match;
        pcre2_match_context *limits;  /* bounds each match's backtracking */
        char *prefix;                 /* atrace_payload_starts_with */
        size_t prefix_len;
} FilterRule;

struct TraceFilter {
        /* Message i: table[offset[i]] direct states, then (start, end, state) ranges up to
         * table[offset[i + 1]]; n_direct[i] states are direct. */
        uint32_t *table;
        size_t n_table;
        uint32_t *offset;
        uint32_t *n_direct;
        uint32_t n_messages;
        uint32_t root;                /* the message type of Trace.packet */
        FilterRule *rules;
        size_t n_rules;
};

uint32_t trace_filter_query(const TraceFilter *f, uint32_t msg, uint32_t field);
void trace_filter_rules_free(TraceFilter *f);
