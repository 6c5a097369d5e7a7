/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What an event's format file says, resolved once when the event is added: libtraceevent
 * parses the text; every field the decoder will read gets its offset, size, kind and the
 * protobuf key it is written under, so that decoding reads fields at fixed offsets with
 * no lookup by name.
 *
 * Known events map onto their typed Perfetto messages (the tables below). Unknown events
 * become GenericFtraceEvent (327): every non-common field, numbers as int_value (signed)
 * or uint_value (unsigned, pointers too), char arrays and __data_loc/__rel_loc char
 * strings as str_value up to the first NUL, and any other array (u8[], unsigned long[6],
 * __data_loc u32[]...) as str_value holding its bytes in lowercase hex, in memory order,
 * without separators.
 */
#include <assert.h>

#include "ftrace-parser-local.h"

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

/* workqueue_activate_work, _execute_start and _execute_end; with symbolize_ksyms,
 * trace_processor names the workqueue slices after the function. */
static const TypedField workqueue_work_fields[] = {
        { "work", 1, PT_VARINT }, { "function", 2, PT_VARINT }, {},
};
static const TypedField workqueue_queue_work_fields[] = {
        { "work", 1, PT_VARINT }, { "function", 2, PT_VARINT }, { "workqueue", 3, PT_STRING },
        { "req_cpu", 4, PT_VARINT }, { "cpu", 5, PT_VARINT }, {},
};
/* The function_graph tracer's events (enable_function_graph): nested slices. */
static const TypedField funcgraph_entry_fields[] = {
        { "depth", 1, PT_VARINT }, { "func", 2, PT_VARINT }, {},
};
static const TypedField funcgraph_exit_fields[] = {
        { "calltime", 1, PT_VARINT }, { "depth", 2, PT_VARINT }, { "func", 3, PT_VARINT },
        { "overrun", 4, PT_VARINT }, { "rettime", 5, PT_VARINT }, {},
};

/* Android kernels' sched_blocked_reason: trace_processor's blocked_function. */
static const TypedField sched_blocked_reason_fields[] = {
        { "pid", 1, PT_VARINT }, { "caller", 2, PT_VARINT }, { "io_wait", 3, PT_VARINT }, {},
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
        /* The events that carry code addresses trace_processor names (symbolize_ksyms). */
        { "workqueue", "workqueue_activate_work", 56, workqueue_work_fields },
        { "workqueue", "workqueue_execute_end", 57, workqueue_work_fields },
        { "workqueue", "workqueue_execute_start", 58, workqueue_work_fields },
        { "workqueue", "workqueue_queue_work", 59, workqueue_queue_work_fields },
        { "ftrace", "funcgraph_entry", 437, funcgraph_entry_fields },
        { "ftrace", "funcgraph_exit", 438, funcgraph_exit_fields },
        { "sched", "sched_blocked_reason", 18, sched_blocked_reason_fields },
};

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

/* A number as wide as a kernel address: 8 bytes, or a long of a 32-bit kernel. */
static bool field_is_pointer_sized(const struct tep_format_field *f) {
        return f->size == 8 || (f->size == (int) sizeof(void *) && strstr(f->type, "long"));
}

/* A number: an address, or plain, or opaque (ftrace-field-privacy.c says which). An int
 * kept in 8 bytes (the syscall events' arguments) is read at its declared width, with
 * the sign the format gives it: its upper half is whatever the register held, and never
 * puts the value in the kernel's half of the address space. */
static void field_spec_number(FieldSpec *s, const struct tep_format_field *f, const char *text) {
        s->source = SRC_INT;
        s->is_address = f->size >= 4 && ftrace_field_is_address(f, text);
        if (s->is_address)
                return;
        if (f->size == 8 && ftrace_type_is_narrow(f->type)) {
                s->size = 4;
                if (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__)
                        s->offset += 4;
                return;
        }
        s->is_opaque = field_is_pointer_sized(f) && !ftrace_field_name_is_plain(f->name);
}

/* An array that is no text: opaque when its elements are pointer-sized numbers. */
static void field_spec_array(FieldSpec *s, const struct tep_format_field *f, FieldSource source) {
        s->source = source;
        s->is_opaque = ftrace_array_of_words(f) && !ftrace_field_name_is_plain(f->name);
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
                else if (array_is_char(f))
                        s->source = SRC_DATALOC_CHARS;
                else
                        field_spec_array(s, f, SRC_DATALOC_BYTES);
                s->relative = f->flags & TEP_FIELD_IS_RELATIVE ||
                        strncmp(f->type, "__rel_loc", 9) == 0;
        } else if ((f->flags & TEP_FIELD_IS_ARRAY) || strchr(f->type, '[')) {
                if (array_is_char(f))
                        s->source = f->size == 0 ? SRC_CHARS_REST : SRC_CHARS;
                else
                        field_spec_array(s, f, SRC_BYTES);
        } else if (is_int_size(f->size))
                field_spec_number(s, f, text);
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

/* The source @f is written from when addresses are hashed; its own when it stays. */
static FieldSource hashed_source(const FieldSpec *f) {
        if (f->source == SRC_INT && (f->is_address || f->is_opaque))
                return SRC_ADDRESS;
        if (f->source == SRC_BYTES && f->is_opaque)
                return SRC_ADDRESS_WORDS;
        if (f->source == SRC_DATALOC_BYTES && f->is_opaque)
                return SRC_DATALOC_ADDRESS_WORDS;
        return f->source;
}

void ftrace_event_info_hash_addresses(EventInfo *e, AddressHasher *hasher) {
        for (size_t i = 0; i < e->n_fields; i++) {
                FieldSource source = hashed_source(&e->fields[i]);

                if (source == e->fields[i].source)
                        continue;
                e->fields[i].source = source;
                /* The straight-line encoders write their numbers as they are. */
                e->shape = SHAPE_TABLE;
        }
        e->hasher = hasher;
}

void ftrace_event_info_symbolize(EventInfo *e, Symbolizer *s) {
        for (size_t i = 0; i < e->n_fields; i++)
                if (e->fields[i].is_address && (e->fields[i].source == SRC_INT || e->fields[i].source == SRC_ADDRESS))
                        e->fields[i].source = SRC_SYMBOL;
        e->symbolizer = s;
}

void ftrace_event_info_free(EventInfo *e) {
        if (!e)
                return;
        for (size_t i = 0; i < e->n_fields; i++)
                free(e->fields[i].name_pb);
        free(e->fields);
        free(e->name_pb);
        free(e);
}

static uint8_t *encode_name(uint32_t field, const char *name, size_t *ret_len) {
        size_t n = MIN(strlen(name), (size_t) 200);     /* keeps FieldSpec.name_pb_len in a byte */
        PbKey k = pb_key_make(field, PB_WIRE_LEN);
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
                s.key = pb_key_make(tf->number, is_string ? PB_WIRE_LEN : PB_WIRE_VARINT);
                event_info_push(e, &s);
        }
        e->key = pb_key_make(t->number, PB_WIRE_LEN);
        return 0;
}

static int event_info_add_generic(EventInfo *e, const struct tep_event *ev, const char *text) {
        size_t n = 0;

        for (const struct tep_format_field *f = ev->format.fields; f; f = f->next)
                n++;
        e->generic = true;
        e->key = pb_key_make(EVENT_GENERIC, PB_WIRE_LEN);
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
                        s.key = pb_key_make(s.is_signed ? GENERIC_FIELD_INT : GENERIC_FIELD_UINT, PB_WIRE_VARINT);
                else
                        s.key = pb_key_make(GENERIC_FIELD_STR, PB_WIRE_LEN);
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
        return ftrace_typed_event_more(group, name);
}

bool ftrace_event_is_typed(const char *group, const char *name) {
        return typed_event_find(group, name) != NULL;
}

/* Where ftrace/print keeps buf, for the print filter (ftrace-print-filter.c). */
void ftrace_event_info_setup_print(EventInfo *e, const struct tep_event *ev) {
        const struct tep_format_field *f;

        if (!streq(strempty(ev->system), "ftrace") || !streq(strempty(ev->name), "print"))
                return;
        f = tep_find_field((struct tep_event *) ev, "buf");
        if (!f || f->offset < 0 || f->offset > UINT16_MAX)
                return;
        e->is_print = true;
        e->print_buf_offset = (uint16_t) f->offset;
}

/* The offset of field @name of @size bytes, or -1. */
static int fixed_field_offset(const struct tep_event *ev, const char *name, int size) {
        const struct tep_format_field *f = tep_find_field((struct tep_event *) ev, name);

        if (!f || f->size != size || f->offset < 0 || f->offset + size > UINT16_MAX)
                return -1;
        return f->offset;
}

/* task_rename (236) and task_newtask (235): their payloads name a task, which the
 * service describes from them when it is gone from /proc before it looks. */
static void event_info_setup_rename(EventInfo *e, const struct tep_event *ev, uint32_t number) {
        bool newtask = number == 235;
        int pid, comm, flags = 0;

        if (number != 235 && number != 236)
                return;
        pid = fixed_field_offset(ev, "pid", 4);
        comm = fixed_field_offset(ev, newtask ? "comm" : "newcomm", 16);
        if (newtask)
                flags = fixed_field_offset(ev, "clone_flags", 8);
        if (pid < 0)
                return;
        e->rename_pid_offset = (uint16_t) pid;
        e->min_len = MAX(e->min_len, (uint16_t) (pid + 4));
        e->is_rename = !newtask;
        if (comm < 0 || flags < 0)
                return;
        e->is_newtask = newtask;
        e->notes_task = true;
        e->task_comm_offset = (uint16_t) comm;
        e->task_flags_offset = (uint16_t) flags;
        e->min_len = MAX(e->min_len, (uint16_t) MAX(comm + 16, flags + 8));
}

int ftrace_event_info_new(const struct tep_event *ev, const char *text, EventInfo **ret) {
        _cleanup_(ftrace_event_info_freep) EventInfo *e = NULL;
        const TypedEvent *t;
        int r;

        e = calloc(1, sizeof(EventInfo));
        if (!e)
                return -ENOMEM;
        t = typed_event_find(strempty(ev->system), strempty(ev->name));
        r = t ? 0 : ftrace_event_info_kprobe(e, ev);
        if (t)
                r = event_info_add_typed(e, ev, t, text);
        else if (r == 0)
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

