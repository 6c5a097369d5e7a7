/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite: the tracebus command line against the real service, polkitd and
 * dbus-daemon (tests/system-bus.h), run as the test users: the user guide's busctl
 * lines, and perfetto's documented detach examples (tests/perfetto-compat.sh).
 * The helpers are in tests/cli-util.h.
 *
 * What tests/polkit-rules/50-tracebus-test.rules says about
 * org.tracebus.record: tbuser YES, tbadmin YES (and org.tracebus.manage),
 * tbchallenge AUTH_ADMIN, tbother NO.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli-util.h"

/* ===================================================================== */
/* The user guide's busctl lines                                          */
/* ===================================================================== */

typedef struct {
        char *command;    /* one shell line */
        char *expected;   /* the reply the user guide shows, or NULL */
} GuideLine;

static void guide_line_free(GuideLine *l) {
        g_free(l->command);
        g_free(l->expected);
        g_free(l);
}

/* The comment that ends a line ("   # ..."), outside quotes, or NULL. */
static char *split_comment(char *line) {
        bool in_single = false, in_double = false;

        for (char *p = line; *p; p++) {
                if (*p == '\'' && !in_double)
                        in_single = !in_single;
                else if (*p == '"' && !in_single)
                        in_double = !in_double;
                else if (*p == '#' && !in_single && !in_double && (p == line || p[-1] == ' ')) {
                        *p = '\0';
                        g_strchomp(line);
                        return g_strstrip(g_strdup(p + 1));
                }
        }
        return NULL;
}

/* The shell lines of the fenced sh blocks of doc/user-guide.md's "## busctl" section,
 * with continuation lines joined; each with the reply its comment shows. */
static GPtrArray *guide_busctl_lines(void) {
        g_autofree char *guide = g_build_filename(tb_bus()->source_dir, "doc", "user-guide.md", NULL);
        g_autofree char *text = NULL;
        g_auto(GStrv) lines = NULL;
        GPtrArray *out = g_ptr_array_new_with_free_func((GDestroyNotify) guide_line_free);
        g_autoptr(GString) pending = g_string_new(NULL);
        bool section = false, block = false;

        g_assert_true(g_file_get_contents(guide, &text, NULL, NULL));
        lines = g_strsplit(text, "\n", -1);
        for (size_t i = 0; lines[i]; i++) {
                char *l = lines[i];

                if (g_str_has_prefix(l, "## "))
                        section = g_str_equal(l, "## busctl");
                if (!section)
                        continue;
                if (g_str_has_prefix(l, "```")) {
                        block = !block && g_str_equal(l, "```sh");
                        continue;
                }
                if (!block)
                        continue;
                g_strstrip(l);
                if (g_str_has_suffix(l, "\\")) {
                        l[strlen(l) - 1] = '\0';
                        g_string_append_printf(pending, "%s ", g_strstrip(l));
                        continue;
                }
                if (*l == '#') {
                        /* A comment line after a command is the reply it shows. */
                        GuideLine *prev = out->len ? out->pdata[out->len - 1] : NULL;
                        if (prev && !prev->expected && pending->len == 0)
                                prev->expected = g_strstrip(g_strdup(l + 1));
                        continue;
                }
                if (*l == '\0' && pending->len == 0)
                        continue;
                g_string_append(pending, l);
                {
                        GuideLine *rl = g_new0(GuideLine, 1);
                        rl->command = g_string_free(g_steal_pointer(&pending), FALSE);
                        rl->expected = split_comment(rl->command);
                        pending = g_string_new(NULL);
                        g_ptr_array_add(out, rl);
                }
        }
        return out;
}

static bool is_session_path(const char *s) {
        return g_str_has_prefix(s, TB_MANAGER_PATH "/session/");
}

/* Session paths the user guide shows, replaced by the ones the service gave. */
static char *substitute(const char *command, GHashTable *paths, const char *config) {
        g_autoptr(GString) s = g_string_new(command);
        GHashTableIter it;
        gpointer k, v;

        /* Longest first would matter for session/1 vs session/12: match whole words. */
        g_hash_table_iter_init(&it, paths);
        while (g_hash_table_iter_next(&it, &k, &v)) {
                g_autofree char *pattern = g_strdup_printf("%s(?![0-9])", (const char *) k);
                g_autoptr(GRegex) re = g_regex_new(pattern, 0, 0, NULL);
                g_autofree char *r = g_regex_replace_literal(re, s->str, -1, 0, v, 0, NULL);
                g_string_assign(s, r);
        }
        {
                g_autoptr(GRegex) re = g_regex_new("\\bconfig\\.pbtxt\\b", 0, 0, NULL);
                g_autofree char *r = g_regex_replace_literal(re, s->str, -1, 0, config, 0, NULL);
                g_string_assign(s, r);
        }
        return g_string_free(g_steal_pointer(&s), FALSE);
}

static bool is_number(const char *s) {
        return *s && strspn(s, "0123456789") == strlen(s);
}

/* The reply matches the user guide's: the same type, every word the user guide shows
 * (numbers, "..." and file paths vary), and the session paths (mapped). */
static void check_reply(const char *expected, const char *actual, GHashTable *paths) {
        g_auto(GStrv) exp = busctl_tokens(expected), act = busctl_tokens(actual);

        g_assert_nonnull(act[0]);
        g_assert_cmpstr(act[0], ==, exp[0]);
        for (size_t i = 1; exp[i]; i++) {
                const char *e = exp[i];

                if (is_number(e) || g_str_equal(e, "...") || g_str_has_prefix(e, "/var/lib/tracebus/"))
                        continue;
                if (is_session_path(e)) {
                        const char *mapped = g_hash_table_lookup(paths, e);
                        if (!mapped) {
                                g_assert_true(i < g_strv_length(act) && is_session_path(act[i]));
                                g_hash_table_insert(paths, g_strdup(e), g_strdup(act[i]));
                                note("the user guide's %s is %s here\n", e, act[i]);
                                continue;
                        }
                        e = mapped;
                }
                if (!g_strv_contains((const char *const *) act, e)) {
                        note("the reply lacks \"%s\" (user guide: %s)\n", e, expected);
                        g_assert_not_reached();
                }
        }
}

/* Every busctl line of the user guide's busctl section, as tbuser, replies checked. */
static void test_guide_busctl(void) {
        g_autofree char *dir = make_user_dir("tbuser", "cli-guide");
        g_autofree char *text = config_text(30000);
        g_autofree char *cfg = user_file("tbuser", dir, "config.pbtxt", text, -1);
        g_autoptr(GPtrArray) lines = guide_busctl_lines();
        g_autoptr(GHashTable) paths = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
        g_autoptr(GString) prelude = g_string_new(NULL);
        guint calls = 0, checked = 0;

        g_assert_cmpuint(lines->len, >, 10);
        for (guint i = 0; i < lines->len; i++) {
                GuideLine *l = lines->pdata[i];
                g_autofree char *command = substitute(l->command, paths, cfg);
                g_autofree char *script = NULL;
                g_auto(TbCommandResult) res = { 0 };

                /* Assignments (M="...") are for the lines after them. */
                if (g_regex_match_simple("^[A-Za-z_][A-Za-z0-9_]*=", command, 0, 0)) {
                        g_string_append_printf(prelude, "%s\n", command);
                        continue;
                }
                g_assert_true(g_str_has_prefix(command, "busctl "));
                script = g_strdup_printf("set -e\n%s%s", prelude->str, command);
                run_sh("tbuser", script, &res);
                assert_exit(&res, 0);
                calls++;
                if (l->expected) {
                        check_reply(l->expected, res.out, paths);
                        checked++;
                }
        }
        note("%u busctl lines run, %u replies checked\n", calls, checked);
        g_assert_cmpuint(checked, >, 8);
        stop_all_of("tbuser");
}

/* ===================================================================== */
/* perfetto's documented scripts, unchanged but for `tracebus`            */
/* ===================================================================== */

static void run_compat(const char *example, const char *trace_name) {
        g_autofree char *src = g_build_filename(tb_bus()->source_dir, "tests", "perfetto-compat.sh", NULL);
        g_autofree char *script = copy_executable(src, "perfetto-compat.sh");
        g_autofree char *name = g_strdup_printf("cli-compat-%s", example);
        g_autofree char *dir = make_user_dir("tbuser", name);
        g_autofree char *trace = g_build_filename(dir, trace_name, NULL);
        g_autofree char *line = g_strdup_printf("TRACE_DIR=%s SLEEP=2 %s %s", dir, script, example);
        g_auto(TbCommandResult) res = { 0 };
        g_autoptr(GError) error = NULL;
        TbBusy busy;

        g_assert_true(tb_busy_start("tbbusy-compat", &busy, &error));
        run_sh("tbuser", line, &res);
        tb_busy_stop(&busy);
        assert_exit(&res, 0);
        assert_file_complete(trace);
        g_assert_true(wait_no_sessions(tb_user_uid("tbuser"), 10000));
}

static void test_compat_long_trace(void) {
        run_compat("long-trace", "trace");
}

static void test_compat_ring_buffer(void) {
        run_compat("ring-buffer", "trace");
}

static void test_compat_time_limit(void) {
        gint64 t0 = g_get_monotonic_time();

        run_compat("time-limit", "trace");
        /* --attach stayed up until the 10 s were over. */
        g_assert_cmpint(g_get_monotonic_time() - t0, >, 9 * G_USEC_PER_SEC);
}

static void test_compat_background(void) {
        run_compat("background", "trace.pftrace");
}

int main(int argc, char **argv) {
        /* Children must never find a terminal on stdin unless a case gives them one. */
        if (!freopen("/dev/null", "r", stdin))
                return EXIT_FAILURE;
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();

        tb_test_add_isolated("/bus/cli/guide/busctl", test_guide_busctl);
        tb_test_add_isolated("/bus/cli/compat/long-trace", test_compat_long_trace);
        tb_test_add_isolated("/bus/cli/compat/ring-buffer", test_compat_ring_buffer);
        tb_test_add_isolated("/bus/cli/compat/time-limit", test_compat_time_limit);
        tb_test_add_isolated("/bus/cli/compat/background", test_compat_background);
        return tb_test_run(TB_START_SERVICE);
}
