/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite: what a user may learn that is not theirs. Kernel addresses: a trace of
 * tbuser (who may record, not manage) holds none, where tbadmin's trace of the same
 * events at the same time holds the kernel's own. Other users' state: the answers to
 * ListSessions, IsDetached, Attach, Detach and Stop, and whether polkit was asked for
 * them, are the same whether another user has a session and a key or not.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "session-util.h"
#include "trace.pb-c.h"

/* Top 16 bits all set: where x86-64 (and arm64) keep the kernel. */
static bool is_kernel_address(guint64 v) {
        return (v >> 48) == 0xffff;
}

typedef struct Addresses {
        GHashTable *print_ips;      /* ftrace/print's ip (the code that wrote the marker) */
        GHashTable *kmalloc;        /* kmem/kmalloc's call_site and ptr */
        guint n_kernel;             /* unsigned values anywhere in kernel space */
        guint n_prints, n_kmallocs;
} Addresses;

static void addresses_clear(Addresses *a) {
        g_clear_pointer(&a->print_ips, g_hash_table_unref);
        g_clear_pointer(&a->kmalloc, g_hash_table_unref);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Addresses, addresses_clear)

/* NULL is NULL in every trace: only the addresses count. */
static void note_value(GHashTable *set, guint64 v) {
        if (v != 0)
                g_hash_table_add(set, g_memdup2(&v, sizeof(v)));
}

static void collect_event(const Tracebus__FtraceEvent *e, Addresses *a) {
        const Tracebus__GenericFtraceEvent *g = e->generic;

        if (e->print) {
                a->n_prints++;
                note_value(a->print_ips, e->print->ip);
                a->n_kernel += is_kernel_address(e->print->ip);
        }
        if (!g)
                return;
        a->n_kmallocs += g_str_equal(g->event_name, "kmalloc");
        for (size_t i = 0; i < g->n_field; i++) {
                const Tracebus__GenericFtraceEvent__Field *f = g->field[i];

                if (!f->has_uint_value)
                        continue;
                a->n_kernel += is_kernel_address(f->uint_value);
                if (g_str_equal(g->event_name, "kmalloc") &&
                    (g_str_equal(f->name, "call_site") || g_str_equal(f->name, "ptr")))
                        note_value(a->kmalloc, f->uint_value);
        }
}

static void collect_packet(const Tracebus__TracePacket *p, const TraceRawPacket *raw, guint index, gpointer userdata) {
        if (!p->ftrace_events)
                return;
        for (size_t i = 0; i < p->ftrace_events->n_event; i++)
                collect_event(p->ftrace_events->event[i], userdata);
}

static void read_addresses(const char *path, Addresses *a) {
        g_autoptr(GError) error = NULL;
        g_autofree char *data = NULL;
        gsize len;

        a->print_ips = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
        a->kmalloc = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
        g_assert_true(g_file_get_contents(path, &data, &len, &error));
        g_assert_true(tb_trace_foreach_packet((const guint8 *) data, len, collect_packet, a, NULL, &error));
        g_assert_no_error(error);
        note("%s: %u prints (%u distinct ips), %u kmallocs, %u values in kernel space\n", path, a->n_prints,
             g_hash_table_size(a->print_ips), a->n_kmallocs, a->n_kernel);
}

/* Markers into the top-level trace_marker, which every session's instance copies. */
static void write_markers(guint n) {
        int fd = open("/sys/kernel/tracing/trace_marker", O_WRONLY | O_CLOEXEC);

        g_assert_cmpint(fd, >=, 0);
        for (guint i = 0; i < n; i++) {
                g_autofree char *line = g_strdup_printf("tb-disclosure %u\n", i);
                g_assert_cmpint(write(fd, line, strlen(line)), ==, (gssize) strlen(line));
                g_usleep(10 * 1000);
        }
        close(fd);
}

/* tbuser and tbadmin record ftrace/print and kmem/kmalloc at once: tbadmin, who may
 * manage, gets the kernel's addresses; tbuser the same number of distinct values, none
 * of them an address tbadmin saw, none in kernel space. */
static void test_kernel_pointers(void) {
        const char *const events[] = { "ftrace/print", "kmem/kmalloc", NULL };
        g_autofree char *out_user = NULL, *out_admin = NULL, *p_user = NULL, *p_admin = NULL;
        int fd_user = open_output("kptr-user.pftrace", &out_user), fd_admin = open_output("kptr-admin.pftrace", &out_admin);
        ClientSpec user = { .user = "tbuser", .op = OP_START, .events = events, .duration_ms = 60000,
                            .output_fd = fd_user, .hold = true };
        ClientSpec admin = { .user = "tbadmin", .op = OP_START, .events = events, .duration_ms = 60000,
                             .output_fd = fd_admin, .hold = true };
        g_auto(Addresses) a_user = { 0 }, a_admin = { 0 };
        Client cu, ca;

        p_user = start_held(&user, &cu);
        p_admin = start_held(&admin, &ca);
        close(fd_user);
        close(fd_admin);
        write_markers(20);
        g_usleep(500 * 1000);
        g_free(must(&cu, "stop", 'S'));
        g_free(must(&ca, "stop", 'S'));
        client_finish(&cu, 5000);
        client_finish(&ca, 5000);
        wait_over(p_user, 10000);
        wait_over(p_admin, 10000);

        read_addresses(out_admin, &a_admin);
        read_addresses(out_user, &a_user);
        g_assert_cmpuint(a_admin.n_prints, >=, 20);
        g_assert_cmpuint(a_user.n_prints, >=, 20);
        g_assert_cmpuint(a_admin.n_kmallocs, >, 0);
        g_assert_cmpuint(a_user.n_kmallocs, >, 0);
        /* tbadmin: the kernel's own addresses. */
        g_assert_cmpuint(a_admin.n_kernel, >, 0);
        {
                GHashTableIter it;
                gpointer k;

                g_hash_table_iter_init(&it, a_admin.print_ips);
                while (g_hash_table_iter_next(&it, &k, NULL))
                        g_assert_true(is_kernel_address(*(guint64 *) k));
        }
        /* tbuser: none of them, and nothing else in kernel space either... */
        g_assert_cmpuint(a_user.n_kernel, ==, 0);
        g_assert_false(tb_sets_meet(a_user.print_ips, a_admin.print_ips));
        g_assert_false(tb_sets_meet(a_user.kmalloc, a_admin.kmalloc));
        /* ...but one value per address still: the markers come from the same code. */
        g_assert_cmpuint(g_hash_table_size(a_user.print_ips), ==, g_hash_table_size(a_admin.print_ips));
}
SESSION_CASE(kernel_pointers)

/* How many times polkit refused org.tracebus.manage to @uid, so far: a check with a
 * possible dialog (Stop) logs a notice, one without (ListSessions, the kernel-address
 * check) a plainer line. */
static guint count_in(const char *log, const char *needle) {
        guint n = 0;

        for (const char *p = log; (p = strstr(p, needle)); p += strlen(needle))
                n++;
        return n;
}

static guint manage_refusals(uid_t uid) {
        g_autofree char *log = service_log();
        g_autofree char *refused = g_strdup_printf("polkit refused org.tracebus.manage to UID %u.", (unsigned) uid);
        g_autofree char *not_held = g_strdup_printf("polkit: UID %u does not hold org.tracebus.manage.", (unsigned) uid);

        return count_in(log, refused) + count_in(log, not_held);
}

typedef struct Answers {
        char *text;                 /* every reply, one a line, the paths taken out */
        guint polkit_asked;         /* refusals of org.tracebus.manage logged meanwhile */
} Answers;

static void answers_clear(Answers *a) {
        g_clear_pointer(&a->text, g_free);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Answers, answers_clear)

/* What tbother hears about key "k-other" and session @path (tbadmin's, or none). */
static void ask_as_tbother(const char *path, uid_t uid, Answers *ret) {
        static const struct { const char *cmd; char kind; } cmds[] = {
                { "list", 'L' }, { "isdetached k-other", 'B' }, { "attach k-other", 'O' },
                { "detach k-other", 'D' }, { "stop", 'S' }, { "list", 'L' },
        };
        ClientSpec spy = { .user = "tbother", .op = OP_HOLD_NAME, .output_fd = -1 };
        g_autoptr(GString) text = g_string_new(NULL);
        g_autofree char *name = NULL, *err = NULL, *use = g_strconcat("use ", path, NULL);
        guint before = manage_refusals(uid);
        Client o;

        client_spawn(&spy, &o);
        name = client_expect(&o, 'N', 10000, &err);
        g_assert_nonnull(name);
        g_free(must(&o, use, 'U'));
        for (size_t i = 0; i < G_N_ELEMENTS(cmds); i++) {
                g_autofree char *e = NULL, *out = client_cmd(&o, cmds[i].cmd, cmds[i].kind, &e);
                g_autofree char *shown = tb_str_replace(out ?: e, path, "PATH");

                g_string_append_printf(text, "%s -> %s\n", cmds[i].cmd, g_strstrip(shown));
        }
        client_finish(&o, 5000);
        ret->polkit_asked = manage_refusals(uid) - before;
        ret->text = g_string_free(g_steal_pointer(&text), FALSE);
        note("tbother, polkit asked %u times:\n%s", ret->polkit_asked, ret->text);
}

/* tbother asks about a key and a session path with nobody else tracing, then while
 * tbadmin records detached under that key at that path: the same replies, and polkit
 * asked the same number of times (ListSessions used to ask it only when someone else
 * had a session, which told anyone whether others were tracing). */
static void test_constant_shape(void) {
        g_auto(TbUser) other = { 0 };
        g_autoptr(GError) error = NULL;
        g_autofree char *missing = g_strdup(TB_MANAGER_PATH "/session/281474976710655");
        g_autofree char *path = NULL;
        ClientSpec det = { .user = "tbadmin", .op = OP_START, .events = sched_events, .duration_ms = 60000,
                           .detach_key = "k-other", .output_fd = -1 };
        g_auto(Answers) quiet = { 0 }, busy = { 0 };

        g_assert_true(tb_user_lookup("tbother", &other, &error));
        ask_as_tbother(missing, other.uid, &quiet);
        g_assert_null(client_run(&det, &path));
        g_assert_nonnull(path);
        g_assert_true(is_detached_as("tbadmin", "k-other"));
        ask_as_tbother(path, other.uid, &busy);
        root_stop(path);
        wait_over(path, 10000);

        g_assert_cmpstr(busy.text, ==, quiet.text);
        /* Every ListSessions asks polkit, someone else tracing or not; Stop of a session
         * that is not one's own too. */
        g_assert_cmpuint(quiet.polkit_asked, ==, busy.polkit_asked);
        g_assert_cmpuint(quiet.polkit_asked, ==, 3);
}
SESSION_CASE(constant_shape)

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();

        tb_test_add_isolated("/bus/hostile/06-kernel-pointers", case_kernel_pointers);
        tb_test_add_isolated("/bus/hostile/06-constant-shape", case_constant_shape);
        tb_test_add_isolated("/bus/hostile/99-no-leftovers", session_test_no_leftovers);
        return tb_test_run(TB_START_SERVICE);
}
