/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite: a trace written as chunks FILE.0,
 * FILE.1, ..., by time and by size, through the CLI's -o (Session.SetNextOutput and
 * Rotated) and into the service's trace directory (busctl). Each chunk is read alone
 * with the project's reader: its first packet is the clock snapshot, it has the system
 * info and the config, every sequence's first packet clears its incremental state, and
 * every thread its events show that is still alive is described (named, in its process)
 * in the same chunk. Markers written into the session's trace_marker while it records
 * are found exactly once over all the chunks; --keep and RotateKeep delete the oldest.
 */
#include <fcntl.h>
#include <gio/gunixfdlist.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cli-util.h"
#include "session-util.h"

#define MARKER_PREFIX "tb-rotate-"

typedef struct {
        bool first_is_clock, has_system_info, has_trace_config;
        GHashTable *described;   /* tids (and pids) the chunk's ProcessTrees name */
        GHashTable *event_pids;  /* tids its sched_switch and print events show */
        GHashTable *markers;     /* marker -> count */
        guint n_packets;
} Chunk;

static void chunk_clear(Chunk *c) {
        g_clear_pointer(&c->described, g_hash_table_unref);
        g_clear_pointer(&c->event_pids, g_hash_table_unref);
        g_clear_pointer(&c->markers, g_hash_table_unref);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Chunk, chunk_clear)

static void note_tree(Chunk *c, const Tracebus__ProcessTree *t) {
        for (size_t i = 0; i < t->n_processes; i++)
                if (t->processes[i]->n_cmdline > 0)
                        g_hash_table_add(c->described, GINT_TO_POINTER(t->processes[i]->pid));
        for (size_t i = 0; i < t->n_threads; i++)
                if (t->threads[i]->tgid > 0)
                        g_hash_table_add(c->described, GINT_TO_POINTER(t->threads[i]->tid));
}

static void note_bundle(Chunk *c, const Tracebus__FtraceEventBundle *b) {
        for (size_t i = 0; i < b->n_event; i++) {
                const Tracebus__FtraceEvent *e = b->event[i];

                if (e->print && e->print->buf && g_str_has_prefix(e->print->buf, MARKER_PREFIX)) {
                        char *m = g_strchomp(g_strdup(e->print->buf));
                        guint n = GPOINTER_TO_UINT(g_hash_table_lookup(c->markers, m));
                        g_hash_table_insert(c->markers, m, GUINT_TO_POINTER(n + 1));
                }
                if (e->sched_switch && e->sched_switch->next_pid > 0)
                        g_hash_table_add(c->event_pids, GINT_TO_POINTER(e->sched_switch->next_pid));
                if (e->print && e->pid > 0)
                        g_hash_table_add(c->event_pids, GINT_TO_POINTER((int) e->pid));
        }
        if (b->compact_sched)
                for (size_t i = 0; i < b->compact_sched->n_switch_next_pid; i++)
                        if (b->compact_sched->switch_next_pid[i] > 0)
                                g_hash_table_add(c->event_pids, GINT_TO_POINTER(b->compact_sched->switch_next_pid[i]));
}

static void on_packet(const Tracebus__TracePacket *p, const TraceRawPacket *raw, guint index, gpointer userdata) {
        Chunk *c = userdata;

        if (c->n_packets++ == 0)
                c->first_is_clock = p->clock_snapshot != NULL;
        c->has_system_info |= p->system_info != NULL;
        c->has_trace_config |= p->trace_config != NULL;
        if (p->process_tree)
                note_tree(c, p->process_tree);
        if (p->ftrace_events)
                note_bundle(c, p->ftrace_events);
}

static void read_chunk(const char *path, Chunk *c) {
        g_autoptr(GError) error = NULL;
        g_autofree char *data = NULL;
        g_auto(TbTraceSummary) s = { 0 };
        gsize len;

        c->described = g_hash_table_new(g_direct_hash, g_direct_equal);
        c->event_pids = g_hash_table_new(g_direct_hash, g_direct_equal);
        c->markers = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        g_assert_true(g_file_get_contents(path, &data, &len, &error));
        g_assert_true(tb_trace_foreach_packet((const guint8 *) data, len, on_packet, c, NULL, &error));
        g_assert_no_error(error);
        summarise(path, &s);
        note("%s: %" G_GSIZE_FORMAT " bytes, %u packets, %u described, %u event tids, %u markers\n", path, len,
             c->n_packets, g_hash_table_size(c->described), g_hash_table_size(c->event_pids),
             g_hash_table_size(c->markers));
        /* Loads alone: the clock first, the system, the config, fresh sequences. */
        g_assert_true(c->first_is_clock);
        g_assert_true(s.clock_is_boottime);
        g_assert_true(c->has_system_info);
        g_assert_true(c->has_trace_config);
        g_assert_true(s.all_have_sequence_id);
        if (!s.first_packets_flagged)
                g_error("%s: %s", path, s.first_problem);
}

/* Every thread the chunk's events show that is still alive is named in the chunk. */
static void assert_threads_described(const char *path, const Chunk *c) {
        GHashTableIter it;
        gpointer key;
        guint missing = 0;

        g_hash_table_iter_init(&it, c->event_pids);
        while (g_hash_table_iter_next(&it, &key, NULL)) {
                pid_t tid = GPOINTER_TO_INT(key);

                if (g_hash_table_contains(c->described, key) || kill(tid, 0) < 0)
                        continue;
                note("%s: thread %d is alive and in the events, but not described\n", path, (int) tid);
                missing++;
        }
        g_assert_cmpuint(missing, ==, 0);
}

/* ---- markers into the session's own trace_marker, from a thread ---- */

typedef struct {
        int fd;
        guint size;              /* bytes per marker */
        guint pause_us;
        gint64 until;            /* monotonic */
        guint n;                 /* written */
        pid_t tid;
} Writer;

static void *writer_main(void *userdata) {
        Writer *w = userdata;
        g_autofree char *pad = g_strnfill(w->size, 'x');

        w->tid = (pid_t) syscall(SYS_gettid);
        while (g_get_monotonic_time() < w->until) {
                g_autofree char *m = g_strdup_printf(MARKER_PREFIX "%u-%s", w->n, pad);
                if (write(w->fd, m, strlen(m)) != (ssize_t) strlen(m))
                        g_error("trace_marker: %s", g_strerror(errno));
                w->n++;
                g_usleep(w->pause_us);
        }
        return NULL;
}

static int marker_fd_of_only_session(const char *user) {
        g_auto(GStrv) own = sessions_of(tb_user_uid(user));
        g_autofree char *inst = NULL, *p = NULL;
        int fd;

        g_assert_cmpuint(g_strv_length(own), ==, 1);
        inst = instance_of(own[0]);
        p = g_build_filename(TB_INSTANCES_DIR, inst, "trace_marker", NULL);
        fd = open(p, O_WRONLY | O_CLOEXEC);
        g_assert_cmpint(fd, >=, 0);
        return fd;
}

/* The chunks base.0 .. base.N that exist, in order; *ret_first the first index. */
static GPtrArray *chunks_of(const char *base, guint *ret_first) {
        GPtrArray *l = g_ptr_array_new_with_free_func(g_free);
        bool started = false;

        for (guint i = 0; i < 1000; i++) {
                char *p = g_strdup_printf("%s.%u", base, i);

                if (!g_file_test(p, G_FILE_TEST_EXISTS)) {
                        g_free(p);
                        if (started)
                                break;
                        continue;
                }
                if (!started && ret_first)
                        *ret_first = i;
                started = true;
                g_ptr_array_add(l, p);
        }
        return l;
}

/* Records with the CLI as tbuser, @extra its rotation options, markers written during
 * @marker_ms; checks every chunk and that each marker is in exactly one. */
static GPtrArray *record_with_markers(const char *dir_name, const char *const *extra, guint marker_size,
                                      guint pause_us, guint *ret_first) {
        g_autofree char *dir = make_user_dir("tbuser", dir_name);
        g_autofree char *base = g_build_filename(dir, "t.pftrace", NULL);
        g_autoptr(GPtrArray) argv = g_ptr_array_new();
        g_autoptr(GHashTable) all = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        CliProc p = { 0 };
        Writer w = { .size = marker_size, .pause_us = pause_us };
        pthread_t thread;
        GPtrArray *chunks;

        g_ptr_array_add(argv, (char *) "-t");
        g_ptr_array_add(argv, (char *) "6s");
        for (size_t i = 0; extra[i]; i++)
                g_ptr_array_add(argv, (char *) extra[i]);
        g_ptr_array_add(argv, (char *) "-o");
        g_ptr_array_add(argv, base);
        g_ptr_array_add(argv, (char *) "sched/sched_switch");
        g_ptr_array_add(argv, (char *) "ftrace/print");
        g_ptr_array_add(argv, NULL);
        cli_spawn("tbuser", (const char *const *) argv->pdata, -1, &p);
        g_assert_true(cli_proc_expect(&p, "Recording into", 30000));

        w.fd = marker_fd_of_only_session("tbuser");
        w.until = g_get_monotonic_time() + 4500 * 1000;
        g_assert_cmpint(pthread_create(&thread, NULL, writer_main, &w), ==, 0);
        g_assert_cmpint(pthread_join(thread, NULL), ==, 0);
        close(w.fd);
        g_assert_cmpint(cli_proc_wait(&p, 60000), ==, 0);
        note("%u markers written by thread %d\n%s\n", w.n, (int) w.tid, p.err->str);
        cli_proc_clear(&p);

        chunks = chunks_of(base, ret_first);
        for (guint i = 0; i < chunks->len; i++) {
                g_auto(Chunk) c = { 0 };
                GHashTableIter it;
                gpointer key, value;

                read_chunk(chunks->pdata[i], &c);
                assert_threads_described(chunks->pdata[i], &c);
                /* The marker thread, alive while its chunks were written, is named in each. */
                if (g_hash_table_size(c.markers) > 0)
                        g_assert_true(g_hash_table_contains(c.described, GINT_TO_POINTER(w.tid)));
                g_hash_table_iter_init(&it, c.markers);
                while (g_hash_table_iter_next(&it, &key, &value)) {
                        guint n = GPOINTER_TO_UINT(g_hash_table_lookup(all, key));
                        g_hash_table_insert(all, g_strdup(key), GUINT_TO_POINTER(n + GPOINTER_TO_UINT(value)));
                }
        }
        if (!ret_first || *ret_first == 0) {
                /* Every marker written, each in exactly one chunk. */
                for (guint i = 0; i < w.n; i++) {
                        g_autofree char *pad = g_strnfill(w.size, 'x');
                        g_autofree char *m = g_strdup_printf(MARKER_PREFIX "%u-%s", i, pad);
                        guint n = GPOINTER_TO_UINT(g_hash_table_lookup(all, m));
                        if (n != 1)
                                g_error("marker %u is in %u chunks", i, n);
                }
                g_assert_cmpuint(g_hash_table_size(all), ==, w.n);
        }
        return chunks;
}

static void test_cli_every(void) {
        const char *const extra[] = { "--rotate-every", "1s", NULL };
        g_autoptr(GPtrArray) chunks = record_with_markers("rot-every", extra, 16, 1000, NULL);

        /* 6 s in chunks of a second (and a little more: cut between passes). */
        g_assert_cmpuint(chunks->len, >=, 4);
        g_assert_cmpuint(chunks->len, <=, 8);
}

static void test_cli_size(void) {
        const char *const extra[] = { "--rotate-size", "1mb", NULL };
        g_autoptr(GPtrArray) chunks = record_with_markers("rot-size", extra, 1000, 400, NULL);

        g_assert_cmpuint(chunks->len, >=, 2);
        /* A chunk ends once it holds the size: all but the last hold at least that. */
        for (guint i = 0; i + 1 < chunks->len; i++)
                g_assert_cmpint(file_size(chunks->pdata[i]), >=, 1024 * 1024);
}

static void test_cli_keep(void) {
        const char *const extra[] = { "--rotate-every", "1s", "--keep", "2", NULL };
        guint first = 0;
        g_autoptr(GPtrArray) chunks = record_with_markers("rot-keep", extra, 16, 1000, &first);

        g_assert_cmpuint(chunks->len, ==, 2);
        g_assert_cmpuint(first, >=, 2);
}

static void test_bad_options(void) {
        static const char *const bad[][4] = {
                { "--rotate-every", "10ms", NULL },
                { "--rotate-size", "1kb", NULL },
                { "--keep", "2", NULL },
                { "--rotate-every", "1s", "--keep", "0" },
        };
        g_autofree char *dir = make_user_dir("tbuser", "rot-bad");
        g_autofree char *out = g_build_filename(dir, "t.pftrace", NULL);
        g_autofree char *ring = config_text(5000);
        const char *const ring_start[] = { "busctl", "--system", "call", TB_BUS_NAME, TB_MANAGER_PATH,
                                           TB_MANAGER_INTERFACE, "Start", "sa{sv}", ring, "1",
                                           "RotateEveryMs", "t", "1000", NULL };
        g_autofree char *stream = g_strconcat(ring, "write_into_file: true\n", NULL);
        const char *const short_start[] = { "busctl", "--system", "call", TB_BUS_NAME, TB_MANAGER_PATH,
                                            TB_MANAGER_INTERFACE, "Start", "sa{sv}", stream, "2",
                                            "RotateEveryMs", "t", "10", "RotateKeep", "u", "3", NULL };
        g_auto(TbCommandResult) r1 = { 0 }, r2 = { 0 }, r3 = { 0 };
        g_auto(GStrv) left = NULL;

        for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
                g_auto(TbCommandResult) res = { 0 };

                run_cli("tbuser", &res, bad[i][0], bad[i][1], bad[i][2] ?: "-o", bad[i][3] ?: out, "-o", out,
                        "sched/sched_switch", NULL);
                assert_exit(&res, 1);
                assert_one_line(&res);
        }
        run_cli("tbuser", &r1, "--rotate-every", "1s", "--detach=rot", "sched/sched_switch", NULL);
        assert_exit(&r1, 1);
        assert_stderr_has(&r1, "Cannot rotate with --detach");

        /* The service's own checks, named: a ring config, a period under a second. */
        g_assert_true(tb_run_as_user("tbuser", ring_start, &r2, NULL));
        log_command("Start with a ring config", &r2);
        g_assert_nonnull(strstr(r2.err, "rotation needs write_into_file"));
        g_assert_true(tb_run_as_user("tbuser", short_start, &r3, NULL));
        log_command("Start with RotateEveryMs 10", &r3);
        g_assert_nonnull(strstr(r3.err, "RotateEveryMs must be"));
        left = sessions_of(tb_user_uid("tbuser"));
        g_assert_cmpuint(g_strv_length(left), ==, 0);
}

/* Into the trace directory: OutputPath is NAME.0, the service writes NAME.1, ... and
 * keeps the newest RotateKeep. */
static void test_trace_dir(void) {
        g_autofree char *text = g_strconcat("write_into_file: true\nfile_write_period_ms: 500\n", NULL);
        g_autofree char *config = NULL, *output = NULL, *base = NULL;
        g_auto(TbCommandResult) start = { 0 };
        g_auto(GStrv) tok = NULL;
        g_autoptr(GPtrArray) chunks = NULL;
        guint first = 0;

        {
                g_autofree char *c = config_text(4500);
                config = g_strconcat(c, text, NULL);
        }
        const char *const argv[] = { "busctl", "--system", "call", TB_BUS_NAME, TB_MANAGER_PATH,
                                     TB_MANAGER_INTERFACE, "Start", "sa{sv}", config, "2",
                                     "RotateEveryMs", "t", "1000", "RotateKeep", "u", "2", NULL };
        g_assert_true(tb_run_as_user("tbuser", argv, &start, NULL));
        log_command("busctl Start with RotateEveryMs and RotateKeep", &start);
        tok = busctl_tokens(start.out);
        g_assert_cmpuint(g_strv_length(tok), >=, 2);
        output = string_property(tok[1], "OutputPath");
        g_assert_true(g_str_has_suffix(output, ".0"));
        base = g_strndup(output, strlen(output) - 2);
        wait_over(tok[1], 30000);

        chunks = chunks_of(base, &first);
        g_assert_cmpuint(chunks->len, ==, 2);
        g_assert_cmpuint(first, >=, 2);
        for (guint i = 0; i < chunks->len; i++) {
                g_auto(Chunk) c = { 0 };

                assert_service_file(chunks->pdata[i], tb_user_uid("tbuser"));
                read_chunk(chunks->pdata[i], &c);
                assert_threads_described(chunks->pdata[i], &c);
        }
}

static char **strv_prop(const char *path, const char *name) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GVariant) v = tb_get_property(tb_bus()->conn, path, TB_SESSION_IFACE, name, &error);

        g_assert_no_error(error);
        return g_variant_dup_strv(v, NULL);
}

/* Calls @method on @path as root with @fd as the message's fd 0; the reply, or NULL and
 * *error. */
static GVariant *root_call_fd(const char *path, const char *iface, const char *method, GVariant *args, int fd,
                              GError **error) {
        g_autoptr(GUnixFDList) fds = g_unix_fd_list_new();

        g_assert_cmpint(g_unix_fd_list_append(fds, fd, NULL), ==, 0);
        return g_dbus_connection_call_with_unix_fd_list_sync(tb_bus()->conn, TB_BUS_NAME, path, iface, method, args,
                                                             NULL, G_DBUS_CALL_FLAGS_NONE, 30000, fds, NULL, NULL,
                                                             error);
}

/* Root's session into @fd, rotating every @every_ms (0: not; else RotateKeep 3), detached
 * under @key. */
static char *root_start(const char *config, int fd, guint64 every_ms, const char *key) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GVariant) reply = NULL;
        GVariantBuilder b;
        const char *path;

        g_variant_builder_init(&b, G_VARIANT_TYPE("a{sv}"));
        g_variant_builder_add(&b, "{sv}", "Output", g_variant_new_handle(0));
        g_variant_builder_add(&b, "{sv}", "DetachKey", g_variant_new_string(key));
        if (every_ms > 0) {
                g_variant_builder_add(&b, "{sv}", "RotateEveryMs", g_variant_new_uint64(every_ms));
                g_variant_builder_add(&b, "{sv}", "RotateKeep", g_variant_new_uint32(3));
        }
        reply = root_call_fd(TB_MANAGER_PATH, TB_MANAGER_IFACE, "Start", g_variant_new("(sa{sv})", config, &b), fd,
                             &error);
        g_assert_no_error(error);
        g_variant_get_child(reply, 0, "&o", &path);
        return g_strdup(path);
}

static char *set_next_error(const char *path, int fd) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GVariant) reply = root_call_fd(path, TB_SESSION_IFACE, "SetNextOutput", g_variant_new("(h)", 0), fd,
                                                 &error);

        return error ? g_dbus_error_get_remote_error(error) : NULL;
}

/* With an Output fd and no SetNextOutput, a due rotation does not happen: the chunk goes
 * on, with a warning. SetNextOutput of a session that does not rotate is InvalidRotation;
 * of another user's session (root sees it), NoSuchSession. */
static void test_no_next_output(void) {
        g_autofree char *dir = make_user_dir("tbuser", "rot-nonext");
        g_autofree char *out = g_build_filename(dir, "t.pftrace", NULL), *out2 = g_build_filename(dir, "u.pftrace", NULL);
        g_autofree char *text = config_text(60000);
        g_autofree char *config = g_strconcat(text, "write_into_file: true\n", NULL);
        g_autofree char *path = NULL, *plain = NULL, *joined = NULL, *e1 = NULL, *e2 = NULL;
        g_auto(GStrv) warnings = NULL, tok = NULL;
        g_auto(TbCommandResult) start = { 0 };
        g_auto(Chunk) c = { 0 };
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        int fd2 = open(out2, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        g_autofree char *spare = g_build_filename(dir, "spare", NULL);
        int null = open(spare, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        const char *const argv[] = { "busctl", "--system", "call", TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_IFACE,
                                     "Start", "sa{sv}", config, "0", NULL };

        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(fd2, >=, 0);
        path = root_start(config, fd, 1000, "rot-nonext");
        plain = root_start(config, fd2, 0, "rot-plain");
        g_assert_true(tb_run_as_user("tbuser", argv, &start, NULL));
        tok = busctl_tokens(start.out);
        g_assert_cmpuint(g_strv_length(tok), >=, 2);
        tb_sleep_scaled(2500);

        warnings = strv_prop(path, "Warnings");
        joined = g_strjoinv("|", warnings);
        note("Warnings: %s\n", joined);
        g_assert_nonnull(strstr(joined, "chunk 1 has no output"));
        /* RotateKeep with fds: the service deletes none of the caller's files, and says so. */
        g_assert_nonnull(strstr(joined, "it deletes none"));

        e1 = set_next_error(plain, null);
        g_assert_cmpstr(e1, ==, TB_ERROR_INVALID_ROTATION);
        e2 = set_next_error(tok[1], null);
        g_assert_cmpstr(e2, ==, TB_ERROR_NO_SUCH_SESSION);

        root_stop(path);
        root_stop(plain);
        root_stop(tok[1]);
        wait_over(path, 30000);
        /* One chunk, the whole trace, complete. */
        read_chunk(out, &c);
        assert_file_complete(out);
        close(fd);
        close(fd2);
        close(null);
}

int main(int argc, char **argv) {
        if (!freopen("/dev/null", "r", stdin))
                return EXIT_FAILURE;
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();

        tb_test_add_isolated("/bus/rotate/bad-options", test_bad_options);
        tb_test_add_isolated("/bus/rotate/cli-every", test_cli_every);
        tb_test_add_isolated("/bus/rotate/cli-size", test_cli_size);
        tb_test_add_isolated("/bus/rotate/cli-keep", test_cli_keep);
        tb_test_add_isolated("/bus/rotate/trace-dir", test_trace_dir);
        tb_test_add_isolated("/bus/rotate/no-next-output", test_no_next_output);
        return tb_test_run(TB_START_SERVICE);
}
