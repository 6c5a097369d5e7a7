/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite: every method costs the service the same, whatever its arguments carry,
 * until polkit has allowed the caller. The cases are generated from the introspection
 * XML (the .xml files of dbus/) when the test runs, so a method added there is covered
 * at once, and one that reads its arguments without caps fails here.
 *
 * For each method, and for each of its arguments whose size a caller chooses, the
 * largest request the test bus passes (TB_TEST_BUS_MAX_MESSAGE_BYTES) is built with
 * that argument at its worst: a huge string, an object path of 64 KiB (the most sd-bus
 * sends or reads), an array of as many tiny elements as fit (each element is work for
 * a reader that goes through them), a{sv} with as many entries; the others minimal, an
 * fd where the type is 'h'. A method without arguments gets a huge one anyway, which
 * the bus library must refuse. A writable property gets the same through
 * Properties.Set. Session methods are aimed at a session of tbuser's.
 *
 * tbother, whom polkit refuses recording, then tbuser, who may record, send that
 * request again and again, while root's IsDetached is timed: its median stays within
 * MAX_RATIO of the quiet median measured just before, and each hostile call is answered
 * (an error, or a reply where the method takes it), the same answer every time.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "hostile-flood.h"
#include "session-util.h"
#include "tb-client.h"
#include "test-util.h"

#define MAX_RATIO 3.0
#define PROBES 31u
/* A 4 MiB string costs dbus-daemon and the service's bus library some milliseconds each
 * to check; the gap keeps that a small share of the time, so what shows is the service's
 * own work. */
#define HOSTILE_GAP_US 80000u
/* Tries of each flood (hostile_load_check_ratio()). */
#define ATTEMPTS 3u
/* A first answer takes well under a second; one that takes longer than this is none. */
#define FIRST_ANSWER_MS 15000u
/* Room for the header and the minimal arguments beside the big one. */
#define BIG_BYTES (TB_TEST_BUS_MAX_MESSAGE_BYTES - 64u * 1024u)
/* sd-bus sends and reads no longer object path (its BUS_PATH_SIZE_MAX), even in a body. */
#define BIG_PATH_BYTES (64u * 1024u)
#define NO_BIG_ARG (-1)

/* One generated request: @member of @interface on @path, its in-arguments' signatures,
 * the one that is big (NO_BIG_ARG: a method without arguments, sent one huge string). */
typedef struct CostCase {
        char *interface;
        char *path;
        char *member;
        char **args;
        int big;
        /* Properties.Set of a writable property: its interface, name and type; the
         * value is the big argument. */
        char *set_interface, *set_property, *set_signature;
        char *name;            /* for the log: Interface.Member(arg) */
} CostCase;

static void cost_case_free(CostCase *c) {
        g_free(c->interface);
        g_free(c->path);
        g_free(c->member);
        g_strfreev(c->args);
        g_free(c->set_interface);
        g_free(c->set_property);
        g_free(c->set_signature);
        g_free(c->name);
        g_free(c);
}

/* Whether the builder below can make the worst case of a single complete type; a
 * method with another type fails the test until the builder learns it. */
static bool type_supported(const char *sig) {
        static const char fixed[] = "ybnqiuxtdh";

        if (strlen(sig) == 1)
                return strchr(fixed, sig[0]) || strchr("sog", sig[0]);
        if (sig[0] == 'a' && strlen(sig) == 2)
                return strchr("yuixtbnqd", sig[1]) || strchr("so", sig[1]);
        return g_str_equal(sig, "a{sv}");
}

/* Whether a big value of @sig grows with what the caller sends. */
static bool type_variable(const char *sig) {
        return sig[0] == 'a' || sig[0] == 's' || sig[0] == 'o';
}

/* ---- building the request, in the flooding child ---- */

/* A huge string ('s'), or object path ('o': "/a/a/...", as many components as fit). */
static int append_big_string(sd_bus_message *m, char type) {
        size_t n = type == 'o' ? BIG_PATH_BYTES : BIG_BYTES - 1;
        g_autofree char *s = g_malloc(n + 1);

        /* A path of even length ends with "a", never with "/". */
        for (size_t i = 0; i < n; i++)
                s[i] = type == 'o' && i % 2 == 0 ? '/' : 'a';
        s[n] = '\0';
        return sd_bus_message_append_basic(m, type, s);
}

/* As many of the tiniest elements of @sig (an array type) as fit. */
static int append_big_array(sd_bus_message *m, const char *sig) {
        int r;

        if (strchr("yuixtbnqd", sig[1])) {
                g_autofree void *zeros = g_malloc0(BIG_BYTES);
                /* A boolean must be 0 or 1; zeros are both fine and the tiniest. */
                return sd_bus_message_append_array(m, sig[1], zeros, sig[1] == 'y' ? BIG_BYTES : BIG_BYTES / 8 * 8);
        }
        r = sd_bus_message_open_container(m, 'a', sig + 1);
        if (g_str_equal(sig, "a{sv}"))
                /* An entry: key "a", value a byte in a variant, 8-aligned: 16 bytes. */
                for (size_t i = 0; r >= 0 && i < BIG_BYTES / 16; i++)
                        r = sd_bus_message_append(m, "{sv}", "a", "y", 0);
        else
                /* "a" or "/": length, byte, NUL and padding, 8 bytes. */
                for (size_t i = 0; r >= 0 && i < BIG_BYTES / 8; i++)
                        r = sd_bus_message_append_basic(m, sig[1], sig[1] == 'o' ? "/" : "a");
        if (r < 0)
                return r;
        return sd_bus_message_close_container(m);
}

/* The smallest value of @sig: "a" for a string (an empty one is refused before anything
 * else is read), "/" for a path, an empty array, zero, /dev/null for an fd. */
static int append_small(sd_bus_message *m, const char *sig) {
        if (sig[0] == 'a') {
                int r = sd_bus_message_open_container(m, 'a', sig + 1);

                return r < 0 ? r : sd_bus_message_close_container(m);
        }
        if (sig[0] == 's' || sig[0] == 'o' || sig[0] == 'g')
                return sd_bus_message_append_basic(m, sig[0], sig[0] == 'o' ? "/" : sig[0] == 'g' ? "y" : "a");
        if (sig[0] == 'h') {
                int fd = open("/dev/null", O_RDWR | O_CLOEXEC), r;

                r = sd_bus_message_append_basic(m, 'h', &fd);
                close(fd);
                return r;
        }
        uint64_t zero = 0;
        return sd_bus_message_append_basic(m, sig[0], &zero);
}

/* The request of @c, built once in the flooding child (HostileCall.build). */
static int build_case(sd_bus *bus, const void *data, sd_bus_message **ret) {
        const CostCase *c = data;
        sd_bus_message *m = NULL;
        int r;

        r = sd_bus_message_new_method_call(bus, &m, TB_BUS_NAME, c->path, c->interface, c->member);
        if (r >= 0 && c->set_property) {
                r = sd_bus_message_append(m, "ss", c->set_interface, c->set_property);
                if (r >= 0)
                        r = sd_bus_message_open_container(m, 'v', c->set_signature);
        }
        for (int i = 0; r >= 0 && c->args[i]; i++) {
                const char *sig = c->args[i];

                if (i != c->big)
                        r = append_small(m, sig);
                else if (sig[0] == 'a')
                        r = append_big_array(m, sig);
                else
                        r = append_big_string(m, sig[0]);
        }
        if (r >= 0 && c->big == NO_BIG_ARG)
                r = append_big_string(m, 's');
        if (r >= 0 && c->set_property)
                r = sd_bus_message_close_container(m);
        *ret = m;
        return r;
}

/* ---- generating the cases from the XML ---- */

/* Where the objects of @interface live: a new interface needs a line here, or the test
 * fails rather than leave its methods out. */
static const char *path_of(const char *interface, const char *session) {
        if (g_str_equal(interface, TB_MANAGER_INTERFACE))
                return TB_MANAGER_PATH;
        if (g_str_equal(interface, TB_SESSION_INTERFACE))
                return session;
        g_error("dbus/ declares interface %s, whose object this test does not know: add it to path_of()",
                interface);
}

static void add_case(GPtrArray *cases, const char *interface, const char *path, const char *member, GStrv args,
                     int big) {
        CostCase *c = g_new0(CostCase, 1);

        c->interface = g_strdup(interface);
        c->path = g_strdup(path);
        c->member = g_strdup(member);
        c->args = g_strdupv(args);
        c->big = big;
        if (big == NO_BIG_ARG)
                c->name = g_strdup_printf("%s.%s() with a huge extra argument", interface, member);
        else if (big >= (int) g_strv_length(args))
                c->name = g_strdup_printf("%s.%s(fixed-size arguments)", interface, member);
        else
                c->name = g_strdup_printf("%s.%s(%s #%d big)", interface, member, args[big], big);
        g_ptr_array_add(cases, c);
}

/* A case for each argument of @method whose size the caller chooses, big in turn; one
 * with the fixed-size arguments alone when it has none, a huge extra one when none at all. */
static void add_method_cases(GPtrArray *cases, const char *interface, const char *path, GDBusMethodInfo *method) {
        g_autoptr(GStrvBuilder) b = g_strv_builder_new();
        g_auto(GStrv) args = NULL;
        bool any_variable = false;
        guint n = 0;

        for (GDBusArgInfo **a = method->in_args; a && *a; a++, n++) {
                if (!type_supported((*a)->signature))
                        g_error("%s.%s: argument %s of type %s: teach type_supported() and the builder its worst "
                                "case", interface, method->name, (*a)->name, (*a)->signature);
                g_strv_builder_add(b, (*a)->signature);
        }
        args = g_strv_builder_end(b);
        for (guint i = 0; i < n; i++)
                if (type_variable(args[i])) {
                        add_case(cases, interface, path, method->name, args, (int) i);
                        any_variable = true;
                }
        if (n == 0)
                add_case(cases, interface, path, method->name, args, NO_BIG_ARG);
        else if (!any_variable)
                add_case(cases, interface, path, method->name, args, (int) n);
}

/* Properties.Set(interface, name, value) of a writable property, its value big. */
static void add_setter_case(GPtrArray *cases, const char *interface, const char *path, GDBusPropertyInfo *p) {
        char *args[] = { p->signature, NULL };
        CostCase *c;

        if (!type_supported(p->signature))
                g_error("%s.%s of type %s: teach type_supported() and the builder its worst case", interface,
                        p->name, p->signature);
        add_case(cases, "org.freedesktop.DBus.Properties", path, "Set", args, type_variable(p->signature) ? 0 : 1);
        c = cases->pdata[cases->len - 1];
        c->set_interface = g_strdup(interface);
        c->set_property = g_strdup(p->name);
        c->set_signature = g_strdup(p->signature);
        g_free(c->name);
        c->name = g_strdup_printf("Properties.Set(%s.%s, big %s)", interface, p->name, p->signature);
}

static void add_interface_cases(GPtrArray *cases, GDBusInterfaceInfo *iface, const char *session) {
        const char *path = path_of(iface->name, session);

        for (GDBusMethodInfo **m = iface->methods; m && *m; m++)
                add_method_cases(cases, iface->name, path, *m);
        for (GDBusPropertyInfo **p = iface->properties; p && *p; p++)
                if ((*p)->flags & G_DBUS_PROPERTY_INFO_FLAGS_WRITABLE)
                        add_setter_case(cases, iface->name, path, *p);
}

/* Every case of every interface in the .xml files of dbus/. */
static GPtrArray *cases_from_xml(const char *session) {
        g_autofree char *dir = g_build_filename(tb_bus()->source_dir, "dbus", NULL);
        GPtrArray *cases = g_ptr_array_new_with_free_func((GDestroyNotify) cost_case_free);
        g_autoptr(GError) error = NULL;
        g_autoptr(GDir) d = g_dir_open(dir, 0, &error);
        const char *name;
        guint interfaces = 0;

        g_assert_no_error(error);
        while ((name = g_dir_read_name(d))) {
                g_autofree char *file = g_build_filename(dir, name, NULL), *xml = NULL;
                g_autoptr(GDBusNodeInfo) node = NULL;

                if (!g_str_has_suffix(name, ".xml"))
                        continue;
                g_assert_true(g_file_get_contents(file, &xml, NULL, &error));
                node = g_dbus_node_info_new_for_xml(xml, &error);
                g_assert_no_error(error);
                for (GDBusInterfaceInfo **i = node->interfaces; i && *i; i++, interfaces++)
                        add_interface_cases(cases, *i, session);
        }
        g_assert_cmpuint(interfaces, >=, 2);
        return cases;
}

/* ---- running them ---- */

/* What a flood's first answer must not be: the bus or the service failed to answer. */
static bool answered(const char *first) {
        static const char *const failures[] = {
                "org.freedesktop.DBus.Error.NoReply", "org.freedesktop.DBus.Error.Timeout",
                "org.freedesktop.DBus.Error.TimedOut", "org.freedesktop.DBus.Error.Disconnected",
                "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner",
                "org.freedesktop.DBus.Error.LimitsExceeded", "org.freedesktop.DBus.Error.NoMemory",
        };

        if (!first)
                return false;
        for (size_t i = 0; i < G_N_ELEMENTS(failures); i++)
                if (g_str_has_prefix(first, failures[i]))
                        return false;
        return true;
}

/* One flood's verdict: NULL, or what went wrong. */
static char *flood_verdict(HostileFlood *flood, const char *user) {
        g_autofree char *first = g_strdup(flood->first);
        unsigned calls = 0, wrong = 0;

        if (!hostile_flood_finish(flood, tb_scaled_ms(120000), &calls, &wrong))
                return g_strdup_printf("%s's flood did not finish", user);
        note("  %s: %u calls, first answer %.200s\n", user, calls, first ?: "(none)");
        if (!answered(first))
                return g_strdup_printf("%s got no answer: %.200s", user, first ?: "(none in time)");
        if (calls < 2 || wrong > 0)
                return g_strdup_printf("%s: %u calls, %u answered unlike the first", user, calls, wrong);
        return NULL;
}

/* One flood of a case by a user, as a HostileLoad. */
typedef struct CaseFlood {
        const CostCase *c;
        const char *user;
        HostileFlood flood;
} CaseFlood;

static char *case_flood_start(void *data) {
        CaseFlood *f = data;
        const HostileCall call = { build_case, f->c };

        f->flood = (HostileFlood) {};
        hostile_flood_start(&f->flood, f->user, &call, HOSTILE_GAP_US, tb_scaled_ms(FIRST_ANSWER_MS));
        if (f->flood.first)
                return NULL;
        /* The service is still at it: timing others would only wait for it. */
        client_kill(&f->flood.client);
        return g_strdup_printf("%s got no answer within %u ms", f->user, tb_scaled_ms(FIRST_ANSWER_MS));
}

static char *case_flood_finish(void *data) {
        CaseFlood *f = data;

        return flood_verdict(&f->flood, f->user);
}

/* @user floods the case's request while root's IsDetached is timed, right after its
 * quiet median: NULL, or what went wrong. */
static char *flood_as(const CostCase *c, const char *user) {
        CaseFlood f = { .c = c, .user = user };
        const HostileLoad load = { case_flood_start, case_flood_finish, &f };

        return hostile_load_check_ratio(&load, user, MAX_RATIO, PROBES, ATTEMPTS);
}

/* The case flooded by a user polkit refuses, then by one it allows to record: NULL, or
 * why it failed. */
static char *run_case(const CostCase *c) {
        g_autofree char *refused = NULL, *owner = NULL;

        note("%s\n", c->name);
        refused = flood_as(c, "tbother");
        owner = flood_as(c, "tbuser");
        if (refused && owner)
                return g_strjoin("; ", refused, owner, NULL);
        return g_strdup(refused ?: owner);
}

static void test_every_method(void) {
        g_autofree char *config = config_text(600000), *session = NULL;
        g_autoptr(GPtrArray) cases = NULL, failures = g_ptr_array_new_with_free_func(g_free);
        ClientSpec spec = { .user = "tbuser", .op = OP_START, .config = config, .output_fd = -1, .hold = true };
        gint64 begin = g_get_monotonic_time();
        Client holder;

        session = start_held(&spec, &holder);
        cases = cases_from_xml(session);
        note("%u cases from the XML of dbus/; tbuser's session %s\n", cases->len, session);
        for (guint i = 0; i < cases->len; i++) {
                const CostCase *c = cases->pdata[i];
                g_autofree char *why = run_case(c);

                if (!why)
                        continue;
                note("FAILED %s: %s\n", c->name, why);
                g_ptr_array_add(failures, g_strdup_printf("%s: %s", c->name, why));
                /* A service that did not answer may be busy for minutes: the cases after
                 * it would only wait. */
                if (strstr(why, "got no answer"))
                        break;
        }
        note("%u cases in %.1f s, %u failed\n", cases->len, (double) (g_get_monotonic_time() - begin) / 1e6,
             failures->len);
        g_assert_cmpuint(failures->len, ==, 0);
        /* The session went through it all. */
        assert_recording(session);
        g_free(must(&holder, "stop", 'S'));
        client_finish(&holder, 10000);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();

        tb_test_add_isolated("/bus/method-cost/every-method", test_every_method);
        return tb_test_run(TB_START_SERVICE);
}
