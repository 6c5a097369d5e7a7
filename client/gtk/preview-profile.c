/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The preview's CPU profile (preview-profile.h). Field numbers are Perfetto v58's:
 * TracePacket 10 trusted_packet_sequence_id, 12 interned_data, 66 perf_sample;
 * PerfSample 4 callstack_iid, 17 kernel_records_lost, 18 sample_skipped_reason;
 * InternedData 5 function_names, 6 frames, 7 callstacks, 17 mapping_paths, 19 mappings;
 * InternedString 1 iid, 2 str; Frame 1 iid, 2 function_name_id, 3 mapping_id;
 * Callstack 1 iid, 2 frame_ids (the outermost frame first); Mapping 1 iid, 7 path_string_ids.
 */
#include <string.h>

#include "pb-wire.h"
#include "preview-profile.h"
#include "trace-reader.h"

enum {
        PACKET_SEQUENCE_ID = 10, PACKET_INTERNED_DATA = 12, PACKET_PERF_SAMPLE = 66,
        SAMPLE_CALLSTACK = 4, SAMPLE_RECORDS_LOST = 17, SAMPLE_SKIPPED = 18,
        INTERNED_FUNCTION_NAMES = 5, INTERNED_FRAMES = 6, INTERNED_CALLSTACKS = 7,
        INTERNED_MAPPING_PATHS = 17, INTERNED_MAPPINGS = 19,
};

/* An iid within its sequence: the key of every table. Ids past 2^40 are not kept. */
#define IID_BITS 40
#define UNKNOWN_NAME "[unknown]"

typedef struct {
        guint64 function_name, mapping;
} Frame;

struct TbProfileReader {
        GHashTable *names;      /* key -> char *: function_names */
        GHashTable *paths;      /* key -> char *: mapping_paths */
        GHashTable *mappings;   /* key -> GArray of guint64: a mapping's path_string_ids */
        GHashTable *frames;     /* key -> Frame * */
        GHashTable *stacks;     /* key -> GArray of guint64: frame ids, outermost first */
        GHashTable *counts;     /* key -> guint64 *: samples of that call stack */
        guint64 unresolved, lost, skipped;
};

static gboolean make_key(guint32 seq, guint64 iid, guint64 *ret) {
        if (iid == 0 || iid >> IID_BITS)
                return FALSE;
        *ret = ((guint64) seq << IID_BITS) | iid;
        return TRUE;
}

static GHashTable *table_new(GDestroyNotify free_value) {
        return g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, free_value);
}

static void array_free(gpointer a) {
        g_array_unref(a);
}

TbProfileReader *tb_profile_reader_new(void) {
        TbProfileReader *r = g_new0(TbProfileReader, 1);

        r->names = table_new(g_free);
        r->paths = table_new(g_free);
        r->mappings = table_new(array_free);
        r->frames = table_new(g_free);
        r->stacks = table_new(array_free);
        r->counts = table_new(g_free);
        return r;
}

void tb_profile_reader_free(TbProfileReader *r) {
        if (!r)
                return;
        g_hash_table_unref(r->names);
        g_hash_table_unref(r->paths);
        g_hash_table_unref(r->mappings);
        g_hash_table_unref(r->frames);
        g_hash_table_unref(r->stacks);
        g_hash_table_unref(r->counts);
        g_free(r);
}

/* Keeps the first entry of an iid: Perfetto never redefines one. */
static void table_put(GHashTable *t, guint32 seq, guint64 iid, gpointer value, GDestroyNotify free_value) {
        guint64 key;

        if (!make_key(seq, iid, &key) || g_hash_table_size(t) >= TB_PROFILE_MAX_INTERNED ||
            g_hash_table_contains(t, &key)) {
                free_value(value);
                return;
        }
        g_hash_table_insert(t, g_memdup2(&key, sizeof(key)), value);
}

static gpointer table_get(GHashTable *t, guint32 seq, guint64 iid) {
        guint64 key;

        return make_key(seq, iid, &key) ? g_hash_table_lookup(t, &key) : NULL;
}

/* A repeated uint64, packed (one LEN field) or not (one varint each), onto @a. */
static void add_ids(GArray *a, const TraceField *f) {
        const guint8 *p = f->data, *end = f->data + f->len;
        uint64_t v;

        if (f->wire_type == TRACE_WIRE_VARINT) {
                if (a->len < TB_PROFILE_MAX_FRAMES)
                        g_array_append_val(a, f->value);
                return;
        }
        if (f->wire_type != TRACE_WIRE_LEN)
                return;
        while (p < end && a->len < TB_PROFILE_MAX_FRAMES && pb_varint_decode(&p, end, &v))
                g_array_append_val(a, v);
}

/* InternedString, Callstack or Mapping: the iid, and the string or the ids of @ids_field. */
static guint64 read_entry(const TraceField *msg, guint32 ids_field, char **ret_str, GArray *ids) {
        const guint8 *p = msg->data, *end = msg->data + msg->len;
        guint64 iid = 0;
        TraceField f;

        while (trace_field_next(&p, end, &f) > 0) {
                if (f.number == 1 && f.wire_type == TRACE_WIRE_VARINT)
                        iid = f.value;
                else if (ret_str && f.number == 2 && f.wire_type == TRACE_WIRE_LEN) {
                        g_free(*ret_str);
                        *ret_str = g_utf8_make_valid((const char *) f.data, MIN(f.len, TB_PROFILE_MAX_NAME));
                } else if (ids && f.number == ids_field)
                        add_ids(ids, &f);
        }
        return iid;
}

static void read_frame(TbProfileReader *r, guint32 seq, const TraceField *msg) {
        const guint8 *p = msg->data, *end = msg->data + msg->len;
        Frame *fr = g_new0(Frame, 1);
        guint64 iid = 0;
        TraceField f;

        while (trace_field_next(&p, end, &f) > 0) {
                if (f.wire_type != TRACE_WIRE_VARINT)
                        continue;
                if (f.number == 1)
                        iid = f.value;
                else if (f.number == 2)
                        fr->function_name = f.value;
                else if (f.number == 3)
                        fr->mapping = f.value;
        }
        table_put(r->frames, seq, iid, fr, g_free);
}

static void read_interned(TbProfileReader *r, guint32 seq, const TraceField *data) {
        const guint8 *p = data->data, *end = data->data + data->len;
        TraceField f;

        while (trace_field_next(&p, end, &f) > 0) {
                char *str = NULL;
                GArray *ids;
                guint64 iid;

                if (f.wire_type != TRACE_WIRE_LEN)
                        continue;
                switch (f.number) {
                case INTERNED_FUNCTION_NAMES:
                case INTERNED_MAPPING_PATHS:
                        iid = read_entry(&f, 0, &str, NULL);
                        table_put(f.number == INTERNED_FUNCTION_NAMES ? r->names : r->paths, seq, iid,
                                  str ?: g_strdup(""), g_free);
                        break;
                case INTERNED_FRAMES:
                        read_frame(r, seq, &f);
                        break;
                case INTERNED_CALLSTACKS:
                case INTERNED_MAPPINGS:
                        ids = g_array_new(FALSE, FALSE, sizeof(guint64));
                        iid = read_entry(&f, f.number == INTERNED_CALLSTACKS ? 2 : 7, NULL, ids);
                        table_put(f.number == INTERNED_CALLSTACKS ? r->stacks : r->mappings, seq, iid, ids,
                                  array_free);
                        break;
                default:
                        break;
                }
        }
}

static void count_stack(TbProfileReader *r, guint32 seq, guint64 iid) {
        guint64 key, *n;

        if (!make_key(seq, iid, &key)) {
                r->unresolved++;
                return;
        }
        n = g_hash_table_lookup(r->counts, &key);
        if (!n) {
                if (g_hash_table_size(r->counts) >= TB_PROFILE_MAX_INTERNED) {
                        r->unresolved++;
                        return;
                }
                n = g_new0(guint64, 1);
                g_hash_table_insert(r->counts, g_memdup2(&key, sizeof(key)), n);
        }
        (*n)++;
}

static void read_sample(TbProfileReader *r, guint32 seq, const TraceField *sample) {
        const guint8 *p = sample->data, *end = sample->data + sample->len;
        guint64 callstack = 0;
        gboolean lost = FALSE, skipped = FALSE;
        TraceField f;

        while (trace_field_next(&p, end, &f) > 0) {
                if (f.wire_type != TRACE_WIRE_VARINT)
                        continue;
                if (f.number == SAMPLE_CALLSTACK)
                        callstack = f.value;
                else if (f.number == SAMPLE_RECORDS_LOST) {
                        r->lost += f.value;
                        lost = TRUE;
                } else if (f.number == SAMPLE_SKIPPED)
                        skipped = TRUE;
        }
        /* A loss or a skip is not a sample: it says what is missing. */
        if (skipped)
                r->skipped++;
        else if (!lost)
                count_stack(r, seq, callstack);
}

void tb_profile_reader_packet(TbProfileReader *r, const guint8 *data, gsize len) {
        const guint8 *p = data, *end = data + len;
        TraceField f, interned = {}, sample = {};
        guint32 seq = 0;

        while (trace_field_next(&p, end, &f) > 0) {
                if (f.number == PACKET_SEQUENCE_ID && f.wire_type == TRACE_WIRE_VARINT)
                        seq = (guint32) f.value;
                else if (f.number == PACKET_INTERNED_DATA && f.wire_type == TRACE_WIRE_LEN)
                        interned = f;
                else if (f.number == PACKET_PERF_SAMPLE && f.wire_type == TRACE_WIRE_LEN)
                        sample = f;
        }
        /* The sequence id may come after either of them. */
        if (interned.data)
                read_interned(r, seq, &interned);
        if (sample.data)
                read_sample(r, seq, &sample);
}

/* ---- at the end: stacks into functions ---- */

typedef struct {
        TbFunction f;
        guint64 stamp;   /* the last stack it was counted in, once a stack */
} Entry;

/* "[libc.so.6]": the file of the mapping, its path's last component. */
static char *mapping_name(TbProfileReader *r, guint32 seq, guint64 mapping) {
        GArray *ids = table_get(r->mappings, seq, mapping);
        const char *last = NULL, *slash;

        if (ids && ids->len > 0)
                last = table_get(r->paths, seq, g_array_index(ids, guint64, ids->len - 1));
        if (!last || !*last)
                return NULL;
        slash = strrchr(last, '/');
        return g_strdup_printf("[%s]", slash && slash[1] ? slash + 1 : last);
}

static char *frame_name(TbProfileReader *r, guint32 seq, guint64 frame_iid) {
        Frame *fr = table_get(r->frames, seq, frame_iid);
        const char *name;
        char *m;

        if (!fr)
                return g_strdup(UNKNOWN_NAME);
        name = table_get(r->names, seq, fr->function_name);
        if (name && *name)
                return g_strdup(name);
        m = mapping_name(r, seq, fr->mapping);
        return m ?: g_strdup(UNKNOWN_NAME);
}

static Entry *entry_get(GHashTable *functions, char *name) {
        Entry *e = g_hash_table_lookup(functions, name);

        if (e) {
                g_free(name);
                return e;
        }
        e = g_new0(Entry, 1);
        e->f.name = name;
        g_hash_table_insert(functions, e->f.name, e);
        return e;
}

static void add_stack(TbProfileReader *r, GHashTable *functions, guint64 key, guint64 n, guint64 stamp) {
        GArray *frames = g_hash_table_lookup(r->stacks, &key);
        guint32 seq = (guint32) (key >> IID_BITS);

        if (!frames || frames->len == 0) {
                r->unresolved += n;
                return;
        }
        for (guint i = 0; i < frames->len; i++) {
                Entry *e = entry_get(functions, frame_name(r, seq, g_array_index(frames, guint64, i)));

                if (e->stamp != stamp) {
                        e->stamp = stamp;
                        e->f.total += n;
                }
                /* The innermost frame is the last. */
                if (i == frames->len - 1)
                        e->f.self += n;
        }
}

static int function_cmp(gconstpointer a, gconstpointer b) {
        const TbFunction *x = *(TbFunction *const *) a, *y = *(TbFunction *const *) b;

        if (x->self != y->self)
                return x->self > y->self ? -1 : 1;
        if (x->total != y->total)
                return x->total > y->total ? -1 : 1;
        return strcmp(x->name, y->name);
}

static void function_free(gpointer f) {
        g_free(((TbFunction *) f)->name);
        g_free(f);
}

void tb_profile_reader_finish(TbProfileReader *r, guint top, TbProfileCounts *ret_counts, GPtrArray **ret_functions) {
        g_autoptr(GHashTable) functions = g_hash_table_new(g_str_hash, g_str_equal);
        GHashTableIter it;
        gpointer key, value;
        guint64 stamp = 0, resolved_before = r->unresolved, samples = 0;
        GPtrArray *list;

        g_hash_table_iter_init(&it, r->counts);
        while (g_hash_table_iter_next(&it, &key, &value)) {
                samples += *(guint64 *) value;
                add_stack(r, functions, *(guint64 *) key, *(guint64 *) value, ++stamp);
        }
        /* TbFunction is Entry's first member: the entries are the list's items. */
        list = g_ptr_array_new_with_free_func(function_free);
        g_hash_table_iter_init(&it, functions);
        while (g_hash_table_iter_next(&it, NULL, &value))
                g_ptr_array_add(list, value);
        g_ptr_array_sort(list, function_cmp);
        if (list->len > top)
                g_ptr_array_remove_range(list, top, list->len - top);
        *ret_functions = list;
        *ret_counts = (TbProfileCounts) {
                .n_samples = samples - (r->unresolved - resolved_before),
                .n_unresolved = r->unresolved,
                .n_lost = r->lost,
                .n_skipped = r->skipped,
        };
}
