/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the generic text format parser (lib/textproto/textproto.c): values. Every field type, parsed into hand-written descriptors and
 * asserted field by field, and the all-types text compared byte for byte with
 * what `protoc --encode` makes of it.
 * The descriptors and helpers are in tests/textproto-types.h.
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
#include "textproto-types.h"

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
                     "MEMINFO_UNEVICTABLE, MEMINFO_MLOCKED, MEMINFO_SWAP_TOTAL, ... (23 more))");
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

int main(int argc, char **argv) {
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

        return g_test_run();
}
