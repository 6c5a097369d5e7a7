/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * FtraceConfig's symbolize_ksyms, enable_function_graph and kprobe_events as the service
 * loads them (service/config/session-config-ftgraph.c), against fake tracefs roots: one of a
 * kernel with the function_graph tracer and kprobe events, one without. What the kernel
 * lacks is a warning; a name that could carry a tracefs command is refused.
 */
#include <string.h>

/* Before GLib, whose MIN and MAX are the same macros. */
#include "session-config.h"
#include "strv.h"
#undef MIN
#undef MAX

#include <glib.h>
#include <glib/gstdio.h>

typedef char FakeRoot;

static void put_file(const char *root, const char *name, const char *text) {
        g_autofree char *path = g_build_filename(root, name, NULL);

        g_assert_true(g_file_set_contents(path, text, -1, NULL));
}

/* A tracefs root with sched/sched_switch, and the tracer and probes asked for. */
static char *fake_root(bool graph, bool kprobes) {
        g_autoptr(GError) error = NULL;
        char *root = g_dir_make_tmp("tb-ftgraph-XXXXXX", &error);
        g_autofree char *events = NULL;

        g_assert_no_error(error);
        events = g_build_filename(root, "events", "sched", "sched_switch", NULL);
        g_assert_cmpint(g_mkdir_with_parents(events, 0700), ==, 0);
        put_file(root, "available_events", "sched:sched_switch\n");
        put_file(root, "available_tracers", graph ? "blk function_graph function nop\n" : "blk function nop\n");
        if (kprobes)
                put_file(root, "kprobe_events", "");
        return root;
}

static void remove_root(char *root) {
        static const char *const paths[] = {
                "available_events", "available_tracers", "kprobe_events",
                "events/sched/sched_switch", "events/sched", "events", "",
        };

        for (size_t i = 0; i < G_N_ELEMENTS(paths); i++) {
                g_autofree char *p = g_build_filename(root, paths[i], NULL);
                (void) g_remove(p);
        }
        g_free(root);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(FakeRoot, remove_root)

static int load_text(const char *root, const char *text, SessionConfig *c, char **error) {
        Tracebus__TraceConfig *tc = NULL;
        int r;

        *c = (SessionConfig) {};
        g_assert_cmpint(session_config_parse_text(text, &tc, error), ==, 0);
        r = session_config_load(tc, root, c, error);
        tracebus__trace_config__free_unpacked(tc, NULL);
        return r;
}

static int load(const char *root, const char *ftrace_extra, SessionConfig *c, char **error) {
        g_autofree char *text = g_strdup_printf("buffers { size_kb: 1024 }\n"
                                                "data_sources { config { name: \"linux.ftrace\" ftrace_config {\n"
                                                "  ftrace_events: \"sched/sched_switch\"\n%s} } }\n", ftrace_extra);

        return load_text(root, text, c, error);
}

static bool has_warning(const SessionConfig *c, const char *words) {
        for (char **w = c->warnings; w && *w; w++)
                if (strstr(*w, words))
                        return true;
        return false;
}

static const char full[] =
        "  symbolize_ksyms: true\n  ksyms_mem_policy: KSYMS_RETAIN\n"
        "  enable_function_graph: true\n  function_filters: \"vfs_*\"\n  function_filters: \"do_sys_openat2\"\n"
        "  function_graph_roots: \"do_sys_openat2\"\n  function_graph_max_depth: 4\n"
        "  kprobe_events { probe: \"do_sys_openat2\" type: KPROBE_TYPE_BOTH }\n"
        "  kprobe_events { probe: \"vfs_read\" type: KPROBE_TYPE_KPROBE }\n";

static void test_capable_kernel(void) {
        g_autoptr(FakeRoot) root = fake_root(true, true);
        g_autofree char *error = NULL;
        SessionConfig c;

        g_assert_cmpint(load(root, full, &c, &error), ==, 0);
        g_assert_true(c.needs_kprobes_action);
        g_assert_true(c.function_graph);
        g_assert_true(c.symbolize_ksyms);   /* the test runs as root: kallsyms shows addresses */
        g_assert_true(c.ksyms_retain);
        g_assert_cmpuint(c.function_graph_max_depth, ==, 4);
        g_assert_cmpuint(strv_length(c.function_filters), ==, 2);
        g_assert_cmpstr(c.function_graph_roots[0], ==, "do_sys_openat2");
        g_assert_cmpuint(strv_length(c.kprobes), ==, 3);
        g_assert_true(strv_contains(c.kprobes, "p:do_sys_openat2") && strv_contains(c.kprobes, "r:do_sys_openat2") &&
                      strv_contains(c.kprobes, "p:vfs_read"));
        g_assert_true(strv_contains(c.events, "ftrace/funcgraph_entry") && strv_contains(c.events, "ftrace/funcgraph_exit"));
        g_assert_null(c.warnings);
        session_config_done(&c);
}

static void test_incapable_kernel(void) {
        g_autoptr(FakeRoot) root = fake_root(false, false);
        g_autofree char *error = NULL;
        SessionConfig c;

        /* Asked for is asked for: the action is needed even where nothing can be done. */
        g_assert_cmpint(load(root, full, &c, &error), ==, 0);
        g_assert_true(c.needs_kprobes_action);
        g_assert_false(c.function_graph);
        g_assert_null(c.kprobes);
        g_assert_false(strv_contains(c.events, "ftrace/funcgraph_entry"));
        g_assert_true(has_warning(&c, "no function_graph tracer"));
        g_assert_true(has_warning(&c, "no kprobe events"));
        g_assert_true(has_warning(&c, "3 probes skipped"));
        session_config_done(&c);

        /* The lists without the tracer: ignored, and said so. */
        g_assert_cmpint(load(root, "  function_filters: \"vfs_read\"\n", &c, &error), ==, 0);
        g_assert_false(c.needs_kprobes_action);
        g_assert_true(has_warning(&c, "apply with enable_function_graph only"));
        session_config_done(&c);
}

static void test_refusals(void) {
        static const char *const bad[] = {
                "  enable_function_graph: true\n  function_filters: \"vfs_read:traceoff\"\n",
                "  enable_function_graph: true\n  function_filters: \"!vfs_read\"\n",
                "  enable_function_graph: true\n  function_graph_roots: \"a b\"\n",
                "  enable_function_graph: true\n  function_filters: \"\"\n",
                "  kprobe_events { probe: \"vfs_*\" type: KPROBE_TYPE_KPROBE }\n",
                "  kprobe_events { probe: \"vfs_read\" }\n",
                "  kprobe_events { type: KPROBE_TYPE_KPROBE }\n",
                "  kprobe_events { probe: \"p:x/y vfs_read\" type: KPROBE_TYPE_KPROBE }\n",
        };
        g_autoptr(FakeRoot) root = fake_root(true, true);

        for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
                g_autofree char *error = NULL;
                SessionConfig c;

                g_assert_cmpint(load(root, bad[i], &c, &error), ==, -EINVAL);
                g_assert_nonnull(error);
                g_assert_true(strstr(error, "function_filters") || strstr(error, "function_graph_roots") ||
                              strstr(error, "kprobe_events"));
        }
}

static void test_caps(void) {
        g_autoptr(FakeRoot) root = fake_root(true, true);
        g_autofree char *error = NULL;
        g_autoptr(GString) many = g_string_new("  enable_function_graph: true\n");
        SessionConfig c;

        for (unsigned i = 0; i <= FTGRAPH_MAX_FUNCTIONS; i++)
                g_string_append_printf(many, "  function_filters: \"f%u\"\n", i);
        g_assert_cmpint(load(root, many->str, &c, &error), ==, -EINVAL);
        g_assert_nonnull(strstr(error, "more than"));
        g_clear_pointer(&error, g_free);
        g_string_assign(many, "");
        for (unsigned i = 0; i <= FTGRAPH_MAX_KPROBES; i++)
                g_string_append_printf(many, "  kprobe_events { probe: \"f%u\" type: KPROBE_TYPE_KPROBE }\n", i);
        g_assert_cmpint(load(root, many->str, &c, &error), ==, -EINVAL);
        g_assert_nonnull(strstr(error, "more than"));
}

/* The shape of Perfetto's function graph recipes: the tracer alone, no ftrace_events. */
static const char graph_only[] =
        "duration_ms: 1000\nbuffers { size_kb: 4096 fill_policy: DISCARD }\n"
        "data_sources { config { name: \"linux.ftrace\" ftrace_config {\n"
        "  symbolize_ksyms: true\n  enable_function_graph: true\n"
        "  function_graph_roots: \"schedule\"\n  function_graph_max_depth: 4\n} } }\n";

static void test_graph_only(void) {
        g_autoptr(FakeRoot) capable = fake_root(true, false), incapable = fake_root(false, false);
        g_autofree char *error = NULL;
        SessionConfig c;

        g_assert_cmpint(load_text(capable, graph_only, &c, &error), ==, 0);
        g_assert_true(c.function_graph);
        g_assert_true(strv_contains(c.events, "ftrace/funcgraph_entry"));
        session_config_done(&c);

        /* Nothing of its own left once the kernel's lack is skipped: it starts, as Perfetto
         * starts it (service packets only), the lack a warning. */
        g_assert_cmpint(load_text(incapable, graph_only, &c, &error), ==, 0);
        g_assert_null(error);
        g_assert_false(c.function_graph);
        g_assert_null(c.events);
        g_assert_true(has_warning(&c, "no function_graph tracer"));
        session_config_done(&c);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/ftgraph-config/capable-kernel", test_capable_kernel);
        g_test_add_func("/ftgraph-config/incapable-kernel", test_incapable_kernel);
        g_test_add_func("/ftgraph-config/refusals", test_refusals);
        g_test_add_func("/ftgraph-config/caps", test_caps);
        g_test_add_func("/ftgraph-config/graph-only", test_graph_only);
        return g_test_run();
}
