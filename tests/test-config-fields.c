/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit suite: the disposition of Perfetto's config fields (service/session-config-fields.c):
 * every field has a rule, the README shows the table, and the corpus of configs in
 * tests/configs parses with the warnings each file expects. */
#include "session-config-fields.h"

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

/* The *_config fields of DataSourceConfig are told by data source (the README's last
 * table); every other field of the walked messages needs a rule of its own, and each
 * *_config field a data source. */
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
        g_assert_cmpint(session_config_source_rule("linux.perf")->disposition, ==, FIELD_NOT_YET);
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

/* The README's table is the table: regenerate it with `tests/test-config-fields --print`. */
static void test_readme_shows_the_table(void) {
        g_autofree char *path = source_path("README.md");
        g_autofree char *readme = NULL;
        g_autofree char *table = markdown();
        const char *begin_mark = "<!-- perfetto-config-fields: begin -->\n";
        const char *begin, *end;
        g_autofree char *shown = NULL;

        g_assert_true(g_file_get_contents(path, &readme, NULL, NULL));
        begin = strstr(readme, begin_mark);
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

static void check_corpus_file(const char *path) {
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
        g_assert_cmpint(session_config_check_fields(tc, &c), ==, 0);
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
        g_autoptr(GDir) dir = g_dir_open(dir_path, 0, NULL);
        const char *name;
        unsigned n = 0;

        g_assert_nonnull(dir);
        while ((name = g_dir_read_name(dir))) {
                g_autofree char *path = NULL;

                if (!g_str_has_suffix(name, ".pbtxt"))
                        continue;
                path = g_build_filename(dir_path, name, NULL);
                g_test_message("%s", name);
                check_corpus_file(path);
                n++;
        }
        g_assert_cmpuint(n, >=, 8);
}

int main(int argc, char **argv) {
        if (argc > 1 && g_str_equal(argv[1], "--print")) {
                session_config_fields_markdown(stdout);
                return 0;
        }
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/config-fields/every-field-has-a-rule", test_every_field_has_a_rule);
        g_test_add_func("/config-fields/source-rules", test_source_rules);
        g_test_add_func("/config-fields/readme", test_readme_shows_the_table);
        g_test_add_func("/config-fields/corpus", test_corpus);
        return g_test_run();
}
