/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Raw calls on root's own GDBus connection (root-call.h), for the hostile
 * input suites: root is authorized by polkit, so a refusal is the service's
 * validation, not polkit's.
 */
#include "root-call.h"

#include <string.h>

/* Calls method on root's connection; the D-Bus error name, or NULL on success
 * (then the reply in ret_reply, when given). */
char *call_full(const char *path, const char *iface, const char *method, GVariant *params,
                       GUnixFDList *fds, GVariant **ret_reply, char **ret_message) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GVariant) reply = NULL;

        reply = g_dbus_connection_call_with_unix_fd_list_sync(tb_bus()->conn, TB_BUS_NAME, path, iface, method,
                                                               params, NULL, G_DBUS_CALL_FLAGS_NONE, 30000, fds,
                                                               NULL, NULL, &error);
        if (!reply) {
                char *name = g_dbus_error_get_remote_error(error);
                if (ret_message)
                        *ret_message = g_strdup(error->message);
                return name ? name : g_strdup(error->message);
        }
        if (ret_reply)
                *ret_reply = g_steal_pointer(&reply);
        return NULL;
}

char *manager_call(const char *method, GVariant *params, GUnixFDList *fds) {
        g_autoptr(GVariant) reply = NULL;
        char *err = call_full(TB_MANAGER_PATH, TB_MANAGER_IFACE, method, params, fds, &reply, NULL);

        /* A Start that should have failed but did not: stop it, and fail below. */
        if (!err && g_str_equal(method, "Start") && g_variant_is_of_type(reply, G_VARIANT_TYPE("(oas)"))) {
                const char *path;
                g_variant_get_child(reply, 0, "&o", &path);
                note("Start unexpectedly returned %s; stopping it\n", path);
                g_free(call_full(TB_MANAGER_PATH, TB_MANAGER_IFACE, "Stop", g_variant_new("(o)", path), NULL, NULL,
                                 NULL));
        }
        return err;
}

GVariant *options_with(const char *key, GVariant *value) {
        GVariantBuilder b;

        g_variant_builder_init(&b, G_VARIANT_TYPE("a{sv}"));
        if (key)
                g_variant_builder_add(&b, "{sv}", key, value);
        return g_variant_builder_end(&b);
}

GVariant *events_option(const char *const *events) {
        return g_variant_new_strv(events, -1);
}

/* Start("", {Events: sched_switch, DurationMs: 1000, key: value}) with fds. */
char *start_events_with(const char *key, GVariant *value, GUnixFDList *fds) {
        GVariantBuilder b;

        g_variant_builder_init(&b, G_VARIANT_TYPE("a{sv}"));
        g_variant_builder_add(&b, "{sv}", "Events", events_option(sched_events));
        g_variant_builder_add(&b, "{sv}", "DurationMs", g_variant_new_uint32(1000));
        if (key)
                g_variant_builder_add(&b, "{sv}", key, value);
        return manager_call("Start", g_variant_new("(s@a{sv})", "", g_variant_builder_end(&b)), fds);
}

char *start_text(const char *config) {
        return manager_call("Start", g_variant_new("(s@a{sv})", config, options_with(NULL, NULL)), NULL);
}

guint n_sessions_root(void) {
        g_autoptr(GVariant) reply = NULL;
        g_autofree char *err = call_full(TB_MANAGER_PATH, TB_MANAGER_IFACE, "ListSessions", NULL, NULL, &reply, NULL);
        g_autoptr(GVariant) list = NULL;

        g_assert_null(err);
        list = g_variant_get_child_value(reply, 0);
        return (guint) g_variant_n_children(list);
}

/* The service runs, holds its name, has no session, and nothing new exists. */
void assert_unchanged(char **inst, char **files) {
        g_autoptr(GError) error = NULL;

        assert_nothing_created(inst, files);
        g_assert_true(tb_pid_alive(tb_bus()->service_pid));
        g_assert_true(tb_wait_for_name(tb_bus()->conn, TB_BUS_NAME, 0, 1000, &error));
        g_assert_no_error(error);
        g_assert_cmpuint(n_sessions_root(), ==, 0);
}

void expect_err(const char *what, char *err, const char *want) {
        g_autofree char *e = err;

        note("%s -> %s\n", what, e ? e : "(success)");
        g_assert_cmpstr(e, ==, want);
}

GUnixFDList *fd_list_of(int fd) {
        g_autoptr(GError) error = NULL;
        GUnixFDList *l = g_unix_fd_list_new();

        g_assert_cmpint(g_unix_fd_list_append(l, fd, &error), ==, 0);
        g_assert_no_error(error);
        return l;
}

char *start_with_fd(int fd) {
        g_autoptr(GUnixFDList) l = fd_list_of(fd);
        return start_events_with("Output", g_variant_new_handle(0), l);
}

GDBusConnection *root_connection_new(void) {
        g_autoptr(GError) error = NULL;
        GDBusConnection *conn = g_dbus_connection_new_for_address_sync(
                        tb_bus()->address,
                        G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT | G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION,
                        NULL, NULL, &error);

        g_assert_no_error(error);
        return conn;
}

/* Last: the service still runs, with no session and no tracefs instance left. */
void root_test_no_leftovers(void) {
        g_auto(GStrv) inst = own_instances();

        g_assert_true(tb_pid_alive(tb_bus()->service_pid));
        g_assert_cmpuint(g_strv_length(inst), ==, 0);
        g_assert_cmpuint(n_sessions_root(), ==, 0);
}
