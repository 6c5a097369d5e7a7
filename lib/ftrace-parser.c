/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Ring-buffer pages -> FtraceEventBundle bytes.
 *
 * libtraceevent parses the text of events/header_page and of each event's format
 * file; everything an event needs at decode time (field offsets, sizes, kinds, the
 * protobuf keys it is written under) is resolved once, when the event is added, into
 * an EventInfo indexed by event id. The hot path then reads fields at fixed offsets
 * and writes protobuf straight into one growable buffer per bundle: no allocation per
 * event, no lookup by name.
 *
 * Our own record walker instead of kbuffer (libtraceevent 1.7.1):
 * - kbuffer_load_subbuffer() takes no size. It trusts the commit word (up to 2^27
 *   bytes) and every record's length word, and reads past the page on garbage; we
 *   are fuzzed, so every length is checked against the commit size here.
 * - It cannot tell a malformed page from its end (no FtraceError status).
 * - It reads every word through a function pointer (endian swapping we never need).
 *   Measured on the fixture pages (2 vCPU VM, -O2, best of 8 runs): walking the
 *   records with kbuffer_next_event() costs ~30 ns per event; this walker, looking
 *   up and skipping every event, ~3 ns.
 * - It adds the time delta of every padding record; the kernel's own validator
 *   (ring_buffer.c, check_buffer()/rb_read_data_buffer()) skips it when it is 1, the
 *   value rb_event_discard() and rb_reset_tail() force, and so do we.
 *
 * Page layout (events/header_page, events/header_event): u64 timestamp, then the
 * commit word (long: 8 bytes here) whose low 27 bits are the data length, bit 31
 * RB_MISSED_EVENTS and bit 30 RB_MISSED_STORED; then the records. Each record starts
 * with a u32: type_len (5 bits) and time_delta (27 bits). type_len 1..28: data of
 * 4 * type_len bytes; 0: length (including itself) in the next u32, then data;
 * 29 padding (the next u32 is its length, not counting the header; time_delta 0 is
 * the "null" padding that only ever lies beyond the commit); 30 time extend (delta
 * += next u32 << 27); 31 absolute time stamp (same 59-bit encoding; the top 5 bits
 * come from the running time, as rb_fix_abs_ts() does).
 *
 * Output: FtraceEventBundle { cpu 1, event 2 (each FtraceEvent written as timestamp 1,
 * pid 2, then the event message: trace_processor's fast path wants that order),
 * lost_events 3, compact_sched 4, error 8, previous_bundle_end_timestamp 10 }.
 * Unknown events become GenericFtraceEvent (327): every non-common field, numbers as
 * int_value (signed) or uint_value (unsigned, pointers too), char arrays and
 * __data_loc/__rel_loc char strings as str_value up to the first NUL, and any other
 * array (u8[], unsigned long[6], __data_loc u32[]...) as str_value holding its bytes
 * in lowercase hex, in memory order, without separators.
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <traceevent/event-parse.h>

#include "ftrace-parser.h"
#include "macro.h"

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

/* Protobuf wire types. */
enum { WT_VARINT = 0, WT_LEN = 2 };

/* Field numbers (facts note 2.8, 2.9). */
enum {
        BUNDLE_CPU = 1,
        BUNDLE_EVENT = 2,
        BUNDLE_LOST_EVENTS = 3,
        BUNDLE_COMPACT_SCHED = 4,
        BUNDLE_ERROR = 8,
        BUNDLE_PREVIOUS_END_TIMESTAMP = 10,
        EVENT_TIMESTAMP = 1,
        EVENT_PID = 2,
        EVENT_GENERIC = 327,
        GENERIC_EVENT_NAME = 1,
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

/* ---- protobuf writing ---------------------------------------------------------- */

typedef struct PbKey {
        uint8_t bytes[5];
        uint8_t len;
} PbKey;

static inline size_t pb_varint_len(uint64_t v) {
        size_t n = 1;

        while (v >= 0x80) {
                v >>= 7;
                n++;
        }
        return n;
}

/* Callers reserve 10 bytes. Most values (prio, cpu, state, lengths) take one byte,
 * pids two or three, timestamps six. */
static inline uint8_t *pb_varint(uint8_t *p, uint64_t v) {
        if (_likely_(v < 0x80)) {
                *p = (uint8_t) v;
                return p + 1;
        }
        if (v < 0x4000) {
                p[0] = (uint8_t) v | 0x80;
                p[1] = (uint8_t) (v >> 7);
                return p + 2;
        }
        do {
                *p++ = (uint8_t) v | 0x80;
                v >>= 7;
        } while (v >= 0x80);
        *p++ = (uint8_t) v;
        return p;
}

static PbKey pb_key(uint32_t field, unsigned wire_type) {
        PbKey k = {};

        k.len = (uint8_t) (pb_varint(k.bytes, ((uint64_t) field << 3) | wire_type) - k.bytes);
        return k;
}

/* Callers reserve room for all five bytes. */
static inline uint8_t *pb_put_key(uint8_t *p, const PbKey *k) {
        memcpy(p, k->bytes, sizeof(k->bytes));
        return p + k->len;
}

static inline uint8_t *pb_put_bytes(uint8_t *p, const void *s, size_t n) {
        p = pb_varint(p, n);
        memcpy(p, s, n);
        return p + n;
}

/* A nested message's body was written right after a one-byte length placeholder at
 * @len_at, up to @end. Writes the length, moving the body on when it needs more bytes
 * (rare: most events are < 128 bytes). Returns the new end. */
static inline uint8_t *pb_close(uint8_t *len_at, uint8_t *end) {
        size_t n = (size_t) (end - (len_at + 1)), k;

        if (_likely_(n < 0x80)) {
                *len_at = (uint8_t) n;
                return end;
        }
        k = pb_varint_len(n);
        memmove(len_at + k, len_at + 1, n);
        pb_varint(len_at, n);
        return end + k - 1;
}

typedef struct Buf {
        uint8_t *data;
        size_t len, cap;
} Buf;

static int buf_grow(Buf *b, size_t extra) {
        size_t need, cap;
        uint8_t *d;

        if (extra > SIZE_MAX / 4 - b->len)
                return -ENOMEM;
        need = b->len + extra;
        cap = MAX(need, MAX(b->cap * 2, (size_t) 4096));
        d = realloc(b->data, cap);
        if (!d)
                return -ENOMEM;
        b->data = d;
        b->cap = cap;
        return 0;
}

static inline int buf_reserve(Buf *b, size_t extra) {
        if (_likely_(b->cap - b->len >= extra))
                return 0;
        return buf_grow(b, extra);
}

static void buf_done(Buf *b) {
        b->data = mfree(b->data);
        b->len = b->cap = 0;
}

/* ---- event descriptions -------------------------------------------------------- */

typedef enum FieldSource {
        SRC_INT,            /* 1, 2, 4 or 8 byte number (pointers too) */
        SRC_CHARS,          /* char x[N]: string up to the first NUL */
        SRC_CHARS_REST,     /* char x[] (size 0): string up to NUL or the record's end */
        SRC_BYTES,          /* any other fixed-size field: hex */
        SRC_DATALOC_CHARS,  /* __data_loc / __rel_loc char[]: string */
        SRC_DATALOC_BYTES,  /* __data_loc / __rel_loc of anything else: hex */
} FieldSource;

typedef struct FieldSpec {
        uint16_t offset, size;
        uint8_t source;           /* FieldSource */
        bool is_signed;
        bool relative;            /* __rel_loc: offset counts from the end of the field */
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
        uint16_t rename_pid_offset;
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
        /* Offset and size of the fields the compact encoders read (CS_* or CW_*). */
        uint16_t compact_offset[4];
        uint8_t compact_size[4];
} EventInfo;

/* How a known event maps onto its typed Perfetto message (facts note 2.9). */
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

static const TypedField sched_switch_fields[] = {
        { "prev_comm", 1, PT_STRING }, { "prev_pid", 2, PT_VARINT }, { "prev_prio", 3, PT_VARINT },
        { "prev_state", 4, PT_VARINT }, { "next_comm", 5, PT_STRING }, { "next_pid", 6, PT_VARINT },
        { "next_prio", 7, PT_VARINT }, {},
};
/* sched_waking, sched_wakeup and sched_wakeup_new. "success" is gone from modern kernels. */
static const TypedField sched_waking_fields[] = {
        { "comm", 1, PT_STRING }, { "pid", 2, PT_VARINT }, { "prio", 3, PT_VARINT },
        { "success", 4, PT_VARINT }, { "target_cpu", 5, PT_VARINT }, {},
};
static const TypedField sched_process_exit_fields[] = {
        { "comm", 1, PT_STRING }, { "pid", 2, PT_VARINT }, { "tgid", 3, PT_VARINT },
        { "prio", 4, PT_VARINT }, {},
};
static const TypedField sched_process_free_fields[] = {
        { "comm", 1, PT_STRING }, { "pid", 2, PT_VARINT }, { "prio", 3, PT_VARINT }, {},
};
static const TypedField sched_process_fork_fields[] = {
        { "parent_comm", 1, PT_STRING }, { "parent_pid", 2, PT_VARINT },
        { "child_comm", 3, PT_STRING }, { "child_pid", 4, PT_VARINT }, {},
};
static const TypedField sched_process_exec_fields[] = {
        { "filename", 1, PT_STRING }, { "pid", 2, PT_VARINT }, { "old_pid", 3, PT_VARINT }, {},
};
static const TypedField task_newtask_fields[] = {
        { "pid", 1, PT_VARINT }, { "comm", 2, PT_STRING }, { "clone_flags", 3, PT_VARINT },
        { "oom_score_adj", 4, PT_VARINT }, {},
};
static const TypedField task_rename_fields[] = {
        { "pid", 1, PT_VARINT }, { "oldcomm", 2, PT_STRING }, { "newcomm", 3, PT_STRING },
        { "oom_score_adj", 4, PT_VARINT }, {},
};
static const TypedField print_fields[] = {
        { "ip", 1, PT_VARINT }, { "buf", 2, PT_STRING }, {},
};
/* cpu_frequency and cpu_idle. */
static const TypedField cpu_state_fields[] = {
        { "state", 1, PT_VARINT }, { "cpu_id", 2, PT_VARINT }, {},
};

static const TypedField irq_handler_entry_fields[] = {
        { "irq", 1, PT_VARINT }, { "name", 2, PT_STRING }, { "handler", 3, PT_VARINT }, {},
};
static const TypedField irq_handler_exit_fields[] = {
        { "irq", 1, PT_VARINT }, { "ret", 2, PT_VARINT }, {},
};
/* softirq_entry and softirq_exit. */
static const TypedField softirq_fields[] = {
        { "vec", 1, PT_VARINT }, {},
};
/* raw_syscalls: Perfetto's messages carry the number (and sys_exit the return value);
 * sys_enter's args array has no field there. */
static const TypedField sys_enter_fields[] = {
        { "id", 1, PT_VARINT }, {},
};
static const TypedField sys_exit_fields[] = {
        { "id", 1, PT_VARINT }, { "ret", 2, PT_VARINT }, {},
};

static const TypedEvent typed_events[] = {
        { "ftrace", "print", 3, print_fields },
        { "sched", "sched_switch", 4, sched_switch_fields },
        { "power", "cpu_frequency", 11, cpu_state_fields },
        { "power", "cpu_idle", 13, cpu_state_fields },
        { "sched", "sched_wakeup", 17, sched_waking_fields },
        { "sched", "sched_waking", 20, sched_waking_fields },
        { "sched", "sched_wakeup_new", 114, sched_waking_fields },
        { "task", "task_newtask", 235, task_newtask_fields },
        { "task", "task_rename", 236, task_rename_fields },
        { "sched", "sched_process_exec", 237, sched_process_exec_fields },
        { "sched", "sched_process_exit", 238, sched_process_exit_fields },
        { "sched", "sched_process_fork", 239, sched_process_fork_fields },
        { "sched", "sched_process_free", 240, sched_process_free_fields },
        { "irq", "softirq_entry", 24, softirq_fields },
        { "irq", "softirq_exit", 25, softirq_fields },
        { "irq", "irq_handler_entry", 36, irq_handler_entry_fields },
        { "irq", "irq_handler_exit", 37, irq_handler_exit_fields },
        { "raw_syscalls", "sys_enter", 329, sys_enter_fields },
        { "raw_syscalls", "sys_exit", 330, sys_exit_fields },
};

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
        int32_t pid;              /* -1: empty */
        uint32_t index;
        uint64_t w0, w1;
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
        bool compact_sched;
        bool lost_events;
        int32_t pid_cache[PID_CACHE_SIZE];
        int32_t *pids;            /* pids noted since the last ftrace_bundle_take_pids() */
        size_t n_pids, pids_allocated;
        int32_t *renamed;         /* pids task_rename named since the last take */
        size_t n_renamed, renamed_allocated;
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

/* ---- format parsing helpers (slow path) ---------------------------------------- */

static inline bool streq(const char *a, const char *b) {
        return strcmp(a, b) == 0;
}

/* The name declared by a format line's "field:<decl>;": the last identifier of <decl>
 * once a trailing "[N]" is dropped ("char prev_comm[16]", "__data_loc char[] path"). */
static bool decl_has_name(const char *decl, const char *end, const char *name) {
        size_t name_len = strlen(name);
        const char *e = end;

        while (e > decl && e[-1] == ' ')
                e--;
        if (e > decl && e[-1] == ']') {
                while (e > decl && e[-1] != '[')
                        e--;
                if (e > decl)
                        e--;
        }
        if ((size_t) (e - decl) < name_len || memcmp(e - name_len, name, name_len) != 0)
                return false;
        e -= name_len;
        return e == decl || strchr(" \t*:", e[-1]);
}

/* The "signed:" of field @name in the format text. libtraceevent's TEP_FIELD_IS_SIGNED
 * is missing on some fields (e.g. sched_switch's "long prev_state"), so read it here.
 * Only the field lines are scanned, never the (sometimes huge) print fmt. */
static int format_field_signed(const char *text, const char *name) {
        const char *end = strstr(text, "\nprint fmt:") ?: text + strlen(text);

        for (const char *l = text; l < end;) {
                const char *eol = memchr(l, '\n', (size_t) (end - l)) ?: end;
                const char *decl = memmem(l, (size_t) (eol - l), "field:", 6), *semi = NULL, *sgn;

                if (decl)
                        semi = memchr(decl, ';', (size_t) (eol - decl));
                if (semi && decl_has_name(decl + 6, semi, name)) {
                        sgn = memmem(semi, (size_t) (eol - semi), "signed:", 7);
                        if (!sgn || sgn + 7 >= eol)
                                return -1;
                        return sgn[7] == '1';
                }
                l = eol + 1;
        }
        return -1;
}

static bool is_int_size(int size) {
        return size == 1 || size == 2 || size == 4 || size == 8;
}

/* "char", "unsigned char", "const char", "signed char": element types read as text. */
static bool type_is_char(const char *type, size_t len) {
        while (len > 0 && type[len - 1] == ' ')
                len--;
        return len >= 4 && memcmp(type + len - 4, "char", 4) == 0;
}

static bool field_is_dynamic(const struct tep_format_field *f) {
        return (f->flags & TEP_FIELD_IS_DYNAMIC) || strncmp(f->type, "__data_loc", 10) == 0 ||
                strncmp(f->type, "__rel_loc", 9) == 0;
}

/* The element type of an array field ("char" of "char[16]", "char" of "__data_loc char[]"). */
static bool array_is_char(const struct tep_format_field *f) {
        const char *t = f->type, *bracket;

        if (strncmp(t, "__data_loc ", 11) == 0)
                t += 11;
        else if (strncmp(t, "__rel_loc ", 10) == 0)
                t += 10;
        bracket = strchr(t, '[');
        return type_is_char(t, bracket ? (size_t) (bracket - t) : strlen(t));
}

/* Works out how to read @f. Returns false for a field we cannot place in a record. */
static bool field_spec_init(FieldSpec *s, const struct tep_format_field *f, const char *text) {
        int sgn;

        if (f->offset < 0 || f->size < 0 || f->offset + f->size > UINT16_MAX)
                return false;
        *s = (FieldSpec) {
                .offset = (uint16_t) f->offset,
                .size = (uint16_t) f->size,
        };
        if (field_is_dynamic(f)) {
                if (f->size != 4)
                        s->source = SRC_BYTES;
                else
                        s->source = array_is_char(f) ? SRC_DATALOC_CHARS : SRC_DATALOC_BYTES;
                s->relative = f->flags & TEP_FIELD_IS_RELATIVE ||
                        strncmp(f->type, "__rel_loc", 9) == 0;
        } else if ((f->flags & TEP_FIELD_IS_ARRAY) || strchr(f->type, '[')) {
                if (array_is_char(f))
                        s->source = f->size == 0 ? SRC_CHARS_REST : SRC_CHARS;
                else
                        s->source = SRC_BYTES;
        } else if (is_int_size(f->size))
                s->source = SRC_INT;
        else
                s->source = SRC_BYTES;

        sgn = format_field_signed(text, f->name);
        s->is_signed = sgn >= 0 ? sgn : !!(f->flags & TEP_FIELD_IS_SIGNED);
        if (f->flags & TEP_FIELD_IS_POINTER)
                s->is_signed = false;
        return true;
}

/* Upper bound of the encoded size of @s's key and value, beyond its dynamic part. */
static size_t field_out_fixed(const FieldSpec *s) {
        size_t n = sizeof(s->key.bytes) + 10 + s->name_pb_len + 2 + NEST_SLACK;

        if (s->source == SRC_CHARS)
                n += s->size;
        else if (s->source == SRC_BYTES)
                n += 2 * (size_t) s->size;
        return n;
}

static bool field_is_dynamic_source(const FieldSpec *s) {
        return s->source == SRC_CHARS_REST || s->source == SRC_DATALOC_CHARS ||
                s->source == SRC_DATALOC_BYTES;
}

static uint16_t field_min_len(const FieldSpec *s) {
        if (s->source == SRC_CHARS_REST)
                return s->offset;
        return (uint16_t) (s->offset + s->size);
}

static void event_info_free(EventInfo *e) {
        if (!e)
                return;
        for (size_t i = 0; i < e->n_fields; i++)
                free(e->fields[i].name_pb);
        free(e->fields);
        free(e->name_pb);
        free(e);
}

DEFINE_TRIVIAL_CLEANUP_FUNC_VOID(EventInfo *, event_info_free);

static uint8_t *encode_name(uint32_t field, const char *name, size_t *ret_len) {
        size_t n = MIN(strlen(name), (size_t) 200);     /* keeps FieldSpec.name_pb_len in a byte */
        PbKey k = pb_key(field, WT_LEN);
        uint8_t *buf, *p;

        buf = malloc(sizeof(k.bytes) + 2 + n);
        if (!buf)
                return NULL;
        p = pb_put_key(buf, &k);
        p = pb_put_bytes(p, name, n);
        *ret_len = (size_t) (p - buf);
        return buf;
}

/* Adds @s, taking its min_len and output bound into account. */
static void event_info_push(EventInfo *e, const FieldSpec *s) {
        e->fields[e->n_fields++] = *s;
        e->min_len = MAX(e->min_len, field_min_len(s));
        e->out_fixed += field_out_fixed(s);
        if (field_is_dynamic_source(s))
                e->n_dynamic++;
}

static int event_info_add_typed(EventInfo *e, const struct tep_event *ev, const TypedEvent *t,
                                const char *text) {
        size_t n = 0;

        for (const TypedField *tf = t->fields; tf->name; tf++)
                n++;
        e->fields = calloc(n, sizeof(FieldSpec));
        if (!e->fields)
                return -ENOMEM;

        for (const TypedField *tf = t->fields; tf->name; tf++) {
                const struct tep_format_field *f = tep_find_field((struct tep_event *) ev, tf->name);
                FieldSpec s;
                bool is_string;

                if (!f || !field_spec_init(&s, f, text))
                        continue;
                is_string = s.source == SRC_CHARS || s.source == SRC_CHARS_REST ||
                        s.source == SRC_DATALOC_CHARS;
                /* A kernel whose field changed kind no longer matches the proto: leave it out. */
                if (is_string != (tf->type == PT_STRING) || (!is_string && s.source != SRC_INT))
                        continue;
                s.key = pb_key(tf->number, is_string ? WT_LEN : WT_VARINT);
                event_info_push(e, &s);
        }
        e->key = pb_key(t->number, WT_LEN);
        return 0;
}

static int event_info_add_generic(EventInfo *e, const struct tep_event *ev, const char *text) {
        size_t n = 0;

        for (const struct tep_format_field *f = ev->format.fields; f; f = f->next)
                n++;
        e->generic = true;
        e->key = pb_key(EVENT_GENERIC, WT_LEN);
        e->name_pb = encode_name(GENERIC_EVENT_NAME, ev->name, &e->name_pb_len);
        e->fields = calloc(MAX(n, (size_t) 1), sizeof(FieldSpec));
        if (!e->name_pb || !e->fields)
                return -ENOMEM;
        e->out_fixed += e->name_pb_len;

        for (const struct tep_format_field *f = ev->format.fields; f; f = f->next) {
                FieldSpec s;
                size_t len;

                if (!field_spec_init(&s, f, text))
                        continue;
                if (s.source == SRC_INT)
                        s.key = pb_key(s.is_signed ? GENERIC_FIELD_INT : GENERIC_FIELD_UINT, WT_VARINT);
                else
                        s.key = pb_key(GENERIC_FIELD_STR, WT_LEN);
                s.name_pb = encode_name(GENERIC_FIELD_NAME, f->name, &len);
                if (!s.name_pb)
                        return -ENOMEM;
                s.name_pb_len = (uint8_t) len;
                event_info_push(e, &s);
        }
        return 0;
}

static int find_field_index(const EventInfo *e, const struct tep_event *ev, const char *name,
                            FieldSource source) {
        const struct tep_format_field *f = tep_find_field((struct tep_event *) ev, name);

        if (!f)
                return -1;
        for (size_t i = 0; i < e->n_fields; i++)
                if (e->fields[i].offset == f->offset && e->fields[i].source == source)
                        return (int) i;
        return -1;
}

static bool fields_match(const EventInfo *e, const char *kinds) {
        size_t i = 0;

        for (; kinds[i]; i++) {
                const FieldSpec *f;

                if (i >= e->n_fields)
                        return false;
                f = &e->fields[i];
                if (kinds[i] == 'c' && !(f->source == SRC_CHARS && f->size == 16))
                        return false;
                if (kinds[i] == '4' && !(f->source == SRC_INT && f->size == 4))
                        return false;
                if (kinds[i] == '8' && !(f->source == SRC_INT && f->size == 8))
                        return false;
        }
        return i == e->n_fields;
}

static void event_info_setup_shape(EventInfo *e, uint32_t number) {
        if (number == 4 && fields_match(e, "c448c44"))
                e->shape = SHAPE_SCHED_SWITCH;
        else if ((number == 20 || number == 17 || number == 114) && fields_match(e, "c444"))
                e->shape = SHAPE_SCHED_WAKING;
}

/* Compact encoding reads the fields at the sizes every kernel gives them (comms of
 * TASK_COMM_LEN, pid, prio and target_cpu ints, prev_state a long); a kernel with another
 * layout gets the full events. */
static bool compact_field_fits(const FieldSpec *f, int which, bool is_switch) {
        if (which == CS_NEXT_COMM)      /* == CW_COMM */
                return f->source == SRC_CHARS && f->size == sizeof(InternKey);
        if (is_switch && which == CS_PREV_STATE && f->size == 8)
                return true;
        return f->size == 4 && f->is_signed;
}

static void event_info_setup_compact(EventInfo *e, const struct tep_event *ev, uint32_t number) {
        static const char *const switch_names[_CS_MAX] = { "prev_state", "next_pid", "next_prio", "next_comm" };
        static const char *const waking_names[_CW_MAX] = { "pid", "target_cpu", "prio", "comm" };
        const char *const *names;

        if (number == 4)
                names = switch_names;
        else if (number == 20)
                names = waking_names;
        else
                return;
        for (size_t i = 0; i < 4; i++) {
                int idx = find_field_index(e, ev, names[i], i == 3 ? SRC_CHARS : SRC_INT);

                if (idx < 0 || !compact_field_fits(&e->fields[idx], (int) i, number == 4))
                        return;
                e->compact_offset[i] = e->fields[idx].offset;
                e->compact_size[i] = (uint8_t) e->fields[idx].size;
        }
        e->compact_role = number == 4 ? COMPACT_SWITCH : COMPACT_WAKING;
}

static void event_info_setup_common(EventInfo *e, const struct tep_event *ev) {
        /* Every record starts with the 16-bit event id. */
        e->min_len = MAX(e->min_len, (uint16_t) 2);
        for (const struct tep_format_field *f = ev->format.common_fields; f; f = f->next) {
                if (f->offset < 0 || f->offset + f->size > UINT16_MAX)
                        continue;
                if (streq(f->name, "common_pid") && f->size == 4) {
                        e->has_pid = true;
                        e->pid_offset = (uint16_t) f->offset;
                        e->min_len = MAX(e->min_len, (uint16_t) (f->offset + 4));
                } else if (streq(f->name, "common_flags") && f->size == 1) {
                        e->has_common_flags = true;
                        e->common_flags_offset = (uint16_t) f->offset;
                        e->min_len = MAX(e->min_len, (uint16_t) (f->offset + 1));
                }
        }
        /* FtraceEvent key + length, timestamp, pid, event key + length. */
        e->out_fixed += 1 + 5 + 1 + 10 + 1 + 5 + sizeof(e->key.bytes) + 5 + 2 * NEST_SLACK;
}

static const TypedEvent *typed_event_find(const char *group, const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(typed_events); i++)
                if (streq(typed_events[i].group, group) && streq(typed_events[i].name, name))
                        return &typed_events[i];
        return NULL;
}

static void event_info_setup_rename(EventInfo *e, const struct tep_event *ev, uint32_t number) {
        const struct tep_format_field *f;

        if (number != 236)
                return;
        f = tep_find_field((struct tep_event *) ev, "pid");
        if (!f || f->size != 4 || f->offset < 0 || f->offset + 4 > UINT16_MAX)
                return;
        e->is_rename = true;
        e->rename_pid_offset = (uint16_t) f->offset;
        e->min_len = MAX(e->min_len, (uint16_t) (f->offset + 4));
}

static int event_info_new(const struct tep_event *ev, const char *text, EventInfo **ret) {
        _cleanup_(event_info_freep) EventInfo *e = NULL;
        const TypedEvent *t;
        int r;

        e = calloc(1, sizeof(EventInfo));
        if (!e)
                return -ENOMEM;
        t = typed_event_find(strempty(ev->system), strempty(ev->name));
        if (t)
                r = event_info_add_typed(e, ev, t, text);
        else
                r = event_info_add_generic(e, ev, text);
        if (r < 0)
                return r;
        event_info_setup_common(e, ev);
        if (t) {
                event_info_setup_compact(e, ev, t->number);
                event_info_setup_shape(e, t->number);
                event_info_setup_rename(e, ev, t->number);
        }
        *ret = TAKE_PTR(e);
        return 0;
}

/* ---- parser ------------------------------------------------------------------------ */

int ftrace_parser_new(FtraceParser **ret) {
        FtraceParser *p;

        assert(ret);

        p = calloc(1, sizeof(FtraceParser));
        if (!p)
                return -ENOMEM;
        p->tep = tep_alloc();
        if (!p->tep) {
                free(p);
                return -ENOMEM;
        }
        p->compact_min_record = SIZE_MAX;
        for (size_t i = 0; i < _COMPACT_ROLE_MAX; i++)
                p->signature[i] = NO_SIGNATURE;
        *ret = p;
        return 0;
}

FtraceParser *ftrace_parser_free(FtraceParser *p) {
        if (!p)
                return NULL;
        for (size_t i = 0; i < p->n_by_id; i++)
                event_info_free(p->by_id[i]);
        free(p->by_id);
        tep_free(p->tep);
        return mfree(p);
}

int ftrace_parser_load_header_page(FtraceParser *p, const char *text, size_t len) {
        _cleanup_free_ char *copy = NULL;
        int ts_size, commit_size;

        assert(p);
        assert(text || len == 0);

        if (len == 0)
                return -EINVAL;
        copy = strndup(text, len);
        if (!copy)
                return -ENOMEM;
        if (tep_parse_header_page(p->tep, copy, strlen(copy), (int) sizeof(long)) < 0)
                return -EBADMSG;

        ts_size = tep_get_header_timestamp_size(p->tep);
        commit_size = tep_get_header_page_size(p->tep);
        if (ts_size != 8 || (commit_size != 4 && commit_size != 8))
                return -EBADMSG;
        p->commit_size = (unsigned) commit_size;
        p->data_offset = (size_t) ts_size + (size_t) commit_size;
        p->header_loaded = true;
        return 0;
}

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

static const EventInfo *standard_layout(CompactRole role) {
        return role == COMPACT_SWITCH ? &standard_switch : &standard_waking;
}

/* What the compact encoders read of @e is what they read of @std. */
static bool compact_layout_is(const EventInfo *e, const EventInfo *std) {
        return e->compact_role == std->compact_role && e->min_len == std->min_len &&
                memcmp(e->compact_offset, std->compact_offset, sizeof(e->compact_offset)) == 0 &&
                memcmp(e->compact_size, std->compact_size, sizeof(e->compact_size)) == 0 &&
                /* Only wakings write common_flags. */
                (e->compact_role != COMPACT_WAKING || (e->has_common_flags == std->has_common_flags &&
                                                       e->common_flags_offset == std->common_flags_offset));
}

/* The first 8 bytes of a record of event @id in the standard layout, which holds exactly
 * its fields (the kernel rounds a record up to 4 bytes): type_len in the header's low 5
 * bits and the event id in the record's first 16 bits, under SIGNATURE_MASK. One compare
 * then stands for the header kind, length and bounds checks and the lookup by id of every
 * such record. Other layouts have none and take the general path. */
static uint64_t record_signature(unsigned id, const EventInfo *e) {
        if (__BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__ || !compact_layout_is(e, standard_layout(e->compact_role)))
                return NO_SIGNATURE;
        return (uint64_t) id << 32 | (e->min_len + 3u) / 4u;
}

static int parser_set_event(FtraceParser *p, unsigned id, EventInfo *e) {
        if (id >= p->n_by_id) {
                size_t n = MAX((size_t) id + 1, p->n_by_id * 2);
                EventInfo **a = realloc(p->by_id, n * sizeof(EventInfo *));

                if (!a)
                        return -ENOMEM;
                memset(a + p->n_by_id, 0, (n - p->n_by_id) * sizeof(EventInfo *));
                p->by_id = a;
                p->n_by_id = n;
        }
        p->by_id[id] = e;
        if (e->compact_role != COMPACT_NONE) {
                p->compact_min_record = MIN(p->compact_min_record, (size_t) 4 + e->min_len);
                p->signature[e->compact_role] = record_signature(id, e);
        }
        return 0;
}

/* The "ID: N" line, so a format already added is recognised before libtraceevent
 * would add a second copy of it. */
static int format_event_id(const char *text) {
        const char *l = strstr(text, "\nID:");
        char *end;
        unsigned long id;

        if (!l)
                return -EBADMSG;
        errno = 0;
        id = strtoul(l + 4, &end, 10);
        if (errno != 0 || end == l + 4 || id > UINT16_MAX)
                return -EBADMSG;
        return (int) id;
}

int ftrace_parser_add_event(FtraceParser *p, const char *group, const char *text, size_t len) {
        _cleanup_free_ char *copy = NULL;
        _cleanup_(event_info_freep) EventInfo *e = NULL;
        struct tep_event *ev;
        int id, r;

        assert(p);
        assert(group);
        assert(text || len == 0);

        copy = strndup(text ?: "", len);
        if (!copy)
                return -ENOMEM;
        id = format_event_id(copy);
        if (id < 0)
                return id;
        if ((size_t) id < p->n_by_id && p->by_id[id])
                return id;

        /* A print fmt libtraceevent cannot parse still leaves the event and its fields,
         * which is all we need; so judge by the lookup, not by the return value. */
        r = tep_parse_event(p->tep, copy, strlen(copy), group);
        ev = tep_find_event(p->tep, id);
        if (!ev)
                return r == TEP_ERRNO__MEM_ALLOC_FAILED ? -ENOMEM : -EBADMSG;

        r = event_info_new(ev, copy, &e);
        if (r < 0)
                return r;
        r = parser_set_event(p, (unsigned) id, e);
        if (r < 0)
                return r;
        TAKE_PTR(e);
        return id;
}

void ftrace_parser_get_stats(const FtraceParser *p, FtraceParserStats *ret) {
        assert(p);
        assert(ret);
        *ret = p->stats;
}

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

/* The commit word: data length in the low 27 bits, flags in bits 30 and 31. */
static inline uint64_t page_commit(const FtraceParser *p, const uint8_t *page) {
        return p->commit_size == 8 ? rd64(page + 8) : rd32(page + 8);
}

ssize_t ftrace_parser_page_data_size(const FtraceParser *p, const void *page, size_t size) {
        assert(p);
        assert(page || size == 0);

        if (!p->header_loaded)
                return -EINVAL;
        if (size < p->data_offset)
                return -EBADMSG;
        return (ssize_t) (page_commit(p, page) & RB_COMMIT_SIZE_MASK);
}

int ftrace_parser_page_lost_events(const FtraceParser *p, const void *page, size_t size) {
        assert(p);
        assert(page || size == 0);

        if (!p->header_loaded)
                return -EINVAL;
        if (size < p->data_offset)
                return -EBADMSG;
        return !!(page_commit(p, page) & RB_MISSED_EVENTS);
}

/* ---- bundles ------------------------------------------------------------------------ */

static void interner_done(Interner *in) {
        in->keys = mfree(in->keys);
        in->lengths = mfree(in->lengths);
        in->slots = mfree(in->slots);
        in->n = in->allocated = in->n_slots = 0;
}

static void interner_reset(Interner *in) {
        in->n = 0;
        if (in->slots)
                memset(in->slots, 0, in->n_slots * sizeof(uint32_t));
}

static void compact_sched_done(CompactSched *c) {
        for (size_t i = 0; i < _COL_MAX; i++)
                buf_done(&c->col[i]);
        interner_done(&c->names);
}

static void compact_sched_reset(CompactSched *c) {
        for (size_t i = 0; i < _COL_MAX; i++)
                c->col[i].len = 0;
        interner_reset(&c->names);
        memset(c->comm_cache, 0xff, sizeof(c->comm_cache));
        c->last_switch_ts = c->last_waking_ts = 0;
}

int ftrace_bundle_new(uint32_t cpu, bool compact_sched, FtraceBundle **ret) {
        FtraceBundle *b;

        assert(ret);

        b = calloc(1, sizeof(FtraceBundle));
        if (!b)
                return -ENOMEM;
        b->cpu = cpu;
        b->compact_sched = compact_sched;
        memset(b->compact.comm_cache, 0xff, sizeof(b->compact.comm_cache));
        *ret = b;
        return 0;
}

FtraceBundle *ftrace_bundle_free(FtraceBundle *b) {
        if (!b)
                return NULL;
        free(b->pids);
        free(b->renamed);
        buf_done(&b->out);
        buf_done(&b->packed);
        free(b->errors);
        compact_sched_done(&b->compact);
        return mfree(b);
}

size_t ftrace_bundle_n_events(const FtraceBundle *b) {
        assert(b);
        return b->n_events;
}

size_t ftrace_bundle_n_skipped(const FtraceBundle *b) {
        assert(b);
        return b->n_skipped;
}

size_t ftrace_bundle_n_errors(const FtraceBundle *b) {
        assert(b);
        return b->n_errors;
}

bool ftrace_bundle_lost_events(const FtraceBundle *b) {
        assert(b);
        return b->lost_events;
}

void ftrace_bundle_set_lost_events(FtraceBundle *b) {
        assert(b);
        b->lost_events = true;
}

uint64_t ftrace_bundle_last_timestamp(const FtraceBundle *b) {
        assert(b);
        return b->last_ts;
}

/* The output starts with the cpu field, so that pack only appends. */
static int bundle_begin(FtraceBundle *b) {
        int r;

        if (b->out.len > 0)
                return 0;
        r = buf_reserve(&b->out, 16);
        if (r < 0)
                return r;
        b->out.data[0] = (BUNDLE_CPU << 3) | WT_VARINT;
        b->out.len = (size_t) (pb_varint(b->out.data + 1, b->cpu) - b->out.data);
        return 0;
}

/* Errors are rare; past MAX_ERRORS_PER_BUNDLE (a page of garbage after another) they are
 * only counted in the parser's stats. */
static void bundle_add_error(FtraceBundle *b, uint64_t timestamp, FtraceParseStatus status) {
        if (!b->errors) {
                b->errors = malloc(MAX_ERRORS_PER_BUNDLE * sizeof(FtraceErrorEntry));
                if (!b->errors)
                        return;
        }
        if (b->n_errors >= MAX_ERRORS_PER_BUNDLE)
                return;
        b->errors[b->n_errors++] = (FtraceErrorEntry) { timestamp, (uint32_t) status };
}

/* ---- the hot path ------------------------------------------------------------------- */

/* If-chains, not switches: a jump table's indirect branch per field costs more here
 * than the few well-predicted compares (and kernel formats are mostly 4 and 8 bytes). */
static inline uint64_t read_number(const uint8_t *s, unsigned size, bool is_signed) {
        if (_likely_(size == 4)) {
                uint32_t v = rd32(s);

                return is_signed ? (uint64_t) (int64_t) (int32_t) v : v;
        }
        if (size == 8)
                return rd64(s);
        if (size == 2) {
                uint16_t v;

                memcpy(&v, s, sizeof(v));
                return is_signed ? (uint64_t) (int64_t) (int16_t) v : v;
        }
        return is_signed ? (uint64_t) (int64_t) (int8_t) s[0] : s[0];
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

/* A char array of @size bytes as a string; the bound reserved @size bytes of room. */
static inline uint8_t *put_chars(uint8_t *p, const uint8_t *s, size_t size) {
        size_t n = str_len(s, size);

        *p++ = (uint8_t) n;
        if (_likely_(size == 16 && n < 0x80)) {
                memcpy(p, s, 16);       /* fixed size: two moves, not a call */
                return p + n;
        }
        return pb_put_bytes(p - 1, s, n);
}

static uint8_t *put_hex(uint8_t *p, const uint8_t *s, size_t n) {
        static const char digits[] = "0123456789abcdef";

        p = pb_varint(p, 2 * n);
        for (size_t i = 0; i < n; i++) {
                *p++ = (uint8_t) digits[s[i] >> 4];
                *p++ = (uint8_t) digits[s[i] & 0xf];
        }
        return p;
}

/* A __data_loc word is offset (low 16 bits) and length (high 16 bits); __rel_loc counts
 * the offset from the end of the word. False if the bytes lie outside the record. */
static inline bool dataloc(const FieldSpec *f, const uint8_t *rec, size_t len,
                           const uint8_t **ret, size_t *ret_n) {
        uint32_t w = rd32(rec + f->offset);
        size_t off = w & 0xffff, n = w >> 16;

        if (f->relative)
                off += (size_t) f->offset + 4;
        if (off > len || n > len - off)
                return false;
        *ret = rec + off;
        *ret_n = n;
        return true;
}

/* The key and value of the fields that are neither numbers nor char arrays. NULL if
 * the record contradicts its format. */
static uint8_t *put_field_other(uint8_t *p, const FieldSpec *f, const uint8_t *rec, size_t len) {
        const uint8_t *s = rec + f->offset;
        size_t n;

        if (f->source == SRC_CHARS_REST) {
                p = pb_put_key(p, &f->key);
                return pb_put_bytes(p, s, str_len(s, len - f->offset));
        }
        if (f->source == SRC_BYTES) {
                p = pb_put_key(p, &f->key);
                return put_hex(p, s, f->size);
        }
        if (!dataloc(f, rec, len, &s, &n))
                return NULL;
        p = pb_put_key(p, &f->key);
        if (f->source == SRC_DATALOC_CHARS)
                return pb_put_bytes(p, s, str_len(s, n));
        return put_hex(p, s, n);
}

/* Writes the key and value of @f. NULL if the record contradicts its format. The caller
 * reserved EventInfo's bound, which covers every case. */
static inline uint8_t *put_field(uint8_t *p, const FieldSpec *f, const uint8_t *rec, size_t len) {
        if (_likely_(f->source == SRC_INT)) {
                p = pb_put_key(p, &f->key);
                return pb_varint(p, read_number(rec + f->offset, f->size, f->is_signed));
        }
        if (_likely_(f->source == SRC_CHARS)) {
                p = pb_put_key(p, &f->key);
                return put_chars(p, rec + f->offset, f->size);
        }
        return put_field_other(p, f, rec, len);
}

static inline uint8_t *put_int32(uint8_t *p, const FieldSpec *f, const uint8_t *rec) {
        uint32_t v = rd32(rec + f->offset);

        p = pb_put_key(p, &f->key);
        return pb_varint(p, f->is_signed ? (uint64_t) (int64_t) (int32_t) v : v);
}

static inline uint8_t *put_comm(uint8_t *p, const FieldSpec *f, const uint8_t *rec) {
        p = pb_put_key(p, &f->key);
        return put_chars(p, rec + f->offset, 16);
}

/* Layouts checked by event_info_setup_shape(). */
static uint8_t *put_sched_switch(uint8_t *p, const FieldSpec *f, const uint8_t *rec) {
        p = put_comm(p, &f[0], rec);
        p = put_int32(p, &f[1], rec);
        p = put_int32(p, &f[2], rec);
        p = pb_put_key(p, &f[3].key);
        p = pb_varint(p, rd64(rec + f[3].offset));
        p = put_comm(p, &f[4], rec);
        p = put_int32(p, &f[5], rec);
        return put_int32(p, &f[6], rec);
}

static uint8_t *put_sched_waking(uint8_t *p, const FieldSpec *f, const uint8_t *rec) {
        p = put_comm(p, &f[0], rec);
        p = put_int32(p, &f[1], rec);
        p = put_int32(p, &f[2], rec);
        return put_int32(p, &f[3], rec);
}

static uint8_t *put_typed_fields(uint8_t *p, const EventInfo *e, const uint8_t *rec, size_t len) {
        for (size_t i = 0; p && i < e->n_fields; i++)
                p = put_field(p, &e->fields[i], rec, len);
        return p;
}

/* GenericFtraceEvent { event_name 1, field 2 { name 1, str_value 3 | int_value 4 | uint_value 5 } } */
static uint8_t *put_generic_fields(uint8_t *p, const EventInfo *e, const uint8_t *rec, size_t len) {
        memcpy(p, e->name_pb, e->name_pb_len);
        p += e->name_pb_len;
        for (size_t i = 0; p && i < e->n_fields; i++) {
                const FieldSpec *f = &e->fields[i];
                uint8_t *field_len;

                *p++ = (GENERIC_FIELD << 3) | WT_LEN;
                field_len = p++;
                memcpy(p, f->name_pb, f->name_pb_len);
                p = put_field(p + f->name_pb_len, f, rec, len);
                if (p)
                        p = pb_close(field_len, p);
        }
        return p;
}

static int bundle_add_full(FtraceBundle *b, const EventInfo *e, const uint8_t *rec, size_t len,
                           uint64_t ts) {
        uint8_t *p, *event_len, *message_len;
        int r;

        r = buf_reserve(&b->out, e->out_fixed + e->n_dynamic * 2 * len);
        if (r < 0)
                return r;
        p = b->out.data + b->out.len;
        *p++ = (BUNDLE_EVENT << 3) | WT_LEN;
        event_len = p++;
        /* timestamp, pid, then the event: the order trace_processor's fast path expects. */
        *p++ = (EVENT_TIMESTAMP << 3) | WT_VARINT;
        p = pb_varint(p, ts);
        *p++ = (EVENT_PID << 3) | WT_VARINT;
        p = pb_varint(p, e->has_pid ? rd32(rec + e->pid_offset) : 0);
        p = pb_put_key(p, &e->key);
        message_len = p++;
        if (e->shape == SHAPE_SCHED_SWITCH)
                p = put_sched_switch(p, e->fields, rec);
        else if (e->shape == SHAPE_SCHED_WAKING)
                p = put_sched_waking(p, e->fields, rec);
        else if (e->generic)
                p = put_generic_fields(p, e, rec, len);
        else
                p = put_typed_fields(p, e, rec, len);
        if (!p)
                return -EBADMSG;        /* nothing committed: b->out.len is unchanged */
        p = pb_close(message_len, p);
        p = pb_close(event_len, p);
        b->out.len = (size_t) (p - b->out.data);
        return 0;
}

static inline size_t intern_hash(const InternKey *k, size_t n_slots) {
        uint64_t h = (k->w[0] ^ (k->w[1] * 0x9e3779b97f4a7c15ULL)) * 0xff51afd7ed558ccdULL;

        return (size_t) (h >> 32) & (n_slots - 1);
}

static int interner_grow_slots(Interner *in) {
        size_t n = MAX(in->n_slots * 2, (size_t) 128);
        uint32_t *slots = calloc(n, sizeof(uint32_t));

        if (!slots)
                return -ENOMEM;
        for (size_t i = 0; i < in->n; i++) {
                size_t h = intern_hash(&in->keys[i], n);

                while (slots[h])
                        h = (h + 1) & (n - 1);
                slots[h] = (uint32_t) i + 1;
        }
        free(in->slots);
        in->slots = slots;
        in->n_slots = n;
        return 0;
}

static int interner_grow_entries(Interner *in) {
        size_t n = MAX(in->allocated * 2, (size_t) 64);
        InternKey *keys;
        uint8_t *lengths;

        keys = realloc(in->keys, n * sizeof(InternKey));
        if (!keys)
                return -ENOMEM;
        in->keys = keys;
        lengths = realloc(in->lengths, n);
        if (!lengths)
                return -ENOMEM;
        in->lengths = lengths;
        in->allocated = n;
        return 0;
}

/* The bytes of @w before its first NUL, and their count (8 when there is none). */
static inline uint64_t word_before_nul(uint64_t w, size_t *ret_n) {
        uint64_t zero = (w - 0x0101010101010101ULL) & ~w & 0x8080808080808080ULL;
        size_t n;

        /* The lowest flagged byte is always a real NUL (false positives lie above one). */
        if (!zero) {
                *ret_n = 8;
                return w;
        }
        n = (size_t) __builtin_ctzll(zero) / 8;
        *ret_n = n;
        /* No branch on n == 0: comms of 8 and of 9-15 characters alternate in a storm. */
        return w & ~(UINT64_MAX << (8 * n));
}

/* Interns the comm at @s, a char array of TASK_COMM_LEN (16) bytes, the only size the
 * compact encoders take (compact_field_fits()). Called on every comm-cache miss: the key
 * stays in registers (a 16-byte key built on the stack and read back as two words stalls
 * store forwarding), and a comm seen before costs a hash and one compare. */
static inline __attribute__((always_inline)) int interner_add(Interner *in, const uint8_t *s, uint32_t *ret) {
        uint64_t w0, w1;
        size_t n, h;
        uint32_t v;
        int r;

        if (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__) {
                size_t n1;

                w0 = word_before_nul(rd64(s), &n);
                if (n < 8)
                        w1 = 0;
                else {
                        w1 = word_before_nul(rd64(s + 8), &n1);
                        n += n1;
                }
        } else {
                InternKey k = {};

                n = str_len(s, sizeof(InternKey));
                memcpy(k.w, s, n);
                w0 = k.w[0];
                w1 = k.w[1];
        }
        if (_unlikely_((in->n + 1) * 2 > in->n_slots)) {
                r = interner_grow_slots(in);
                if (r < 0)
                        return r;
        }
        for (h = intern_hash(&(InternKey) { { w0, w1 } }, in->n_slots);; h = (h + 1) & (in->n_slots - 1)) {
                v = in->slots[h];
                if (v == 0)
                        break;
                if (_likely_(in->keys[v - 1].w[0] == w0 && in->keys[v - 1].w[1] == w1)) {
                        *ret = v - 1;
                        return 0;
                }
        }
        if (in->n >= in->allocated) {
                r = interner_grow_entries(in);
                if (r < 0)
                        return r;
        }
        in->keys[in->n] = (InternKey) { { w0, w1 } };
        in->lengths[in->n] = (uint8_t) n;
        in->slots[h] = (uint32_t) ++in->n;
        *ret = (uint32_t) in->n - 1;
        return 0;
}

/* What one page's walk keeps to itself, so that the compiler can hold it in registers.
 * Kept in the bundle and the parser instead, every byte stored into a column (a store
 * through uint8_t *, which may alias anything) made the walk load it all again. With this,
 * fields read at fixed sizes and room made once per page: 162 -> 128 instructions per
 * event in callgrind on the storm's pages. */
typedef struct PageWalk {
        EventInfo *const *by_id;
        size_t n_by_id;
        bool compact;
        uint64_t signature[_COMPACT_ROLE_MAX];   /* compact bundles only */
        uint8_t *at[_COL_MAX];    /* compact: where each column's next value goes */
        uint64_t last_switch_ts, last_waking_ts;
        size_t n_events;
        uint64_t last_ts;
} PageWalk;

/* Field 5 is the intern table, not a column. */
static inline bool is_column(unsigned i) {
        return i >= COL_SWITCH_TIMESTAMP && i != 5;
}

/* Takes the walk's state out of @p and @b; a compact bundle gets room in every column
 * for as many events as the page can hold, each value at most 10 bytes. */
static inline __attribute__((always_inline)) int page_walk_begin(PageWalk *w, const FtraceParser *p,
                                                                 FtraceBundle *b, size_t data_len) {
        CompactSched *c = &b->compact;

        *w = (PageWalk) { .by_id = p->by_id, .n_by_id = p->n_by_id, .compact = b->compact_sched };
        for (unsigned i = 0; i < _COMPACT_ROLE_MAX; i++)
                w->signature[i] = w->compact ? p->signature[i] : NO_SIGNATURE;
        if (!w->compact)
                return 0;
#pragma GCC unroll 16
        for (unsigned i = 0; i < _COL_MAX; i++)
                if (is_column(i)) {
                        int r = buf_reserve(&c->col[i], (data_len / p->compact_min_record + 1) * 10);
                        if (r < 0)
                                return r;
                        w->at[i] = c->col[i].data + c->col[i].len;
                }
        w->last_switch_ts = c->last_switch_ts;
        w->last_waking_ts = c->last_waking_ts;
        return 0;
}

static inline __attribute__((always_inline)) void page_walk_end(const PageWalk *w, FtraceParser *p,
                                                                 FtraceBundle *b) {
        CompactSched *c = &b->compact;

        if (w->compact) {
#pragma GCC unroll 16
                for (unsigned i = 0; i < _COL_MAX; i++)
                        if (is_column(i))
                                c->col[i].len = (size_t) (w->at[i] - c->col[i].data);
                c->last_switch_ts = w->last_switch_ts;
                c->last_waking_ts = w->last_waking_ts;
        }
        if (w->n_events > 0) {
                b->n_events += w->n_events;
                b->last_ts = w->last_ts;
                p->stats.events += w->n_events;
        }
}

static inline void col_put(PageWalk *w, unsigned col, uint64_t v) {
        w->at[col] = pb_varint(w->at[col], v);
}

/* The compact events' fields, of the sizes compact_field_fits() allows. */
static inline int32_t compact_int(const EventInfo *e, int which, const uint8_t *rec) {
        return (int32_t) rd32(rec + e->compact_offset[which]);
}

static inline uint64_t compact_prev_state(const EventInfo *e, const uint8_t *rec) {
        const uint8_t *s = rec + e->compact_offset[CS_PREV_STATE];

        return e->compact_size[CS_PREV_STATE] == 8 ? rd64(s) : (uint64_t) (int64_t) (int32_t) rd32(s);
}

/* The comm of @pid (field @which of @rec): its index in the bundle's intern table. */
static inline __attribute__((always_inline)) int compact_intern_comm(CompactSched *c, const EventInfo *e, int which,
                                                                     const uint8_t *rec, int32_t pid, uint32_t *ret) {
        const uint8_t *s = rec + e->compact_offset[which];
        CommCacheEntry *ce;
        uint64_t w0, w1;
        int r;

        /* The same raw bytes are the same string, whatever follows the NUL. */
        w0 = rd64(s);
        w1 = rd64(s + 8);
        ce = &c->comm_cache[(uint32_t) pid % COMM_CACHE_SIZE];
        if (_likely_(ce->pid == pid && ce->w0 == w0 && ce->w1 == w1)) {
                *ret = ce->index;
                return 0;
        }
        r = interner_add(&c->names, s, ret);
        if (r < 0)
                return r;
        *ce = (CommCacheEntry) { .pid = pid, .index = *ret, .w0 = w0, .w1 = w1 };
        return 0;
}

/* Timestamps are delta-encoded per kind within the bundle, the first one absolute.
 * Every field is read before the first column store. */
static inline __attribute__((always_inline)) int bundle_add_compact_switch(
                FtraceBundle *b, PageWalk *w, const EventInfo *e, const uint8_t *rec, uint64_t ts,
                int32_t next_pid) {
        uint64_t prev_state = compact_prev_state(e, rec);
        int32_t prio = compact_int(e, CS_NEXT_PRIO, rec);
        uint32_t comm;
        int r;

        r = compact_intern_comm(&b->compact, e, CS_NEXT_COMM, rec, next_pid, &comm);
        if (r < 0)
                return r;
        col_put(w, COL_SWITCH_TIMESTAMP, ts - w->last_switch_ts);
        w->last_switch_ts = ts;
        col_put(w, COL_SWITCH_NEXT_PID, (uint64_t) (int64_t) next_pid);
        /* Nearly always one byte each: one test for the three. */
        if (_likely_(((prev_state | (uint64_t) (int64_t) prio | comm) & ~(uint64_t) 0x7f) == 0)) {
                *w->at[COL_SWITCH_PREV_STATE]++ = (uint8_t) prev_state;
                *w->at[COL_SWITCH_NEXT_PRIO]++ = (uint8_t) prio;
                *w->at[COL_SWITCH_NEXT_COMM_INDEX]++ = (uint8_t) comm;
                return 0;
        }
        col_put(w, COL_SWITCH_PREV_STATE, prev_state);
        col_put(w, COL_SWITCH_NEXT_PRIO, (uint64_t) (int64_t) prio);
        col_put(w, COL_SWITCH_NEXT_COMM_INDEX, comm);
        return 0;
}

static inline __attribute__((always_inline)) int bundle_add_compact_waking(
                FtraceBundle *b, PageWalk *w, const EventInfo *e, const uint8_t *rec, uint64_t ts,
                int32_t pid) {
        int32_t cpu = compact_int(e, CW_TARGET_CPU, rec), prio = compact_int(e, CW_PRIO, rec);
        /* Written for every waking or for none, so the column stays aligned. */
        uint8_t flags = e->has_common_flags ? rec[e->common_flags_offset] : 0;
        uint32_t comm;
        int r;

        r = compact_intern_comm(&b->compact, e, CW_COMM, rec, pid, &comm);
        if (r < 0)
                return r;
        col_put(w, COL_WAKING_TIMESTAMP, ts - w->last_waking_ts);
        w->last_waking_ts = ts;
        col_put(w, COL_WAKING_PID, (uint64_t) (int64_t) pid);
        if (_likely_((((uint64_t) (int64_t) cpu | (uint64_t) (int64_t) prio | comm | flags) & ~(uint64_t) 0x7f) == 0)) {
                *w->at[COL_WAKING_TARGET_CPU]++ = (uint8_t) cpu;
                *w->at[COL_WAKING_PRIO]++ = (uint8_t) prio;
                *w->at[COL_WAKING_COMM_INDEX]++ = (uint8_t) comm;
                *w->at[COL_WAKING_COMMON_FLAGS]++ = flags;
                return 0;
        }
        col_put(w, COL_WAKING_TARGET_CPU, (uint64_t) (int64_t) cpu);
        col_put(w, COL_WAKING_PRIO, (uint64_t) (int64_t) prio);
        col_put(w, COL_WAKING_COMM_INDEX, comm);
        col_put(w, COL_WAKING_COMMON_FLAGS, flags);
        return 0;
}

/* Appends @pid to a growing list of pids; a failed allocation drops it: a missing
 * process name is not worth failing the trace. */
static void pid_list_append(int32_t **list, size_t *n, size_t *allocated, int32_t pid) {
        if (*n >= *allocated) {
                size_t a = MAX(*allocated * 2, (size_t) 64);
                int32_t *p = realloc(*list, a * sizeof(int32_t));
                if (!p)
                        return;
                *list = p;
                *allocated = a;
        }
        (*list)[(*n)++] = pid;
}

static void bundle_note_new_pid(FtraceBundle *b, int32_t *slot, int32_t pid) {
        *slot = pid;
        pid_list_append(&b->pids, &b->n_pids, &b->pids_allocated, pid);
}

static inline void bundle_note_pid(FtraceBundle *b, int32_t pid) {
        int32_t *slot = &b->pid_cache[(uint32_t) pid % PID_CACHE_SIZE];

        if (_likely_(*slot == pid) || pid <= 0)
                return;
        bundle_note_new_pid(b, slot, pid);
}

static void bundle_note_renamed(FtraceBundle *b, int32_t pid) {
        pid_list_append(&b->renamed, &b->n_renamed, &b->renamed_allocated, pid);
}

size_t ftrace_bundle_take_renamed(FtraceBundle *b, const int32_t **ret) {
        size_t n = b->n_renamed;

        *ret = b->renamed;
        b->n_renamed = 0;
        return n;
}

size_t ftrace_bundle_take_pids(FtraceBundle *b, const int32_t **ret) {
        size_t n = b->n_pids;

        *ret = b->pids;
        b->n_pids = 0;
        return n;
}

/* The threads an event names: the one that ran it, and the one a switch runs next. */
static inline void note_pids(FtraceBundle *b, const EventInfo *e, const uint8_t *rec) {
        if (e->has_pid)
                bundle_note_pid(b, (int32_t) rd32(rec + e->pid_offset));
        if (e->compact_role == COMPACT_SWITCH)
                bundle_note_pid(b, compact_int(e, CS_NEXT_PID, rec));
}

/* Compact events note only a switch's next_pid: a thread that runs (and so wakes others,
 * or is switched out) was switched in first, or was running when tracing started, and
 * then the /proc scan, made after tracing_on, describes it. One pid-cache probe per
 * switch instead of two per event. */
static inline __attribute__((always_inline)) int walk_compact_switch(
                FtraceBundle *b, PageWalk *w, const EventInfo *e, const uint8_t *rec, uint64_t ts) {
        int32_t next_pid = compact_int(e, CS_NEXT_PID, rec);
        int r;

        r = bundle_add_compact_switch(b, w, e, rec, ts, next_pid);
        if (r < 0)
                return r;
        bundle_note_pid(b, next_pid);
        w->n_events++;
        w->last_ts = ts;
        return 1;
}

static inline __attribute__((always_inline)) int walk_compact_waking(
                FtraceBundle *b, PageWalk *w, const EventInfo *e, const uint8_t *rec, uint64_t ts) {
        int32_t pid = compact_int(e, CW_PID, rec);
        int r;

        r = bundle_add_compact_waking(b, w, e, rec, ts, pid);
        if (r < 0)
                return r;
        /* A thread woken that never runs before the end is named by its waking. */
        bundle_note_pid(b, pid);
        w->n_events++;
        w->last_ts = ts;
        return 1;
}

/* One data record. Returns 1 if an event was appended, 0 if skipped, -EBADMSG if the
 * record does not fit its format, -ENOMEM. */
static inline __attribute__((always_inline)) int parser_add_record(
                FtraceParser *p, FtraceBundle *b, PageWalk *w, const uint8_t *rec, size_t len, uint64_t ts) {
        const EventInfo *e;
        uint16_t id;
        int r;

        memcpy(&id, rec, sizeof(id));   /* common_type */
        if (_unlikely_(id >= w->n_by_id || !(e = w->by_id[id]))) {
                b->n_skipped++;
                p->stats.skipped++;
                return 0;
        }
        if (_unlikely_(len < e->min_len))
                return -EBADMSG;
        if (w->compact && e->compact_role == COMPACT_SWITCH)
                return walk_compact_switch(b, w, e, rec, ts);
        if (w->compact && e->compact_role == COMPACT_WAKING)
                return walk_compact_waking(b, w, e, rec, ts);
        r = bundle_add_full(b, e, rec, len, ts);
        if (r < 0)
                return r;
        note_pids(b, e, rec);
        if (_unlikely_(e->is_rename))
                bundle_note_renamed(b, (int32_t) rd32(rec + e->rename_pid_offset));
        w->n_events++;
        w->last_ts = ts;
        return 1;
}

/* Same as rb_fix_abs_ts(): an absolute time stamp keeps 59 bits, the rest comes from
 * the running time. */
static inline uint64_t fix_abs_ts(uint64_t abs, uint64_t running) {
        if (running & RB_TS_MSB) {
                abs |= running & RB_TS_MSB;
                if (abs < running)
                        abs += 1ULL << 59;
        }
        return abs;
}

/* A padding, time-extend or time-stamp record at @ptr (@left bytes to the commit).
 * Updates *ts; returns the record's size, or the negative FtraceParseStatus. */
static inline int meta_record(FtraceParser *p, const uint8_t *ptr, size_t left, uint32_t type_len,
                              uint32_t delta, uint64_t *ts) {
        size_t len;

        if (type_len == RB_TYPE_PADDING) {
                if (delta == 0)
                        return -FTRACE_STATUS_ABI_NULL_PADDING;
                if (left < 8)
                        return -FTRACE_STATUS_ABI_SHORT_PADDING_LENGTH;
                len = rd32(ptr + 4);    /* counts itself, not the header */
                if (len < 4)
                        return -FTRACE_STATUS_ABI_INVALID_PADDING_LENGTH;
                if (len > left - 4)
                        return -FTRACE_STATUS_ABI_END_OVERFLOW;
                if (delta != RB_PADDING_NO_DELTA)
                        *ts += delta;
                p->stats.paddings++;
                return (int) (4 + len);
        }
        if (left < 8)
                return type_len == RB_TYPE_TIME_EXTEND ? -FTRACE_STATUS_ABI_SHORT_TIME_EXTEND :
                                                         -FTRACE_STATUS_ABI_SHORT_TIME_STAMP;
        if (type_len == RB_TYPE_TIME_EXTEND) {
                *ts += ((uint64_t) rd32(ptr + 4) << RB_TS_SHIFT) | delta;
                p->stats.time_extends++;
        } else {
                *ts = fix_abs_ts(((uint64_t) rd32(ptr + 4) << RB_TS_SHIFT) | delta, *ts);
                p->stats.time_stamps++;
        }
        return 8;
}

/* Where the payload of the data record at @ptr lies. Returns 0 or the negative
 * FtraceParseStatus. */
static inline int data_record(const uint8_t *ptr, size_t left, uint32_t type_len,
                              const uint8_t **ret_rec, size_t *ret_len) {
        size_t len;

        if (type_len == 0) {
                if (left < 8)
                        return -FTRACE_STATUS_ABI_SHORT_DATA_LENGTH;
                len = rd32(ptr + 4);    /* counts itself */
                if (len == 0)
                        return -FTRACE_STATUS_ABI_ZERO_DATA_LENGTH;
                if (len < 4)
                        return -FTRACE_STATUS_ABI_INVALID_DATA_LENGTH;
                len -= 4;
                ptr += 8;
                left -= 8;
        } else {
                len = 4 * (size_t) type_len;
                ptr += 4;
                left -= 4;
        }
        if (len > left)
                return -FTRACE_STATUS_ABI_END_OVERFLOW;
        if (len < 2)
                return -FTRACE_STATUS_ABI_SHORT_EVENT_ID;
        *ret_rec = ptr;
        *ret_len = len;
        return 0;
}

/* Walks the records in [ptr, end). Returns 0, or the negative FtraceParseStatus that
 * stopped it (or -ENOMEM, flagged in *ret_nomem). */
static inline __attribute__((always_inline)) int parser_walk_records(
                FtraceParser *p, FtraceBundle *b, PageWalk *w, const uint8_t *ptr, const uint8_t *end,
                uint64_t ts, bool *ret_nomem) {
        int r;

        while (ptr < end) {
                size_t left = (size_t) (end - ptr), len;
                uint32_t header, type_len;
                const uint8_t *rec;

                /* The storm's records, switches and wakings of their usual length, skip
                 * the general checks: their signature says what they are and how long. */
                if (_likely_(left >= 8)) {
                        uint64_t sig = rd64(ptr) & SIGNATURE_MASK;
                        size_t size = 4 + 4 * (size_t) (sig & 0x1f);

                        if (sig == w->signature[COMPACT_SWITCH] && size <= left) {
                                ts += rd32(ptr) >> 5;
                                r = walk_compact_switch(b, w, &standard_switch, ptr + 4, ts);
                                if (r < 0)
                                        return *ret_nomem = true, r;
                                ptr += size;
                                continue;
                        }
                        if (sig == w->signature[COMPACT_WAKING] && size <= left) {
                                ts += rd32(ptr) >> 5;
                                r = walk_compact_waking(b, w, &standard_waking, ptr + 4, ts);
                                if (r < 0)
                                        return *ret_nomem = true, r;
                                ptr += size;
                                continue;
                        }
                }
                if (left < 4)
                        return -FTRACE_STATUS_ABI_SHORT_EVENT_HEADER;
                header = rd32(ptr);
                type_len = header & 0x1f;
                if (_unlikely_(type_len > RB_TYPE_DATA_MAX)) {
                        r = meta_record(p, ptr, left, type_len, header >> 5, &ts);
                        if (r < 0)
                                return r;
                        ptr += r;
                        continue;
                }
                r = data_record(ptr, left, type_len, &rec, &len);
                if (r < 0)
                        return r;
                ts += header >> 5;
                r = parser_add_record(p, b, w, rec, len, ts);
                if (r < 0) {
                        *ret_nomem = r == -ENOMEM;
                        return r == -ENOMEM ? r : -FTRACE_STATUS_INVALID_EVENT;
                }
                ptr = rec + len;
        }
        return 0;
}

/* Walks a page's records. Returns the number of events appended, or as
 * parser_walk_records(); the events appended before an error stay. */
static int parser_walk(FtraceParser *p, FtraceBundle *b, const uint8_t *ptr, size_t len, uint64_t ts,
                       bool *ret_nomem) {
        PageWalk w;
        int r;

        r = page_walk_begin(&w, p, b, len);
        if (r < 0) {
                *ret_nomem = true;
                return r;
        }
        r = parser_walk_records(p, b, &w, ptr, ptr + len, ts, ret_nomem);
        page_walk_end(&w, p, b);
        return r < 0 ? r : (int) w.n_events;
}

int ftrace_parser_parse_page(FtraceParser *p, const void *page, size_t size, FtraceBundle *b) {
        const uint8_t *data = page;
        uint64_t ts = 0, commit = 0;
        size_t data_len;
        bool nomem = false;
        int r;

        assert(p);
        assert(b);
        assert(page || size == 0);

        if (!p->header_loaded)
                return -EINVAL;
        r = bundle_begin(b);
        if (r < 0)
                return r;
        p->stats.pages++;

        if (size >= p->data_offset) {
                ts = rd64(data);
                commit = page_commit(p, data);
        }
        data_len = commit & RB_COMMIT_SIZE_MASK;
        if (size < p->data_offset || data_len > size - p->data_offset) {
                r = -FTRACE_STATUS_ABI_INVALID_PAGE_HEADER;
        } else {
                if (commit & RB_MISSED_EVENTS) {
                        b->lost_events = true;
                        p->stats.lost_pages++;
                }
                r = parser_walk(p, b, data + p->data_offset, data_len, ts, &nomem);
        }
        if (nomem)
                return -ENOMEM;
        if (r >= 0)
                return r;

        bundle_add_error(b, ts, (FtraceParseStatus) -r);
        p->stats.bad_pages++;
        return -EBADMSG;
}

/* ---- packing ------------------------------------------------------------------------- */

static size_t compact_sched_size(const CompactSched *c) {
        size_t n = 0;

        for (size_t i = 0; i < _COL_MAX; i++)
                if (c->col[i].len > 0)
                        n += 1 + pb_varint_len(c->col[i].len) + c->col[i].len;
        for (size_t i = 0; i < c->names.n; i++)
                n += 1 + pb_varint_len(c->names.lengths[i]) + c->names.lengths[i];
        return n;
}

/* Timestamps are near random in their low bits: coding them would save a tenth for
 * the cost of a pass over them. The other columns hold a few values each. */
static bool column_repays_coding(unsigned i) {
        return i != COL_SWITCH_TIMESTAMP && i != COL_WAKING_TIMESTAMP;
}

/* Notes [start, end) of the bytes being packed from @base as worth coding. */
static void note_coded(FtraceBundle *b, const uint8_t *base, const uint8_t *start, const uint8_t *end) {
        assert(b->n_coded < ELEMENTSOF(b->coded));
        b->coded[b->n_coded++] = (DeflateSpan) { (size_t) (start - base), (size_t) (end - base) };
}

static uint8_t *put_compact_sched(uint8_t *p, FtraceBundle *b, const uint8_t *base, size_t size) {
        const CompactSched *c = &b->compact;

        *p++ = (BUNDLE_COMPACT_SCHED << 3) | WT_LEN;
        p = pb_varint(p, size);
        for (size_t i = 0; i < c->names.n; i++) {
                *p++ = (COMPACT_INTERN_TABLE << 3) | WT_LEN;
                p = pb_put_bytes(p, c->names.keys[i].w, c->names.lengths[i]);
        }
        for (unsigned i = 0; i < _COL_MAX; i++) {
                uint8_t *start = p;

                if (c->col[i].len == 0)
                        continue;
                *p++ = (uint8_t) ((i << 3) | WT_LEN);
                p = pb_put_bytes(p, c->col[i].data, c->col[i].len);
                if (column_repays_coding(i))
                        note_coded(b, base, start, p);
        }
        return p;
}

static uint8_t *put_errors(uint8_t *p, const FtraceBundle *b) {
        for (size_t i = 0; i < b->n_errors; i++) {
                uint8_t *len_at;

                *p++ = (BUNDLE_ERROR << 3) | WT_LEN;
                len_at = p++;
                *p++ = (ERROR_TIMESTAMP << 3) | WT_VARINT;
                p = pb_varint(p, b->errors[i].timestamp);
                *p++ = (ERROR_STATUS << 3) | WT_VARINT;
                p = pb_varint(p, b->errors[i].status);
                p = pb_close(len_at, p);
        }
        return p;
}

static void bundle_reset(FtraceBundle *b) {
        if (b->n_events > 0)
                b->previous_end_ts = b->last_ts;
        b->n_events = b->n_skipped = b->n_errors = 0;
        b->lost_events = false;
        compact_sched_reset(&b->compact);
}

/* An error's message is at most 17 bytes: its length always fits put_errors()' one byte. */
static size_t errors_size(const FtraceBundle *b) {
        size_t n = 0;

        for (size_t i = 0; i < b->n_errors; i++)
                n += 2 + 1 + pb_varint_len(b->errors[i].timestamp) + 1 + pb_varint_len(b->errors[i].status);
        return n;
}

/* What follows the cpu field and the full events, which start at @base. */
static uint8_t *put_trailer(uint8_t *p, FtraceBundle *b, const uint8_t *base, size_t compact_size) {
        if (b->lost_events) {
                *p++ = (BUNDLE_LOST_EVENTS << 3) | WT_VARINT;
                *p++ = 1;
        }
        p = put_errors(p, b);
        /* Always written, 0 for the first bundle of a CPU (facts note 3.1, soft-drop rule). */
        *p++ = (BUNDLE_PREVIOUS_END_TIMESTAMP << 3) | WT_VARINT;
        p = pb_varint(p, b->previous_end_ts);
        if (compact_size > 0)
                p = put_compact_sched(p, b, base, compact_size);
        return p;
}

/* The exact size put_trailer() and the out buffer make together. */
static size_t bundle_packed_size(const FtraceBundle *b, size_t compact_size) {
        size_t n = b->out.len + (b->lost_events ? 2 : 0) + errors_size(b) + 1 + pb_varint_len(b->previous_end_ts);

        if (compact_size > 0)
                n += 1 + pb_varint_len(compact_size) + compact_size;
        return n;
}

int ftrace_bundle_packed_size(FtraceBundle *b, size_t *ret_len) {
        int r;

        assert(b);
        assert(ret_len);

        r = bundle_begin(b);
        if (r < 0)
                return r;
        *ret_len = bundle_packed_size(b, compact_sched_size(&b->compact));
        return 0;
}

void ftrace_bundle_pack_into(FtraceBundle *b, uint8_t *dst) {
        assert(b);
        assert(b->out.len > 0);   /* ftrace_bundle_packed_size() came first */

        b->n_coded = 0;
        if (dst) {
                size_t compact_size = compact_sched_size(&b->compact);
                uint8_t *end;

                memcpy(dst, b->out.data, b->out.len);
                /* Full events are protobuf fields, with names and numbers that repeat. */
                if (b->n_events > 0 && !b->compact_sched)
                        note_coded(b, dst, dst, dst + b->out.len);
                end = put_trailer(dst + b->out.len, b, dst, compact_size);
                assert((size_t) (end - dst) == bundle_packed_size(b, compact_size));
        }
        b->out.len = 0;
        bundle_reset(b);
}

size_t ftrace_bundle_coded_spans(const FtraceBundle *b, const DeflateSpan **ret) {
        assert(b);
        assert(ret);

        *ret = b->coded;
        return b->n_coded;
}

int ftrace_bundle_pack(FtraceBundle *b, const uint8_t **ret_buf, size_t *ret_len) {
        size_t len;
        int r;

        assert(b);
        assert(ret_buf);
        assert(ret_len);

        r = ftrace_bundle_packed_size(b, &len);
        if (r < 0)
                return r;
        /* The buffer stays for the next round (the caller copies the bytes out): a new one
         * per bundle was an allocation and, after glibc gave the memory back between two
         * periodic writes, page faults on every first touch. */
        r = buf_reserve(&b->packed, len);
        if (r < 0)
                return r;
        ftrace_bundle_pack_into(b, b->packed.data);
        *ret_len = len;
        *ret_buf = b->packed.data;
        return 0;
}
