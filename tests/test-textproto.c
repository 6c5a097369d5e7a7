/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the generic text format parser (lib/textproto.c).
 *
 * Three kinds of check:
 *  - values: every field type, parsed into hand-written protobuf-c descriptors
 *    of tests/fixtures/textproto/{all_types,proto3_types}.proto, and asserted
 *    field by field;
 *  - errors: the exact message, line and column of each kind of mistake;
 *  - protoc: Perfetto's documented configs (the .pbtxt files in tests/fixtures/textproto)
 *    and the all-types text are packed with protobuf-c and compared byte for
 *    byte with what `protoc --encode` makes of the same text.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "config.pb-c.h"
#include "textproto.h"

#define PROTOC_DEFAULT "/usr/bin/protoc"
#define FIXTURES "tests/fixtures/textproto"

/* ---- Hand-written descriptors of all_types.proto and proto3_types.proto ---- */

typedef struct AllTypes AllTypes;

typedef struct Nested {
        ProtobufCMessage base;
        int32_t id;
        AllTypes *child;
} Nested;

enum {
        CHOICE_NOT_SET = 0,
        CHOICE_U32 = 26,
        CHOICE_S = 27,
        CHOICE_MSG = 28,
};

struct AllTypes {
        ProtobufCMessage base;
        protobuf_c_boolean has_i32;
        int32_t i32;
        protobuf_c_boolean has_i64;
        int64_t i64;
        protobuf_c_boolean has_u32;
        uint32_t u32;
        protobuf_c_boolean has_u64;
        uint64_t u64;
        protobuf_c_boolean has_s32;
        int32_t s32;
        protobuf_c_boolean has_s64;
        int64_t s64;
        protobuf_c_boolean has_f32;
        uint32_t f32;
        protobuf_c_boolean has_f64;
        uint64_t f64;
        protobuf_c_boolean has_sf32;
        int32_t sf32;
        protobuf_c_boolean has_sf64;
        int64_t sf64;
        protobuf_c_boolean has_fl;
        float fl;
        protobuf_c_boolean has_db;
        double db;
        protobuf_c_boolean has_b;
        protobuf_c_boolean b;
        char *s;
        protobuf_c_boolean has_by;
        ProtobufCBinaryData by;
        protobuf_c_boolean has_color;
        int color;
        Nested *nested;
        size_t n_r_i32;
        int32_t *r_i32;
        size_t n_r_s;
        char **r_s;
        size_t n_r_nested;
        Nested **r_nested;
        size_t n_r_color;
        int *r_color;
        size_t n_r_db;
        double *r_db;
        size_t n_r_by;
        ProtobufCBinaryData *r_by;
        size_t n_r_b;
        protobuf_c_boolean *r_b;
        char *s_def;
        uint32_t choice_case;
        union {
                uint32_t choice_u32;
                char *choice_s;
                Nested *choice_msg;
        };
};

typedef struct Proto3Types {
        ProtobufCMessage base;
        int32_t a;
        char *s;
        protobuf_c_boolean b;
        size_t n_r;
        int32_t *r;
        ProtobufCBinaryData by;
} Proto3Types;

static const ProtobufCMessageDescriptor all_types_descriptor;
static const ProtobufCMessageDescriptor nested_descriptor;
static const ProtobufCMessageDescriptor proto3_types_descriptor;

/* Sorted by number, as protoc-c sorts them; values_by_name by name. */
static const ProtobufCEnumValue color_values[] = {
        { "INFRARED", "COLOR_INFRARED", -1 },
        { "COLOR_UNSPECIFIED", "COLOR_UNSPECIFIED", 0 },
        { "RED", "COLOR_RED", 1 },
        { "GREEN", "COLOR_GREEN", 2 },
        { "BLUE", "COLOR_BLUE", 3 },
};
static const ProtobufCEnumValueIndex color_values_by_name[] = {
        { "BLUE", 4 }, { "COLOR_UNSPECIFIED", 1 }, { "GREEN", 3 }, { "INFRARED", 0 }, { "RED", 2 },
};
/* One run of consecutive values from -1, then the sentinel holding the count. */
static const ProtobufCIntRange color_value_ranges[] = { { -1, 0 }, { 0, 5 } };

static const ProtobufCEnumDescriptor color_descriptor = {
        PROTOBUF_C__ENUM_DESCRIPTOR_MAGIC,
        "tracebus.test.Color", "Color", "Color", "tracebus.test",
        G_N_ELEMENTS(color_values), color_values,
        G_N_ELEMENTS(color_values_by_name), color_values_by_name,
        1, color_value_ranges,
        NULL, NULL, NULL, NULL,
};

static const char s_def_default[] = "hello";

#define AT_OPTIONAL(name, id, type, desc) \
        { #name, id, PROTOBUF_C_LABEL_OPTIONAL, PROTOBUF_C_TYPE_##type, offsetof(AllTypes, has_##name), \
          offsetof(AllTypes, name), desc, NULL, 0, 0, NULL, NULL }
#define AT_POINTER(name, id, type, desc, def) \
        { #name, id, PROTOBUF_C_LABEL_OPTIONAL, PROTOBUF_C_TYPE_##type, 0, \
          offsetof(AllTypes, name), desc, def, 0, 0, NULL, NULL }
#define AT_REPEATED(name, id, type, desc) \
        { #name, id, PROTOBUF_C_LABEL_REPEATED, PROTOBUF_C_TYPE_##type, offsetof(AllTypes, n_##name), \
          offsetof(AllTypes, name), desc, NULL, 0, 0, NULL, NULL }
#define AT_ONEOF(name, id, type, desc) \
        { #name, id, PROTOBUF_C_LABEL_OPTIONAL, PROTOBUF_C_TYPE_##type, offsetof(AllTypes, choice_case), \
          offsetof(AllTypes, name), desc, NULL, PROTOBUF_C_FIELD_FLAG_ONEOF, 0, NULL, NULL }

static const ProtobufCFieldDescriptor all_types_fields[] = {
        AT_OPTIONAL(i32, 1, INT32, NULL),
        AT_OPTIONAL(i64, 2, INT64, NULL),
        AT_OPTIONAL(u32, 3, UINT32, NULL),
        AT_OPTIONAL(u64, 4, UINT64, NULL),
        AT_OPTIONAL(s32, 5, SINT32, NULL),
        AT_OPTIONAL(s64, 6, SINT64, NULL),
        AT_OPTIONAL(f32, 7, FIXED32, NULL),
        AT_OPTIONAL(f64, 8, FIXED64, NULL),
        AT_OPTIONAL(sf32, 9, SFIXED32, NULL),
        AT_OPTIONAL(sf64, 10, SFIXED64, NULL),
        AT_OPTIONAL(fl, 11, FLOAT, NULL),
        AT_OPTIONAL(db, 12, DOUBLE, NULL),
        AT_OPTIONAL(b, 13, BOOL, NULL),
        AT_POINTER(s, 14, STRING, NULL, NULL),
        AT_OPTIONAL(by, 15, BYTES, NULL),
        AT_OPTIONAL(color, 16, ENUM, &color_descriptor),
        AT_POINTER(nested, 17, MESSAGE, &nested_descriptor, NULL),
        AT_REPEATED(r_i32, 18, INT32, NULL),
        AT_REPEATED(r_s, 19, STRING, NULL),
        AT_REPEATED(r_nested, 20, MESSAGE, &nested_descriptor),
        AT_REPEATED(r_color, 21, ENUM, &color_descriptor),
        AT_REPEATED(r_db, 22, DOUBLE, NULL),
        AT_REPEATED(r_by, 23, BYTES, NULL),
        AT_REPEATED(r_b, 24, BOOL, NULL),
        AT_POINTER(s_def, 25, STRING, NULL, s_def_default),
        AT_ONEOF(choice_u32, 26, UINT32, NULL),
        AT_ONEOF(choice_s, 27, STRING, NULL),
        AT_ONEOF(choice_msg, 28, MESSAGE, &nested_descriptor),
};
/* Filled in main(): only protobuf_c_message_descriptor_get_field_by_name() reads it. */
static unsigned all_types_by_name[G_N_ELEMENTS(all_types_fields)];
static const ProtobufCIntRange all_types_ranges[] = { { 1, 0 }, { 0, G_N_ELEMENTS(all_types_fields) } };

static void all_types_init(ProtobufCMessage *m) {
        static const AllTypes init = {
                .base = PROTOBUF_C_MESSAGE_INIT(&all_types_descriptor),
                .s_def = (char *) s_def_default,
        };
        memcpy(m, &init, sizeof(init));
}

static const ProtobufCMessageDescriptor all_types_descriptor = {
        PROTOBUF_C__MESSAGE_DESCRIPTOR_MAGIC,
        "tracebus.test.AllTypes", "AllTypes", "AllTypes", "tracebus.test",
        sizeof(AllTypes),
        G_N_ELEMENTS(all_types_fields), all_types_fields, all_types_by_name,
        1, all_types_ranges,
        all_types_init,
        NULL, NULL, NULL,
};

static const ProtobufCFieldDescriptor nested_fields[] = {
        { "id", 1, PROTOBUF_C_LABEL_REQUIRED, PROTOBUF_C_TYPE_INT32, 0, offsetof(Nested, id),
          NULL, NULL, 0, 0, NULL, NULL },
        { "child", 2, PROTOBUF_C_LABEL_OPTIONAL, PROTOBUF_C_TYPE_MESSAGE, 0, offsetof(Nested, child),
          &all_types_descriptor, NULL, 0, 0, NULL, NULL },
};
static const unsigned nested_by_name[] = { 1, 0 };
static const ProtobufCIntRange nested_ranges[] = { { 1, 0 }, { 0, 2 } };

static void nested_init(ProtobufCMessage *m) {
        static const Nested init = { .base = PROTOBUF_C_MESSAGE_INIT(&nested_descriptor) };
        memcpy(m, &init, sizeof(init));
}

static const ProtobufCMessageDescriptor nested_descriptor = {
        PROTOBUF_C__MESSAGE_DESCRIPTOR_MAGIC,
        "tracebus.test.AllTypes.Nested", "Nested", "AllTypes__Nested", "tracebus.test",
        sizeof(Nested),
        G_N_ELEMENTS(nested_fields), nested_fields, nested_by_name,
        1, nested_ranges,
        nested_init,
        NULL, NULL, NULL,
};

/* proto3 strings start as (and default to) protobuf-c's shared empty string. */
static const ProtobufCFieldDescriptor proto3_fields[] = {
        { "a", 1, PROTOBUF_C_LABEL_NONE, PROTOBUF_C_TYPE_INT32, 0, offsetof(Proto3Types, a),
          NULL, NULL, 0, 0, NULL, NULL },
        { "s", 2, PROTOBUF_C_LABEL_NONE, PROTOBUF_C_TYPE_STRING, 0, offsetof(Proto3Types, s),
          NULL, &protobuf_c_empty_string, 0, 0, NULL, NULL },
        { "b", 3, PROTOBUF_C_LABEL_NONE, PROTOBUF_C_TYPE_BOOL, 0, offsetof(Proto3Types, b),
          NULL, NULL, 0, 0, NULL, NULL },
        { "r", 4, PROTOBUF_C_LABEL_REPEATED, PROTOBUF_C_TYPE_INT32, offsetof(Proto3Types, n_r),
          offsetof(Proto3Types, r), NULL, NULL, PROTOBUF_C_FIELD_FLAG_PACKED, 0, NULL, NULL },
        { "by", 5, PROTOBUF_C_LABEL_NONE, PROTOBUF_C_TYPE_BYTES, 0, offsetof(Proto3Types, by),
          NULL, NULL, 0, 0, NULL, NULL },
};
static const unsigned proto3_by_name[] = { 0, 2, 4, 3, 1 };
static const ProtobufCIntRange proto3_ranges[] = { { 1, 0 }, { 0, 5 } };

static void proto3_init(ProtobufCMessage *m) {
        static const Proto3Types init = {
                .base = PROTOBUF_C_MESSAGE_INIT(&proto3_types_descriptor),
                .s = (char *) protobuf_c_empty_string,
        };
        memcpy(m, &init, sizeof(init));
}

static const ProtobufCMessageDescriptor proto3_types_descriptor = {
        PROTOBUF_C__MESSAGE_DESCRIPTOR_MAGIC,
        "tracebus.test.Proto3Types", "Proto3Types", "Proto3Types", "tracebus.test",
        sizeof(Proto3Types),
        G_N_ELEMENTS(proto3_fields), proto3_fields, proto3_by_name,
        1, proto3_ranges,
        proto3_init,
        NULL, NULL, NULL,
};

static int compare_field_names(gconstpointer a, gconstpointer b) {
        return strcmp(all_types_fields[*(const unsigned *) a].name, all_types_fields[*(const unsigned *) b].name);
}

static void all_types_index_names(void) {
        for (unsigned i = 0; i < G_N_ELEMENTS(all_types_by_name); i++)
                all_types_by_name[i] = i;
        qsort(all_types_by_name, G_N_ELEMENTS(all_types_by_name), sizeof(unsigned), compare_field_names);
}

/* ---- Helpers ---- */

static void message_free(ProtobufCMessage *m) {
        protobuf_c_message_free_unpacked(m, NULL);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ProtobufCMessage, message_free)

static ProtobufCMessage *parse_len_ok(const ProtobufCMessageDescriptor *desc, const char *text, size_t len) {
        ProtobufCMessage *m = NULL;
        char *error = NULL;
        int r;

        r = textproto_parse(desc, text, len, "test", &m, &error);
        if (r < 0)
                g_test_message("unexpected error %d: %s", r, error ? error : "(none)");
        g_assert_cmpint(r, ==, 0);
        g_assert_null(error);
        g_assert_nonnull(m);
        g_assert_true(m->descriptor == desc);
        return m;
}

static ProtobufCMessage *parse_ok(const ProtobufCMessageDescriptor *desc, const char *text) {
        return parse_len_ok(desc, text, strlen(text));
}

static void assert_error_len(const ProtobufCMessageDescriptor *desc, const char *text, size_t len,
                             const char *expected) {
        ProtobufCMessage *m = NULL;
        g_autofree char *error = NULL;
        int r;

        r = textproto_parse(desc, text, len, "test", &m, &error);
        g_assert_cmpint(r, ==, -EINVAL);
        g_assert_null(m);
        g_assert_cmpstr(error, ==, expected);
}

static void assert_error(const ProtobufCMessageDescriptor *desc, const char *text, const char *expected) {
        assert_error_len(desc, text, strlen(text), expected);
}

static const char *source_dir(void) {
        const char *dir = g_getenv("TRACEBUS_SOURCE_DIR");

        /* meson sets it; without it the fixtures cannot be found, which is a failure, not a skip. */
        g_assert_nonnull(dir);
        return dir;
}

static char *fixture_path(const char *name) {
        return g_build_filename(source_dir(), FIXTURES, name, NULL);
}

static GBytes *pack(const ProtobufCMessage *m) {
        size_t size = protobuf_c_message_get_packed_size(m);
        uint8_t *buf = g_malloc(size + 1);

        g_assert_cmpuint(protobuf_c_message_pack(m, buf), ==, size);
        return g_bytes_new_take(buf, size);
}

/* Runs protoc --encode on @text; its stdin and stdout go through files because
 * g_spawn_sync() cannot feed stdin and loses the length of binary output. */
static GBytes *protoc_encode(const char *proto_dir, const char *proto, const char *type,
                             const char *text, size_t len) {
        const char *protoc = g_getenv("PROTOC") ?: PROTOC_DEFAULT;
        g_autoptr(GError) error = NULL;
        g_autofree char *tmp = NULL, *in = NULL, *out = NULL, *err = NULL, *encoded = NULL;
        gsize encoded_len;
        int status;

        if (!g_file_test(protoc, G_FILE_TEST_IS_EXECUTABLE))
                g_error("%s is missing: it is needed to check the parser against protobuf", protoc);

        tmp = g_dir_make_tmp("test-textproto-XXXXXX", &error);
        g_assert_no_error(error);
        in = g_build_filename(tmp, "in.pbtxt", NULL);
        out = g_build_filename(tmp, "out.pb", NULL);
        g_file_set_contents(in, text, len, &error);
        g_assert_no_error(error);

        const char *argv[] = {
                "/bin/sh", "-c", "exec \"$0\" --proto_path=\"$1\" --encode=\"$2\" \"$3\" <\"$4\" >\"$5\"",
                protoc, proto_dir, type, proto, in, out, NULL,
        };
        g_spawn_sync(NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, NULL, &err, &status, &error);
        g_assert_no_error(error);
        if (!g_spawn_check_wait_status(status, &error))
                g_test_message("protoc failed: %s", err);
        g_assert_no_error(error);

        g_file_get_contents(out, &encoded, &encoded_len, &error);
        g_assert_no_error(error);
        (void) g_unlink(in);
        (void) g_unlink(out);
        (void) g_rmdir(tmp);
        return g_bytes_new_take(g_steal_pointer(&encoded), encoded_len);
}

/* Returns the length of the encoding, which both sides agree on. */
static size_t assert_same_as_protoc(const ProtobufCMessageDescriptor *desc, const char *proto_dir,
                                    const char *proto, const char *type, const char *text, size_t len) {
        g_autoptr(ProtobufCMessage) m = parse_len_ok(desc, text, len);
        g_autoptr(GBytes) ours = pack(m);
        g_autoptr(GBytes) theirs = protoc_encode(proto_dir, proto, type, text, len);
        gsize ours_len, theirs_len;
        const void *ours_data = g_bytes_get_data(ours, &ours_len);
        const void *theirs_data = g_bytes_get_data(theirs, &theirs_len);

        g_assert_cmpmem(ours_data, ours_len, theirs_data, theirs_len);
        return theirs_len;
}

static size_t assert_all_types_same_as_protoc(const ProtobufCMessageDescriptor *desc, const char *type,
                                              const char *proto, const char *text) {
        g_autofree char *dir = g_build_filename(source_dir(), FIXTURES, NULL);

        return assert_same_as_protoc(desc, dir, proto, type, text, strlen(text));
}

/* ---- Values ---- */

static const char all_types_text[] =
        "# every type once, and the repeated ones in both spellings\n"
        "i32: -2147483648\n"
        "i64: -9223372036854775808\n"
        "u32: 4294967295\n"
        "u64: 18446744073709551615\n"
        "s32: -17\n"
        "s64: 0x7fffffffffffffff\n"
        "f32: 0xFFFFFFFF\n"
        "f64: 01777777777777777777777\n"
        "sf32: -0x80000000\n"
        "sf64: -1\n"
        "fl: 1.5f\n"
        "db: -2.5e-3\n"
        "b: True\n"
        "s: \"tab\\tnl\\n q\\\" a\\' bs\\\\ hex\\x41 oct\\101 \\u00e9\\U0001F600\"\n"
        "by: \"\\000\\001\\xff\" 'x'\n"
        "color: GREEN\n"
        "nested { id: 7 child: { i32: 1 } }\n"
        "r_i32: [1, -2, 0x3]\n"
        "r_i32: 4\n"
        "r_s: \"a\" \"b\"\n"
        "r_s: ['c', \"d\"]\n"
        "r_nested: [{id: 1}, <id: 2>]\n"
        "r_nested { id: 3 }\n"
        "r_color: [RED, 3, -1]\n"
        "r_color: COLOR_UNSPECIFIED\n"
        "r_db: [inf, -inf, 1, .5, -Infinity]\n"
        "r_by: [\"\\x00\", \"\"]\n"
        "r_b: [t, f, true, false, 1, 0, True, False]\n"
        "s_def: \"hello\"\n"
        "choice_s: \"picked\"\n";

static void test_all_types(void) {
        g_autoptr(ProtobufCMessage) m = parse_ok(&all_types_descriptor, all_types_text);
        const AllTypes *t = (const AllTypes *) m;
        static const uint8_t by[] = { 0, 1, 0xff, 'x' };
        static const int r_color[] = { 1, 3, -1, 0 };
        static const protobuf_c_boolean r_b[] = { 1, 0, 1, 0, 1, 0, 1, 0 };

        g_assert_true(t->has_i32 && t->has_i64 && t->has_u32 && t->has_u64 && t->has_s32 && t->has_s64);
        g_assert_true(t->has_f32 && t->has_f64 && t->has_sf32 && t->has_sf64 && t->has_fl && t->has_db);
        g_assert_true(t->has_b && t->has_by && t->has_color);
        g_assert_cmpint(t->i32, ==, INT32_MIN);
        g_assert_cmpint(t->i64, ==, INT64_MIN);
        g_assert_cmpuint(t->u32, ==, UINT32_MAX);
        g_assert_cmpuint(t->u64, ==, UINT64_MAX);
        g_assert_cmpint(t->s32, ==, -17);
        g_assert_cmpint(t->s64, ==, INT64_MAX);
        g_assert_cmpuint(t->f32, ==, UINT32_MAX);
        g_assert_cmpuint(t->f64, ==, UINT64_MAX);
        g_assert_cmpint(t->sf32, ==, INT32_MIN);
        g_assert_cmpint(t->sf64, ==, -1);
        g_assert_cmpfloat(t->fl, ==, 1.5f);
        g_assert_cmpfloat(t->db, ==, -2.5e-3);
        g_assert_true(t->b);
        g_assert_cmpstr(t->s, ==, "tab\tnl\n q\" a' bs\\ hexA octA \xc3\xa9\xf0\x9f\x98\x80");
        g_assert_cmpmem(t->by.data, t->by.len, by, sizeof(by));
        g_assert_cmpint(t->color, ==, 2);

        g_assert_nonnull(t->nested);
        g_assert_cmpint(t->nested->id, ==, 7);
        g_assert_nonnull(t->nested->child);
        g_assert_true(t->nested->child->has_i32);
        g_assert_cmpint(t->nested->child->i32, ==, 1);

        g_assert_cmpuint(t->n_r_i32, ==, 4);
        g_assert_cmpint(t->r_i32[0], ==, 1);
        g_assert_cmpint(t->r_i32[1], ==, -2);
        g_assert_cmpint(t->r_i32[2], ==, 3);
        g_assert_cmpint(t->r_i32[3], ==, 4);
        g_assert_cmpuint(t->n_r_s, ==, 3);
        g_assert_cmpstr(t->r_s[0], ==, "ab");
        g_assert_cmpstr(t->r_s[1], ==, "c");
        g_assert_cmpstr(t->r_s[2], ==, "d");
        g_assert_cmpuint(t->n_r_nested, ==, 3);
        for (unsigned i = 0; i < 3; i++) {
                g_assert_cmpint(t->r_nested[i]->id, ==, i + 1);
                g_assert_null(t->r_nested[i]->child);
        }
        g_assert_cmpmem(t->r_color, t->n_r_color * sizeof(int), r_color, sizeof(r_color));
        g_assert_cmpuint(t->n_r_db, ==, 5);
        g_assert_true(isinf(t->r_db[0]) && t->r_db[0] > 0);
        g_assert_true(isinf(t->r_db[1]) && t->r_db[1] < 0);
        g_assert_cmpfloat(t->r_db[2], ==, 1.0);
        g_assert_cmpfloat(t->r_db[3], ==, 0.5);
        g_assert_true(isinf(t->r_db[4]) && t->r_db[4] < 0);
        g_assert_cmpuint(t->n_r_by, ==, 2);
        g_assert_cmpmem(t->r_by[0].data, t->r_by[0].len, "\0", 1);
        g_assert_cmpuint(t->r_by[1].len, ==, 0);
        g_assert_cmpmem(t->r_b, t->n_r_b * sizeof(protobuf_c_boolean), r_b, sizeof(r_b));
        g_assert_cmpstr(t->s_def, ==, "hello");
        g_assert_true(t->s_def != s_def_default);
        g_assert_cmpuint(t->choice_case, ==, CHOICE_S);
        g_assert_cmpstr(t->choice_s, ==, "picked");
}

static void test_all_types_protoc(void) {
        g_assert_cmpuint(assert_all_types_same_as_protoc(&all_types_descriptor, "tracebus.test.AllTypes",
                                                         "all_types.proto", all_types_text), >, 100);
        g_assert_cmpuint(assert_all_types_same_as_protoc(&all_types_descriptor, "tracebus.test.AllTypes",
                                                         "all_types.proto",
                                                         "choice_msg { id: -5 child { choice_u32: 9 } }"), >, 0);
}

static void test_defaults_untouched(void) {
        g_autoptr(ProtobufCMessage) m = parse_ok(&all_types_descriptor, "");
        const AllTypes *t = (const AllTypes *) m;

        /* Still the shared default, which free_unpacked() must not free. */
        g_assert_true(t->s_def == s_def_default);
        g_assert_false(t->has_i32);
        g_assert_null(t->s);
        g_assert_null(t->nested);
        g_assert_cmpuint(t->n_r_i32, ==, 0);
        g_assert_cmpuint(t->choice_case, ==, CHOICE_NOT_SET);
}

static void test_oneof(void) {
        g_autoptr(ProtobufCMessage) a = parse_ok(&all_types_descriptor, "choice_u32: 42");
        g_autoptr(ProtobufCMessage) b = parse_ok(&all_types_descriptor, "choice_msg < id: 3 >");

        g_assert_cmpuint(((AllTypes *) a)->choice_case, ==, CHOICE_U32);
        g_assert_cmpuint(((AllTypes *) a)->choice_u32, ==, 42);
        g_assert_cmpuint(((AllTypes *) b)->choice_case, ==, CHOICE_MSG);
        g_assert_cmpint(((AllTypes *) b)->choice_msg->id, ==, 3);

        assert_error(&all_types_descriptor, "choice_u32: 1 choice_s: \"x\"",
                     "test:1:15: field 'choice_s' conflicts with field 'choice_u32' of the same oneof");
        assert_error(&all_types_descriptor, "choice_s: \"x\"\nchoice_s: \"y\"",
                     "test:2:1: non-repeated field 'choice_s' is set more than once");
}

static void test_proto3(void) {
        static const char text[] = "a: 5 s: \"x\" b: true r: [1, 2, 300] by: \"\\x01\"";
        static const char zeros[] = "a: 0 s: \"\" b: false r: [] by: \"\"";
        g_autoptr(ProtobufCMessage) m = parse_ok(&proto3_types_descriptor, text);
        g_autoptr(ProtobufCMessage) z = parse_ok(&proto3_types_descriptor, zeros);
        const Proto3Types *t = (const Proto3Types *) m;

        g_assert_cmpint(t->a, ==, 5);
        g_assert_cmpstr(t->s, ==, "x");
        g_assert_true(t->b);
        g_assert_cmpuint(t->n_r, ==, 3);
        g_assert_cmpint(t->r[2], ==, 300);
        g_assert_cmpmem(t->by.data, t->by.len, "\x01", 1);
        g_assert_cmpstr(((const Proto3Types *) z)->s, ==, "");

        /* proto3 drops zero values and packs repeated scalars: protobuf-c and protoc must agree. */
        g_assert_cmpuint(assert_all_types_same_as_protoc(&proto3_types_descriptor, "tracebus.test.Proto3Types",
                                                         "proto3_types.proto", text), >, 0);
        g_assert_cmpuint(assert_all_types_same_as_protoc(&proto3_types_descriptor, "tracebus.test.Proto3Types",
                                                         "proto3_types.proto", zeros), ==, 0);
        assert_error(&proto3_types_descriptor, "a: 1 a: 2", "test:1:6: non-repeated field 'a' is set more than once");
}

static void test_integers(void) {
        static const struct {
                const char *text;
                int64_t i64;
        } cases[] = {
                { "i64: 0", 0 },
                { "i64: 00", 0 },
                { "i64: 42", 42 },
                { "i64: -42", -42 },
                { "i64: - 42", -42 },
                { "i64: -# a comment between sign and digits\n42", -42 },
                { "i64: 0x2A", 42 },
                { "i64: 0X2a", 42 },
                { "i64: 052", 42 },
                { "i64: -0x8000000000000000", INT64_MIN },
                { "i64: 9223372036854775807", INT64_MAX },
        };

        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                g_autoptr(ProtobufCMessage) m = parse_ok(&all_types_descriptor, cases[i].text);

                g_assert_true(((AllTypes *) m)->has_i64);
                g_assert_cmpint(((AllTypes *) m)->i64, ==, cases[i].i64);
        }
}

static void test_integer_ranges(void) {
        static const struct {
                const char *text;
                const char *error;      /* NULL: accepted */
        } cases[] = {
                { "i32: 2147483647", NULL },
                { "i32: -2147483648", NULL },
                { "i32: 2147483648", "test:1:6: value 2147483648 out of range for int32 field 'i32'" },
                { "i32: -2147483649", "test:1:6: value -2147483649 out of range for int32 field 'i32'" },
                { "s32: -2147483649", "test:1:6: value -2147483649 out of range for sint32 field 's32'" },
                { "sf32: 0x80000000", "test:1:7: value 0x80000000 out of range for sfixed32 field 'sf32'" },
                { "u32: 4294967295", NULL },
                { "u32: 4294967296", "test:1:6: value 4294967296 out of range for uint32 field 'u32'" },
                { "u32: -1", "test:1:6: value -1 out of range for uint32 field 'u32'" },
                { "f32: 0x100000000", "test:1:6: value 0x100000000 out of range for fixed32 field 'f32'" },
                { "i64: 9223372036854775808",
                  "test:1:6: value 9223372036854775808 out of range for int64 field 'i64'" },
                { "s64: -9223372036854775809",
                  "test:1:6: value -9223372036854775809 out of range for sint64 field 's64'" },
                { "sf64: -9223372036854775808", NULL },
                { "u64: 18446744073709551616",
                  "test:1:6: value 18446744073709551616 out of range for uint64 field 'u64'" },
                { "u64: -0", "test:1:6: value -0 out of range for uint64 field 'u64'" },
                { "f64: 0x10000000000000000",
                  "test:1:6: value 0x10000000000000000 out of range for fixed64 field 'f64'" },
                { "f64: 02000000000000000000000",
                  "test:1:6: value 02000000000000000000000 out of range for fixed64 field 'f64'" },
                { "i32: 08", "test:1:6: invalid value '08' for int32 field 'i32'" },
                { "i32: 0x", "test:1:6: invalid value '0x' for int32 field 'i32'" },
                { "i32: 1.0", "test:1:6: invalid value '1.0' for int32 field 'i32'" },
                { "i32: 1e3", "test:1:6: invalid value '1e3' for int32 field 'i32'" },
                { "i32: 12abc", "test:1:6: invalid value '12abc' for int32 field 'i32'" },
                { "i32: abc", "test:1:6: invalid value 'abc' for int32 field 'i32'" },
                { "i32: -", "test:1:6: invalid value '-' for int32 field 'i32'" },
                { "i32: \"1\"", "test:1:6: invalid value '\"1\"' for int32 field 'i32'" },
                { "i32: { }", "test:1:6: invalid value '{' for int32 field 'i32'" },
                { "u64: 99999999999999999999999x",
                  "test:1:6: invalid value '99999999999999999999999x' for uint64 field 'u64'" },
        };

        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                if (cases[i].error)
                        assert_error(&all_types_descriptor, cases[i].text, cases[i].error);
                else {
                        g_autoptr(ProtobufCMessage) m = parse_ok(&all_types_descriptor, cases[i].text);
                }
        }
}

static void test_floats(void) {
        static const struct {
                const char *text;
                double value;
        } cases[] = {
                { "db: 1", 1.0 },
                { "db: -1", -1.0 },
                { "db: 1.25", 1.25 },
                { "db: .5", 0.5 },
                { "db: 5.", 5.0 },
                { "db: 1e3", 1000.0 },
                { "db: 1E+3", 1000.0 },
                { "db: -2.5e-1", -0.25 },
                { "db: 3.5F", 3.5 },
                { "db: inf", INFINITY },
                { "db: -INF", -INFINITY },
                { "db: infinity", INFINITY },
        };
        g_autoptr(ProtobufCMessage) nan_msg = parse_ok(&all_types_descriptor, "db: nan fl: -NaN");
        g_autoptr(ProtobufCMessage) fl = parse_ok(&all_types_descriptor, "fl: 0.1");

        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                g_autoptr(ProtobufCMessage) m = parse_ok(&all_types_descriptor, cases[i].text);

                g_assert_true(((AllTypes *) m)->has_db);
                g_assert_cmpfloat(((AllTypes *) m)->db, ==, cases[i].value);
        }
        g_assert_true(isnan(((AllTypes *) nan_msg)->db));
        g_assert_true(isnan(((AllTypes *) nan_msg)->fl));
        g_assert_cmpfloat(((AllTypes *) fl)->fl, ==, 0.1f);

        assert_error(&all_types_descriptor, "db: 0x10", "test:1:5: invalid value '0x10' for double field 'db'");
        assert_error(&all_types_descriptor, "fl: 1.2.3", "test:1:5: invalid value '1.2.3' for float field 'fl'");
        assert_error(&all_types_descriptor, "fl: 1e", "test:1:5: invalid value '1e' for float field 'fl'");
        assert_error(&all_types_descriptor, "fl: -x", "test:1:5: invalid value '-x' for float field 'fl'");
        assert_error(&all_types_descriptor, "fl: -", "test:1:5: invalid value '-' for float field 'fl'");
        assert_error(&all_types_descriptor, "fl: 'x'", "test:1:5: invalid value ''x'' for float field 'fl'");
}

static void test_bools(void) {
        static const struct {
                const char *text;
                bool value;
        } cases[] = {
                { "b: true", true }, { "b: True", true }, { "b: t", true }, { "b: 1", true },
                { "b: false", false }, { "b: False", false }, { "b: f", false }, { "b: 0", false },
                { "b: 0x1", true },
        };

        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                g_autoptr(ProtobufCMessage) m = parse_ok(&all_types_descriptor, cases[i].text);

                g_assert_true(((AllTypes *) m)->has_b);
                g_assert_cmpint(((AllTypes *) m)->b, ==, cases[i].value);
        }
        assert_error(&all_types_descriptor, "b: 2", "test:1:4: invalid value '2' for bool field 'b'");
        assert_error(&all_types_descriptor, "b: TRUE", "test:1:4: invalid value 'TRUE' for bool field 'b'");
        assert_error(&all_types_descriptor, "b: yes", "test:1:4: invalid value 'yes' for bool field 'b'");
        assert_error(&all_types_descriptor, "b: -1", "test:1:4: invalid value '-' for bool field 'b'");
}

static void test_enums(void) {
        g_autoptr(ProtobufCMessage) by_name = parse_ok(&tracebus__trace_config__descriptor,
                                                       "buffers { fill_policy: DISCARD }");
        g_autoptr(ProtobufCMessage) by_number = parse_ok(&tracebus__trace_config__descriptor,
                                                         "buffers { fill_policy: 1 }");
        g_autoptr(ProtobufCMessage) negative = parse_ok(&all_types_descriptor, "color: -1 r_color: [0x2, INFRARED]");
        const Tracebus__TraceConfig *a = (const Tracebus__TraceConfig *) by_name;
        const Tracebus__TraceConfig *b = (const Tracebus__TraceConfig *) by_number;
        const AllTypes *n = (const AllTypes *) negative;

        g_assert_true(a->buffers[0]->has_fill_policy);
        g_assert_cmpint(a->buffers[0]->fill_policy, ==, TRACEBUS__TRACE_CONFIG__BUFFER_CONFIG__FILL_POLICY__DISCARD);
        g_assert_cmpint(b->buffers[0]->fill_policy, ==,
                        TRACEBUS__TRACE_CONFIG__BUFFER_CONFIG__FILL_POLICY__RING_BUFFER);
        g_assert_cmpint(n->color, ==, -1);
        g_assert_cmpint(n->r_color[0], ==, 2);
        g_assert_cmpint(n->r_color[1], ==, -1);

        assert_error(&tracebus__trace_config__descriptor, "buffers { fill_policy: FOO }",
                     "test:1:24: unknown value 'FOO' for enum field 'fill_policy' "
                     "(expected one of UNSPECIFIED, RING_BUFFER, DISCARD)");
        assert_error(&tracebus__trace_config__descriptor, "buffers { fill_policy: discard }",
                     "test:1:24: unknown value 'discard' for enum field 'fill_policy' "
                     "(expected one of UNSPECIFIED, RING_BUFFER, DISCARD)");
        assert_error(&tracebus__trace_config__descriptor, "buffers {\n  fill_policy: 7\n}",
                     "test:2:16: unknown value 7 for enum field 'fill_policy' "
                     "(expected one of UNSPECIFIED, RING_BUFFER, DISCARD)");
        assert_error(&all_types_descriptor, "color: -2",
                     "test:1:8: unknown value -2 for enum field 'color' "
                     "(expected one of INFRARED, COLOR_UNSPECIFIED, RED, GREEN, BLUE)");
        assert_error(&all_types_descriptor, "color: 2147483648",
                     "test:1:8: value 2147483648 out of range for enum field 'color'");
        assert_error(&all_types_descriptor, "color: \"RED\"",
                     "test:1:8: invalid value '\"RED\"' for enum field 'color'");
        /* Long enums are listed in part. */
        assert_error(&tracebus__sys_stats_config__descriptor, "meminfo_counters: MEMINFO_FOO",
                     "test:1:19: unknown value 'MEMINFO_FOO' for enum field 'meminfo_counters' (expected one of "
                     "MEMINFO_UNSPECIFIED, MEMINFO_MEM_TOTAL, MEMINFO_MEM_FREE, MEMINFO_MEM_AVAILABLE, "
                     "MEMINFO_BUFFERS, MEMINFO_CACHED, MEMINFO_SWAP_CACHED, MEMINFO_ACTIVE, MEMINFO_INACTIVE, "
                     "MEMINFO_ACTIVE_ANON, MEMINFO_INACTIVE_ANON, MEMINFO_ACTIVE_FILE, MEMINFO_INACTIVE_FILE, "
                     "MEMINFO_UNEVICTABLE, MEMINFO_MLOCKED, MEMINFO_SWAP_TOTAL, ... (18 more))");
}

static void test_strings(void) {
        static const struct {
                const char *text;
                const char *value;
        } cases[] = {
                { "s: \"plain\"", "plain" },
                { "s: 'single'", "single" },
                { "s: \"\"", "" },
                { "s: \"it's\"", "it's" },
                { "s: 'say \"hi\"'", "say \"hi\"" },
                { "s: \"\\a\\b\\f\\n\\r\\t\\v\\\\\\'\\\"\\?\"", "\a\b\f\n\r\t\v\\'\"?" },
                { "s: \"\\x41\\x4a\\x6B\\xA\"", "AJk\n" },
                { "s: \"\\101\\60\\0619\"", "A01" "9" },
                { "s: \"\\u00e9\\U0001f600\"", "\xc3\xa9\xf0\x9f\x98\x80" },
                { "s: \"a\" 'b'\n  # a comment between the pieces\n  \"c\"", "abc" },
                { "s: \"#not a comment\"", "#not a comment" },
                { "s: \"caf\xc3\xa9\"", "caf\xc3\xa9" },
        };

        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                g_autoptr(ProtobufCMessage) m = parse_ok(&all_types_descriptor, cases[i].text);

                g_assert_cmpstr(((AllTypes *) m)->s, ==, cases[i].value);
        }
}

static void test_bytes(void) {
        g_autoptr(ProtobufCMessage) m = parse_ok(&all_types_descriptor, "by: \"\\0\\x00a\\377\" '\\'' r_by: ''");
        const AllTypes *t = (const AllTypes *) m;

        g_assert_true(t->has_by);
        g_assert_cmpmem(t->by.data, t->by.len, "\0\0a\377'", 5);
        g_assert_cmpuint(t->n_r_by, ==, 1);
        g_assert_cmpuint(t->r_by[0].len, ==, 0);
        assert_error(&all_types_descriptor, "by: 5", "test:1:5: expected a quoted string for bytes field 'by', got '5'");
}

static void test_string_errors(void) {
        assert_error(&tracebus__trace_config__descriptor, "data_sources { config { name: \"linux.ftrace } }",
                     "test:1:31: unterminated string");
        assert_error(&tracebus__trace_config__descriptor, "unique_session_name: 'abc\ndef'",
                     "test:1:22: unterminated string");
        assert_error(&tracebus__trace_config__descriptor, "unique_session_name: \"abc\\\n\"",
                     "test:1:22: unterminated string");
        assert_error(&tracebus__trace_config__descriptor, "unique_session_name: \"abc\"\n'",
                     "test:2:1: unterminated string");
        assert_error(&tracebus__trace_config__descriptor, "unique_session_name: \"a\\qb\"",
                     "test:1:24: invalid escape '\\q' in string");
        assert_error(&tracebus__trace_config__descriptor, "unique_session_name: \"ok\" \"a\\xzz\"",
                     "test:1:29: invalid escape '\\x' in string");
        assert_error(&tracebus__trace_config__descriptor, "unique_session_name: \"\\400\"",
                     "test:1:23: invalid escape '\\4' in string");
        assert_error(&tracebus__trace_config__descriptor, "unique_session_name: \"\\u12\"",
                     "test:1:23: invalid escape '\\u' in string");
        assert_error(&tracebus__trace_config__descriptor, "unique_session_name: \"\\ud800\"",
                     "test:1:23: invalid escape '\\u' in string");
        assert_error(&tracebus__trace_config__descriptor, "unique_session_name: \"\\U00110000\"",
                     "test:1:23: invalid escape '\\U' in string");
        assert_error(&tracebus__trace_config__descriptor, "unique_session_name: \"a\\0b\"",
                     "test:1:22: string field 'unique_session_name' cannot contain a NUL character");
        assert_error(&tracebus__trace_config__descriptor, "unique_session_name: foo",
                     "test:1:22: expected a quoted string for string field 'unique_session_name', got 'foo'");
}

static void test_lists(void) {
        g_autoptr(ProtobufCMessage) m = parse_ok(
                        &tracebus__trace_config__descriptor,
                        "buffers: [{ size_kb: 1 }, { size_kb: 2 }]\n"
                        "buffers { size_kb: 3 }\n"
                        "buffers [< size_kb: 4 >]\n"
                        "buffers: []\n"
                        "data_sources { config { ftrace_config {\n"
                        "  ftrace_events: [\"a\", 'b' \"c\",\n\"d\"]\n"
                        "  ftrace_events: \"e\"\n"
                        "  atrace_apps: []\n"
                        "} } }\n");
        const Tracebus__TraceConfig *c = (const Tracebus__TraceConfig *) m;
        const Tracebus__FtraceConfig *f;

        g_assert_cmpuint(c->n_buffers, ==, 4);
        for (unsigned i = 0; i < 4; i++) {
                g_assert_true(c->buffers[i]->has_size_kb);
                g_assert_cmpuint(c->buffers[i]->size_kb, ==, i + 1);
        }
        f = c->data_sources[0]->config->ftrace_config;
        g_assert_cmpuint(f->n_ftrace_events, ==, 4);
        g_assert_cmpstr(f->ftrace_events[0], ==, "a");
        g_assert_cmpstr(f->ftrace_events[1], ==, "bc");
        g_assert_cmpstr(f->ftrace_events[2], ==, "d");
        g_assert_cmpstr(f->ftrace_events[3], ==, "e");
        g_assert_cmpuint(f->n_atrace_apps, ==, 0);

        assert_error(&tracebus__trace_config__descriptor, "duration_ms: [1, 2]",
                     "test:1:14: list syntax used for non-repeated field 'duration_ms'");
        assert_error(&tracebus__trace_config__descriptor, "buffers: [{size_kb: 1} {size_kb: 2}]",
                     "test:1:24: expected ',' or ']' in list of field 'buffers', got '{'");
        assert_error(&tracebus__trace_config__descriptor, "buffers: [{size_kb: 1},]",
                     "test:1:24: expected '{' to open message field 'buffers'");
        assert_error(&all_types_descriptor, "r_i32: [1, 2",
                     "test:1:13: expected ',' or ']' in list of field 'r_i32', got end of input");
        assert_error(&all_types_descriptor, "r_i32: [1,",
                     "test:1:11: expected a value for field 'r_i32', got end of input");
}

static void test_repeated_growth(void) {
        g_autoptr(GString) text = g_string_new(NULL);
        g_autoptr(ProtobufCMessage) m = NULL;
        const AllTypes *t;

        /* Crosses many implied-capacity boundaries of the repeated arrays. */
        for (int i = 0; i < 1000; i++)
                g_string_append_printf(text, "r_i32: %d r_s: \"%d\" r_nested { id: %d }\n", i, i, i);
        m = parse_ok(&all_types_descriptor, text->str);
        t = (const AllTypes *) m;
        g_assert_cmpuint(t->n_r_i32, ==, 1000);
        g_assert_cmpuint(t->n_r_s, ==, 1000);
        g_assert_cmpuint(t->n_r_nested, ==, 1000);
        for (int i = 0; i < 1000; i++) {
                g_autofree char *s = g_strdup_printf("%d", i);

                g_assert_cmpint(t->r_i32[i], ==, i);
                g_assert_cmpstr(t->r_s[i], ==, s);
                g_assert_cmpint(t->r_nested[i]->id, ==, i);
        }
}

static void test_syntax(void) {
        /* Comments, separators and both message delimiters, with and without ':'. */
        g_autoptr(ProtobufCMessage) m = parse_ok(
                        &tracebus__trace_config__descriptor,
                        "# leading comment\n"
                        "duration_ms: 1, write_into_file: true; file_write_period_ms:2#trailing\n"
                        "buffers{size_kb:1}buffers:{size_kb:2}buffers<size_kb:3>buffers:<size_kb:4>,\n"
                        "\t\r\v\f  flush_period_ms :\n\n 5 ;\n"
                        "# final comment without newline");
        const Tracebus__TraceConfig *c = (const Tracebus__TraceConfig *) m;

        g_assert_cmpuint(c->duration_ms, ==, 1);
        g_assert_true(c->write_into_file);
        g_assert_cmpuint(c->file_write_period_ms, ==, 2);
        g_assert_cmpuint(c->n_buffers, ==, 4);
        g_assert_cmpuint(c->buffers[3]->size_kb, ==, 4);
        g_assert_true(c->has_flush_period_ms);
        g_assert_cmpuint(c->flush_period_ms, ==, 5);

        g_autoptr(ProtobufCMessage) empty = parse_ok(&tracebus__trace_config__descriptor, "  # nothing\n\n");
        g_assert_cmpuint(((Tracebus__TraceConfig *) empty)->n_buffers, ==, 0);
        g_autoptr(ProtobufCMessage) none = parse_len_ok(&tracebus__trace_config__descriptor, NULL, 0);
        g_assert_false(((Tracebus__TraceConfig *) none)->has_duration_ms);
}

/* A nested TraceConfig, read back field by field. */
static void test_trace_config(void) {
        g_autoptr(ProtobufCMessage) m = parse_ok(
                        &tracebus__trace_config__descriptor,
                        "duration_ms: 10000\n"
                        "write_into_file: true\n"
                        "file_write_period_ms: 5000\n"
                        "max_file_size_bytes: 1000000000\n"
                        "unique_session_name: \"sched\"\n"
                        "buffers { size_kb: 16384 fill_policy: RING_BUFFER }\n"
                        "buffers { size_kb: 2048 fill_policy: DISCARD }\n"
                        "data_sources {\n"
                        "  config {\n"
                        "    name: \"linux.ftrace\"\n"
                        "    target_buffer: 0\n"
                        "    ftrace_config {\n"
                        "      ftrace_events: \"sched/sched_switch\"\n"
                        "      ftrace_events: \"sched/sched_waking\"\n"
                        "      compact_sched { enabled: true }\n"
                        "      buffer_size_kb: 4096\n"
                        "    }\n"
                        "  }\n"
                        "}\n"
                        "data_sources {\n"
                        "  config {\n"
                        "    name: \"linux.process_stats\"\n"
                        "    target_buffer: 1\n"
                        "    process_stats_config { scan_all_processes_on_start: true quirks: DISABLE_ON_DEMAND }\n"
                        "  }\n"
                        "}\n");
        const Tracebus__TraceConfig *c = (const Tracebus__TraceConfig *) m;
        const Tracebus__DataSourceConfig *ftrace, *ps;

        g_assert_true(c->has_duration_ms && c->has_write_into_file && c->has_file_write_period_ms);
        g_assert_cmpuint(c->duration_ms, ==, 10000);
        g_assert_true(c->write_into_file);
        g_assert_cmpuint(c->file_write_period_ms, ==, 5000);
        g_assert_cmpuint(c->max_file_size_bytes, ==, 1000000000);
        g_assert_cmpstr(c->unique_session_name, ==, "sched");
        g_assert_null(c->output_path);
        g_assert_false(c->has_flush_period_ms);

        g_assert_cmpuint(c->n_buffers, ==, 2);
        g_assert_cmpuint(c->buffers[0]->size_kb, ==, 16384);
        g_assert_cmpint(c->buffers[0]->fill_policy, ==,
                        TRACEBUS__TRACE_CONFIG__BUFFER_CONFIG__FILL_POLICY__RING_BUFFER);
        g_assert_cmpint(c->buffers[1]->fill_policy, ==, TRACEBUS__TRACE_CONFIG__BUFFER_CONFIG__FILL_POLICY__DISCARD);

        g_assert_cmpuint(c->n_data_sources, ==, 2);
        ftrace = c->data_sources[0]->config;
        g_assert_cmpstr(ftrace->name, ==, "linux.ftrace");
        g_assert_true(ftrace->has_target_buffer);
        g_assert_cmpuint(ftrace->target_buffer, ==, 0);
        g_assert_nonnull(ftrace->ftrace_config);
        g_assert_cmpuint(ftrace->ftrace_config->n_ftrace_events, ==, 2);
        g_assert_cmpstr(ftrace->ftrace_config->ftrace_events[1], ==, "sched/sched_waking");
        g_assert_true(ftrace->ftrace_config->compact_sched->enabled);
        g_assert_cmpuint(ftrace->ftrace_config->buffer_size_kb, ==, 4096);
        g_assert_null(ftrace->process_stats_config);

        ps = c->data_sources[1]->config;
        g_assert_cmpstr(ps->name, ==, "linux.process_stats");
        g_assert_null(ps->ftrace_config);
        g_assert_true(ps->process_stats_config->scan_all_processes_on_start);
        g_assert_cmpuint(ps->process_stats_config->n_quirks, ==, 1);
        g_assert_cmpint(ps->process_stats_config->quirks[0], ==,
                        TRACEBUS__PROCESS_STATS_CONFIG__QUIRKS__DISABLE_ON_DEMAND);
}

/* ---- Errors ---- */

static void test_errors(void) {
        static const struct {
                const char *text;
                const char *error;
        } cases[] = {
                { "data_sources {\n  config {\n    ftrace_config {\n      buffer_size: 4\n    }\n  }\n}\n",
                  "test:4:7: unknown field 'buffer_size' in FtraceConfig; did you mean 'buffer_size_kb'?" },
                { "durationms: 1", "test:1:1: unknown field 'durationms' in TraceConfig; did you mean 'duration_ms'?" },
                { "buffers { fill_polciy: DISCARD }",
                  "test:1:11: unknown field 'fill_polciy' in BufferConfig; did you mean 'fill_policy'?" },
                { "buffers { size: 1 }", "test:1:11: unknown field 'size' in BufferConfig; did you mean 'size_kb'?" },
                { "foo: 1", "test:1:1: unknown field 'foo' in TraceConfig" },
                /* The threshold: a third of the name may differ, not more. */
                { "duRAtiOn_ms: 1", "test:1:1: unknown field 'duRAtiOn_ms' in TraceConfig; did you mean 'duration_ms'?" },
                { "dURATIon_ms: 1", "test:1:1: unknown field 'dURATIon_ms' in TraceConfig" },
                { "Duration_Ms: 1", "test:1:1: unknown field 'Duration_Ms' in TraceConfig; did you mean 'duration_ms'?" },
                { "duration_ms: 4294967296",
                  "test:1:14: value 4294967296 out of range for uint32 field 'duration_ms'" },
                { "  duration_ms: -1", "test:1:16: value -1 out of range for uint32 field 'duration_ms'" },
                { "max_file_size_bytes: 18446744073709551616",
                  "test:1:22: value 18446744073709551616 out of range for uint64 field 'max_file_size_bytes'" },
                { "buffers 5", "test:1:9: expected ':' or '{' after 'buffers'" },
                { "buffers", "test:1:8: expected ':' or '{' after 'buffers'" },
                { "data_sources: 5", "test:1:15: expected '{' to open message field 'data_sources'" },
                { "duration_ms 5", "test:1:13: expected ':' after 'duration_ms'" },
                { "duration_ms { }", "test:1:13: expected ':' after 'duration_ms'" },
                { "duration_ms:", "test:1:13: expected a value for field 'duration_ms', got end of input" },
                { "duration_ms: 1\nduration_ms: 2", "test:2:1: non-repeated field 'duration_ms' is set more than once" },
                { "buffers { name: 'a' name: 'b' }", "test:1:21: non-repeated field 'name' is set more than once" },
                { "data_sources { config { } config { } }",
                  "test:1:27: non-repeated field 'config' is set more than once" },
                { "buffers {\n  size_kb: 1\n", "test:3:1: unexpected end of input, expected '}'" },
                { "buffers < size_kb: 1 }", "test:1:22: expected a field name, got '}'" },
                { "buffers { size_kb: 1 >", "test:1:22: expected a field name, got '>'" },
                { "}", "test:1:1: expected a field name, got '}'" },
                { "duration_ms: 1,, flush_period_ms: 2", "test:1:16: expected a field name, got ','" },
                { "5: 1", "test:1:1: expected a field name, got '5'" },
                { "\"duration_ms\": 1", "test:1:1: expected a field name, got '\"duration_ms\"'" },
                { "[tracebus.ext] { }", "test:1:1: extension and Any fields ('[...]') are not supported" },
                { "duration_ms: 1 @", "test:1:16: expected a field name, got '@'" },
                { "duration_ms: \x01", "test:1:14: invalid value '\\x01' for uint32 field 'duration_ms'" },
                { "\xc3\xa9t\xc3\xa9: 1", "test:1:1: expected a field name, got '\\xc3'" },
                { "unique_session_name: \"\xff\" duration_ms: \"\xfe\xfd\"",
                  "test:1:39: invalid value '\"\\xfe\\xfd\"' for uint32 field 'duration_ms'" },
                { "write_into_file: yes", "test:1:18: invalid value 'yes' for bool field 'write_into_file'" },
                { "duration_ms: 1 'abc", "test:1:16: unterminated string" },
                { "duration_ms: \"0123456789012345678901234567890123456789xyz\"",
                  "test:1:14: invalid value '\"012345678901234567890123456789012345678...' "
                  "for uint32 field 'duration_ms'" },
        };

        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++)
                assert_error(&tracebus__trace_config__descriptor, cases[i].text, cases[i].error);
}

static void test_required(void) {
        assert_error(&all_types_descriptor, "nested { }", "test:1:10: missing required field 'id' in Nested");
        assert_error(&all_types_descriptor, "r_nested: [{id: 1}, {\n}]",
                     "test:2:1: missing required field 'id' in Nested");
        assert_error(&nested_descriptor, "child { }", "test:1:10: missing required field 'id' in Nested");
        g_autoptr(ProtobufCMessage) m = parse_ok(&nested_descriptor, "id: 0");
        g_assert_cmpint(((Nested *) m)->id, ==, 0);
}

static void test_nul_bytes(void) {
        static const char text[] = "duration_ms: 1\n  \0 buffers {}";
        static const char in_string[] = "unique_session_name: \"a\0b\"";

        assert_error_len(&tracebus__trace_config__descriptor, text, sizeof(text) - 1, "test:2:3: NUL byte in input");
        assert_error_len(&tracebus__trace_config__descriptor, in_string, sizeof(in_string) - 1,
                         "test:1:24: NUL byte in input");
        /* The length, not a terminator, bounds the input. */
        g_autoptr(ProtobufCMessage) m = parse_len_ok(&tracebus__trace_config__descriptor, text, 14);
        g_assert_cmpuint(((Tracebus__TraceConfig *) m)->duration_ms, ==, 1);
}

/* Builds @levels messages nested in each other; returns the offset of the last '{'. */
static size_t nest(GString *s, unsigned levels) {
        size_t last = 0;

        for (unsigned i = 0; i < levels; i++) {
                g_string_append(s, i % 2 == 0 ? "nested { id: 1 " : "child { ");
                last = s->len - (i % 2 == 0 ? 8 : 2);
        }
        for (unsigned i = 0; i < levels; i++)
                g_string_append(s, "} ");
        return last;
}

static void test_depth(void) {
        g_autoptr(GString) ok = g_string_new(NULL), deep = g_string_new(NULL);
        g_autofree char *expected = NULL;
        g_autoptr(ProtobufCMessage) m = NULL;
        size_t offset;

        (void) nest(ok, TEXTPROTO_MAX_DEPTH);
        m = parse_ok(&all_types_descriptor, ok->str);
        g_assert_nonnull(((AllTypes *) m)->nested->child);

        offset = nest(deep, TEXTPROTO_MAX_DEPTH + 1);
        g_assert_cmpint(deep->str[offset], ==, '{');
        expected = g_strdup_printf("test:1:%zu: messages nested deeper than %u levels", offset + 1,
                                   TEXTPROTO_MAX_DEPTH);
        assert_error(&all_types_descriptor, deep->str, expected);
}

static void test_size_limit(void) {
        size_t len = TEXTPROTO_MAX_SIZE + 1;
        g_autofree char *text = g_malloc(len);
        g_autofree char *expected = NULL;

        memset(text, ' ', len);
        expected = g_strdup_printf("test:1:1: input of %zu bytes is larger than the limit of %u bytes", len,
                                   TEXTPROTO_MAX_SIZE);
        assert_error_len(&tracebus__trace_config__descriptor, text, len, expected);
        /* At the limit it is still parsed. */
        g_autoptr(ProtobufCMessage) m = parse_len_ok(&tracebus__trace_config__descriptor, text, len - 1);
}

static void test_error_out_params(void) {
        ProtobufCMessage *m = (ProtobufCMessage *) &m;
        char *error = (char *) &error;
        int r;

        /* Without a place for the message the error is still reported (and nothing leaks). */
        r = textproto_parse(&tracebus__trace_config__descriptor, "foo: 1", 6, "x", &m, NULL);
        g_assert_cmpint(r, ==, -EINVAL);
        g_assert_true(m == (ProtobufCMessage *) &m);

        /* Out parameters are written only on success (the message) or failure (the error). */
        r = textproto_parse(&tracebus__trace_config__descriptor, "duration_ms: 1", 14, NULL, &m, &error);
        g_assert_cmpint(r, ==, 0);
        g_assert_true(error == (char *) &error);
        protobuf_c_message_free_unpacked(m, NULL);

        m = NULL;
        r = textproto_parse(&tracebus__trace_config__descriptor, "foo: 1", 6, NULL, &m, &error);
        g_assert_cmpint(r, ==, -EINVAL);
        g_assert_null(m);
        g_assert_cmpstr(error, ==, "<input>:1:1: unknown field 'foo' in TraceConfig");
        g_free(error);
}

/* ---- Against protoc, on Perfetto's documented configs ---- */

static void test_fixture_protoc(gconstpointer data) {
        const char *name = data;
        g_autofree char *path = fixture_path(name);
        g_autofree char *protos = g_build_filename(source_dir(), "protos", NULL);
        g_autofree char *text = NULL;
        g_autoptr(GError) error = NULL;
        gsize len;

        g_file_get_contents(path, &text, &len, &error);
        g_assert_no_error(error);
        /* Not vacuous: every documented config sets something. */
        g_assert_cmpuint(assert_same_as_protoc(&tracebus__trace_config__descriptor, protos, "config.proto",
                                               "tracebus.TraceConfig", text, len), >, 0);
}

/* Details of what the documented configs must mean, beyond matching protoc. */
static void test_fixture_meaning(void) {
        g_autofree char *path = fixture_path("detached-ring-buffer.pbtxt");
        g_autofree char *text = NULL;
        g_autoptr(GError) error = NULL;
        g_autoptr(ProtobufCMessage) m = NULL;
        const Tracebus__TraceConfig *c;
        gsize len;

        g_file_get_contents(path, &text, &len, &error);
        g_assert_no_error(error);
        m = parse_len_ok(&tracebus__trace_config__descriptor, text, len);
        c = (const Tracebus__TraceConfig *) m;
        g_assert_true(c->write_into_file);
        g_assert_cmpuint(c->file_write_period_ms, ==, 1000000000);
        g_assert_false(c->has_duration_ms);
        g_assert_cmpuint(c->n_buffers, ==, 1);
        g_assert_cmpuint(c->buffers[0]->size_kb, ==, 16384);
        g_assert_cmpuint(c->n_data_sources, ==, 1);
        g_assert_cmpstr(c->data_sources[0]->config->name, ==, "linux.ftrace");
        g_assert_cmpstr(c->data_sources[0]->config->ftrace_config->ftrace_events[0], ==, "sched_switch");
}

/* ---- Robustness: truncated and mutated inputs never crash and always explain themselves ---- */

static void assert_parses_or_explains(const ProtobufCMessageDescriptor *desc, const char *text, size_t len) {
        ProtobufCMessage *m = NULL;
        g_autofree char *error = NULL;
        int r;

        r = textproto_parse(desc, text, len, "fuzz", &m, &error);
        if (r == 0) {
                g_assert_nonnull(m);
                g_assert_null(error);
                protobuf_c_message_free_unpacked(m, NULL);
                return;
        }
        g_assert_cmpint(r, ==, -EINVAL);
        g_assert_null(m);
        g_assert_nonnull(error);
        g_assert_true(g_str_has_prefix(error, "fuzz:"));
        /* Printable ASCII only: it goes into D-Bus errors and terminals. */
        for (const char *c = error; *c; c++)
                g_assert_true(*c >= 0x20 && *c < 0x7f);
}

static void fuzz_text(const ProtobufCMessageDescriptor *desc, const char *text, size_t len, GRand *rand) {
        static const char alphabet[] = "{}[]<>:;,#\"'\\-.0x19eEfFtT_a \n\t\x01\x80\xff\0";
        g_autofree char *copy = g_malloc(len + 1);

        for (size_t cut = 0; cut <= len; cut++)
                assert_parses_or_explains(desc, text, cut);
        for (unsigned i = 0; i < 500; i++) {
                memcpy(copy, text, len);
                for (unsigned j = g_rand_int_range(rand, 1, 4); j > 0; j--)
                        copy[g_rand_int_range(rand, 0, len)] = alphabet[g_rand_int_range(rand, 0, sizeof(alphabet) - 1)];
                assert_parses_or_explains(desc, copy, len);
        }
}

static void test_fuzz(void) {
        g_autoptr(GRand) rand = g_rand_new_with_seed(0x7e57);
        g_autofree char *dir_path = g_build_filename(source_dir(), FIXTURES, NULL);
        g_autoptr(GDir) dir = NULL;
        g_autoptr(GError) error = NULL;
        const char *name;

        fuzz_text(&all_types_descriptor, all_types_text, strlen(all_types_text), rand);
        dir = g_dir_open(dir_path, 0, &error);
        g_assert_no_error(error);
        while ((name = g_dir_read_name(dir))) {
                g_autofree char *path = NULL, *text = NULL;
                gsize len;

                if (!g_str_has_suffix(name, ".pbtxt"))
                        continue;
                path = g_build_filename(dir_path, name, NULL);
                g_file_get_contents(path, &text, &len, &error);
                g_assert_no_error(error);
                fuzz_text(&tracebus__trace_config__descriptor, text, len, rand);
        }
}

/* One test per fixture, so a new fixture is checked against protoc without code changes.
 * Returns the names, which must outlive the tests. */
static GPtrArray *add_fixture_tests(void) {
        g_autofree char *dir_path = g_build_filename(source_dir(), FIXTURES, NULL);
        GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
        g_autoptr(GDir) dir = NULL;
        g_autoptr(GError) error = NULL;
        const char *name;

        dir = g_dir_open(dir_path, 0, &error);
        g_assert_no_error(error);
        while ((name = g_dir_read_name(dir)))
                if (g_str_has_suffix(name, ".pbtxt"))
                        g_ptr_array_add(names, g_strdup(name));
        g_assert_cmpuint(names->len, >, 0);
        g_ptr_array_sort(names, (GCompareFunc) g_ascii_strcasecmp);
        for (unsigned i = 0; i < names->len; i++) {
                g_autofree char *test = g_strdup_printf("/textproto/protoc/%s", (char *) names->pdata[i]);

                g_test_add_data_func(test, names->pdata[i], test_fixture_protoc);
        }
        return names;
}

int main(int argc, char **argv) {
        g_autoptr(GPtrArray) fixtures = NULL;

        g_test_init(&argc, &argv, NULL);
        all_types_index_names();

        g_test_add_func("/textproto/all-types", test_all_types);
        g_test_add_func("/textproto/all-types-protoc", test_all_types_protoc);
        g_test_add_func("/textproto/defaults-untouched", test_defaults_untouched);
        g_test_add_func("/textproto/oneof", test_oneof);
        g_test_add_func("/textproto/proto3", test_proto3);
        g_test_add_func("/textproto/integers", test_integers);
        g_test_add_func("/textproto/integer-ranges", test_integer_ranges);
        g_test_add_func("/textproto/floats", test_floats);
        g_test_add_func("/textproto/bools", test_bools);
        g_test_add_func("/textproto/enums", test_enums);
        g_test_add_func("/textproto/strings", test_strings);
        g_test_add_func("/textproto/bytes", test_bytes);
        g_test_add_func("/textproto/string-errors", test_string_errors);
        g_test_add_func("/textproto/lists", test_lists);
        g_test_add_func("/textproto/repeated-growth", test_repeated_growth);
        g_test_add_func("/textproto/syntax", test_syntax);
        g_test_add_func("/textproto/trace-config", test_trace_config);
        g_test_add_func("/textproto/errors", test_errors);
        g_test_add_func("/textproto/required", test_required);
        g_test_add_func("/textproto/nul-bytes", test_nul_bytes);
        g_test_add_func("/textproto/depth", test_depth);
        g_test_add_func("/textproto/size-limit", test_size_limit);
        g_test_add_func("/textproto/error-out-params", test_error_out_params);
        g_test_add_func("/textproto/fixture-meaning", test_fixture_meaning);
        g_test_add_func("/textproto/fuzz", test_fuzz);
        fixtures = add_fixture_tests();

        return g_test_run();
}
