/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Decodes the kernel's ring-buffer pages (per_cpu/cpuN/trace_pipe_raw) into
 * Perfetto FtraceEventBundle messages, using the layout the running kernel
 * describes in events/header_page and events/<group>/<event>/format.
 *
 * All functions return 0 or a positive count on success, a negative errno on failure.
 */

typedef struct FtraceParser FtraceParser;
typedef struct FtraceBundle FtraceBundle;

int ftrace_parser_new(FtraceParser **ret);
FtraceParser *ftrace_parser_free(FtraceParser *p);

/* The text of events/header_page. Must come before any page is parsed. */
int ftrace_parser_load_header_page(FtraceParser *p, const char *text, size_t len);

/* The text of events/@group/<name>/format. Events that were not added are skipped when
 * found in a page (and counted in ftrace_bundle_n_skipped()). */
int ftrace_parser_add_event(FtraceParser *p, const char *group, const char *text, size_t len);

/* A bundle collects the events of one CPU between two packs. */
/* With @compact_sched, sched_switch and sched_waking go into FtraceEventBundle.compact_sched. */
int ftrace_bundle_new(uint32_t cpu, bool compact_sched, FtraceBundle **ret);
FtraceBundle *ftrace_bundle_free(FtraceBundle *b);

/* Decodes one page (@size bytes, normally the page size) and appends its events to @b.
 * A page whose header says events were lost sets the bundle's lost_events.
 * Returns the number of events appended, or -EBADMSG for a malformed page (the
 * events decoded before the damage are kept, and an FtraceError is recorded). */
int ftrace_parser_parse_page(FtraceParser *p, const void *page, size_t size, FtraceBundle *b);

size_t ftrace_bundle_n_events(const FtraceBundle *b);
bool ftrace_bundle_lost_events(const FtraceBundle *b);
uint64_t ftrace_bundle_last_timestamp(const FtraceBundle *b);

/* Serializes the collected events as an FtraceEventBundle message (not wrapped in a
 * TracePacket) into a malloc'd buffer, with cpu and previous_bundle_end_timestamp set,
 * then empties the bundle for the next round, remembering the last timestamp. */
int ftrace_bundle_pack(FtraceBundle *b, uint8_t **ret_buf, size_t *ret_len);
