/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the generic text format parser (lib/textproto/textproto.c): errors and protoc. The exact message, line and column of each kind
 * of mistake; Perfetto's documented configs (the .pbtxt files in
 * tests/fixtures/textproto) packed with protobuf-c and compared byte for byte
 * with `protoc --encode`; truncated and mutated inputs.
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

/* ---- Lossy parsing (--txt-lossy) ---- */

static void test_enum_suggestion(void) {
        assert_error(&tracebus__trace_config__descriptor, "buffers { fill_policy: RING_BUFER }",
                     "test:1:24: unknown value 'RING_BUFER' for enum field 'fill_policy'; did you mean 'RING_BUFFER'?");
        assert_error(&tracebus__trace_config__descriptor,
                     "data_sources { config { sys_stats_config { vmstat_counters: VMSTAT_PGFAULTS } } }",
                     "test:1:61: unknown value 'VMSTAT_PGFAULTS' for enum field 'vmstat_counters'; "
                     "did you mean 'VMSTAT_PGFAULT'?");
}

static void test_lossy(void) {
        static const char text[] =
                "duration_ms: 5\n"
                "not_in_v58: -12\n"                                  /* a negative number */
                "also_not: \"a\" 'b'\n"                              /* adjacent strings */
                "nor_this: [1, 2, { x: 1 }]\n"                       /* a list */
                "buffers { size_kb: 7 fill_policy: RING_BUFER extra < a: 1 b { } > }\n"
                "data_sources { config { name: \"linux.sys_stats\" sys_stats_config {\n"
                "  vmstat_counters: VMSTAT_NOT_A_COUNTER vmstat_counters: VMSTAT_PGFAULT\n"
                "  meminfo_counters: 999 } } }\n"
                "msg_without_colon { deep { deeper { } } }\n"
                "flush_period_ms: 9\n";
        ProtobufCMessage *m = NULL;
        g_autofree char *error = NULL;
        g_auto(GStrv) warnings = NULL;
        const Tracebus__TraceConfig *c;
        const Tracebus__SysStatsConfig *ss;

        g_assert_cmpint(textproto_parse_flags(&tracebus__trace_config__descriptor, text, strlen(text), "t",
                                              TEXTPROTO_LOSSY, &m, &error, &warnings), ==, 0);
        g_assert_null(error);
        c = (const Tracebus__TraceConfig *) m;
        /* What is known is kept, around and after each dropped field. */
        g_assert_cmpuint(c->duration_ms, ==, 5);
        g_assert_cmpuint(c->flush_period_ms, ==, 9);
        g_assert_cmpuint(c->buffers[0]->size_kb, ==, 7);
        g_assert_false(c->buffers[0]->has_fill_policy);
        ss = c->data_sources[0]->config->sys_stats_config;
        g_assert_cmpuint(ss->n_vmstat_counters, ==, 1);
        g_assert_cmpint(ss->vmstat_counters[0], ==, TRACEBUS__VMSTAT_COUNTERS__VMSTAT_PGFAULT);
        g_assert_cmpuint(ss->n_meminfo_counters, ==, 0);

        g_assert_cmpuint(g_strv_length(warnings), ==, 8);
        g_assert_cmpstr(warnings[0], ==, "t:2:1: unknown field 'not_in_v58' in TraceConfig: dropped");
        g_assert_cmpstr(warnings[1], ==, "t:3:1: unknown field 'also_not' in TraceConfig: dropped");
        g_assert_cmpstr(warnings[2], ==, "t:4:1: unknown field 'nor_this' in TraceConfig: dropped");
        g_assert_cmpstr(warnings[3], ==, "t:5:35: unknown value 'RING_BUFER' for enum field 'fill_policy'; "
                                         "did you mean 'RING_BUFFER'?: dropped");
        g_assert_cmpstr(warnings[4], ==, "t:5:46: unknown field 'extra' in BufferConfig: dropped");
        g_assert_true(g_str_has_prefix(warnings[5], "t:7:20: unknown value 'VMSTAT_NOT_A_COUNTER' for enum field "
                                                    "'vmstat_counters' (expected one of VMSTAT_UNSPECIFIED, "));
        g_assert_true(g_str_has_prefix(warnings[6], "t:8:21: unknown value 999 for enum field 'meminfo_counters'"));
        g_assert_cmpstr(warnings[7], ==, "t:9:1: unknown field 'msg_without_colon' in TraceConfig: dropped");
        protobuf_c_message_free_unpacked(m, NULL);

        /* Without the flag the first of them is an error, as before. */
        assert_error(&tracebus__trace_config__descriptor, text,
                     "test:2:1: unknown field 'not_in_v58' in TraceConfig");
}

static void test_lossy_limits(void) {
        g_autoptr(GString) text = g_string_new("");
        ProtobufCMessage *m = NULL;
        g_auto(GStrv) warnings = NULL;
        g_autofree char *error = NULL;

        /* Warnings are capped, the rest counted. */
        for (unsigned i = 0; i < TEXTPROTO_MAX_WARNINGS + 10; i++)
                g_string_append_printf(text, "unknown_%u: %u\n", i, i);
        g_assert_cmpint(textproto_parse_flags(&tracebus__trace_config__descriptor, text->str, text->len, "t",
                                              TEXTPROTO_LOSSY, &m, NULL, &warnings), ==, 0);
        g_assert_cmpuint(g_strv_length(warnings), ==, TEXTPROTO_MAX_WARNINGS + 1);
        g_assert_cmpstr(warnings[TEXTPROTO_MAX_WARNINGS], ==, "10 more warnings left out");
        protobuf_c_message_free_unpacked(m, NULL);

        /* A dropped field must still be well formed. */
        g_assert_cmpint(textproto_parse_flags(&tracebus__trace_config__descriptor, "x { y: 1", 8, "t",
                                              TEXTPROTO_LOSSY, &m, &error, NULL), ==, -EINVAL);
        g_assert_cmpstr(error, ==, "t:1:9: unexpected end of input in a dropped field");
        g_clear_pointer(&error, g_free);
        g_assert_cmpint(textproto_parse_flags(&tracebus__trace_config__descriptor, "x: ]", 4, "t",
                                              TEXTPROTO_LOSSY, &m, &error, NULL), ==, -EINVAL);
        g_assert_cmpstr(error, ==, "t:1:4: unbalanced ']' in a dropped field");
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

        g_test_add_func("/textproto/errors", test_errors);
        g_test_add_func("/textproto/required", test_required);
        g_test_add_func("/textproto/nul-bytes", test_nul_bytes);
        g_test_add_func("/textproto/depth", test_depth);
        g_test_add_func("/textproto/size-limit", test_size_limit);
        g_test_add_func("/textproto/error-out-params", test_error_out_params);
        g_test_add_func("/textproto/fixture-meaning", test_fixture_meaning);
        g_test_add_func("/textproto/fuzz", test_fuzz);
        g_test_add_func("/textproto/enum-suggestion", test_enum_suggestion);
        g_test_add_func("/textproto/lossy", test_lossy);
        g_test_add_func("/textproto/lossy-limits", test_lossy_limits);
        fixtures = add_fixture_tests();

        return g_test_run();
}
