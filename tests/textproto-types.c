/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The textproto unit tests' fixtures (textproto-types.h): hand-written
 * protobuf-c descriptors of tests/fixtures/textproto/{all_types,proto3_types}.proto,
 * the all-types text, and the parse and protoc helpers.
 */
#include "textproto-types.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <glib/gstdio.h>

#include "textproto.h"

#define PROTOC_DEFAULT "/usr/bin/protoc"

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

const char s_def_default[] = "hello";

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

const ProtobufCMessageDescriptor all_types_descriptor = {
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

const ProtobufCMessageDescriptor nested_descriptor = {
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

const ProtobufCMessageDescriptor proto3_types_descriptor = {
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

void all_types_index_names(void) {
        for (unsigned i = 0; i < G_N_ELEMENTS(all_types_by_name); i++)
                all_types_by_name[i] = i;
        qsort(all_types_by_name, G_N_ELEMENTS(all_types_by_name), sizeof(unsigned), compare_field_names);
}

/* ---- Helpers ---- */

void message_free(ProtobufCMessage *m) {
        protobuf_c_message_free_unpacked(m, NULL);
}

ProtobufCMessage *parse_len_ok(const ProtobufCMessageDescriptor *desc, const char *text, size_t len) {
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

ProtobufCMessage *parse_ok(const ProtobufCMessageDescriptor *desc, const char *text) {
        return parse_len_ok(desc, text, strlen(text));
}

void assert_error_len(const ProtobufCMessageDescriptor *desc, const char *text, size_t len,
                             const char *expected) {
        ProtobufCMessage *m = NULL;
        g_autofree char *error = NULL;
        int r;

        r = textproto_parse(desc, text, len, "test", &m, &error);
        g_assert_cmpint(r, ==, -EINVAL);
        g_assert_null(m);
        g_assert_cmpstr(error, ==, expected);
}

void assert_error(const ProtobufCMessageDescriptor *desc, const char *text, const char *expected) {
        assert_error_len(desc, text, strlen(text), expected);
}

const char *source_dir(void) {
        const char *dir = g_getenv("TRACEBUS_SOURCE_DIR");

        /* meson sets it; without it the fixtures cannot be found, which is a failure, not a skip. */
        g_assert_nonnull(dir);
        return dir;
}

char *fixture_path(const char *name) {
        return g_build_filename(source_dir(), FIXTURES, name, NULL);
}

GBytes *pack(const ProtobufCMessage *m) {
        size_t size = protobuf_c_message_get_packed_size(m);
        uint8_t *buf = g_malloc(size + 1);

        g_assert_cmpuint(protobuf_c_message_pack(m, buf), ==, size);
        return g_bytes_new_take(buf, size);
}

/* Runs protoc --encode on @text; its stdin and stdout go through files because
 * g_spawn_sync() cannot feed stdin and loses the length of binary output. */
GBytes *protoc_encode(const char *proto_dir, const char *proto, const char *type,
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
size_t assert_same_as_protoc(const ProtobufCMessageDescriptor *desc, const char *proto_dir,
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

size_t assert_all_types_same_as_protoc(const ProtobufCMessageDescriptor *desc, const char *type,
                                              const char *proto, const char *text) {
        g_autofree char *dir = g_build_filename(source_dir(), FIXTURES, NULL);

        return assert_same_as_protoc(desc, dir, proto, type, text, strlen(text));
}

/* ---- Values ---- */

const char all_types_text[] =
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
