/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite: privilege parity for linux.ftrace. A caller without org.tracebus.manage
 * (tbuser) receives at most what it could read on this machine itself; tbadmin, who holds
 * the right, records the same events at the same time and gets what the kernel wrote.
 *
 *   named-events  an event tbuser may not record, named in its config (printk/console,
 *                 a kvm event, a uprobe root defined in the sched group, tcp_probe),
 *                 refuses its Start with EventNotAllowed naming it; chosen by a glob it
 *                 is left out with a warning that names it; tbadmin records them.
 *   storm-*       every event this kernel offers, in two batches (the syscall events, then
 *                 every other group), recorded by both while the test does what any user
 *                 can (file I/O and fsync, fork and exec, anonymous memory, a TCP
 *                 connection, a signal) and root writes a line to /dev/kmsg: tbuser's
 *                 trace holds no kernel address (no number in the kernel's half of the
 *                 address space or in /proc/kallsyms' range, typed or generic, scalar or
 *                 in an array), none of the page frame numbers tbadmin's holds, and not
 *                 the kmsg line; tbadmin's holds all three, so the checks can fail.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "recorder.h"
#include "session-util.h"

/* The kernel's events by group ("group" -> number of events), from available_events. */
static GHashTable *kernel_groups(void) {
        g_autofree char *text = NULL;
        g_auto(GStrv) lines = NULL;
        GHashTable *groups = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);

        g_assert_true(g_file_get_contents(TRACEFS "/available_events", &text, NULL, NULL));
        lines = g_strsplit(text, "\n", -1);
        for (char **l = lines; *l; l++) {
                char *colon = strchr(*l, ':');

                if (!colon)
                        continue;
                *colon = '\0';
                g_hash_table_insert(groups, g_strdup(*l),
                                    GUINT_TO_POINTER(GPOINTER_TO_UINT(g_hash_table_lookup(groups, *l)) + 1));
        }
        return groups;
}

/* The first event of @group, "group/name", or NULL when the kernel has none. */
static char *first_event_of(const char *group) {
        g_autofree char *text = NULL, *prefix = g_strconcat(group, ":", NULL);
        g_auto(GStrv) lines = NULL;

        g_assert_true(g_file_get_contents(TRACEFS "/available_events", &text, NULL, NULL));
        lines = g_strsplit(text, "\n", -1);
        for (char **l = lines; *l; l++)
                if (g_str_has_prefix(*l, prefix))
                        return g_strdup_printf("%s/%s", group, *l + strlen(prefix));
        return NULL;
}

static bool kernel_has(const char *event) {
        g_autofree char *path = g_build_filename(TRACEFS, "events", event, "format", NULL);

        return g_file_test(path, G_FILE_TEST_IS_REGULAR);
}

/* ---- what a trace holds ---- */

typedef struct Scan {
        guint64 ksym_min, ksym_max;  /* the text symbols of /proc/kallsyms */
        guint n_events, n_values;
        guint n_kernel;              /* values that are kernel addresses */
        GString *examples;           /* the first of them: event.field=value */
        const char *const *collect;  /* the fields whose values are kept */
        GHashTable *collected;       /* their values */
        guint n_console;             /* printk/console events */
        bool kmsg_seen;              /* the line written to /dev/kmsg, anywhere in the file */
} Scan;

static void scan_clear(Scan *s) {
        if (s->examples)
                g_string_free(s->examples, TRUE);
        g_clear_pointer(&s->collected, g_hash_table_unref);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Scan, scan_clear)

static void kallsyms_range(guint64 *ret_min, guint64 *ret_max) {
        g_autofree char *text = NULL;
        g_auto(GStrv) lines = NULL;
        guint64 lo = G_MAXUINT64, hi = 0;

        g_assert_true(g_file_get_contents("/proc/kallsyms", &text, NULL, NULL));
        lines = g_strsplit(text, "\n", -1);
        for (char **l = lines; *l; l++) {
                guint64 a = g_ascii_strtoull(*l, NULL, 16);
                char type = strlen(*l) > 17 ? (*l)[17] : 0;

                if (a == 0 || (type != 'T' && type != 't'))
                        continue;
                lo = MIN(lo, a);
                hi = MAX(hi, a);
        }
        /* Root reads the addresses themselves (kptr_restrict below 2). */
        g_assert_cmpuint(hi, >, lo);
        *ret_min = lo;
        *ret_max = hi;
}

/* A kernel address: within the kernel's text, or anywhere in the kernel's half of the
 * address space (the direct map, vmalloc, vmemmap), as an unsigned or a signed number.
 * Not: -1 to -65536 as unsigned numbers, the sentinels and errnos some fields hold. */
static bool is_kernel_value(const Scan *s, guint64 v, bool is_signed) {
        gint64 i = (gint64) v;

        if (v >= s->ksym_min && v <= s->ksym_max)
                return true;
        if (is_signed)
                return i < -(G_GINT64_CONSTANT(1) << 32) && i >= -(G_GINT64_CONSTANT(1) << 47);
        return v >= G_GUINT64_CONSTANT(0xffff800000000000) && v < G_GUINT64_CONSTANT(0xffffffffffff0000);
}

static void scan_value(Scan *s, const char *event, const char *field, guint64 v, bool is_signed) {
        s->n_values++;
        if (!is_kernel_value(s, v, is_signed))
                return;
        if (s->n_kernel++ < 12)
                g_string_append_printf(s->examples, " %s.%s=%#" G_GINT64_MODIFIER "x", event, field, v);
}

/* An array written as hex bytes in memory order: each 8-byte word a number. */
static void scan_hex_words(Scan *s, const char *event, const char *field, const char *hex) {
        size_t n = strlen(hex);

        if (n < 16 || n % 16 != 0 || strspn(hex, "0123456789abcdef") != n)
                return;
        for (size_t i = 0; i < n; i += 16) {
                guint8 bytes[8];
                guint64 w;

                for (size_t k = 0; k < 8; k++) {
                        char digits[3] = { hex[i + 2 * k], hex[i + 2 * k + 1], 0 };

                        bytes[k] = (guint8) strtoul(digits, NULL, 16);
                }
                memcpy(&w, bytes, sizeof(w));
                scan_value(s, event, field, w, false);
        }
}

static void scan_generic(Scan *s, const Tracebus__GenericFtraceEvent *g) {
        const char *event = g->event_name ?: "?";

        s->n_console += g_strcmp0(event, "console") == 0;
        for (size_t i = 0; i < g->n_field; i++) {
                const Tracebus__GenericFtraceEvent__Field *f = g->field[i];
                const char *name = f->name ?: "?";

                if (f->has_uint_value)
                        scan_value(s, event, name, f->uint_value, false);
                if (f->has_int_value)
                        scan_value(s, event, name, (guint64) f->int_value, true);
                if (f->str_value)
                        scan_hex_words(s, event, name, f->str_value);
                /* NULL stays NULL for everyone. */
                if (f->has_uint_value && f->uint_value != 0 && g_strv_contains(s->collect, name))
                        g_hash_table_add(s->collected, g_memdup2(&f->uint_value, sizeof(guint64)));
        }
}

static bool field_present(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f) {
        const char *q = (const char *) m + f->quantifier_offset;

        if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
                return *(const uint32_t *) q == f->id;
        if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->type != PROTOBUF_C_TYPE_MESSAGE &&
            f->type != PROTOBUF_C_TYPE_STRING)
                return *(const protobuf_c_boolean *) q;
        return f->label != PROTOBUF_C_LABEL_REPEATED;
}

/* Every number of a typed event's message (and of the messages in it), by its descriptor. */
static void scan_message(Scan *s, const char *event, const ProtobufCMessage *m) {
        const ProtobufCMessageDescriptor *d = m->descriptor;

        for (unsigned i = 0; i < d->n_fields; i++) {
                const ProtobufCFieldDescriptor *f = &d->fields[i];
                const char *at = (const char *) m + f->offset;

                if (!field_present(m, f))
                        continue;
                switch (f->type) {
                case PROTOBUF_C_TYPE_MESSAGE:
                        if (*(ProtobufCMessage *const *) at)
                                scan_message(s, event, *(ProtobufCMessage *const *) at);
                        break;
                case PROTOBUF_C_TYPE_INT64:
                case PROTOBUF_C_TYPE_SINT64:
                case PROTOBUF_C_TYPE_SFIXED64:
                        scan_value(s, event, f->name, (guint64) *(const int64_t *) at, true);
                        break;
                case PROTOBUF_C_TYPE_UINT64:
                case PROTOBUF_C_TYPE_FIXED64:
                        scan_value(s, event, f->name, *(const uint64_t *) at, false);
                        break;
                case PROTOBUF_C_TYPE_INT32:
                case PROTOBUF_C_TYPE_SINT32:
                case PROTOBUF_C_TYPE_SFIXED32:
                        scan_value(s, event, f->name, (guint64) (gint64) *(const int32_t *) at, true);
                        break;
                case PROTOBUF_C_TYPE_UINT32:
                case PROTOBUF_C_TYPE_FIXED32:
                        scan_value(s, event, f->name, *(const uint32_t *) at, false);
                        break;
                default:
                        break;
                }
        }
}

static void scan_event(Scan *s, const Tracebus__FtraceEvent *e) {
        s->n_events++;
        if (e->generic)
                scan_generic(s, e->generic);
        else
                scan_message(s, "typed", &e->base);
}

static void scan_trace(const char *path, const char *kmsg_line, const char *const *collect, Scan *s) {
        g_auto(Trace) t = { 0 };

        kallsyms_range(&s->ksym_min, &s->ksym_max);
        s->examples = g_string_new(NULL);
        s->collect = collect;
        s->collected = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
        trace_load(path, false, &t);
        for (guint i = 0; i < t.evs->len; i++)
                if (EV(&t, i)->e)
                        scan_event(s, EV(&t, i)->e);
        s->kmsg_seen = memmem(t.data, t.len, kmsg_line, strlen(kmsg_line)) != NULL;
        note("%s: %u events, %u numbers, %u kernel addresses%s, %u distinct values of %s, %u console "
             "lines, kmsg line %s\n", path, s->n_events, s->n_values, s->n_kernel, s->examples->str,
             g_hash_table_size(s->collected), collect[0], s->n_console, s->kmsg_seen ? "present" : "absent");
}

/* ---- what any user can do ---- */

static void storm_files(const char *dir) {
        g_autofree char *path = g_build_filename(dir, "parity-io", NULL);
        g_autofree char *block = g_malloc0(1 << 20);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

        g_assert_cmpint(fd, >=, 0);
        for (int i = 0; i < 4; i++)
                g_assert_cmpint(write(fd, block, 1 << 20), ==, 1 << 20);
        g_assert_cmpint(fsync(fd), ==, 0);
        close(fd);
        g_assert_cmpint(unlink(path), ==, 0);
}

static void storm_memory(void) {
        size_t len = 16u << 20;
        char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

        g_assert_true(p != MAP_FAILED);
        (void) madvise(p, len, MADV_NOHUGEPAGE);
        memset(p, 0x5a, len);
        g_assert_cmpint(munmap(p, len), ==, 0);
}

static void storm_processes(void) {
        for (int i = 0; i < 10; i++) {
                pid_t pid = fork();
                int status;

                g_assert_cmpint(pid, >=, 0);
                if (pid == 0) {
                        execl("/bin/true", "true", (char *) NULL);
                        _exit(127);
                }
                g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        }
}

static void storm_socket(void) {
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t alen = sizeof(a);
        g_autofree char *buf = g_malloc0(1 << 16);
        int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), c, s;

        g_assert_cmpint(l, >=, 0);
        g_assert_cmpint(bind(l, (struct sockaddr *) &a, sizeof(a)), ==, 0);
        g_assert_cmpint(listen(l, 1), ==, 0);
        g_assert_cmpint(getsockname(l, (struct sockaddr *) &a, &alen), ==, 0);
        c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        g_assert_cmpint(connect(c, (struct sockaddr *) &a, sizeof(a)), ==, 0);
        s = accept4(l, NULL, NULL, SOCK_CLOEXEC);
        g_assert_cmpint(s, >=, 0);
        for (int i = 0; i < 16; i++) {
                g_assert_cmpint(send(c, buf, 1 << 16, 0), ==, 1 << 16);
                for (ssize_t got = 0; got < (1 << 16);) {
                        ssize_t n = recv(s, buf, (size_t) ((1 << 16) - got), 0);

                        g_assert_cmpint(n, >, 0);
                        got += n;
                }
        }
        close(c);
        close(s);
        close(l);
}

static void storm_signal(void) {
        pid_t pid = fork();
        int status;

        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                pause();
                _exit(0);
        }
        g_usleep(20 * 1000);
        g_assert_cmpint(kill(pid, SIGTERM), ==, 0);
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
}

/* As root: a line into the kernel log, which tbuser cannot read (dmesg_restrict). */
static void write_kmsg(const char *line) {
        int fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC);

        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(write(fd, line, strlen(line)), ==, (gssize) strlen(line));
        close(fd);
}

/* ---- the cases ---- */

/* The config of @events (NULL-terminated), written into the file as it records. */
static char *storm_config(const char *const *events) {
        return ftrace_config("write_into_file: true\nfile_write_period_ms: 1000\nbuffers { size_kb: 16384 }\n",
                             events, "  buffer_size_kb: 1024\n");
}

/* tbadmin and tbuser record @events at once through the storm; then the checks: no
 * kernel address in tbuser's trace, and none of the values of the fields @collect that
 * tbadmin's holds (page frames, user addresses). With @groups, the batch of every group
 * but the syscall events: tbadmin has kernel addresses and the kernel log, tbuser not. */
static void record_both(const char *const *events, const char *tag, const char *const *collect, bool groups) {
        g_autofree char *cfg = storm_config(events), *kmsg = g_strdup_printf("tb-parity-kmsg-%s-%d", tag, (int) getpid());
        g_autofree char *warnings = NULL, *name_user = g_strdup_printf("parity-%s-user.pftrace", tag);
        g_autofree char *name_admin = g_strdup_printf("parity-%s-admin.pftrace", tag);
        g_autoptr(GHashTable) st_user = NULL, st_admin = NULL;
        g_auto(Rec) user = { 0 }, admin = { 0 };
        g_auto(Scan) su = { 0 }, sa = { 0 };
        g_autofree char *line = g_strconcat(kmsg, "\n", NULL);

        rec_start(&admin, "tbadmin", name_admin, cfg);
        rec_start(&user, "tbuser", name_user, cfg);
        warnings = rec_get(&user, "Warnings");
        note("tbuser's warnings: %s\n", warnings);
        write_kmsg(line);
        storm_files(tb_bus()->tmpdir);
        storm_memory();
        storm_processes();
        storm_socket();
        storm_signal();
        g_usleep(300 * 1000);
        st_user = rec_stop(&user);
        st_admin = rec_stop(&admin);

        scan_trace(admin.out, kmsg, collect, &sa);
        scan_trace(user.out, kmsg, collect, &su);
        g_assert_cmpuint(su.n_events, >, 0);
        /* tbuser: no kernel address anywhere. */
        if (su.n_kernel > 0)
                g_error("tbuser's trace holds %u kernel addresses:%s", su.n_kernel, su.examples->str);
        /* The collected fields: tbadmin's raw, tbuser's there but none of them. */
        g_assert_cmpuint(g_hash_table_size(sa.collected), >, 0);
        g_assert_cmpuint(g_hash_table_size(su.collected), >, 0);
        g_assert_false(tb_sets_meet(su.collected, sa.collected));
        if (groups) {
                /* tbadmin: what the kernel wrote, so that the checks above can fail. */
                g_assert_cmpuint(sa.n_kernel, >, 0);
                /* The kernel log: tbadmin reads it, tbuser does not, nor any console line. */
                g_assert_true(sa.kmsg_seen);
                g_assert_cmpuint(sa.n_console, >, 0);
                g_assert_false(su.kmsg_seen);
                g_assert_cmpuint(su.n_console, ==, 0);
                g_assert_nonnull(strstr(warnings, "group 'printk'"));
        }
        verdict();
}

/* Every group but the syscall events, as globs, the refused groups first so that their
 * warnings come before the cap on warnings. */
static void test_storm_groups(void) {
        g_autoptr(GHashTable) groups = kernel_groups();
        g_autoptr(GPtrArray) events = g_ptr_array_new_with_free_func(g_free);
        g_autofree char *cfg = NULL;
        GHashTableIter it;
        gpointer k;

        g_assert_true(g_hash_table_contains(groups, "printk"));
        g_ptr_array_add(events, g_strdup("printk/*"));
        if (g_hash_table_contains(groups, "kvm"))
                g_ptr_array_add(events, g_strdup("kvm/*"));
        g_hash_table_iter_init(&it, groups);
        while (g_hash_table_iter_next(&it, &k, NULL))
                if (!g_str_equal(k, "printk") && !g_str_equal(k, "kvm") && !g_str_equal(k, "syscalls") &&
                    !g_str_equal(k, "raw_syscalls"))
                        g_ptr_array_add(events, g_strdup_printf("%s/*", (char *) k));
        g_ptr_array_add(events, g_strdup("ftrace/print"));
        g_ptr_array_add(events, NULL);
        note("batch of %u groups\n", events->len - 2);
        record_both((const char *const *) events->pdata, "groups", (const char *const[]) { "pfn", NULL }, true);
}
RECORDER_WRAP(test_storm_groups)

/* The syscall events: their arguments hold other processes' user addresses, pointers
 * (buf, filename) and longs (munmap's addr, madvise's start), hashed for tbuser too. */
static void test_storm_syscalls(void) {
        const char *const events[] = { "syscalls/*", "raw_syscalls/*", NULL };
        const char *const user_pointers[] = { "buf", "filename", "addr", "start", NULL };

        record_both(events, "syscalls", user_pointers, false);
}
RECORDER_WRAP(test_storm_syscalls)

/* Start as @user with @events named in a config: the error name, NULL when it started
 * (then ended at once, its client gone); the message in *ret_message. */
static char *start_named(const char *user, const char *const *events, char **ret_message) {
        g_autofree char *cfg = storm_config(events), *out = NULL, *full = NULL, *path = NULL;
        ClientSpec spec = { .user = user, .op = OP_START, .config = cfg };
        char *name;

        spec.output_fd = open_output("parity-named.pftrace", &path);
        name = client_run_full(&spec, &out, &full);
        close(spec.output_fd);
        *ret_message = full ? g_strdup(error_message(full)) : NULL;
        if (!name)
                wait_over(out, tb_scaled_ms(10000));
        return name;
}

/* Root's uprobe, in the sched group tbuser may record otherwise. */
#define PROBE_EVENT "sched/tb_parity_probe"

static void uprobe_define(bool add) {
        g_autofree char *line = add ? g_strdup("p:" PROBE_EVENT " /bin/true:0x1000\n") : g_strdup("-:" PROBE_EVENT "\n");
        int fd = open(TRACEFS "/uprobe_events", O_WRONLY | O_APPEND | O_CLOEXEC);

        g_assert_cmpint(fd, >=, 0);
        if (write(fd, line, strlen(line)) != (gssize) strlen(line) && add)
                g_error("defining %s: %s", PROBE_EVENT, g_strerror(errno));
        close(fd);
}

static void expect_refused(const char *event) {
        const char *const events[] = { "sched/sched_switch", event, NULL };
        g_autofree char *message = NULL, *name = start_named("tbuser", events, &message);

        note("tbuser naming %s: %s: %s\n", event, name, message);
        g_assert_cmpstr(name, ==, TB_ERROR_EVENT_NOT_ALLOWED);
        g_assert_nonnull(strstr(message, event));
        g_assert_nonnull(strstr(message, "org.tracebus.manage"));
}

static void test_named_events(void) {
        g_autofree char *kvm = first_event_of("kvm"), *message = NULL, *name = NULL, *warnings = NULL;
        const char *const admin_events[] = { "sched/sched_switch", "printk/console", PROBE_EVENT, NULL };
        const char *const glob[] = { "sched/*", NULL };
        g_autofree char *glob_cfg = storm_config(glob);
        g_auto(Rec) r = { 0 };

        uprobe_define(false);
        uprobe_define(true);
        /* The index of events is re-read once it is a second old. */
        g_usleep(1100 * 1000);
        expect_refused("printk/console");
        expect_refused(PROBE_EVENT);
        if (kvm)
                expect_refused(kvm);
        if (kernel_has("tcp/tcp_probe"))
                expect_refused("tcp/tcp_probe");
        /* Chosen by a glob, root's probe is left out, and said so. */
        rec_start(&r, "tbuser", "parity-glob.pftrace", glob_cfg);
        warnings = rec_get(&r, "Warnings");
        note("tbuser's sched/*: %s\n", warnings);
        g_assert_nonnull(strstr(warnings, PROBE_EVENT));
        g_assert_nonnull(strstr(warnings, "whole machine"));
        g_hash_table_unref(rec_stop(&r));
        /* tbadmin records all of them. */
        name = start_named("tbadmin", admin_events, &message);
        g_assert_null(name);
        uprobe_define(false);
        /* The next case's index of events without the probe. */
        g_usleep(1100 * 1000);
}
RECORDER_WRAP(test_named_events)

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();
        RECORDER_CASE("parity-named-events", test_named_events);
        RECORDER_CASE("parity-storm-groups", test_storm_groups);
        RECORDER_CASE("parity-storm-syscalls", test_storm_syscalls);
        return tb_test_run(TB_START_SERVICE);
}
