/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * TraceConfig.trace_filter as Perfetto v58 applies it: a bytecode naming, for each message
 * type reachable from perfetto.protos.Trace, the fields kept; every other field is dropped
 * and kept sub-messages are filtered in turn. String fields the bytecode marks "filter
 * string" go through the string_filter_chain rules (regex redaction of atrace and print
 * payloads). The bytecode's root is Trace; packets are filtered from Trace.packet down.
 *
 * A filter is immutable once built, but its rules keep per-rule match state: one thread
 * filters with it at a time (a session's recorder thread).
 */

typedef struct TraceFilter TraceFilter;

/* TraceConfig.TraceFilter.StringFilterPolicy. */
typedef enum TraceFilterPolicy {
        TRACE_FILTER_MATCH_REDACT_GROUPS = 1,
        TRACE_FILTER_ATRACE_MATCH_REDACT_GROUPS = 2,
        TRACE_FILTER_MATCH_BREAK = 3,
        TRACE_FILTER_ATRACE_MATCH_BREAK = 4,
        TRACE_FILTER_ATRACE_REPEATED_SEARCH_REDACT_GROUPS = 5,
} TraceFilterPolicy;

/* How deep filtered messages nest: a deeper packet is dropped as malformed. */
#define TRACE_FILTER_MAX_DEPTH 64u
/* The most memory one filter's tables take. */
#define TRACE_FILTER_MAX_TABLE_BYTES (8u << 20)

/* Parses and checks @bytecode (varint words, FNV-1a checksum last). -EINVAL for a bad
 * bytecode (*ret_reason says why, static text), -E2BIG over TRACE_FILTER_MAX_TABLE_BYTES. */
int trace_filter_new(const uint8_t *bytecode, size_t len, TraceFilter **ret, const char **ret_reason);
TraceFilter *trace_filter_free(TraceFilter *f);

/* Appends a string_filter_chain rule, applied in order. -EINVAL for an unknown policy, a
 * pattern over regex_check_expansion()'s bound (refused before it is compiled) or one
 * that does not compile (*ret_reason static text). */
int trace_filter_add_rule(TraceFilter *f, int policy, const char *pattern, const char *atrace_prefix,
                          const char **ret_reason);

/* Filters the packed TracePacket @in (@len bytes, no Trace framing) into @out, which has
 * room for @len bytes (the output is never longer). Returns the output length, or -EBADMSG
 * for a malformed or too deeply nested packet (to be dropped, as Perfetto does). */
ssize_t trace_filter_packet(const TraceFilter *f, const uint8_t *in, size_t len, uint8_t *out);

/* Applies the string rules to @s in place; 1 when a rule redacted it (for the tests). */
int trace_filter_string(const TraceFilter *f, char *s, size_t len);
