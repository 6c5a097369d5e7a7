/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite, the recorder (tests/recorder.h says what every piece checks), part 01:
 * event names (group/name, group/ *, bare names, UnknownEvent); every event group at
 * once, each generic event against its format file; the typed events against what the
 * test made happen.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "system-bus.h"
#include "tb-client.h"
#include "trace-file.h"
#include "trace-reader.h"
#include "trace.pb-c.h"
#include "recorder.h"

/* The sorted "group/name" list of a group's events under tracefs. */
static GPtrArray *group_events(const char *group) {
        g_autofree char *dir = g_build_filename(TRACEFS, "events", group, NULL);
        g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
        GPtrArray *a = g_ptr_array_new_with_free_func(g_free);
        const char *n;

        g_assert_nonnull(d);
        while ((n = g_dir_read_name(d))) {
                g_autofree char *f = g_build_filename(dir, n, "format", NULL);
                if (g_file_test(f, G_FILE_TEST_IS_REGULAR))
                        g_ptr_array_add(a, g_strdup_printf("%s/%s", group, n));
        }
        g_ptr_array_sort(a, (GCompareFunc) g_ascii_strcasecmp);
        return a;
}

/* ---- format files ---- */

typedef struct {
        char *name;
        char *type;   /* the declaration without the name */
        int size;
        bool is_signed, is_array, is_dynamic;
} FmtField;

static void fmt_field_free(gpointer p) {
        FmtField *f = p;
        g_free(f->name);
        g_free(f->type);
        g_free(f);
}

/* The non-common fields of events/<group>/<name>/format. */
static GPtrArray *format_fields(const char *group, const char *name) {
        g_autofree char *p = g_build_filename(TRACEFS, "events", group, name, "format", NULL);
        g_autofree char *text = NULL;
        g_auto(GStrv) lines = NULL;
        GPtrArray *a = g_ptr_array_new_with_free_func(fmt_field_free);

        if (!g_file_get_contents(p, &text, NULL, NULL))
                return a;
        lines = g_strsplit(text, "\n", -1);
        for (size_t i = 0; lines[i]; i++) {
                const char *l, *semi, *sz, *sg;
                g_autofree char *decl = NULL;
                char *br, *nm;
                FmtField *f;

                g_strstrip(lines[i]);
                if (g_str_has_prefix(lines[i], "print fmt:"))
                        break;
                l = strstr(lines[i], "field:");
                if (!l || !(semi = strchr(l, ';')))
                        continue;
                decl = g_strndup(l + 6, (gsize) (semi - l - 6));
                g_strstrip(decl);
                f = g_new0(FmtField, 1);
                f->is_dynamic = g_str_has_prefix(decl, "__data_loc") || g_str_has_prefix(decl, "__rel_loc");
                br = strchr(decl, '[');
                f->is_array = br != NULL;
                if (br && !f->is_dynamic)
                        *br = 0; /* "char comm[16]" -> "char comm"; "__data_loc char[] name" stays */
                g_strstrip(decl);
                nm = strrchr(decl, ' ');
                if (nm) {
                        f->name = g_strdup(nm + 1);
                        *nm = 0;
                } else
                        f->name = g_strdup(decl);
                while (f->name[0] == '*')
                        memmove(f->name, f->name + 1, strlen(f->name));
                f->type = g_strdup(decl);
                sz = strstr(semi, "size:");
                sg = strstr(semi, "signed:");
                f->size = sz ? atoi(sz + 5) : -1;
                f->is_signed = sg && sg[7] == '1';
                if (g_str_has_prefix(f->name, "common_")) {
                        fmt_field_free(f);
                        continue;
                }
                g_ptr_array_add(a, f);
        }
        return a;
}

static bool type_is_char(const char *type) {
        g_autofree char *t = g_strdup(type);
        char *br = strchr(t, '[');
        if (br)
                *br = 0;
        g_strstrip(t);
        return g_str_has_suffix(t, "char");
}

static bool is_hex(const char *s) {
        for (; *s; s++)
                if (!g_ascii_isxdigit(*s) || g_ascii_isupper(*s))
                        return false;
        return true;
}

/* Checks one generic event against its format file; returns a problem or NULL. */
static char *generic_mismatch(const Ev *e, GPtrArray *fmt) {
        const Tracebus__GenericFtraceEvent *g = e->e->generic;

        if (g->n_field != fmt->len)
                return g_strdup_printf("%zu fields, the format file has %u", g->n_field, fmt->len);
        for (guint i = 0; i < fmt->len; i++) {
                const FmtField *f = g_ptr_array_index(fmt, i);
                const Tracebus__GenericFtraceEvent__Field *v = g->field[i];
                bool ptr = strchr(f->type, '*') != NULL;

                if (!v->name || !g_str_equal(v->name, f->name))
                        return g_strdup_printf("field %u is \"%s\", the format file says \"%s\"", i,
                                               v->name ? v->name : "(none)", f->name);
                if ((f->is_dynamic || f->is_array) && type_is_char(f->type)) {
                        if (!v->str_value)
                                return g_strdup_printf("%s (%s) is not a string", f->name, f->type);
                        if (!f->is_dynamic && f->size > 0 && strlen(v->str_value) > (gsize) f->size)
                                return g_strdup_printf("%s is longer than its %d bytes", f->name, f->size);
                } else if (f->is_dynamic || f->is_array || !(f->size == 1 || f->size == 2 || f->size == 4 || f->size == 8)) {
                        if (!v->str_value || !is_hex(v->str_value) || strlen(v->str_value) % 2)
                                return g_strdup_printf("%s (%s, %d bytes) is not lowercase hex bytes", f->name,
                                                       f->type, f->size);
                        if (!f->is_dynamic && strlen(v->str_value) != 2 * (gsize) f->size)
                                return g_strdup_printf("%s has %zu hex digits for %d bytes", f->name,
                                                       strlen(v->str_value), f->size);
                } else if (f->is_signed && !ptr) {
                        gint64 lo = f->size == 8 ? G_MININT64 : -((gint64) 1 << (f->size * 8 - 1));
                        gint64 hi = f->size == 8 ? G_MAXINT64 : ((gint64) 1 << (f->size * 8 - 1)) - 1;
                        if (!v->has_int_value)
                                return g_strdup_printf("%s (signed %s) has no int_value", f->name, f->type);
                        if (v->int_value < lo || v->int_value > hi)
                                return g_strdup_printf("%s (%d bytes) = %" G_GINT64_FORMAT " is out of range", f->name,
                                                       f->size, v->int_value);
                } else {
                        if (!v->has_uint_value)
                                return g_strdup_printf("%s (unsigned %s) has no uint_value", f->name, f->type);
                        if (f->size < 8 && v->uint_value >> (f->size * 8))
                                return g_strdup_printf("%s (%d bytes) = %" G_GUINT64_FORMAT " is out of range", f->name,
                                                       f->size, v->uint_value);
                }
        }
        return NULL;
}

/* ---- 1. events by name, wildcard and bare name; UnknownEvent ---- */

static void test_event_names(void) {
        const char *const bad[] = { "sched/sched_switch", "nosuchgroup/nosuchevent", "sched/no_such_event",
                                    "no_such_bare_event", "nosuchgroup2/*", NULL };
        const char *const good[] = { "sched/*", "cpu_idle", "irq/*", "ftrace/print", NULL };
        g_autofree char *bad_cfg = ftrace_config("", bad, NULL);
        g_autofree char *warnings = NULL, *bad_events = NULL;
        g_autofree char *good_cfg = ftrace_config("buffers { size_kb: 32768 }\n", good, NULL);
        g_autofree char *out = NULL, *err = NULL, *opath = NULL, *events = NULL;
        g_autoptr(GPtrArray) want = g_ptr_array_new_with_free_func(g_free);
        g_autoptr(GHashTable) st = NULL;
        g_auto(GStrv) got = NULL;
        g_auto(Trace) t = { 0 };
        g_auto(Rec) r = { 0 }, rb = { 0 };
        int fd = open_output("names-bad.pftrace", &opath);
        ClientSpec spec = { .user = "tbuser", .op = OP_START, .events = bad + 1, .duration_ms = 1000, .output_fd = fd };
        g_auto(GStrv) before = own_instances(), after = NULL;

        /* As Perfetto: every name that matches nothing is skipped with a warning naming it,
         * and only those; the rest is recorded. */
        rec_start(&rb, "tbuser", "names-some-bad.pftrace", bad_cfg);
        warnings = rec_get(&rb, "Warnings");
        bad_events = rec_get(&rb, "Events");
        for (size_t i = 1; bad[i]; i++)
                expect(strstr(warnings, bad[i]) != NULL, "no warning names \"%s\": %s", bad[i], warnings);
        expect(strstr(warnings, "sched/sched_switch") == NULL, "a warning names the known sched/sched_switch: %s",
               warnings);
        expect(g_str_equal(bad_events, "sched/sched_switch"), "Events is %s, expected sched/sched_switch", bad_events);
        g_hash_table_unref(rec_stop(&rb));

        /* tracebus's own Events list with nothing that exists (typos): refused, every name
         * that matches nothing named. (A TraceConfig so emptied starts, as Perfetto's does:
         * test-sessions-warnings /sessions-warnings/all-events-missing.) */
        g_free(client_run_full(&spec, &out, &err));
        close(fd);
        if (!err)
                shortfall("Start with only unknown events succeeded (%s)", out);
        else {
                g_autofree char *name = error_name(err);
                const char *msg = error_message(err);
                expect(g_str_equal(name, ERR_UNKNOWN_EVENT), "Start with unknown events: %s, expected %s", name,
                       ERR_UNKNOWN_EVENT);
                for (size_t i = 1; bad[i]; i++)
                        expect(strstr(msg, bad[i]) != NULL, "UnknownEvent does not name \"%s\": %s", bad[i], msg);
                expect(strstr(msg, "sched/sched_switch") == NULL, "UnknownEvent names the known sched/sched_switch: %s",
                       msg);
        }
        after = own_instances();
        expect(g_strv_length(after) == g_strv_length(before), "a refused Start left a tracefs instance");

        /* "group/ *" (wildcard), a bare name and group/name expand to what the kernel has. */
        {
                g_autoptr(GPtrArray) s = group_events("sched"), q = group_events("irq");
                for (guint i = 0; i < s->len; i++)
                        g_ptr_array_add(want, g_strdup(g_ptr_array_index(s, i)));
                for (guint i = 0; i < q->len; i++)
                        g_ptr_array_add(want, g_strdup(g_ptr_array_index(q, i)));
                g_ptr_array_add(want, g_strdup("power/cpu_idle"));
                g_ptr_array_add(want, g_strdup("ftrace/print"));
        }
        rec_start(&r, "tbuser", "names-good.pftrace", good_cfg);
        events = rec_get(&r, "Events");
        got = g_strsplit(events, ",", -1);
        for (guint i = 0; i < want->len; i++)
                expect(g_strv_contains((const char *const *) got, g_ptr_array_index(want, i)),
                       "Events property lacks %s (from sched/*, cpu_idle, irq/*)", (const char *) g_ptr_array_index(want, i));
        expect(g_strv_length(got) == want->len, "Events property has %u events, the kernel offers %u for sched/*, "
               "cpu_idle, irq/*, ftrace/print: %s", g_strv_length(got), want->len, events);
        g_usleep(500 * 1000);
        st = rec_stop(&r);
        trace_load(r.out, false, &t);
        check_trace(&t, &(CheckOpts) { .closed = true, .wrapped = stat_u64(st, "EventsOverwritten") > 0 });
        verdict();
}

/* ---- any event: every group the kernel offers, at once ---- */

static void test_all_events(void) {
        g_autoptr(GPtrArray) groups = g_ptr_array_new_with_free_func(g_free);
        g_autoptr(GPtrArray) evs = g_ptr_array_new();
        g_autoptr(GHashTable) name_to_group = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
        g_autoptr(GHashTable) checked = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        g_autoptr(GHashTable) st = NULL;
        g_autofree char *cfg = NULL;
        g_autoptr(GDir) d = g_dir_open(TRACEFS "/events", 0, NULL);
        g_auto(Trace) t = { 0 };
        g_auto(Rec) r = { 0 };
        const char *n;
        guint n_generic = 0, n_bad = 0, n_names = 0;

        g_assert_nonnull(d);
        while ((n = g_dir_read_name(d))) {
                g_autofree char *p = g_build_filename(TRACEFS, "events", n, NULL);
                g_autoptr(GPtrArray) ge = NULL;
                /* ftrace/ holds the tracers' record formats, which have no enable file:
                 * only ftrace/print is an event one can ask for. */
                if (!g_file_test(p, G_FILE_TEST_IS_DIR) || g_str_equal(n, "ftrace"))
                        continue;
                g_ptr_array_add(groups, g_strdup_printf("%s/*", n));
                ge = group_events(n);
                for (guint i = 0; i < ge->len; i++) {
                        const char *gn = g_ptr_array_index(ge, i);
                        g_hash_table_insert(name_to_group, g_strdup(strchr(gn, '/') + 1), g_strdup(n));
                }
        }
        g_hash_table_insert(name_to_group, g_strdup("print"), g_strdup("ftrace"));
        for (guint i = 0; i < groups->len; i++)
                g_ptr_array_add(evs, g_ptr_array_index(groups, i));
        g_ptr_array_add(evs, (char *) "ftrace/print");
        g_ptr_array_add(evs, NULL);
        note("recording %u groups (%u events)\n", groups->len, g_hash_table_size(name_to_group));
        cfg = ftrace_config("write_into_file: true\nfile_write_period_ms: 1000\nbuffers { size_kb: 65536 }\n",
                            (const char *const *) evs->pdata, "  buffer_size_kb: 4096\n");
        rec_start(&r, "root", "all-events.pftrace", cfg);
        g_usleep(1000 * 1000);
        st = rec_stop(&r);
        trace_load(r.out, false, &t);
        check_trace(&t, &(CheckOpts) { .closed = true });
        /* Every generic event, by the format file of its event. */
        for (guint i = 0; i < t.evs->len; i++) {
                const Ev *e = EV(&t, i);
                const char *name = generic_name(e), *group;
                g_autoptr(GPtrArray) fmt = NULL;
                g_autofree char *why = NULL;

                if (!name)
                        continue;
                n_generic++;
                if (typed_number(name))
                        continue; /* reported by the typed case */
                group = g_hash_table_lookup(name_to_group, name);
                if (!group) {
                        if (n_bad++ < 5)
                                shortfall("generic event \"%s\" is not an event of this kernel", name);
                        continue;
                }
                if (g_hash_table_contains(checked, name))
                        continue;
                g_hash_table_add(checked, g_strdup(name));
                n_names++;
                fmt = format_fields(group, name);
                why = generic_mismatch(e, fmt);
                if (why && n_bad++ < 15)
                        shortfall("generic %s/%s: %s", group, name, why);
        }
        note("%u generic events of %u kinds checked against their format files\n", n_generic, n_names);
        expect(n_bad == 0, "%u generic events in all do not match their format files", n_bad);
        expect(n_names >= 20, "only %u kinds of generic events in a second of every event", n_names);
        check_stop_stats(st, &t, true);
        verdict();
}

/* ---- typed events and generic ones, against what the test made happen ---- */

typedef struct {
        pid_t test_pid, child, sleeper;
        char *test_comm, *exec_path;
        guint16 port;
        struct {
                char text[64];
                guint64 before, after;
                pid_t tid;
        } markers[4];
} Happened;

static void do_known_things(const Rec *r, Happened *h) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t sl = sizeof sa;
        int ls, mfd, status;
        char *const argv[] = { (char *) "tb-exec-true", NULL };
        cpu_set_t old;

        h->test_pid = getpid();
        h->test_comm = self_comm();
        h->exec_path = copy_binary("/bin/true", "tb-exec-true");
        h->sleeper = idle_child("tbsignalled");
        ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        g_assert_cmpint(ls, >=, 0);
        g_assert_cmpint(bind(ls, (struct sockaddr *) &sa, sizeof sa), ==, 0);
        g_assert_cmpint(listen(ls, 4), ==, 0);
        g_assert_cmpint(getsockname(ls, (struct sockaddr *) &sa, &sl), ==, 0);
        h->port = ntohs(sa.sin_port);
        g_usleep(100 * 1000);

        fflush(NULL);
        h->child = fork();
        g_assert_cmpint(h->child, >=, 0);
        if (h->child == 0) {
                int s;
                (void) prctl(PR_SET_NAME, "tbrenamed");
                (void) syscall(SYS_getppid);
                (void) kill(h->sleeper, SIGUSR1);
                s = socket(AF_INET, SOCK_STREAM, 0);
                if (s >= 0) {
                        (void) connect(s, (struct sockaddr *) &sa, sizeof sa);
                        close(s);
                }
                execv(h->exec_path, argv);
                _exit(127);
        }
        g_assert_cmpint(waitpid(h->child, &status, 0), ==, h->child);
        g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        {
                int a = accept(ls, NULL, NULL);
                if (a >= 0)
                        close(a);
        }
        close(ls);

        /* Markers 300 ms apart on one CPU: the ring buffer needs time-extend records for
         * such gaps, and the timestamps must still be exact. */
        mfd = marker_open(r);
        pin_to_cpu(1 % (int) sysconf(_SC_NPROCESSORS_ONLN), &old);
        for (guint i = 0; i < G_N_ELEMENTS(h->markers); i++) {
                g_snprintf(h->markers[i].text, sizeof h->markers[i].text, "tb-typed-marker-%u-%d", i, (int) getpid());
                h->markers[i].tid = gettid_();
                h->markers[i].before = boottime();
                marker_write(mfd, h->markers[i].text);
                h->markers[i].after = boottime();
                g_usleep(300 * 1000);
        }
        g_assert_cmpint(sched_setaffinity(0, sizeof old, &old), ==, 0);
        close(mfd);
        /* Some block I/O for irq_handler_entry/exit. */
        {
                g_autofree char *f = g_build_filename(tb_bus()->tmpdir, "irq-io", NULL);
                int fd = open(f, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
                char buf[4096] = { 1 };
                for (int i = 0; fd >= 0 && i < 64; i++) {
                        (void) write(fd, buf, sizeof buf);
                        (void) fdatasync(fd);
                }
                if (fd >= 0)
                        close(fd);
                (void) unlink(f);
        }
        g_usleep(300 * 1000);
}

/* irq number -> name, from /proc/interrupts. */
static GHashTable *proc_interrupts(void) {
        GHashTable *h = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
        g_autofree char *text = NULL;
        g_auto(GStrv) lines = NULL;

        g_assert_true(g_file_get_contents("/proc/interrupts", &text, NULL, NULL));
        lines = g_strsplit(text, "\n", -1);
        for (size_t i = 1; lines[i]; i++) {
                char *end;
                long irq = strtol(lines[i], &end, 10);
                g_auto(GStrv) tok = NULL;
                guint n;
                if (end == lines[i] || *end != ':')
                        continue;
                tok = g_strsplit_set(end + 1, " \t", -1);
                n = g_strv_length(tok);
                while (n > 0 && !*tok[n - 1])
                        n--;
                if (n > 0)
                        g_hash_table_insert(h, GINT_TO_POINTER((int) irq), g_strdup(tok[n - 1]));
        }
        return h;
}

/* Idle time of all CPUs so far, in clock ticks (/proc/stat). */
static guint64 idle_ticks(void) {
        g_autofree char *text = NULL;
        guint64 v[5] = { 0 };

        g_assert_true(g_file_get_contents("/proc/stat", &text, NULL, NULL));
        g_assert_cmpint(sscanf(text, "cpu %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %"
                               G_GUINT64_FORMAT " %" G_GUINT64_FORMAT, &v[0], &v[1], &v[2], &v[3], &v[4]), ==, 5);
        return v[3];
}

static void test_typed_events(void) {
        const char *const events[] = {
                "sched/sched_switch", "sched/sched_waking", "sched/sched_wakeup", "sched/sched_wakeup_new",
                "sched/sched_process_exit", "sched/sched_process_free", "sched/sched_process_fork",
                "sched/sched_process_exec", "sched/sched_prepare_exec", "task/*", "ftrace/print",
                "power/cpu_frequency", "power/cpu_idle", "irq/*", "raw_syscalls/sys_enter", "raw_syscalls/sys_exit",
                "signal/signal_generate", "sock/inet_sock_set_state", NULL,
        };
        g_autofree char *cfg = ftrace_config("write_into_file: true\nfile_write_period_ms: 1000\n"
                                             "buffers { size_kb: 65536 }\n", events,
                                             "  buffer_size_kb: 8192\n  compact_sched { enabled: false }\n");
        g_autoptr(GHashTable) st = NULL, irqs = proc_interrupts();
        g_auto(Trace) t = { 0 };
        g_auto(Rec) r = { 0 };
        Happened h = { 0 };
        TbBusy busy;
        g_autoptr(GError) error = NULL;
        guint count[400] = { 0 }, n_generic_typed = 0;
        bool fork_ok = false, newtask_ok = false, wakeup_new_ok = false, rename_ok = false, enter_ok = false;
        bool exit_ok = false, signal_ok = false, sock_ok = false, prepare_ok = false, exec_ok = false;
        bool pexit_ok = false, free_ok = false, switch_ok = false, waking_ok = false, wakeup_ok = false;
        bool marker_seen[G_N_ELEMENTS(h.markers)] = { false };
        guint idle_bad = 0, irq_bad = 0, softirq_bad = 0, irq_named = 0, freq_bad = 0;
        g_autoptr(GString) generic_typed = g_string_new(NULL);
        g_autoptr(GHashTable) waked = g_hash_table_new(g_direct_hash, g_direct_equal);
        const int nr_getppid = SYS_getppid;
        guint64 idle_before, idle_after;

        g_assert_true(tb_busy_start("tbbusy-typed", &busy, &error));
        rec_start(&r, "tbuser", "typed.pftrace", cfg);
        idle_before = idle_ticks();
        do_known_things(&r, &h);
        idle_after = idle_ticks();
        st = rec_stop(&r);
        tb_busy_stop(&busy);
        kill_reap(h.sleeper);
        trace_load(r.out, false, &t);
        check_trace(&t, &(CheckOpts) { .closed = true, .describe_all = true });
        check_stop_stats(st, &t, true);
        note("test pid %d (%s), child %d, sleeper %d, port %u, exec %s\n", h.test_pid, h.test_comm, h.child, h.sleeper,
             h.port, h.exec_path);

        for (guint i = 0; i < t.evs->len; i++) {
                const Ev *e = EV(&t, i);
                g_autofree char *s1 = NULL, *s2 = NULL, *s3 = NULL;

                if (e->kind < G_N_ELEMENTS(count))
                        count[e->kind]++;
                switch (e->kind) {
                case EV_SCHED_PROCESS_FORK:
                        s1 = ev_str(e, 1);
                        s3 = ev_str(e, 3);
                        if (ev_int(e, 4, 0) == h.child) {
                                fork_ok = ev_int(e, 2, 0) == h.test_pid && g_strcmp0(s1, h.test_comm) == 0 &&
                                          g_strcmp0(s3, h.test_comm) == 0;
                                expect(fork_ok, "sched_process_fork of %d: parent %d \"%s\", child comm \"%s\"; expected "
                                       "parent %d \"%s\"", h.child, (int) ev_int(e, 2, 0), s1, s3, h.test_pid, h.test_comm);
                        }
                        break;
                case EV_TASK_NEWTASK:
                        s2 = ev_str(e, 2);
                        if (ev_int(e, 1, 0) == h.child) {
                                guint64 flags = (guint64) ev_int(e, 3, 0);
                                /* fork(): a new process (no CLONE_THREAD); clone3 passes the exit
                                 * signal apart from the flags. */
                                newtask_ok = g_strcmp0(s2, h.test_comm) == 0 && (flags & 0x00010000) == 0 &&
                                             e->pid == (guint32) h.test_pid;
                                expect(newtask_ok, "task_newtask of %d: comm \"%s\", clone_flags 0x%" G_GINT64_MODIFIER
                                       "x, by %u", h.child, s2, flags, e->pid);
                        }
                        break;
                case EV_SCHED_WAKEUP_NEW:
                        s1 = ev_str(e, 1);
                        if (ev_int(e, 2, 0) == h.child) {
                                gint64 cpu = ev_int(e, 5, -1);
                                wakeup_new_ok = g_strcmp0(s1, h.test_comm) == 0 && ev_int(e, 3, -1) == 120 && cpu >= 0 &&
                                                cpu < t.n_cpus;
                                expect(wakeup_new_ok, "sched_wakeup_new of %d: comm \"%s\" prio %d target_cpu %d", h.child,
                                       s1, (int) ev_int(e, 3, -1), (int) cpu);
                        }
                        break;
                case EV_TASK_RENAME:
                        s2 = ev_str(e, 2);
                        s3 = ev_str(e, 3);
                        if (ev_int(e, 1, 0) == h.child && g_strcmp0(s3, "tbrenamed") == 0) {
                                rename_ok = g_strcmp0(s2, h.test_comm) == 0;
                                expect(rename_ok, "task_rename of %d: oldcomm \"%s\", expected \"%s\"", h.child, s2,
                                       h.test_comm);
                        }
                        break;
                case EV_SYS_ENTER:
                        if (e->pid == (guint32) h.child && ev_int(e, 1, -1) == nr_getppid)
                                enter_ok = true;
                        break;
                case EV_SYS_EXIT:
                        if (e->pid == (guint32) h.child && ev_int(e, 1, -1) == nr_getppid) {
                                exit_ok = ev_int(e, 2, -1) == h.test_pid;
                                expect(exit_ok, "sys_exit of getppid in %d: ret %d, expected %d", h.child,
                                       (int) ev_int(e, 2, -1), h.test_pid);
                        }
                        break;
                case EV_SCHED_PROCESS_EXEC:
                        s1 = ev_str(e, 1);
                        if (ev_int(e, 2, 0) == h.child) {
                                exec_ok = g_strcmp0(s1, h.exec_path) == 0 && ev_int(e, 3, 0) == h.child;
                                expect(exec_ok, "sched_process_exec of %d: filename \"%s\" old_pid %d, expected \"%s\"",
                                       h.child, s1, (int) ev_int(e, 3, 0), h.exec_path);
                        }
                        break;
                case EV_SCHED_PROCESS_EXIT:
                        s1 = ev_str(e, 1);
                        if (ev_int(e, 2, 0) == h.child) {
                                pexit_ok = g_strcmp0(s1, "tb-exec-true") == 0 && ev_int(e, 4, -1) == 120;
                                expect(pexit_ok, "sched_process_exit of %d: comm \"%s\" prio %d", h.child, s1,
                                       (int) ev_int(e, 4, -1));
                        }
                        break;
                case EV_SCHED_PROCESS_FREE:
                        s1 = ev_str(e, 1);
                        if (ev_int(e, 2, 0) == h.child) {
                                free_ok = g_strcmp0(s1, "tb-exec-true") == 0 && ev_int(e, 3, -1) == 120;
                                expect(free_ok, "sched_process_free of %d: comm \"%s\" prio %d", h.child, s1,
                                       (int) ev_int(e, 3, -1));
                        }
                        break;
                case EV_SCHED_SWITCH: {
                        gint64 prev = ev_int(e, 2, -1), next = ev_int(e, 6, -1);
                        s1 = ev_str(e, 1);
                        s2 = ev_str(e, 5);
                        if ((prev == busy.pid && g_strcmp0(s1, busy.comm) == 0) ||
                            (next == busy.pid && g_strcmp0(s2, busy.comm) == 0))
                                switch_ok = true;
                        if (prev == h.child || next == h.child) {
                                const char *c = prev == h.child ? s1 : s2;
                                expect(g_strcmp0(c, h.test_comm) == 0 || g_strcmp0(c, "tbrenamed") == 0 ||
                                               g_strcmp0(c, "tb-exec-true") == 0,
                                       "sched_switch shows %d as \"%s\"", h.child, c);
                        }
                        break;
                }
                case EV_SCHED_WAKING:
                case EV_SCHED_WAKEUP: {
                        gint64 pid = ev_int(e, 2, 0), cpu = ev_int(e, 5, -1);
                        s1 = ev_str(e, 1);
                        expect(cpu >= 0 && cpu < t.n_cpus, "%s of %d has target_cpu %d", kind_name(e->kind), (int) pid,
                               (int) cpu);
                        if (pid == h.sleeper && g_strcmp0(s1, "tbsignalled") == 0) {
                                if (e->kind == EV_SCHED_WAKING)
                                        waking_ok = true;
                                else
                                        wakeup_ok = true;
                        }
                        if (pid == busy.pid && g_strcmp0(s1, busy.comm) == 0) {
                                if (e->kind == EV_SCHED_WAKING)
                                        waking_ok = true;
                                else
                                        wakeup_ok = true;
                        }
                        break;
                }
                case EV_PRINT:
                        s2 = ev_str(e, 2);
                        for (guint m = 0; m < G_N_ELEMENTS(h.markers); m++) {
                                g_autofree char *want = g_strconcat(h.markers[m].text, "\n", NULL);
                                if (g_strcmp0(s2, want) != 0 && g_strcmp0(s2, h.markers[m].text) != 0)
                                        continue;
                                expect(!marker_seen[m], "marker \"%s\" is in the trace twice", h.markers[m].text);
                                marker_seen[m] = true;
                                expect(e->pid == (guint32) h.markers[m].tid, "marker %u has pid %u, written by %d", m,
                                       e->pid, h.markers[m].tid);
                                expect(e->ts >= h.markers[m].before && e->ts <= h.markers[m].after,
                                       "marker %u has timestamp %" G_GUINT64_FORMAT ", but was written between %"
                                       G_GUINT64_FORMAT " and %" G_GUINT64_FORMAT " (BOOTTIME): timestamps are not exact",
                                       m, e->ts, h.markers[m].before, h.markers[m].after);
                        }
                        break;
                case EV_CPU_IDLE: {
                        gint64 state = ev_int(e, 1, -1), cpu = ev_int(e, 2, -1);
                        if (cpu != (gint64) e->cpu || state < 0 || (state > 16 && state != 4294967295))
                                idle_bad++;
                        break;
                }
                case EV_CPU_FREQUENCY:
                        if (ev_int(e, 2, -1) < 0 || ev_int(e, 2, -1) >= t.n_cpus || ev_int(e, 1, 0) <= 0)
                                freq_bad++;
                        break;
                case EV_IRQ_HANDLER_ENTRY: {
                        gint64 irq = ev_int(e, 1, -1);
                        const char *pn = g_hash_table_lookup(irqs, GINT_TO_POINTER((int) irq));
                        s2 = ev_str(e, 2);
                        if (!s2 || !pn)
                                irq_bad++;
                        else if (g_str_equal(s2, pn))
                                irq_named++;
                        break;
                }
                case EV_IRQ_HANDLER_EXIT: {
                        gint64 ret = ev_int(e, 2, -1);
                        if (ev_int(e, 1, -1) < 0 || ret < 0 || ret > 3)
                                irq_bad++;
                        break;
                }
                case EV_SOFTIRQ_ENTRY:
                case EV_SOFTIRQ_EXIT:
                        if (ev_int(e, 1, -1) < 0 || ev_int(e, 1, -1) >= 10)
                                softirq_bad++;
                        break;
                case EV_GENERIC: {
                        const char *name = generic_name(e);
                        gint64 v = 0;
                        if (name && typed_number(name)) {
                                if (!strstr(generic_typed->str, name))
                                        g_string_append_printf(generic_typed, " %s", name);
                                n_generic_typed++;
                        } else if (g_strcmp0(name, "signal_generate") == 0) {
                                const Tracebus__GenericFtraceEvent__Field *c = ev_generic_field(e, "comm");
                                g_autoptr(GPtrArray) fmt = format_fields("signal", "signal_generate");
                                g_autofree char *why = generic_mismatch(e, fmt);
                                if (generic_int(e, "pid", &v) && v == h.sleeper) {
                                        gint64 sig = 0;
                                        signal_ok = generic_int(e, "sig", &sig) && sig == SIGUSR1 && c && c->str_value &&
                                                    g_str_equal(c->str_value, "tbsignalled") && e->pid == (guint32) h.child;
                                        expect(signal_ok, "signal_generate to %d: sig %d comm \"%s\" from %u", h.sleeper,
                                               (int) sig, c ? c->str_value : NULL, e->pid);
                                        expect(!why, "generic signal_generate: %s", why);
                                }
                        } else if (g_strcmp0(name, "inet_sock_set_state") == 0) {
                                const Tracebus__GenericFtraceEvent__Field *sa = ev_generic_field(e, "saddr"),
                                                                          *da = ev_generic_field(e, "daddr");
                                gint64 sp = 0, dp = 0, fam = 0, proto = 0;
                                g_autoptr(GPtrArray) fmt = format_fields("sock", "inet_sock_set_state");
                                g_autofree char *why = generic_mismatch(e, fmt);
                                /* The client's socket (the listener's has no peer). */
                                if (generic_int(e, "dport", &dp) && generic_int(e, "sport", &sp) && dp == h.port) {
                                        bool ok = generic_int(e, "family", &fam) && fam == AF_INET &&
                                                  generic_int(e, "protocol", &proto) && proto == IPPROTO_TCP && sa &&
                                                  g_strcmp0(sa->str_value, "7f000001") == 0 && da &&
                                                  g_strcmp0(da->str_value, "7f000001") == 0;
                                        expect(ok, "inet_sock_set_state on port %u: family %d protocol %d saddr %s daddr %s "
                                               "(expected 2, 6, 7f000001, 7f000001)", h.port, (int) fam, (int) proto,
                                               sa ? sa->str_value : NULL, da ? da->str_value : NULL);
                                        expect(!why, "generic inet_sock_set_state: %s", why);
                                        sock_ok = sock_ok || ok;
                                }
                        } else if (g_strcmp0(name, "sched_prepare_exec") == 0) {
                                const Tracebus__GenericFtraceEvent__Field *fn = ev_generic_field(e, "filename"),
                                                                          *in = ev_generic_field(e, "interp"),
                                                                          *cm = ev_generic_field(e, "comm");
                                g_autoptr(GPtrArray) fmt = format_fields("sched", "sched_prepare_exec");
                                g_autofree char *why = generic_mismatch(e, fmt);
                                if (generic_int(e, "pid", &v) && v == h.child) {
                                        prepare_ok = fn && g_strcmp0(fn->str_value, h.exec_path) == 0 && in &&
                                                     g_strcmp0(in->str_value, h.exec_path) == 0 && cm &&
                                                     g_strcmp0(cm->str_value, "tbrenamed") == 0;
                                        expect(prepare_ok, "sched_prepare_exec of %d: filename \"%s\" interp \"%s\" comm "
                                               "\"%s\"", h.child, fn ? fn->str_value : NULL, in ? in->str_value : NULL,
                                               cm ? cm->str_value : NULL);
                                        expect(!why, "generic sched_prepare_exec: %s", why);
                                }
                        }
                        break;
                }
                default:
                        break;
                }
        }
        {
                g_autoptr(GString) counts = g_string_new(NULL);
                for (guint k = 0; k < G_N_ELEMENTS(count); k++)
                        if (count[k])
                                g_string_append_printf(counts, " %s=%u", kind_name(k), count[k]);
                note("events by kind:%s\n", counts->str);
        }
        /* Every typed kind the issue names, as its typed message. */
        for (size_t i = 0; i < n_typed_kinds; i++) {
                guint k = typed_kinds[i].number;
                if (k == EV_CPU_IDLE && idle_after - idle_before < 5) {
                        note("the CPUs were busy throughout (%" G_GUINT64_FORMAT " ticks idle): no cpu_idle to expect (%u "
                             "seen)\n", idle_after - idle_before, count[k]);
                        continue;
                }
                if (k == EV_CPU_FREQUENCY && !g_file_test("/sys/devices/system/cpu/cpu0/cpufreq", G_FILE_TEST_IS_DIR)) {
                        note("no cpufreq on this machine: the kernel emits no cpu_frequency (%u seen)\n", count[k]);
                        continue;
                }
                expect(count[k] > 0, "no %s as its typed FtraceEvent field %u", typed_kinds[i].name, k);
        }
        expect(n_generic_typed == 0, "%u events that have typed Perfetto messages came out as GenericFtraceEvent:%s",
               n_generic_typed, generic_typed->str);
        expect(fork_ok, "no correct sched_process_fork for the child %d", h.child);
        expect(newtask_ok, "no correct task_newtask for the child %d", h.child);
        expect(wakeup_new_ok, "no correct sched_wakeup_new for the child %d", h.child);
        expect(rename_ok, "no correct task_rename of %d to \"tbrenamed\"", h.child);
        expect(enter_ok, "no sys_enter (id %d, getppid) of %d", nr_getppid, h.child);
        expect(exit_ok, "no correct sys_exit (getppid) of %d", h.child);
        expect(exec_ok, "no correct sched_process_exec of %s by %d", h.exec_path, h.child);
        expect(pexit_ok, "no correct sched_process_exit of %d", h.child);
        expect(free_ok, "no correct sched_process_free of %d", h.child);
        expect(switch_ok, "no sched_switch of the busy pid %d \"%s\"", busy.pid, busy.comm);
        expect(waking_ok, "no sched_waking of a known pid (sleeper %d, busy %d)", h.sleeper, busy.pid);
        expect(wakeup_ok, "no sched_wakeup of a known pid (sleeper %d, busy %d)", h.sleeper, busy.pid);
        expect(signal_ok, "no correct generic signal_generate (SIGUSR1 to %d)", h.sleeper);
        expect(sock_ok, "no correct generic inet_sock_set_state for port %u", h.port);
        expect(prepare_ok, "no correct generic sched_prepare_exec (__data_loc strings) of %d", h.child);
        for (guint m = 0; m < G_N_ELEMENTS(h.markers); m++)
                expect(marker_seen[m], "marker \"%s\" is not in the trace", h.markers[m].text);
        expect(idle_bad == 0, "%u cpu_idle events with a bad state or a cpu_id not their CPU", idle_bad);
        expect(freq_bad == 0, "%u cpu_frequency events with a bad state or cpu_id", freq_bad);
        expect(irq_bad == 0, "%u irq_handler events with missing or bad fields", irq_bad);
        expect(count[EV_IRQ_HANDLER_ENTRY] == 0 || irq_named > 0,
               "no irq_handler_entry whose name matches /proc/interrupts for its irq");
        expect(softirq_bad == 0, "%u softirq events with a vec outside 0..9", softirq_bad);
        g_free(h.test_comm);
        g_free(h.exec_path);
        verdict();
}

RECORDER_WRAP(test_event_names)
RECORDER_WRAP(test_all_events)
RECORDER_WRAP(test_typed_events)

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();
        RECORDER_CASE("01-event-names", test_event_names);
        RECORDER_CASE("01-all-events", test_all_events);
        RECORDER_CASE("01-typed-events", test_typed_events);
        return tb_test_run(TB_START_SERVICE);
}
