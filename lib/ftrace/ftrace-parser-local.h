/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The ftrace page parser's internals, shared by its files (not installed, not for other
 * code: lib/include/ftrace-parser.h is the interface):
 *   ftrace-parser.c      the parser: header page, adding events, their lookup by id
 *   ftrace-event-info.c  what an event's format says: field offsets, kinds, protobuf keys
 *   ftrace-page.c        the ring-buffer page walker (the hot path)
 *   ftrace-full-event.c  events written whole, as FtraceEvent messages (the hot parts
 *                        inline in ftrace-full-event-local.h)
 *   ftrace-compact.c     compact_sched's columns and intern table (the hot parts inline in
 *                        ftrace-compact-local.h)
 *   ftrace-bundle.c      bundles: the pids they name, errors, packing
 * What stays inline here is what the walker does per event: reading a record's words,
 * closing a nested message, checking a buffer's room and probing the pid cache. Growing a
 * buffer and noting a new pid are calls into ftrace-bundle.c, which cost 0.6% (callgrind,
 * bench/parse-bench --bundle-pages 32 on a sched storm's pages: 108.3 -> 108.9
 * instructions per event, 366.3 -> 368.3 with --full; 0.7% on the fixture pages).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <traceevent/event-parse.h>

#include "ftrace-parser.h"
#include "ksyms.h"
#include "macro.h"
#include "pb-wire.h"

/* Ring buffer ABI (kernel/trace/ring_buffer.c). */
#define RB_TYPE_DATA_MAX 28u
#define RB_TYPE_PADDING 29u
#define RB_TYPE_TIME_EXTEND 30u
#define RB_TYPE_TIME_STAMP 31u
#define RB_TS_SHIFT 27
#define RB_TS_MSB (0xf8ULL << 56)
#define RB_COMMIT_SIZE_MASK ((1u << 27) - 1)
#define RB_MISSED_EVENTS (1u << 31)
/* rb_event_discard() and rb_reset_tail() set a padding's zero delta to 1. */
#define RB_PADDING_NO_DELTA 1u

/* Field numbers of FtraceEventBundle, FtraceEvent and their messages (protos/trace.proto). */
enum {
        BUNDLE_CPU = 1,
        BUNDLE_EVENT = 2,
        BUNDLE_LOST_EVENTS = 3,
        BUNDLE_COMPACT_SCHED = 4,
        BUNDLE_FTRACE_CLOCK = 5,
        BUNDLE_ERROR = 8,
        BUNDLE_PREVIOUS_END_TIMESTAMP = 10,
        EVENT_TIMESTAMP = 1,
        EVENT_PID = 2,
        EVENT_GENERIC = 327,
        GENERIC_EVENT_NAME = 1,
        /* FtraceEvent.kprobe_event and its KprobeEvent (ftrace-event-typed.c). */
        EVENT_KPROBE = 542,
        KPROBE_EVENT_NAME = 1,
        KPROBE_EVENT_TYPE = 2,
        GENERIC_FIELD = 2,
        GENERIC_FIELD_NAME = 1,
        GENERIC_FIELD_STR = 3,
        GENERIC_FIELD_INT = 4,
        GENERIC_FIELD_UINT = 5,
        ERROR_TIMESTAMP = 1,
        ERROR_STATUS = 2,
        COMPACT_INTERN_TABLE = 5,
};

/* CompactSched columns, indexed by their field number. */
enum {
        COL_SWITCH_TIMESTAMP = 1,
        COL_SWITCH_PREV_STATE = 2,
        COL_SWITCH_NEXT_PID = 3,
        COL_SWITCH_NEXT_PRIO = 4,
        COL_SWITCH_NEXT_COMM_INDEX = 6,
        COL_WAKING_TIMESTAMP = 7,
        COL_WAKING_PID = 8,
        COL_WAKING_TARGET_CPU = 9,
        COL_WAKING_PRIO = 10,
        COL_WAKING_COMM_INDEX = 11,
        COL_WAKING_COMMON_FLAGS = 12,
        _COL_MAX,
};

/* Record signatures (record_signature()); NO_SIGNATURE matches no record. */
#define SIGNATURE_MASK 0x0000ffff0000001fULL
#define NO_SIGNATURE UINT64_MAX

#define MAX_ERRORS_PER_BUNDLE 256
/* Slack for the length varints that outgrow their one-byte placeholder, per level. */
#define NEST_SLACK 8

/* A nested message's body was written right after a one-byte length placeholder at
 * @len_at, up to @end. Writes the length, moving the body on when it needs more bytes
 * (rare: most events are < 128 bytes). Returns the new end. */
static inline uint8_t *pb_close(uint8_t *len_at, uint8_t *end) {
        size_t n = (size_t) (end - (len_at + 1)), k;

        if (_likely_(n < 0x80)) {
                *len_at = (uint8_t) n;
                return end;
        }
        k = pb_varint_size(n);
        memmove(len_at + k, len_at + 1, n);
        pb_varint_encode(len_at, n);
        return end + k - 1;
}

typedef struct Buf {
        uint8_t *data;
        size_t len, cap;
} Buf;

/* Makes room for @extra more bytes (ftrace-bundle.c). -ENOMEM. */
int ftrace_buf_grow(Buf *b, size_t extra);
void ftrace_buf_done(Buf *b);

static inline int buf_reserve(Buf *b, size_t extra) {
        if (_likely_(b->cap - b->len >= extra))
                return 0;
        return ftrace_buf_grow(b, extra);
}

/* ---- event descriptions -------------------------------------------------------- */

/* Kernel addresses as a keyed hash (ftrace_parser_hash_addresses()). The last hashes,
 * direct-mapped by address, because addresses repeat (a few call sites, an object
 * allocated and freed): a hit is a compare instead of SipHash's 130 instructions. */
#define ADDRESS_CACHE_SIZE 256

typedef struct AddressHasher {
        uint64_t key[2];
        struct {
                uint64_t address, hash;     /* address 0: empty (NULL is never looked up) */
        } cache[ADDRESS_CACHE_SIZE];
} AddressHasher;

/* symbolize_ksyms (ftrace-symbols.c): code addresses become the iid of the function
 * holding them, as traced_probes writes them; each function's name is interned once per
 * trace, in InternedData.kernel_symbols. The last lookups are cached as the hashes are. */
typedef struct Symbolizer {
        Ksyms *ksyms;             /* a reference */
        uint32_t *iids;           /* per symbol of @ksyms: its iid, 0 none yet */
        uint32_t next_iid;        /* iids count from 1, as Perfetto's */
        uint32_t *fresh;          /* symbols given an iid since the last take, in iid order */
        size_t n_fresh, fresh_allocated;
        uint32_t first_fresh_iid;
        struct {
                uint64_t address;   /* 0: empty */
                uint32_t iid;       /* 0: not in a function */
        } cache[ADDRESS_CACHE_SIZE];
} Symbolizer;

/* The iid of the function holding @address, or 0. */
uint32_t ftrace_symbolize(Symbolizer *s, uint64_t address);
void ftrace_parser_free_symbolizer(FtraceParser *p);

typedef enum FieldSource {
        SRC_INT,            /* 1, 2, 4 or 8 byte number (pointers too) */
        SRC_CHARS,          /* char x[N]: string up to the first NUL */
        SRC_CHARS_REST,     /* char x[] (size 0): string up to NUL or the record's end */
        SRC_BYTES,          /* any other fixed-size field: hex */
        SRC_DATALOC_CHARS,  /* __data_loc / __rel_loc char[]: string */
        SRC_DATALOC_BYTES,  /* __data_loc / __rel_loc of anything else: hex */
        SRC_ADDRESS,        /* a number written as its keyed hash (is_address or is_opaque, hashing on) */
        SRC_ADDRESS_WORDS,  /* SRC_BYTES of pointer-sized numbers (is_opaque), each hashed, as hex */
        SRC_DATALOC_ADDRESS_WORDS, /* SRC_DATALOC_BYTES of them, likewise */
        SRC_SYMBOL,         /* a kernel address written as its symbol's iid (symbolize_ksyms) */
} FieldSource;

typedef struct FieldSpec {
        uint16_t offset, size;
        uint8_t source;           /* FieldSource */
        bool is_signed;
        bool relative;            /* __rel_loc: offset counts from the end of the field */
        bool is_address;          /* a kernel address: hashed when the parser hashes them */
        bool is_opaque;           /* pointer-sized and not known plain: hashed as well, never symbolized */
        PbKey key;                /* the value's key (typed field, or Field.*_value) */
        uint8_t *name_pb;         /* generic only: encoded Field.name (key, length, name) */
        uint8_t name_pb_len;
} FieldSpec;

/* The hottest events get encoders without a loop over field kinds (whose branches
 * mispredict when switches and wakings interleave): 27 -> 25 ns per event over the
 * fixture pages, half of which are sched_switch, sched_waking and sched_wakeup. */
typedef enum Shape {
        SHAPE_TABLE,              /* the generic, table-driven encoder */
        SHAPE_SCHED_SWITCH,       /* comm[16], i32, i32, i64, comm[16], i32, i32 */
        SHAPE_SCHED_WAKING,       /* comm[16], i32, i32, i32 (no "success") */
} Shape;

typedef enum CompactRole {
        COMPACT_NONE,
        COMPACT_SWITCH,
        COMPACT_WAKING,
        _COMPACT_ROLE_MAX,
} CompactRole;

/* Field indexes (into EventInfo.fields) the compact encoders read. */
enum { CS_PREV_STATE, CS_NEXT_PID, CS_NEXT_PRIO, CS_NEXT_COMM, _CS_MAX };
enum { CW_PID, CW_TARGET_CPU, CW_PRIO, CW_COMM, _CW_MAX };

typedef struct EventInfo {
        bool generic;
        bool has_pid;
        bool is_rename;           /* task_rename: its thread is described again */
        bool is_newtask;          /* task_newtask: its payload describes the new task */
        bool notes_task;          /* either, with the fields a FtraceTaskNote takes */
        uint16_t rename_pid_offset;   /* task_rename's and task_newtask's pid */
        uint16_t task_comm_offset;    /* task_rename's newcomm, task_newtask's comm */
        uint16_t task_flags_offset;   /* task_newtask's clone_flags */
        uint8_t compact_role;     /* CompactRole */
        uint8_t shape;            /* Shape: a straight-line encoder fits this layout */
        bool has_common_flags;
        uint16_t pid_offset, common_flags_offset;
        uint16_t min_len;         /* the record must hold every fixed-size field */
        PbKey key;                /* FtraceEvent field of the event message */
        size_t out_fixed;         /* bound on encoded bytes, without dynamic fields */
        size_t n_dynamic;         /* fields whose size depends on the record */
        FieldSpec *fields;
        size_t n_fields;
        uint8_t *name_pb;         /* generic only: encoded GenericFtraceEvent.event_name */
        size_t name_pb_len;
        AddressHasher *hasher;    /* the parser's, once its SRC_ADDRESS fields are hashed */
        bool is_print;            /* ftrace/print: the print filter reads buf at print_buf_offset */
        uint16_t print_buf_offset;
        Symbolizer *symbolizer;   /* the parser's, once its SRC_SYMBOL fields are symbolized */
        /* Offset and size of the fields the compact encoders read (CS_* or CW_*). */
        uint16_t compact_offset[4];
        uint8_t compact_size[4];
} EventInfo;


struct FtraceParser {
        struct tep_handle *tep;
        bool header_loaded;
        unsigned commit_size;     /* 4 or 8 */
        size_t data_offset;       /* timestamp + commit */
        EventInfo **by_id;
        size_t n_by_id;
        size_t compact_min_record; /* bytes, header included, of the smallest compact event */
        /* The compact events in the standard layout, recognised from their first 8 bytes
         * (record_signature()); NO_SIGNATURE when there is none. */
        uint64_t signature[_COMPACT_ROLE_MAX];
        FtraceParserStats stats;
        AddressHasher *hasher;    /* NULL: addresses written as they are */
        FtracePrintRule *print_rules;   /* FtraceConfig.print_filter, owned copies */
        size_t n_print_rules;
        Symbolizer *symbolizer;   /* NULL: no symbolize_ksyms */
};

/* ---- bundles ------------------------------------------------------------------- */

typedef struct FtraceErrorEntry {
        uint64_t timestamp;
        uint32_t status;
} FtraceErrorEntry;

/* Comms of the compact events, each stored once per bundle. A comm is at most 16
 * bytes (TASK_COMM_LEN; checked when the event is added), so the key is two words,
 * zero-padded after the string: hashing and comparing take no loop over bytes. */
typedef struct InternKey {
        uint64_t w[2];
} InternKey;

typedef struct Interner {
        InternKey *keys;          /* per entry */
        uint8_t *lengths;
        size_t n, allocated;
        uint32_t *slots;          /* open addressing: entry index + 1, 0 is free */
        size_t n_slots;           /* a power of two, at least twice n */
} Interner;

/* One group of columns (sched_switch's or sched_waking's): every column has room
 * for @room more events, each value being at most 10 bytes. */
/* The comm index a pid had last in this bundle, with the comm's raw 16 bytes: a task
 * keeps its comm, so most events are one compare away from their index, without the
 * interner's hash. */
#define COMM_CACHE_SIZE 128

typedef struct CommCacheEntry {
        /* First and 16-aligned: one SSE2 compare against the record's comm. */
        uint8_t comm[16] __attribute__((aligned(16)));
        /* An empty entry holds a pid of another slot (compact_comm_cache_reset()), so
         * that no record matches it, whatever its bytes. */
        int32_t pid;
        uint32_t index;
} CommCacheEntry;

typedef struct CompactSched {
        Buf col[_COL_MAX];        /* packed varints, ready to be copied */
        Interner names;
        CommCacheEntry comm_cache[COMM_CACHE_SIZE];
        uint64_t last_switch_ts, last_waking_ts;
} CompactSched;

/* Pids seen in events, for the process descriptions. A small direct-mapped cache keeps
 * the hot path to one compare for the pids that keep coming back. */
#define PID_CACHE_SIZE 256

struct FtraceBundle {
        uint32_t cpu;
        uint32_t ftrace_clock;    /* FtraceClock, 0: boot (the field is left out) */
        bool compact_sched;
        bool lost_events;
        int32_t pid_cache[PID_CACHE_SIZE];
        int32_t *pids;            /* pids noted since the last ftrace_bundle_take_pids() */
        size_t n_pids, pids_allocated;
        int32_t *renamed;         /* pids task_rename named since the last take */
        size_t n_renamed, renamed_allocated;
        FtraceTaskNote *tasks;    /* task_newtask and task_rename payloads since the last take */
        size_t n_tasks, tasks_allocated;
        Buf out;                  /* cpu field, then each event as a complete field 2 */
        Buf packed;               /* ftrace_bundle_pack()'s bytes, kept for the next round */
        DeflateSpan coded[_COL_MAX];  /* of the last bytes packed: what repays coding */
        size_t n_coded;
        size_t n_events, n_skipped;
        uint64_t previous_end_ts, last_ts;
        FtraceErrorEntry *errors;
        size_t n_errors;
        CompactSched compact;
};

/* The layouts 64-bit kernels give sched_switch and sched_waking (since 4.x): the fast
 * path reads them at these constant offsets, the compiler folding every load of them. */
static const EventInfo standard_switch = {
        .compact_role = COMPACT_SWITCH,
        .min_len = 64,
        .compact_offset = { [CS_PREV_STATE] = 32, [CS_NEXT_PID] = 56, [CS_NEXT_PRIO] = 60, [CS_NEXT_COMM] = 40 },
        .compact_size = { [CS_PREV_STATE] = 8, [CS_NEXT_PID] = 4, [CS_NEXT_PRIO] = 4, [CS_NEXT_COMM] = 16 },
};
static const EventInfo standard_waking = {
        .compact_role = COMPACT_WAKING,
        .min_len = 36,
        .has_common_flags = true,
        .common_flags_offset = 2,
        .compact_offset = { [CW_PID] = 24, [CW_TARGET_CPU] = 32, [CW_PRIO] = 28, [CW_COMM] = 8 },
        .compact_size = { [CW_PID] = 4, [CW_TARGET_CPU] = 4, [CW_PRIO] = 4, [CW_COMM] = 16 },
};


static inline uint32_t rd32(const uint8_t *s) {
        uint32_t v;

        memcpy(&v, s, sizeof(v));
        return v;
}

static inline uint64_t rd64(const uint8_t *s) {
        uint64_t v;

        memcpy(&v, s, sizeof(v));
        return v;
}

static inline size_t str_len(const uint8_t *s, size_t max) {
        const uint8_t *z;

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        /* comm[16], by far the most common: find the NUL a word at a time. */
        if (max == 16) {
                for (size_t i = 0; i < 16; i += 8) {
                        uint64_t w = rd64(s + i);
                        uint64_t zero = (w - 0x0101010101010101ULL) & ~w & 0x8080808080808080ULL;

                        if (zero)
                                return i + ((size_t) __builtin_ctzll(zero) >> 3);
                }
                return 16;
        }
#endif
        z = memchr(s, 0, max);
        return z ? (size_t) (z - s) : max;
}

/* ---- across the files ----------------------------------------------------------- */

/* ftrace-event-info.c: @ev's EventInfo, @text its format file. */
int ftrace_event_info_new(const struct tep_event *ev, const char *text, EventInfo **ret);
void ftrace_event_info_free(EventInfo *e);
void ftrace_parser_free_print_filter(FtraceParser *p);
void ftrace_event_info_setup_print(EventInfo *e, const struct tep_event *ev);
/* @e's address fields become SRC_ADDRESS, hashed by @hasher (which must outlive @e). */
void ftrace_event_info_hash_addresses(EventInfo *e, AddressHasher *hasher);
/* @e's address fields become SRC_SYMBOL, looked up in @s (which must outlive @e). */
void ftrace_event_info_symbolize(EventInfo *e, Symbolizer *s);
DEFINE_TRIVIAL_CLEANUP_FUNC_VOID(EventInfo *, ftrace_event_info_free);

/* ftrace-field-privacy.c: which numbers may hold a kernel address. */
bool ftrace_field_is_address(const struct tep_format_field *f, const char *text);
/* Whether the pointer-sized field @name is known to hold no address and no page frame. */
bool ftrace_field_name_is_plain(const char *name);
/* Whether the C type @type is an integer of at most 32 bits. */
bool ftrace_type_is_narrow(const char *type);
/* Whether the array field @f holds pointer-sized numbers. */
bool ftrace_array_of_words(const struct tep_format_field *f);

/* ftrace-bundle.c */
int ftrace_bundle_begin(FtraceBundle *b);
void ftrace_bundle_add_error(FtraceBundle *b, uint64_t timestamp, FtraceParseStatus status);
void ftrace_bundle_note_renamed(FtraceBundle *b, int32_t pid);
void ftrace_bundle_note_task(FtraceBundle *b, const EventInfo *e, const uint8_t *rec, uint64_t ts);
void ftrace_bundle_note_coded(FtraceBundle *b, const uint8_t *base, const uint8_t *start, const uint8_t *end,
                              bool literals);

/* ftrace-compact.c */
void compact_sched_done(CompactSched *c);
void compact_sched_reset(CompactSched *c);
void compact_comm_cache_reset(CompactSched *c);
int compact_interner_grow_slots(Interner *in);
int compact_interner_grow_entries(Interner *in);
/* The CompactSched message's size, and the field (key, length, body) written at @p;
 * @base is where the packed bundle starts, for the coded spans. */
size_t compact_sched_size(const CompactSched *c);
uint8_t *compact_sched_put(uint8_t *p, FtraceBundle *b, const uint8_t *base, size_t size);

/* A pid not in its slot of the pid cache: put there, and added to the bundle's list
 * (ftrace-bundle.c). */
void ftrace_bundle_note_new_pid(FtraceBundle *b, int32_t *slot, int32_t pid);

/* A pid that events name, noted once: a direct-mapped cache keeps it to one compare. */
static inline void bundle_note_pid(FtraceBundle *b, int32_t pid) {
        int32_t *slot = &b->pid_cache[(uint32_t) pid % PID_CACHE_SIZE];

        if (_likely_(*slot == pid) || pid <= 0)
                return;
        ftrace_bundle_note_new_pid(b, slot, pid);
}

/* A typed Perfetto event: the message number in FtraceEvent and its fields' numbers
 * (ftrace-event-info.c's table, then ftrace-event-typed.c's). */
typedef enum ProtoType { PT_VARINT, PT_STRING } ProtoType;

typedef struct TypedField {
        const char *name;
        uint32_t number;
        ProtoType type;
} TypedField;

typedef struct TypedEvent {
        const char *group, *name;
        uint32_t number;
        const TypedField *fields;
} TypedEvent;

const TypedEvent *ftrace_typed_event_more(const char *group, const char *name);
/* 1 when @ev is one of a session's kprobes, set up as FtraceEvent.kprobe_event; 0 if not. */
int ftrace_event_info_kprobe(EventInfo *e, const struct tep_event *ev);
