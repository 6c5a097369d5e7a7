/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bundles: the events of one CPU between two packs, the pids they name, the errors met,
 * and packing them as FtraceEventBundle { cpu 1, event 2, lost_events 3, compact_sched 4,
 * error 8, previous_bundle_end_timestamp 10 }.
 */
#include <assert.h>

#include "ftrace-parser-local.h"

/* Rare: a bundle's buffers grow to their size in its first pages. */
int ftrace_buf_grow(Buf *b, size_t extra) {
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

void ftrace_buf_done(Buf *b) {
        b->data = mfree(b->data);
        b->len = b->cap = 0;
}


int ftrace_bundle_new(uint32_t cpu, bool compact_sched, FtraceBundle **ret) {
        FtraceBundle *b;

        assert(ret);

        b = calloc(1, sizeof(FtraceBundle));
        if (!b)
                return -ENOMEM;
        b->cpu = cpu;
        b->compact_sched = compact_sched;
        compact_comm_cache_reset(&b->compact);
        *ret = b;
        return 0;
}

FtraceBundle *ftrace_bundle_free(FtraceBundle *b) {
        if (!b)
                return NULL;
        free(b->pids);
        free(b->renamed);
        free(b->tasks);
        ftrace_buf_done(&b->out);
        ftrace_buf_done(&b->packed);
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
int ftrace_bundle_begin(FtraceBundle *b) {
        int r;

        if (b->out.len > 0)
                return 0;
        r = buf_reserve(&b->out, 16);
        if (r < 0)
                return r;
        b->out.data[0] = (BUNDLE_CPU << 3) | PB_WIRE_VARINT;
        b->out.len = (size_t) (pb_varint_encode(b->out.data + 1, b->cpu) - b->out.data);
        return 0;
}

/* Errors are rare; past MAX_ERRORS_PER_BUNDLE (a page of garbage after another) they are
 * only counted in the parser's stats. */
void ftrace_bundle_add_error(FtraceBundle *b, uint64_t timestamp, FtraceParseStatus status) {
        if (!b->errors) {
                b->errors = malloc(MAX_ERRORS_PER_BUNDLE * sizeof(FtraceErrorEntry));
                if (!b->errors)
                        return;
        }
        if (b->n_errors >= MAX_ERRORS_PER_BUNDLE)
                return;
        b->errors[b->n_errors++] = (FtraceErrorEntry) { timestamp, (uint32_t) status };
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

void ftrace_bundle_note_new_pid(FtraceBundle *b, int32_t *slot, int32_t pid) {
        *slot = pid;
        pid_list_append(&b->pids, &b->n_pids, &b->pids_allocated, pid);
}

void ftrace_bundle_note_renamed(FtraceBundle *b, int32_t pid) {
        pid_list_append(&b->renamed, &b->n_renamed, &b->renamed_allocated, pid);
}

size_t ftrace_bundle_take_renamed(FtraceBundle *b, const int32_t **ret) {
        size_t n = b->n_renamed;

        *ret = b->renamed;
        b->n_renamed = 0;
        return n;
}

/* A failed allocation or a full list drops the note: the task is then described from
 * /proc or the kernel's saved tables, as before. */
void ftrace_bundle_note_task(FtraceBundle *b, const EventInfo *e, const uint8_t *rec, uint64_t ts) {
        FtraceTaskNote *n;

        if (b->n_tasks >= b->tasks_allocated) {
                size_t a = MAX(b->tasks_allocated * 2, (size_t) 16);
                FtraceTaskNote *p;

                if (a > FTRACE_MAX_TASK_NOTES)
                        return;
                p = realloc(b->tasks, a * sizeof(FtraceTaskNote));
                if (!p)
                        return;
                b->tasks = p;
                b->tasks_allocated = a;
        }
        n = &b->tasks[b->n_tasks++];
        *n = (FtraceTaskNote) {
                .timestamp = ts,
                .pid = (int32_t) rd32(rec + e->rename_pid_offset),
        };
        memcpy(n->comm, rec + e->task_comm_offset, sizeof(n->comm) - 1);
        if (e->is_newtask) {
                n->newtask = true;
                memcpy(&n->clone_flags, rec + e->task_flags_offset, sizeof(n->clone_flags));
                n->creator = e->has_pid ? (int32_t) rd32(rec + e->pid_offset) : 0;
        }
}

size_t ftrace_bundle_take_tasks(FtraceBundle *b, const FtraceTaskNote **ret) {
        size_t n = b->n_tasks;

        *ret = b->tasks;
        b->n_tasks = 0;
        return n;
}

size_t ftrace_bundle_take_pids(FtraceBundle *b, const int32_t **ret) {
        size_t n = b->n_pids;

        *ret = b->pids;
        b->n_pids = 0;
        return n;
}

void ftrace_bundle_forget_pids(FtraceBundle *b) {
        memset(b->pid_cache, 0, sizeof(b->pid_cache));
}


/* Notes [start, end) of the bytes being packed from @base as worth coding; @literals as
 * in DeflateSpan. */
void ftrace_bundle_note_coded(FtraceBundle *b, const uint8_t *base, const uint8_t *start, const uint8_t *end,
                              bool literals) {
        assert(b->n_coded < ELEMENTSOF(b->coded));
        b->coded[b->n_coded++] = (DeflateSpan) { (size_t) (start - base), (size_t) (end - base), literals };
}

static uint8_t *put_errors(uint8_t *p, const FtraceBundle *b) {
        for (size_t i = 0; i < b->n_errors; i++) {
                uint8_t *len_at;

                *p++ = (BUNDLE_ERROR << 3) | PB_WIRE_LEN;
                len_at = p++;
                *p++ = (ERROR_TIMESTAMP << 3) | PB_WIRE_VARINT;
                p = pb_varint_encode(p, b->errors[i].timestamp);
                *p++ = (ERROR_STATUS << 3) | PB_WIRE_VARINT;
                p = pb_varint_encode(p, b->errors[i].status);
                p = pb_close(len_at, p);
        }
        return p;
}

void ftrace_bundle_set_clock(FtraceBundle *b, uint32_t ftrace_clock) {
        assert(b);
        b->ftrace_clock = ftrace_clock;
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
                n += 2 + 1 + pb_varint_size(b->errors[i].timestamp) + 1 + pb_varint_size(b->errors[i].status);
        return n;
}

/* What follows the cpu field and the full events, which start at @base. */
static uint8_t *put_trailer(uint8_t *p, FtraceBundle *b, const uint8_t *base, size_t compact_size) {
        if (b->lost_events) {
                *p++ = (BUNDLE_LOST_EVENTS << 3) | PB_WIRE_VARINT;
                *p++ = 1;
        }
        p = put_errors(p, b);
        if (b->ftrace_clock != 0) {
                *p++ = (BUNDLE_FTRACE_CLOCK << 3) | PB_WIRE_VARINT;
                *p++ = (uint8_t) b->ftrace_clock;       /* FtraceClock values are below 128 */
        }
        /* Always written, 0 for the first bundle of a CPU, as traced_probes writes it. */
        *p++ = (BUNDLE_PREVIOUS_END_TIMESTAMP << 3) | PB_WIRE_VARINT;
        p = pb_varint_encode(p, b->previous_end_ts);
        if (compact_size > 0)
                p = compact_sched_put(p, b, base, compact_size);
        return p;
}

/* The exact size put_trailer() and the out buffer make together. */
static size_t bundle_packed_size(const FtraceBundle *b, size_t compact_size) {
        size_t n = b->out.len + (b->lost_events ? 2 : 0) + (b->ftrace_clock != 0 ? 2 : 0) + errors_size(b) + 1 +
                pb_varint_size(b->previous_end_ts);

        if (compact_size > 0)
                n += 1 + pb_varint_size(compact_size) + compact_size;
        return n;
}

int ftrace_bundle_packed_size(FtraceBundle *b, size_t *ret_len) {
        int r;

        assert(b);
        assert(ret_len);

        r = ftrace_bundle_begin(b);
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
                        ftrace_bundle_note_coded(b, dst, dst, dst + b->out.len, /* literals= */ false);
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
