/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite: The dbus/ XML files are the contract. The live service's Introspect data
 * must have every method, argument (name, type, direction), signal and
 * property (name, type, access) of it, identically, and nothing more on our
 * own interfaces (org.tracebus.*).
 */
#include <stdio.h>
#include <string.h>

#include "system-bus.h"

#define note(...) g_printerr("# " __VA_ARGS__)

typedef struct {
        GDBusNodeInfo *contract; /* unused */
        GPtrArray *nodes;        /* keep the parsed files alive */
} Contract;

static GDBusNodeInfo *parse_file(const char *path) {
        g_autofree char *xml = NULL;
        g_autoptr(GError) error = NULL;
        GDBusNodeInfo *n;

        if (!g_file_get_contents(path, &xml, NULL, &error))
                g_error("%s", error->message);
        n = g_dbus_node_info_new_for_xml(xml, &error);
        if (!n)
                g_error("%s does not parse: %s", path, error->message);
        return n;
}

static GPtrArray *contract_interfaces(GPtrArray **ret_nodes) {
        g_autofree char *dir = g_build_filename(tb_bus()->source_dir, "dbus", NULL);
        g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
        GPtrArray *ifaces = g_ptr_array_new();
        GPtrArray *nodes = g_ptr_array_new_with_free_func((GDestroyNotify) g_dbus_node_info_unref);
        const char *name;

        g_assert_nonnull(d);
        while ((name = g_dir_read_name(d))) {
                g_autofree char *p = NULL;
                GDBusNodeInfo *n;
                if (!g_str_has_suffix(name, ".xml"))
                        continue;
                p = g_build_filename(dir, name, NULL);
                n = parse_file(p);
                g_ptr_array_add(nodes, n);
                for (size_t i = 0; n->interfaces && n->interfaces[i]; i++)
                        g_ptr_array_add(ifaces, n->interfaces[i]);
        }
        g_assert_cmpuint(ifaces->len, >, 0);
        *ret_nodes = nodes;
        return ifaces;
}

static GDBusNodeInfo *introspect(const char *path) {
        g_autoptr(GVariant) reply = NULL;
        g_autoptr(GError) error = NULL;
        const char *xml;
        GDBusNodeInfo *n;

        reply = g_dbus_connection_call_sync(tb_bus()->conn, TB_BUS_NAME, path, "org.freedesktop.DBus.Introspectable",
                                            "Introspect", NULL, G_VARIANT_TYPE("(s)"), G_DBUS_CALL_FLAGS_NONE, 10000,
                                            NULL, &error);
        g_assert_no_error(error);
        g_variant_get(reply, "(&s)", &xml);
        n = g_dbus_node_info_new_for_xml(xml, &error);
        if (!n)
                g_error("live introspection of %s does not parse: %s\n%s", path, error->message, xml);
        return n;
}

static bool args_equal(const char *what, GDBusArgInfo **want, GDBusArgInfo **have) {
        size_t nw = 0, nh = 0;
        bool ok = true;

        while (want && want[nw])
                nw++;
        while (have && have[nh])
                nh++;
        if (nw != nh) {
                note("%s: %zu arguments in the contract, %zu live\n", what, nw, nh);
                return false;
        }
        for (size_t i = 0; i < nw; i++) {
                if (g_strcmp0(want[i]->name, have[i]->name) != 0 ||
                    g_strcmp0(want[i]->signature, have[i]->signature) != 0) {
                        note("%s: argument %zu is %s %s in the contract, %s %s live\n", what, i,
                             want[i]->signature, want[i]->name, have[i]->signature,
                             have[i]->name ? have[i]->name : "(unnamed)");
                        ok = false;
                }
        }
        return ok;
}

static const char *access_str(GDBusPropertyInfoFlags f) {
        if ((f & G_DBUS_PROPERTY_INFO_FLAGS_READABLE) && (f & G_DBUS_PROPERTY_INFO_FLAGS_WRITABLE))
                return "readwrite";
        if (f & G_DBUS_PROPERTY_INFO_FLAGS_WRITABLE)
                return "write";
        return "read";
}

/* Counts mismatches between the contract's interface and the live one. */
static guint compare_interface(GDBusInterfaceInfo *want, GDBusInterfaceInfo *have) {
        guint bad = 0;

        for (size_t i = 0; want->methods && want->methods[i]; i++) {
                GDBusMethodInfo *wm = want->methods[i];
                GDBusMethodInfo *hm = g_dbus_interface_info_lookup_method(have, wm->name);
                g_autofree char *in = g_strdup_printf("%s.%s (in)", want->name, wm->name);
                g_autofree char *out = g_strdup_printf("%s.%s (out)", want->name, wm->name);
                if (!hm) {
                        note("method %s.%s is missing live\n", want->name, wm->name);
                        bad++;
                        continue;
                }
                bad += !args_equal(in, wm->in_args, hm->in_args);
                bad += !args_equal(out, wm->out_args, hm->out_args);
        }
        for (size_t i = 0; want->signals && want->signals[i]; i++) {
                GDBusSignalInfo *ws = want->signals[i];
                GDBusSignalInfo *hs = g_dbus_interface_info_lookup_signal(have, ws->name);
                g_autofree char *what = g_strdup_printf("signal %s.%s", want->name, ws->name);
                if (!hs) {
                        note("%s is missing live\n", what);
                        bad++;
                        continue;
                }
                bad += !args_equal(what, ws->args, hs->args);
        }
        for (size_t i = 0; want->properties && want->properties[i]; i++) {
                GDBusPropertyInfo *wp = want->properties[i];
                GDBusPropertyInfo *hp = g_dbus_interface_info_lookup_property(have, wp->name);
                if (!hp) {
                        note("property %s.%s is missing live\n", want->name, wp->name);
                        bad++;
                        continue;
                }
                if (g_strcmp0(wp->signature, hp->signature) != 0 || wp->flags != hp->flags) {
                        note("property %s.%s is %s %s in the contract, %s %s live\n", want->name, wp->name,
                             wp->signature, access_str(wp->flags), hp->signature, access_str(hp->flags));
                        bad++;
                }
        }
        /* And nothing live that the contract does not have. */
        for (size_t i = 0; have->methods && have->methods[i]; i++)
                if (!g_dbus_interface_info_lookup_method(want, have->methods[i]->name)) {
                        note("live method %s.%s is not in the contract\n", have->name, have->methods[i]->name);
                        bad++;
                }
        for (size_t i = 0; have->signals && have->signals[i]; i++)
                if (!g_dbus_interface_info_lookup_signal(want, have->signals[i]->name)) {
                        note("live signal %s.%s is not in the contract\n", have->name, have->signals[i]->name);
                        bad++;
                }
        for (size_t i = 0; have->properties && have->properties[i]; i++)
                if (!g_dbus_interface_info_lookup_property(want, have->properties[i]->name)) {
                        note("live property %s.%s is not in the contract\n", have->name,
                             have->properties[i]->name);
                        bad++;
                }
        return bad;
}

/* Compares the contract's interfaces that live on this object. */
static void check_object(const char *path, const char *const *expected_ifaces) {
        g_autoptr(GPtrArray) nodes = NULL;
        g_autoptr(GPtrArray) want = contract_interfaces(&nodes);
        g_autoptr(GDBusNodeInfo) live = introspect(path);
        guint bad = 0;

        for (size_t i = 0; expected_ifaces[i]; i++) {
                GDBusInterfaceInfo *w = NULL, *h = g_dbus_node_info_lookup_interface(live, expected_ifaces[i]);
                for (guint j = 0; j < want->len; j++)
                        if (g_str_equal(((GDBusInterfaceInfo *) want->pdata[j])->name, expected_ifaces[i]))
                                w = want->pdata[j];
                g_assert_nonnull(w); /* the contract names it */
                if (!h) {
                        note("%s: interface %s is missing live\n", path, expected_ifaces[i]);
                        bad++;
                        continue;
                }
                bad += compare_interface(w, h);
        }
        /* Our interfaces on this object that the contract does not list here. */
        for (size_t i = 0; live->interfaces && live->interfaces[i]; i++) {
                const char *n = live->interfaces[i]->name;
                if (g_str_has_prefix(n, "org.tracebus.") && !g_strv_contains(expected_ifaces, n)) {
                        bool known = false;
                        for (guint j = 0; j < want->len; j++)
                                known |= g_str_equal(((GDBusInterfaceInfo *) want->pdata[j])->name, n);
                        if (!known) {
                                note("%s: live interface %s is not in the contract\n", path, n);
                                bad++;
                        }
                }
        }
        note("%s: %u mismatches\n", path, bad);
        g_assert_cmpuint(bad, ==, 0);
}

static void test_manager(void) {
        const char *const ifaces[] = { TB_MANAGER_IFACE, NULL };
        check_object(TB_MANAGER_PATH, ifaces);
}

/* A session of root's own: root's connection stays open, so it lives. */
static void test_session(void) {
        const char *const ifaces[] = { TB_SESSION_IFACE, NULL };
        const char *const events[] = { "sched/sched_switch", NULL };
        g_autoptr(GVariant) reply = NULL, stats = NULL;
        g_autoptr(GError) error = NULL;
        GVariantBuilder opts;
        const char *path;

        g_variant_builder_init(&opts, G_VARIANT_TYPE("a{sv}"));
        g_variant_builder_add(&opts, "{sv}", "Events", g_variant_new_strv(events, -1));
        g_variant_builder_add(&opts, "{sv}", "DurationMs", g_variant_new_uint32(60000));
        reply = g_dbus_connection_call_sync(tb_bus()->conn, TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_IFACE, "Start",
                                            g_variant_new("(sa{sv})", "", &opts), G_VARIANT_TYPE("(oas)"),
                                            G_DBUS_CALL_FLAGS_NONE, 30000, NULL, &error);
        g_assert_no_error(error);
        g_variant_get_child(reply, 0, "&o", &path);
        note("root's session: %s\n", path);
        check_object(path, ifaces);

        stats = g_dbus_connection_call_sync(tb_bus()->conn, TB_BUS_NAME, path, TB_SESSION_IFACE, "Stop", NULL,
                                            G_VARIANT_TYPE("(a{sv})"), G_DBUS_CALL_FLAGS_NONE, 30000, NULL, &error);
        g_assert_no_error(error);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();
        tb_test_add_isolated("/bus/introspection/manager", test_manager);
        tb_test_add_isolated("/bus/introspection/session", test_session);
        return tb_test_run(TB_START_SERVICE);
}
