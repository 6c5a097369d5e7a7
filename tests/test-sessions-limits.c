/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite: sessions that outlive their client (detached mode), one case a
 * rule of the contract in dbus/org.tracebus.Tracebus1.{Manager,Session}.xml.
 * This part: what other users may do, and the limits on sessions. The other
 * parts are tests/test-sessions-*.c; the SIGTERM case needs a service of its
 * own: tests/test-shutdown.c. The helpers are in tests/session-util.h.
 *
 * Users (tests/polkit-rules/50-tracebus-test.rules): tbuser may record,
 * tbadmin (group tbadmins) may record and manage (org.tracebus.manage),
 * tbother may not record; uid 0 is always authorized by polkit.
 *
 * Every case starts with no session left and must end with none (see
 * session_case_begin()/session_case_end()).
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

#include "session-util.h"

/* ===================================================================== */
/* 6. Other users                                                         */
/* ===================================================================== */

static bool list_has(const char *list, const char *path) {
        g_auto(GStrv) items = g_strsplit(list, " ", -1);
        return g_strv_contains((const char *const *) items, path);
}

static void test_other_user_denied(void) {
        g_autofree char *cfg = config_text(60000), *out = NULL, *path = NULL, *admin_path = NULL;
        g_autofree char *use = NULL, *name = NULL, *err = NULL, *node = NULL;
        g_autofree char *l_other = NULL, *l_user = NULL, *l_admin = NULL, *x_other = NULL, *x_user = NULL;
        int fd = open_output("other-denied.pftrace", &out);
        ClientSpec su = { .user = "tbuser", .op = OP_START, .config = cfg, .output_fd = fd, .detach_key = "other-6" };
        ClientSpec sa = { .user = "tbadmin", .op = OP_START, .config = cfg, .output_fd = -1 };
        ClientSpec other = { .user = "tbother", .op = OP_HOLD_NAME, .output_fd = -1 };
        const char *cmds[] = { "stop", "sstop", "detach stolen", "sdetach stolen", "get State", "get OwnerUid",
                               "getall" };
        const char kinds[] = { 'S', 'S', 'D', 'D', 'V', 'V', 'V' };
        const char *expected[] = { ERR_NO_SUCH_SESSION, ERR_UNKNOWN_OBJECT, ERR_NO_SUCH_SESSION, ERR_UNKNOWN_OBJECT,
                                   ERR_UNKNOWN_OBJECT, ERR_UNKNOWN_OBJECT, ERR_UNKNOWN_OBJECT };
        g_autoptr(GHashTable) st = NULL, st2 = NULL;
        Client c;

        path = start_and_leave(&su);
        close(fd);
        admin_path = start_and_leave(&sa);

        client_spawn(&other, &c);
        name = client_expect(&c, 'N', 10000, &err);
        g_assert_nonnull(name);
        use = g_strconcat("use ", path, NULL);
        g_free(must(&c, use, 'U'));
        /* Another user's session is no session of tbother's: the Manager answers
         * NoSuchSession, the session's own path is no object at all. */
        for (size_t i = 0; i < G_N_ELEMENTS(cmds); i++) {
                g_autofree char *e = must_fail(&c, cmds[i], kinds[i]);
                g_assert_cmpstr(e, ==, expected[i]);
        }
        /* tbother sees neither session, in ListSessions nor in the object tree. */
        l_other = must(&c, "list", 'L');
        x_other = must(&c, "introspect " TB_MANAGER_PATH "/session", 'I');
        client_finish(&c, 5000);
        note("tbother's ListSessions: \"%s\"\n", l_other);
        g_assert_false(list_has(l_other, path));
        g_assert_false(list_has(l_other, admin_path));
        node = g_strdup_printf("<node name=\"%s\"", session_id(path));
        g_assert_null(strstr(x_other, node));
        x_user = one_cmd("tbuser", "introspect " TB_MANAGER_PATH "/session", 'I', NULL);
        g_assert_nonnull(x_user);
        g_assert_nonnull(strstr(x_user, node));

        /* tbuser: own sessions only; tbadmin (manage): all. */
        l_user = one_cmd("tbuser", "list", 'L', NULL);
        l_admin = one_cmd("tbadmin", "list", 'L', NULL);
        note("tbuser's ListSessions: \"%s\"; tbadmin's: \"%s\"\n", l_user, l_admin);
        g_assert_true(list_has(l_user, path));
        g_assert_false(list_has(l_user, admin_path));
        g_assert_true(list_has(l_admin, path));
        g_assert_true(list_has(l_admin, admin_path));

        /* Unchanged by tbother. */
        assert_recording(path);
        g_assert_true(detached_property(path));
        g_assert_true(is_detached_as("tbuser", "other-6"));

        /* tbadmin may stop tbuser's session. */
        st = stop_as("tbadmin", path);
        g_assert_cmpstr(g_hash_table_lookup(st, "Reason"), ==, "stopped");
        wait_over(path, 10000);
        st2 = stop_as("tbadmin", admin_path);
        wait_over(admin_path, 10000);
        assert_trace_file_closed(out);
}

/* Attach and IsDetached are per UID even for tbadmin and root. */
static void test_attach_per_uid_admin_root(void) {
        g_autofree char *cfg = config_text(60000), *out = NULL, *path = NULL, *e_admin = NULL, *e_root = NULL;
        int fd = open_output("attach-root.pftrace", &out);
        ClientSpec spec = { .user = "tbuser", .op = OP_START, .config = cfg, .output_fd = fd, .detach_key = "root-6b" };
        g_autoptr(GHashTable) st = NULL;

        path = start_and_leave(&spec);
        close(fd);
        e_admin = cmd_error("tbadmin", "attach root-6b", 'O');
        e_root = cmd_error("root", "attach root-6b", 'O');
        g_assert_cmpstr(e_admin, ==, ERR_NO_SUCH_SESSION);
        g_assert_cmpstr(e_root, ==, ERR_NO_SUCH_SESSION);
        g_assert_false(is_detached_as("tbadmin", "root-6b"));
        g_assert_false(is_detached_as("root", "root-6b"));
        assert_recording(path);
        g_assert_true(detached_property(path));
        g_assert_true(is_detached_as("tbuser", "root-6b"));
        st = stop_as("tbuser", path);
        wait_over(path, 10000);
        assert_trace_file_closed(out);
}

/* ===================================================================== */
/* 7. Limits                                                              */
/* ===================================================================== */

static const char *const switch_only[] = { "sched/sched_switch", NULL };

/* A small trace-dir session of user (detached, keyless); its path. */
static char *start_small(const char *user) {
        ClientSpec spec = { .user = user, .op = OP_START, .events = switch_only, .duration_ms = 120000,
                            .buffer_size_kb = 256, .output_fd = -1 };
        return start_and_leave(&spec);
}

static char *start_small_error(const char *user, char **ret_full) {
        ClientSpec spec = { .user = user, .op = OP_START, .events = switch_only, .duration_ms = 120000,
                            .buffer_size_kb = 256, .output_fd = -1 };
        g_autofree char *out = NULL;
        char *e = client_run_full(&spec, &out, ret_full);

        if (!e)
                note("%s's Start unexpectedly made %s\n", user, out);
        return e;
}

static void test_limit_per_uid(void) {
        g_autoptr(GPtrArray) paths = g_ptr_array_new_with_free_func(g_free);
        g_auto(GStrv) inst = NULL, files = NULL;
        g_autofree char *e = NULL;

        for (int i = 0; i < 5; i++)
                g_ptr_array_add(paths, start_small("tbuser"));
        snapshot_state(&inst, &files);
        e = start_small_error("tbuser", NULL);
        g_assert_cmpstr(e, ==, ERR_TOO_MANY_SESSIONS);
        assert_nothing_created(inst, files);
        for (guint i = 0; i < paths->len; i++)
                assert_recording(paths->pdata[i]);
        for (guint i = 0; i < paths->len; i++) {
                g_autoptr(GHashTable) st = stop_as("tbuser", paths->pdata[i]);
                wait_over(paths->pdata[i], 10000);
        }
}

/* Whether polkit gives user org.tracebus.record (asked for a connection of user). */
static bool polkit_authorized(const char *user) {
        ClientSpec spec = { .user = user, .op = OP_HOLD_NAME, .output_fd = -1 };
        g_autofree char *name = NULL, *err = NULL;
        g_autoptr(GVariant) reply = NULL;
        g_autoptr(GError) error = NULL;
        GVariantBuilder subject;
        gboolean authorized = FALSE;
        Client c;

        client_spawn(&spec, &c);
        name = client_expect(&c, 'N', 10000, &err);
        g_assert_nonnull(name);
        g_variant_builder_init(&subject, G_VARIANT_TYPE("a{sv}"));
        g_variant_builder_add(&subject, "{sv}", "name", g_variant_new_string(name));
        reply = g_dbus_connection_call_sync(tb_bus()->conn, "org.freedesktop.PolicyKit1",
                                            "/org/freedesktop/PolicyKit1/Authority",
                                            "org.freedesktop.PolicyKit1.Authority", "CheckAuthorization",
                                            g_variant_new("((sa{sv})sa{ss}us)", "system-bus-name", &subject,
                                                          "org.tracebus.record", NULL, (guint32) 0, ""),
                                            G_VARIANT_TYPE("((bba{ss}))"), G_DBUS_CALL_FLAGS_NONE, 10000, NULL,
                                            &error);
        g_assert_no_error(error);
        g_variant_get(reply, "((bb@a{ss}))", &authorized, NULL, NULL);
        client_finish(&c, 5000);
        return authorized;
}

static void wait_polkit(const char *user, bool want) {
        gint64 deadline = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;

        while (polkit_authorized(user) != want) {
                if (g_get_monotonic_time() > deadline)
                        g_error("polkit did not pick up the test rule for %s (want %d)", user, want);
                g_usleep(50 * 1000);
        }
}

/* 16 sessions in all: tbuser, tbadmin and root 5 each, and one of a fourth
 * user, "nobody", whom a rule added for this case lets record (polkitd
 * reloads rules.d by itself). */
static void test_limit_total(void) {
        g_autoptr(GPtrArray) paths = g_ptr_array_new_with_free_func(g_free);
        const char *users[] = { "tbuser", "tbadmin", "root" };
        g_autofree char *rule = g_build_filename(tb_bus()->tmpdir, "rules.d", LIMIT_RULES_FILE, NULL);
        g_autofree char *e1 = NULL, *e2 = NULL, *e3 = NULL, *full = NULL;
        g_auto(GStrv) inst = NULL, files = NULL, all = NULL;
        g_autoptr(GError) error = NULL;

        g_assert_true(g_file_set_contents_full(
                rule,
                "// Added by tests/test-sessions-limits.c for the 16-session limit, removed after.\n"
                "polkit.addRule(function(action, subject) {\n"
                "    if (action.id == \"org.tracebus.record\" && subject.user == \"nobody\")\n"
                "        return polkit.Result.YES;\n"
                "});\n",
                -1, G_FILE_SET_CONTENTS_NONE, 0644, &error));
        g_assert_no_error(error);
        wait_polkit("nobody", true);

        for (size_t u = 0; u < G_N_ELEMENTS(users); u++)
                for (int i = 0; i < 5; i++)
                        g_ptr_array_add(paths, start_small(users[u]));
        g_ptr_array_add(paths, start_small("nobody"));
        all = all_sessions();
        g_assert_cmpuint(g_strv_length(all), ==, 16);

        snapshot_state(&inst, &files);
        e1 = start_small_error("nobody", &full); /* 1 of its 5, but the 17th */
        e2 = start_small_error("root", NULL);
        e3 = start_small_error("tbadmin", NULL);
        g_assert_cmpstr(e1, ==, ERR_TOO_MANY_SESSIONS);
        g_assert_cmpstr(e2, ==, ERR_TOO_MANY_SESSIONS);
        g_assert_cmpstr(e3, ==, ERR_TOO_MANY_SESSIONS);
        assert_nothing_created(inst, files);

        for (guint i = 0; i < paths->len; i++) {
                root_stop(paths->pdata[i]);
                wait_over(paths->pdata[i], 10000);
        }
        remove_limit_rule();
        wait_polkit("nobody", false);
}

/* duration_ms: at most 7 days. */
static void test_limit_duration(void) {
        g_autofree char *too_long = config_text(604800001), *max = config_text(604800000);
        g_autofree char *e1 = NULL, *e2 = NULL, *path = NULL, *dur = NULL;
        g_auto(GStrv) inst = NULL, files = NULL;
        ClientSpec by_config = { .user = "tbuser", .op = OP_START, .config = too_long, .output_fd = -1 };
        ClientSpec by_option = { .user = "tbuser", .op = OP_START, .events = switch_only, .duration_ms = 604800001,
                                 .output_fd = -1 };
        ClientSpec at_max = { .user = "tbuser", .op = OP_START, .config = max, .output_fd = -1 };
        g_autoptr(GHashTable) st = NULL;
        g_autoptr(GVariant) v = NULL;
        g_autoptr(GError) error = NULL;

        snapshot_state(&inst, &files);
        e1 = client_run(&by_config, NULL);
        e2 = client_run(&by_option, NULL);
        g_assert_cmpstr(e1, ==, ERR_INVALID_CONFIG);
        g_assert_cmpstr(e2, ==, ERR_INVALID_CONFIG);
        assert_nothing_created(inst, files);

        path = start_and_leave(&at_max);
        v = tb_get_property(tb_bus()->conn, path, TB_SESSION_IFACE, "DurationMs", &error);
        g_assert_no_error(error);
        g_assert_cmpuint(g_variant_get_uint32(v), ==, 604800000);
        st = stop_as("tbuser", path);
        wait_over(path, 10000);
}

SESSION_CASE(other_user_denied)
SESSION_CASE(attach_per_uid_admin_root)
SESSION_CASE(limit_per_uid)
SESSION_CASE(limit_total)
SESSION_CASE(limit_duration)

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();

        tb_test_add_isolated("/bus/sessions/06-other-user-denied", case_other_user_denied);
        tb_test_add_isolated("/bus/sessions/06-attach-per-uid-admin-root", case_attach_per_uid_admin_root);
        tb_test_add_isolated("/bus/sessions/07-limit-per-uid", case_limit_per_uid);
        tb_test_add_isolated("/bus/sessions/07-limit-total", case_limit_total);
        tb_test_add_isolated("/bus/sessions/07-limit-duration", case_limit_duration);
        tb_test_add_isolated("/bus/sessions/99-no-leftovers", session_test_no_leftovers);
        return tb_test_run(TB_START_SERVICE);
}
