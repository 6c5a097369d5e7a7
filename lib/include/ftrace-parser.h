/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <stdint.h>

#include "deflate.h"
#include "ksyms.h"

/*
 * Decodes the kernel's ring-buffer pages (per_cpu/cpuN/trace_pipe_raw) into
 * Perfetto FtraceEventBundle messages, using the layout the running kernel
 * describes in events/header_page and events/<group>/<event>/format.
 *
 * All functions return 0 or a positive count on success, a negative errno on failure.
 */

typedef struct FtraceParser FtraceParser;
typedef struct FtraceBundle FtraceBundle;

/* FtraceEventBundle.FtraceError.status values (Perfetto's FtraceParseStatus). */
typedef enum FtraceParseStatus {
        FTRACE_STATUS_OK = 1,
        FTRACE_STATUS_ABI_INVALID_PAGE_HEADER = 4,
        FTRACE_STATUS_ABI_SHORT_EVENT_HEADER = 5,
        FTRACE_STATUS_ABI_NULL_PADDING = 6,
        FTRACE_STATUS_ABI_SHORT_PADDING_LENGTH = 7,
        FTRACE_STATUS_ABI_INVALID_PADDING_LENGTH = 8,
        FTRACE_STATUS_ABI_SHORT_TIME_EXTEND = 9,
        FTRACE_STATUS_ABI_SHORT_TIME_STAMP = 10,
        FTRACE_STATUS_ABI_SHORT_DATA_LENGTH = 11,
        FTRACE_STATUS_ABI_ZERO_DATA_LENGTH = 12,
        FTRACE_STATUS_ABI_INVALID_DATA_LENGTH = 13,
        FTRACE_STATUS_ABI_SHORT_EVENT_ID = 14,
        FTRACE_STATUS_ABI_END_OVERFLOW = 15,
        FTRACE_STATUS_SHORT_COMPACT_EVENT = 16,
        FTRACE_STATUS_INVALID_EVENT = 17,
} FtraceParseStatus;

/* Totals over the parser's life, for logs and tests. */
typedef struct FtraceParserStats {
        uint64_t pages;             /* pages given to ftrace_parser_parse_page() */
        uint64_t bad_pages;         /* ... of which malformed (-EBADMSG) */
        uint64_t lost_pages;        /* ... whose header had the missed-events flag */
        uint64_t events;            /* events appended to bundles */
        uint64_t skipped;           /* data records of events that were not added */
        uint64_t time_extends;      /* time-extend records */
        uint64_t time_stamps;       /* absolute time-stamp records */
        uint64_t paddings;          /* padding records (discarded events, page tails) */
        uint64_t filtered;          /* ftrace/print records the print filter dropped */
} FtraceParserStats;

int ftrace_parser_new(FtraceParser **ret);
FtraceParser *ftrace_parser_free(FtraceParser *p);

/* The text of events/header_page. Must come before any page is parsed. */
int ftrace_parser_load_header_page(FtraceParser *p, const char *text, size_t len);

/* The text of events/@group/<name>/format. Events that were not added are skipped when
 * found in a page (and counted in ftrace_bundle_n_skipped()). Adding an event id that
 * is already known is a no-op. Returns the event id. */
int ftrace_parser_add_event(FtraceParser *p, const char *group, const char *text, size_t len);

void ftrace_parser_get_stats(const FtraceParser *p, FtraceParserStats *ret);

#define FTRACE_ADDRESS_KEY_SIZE 16

/* From now on (for the events added before and after), kernel addresses are written as
 * a keyed hash under @key (FTRACE_ADDRESS_KEY_SIZE random bytes, one key per trace), as
 * kptr_restrict does for %p: the same address gives the same value within the trace,
 * NULL stays 0, and no value is a kernel address (the top 16 bits are clear). Addresses
 * are the fields whose type is a pointer, the unsigned long fields that the event's
 * print fmt casts to a pointer, and a few fields named for code addresses (call_site,
 * ip, parent_ip, caller_ip...: ftrace-event-info.c lists them). */
int ftrace_parser_hash_addresses(FtraceParser *p, const uint8_t key[FTRACE_ADDRESS_KEY_SIZE]);

/* One rule of Perfetto's FtraceConfig.print_filter. With @type NULL the rule matches an
 * ftrace/print whose buf starts with @prefix; otherwise a buf of the atrace form
 * "<type>|<digits>|<prefix>...". The first rule that matches decides (@allow); a print
 * that no rule matches is kept. */
typedef struct FtracePrintRule {
        const char *type;
        const char *prefix;
        bool allow;
} FtracePrintRule;

/* From now on, ftrace/print events the rules refuse are dropped before they are encoded
 * (counted in FtraceParserStats.filtered). The rules are copied; n = 0 removes them. */
int ftrace_parser_set_print_filter(FtraceParser *p, const FtracePrintRule *rules, size_t n);
/* Whether @buf (at most @size bytes, up to a NUL) passes @rules: exposed for tests. */
bool ftrace_print_filter_allows(const FtracePrintRule *rules, size_t n, const char *buf, size_t size);

/* Whether tracebus writes events @group/@name as a typed FtraceEvent field rather than a
 * GenericFtraceEvent (what FtraceConfig.disable_generic_events leaves out). */
bool ftrace_event_is_typed(const char *group, const char *name);
/* symbolize_ksyms: from now on (for the events added before and after), an address
 * field (as above) that falls in a function of @ksyms is written as that function's iid
 * (from 1, one per function, in the order first met), and the function's name is to be
 * written once as InternedData.kernel_symbols {iid, str} on the ftrace sequence, before
 * the bundle (ftrace_parser_take_new_symbols()). Addresses in no function are written as
 * without it (hashed, or as they are). Takes a reference on @ksyms. -EBUSY if set. */
int ftrace_parser_symbolize(FtraceParser *p, Ksyms *ksyms);
/* The symbols (indexes into the Ksyms) that got an iid since the last call, in iid
 * order: the first one's iid in *ret_first_iid, the next one's that plus one, and so on.
 * Valid until the next parse. */
size_t ftrace_parser_take_new_symbols(FtraceParser *p, const uint32_t **ret_symbols, uint32_t *ret_first_iid);
/* Rotation: a new trace begins (its interned data cleared): every function gets an
 * iid again, from 1, and is named again. Call it with no symbol left to take. */
void ftrace_parser_forget_symbols(FtraceParser *p);

/* The data length in the page's commit word (the bytes of records the page holds). */
ssize_t ftrace_parser_page_data_size(const FtraceParser *p, const void *page, size_t size);
/* Whether the header of @page has the missed-events flag, so that a reader can pack
 * the current bundle first and give the loss its own bundle, as traced_probes does.
 * Returns 1, 0, or -EBADMSG for a page too short to have a header. */
int ftrace_parser_page_lost_events(const FtraceParser *p, const void *page, size_t size);

/* A bundle collects the events of one CPU between two packs. */
/* With @compact_sched, sched_switch and sched_waking go into FtraceEventBundle.compact_sched. */
int ftrace_bundle_new(uint32_t cpu, bool compact_sched, FtraceBundle **ret);
FtraceBundle *ftrace_bundle_free(FtraceBundle *b);

/* Decodes one page (@size bytes, normally the page size) and appends its events to @b.
 * A page whose header says events were lost sets the bundle's lost_events.
 * Returns the number of events appended, or -EBADMSG for a malformed page (the
 * events decoded before the damage are kept, and an FtraceError is recorded). */
int ftrace_parser_parse_page(FtraceParser *p, const void *page, size_t size, FtraceBundle *b);

/* Events appended since the last pack (full and compact). */
size_t ftrace_bundle_n_events(const FtraceBundle *b);
/* Data records of unknown events met since the last pack. */
size_t ftrace_bundle_n_skipped(const FtraceBundle *b);
/* FtraceErrors recorded since the last pack. */
size_t ftrace_bundle_n_errors(const FtraceBundle *b);
bool ftrace_bundle_lost_events(const FtraceBundle *b);
/* FtraceEventBundle.ftrace_clock (Perfetto's FtraceClock): 0 (unset) for the boot clock,
 * FTRACE_CLOCK_MONO_RAW when the instance's trace_clock is mono_raw, so that
 * trace_processor converts the events' timestamps from CLOCK_MONOTONIC_RAW. */
#define FTRACE_CLOCK_MONO_RAW 4
void ftrace_bundle_set_clock(FtraceBundle *b, uint32_t ftrace_clock);
/* Marks the bundle as coming after lost events that no page header reported (the kernel
 * cleared the buffer), so that the trace says where data is missing. */
void ftrace_bundle_set_lost_events(FtraceBundle *b);
/* Timestamp of the last event appended, or of the previous bundle's last event. */
uint64_t ftrace_bundle_last_timestamp(const FtraceBundle *b);

/* The pids events named (common_pid, sched_switch's next_pid) since the last call, mostly
 * without repeats; valid until the next parse. For describing threads first seen. */
size_t ftrace_bundle_take_pids(FtraceBundle *b, const int32_t **ret);
/* Forgets which pids were noted, so that each is noted again when events next name it:
 * for a new chunk of a rotated trace, which describes its threads afresh (a thread that
 * ended before the chunk's /proc scan, its last events still in the kernel's buffer, is
 * otherwise never looked up for it). */
void ftrace_bundle_forget_pids(FtraceBundle *b);
/* The pids task_rename events named since the last call: their threads' names changed. */
size_t ftrace_bundle_take_renamed(FtraceBundle *b, const int32_t **ret);

/* What a task_newtask or task_rename event says of a task: enough to describe a task that
 * is gone from /proc by the time the service looks (one that lived a millisecond). */
typedef struct FtraceTaskNote {
        uint64_t timestamp;
        uint64_t clone_flags;     /* task_newtask: CLONE_THREAD makes it a thread of @creator's process */
        int32_t pid;
        int32_t creator;          /* task_newtask: the thread that created it (common_pid) */
        bool newtask;             /* task_newtask, else task_rename */
        char comm[16];            /* task_newtask: its comm at birth; task_rename: its new comm */
} FtraceTaskNote;

/* The task notes since the last call, in the order of the events; valid until the next
 * parse. At most FTRACE_MAX_TASK_NOTES are kept between two takes. */
#define FTRACE_MAX_TASK_NOTES 65536
size_t ftrace_bundle_take_tasks(FtraceBundle *b, const FtraceTaskNote **ret);

/* Serializes the collected events as an FtraceEventBundle message (not wrapped in a
 * TracePacket), with cpu and previous_bundle_end_timestamp set, where it is to stay: its
 * exact size, then the bytes at @dst (or none, @dst NULL: the bundle is dropped). Then
 * empties the bundle for the next round, remembering the last timestamp. Nothing may be
 * parsed into @b in between. */
int ftrace_bundle_packed_size(FtraceBundle *b, size_t *ret_len);
void ftrace_bundle_pack_into(FtraceBundle *b, uint8_t *dst);
/* The same into a buffer the bundle keeps: the bytes are valid until the next pack. */
int ftrace_bundle_pack(FtraceBundle *b, const uint8_t **ret_buf, size_t *ret_len);
/* Where, in the bytes the last pack wrote, the values are few and repeat: each compact
 * column but the timestamps, or the full events. A compressor codes these and stores
 * the rest. Valid until the next pack. */
size_t ftrace_bundle_coded_spans(const FtraceBundle *b, const DeflateSpan **ret);
