/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit suite: the disposition of Perfetto's config fields (service/config/session-config-fields.c):
 * every field has a rule, doc/perfetto-compatibility.md shows the table, and the corpus of
 * configs in tests/configs parses with the warnings each file expects. */
#include "session-config-fields.h"
#include "textproto-types.h"

#include <glib.h>
#include <stdio.h>
#include <string.h>

static char *source_path(const char *rel) {
        const char *root = g_getenv("TRACEBUS_SOURCE_DIR");

        g_assert_nonnull(root);
        return g_build_filename(root, rel, NULL);
}

/* The rules' name of a descriptor: "tracebus.X.Y" -> "X.Y". */
static const char *rule_name(const ProtobufCMessageDescriptor *d) {
        return g_str_has_prefix(d->name, "tracebus.") ? d->name + 9 : d->name;
}

/* The *_config fields of DataSourceConfig are told by data source (the last table of
 * doc/perfetto-compatibility.md); every other field of the walked messages needs a rule of
 * its own, and each *_config field a data source. */
static bool is_config_field(const ProtobufCMessageDescriptor *d, const ProtobufCFieldDescriptor *fd) {
        return d == &tracebus__data_source_config__descriptor && session_config_field_source(fd->name);
}

static void test_every_field_has_a_rule(void) {
        const ProtobufCMessageDescriptor *walked[] = {
                &tracebus__trace_config__descriptor,
                &tracebus__trace_config__buffer_config__descriptor,
                &tracebus__trace_config__data_source__descriptor,
                &tracebus__data_source_config__descriptor,
        };
        unsigned rules = 0;

        for (size_t i = 0; i < G_N_ELEMENTS(walked); i++)
                for (unsigned f = 0; f < walked[i]->n_fields; f++) {
                        const ProtobufCFieldDescriptor *fd = &walked[i]->fields[f];

                        if (is_config_field(walked[i], fd))
                                continue;
                        if (!session_config_field_rule(rule_name(walked[i]), fd->name))
                                g_error("no rule for %s.%s", rule_name(walked[i]), fd->name);
                        rules++;
                }
        /* ...and no rule names a field that is not there. */
        for (const FieldRule *r = session_config_field_rules; r->message; r++)
                rules--;
        g_assert_cmpuint(rules, ==, 0);
}

static void test_source_rules(void) {
        g_assert_cmpint(session_config_source_rule("linux.ftrace")->disposition, ==, FIELD_HONOURED);
        g_assert_cmpint(session_config_source_rule("android.surfaceflinger.layers")->disposition, ==,
                        FIELD_ANDROID_ONLY);
        g_assert_cmpint(session_config_source_rule("linux.perf")->disposition, ==, FIELD_HONOURED);
        g_assert_cmpint(session_config_source_rule("linux.inode_file_map")->disposition, ==, FIELD_NOT_YET);
        g_assert_null(session_config_source_rule("android."));
        g_assert_null(session_config_source_rule("linux.ftrace2"));
        g_assert_null(session_config_source_rule("linux.polled_state"));
}

static char *markdown(void) {
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);

        g_assert_nonnull(f);
        session_config_fields_markdown(f);
        g_assert_cmpint(fclose(f), ==, 0);
        return text;
}

/* The page's table is the table: regenerate it with `tests/test-config-fields --print`. */
static void test_doc_shows_the_table(void) {
        g_autofree char *path = source_path("doc/perfetto-compatibility.md");
        g_autofree char *doc = NULL;
        g_autofree char *table = markdown();
        const char *begin_mark = "<!-- perfetto-config-fields: begin -->\n";
        const char *begin, *end;
        g_autofree char *shown = NULL;

        g_assert_true(g_file_get_contents(path, &doc, NULL, NULL));
        begin = strstr(doc, begin_mark);
        g_assert_nonnull(begin);
        begin += strlen(begin_mark);
        end = strstr(begin, "<!-- perfetto-config-fields: end -->");
        g_assert_nonnull(end);
        shown = g_strndup(begin, end - begin);
        g_assert_cmpstr(shown, ==, table);
}

/* The lines "# expect-warning: TEXT" of a corpus file, sorted. */
static GPtrArray *expected_warnings(const char *text, bool *ret_none) {
        g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
        GPtrArray *a = g_ptr_array_new_with_free_func(g_free);

        *ret_none = false;
        for (char **l = lines; *l; l++) {
                if (g_str_has_prefix(*l, "# expect-warning: "))
                        g_ptr_array_add(a, g_strdup(*l + strlen("# expect-warning: ")));
                else if (g_str_equal(*l, "# expect-none"))
                        *ret_none = true;
        }
        return a;
}

static int compare_strings(gconstpointer a, gconstpointer b) {
        return g_strcmp0(*(char *const *) a, *(char *const *) b);
}

/* Which "Message.field"s some corpus file sets, whatever the depth. */
static void note_set_fields(const ProtobufCMessage *m, GHashTable *seen) {
        const uint8_t *base = (const uint8_t *) m;

        for (unsigned i = 0; i < m->descriptor->n_fields; i++) {
                const ProtobufCFieldDescriptor *fd = &m->descriptor->fields[i];
                bool repeated = fd->label == PROTOBUF_C_LABEL_REPEATED;
                size_t n = repeated ? *(const size_t *) (base + fd->quantifier_offset) : 1;
                bool set;

                if (repeated)
                        set = n > 0;
                else if (fd->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
                        set = *(const uint32_t *) (base + fd->quantifier_offset) == fd->id;
                else if (fd->type == PROTOBUF_C_TYPE_STRING || fd->type == PROTOBUF_C_TYPE_MESSAGE)
                        set = *(const void *const *) (base + fd->offset) != NULL;
                else
                        set = fd->quantifier_offset && *(const protobuf_c_boolean *) (base + fd->quantifier_offset);
                if (!set)
                        continue;
                g_hash_table_add(seen, g_strdup_printf("%s.%s", rule_name(m->descriptor), fd->name));
                if (fd->type != PROTOBUF_C_TYPE_MESSAGE)
                        continue;
                for (size_t j = 0; j < n; j++)
                        note_set_fields(repeated ? (*(ProtobufCMessage *const *const *) (base + fd->offset))[j]
                                                 : *(ProtobufCMessage *const *) (base + fd->offset), seen);
        }
}

static void check_corpus_file(const char *path, const char *protos_dir, GHashTable *seen) {
        g_autofree char *text = NULL;
        g_autoptr(GPtrArray) want = NULL;
        g_autoptr(GPtrArray) got = g_ptr_array_new();
        Tracebus__TraceConfig *tc = NULL;
        g_autofree char *error = NULL;
        SessionConfig c = {};
        bool none;

        g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
        want = expected_warnings(text, &none);
        g_ptr_array_sort(want, compare_strings);
        if (session_config_parse_text(text, &tc, &error) < 0)
                g_error("%s: %s", path, error);
        /* The parser reads every v58 field of the corpus as protoc does. */
        g_assert_cmpuint(assert_same_as_protoc(&tracebus__trace_config__descriptor, protos_dir, "config.proto",
                                               "tracebus.TraceConfig", text, strlen(text)), >, 0);
        g_assert_cmpint(session_config_check_fields(tc, &c), ==, 0);
        note_set_fields(&tc->base, seen);
        for (char **w = c.warnings; w && *w; w++)
                g_ptr_array_add(got, *w);
        g_ptr_array_sort(got, compare_strings);
        /* Each file says what it expects, if only that there is nothing to say. */
        g_assert_true(none == (want->len == 0));
        g_assert_cmpuint(got->len, ==, want->len);
        for (guint i = 0; i < got->len; i++)
                g_assert_cmpstr(g_ptr_array_index(got, i), ==, g_ptr_array_index(want, i));
        session_config_done(&c);
        trace_config_freep(&tc);
}

static void test_corpus(void) {
        g_autofree char *dir_path = source_path("tests/configs");
        g_autofree char *protos_dir = source_path("protos");
        g_autoptr(GDir) dir = g_dir_open(dir_path, 0, NULL);
        g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        g_autoptr(GString) missing = g_string_new("");
        const ProtobufCMessageDescriptor *covered[] = {
                &tracebus__trace_config__descriptor,
                &tracebus__trace_config__buffer_config__descriptor,
                &tracebus__trace_config__data_source__descriptor,
                &tracebus__trace_config__builtin_data_source__descriptor,
                &tracebus__trace_config__trace_filter__descriptor,
                &tracebus__data_source_config__descriptor,
                &tracebus__ftrace_config__descriptor,
                &tracebus__sys_stats_config__descriptor,
                &tracebus__process_stats_config__descriptor,
                &tracebus__journald_config__descriptor,
                &tracebus__perf_event_config__descriptor,
        };
        const char *name;
        unsigned n = 0;

        g_assert_nonnull(dir);
        while ((name = g_dir_read_name(dir))) {
                g_autofree char *path = NULL;

                if (!g_str_has_suffix(name, ".pbtxt"))
                        continue;
                path = g_build_filename(dir_path, name, NULL);
                g_test_message("%s", name);
                check_corpus_file(path, protos_dir, seen);
                n++;
        }
        g_assert_cmpuint(n, >=, 8);

        /* The corpus sets every field of TraceConfig and of the configs of the data
         * sources tracebus records (and of linux.perf, parsed here too). */
        for (size_t i = 0; i < G_N_ELEMENTS(covered); i++)
                for (unsigned f = 0; f < covered[i]->n_fields; f++) {
                        g_autofree char *key = g_strdup_printf("%s.%s", rule_name(covered[i]), covered[i]->fields[f].name);

                        if (!g_hash_table_contains(seen, key))
                                g_string_append_printf(missing, " %s", key);
                }
        g_assert_cmpstr(missing->str, ==, "");
}

/* A binary config's fields v58 lacks: protobuf-c keeps them; each is warned with its path. */
static void test_binary_unknown_fields(void) {
        /* TraceConfig { duration_ms: 1, data_sources { config { name: "linux.ftrace"
         * ftrace_config { ftrace_events: "a", <99: 7> } } }, <200: 5> } */
        static const uint8_t bin[] = {
                0x18, 0x01,                                     /* duration_ms: 1 */
                0x12, 0x19,                                     /* data_sources, 25 bytes */
                0x0a, 0x17,                                     /* config, 23 bytes */
                0x0a, 0x0c, 'l', 'i', 'n', 'u', 'x', '.', 'f', 't', 'r', 'a', 'c', 'e',
                0xa2, 0x06, 0x06,                               /* ftrace_config (100), 6 bytes */
                0x0a, 0x01, 'a',                                /* ftrace_events: "a" */
                0x98, 0x06, 0x07,                               /* field 99, varint 7 */
                0xc0, 0x0c, 0x05,                               /* field 200, varint 5 */
        };
        Tracebus__TraceConfig *tc = NULL;
        g_autofree char *error = NULL;
        SessionConfig c = {};

        g_assert_cmpint(session_config_parse_binary(bin, sizeof(bin), &tc, &error), ==, 0);
        g_assert_cmpstr(tc->data_sources[0]->config->ftrace_config->ftrace_events[0], ==, "a");
        g_assert_cmpint(session_config_check_fields(tc, &c), ==, 0);
        g_assert_cmpuint(g_strv_length(c.warnings), ==, 2);
        g_assert_cmpstr(c.warnings[0], ==, "unknown field 200 in TraceConfig: skipped");
        g_assert_cmpstr(c.warnings[1], ==,
                        "unknown field 99 in TraceConfig.data_sources[0].config.ftrace_config: skipped");
        session_config_done(&c);
        trace_config_freep(&tc);
}

int main(int argc, char **argv) {
        if (argc > 1 && g_str_equal(argv[1], "--print")) {
                session_config_fields_markdown(stdout);
                return 0;
        }
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/config-fields/every-field-has-a-rule", test_every_field_has_a_rule);
        g_test_add_func("/config-fields/source-rules", test_source_rules);
        g_test_add_func("/config-fields/doc", test_doc_shows_the_table);
        g_test_add_func("/config-fields/corpus", test_corpus);
        g_test_add_func("/config-fields/binary-unknown-fields", test_binary_unknown_fields);
        return g_test_run();
}
