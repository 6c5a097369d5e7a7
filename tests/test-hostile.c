/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite: hostile input and privacy. Every method gets bad input (wrong
 * signatures, unusable Output descriptors, absurd configs, duplicate and
 * over-long keys, floods) and must answer with a named error and leave the
 * service unchanged: no session, no tracefs instance, no file. Another user
 * must learn nothing of a session: not its path, key, properties or signals.
 *
 * Raw calls go through root's own GDBus connection (root is authorized by
 * polkit, so a refusal is the service's validation, not polkit's); the
 * per-user cases use the sd-bus test client of tb-client.h and busctl.
 */
#include <errno.h>
#include <pwd.h>
#include <fcntl.h>
#include <gio/gunixfdlist.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.pb-c.h"
#include "system-bus.h"
#include "tb-client.h"
#include "trace-file.h"

#define ERR_OUTPUT TB_ERROR_OUTPUT_ERROR
#define ERR_QUOTA TB_ERROR_QUOTA_EXCEEDED
#define ERR_UNKNOWN_METHOD "org.freedesktop.DBus.Error.UnknownMethod"

/* ===================================================================== */
/* Helpers                                                                */
/* ===================================================================== */

/* Calls method on root's connection; the D-Bus error name, or NULL on success
 * (then the reply in ret_reply, when given). */
static char *call_full(const char *path, const char *iface, const char *method, GVariant *params,
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

static char *manager_call(const char *method, GVariant *params, GUnixFDList *fds) {
        g_autoptr(GVariant) reply = NULL;
        char *err = call_full(TB_MANAGER_PATH, TB_MANAGER_IFACE, method, params, fds, &reply, NULL);

        /* A Start that should have failed but did not: stop it, and fail below. */
        if (!err && g_str_equal(method, "Start") && g_variant_is_of_type(reply, G_VARIANT_TYPE("(o)"))) {
                const char *path;
                g_variant_get(reply, "(&o)", &path);
                note("Start unexpectedly returned %s; stopping it\n", path);
                g_free(call_full(TB_MANAGER_PATH, TB_MANAGER_IFACE, "Stop", g_variant_new("(o)", path), NULL, NULL,
                                 NULL));
        }
        return err;
}

/* The session ended (or is gone) and no instance of this service is left for it. */
static void wait_over(const char *path, guint timeout_ms) {
        const char *id = strrchr(path, '/') + 1;
        g_autofree char *name = g_strdup_printf("tracebus-%d-%s", (int) tb_bus()->service_pid, id);
        char *names[] = { name, NULL };
        g_autoptr(GError) error = NULL;

        if (!tb_wait_session_over(tb_bus()->conn, path, names, timeout_ms, &error))
                g_error("%s", error->message);
}

static GVariant *options_with(const char *key, GVariant *value) {
        GVariantBuilder b;

        g_variant_builder_init(&b, G_VARIANT_TYPE("a{sv}"));
        if (key)
                g_variant_builder_add(&b, "{sv}", key, value);
        return g_variant_builder_end(&b);
}

static GVariant *events_option(const char *const *events) {
        return g_variant_new_strv(events, -1);
}

/* Start("", {Events: sched_switch, DurationMs: 1000, key: value}) with fds. */
static char *start_events_with(const char *key, GVariant *value, GUnixFDList *fds) {
        GVariantBuilder b;

        g_variant_builder_init(&b, G_VARIANT_TYPE("a{sv}"));
        g_variant_builder_add(&b, "{sv}", "Events", events_option(sched_events));
        g_variant_builder_add(&b, "{sv}", "DurationMs", g_variant_new_uint32(1000));
        if (key)
                g_variant_builder_add(&b, "{sv}", key, value);
        return manager_call("Start", g_variant_new("(s@a{sv})", "", g_variant_builder_end(&b)), fds);
}

static char *start_text(const char *config) {
        return manager_call("Start", g_variant_new("(s@a{sv})", config, options_with(NULL, NULL)), NULL);
}

static guint n_sessions_root(void) {
        g_autoptr(GVariant) reply = NULL;
        g_autofree char *err = call_full(TB_MANAGER_PATH, TB_MANAGER_IFACE, "ListSessions", NULL, NULL, &reply, NULL);
        g_autoptr(GVariant) list = NULL;

        g_assert_null(err);
        list = g_variant_get_child_value(reply, 0);
        return (guint) g_variant_n_children(list);
}

/* The service runs, holds its name, has no session, and nothing new exists. */
static void assert_unchanged(char **inst, char **files) {
        g_autoptr(GError) error = NULL;

        assert_nothing_created(inst, files);
        g_assert_true(tb_pid_alive(tb_bus()->service_pid));
        g_assert_true(tb_wait_for_name(tb_bus()->conn, TB_BUS_NAME, 0, 1000, &error));
        g_assert_no_error(error);
        g_assert_cmpuint(n_sessions_root(), ==, 0);
}

static void expect_err(const char *what, char *err, const char *want) {
        g_autofree char *e = err;

        note("%s -> %s\n", what, e ? e : "(success)");
        g_assert_cmpstr(e, ==, want);
}

static GUnixFDList *fd_list_of(int fd) {
        g_autoptr(GError) error = NULL;
        GUnixFDList *l = g_unix_fd_list_new();

        g_assert_cmpint(g_unix_fd_list_append(l, fd, &error), ==, 0);
        g_assert_no_error(error);
        return l;
}

static char *start_with_fd(int fd) {
        g_autoptr(GUnixFDList) l = fd_list_of(fd);
        return start_events_with("Output", g_variant_new_handle(0), l);
}

/* ===================================================================== */
/* 3. Bad input                                                           */
/* ===================================================================== */

/* Every method with arguments of the wrong types, too many or too few:
 * InvalidArgs from the vtable, before any handler runs. */
static void case_wrong_signatures(void) {
        g_auto(GStrv) inst = NULL, files = NULL;
        const struct {
                const char *path, *iface, *method;
                const char *params; /* GVariant text, NULL: no arguments */
        } calls[] = {
                { TB_MANAGER_PATH, TB_MANAGER_IFACE, "Start", NULL },
                { TB_MANAGER_PATH, TB_MANAGER_IFACE, "Start", "('',)" },
                { TB_MANAGER_PATH, TB_MANAGER_IFACE, "Start", "(1, @a{sv} {})" },
                { TB_MANAGER_PATH, TB_MANAGER_IFACE, "Start", "('', @a{ss} {})" },
                { TB_MANAGER_PATH, TB_MANAGER_IFACE, "Start", "('', @a{sv} {}, 'extra')" },
                { TB_MANAGER_PATH, TB_MANAGER_IFACE, "Stop", "('/org/tracebus/Tracebus1/session/1',)" },
                { TB_MANAGER_PATH, TB_MANAGER_IFACE, "Stop", NULL },
                { TB_MANAGER_PATH, TB_MANAGER_IFACE, "Detach", "(@o '/', 1)" },
                { TB_MANAGER_PATH, TB_MANAGER_IFACE, "Attach", "(@u 7,)" },
                { TB_MANAGER_PATH, TB_MANAGER_IFACE, "IsDetached", NULL },
                { TB_MANAGER_PATH, TB_MANAGER_IFACE, "IsDetached", "(@as ['a'],)" },
                { TB_MANAGER_PATH, TB_MANAGER_IFACE, "ListSessions", "('x',)" },
                { TB_MANAGER_PATH, TB_MANAGER_IFACE, "ListEvents", "(@ay [1,2],)" },
        };

        snapshot_state(&inst, &files);
        for (size_t i = 0; i < G_N_ELEMENTS(calls); i++) {
                g_autoptr(GError) error = NULL;
                GVariant *params = NULL;
                g_autofree char *what = g_strdup_printf("%s%s", calls[i].method, calls[i].params ?: "()");

                if (calls[i].params) {
                        params = g_variant_parse(NULL, calls[i].params, NULL, NULL, &error);
                        g_assert_no_error(error);
                }
                expect_err(what, call_full(calls[i].path, calls[i].iface, calls[i].method, params, NULL, NULL, NULL),
                           ERR_INVALID_ARGS);
        }
        /* A method that does not exist, and the Session interface on no session. */
        expect_err("Manager.Frobnicate", call_full(TB_MANAGER_PATH, TB_MANAGER_IFACE, "Frobnicate", NULL, NULL, NULL, NULL),
                   ERR_UNKNOWN_METHOD);
        assert_unchanged(inst, files);
}

/* The same through busctl, as a user without the record right: the vtable
 * answers before polkit is asked. */
static void case_wrong_signatures_busctl(void) {
        g_auto(GStrv) inst = NULL, files = NULL;
        const char *const lines[][8] = {
                { "Start", "s", "hello", NULL },
                { "Start", "ii", "1", "2", NULL },
                { "Stop", "s", TB_SESSION_PATH_PREFIX "/1", NULL },
                { "Attach", "u", "1", NULL },
                { "ListEvents", "u", "1", NULL },
        };

        snapshot_state(&inst, &files);
        for (size_t i = 0; i < G_N_ELEMENTS(lines); i++) {
                g_autoptr(GPtrArray) argv = g_ptr_array_new();
                g_auto(TbCommandResult) res = { 0 };
                g_autoptr(GError) error = NULL;

                g_ptr_array_add(argv, (char *) "busctl");
                g_ptr_array_add(argv, (char *) "call");
                g_ptr_array_add(argv, (char *) TB_BUS_NAME);
                g_ptr_array_add(argv, (char *) TB_MANAGER_PATH);
                g_ptr_array_add(argv, (char *) TB_MANAGER_IFACE);
                for (size_t j = 0; lines[i][j]; j++)
                        g_ptr_array_add(argv, (char *) lines[i][j]);
                g_ptr_array_add(argv, NULL);
                g_assert_true(tb_run_as_user("tbother", (const char *const *) argv->pdata, &res, &error));
                log_command("busctl as tbother", &res);
                g_assert_false(tb_command_succeeded(&res));
                /* busctl prints the error message; sd-bus's for a bad signature. */
                g_assert_true(strstr(res.err, "nvalid") || strstr(res.err, "signature"));
        }
        assert_unchanged(inst, files);
}

/* Output: read-only, non-regular, O_PATH, an index beyond the passed fds, a
 * variant that is no fd. */
static void case_bad_output_fds(void) {
        g_auto(GStrv) inst = NULL, files = NULL;
        g_autofree char *ro_path = NULL;
        int fd, p[2];

        snapshot_state(&inst, &files);

        fd = open_output("readonly.pftrace", &ro_path);
        close(fd);
        fd = open(ro_path, O_RDONLY | O_CLOEXEC);
        g_assert_cmpint(fd, >=, 0);
        expect_err("Output read-only file", start_with_fd(fd), ERR_INVALID_ARGS);
        close(fd);

        fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
        expect_err("Output /dev/null (character device)", start_with_fd(fd), ERR_INVALID_ARGS);
        close(fd);

        fd = open(tb_bus()->tmpdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        expect_err("Output directory", start_with_fd(fd), ERR_INVALID_ARGS);
        close(fd);

        fd = open(ro_path, O_PATH | O_CLOEXEC);
        expect_err("Output O_PATH", start_with_fd(fd), ERR_INVALID_ARGS);
        close(fd);

        /* The read end of a pipe is not for writing. */
        g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
        expect_err("Output pipe read end", start_with_fd(p[0]), ERR_INVALID_ARGS);
        close(p[0]);
        close(p[1]);

        /* A handle that points past the passed fds (none passed, or one passed). */
        expect_err("Output h 0 without fds", start_events_with("Output", g_variant_new_handle(0), NULL),
                   ERR_INVALID_ARGS);
        {
                g_autoptr(GUnixFDList) l = NULL;
                fd = open(ro_path, O_WRONLY | O_CLOEXEC);
                l = fd_list_of(fd);
                close(fd);
                expect_err("Output h 5 with one fd", start_events_with("Output", g_variant_new_handle(5), l),
                           ERR_INVALID_ARGS);
        }

        /* Variants that hold no fd. */
        expect_err("Output as s", start_events_with("Output", g_variant_new_string(ro_path), NULL), ERR_INVALID_ARGS);
        expect_err("Output as u", start_events_with("Output", g_variant_new_uint32(3), NULL), ERR_INVALID_ARGS);
        expect_err("Output as ah", start_events_with("Output", g_variant_new_array(G_VARIANT_TYPE_HANDLE, NULL, 0), NULL),
                   ERR_INVALID_ARGS);

        /* Every other option with the wrong type. */
        expect_err("Events as s", start_events_with("DurationMs", g_variant_new_string("1000"), NULL), ERR_INVALID_ARGS);
        expect_err("DetachKey as u", start_events_with("DetachKey", g_variant_new_uint32(1), NULL), ERR_INVALID_ARGS);
        expect_err("BufferSizeKb as t", start_events_with("BufferSizeKb", g_variant_new_uint64(1), NULL), ERR_INVALID_ARGS);
        expect_err("BinaryConfig as s",
                   manager_call("Start", g_variant_new("(s@a{sv})", "",
                                                       options_with("BinaryConfig", g_variant_new_string("x"))), NULL),
                   ERR_INVALID_ARGS);
        assert_unchanged(inst, files);
}

/* A pipe whose reader went away: accepted (a pipe is a fine output), the
 * writes fail with EPIPE, and the session ends with output-error; the
 * service survives (it ignores SIGPIPE). */
static void case_pipe_reader_gone(void) {
        g_auto(GStrv) inst = NULL, files = NULL;
        g_autoptr(GVariant) reply = NULL, stats = NULL;
        g_autoptr(GUnixFDList) l = NULL;
        g_autofree char *err = NULL, *state = NULL, *reason = NULL;
        const char *path;
        GVariantBuilder b;
        int p[2];

        snapshot_state(&inst, &files);
        g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
        close(p[0]);
        l = fd_list_of(p[1]);
        close(p[1]);
        g_variant_builder_init(&b, G_VARIANT_TYPE("a{sv}"));
        g_variant_builder_add(&b, "{sv}", "Events", events_option(sched_events));
        g_variant_builder_add(&b, "{sv}", "DurationMs", g_variant_new_uint32(20000));
        g_variant_builder_add(&b, "{sv}", "Output", g_variant_new_handle(0));
        err = call_full(TB_MANAGER_PATH, TB_MANAGER_IFACE, "Start", g_variant_new("(s@a{sv})", "", g_variant_builder_end(&b)),
                        l, &reply, NULL);
        if (err) {
                /* Refusing a pipe without a reader up front is as good. */
                note("Start into a pipe without reader -> %s\n", err);
                g_assert_cmpstr(err, ==, ERR_OUTPUT);
        } else {
                g_variant_get(reply, "(&o)", &path);
                note("Start into a pipe without reader -> %s\n", path);
                /* The session is bound to root's connection; it must end by itself. */
                for (int i = 0; i < 200; i++) {
                        g_autoptr(GError) error = NULL;
                        g_free(state);
                        state = tb_session_state(tb_bus()->conn, path, &error);
                        if (!state || g_str_equal(state, "ended"))
                                break;
                        g_usleep(50 * 1000);
                }
                note("its state: %s\n", state ? state : "(gone)");
                if (state && !g_str_equal(state, "ended")) {
                        g_autofree char *e = call_full(TB_MANAGER_PATH, TB_MANAGER_IFACE, "Stop",
                                                       g_variant_new("(o)", path), NULL, &stats, NULL);
                        if (!e && stats) {
                                g_autoptr(GVariant) asv = g_variant_get_child_value(stats, 0);
                                g_variant_lookup(asv, "Reason", "s", &reason);
                        }
                        note("Stop -> %s, reason %s\n", e ? e : "ok", reason ? reason : "?");
                        g_assert_cmpstr(reason, ==, "output-error");
                }
                g_assert_true(!state || g_str_equal(state, "ended"));
        }
        assert_unchanged(inst, files);
}

/* Configs: unknown fields, bad enums, absurd sizes, too many events, names
 * with path tricks and NUL, non-UTF-8, oversize text. */
static void case_bad_configs(void) {
        g_auto(GStrv) inst = NULL, files = NULL;
        const char *ftrace = "data_sources { config { name: \"linux.ftrace\" ftrace_config { ftrace_events: "
                             "\"sched/sched_switch\" } } }\n";
        const struct {
                const char *what, *text, *want;
        } texts[] = {
                { "unknown top-level field", "no_such_field: 1\n", ERR_INVALID_CONFIG },
                { "unknown nested field", "buffers { size_kb: 1024 colour: 3 }\n", ERR_INVALID_CONFIG },
                { "bad enum", "buffers { size_kb: 1024 fill_policy: SOMETIMES }\n", ERR_INVALID_CONFIG },
                { "enum as number out of range", "buffers { size_kb: 1024 fill_policy: 77 }\n", ERR_INVALID_CONFIG },
                { "size_kb 2^32", "buffers { size_kb: 4294967296 }\n", ERR_INVALID_CONFIG },
                { "size_kb 2^32-1", "buffers { size_kb: 4294967295 }\n", ERR_INVALID_CONFIG },
                { "size_kb negative", "buffers { size_kb: -1 }\n", ERR_INVALID_CONFIG },
                { "duration 2^32", "duration_ms: 4294967296\n", ERR_INVALID_CONFIG },
                { "duration over 7 days", "duration_ms: 604800001\n", ERR_INVALID_CONFIG },
                { "event ../", "data_sources { config { name: \"linux.ftrace\" ftrace_config { ftrace_events: "
                               "\"../../../etc/passwd\" } } }", ERR_INVALID_CONFIG },
                { "event sched/../x", "data_sources { config { name: \"linux.ftrace\" ftrace_config { ftrace_events: "
                                      "\"sched/../sched/sched_switch\" } } }", ERR_INVALID_CONFIG },
                { "event */*", "data_sources { config { name: \"linux.ftrace\" ftrace_config { ftrace_events: "
                               "\"*/*\" } } }", ERR_INVALID_CONFIG },
                { "event with NUL", "data_sources { config { name: \"linux.ftrace\" ftrace_config { ftrace_events: "
                                    "\"sched/sched_switch\\000x\" } } }", ERR_INVALID_CONFIG },
                { "event non-UTF-8", "data_sources { config { name: \"linux.ftrace\" ftrace_config { ftrace_events: "
                                     "\"sched/\\377\\376\" } } }", ERR_INVALID_CONFIG },
                { "output_path", "output_path: \"/etc/shadow\"\n", ERR_INVALID_CONFIG },
                { "compression_type out of range", "compression_type: 2\n", ERR_INVALID_CONFIG },
                { "unterminated", "buffers { size_kb: 1024\n", ERR_INVALID_CONFIG },
                { "deep nesting", "buffers { buffers { buffers { buffers { buffers { buffers { } } } } } }",
                  ERR_INVALID_CONFIG },
        };

        snapshot_state(&inst, &files);
        for (size_t i = 0; i < G_N_ELEMENTS(texts); i++) {
                g_autofree char *text = g_strconcat(texts[i].text, strstr(texts[i].text, "data_sources") ? "" : ftrace, NULL);
                expect_err(texts[i].what, start_text(text), texts[i].want);
        }

        /* Options: 0 and 2^32-1 KiB, 10,000 events, path tricks. */
        expect_err("BufferSizeKb 0", start_events_with("BufferSizeKb", g_variant_new_uint32(0), NULL), ERR_INVALID_CONFIG);
        expect_err("BufferSizeKb 2^32-1", start_events_with("BufferSizeKb", g_variant_new_uint32(G_MAXUINT32), NULL),
                   ERR_INVALID_CONFIG);
        expect_err("DurationMs 2^32-1", manager_call("Start", g_variant_new("(s@a{sv})", "",
                   options_with("DurationMs", g_variant_new_uint32(G_MAXUINT32))), NULL), ERR_INVALID_CONFIG);
        {
                g_autoptr(GPtrArray) many = g_ptr_array_new_with_free_func(g_free);
                for (int i = 0; i < 10000; i++)
                        g_ptr_array_add(many, g_strdup_printf("sched/sched_switch_%d", i));
                g_ptr_array_add(many, NULL);
                expect_err("10,000 events", manager_call("Start", g_variant_new("(s@a{sv})", "",
                           options_with("Events", events_option((const char *const *) many->pdata))), NULL),
                           ERR_INVALID_CONFIG);
        }
        {
                const char *const *tricks[] = {
                        (const char *const[]) { "../../etc/passwd", NULL },
                        (const char *const[]) { "sched/../../../../etc", NULL },
                        (const char *const[]) { "*", NULL },
                        (const char *const[]) { "*/*", NULL },
                        (const char *const[]) { "sched/", NULL },
                        (const char *const[]) { "/sched_switch", NULL },
                        (const char *const[]) { "", NULL },
                        (const char *const[]) { NULL },
                };
                for (size_t i = 0; i < G_N_ELEMENTS(tricks); i++) {
                        g_autofree char *what = g_strdup_printf("Events [%s]", tricks[i][0] ?: "");
                        g_autofree char *e = manager_call("Start", g_variant_new("(s@a{sv})", "",
                                             options_with("Events", events_option(tricks[i]))), NULL);
                        note("%s -> %s\n", what, e ? e : "(success)");
                        g_assert_true(g_strcmp0(e, ERR_INVALID_CONFIG) == 0 || g_strcmp0(e, ERR_UNKNOWN_EVENT) == 0);
                }
        }
        /* A text config over 1 MiB, and a binary one. */
        {
                g_autofree char *big = g_strnfill(1024 * 1024 + 16, ' ');
                g_autofree guint8 *bin = g_malloc0(1024 * 1024 + 16);
                expect_err("1 MiB text", start_text(big), ERR_INVALID_CONFIG);
                expect_err("1 MiB binary", manager_call("Start", g_variant_new("(s@a{sv})", "",
                           options_with("BinaryConfig", g_variant_new_fixed_array(G_VARIANT_TYPE_BYTE, bin,
                                                                                   1024 * 1024 + 16, 1))), NULL),
                           ERR_INVALID_CONFIG);
                /* Garbage protobuf: a field with a length past the end. */
                static const guint8 junk[] = { 0x12, 0xff, 0xff, 0xff, 0x0f, 0x01 };
                expect_err("binary junk", manager_call("Start", g_variant_new("(s@a{sv})", "",
                           options_with("BinaryConfig", g_variant_new_fixed_array(G_VARIANT_TYPE_BYTE, junk,
                                                                                   sizeof(junk), 1))), NULL),
                           ERR_INVALID_CONFIG);
        }
        /* compression_type 2 in a binary config, which protobuf-c takes as it is: named,
         * not taken for DEFLATE or ignored. */
        {
                Tracebus__TraceConfig tc = TRACEBUS__TRACE_CONFIG__INIT;
                Tracebus__TraceConfig__DataSource ds = TRACEBUS__TRACE_CONFIG__DATA_SOURCE__INIT;
                Tracebus__DataSourceConfig dsc = TRACEBUS__DATA_SOURCE_CONFIG__INIT;
                Tracebus__FtraceConfig fc = TRACEBUS__FTRACE_CONFIG__INIT;
                Tracebus__TraceConfig__DataSource *dss[] = { &ds };
                char *ev[] = { (char *) "sched/sched_switch" };
                g_autofree char *message = NULL, *name = NULL;
                g_autofree guint8 *bin = NULL;
                gsize len;

                fc.n_ftrace_events = 1;
                fc.ftrace_events = ev;
                dsc.name = (char *) "linux.ftrace";
                dsc.ftrace_config = &fc;
                ds.config = &dsc;
                tc.n_data_sources = 1;
                tc.data_sources = dss;
                tc.has_compression_type = true;
                tc.compression_type = 2;
                bin = g_malloc(tracebus__trace_config__get_packed_size(&tc));
                len = tracebus__trace_config__pack(&tc, bin);
                name = call_full(TB_MANAGER_PATH, TB_MANAGER_IFACE, "Start", g_variant_new("(s@a{sv})", "",
                                 options_with("BinaryConfig", g_variant_new_fixed_array(G_VARIANT_TYPE_BYTE, bin, len, 1))),
                                 NULL, NULL, &message);
                note("binary compression_type 2 -> %s: %s\n", name, message);
                g_assert_cmpstr(name, ==, ERR_INVALID_CONFIG);
                g_assert_nonnull(strstr(message, "compression_type 2 is not supported"));
        }
        /* Two ways at once. */
        expect_err("text and Events", manager_call("Start", g_variant_new("(s@a{sv})", "duration_ms: 10",
                   options_with("Events", events_option(sched_events))), NULL), ERR_INVALID_ARGS);
        assert_unchanged(inst, files);
}

/* Option keys: unknown, over-long, duplicated; detach keys: over-long,
 * non-printable, empty. Duplicates are refused (each option once). */
static void case_bad_keys(void) {
        g_auto(GStrv) inst = NULL, files = NULL;
        g_autofree char *long_name = g_strnfill(100000, 'K');
        g_autofree char *long_key = g_strnfill(65, 'k');
        GVariantBuilder b;

        snapshot_state(&inst, &files);
        expect_err("unknown option", start_events_with("Colour", g_variant_new_string("red"), NULL), ERR_INVALID_ARGS);
        expect_err("100,000-character option name", start_events_with(long_name, g_variant_new_string("x"), NULL),
                   ERR_INVALID_ARGS);
        {
                /* 63 ASCII bytes and a 2-byte character: the error's %.64s would cut it in half. */
                g_autofree char *cut = g_strconcat(long_key + 2, "\xc3\xa9", NULL);
                expect_err("option name cut inside a UTF-8 character", start_events_with(cut, g_variant_new_string("x"), NULL),
                           ERR_INVALID_ARGS);
        }
        expect_err("65-character DetachKey", start_events_with("DetachKey", g_variant_new_string(long_key), NULL),
                   ERR_INVALID_ARGS);
        expect_err("empty DetachKey", start_events_with("DetachKey", g_variant_new_string(""), NULL), ERR_INVALID_ARGS);
        expect_err("DetachKey with a tab", start_events_with("DetachKey", g_variant_new_string("a\tb"), NULL),
                   ERR_INVALID_ARGS);
        expect_err("DetachKey non-ASCII", start_events_with("DetachKey", g_variant_new_string("cl\xc3\xa9"), NULL),
                   ERR_INVALID_ARGS);
        expect_err("IsDetached 65 chars", manager_call("IsDetached", g_variant_new("(s)", long_key), NULL),
                   ERR_INVALID_ARGS);
        expect_err("Attach empty", manager_call("Attach", g_variant_new("(s)", ""), NULL), ERR_INVALID_ARGS);

        /* Duplicate options. */
        {
                const char *keys[] = { "Events", "DurationMs", "DetachKey", "BufferSizeKb" };
                for (size_t i = 0; i < G_N_ELEMENTS(keys); i++) {
                        g_autofree char *what = g_strdup_printf("%s twice", keys[i]);
                        g_variant_builder_init(&b, G_VARIANT_TYPE("a{sv}"));
                        g_variant_builder_add(&b, "{sv}", "Events", events_option(sched_events));
                        if (g_str_equal(keys[i], "DurationMs") || g_str_equal(keys[i], "Events"))
                                g_variant_builder_add(&b, "{sv}", "DurationMs", g_variant_new_uint32(1000));
                        if (g_str_equal(keys[i], "Events"))
                                g_variant_builder_add(&b, "{sv}", "Events", events_option(sched_events));
                        else if (g_str_equal(keys[i], "DetachKey")) {
                                g_variant_builder_add(&b, "{sv}", "DetachKey", g_variant_new_string("one"));
                                g_variant_builder_add(&b, "{sv}", "DetachKey", g_variant_new_string("two"));
                        } else {
                                g_variant_builder_add(&b, "{sv}", keys[i], g_variant_new_uint32(1000));
                                g_variant_builder_add(&b, "{sv}", keys[i], g_variant_new_uint32(2000));
                        }
                        expect_err(what, manager_call("Start", g_variant_new("(s@a{sv})", "", g_variant_builder_end(&b)),
                                                      NULL),
                                   ERR_INVALID_ARGS);
                }
        }
        /* Duplicate fields in a text config where the field is not repeated. */
        expect_err("duration_ms twice", start_text("duration_ms: 10 duration_ms: 20 data_sources { config { name: "
                                                   "\"linux.ftrace\" ftrace_config { ftrace_events: \"sched/sched_switch\" } } }"),
                   ERR_INVALID_CONFIG);
        assert_unchanged(inst, files);
}

/* Stop, Detach, Attach on paths and keys that are not sessions. */
static void case_no_such_session(void) {
        g_auto(GStrv) inst = NULL, files = NULL;
        const char *paths[] = { TB_SESSION_PATH_PREFIX "/0", TB_SESSION_PATH_PREFIX "/99999999999999999999",
                                TB_SESSION_PATH_PREFIX "/_1", TB_SESSION_PATH_PREFIX "/1a",
                                TB_MANAGER_PATH, "/" };

        snapshot_state(&inst, &files);
        for (size_t i = 0; i < G_N_ELEMENTS(paths); i++) {
                g_autofree char *w1 = g_strdup_printf("Stop(%s)", paths[i]);
                g_autofree char *w2 = g_strdup_printf("Detach(%s)", paths[i]);
                expect_err(w1, manager_call("Stop", g_variant_new("(o)", paths[i]), NULL), ERR_NO_SUCH_SESSION);
                expect_err(w2, manager_call("Detach", g_variant_new("(os)", paths[i], "k"), NULL), ERR_NO_SUCH_SESSION);
        }
        expect_err("Attach(nobody)", manager_call("Attach", g_variant_new("(s)", "nobody-has-this"), NULL),
                   ERR_NO_SUCH_SESSION);
        /* Session.Stop on an object that is no session. */
        {
                g_autofree char *e = call_full(TB_SESSION_PATH_PREFIX "/424242", TB_SESSION_IFACE, "Stop", NULL,
                                               NULL, NULL, NULL);
                note("Session.Stop on no session -> %s\n", e);
                g_assert_true(g_strcmp0(e, ERR_UNKNOWN_OBJECT) == 0 || g_strcmp0(e, ERR_UNKNOWN_METHOD) == 0);
        }
        assert_unchanged(inst, files);
}

/* The owner of traces/<uid>/ plants symlinks and hard links under the next
 * names, and fills the quota: nothing planted is followed or written, and
 * a full quota is QuotaExceeded. */
static void case_trace_dir_plants(void) {
        g_auto(TbUser) user = { 0 };
        g_autoptr(GError) error = NULL;
        g_autofree char *tdir = traces_dir();
        g_autofree char *udir = NULL, *target = NULL, *stats = NULL, *err = NULL;
        g_autofree char *victim = g_build_filename(tb_bus()->tmpdir, "victim", NULL);
        g_autofree char *victim_link_target = g_build_filename(tb_bus()->tmpdir, "root-only", NULL);
        ClientSpec spec = { .user = "tbuser", .op = OP_START, .events = sched_events, .duration_ms = 300,
                            .output_fd = -1 };
        g_autofree char *path = NULL;
        struct stat st;

        g_assert_true(tb_user_lookup("tbuser", &user, &error));
        /* Make sure the user's directory exists: one ordinary session. */
        err = client_run(&spec, &path);
        g_assert_null(err);
        wait_over(path, 10000);
        udir = g_strdup_printf("%s/%u", tdir, (unsigned) user.uid);
        g_assert_cmpint(stat(udir, &st), ==, 0);
        g_assert_cmpuint(st.st_uid, ==, user.uid);

        g_assert_true(g_file_set_contents(victim, "precious\n", -1, &error));
        g_assert_cmpint(chmod(victim, 0644), ==, 0);
        g_assert_true(g_file_set_contents(victim_link_target, "root's\n", -1, &error));
        g_assert_cmpint(chmod(victim_link_target, 0600), ==, 0);

        /* As tbuser (the owner of the directory): symlinks to a root file under
         * every name the next sessions could use in the next seconds. */
        {
                g_autoptr(GDateTime) now = g_date_time_new_now_local();
                guint64 last = g_ascii_strtoull(strrchr(path, '/') + 1, NULL, 10);
                for (int dt = 0; dt < 8; dt++) {
                        g_autoptr(GDateTime) t = g_date_time_add_seconds(now, dt);
                        g_autofree char *stamp = g_date_time_format(t, "%Y%m%d-%H%M%S");
                        for (guint64 id = last + 1; id <= last + 3; id++) {
                                g_autofree char *name = g_strdup_printf("%s/trace-%s-%" G_GUINT64_FORMAT ".pftrace",
                                                                        udir, stamp, id);
                                g_autofree char *name2 = g_strdup_printf("%s/trace-%s-%" G_GUINT64_FORMAT ".1.pftrace",
                                                                         udir, stamp, id);
                                g_assert_cmpint(symlink(victim_link_target, name), ==, 0);
                                g_assert_cmpint(lchown(name, user.uid, user.gid), ==, 0);
                                /* A hard link to a file the user may read, under the retry name. */
                                g_assert_cmpint(link(victim, name2), ==, 0);
                        }
                }
        }
        g_free(path);
        path = NULL;
        g_free(err);
        err = client_run(&spec, &path);
        note("Start with planted links -> %s\n", err ? err : path);
        if (!err)
                wait_over(path, 10000);
        /* Nothing planted was written through. */
        {
                g_autofree char *a = NULL, *b = NULL;
                g_assert_true(g_file_get_contents(victim, &a, NULL, NULL));
                g_assert_true(g_file_get_contents(victim_link_target, &b, NULL, NULL));
                g_assert_cmpstr(a, ==, "precious\n");
                g_assert_cmpstr(b, ==, "root's\n");
                g_assert_cmpint(stat(victim_link_target, &st), ==, 0);
                g_assert_cmpuint(st.st_uid, ==, 0);
                g_assert_cmpint(stat(victim, &st), ==, 0);
                g_assert_cmpuint(st.st_uid, ==, 0);
        }
        g_assert_null(err);

        /* A full quota: a 4 GiB file (real blocks, fallocate) in the directory. */
        target = g_strdup_printf("%s/filler", udir);
        {
                int fd = open(target, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
                g_assert_cmpint(fd, >=, 0);
                if (fallocate(fd, 0, 0, (off_t) 4 << 30) < 0) {
                        note("fallocate 4 GiB: %s; quota case not checked here\n", g_strerror(errno));
                        close(fd);
                        unlink(target);
                } else {
                        g_auto(GStrv) inst = NULL, files = NULL;
                        close(fd);
                        snapshot_state(&inst, &files);
                        g_free(err);
                        err = client_run(&spec, NULL);
                        note("Start with a full quota -> %s\n", err);
                        unlink(target);
                        g_assert_cmpstr(err, ==, ERR_QUOTA);
                        assert_unchanged(inst, files);
                }
        }
        /* Clean up what was planted. */
        {
                g_autoptr(GDir) d = g_dir_open(udir, 0, NULL);
                const char *n;
                while (d && (n = g_dir_read_name(d))) {
                        g_autofree char *f = g_build_filename(udir, n, NULL);
                        if (lstat(f, &st) == 0 && (S_ISLNK(st.st_mode) || st.st_ino == 0 || st.st_nlink > 1))
                                unlink(f);
                }
        }
}

/* A caller whose UID has no passwd entry: the bus refuses it or the
 * service answers it like anyone else; the service carries on. */
static void case_uid_without_passwd(void) {
        g_auto(GStrv) inst = NULL, files = NULL;
        const char *argv[] = { "setpriv", "--reuid=4242", "--regid=4242", "--clear-groups", "busctl", "call", TB_BUS_NAME,
                               TB_MANAGER_PATH, TB_MANAGER_IFACE, "Start", "sa{sv}", "", "1", "Events", "as", "1",
                               "sched/sched_switch", NULL };
        const char *argv2[] = { "setpriv", "--reuid=4242", "--regid=4242", "--clear-groups", "busctl", "call", TB_BUS_NAME,
                                TB_MANAGER_PATH, TB_MANAGER_IFACE, "ListSessions", NULL };
        g_auto(TbCommandResult) r1 = { 0 }, r2 = { 0 };
        g_autoptr(GError) error = NULL;

        g_assert_null(getpwuid(4242));
        snapshot_state(&inst, &files);
        g_assert_true(tb_run_as_user(NULL, argv, &r1, &error));
        log_command("Start as uid 4242", &r1);
        g_assert_false(tb_command_succeeded(&r1));
        g_assert_true(tb_run_as_user(NULL, argv2, &r2, &error));
        log_command("ListSessions as uid 4242", &r2);
        /* Either way (refused by the bus, or an empty list), nothing of anyone's. */
        if (tb_command_succeeded(&r2))
                g_assert_cmpstr(g_strstrip(r2.out), ==, "ao 0");
        assert_unchanged(inst, files);
}

typedef struct {
        guint *done, *ok, *limit, *other;
        GPtrArray *started;
} StartLoopAcc;

static void start_loop_cb(GObject *src, GAsyncResult *res, gpointer ud) {
        StartLoopAcc *a = ud;
        g_autoptr(GError) e = NULL;
        g_autoptr(GVariant) v = g_dbus_connection_call_with_unix_fd_list_finish(G_DBUS_CONNECTION(src), NULL, res, &e);

        (*a->done)++;
        if (v) {
                const char *p;
                (*a->ok)++;
                g_variant_get(v, "(&o)", &p);
                g_ptr_array_add(a->started, g_strdup(p));
        } else {
                g_autofree char *n = g_dbus_error_get_remote_error(e);
                if (g_strcmp0(n, ERR_TOO_MANY_SESSIONS) == 0)
                        (*a->limit)++;
                else {
                        if (*a->other < 5)
                                note("Start in the loop: %s\n", e->message);
                        (*a->other)++;
                }
        }
}

/* Starts in a loop from one connection (pipelined, no waiting): the limits
 * hold (5 per UID), every call is answered, and the service carries on. */
static void case_start_loop_limits(void) {
        g_auto(GStrv) inst = NULL, files = NULL;
        g_autoptr(GPtrArray) started = g_ptr_array_new_with_free_func(g_free);
        g_autofree char *out_path = NULL;
        enum { N = 1000 };
        guint n_done = 0, n_ok = 0, n_limit = 0, n_other = 0;
        GMainContext *ctx = g_main_context_new();
        int fd = open_output("loop.pftrace", &out_path);
        g_autoptr(GDBusConnection) conn = NULL;
        g_autoptr(GError) error = NULL;

        snapshot_state(&inst, &files);
        g_main_context_push_thread_default(ctx);
        conn = g_dbus_connection_new_for_address_sync(tb_bus()->address,
                                                      G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT |
                                                      G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION,
                                                      NULL, NULL, &error);
        g_assert_no_error(error);

        StartLoopAcc acc = { &n_done, &n_ok, &n_limit, &n_other, started };

        for (int i = 0; i < N; i++) {
                g_autoptr(GUnixFDList) l = NULL;

                /* dbus-daemon allows a connection 128 pending calls: keep 100 in flight. */
                while ((guint) i - n_done >= 100)
                        g_main_context_iteration(ctx, TRUE);
                l = fd_list_of(fd);
                GVariantBuilder b;

                g_variant_builder_init(&b, G_VARIANT_TYPE("a{sv}"));
                g_variant_builder_add(&b, "{sv}", "Events", events_option(sched_events));
                g_variant_builder_add(&b, "{sv}", "DurationMs", g_variant_new_uint32(60000));
                g_variant_builder_add(&b, "{sv}", "Output", g_variant_new_handle(0));
                g_dbus_connection_call_with_unix_fd_list(
                        conn, TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_IFACE, "Start",
                        g_variant_new("(s@a{sv})", "", g_variant_builder_end(&b)), G_VARIANT_TYPE("(o)"),
                        G_DBUS_CALL_FLAGS_NONE, 120000, l, NULL,
                        start_loop_cb,
                        &acc);
        }
        close(fd);
        {
                gint64 deadline = g_get_monotonic_time() + 120 * G_USEC_PER_SEC;
                while (n_done < N && g_get_monotonic_time() < deadline)
                        g_main_context_iteration(ctx, TRUE);
        }
        note("%d Starts: %u answered, %u started, %u TooManySessions, %u other\n", N, n_done, n_ok, n_limit, n_other);
        g_assert_cmpuint(n_done, ==, N);
        g_assert_cmpuint(n_ok, ==, 5);
        g_assert_cmpuint(n_limit, ==, N - 5);
        g_assert_cmpuint(n_other, ==, 0);
        /* Leaving the bus ends the five (they are bound to this connection). */
        for (guint i = 0; i < started->len; i++)
                note("started %s\n", (char *) started->pdata[i]);
        g_dbus_connection_close_sync(conn, NULL, NULL);
        g_main_context_pop_thread_default(ctx);
        for (guint i = 0; i < started->len; i++)
                wait_over(started->pdata[i], 20000);
        g_main_context_unref(ctx);
        g_assert_true(tb_pid_alive(tb_bus()->service_pid));
        g_assert_cmpuint(n_sessions_root(), ==, 0);
        {
                g_auto(GStrv) now = own_instances();
                g_assert_cmpuint(g_strv_length(now), ==, g_strv_length(inst));
        }
}

typedef struct {
        gint stop, running;
        guint sent, answered, errors, inflight;
} Flood;

static void flood_cb(GObject *src, GAsyncResult *res, gpointer ud) {
        Flood *f = ud;
        g_autoptr(GError) e = NULL;
        g_autoptr(GVariant) v = g_dbus_connection_call_finish(G_DBUS_CONNECTION(src), res, &e);

        f->inflight--;
        if (v)
                f->answered++;
        else {
                if (f->errors < 5)
                        note("flood call: %s\n", e->message);
                f->errors++;
        }
}

/* Attach of a key nobody has: NoSuchSession is the right answer. */
static void flood_attach_cb(GObject *src, GAsyncResult *res, gpointer ud) {
        Flood *f = ud;
        g_autoptr(GError) e = NULL;
        g_autoptr(GVariant) v = g_dbus_connection_call_finish(G_DBUS_CONNECTION(src), res, &e);
        g_autofree char *name = e ? g_dbus_error_get_remote_error(e) : NULL;

        f->inflight--;
        if (g_strcmp0(name, ERR_NO_SUCH_SESSION) == 0)
                f->answered++;
        else {
                note("flood Attach: %s\n", e ? e->message : "succeeded");
                f->errors++;
        }
}

static gpointer flood_thread(gpointer ud) {
        Flood *f = ud;
        GMainContext *ctx = g_main_context_new();
        g_autoptr(GDBusConnection) conn = NULL;
        g_autoptr(GError) error = NULL;

        g_main_context_push_thread_default(ctx);
        conn = g_dbus_connection_new_for_address_sync(tb_bus()->address,
                                                      G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT |
                                                      G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION,
                                                      NULL, NULL, &error);
        g_assert_no_error(error);
        g_atomic_int_set(&f->running, TRUE);
        while (!g_atomic_int_get(&f->stop) || f->inflight > 0) {
                while (!g_atomic_int_get(&f->stop) && f->inflight < 50) {
                        static const char *const methods[] = { "IsDetached", "ListSessions", "ListEvents", "Attach" };
                        const char *m = methods[f->sent % 4];
                        GVariant *args = g_str_equal(m, "ListSessions") ? NULL
                                         : g_str_equal(m, "ListEvents") ? g_variant_new("(s)", "sched/sched_switch")
                                                                        : g_variant_new("(s)", "flood-key");
                        g_dbus_connection_call(conn, TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_IFACE, m, args, NULL,
                                               G_DBUS_CALL_FLAGS_NONE, 30000, NULL,
                                               g_str_equal(m, "Attach") ? flood_attach_cb : flood_cb, f);
                        f->sent++;
                        f->inflight++;
                }
                g_main_context_iteration(ctx, TRUE);
        }
        g_dbus_connection_close_sync(conn, NULL, NULL);
        g_main_context_pop_thread_default(ctx);
        g_main_context_unref(ctx);
        return NULL;
}

/* A flood of calls from one client while another user records: the
 * recording goes on, its file is complete, and a third connection's call is
 * answered within 100 ms throughout. */
static void case_flood_while_recording(void) {
        g_autofree char *out_path = NULL, *path = NULL, *stats = NULL, *err = NULL;
        int fd = open_output("flood.pftrace", &out_path);
        ClientSpec holder = { .user = "tbuser", .op = OP_START, .events = sched_events, .duration_ms = 60000,
                              .output_fd = fd, .hold = true };
        g_auto(TbTraceSummary) s = { 0 };
        gint64 worst = 0;
        Client c;

        g_assert_cmpint(chown(out_path, 0, 0), ==, 0);
        client_spawn(&holder, &c);
        close(fd);
        path = client_expect(&c, 'O', 30000, &err);
        g_assert_nonnull(path);
        g_free(wait_state(path, "recording", 10000));

        /* The flooder: one connection of its own, in a thread, keeping 50 calls
         * in flight (dbus-daemon allows 128 per connection). */
        Flood flood = { .stop = FALSE };
        GThread *thread = g_thread_new("flood", flood_thread, &flood);
        while (!g_atomic_int_get(&flood.running))
                g_usleep(10 * 1000);
        for (int i = 0; i < 100; i++) {
                gint64 t0 = g_get_monotonic_time(), dt;
                g_autofree char *e = manager_call("IsDetached", g_variant_new("(s)", "ping"), NULL);
                dt = g_get_monotonic_time() - t0;
                g_assert_null(e);
                worst = MAX(worst, dt);
                g_usleep(50 * 1000);
        }
        g_atomic_int_set(&flood.stop, TRUE);
        g_thread_join(thread);
        note("the flood: %u calls answered, %u errors\n", flood.answered, flood.errors);
        g_assert_cmpuint(flood.answered, >, 1000);
        g_assert_cmpuint(flood.errors, ==, 0);
        /* Built with sanitizers (tools/test in CI), everything is 2-5 times slower. */
        {
                gint64 limit = (gint64) tb_scaled_ms(100) * 1000;
                note("worst IsDetached latency during the flood: %.1f ms (limit %.0f ms)\n", worst / 1000.0,
                     limit / 1000.0);
                g_assert_cmpint(worst, <, limit);
        }
        {
                g_autofree char *st = NULL;
                st = tb_session_state(tb_bus()->conn, path, NULL);
                g_assert_cmpstr(st, ==, "recording");
        }
        stats = client_cmd(&c, "stop", 'S', &err);
        g_assert_nonnull(stats);
        client_finish(&c, 10000);
        wait_over(path, 10000);
        summarise(out_path, &s);
        assert_trace_complete(&s);
}

/* ===================================================================== */
/* 4. Faults                                                              */
/* ===================================================================== */

/* The output on a full small tmpfs: that session ends with output-error and
 * says how much it wrote; another session carries on. */
static void case_output_disk_full(void) {
        g_autofree char *mnt = g_build_filename(tb_bus()->tmpdir, "small-tmpfs", NULL);
        g_autofree char *full_path = NULL, *ok_path = NULL, *p1 = NULL, *p2 = NULL, *err = NULL;
        g_autofree char *stats2 = NULL, *reason = NULL;
        g_autoptr(GHashTable) st = NULL;
        g_auto(TbTraceSummary) s = { 0 };
        const char *cfg = "duration_ms: 30000\nwrite_into_file: true\nfile_write_period_ms: 100\n"
                          "buffers { size_kb: 4096 }\n"
                          "data_sources { config { name: \"linux.ftrace\" ftrace_config {\n"
                          "  ftrace_events: \"sched/sched_switch\" ftrace_events: \"sched/sched_waking\"\n"
                          "  ftrace_events: \"sched/sched_wakeup\" ftrace_events: \"irq/*\" } } }\n";
        TbBusy busy = { 0 };
        g_autoptr(GError) error = NULL;
        Client c1, c2;
        int fd1, fd2;

        g_assert_cmpint(g_mkdir_with_parents(mnt, 0755), ==, 0);
        if (mount("tmpfs", mnt, "tmpfs", MS_NOSUID | MS_NODEV, "size=256k") < 0)
                g_error("mount tmpfs: %s", g_strerror(errno));
        full_path = g_build_filename(mnt, "full.pftrace", NULL);
        fd1 = open(full_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        g_assert_cmpint(fd1, >=, 0);
        fd2 = open_output("carries-on.pftrace", &ok_path);
        g_assert_true(tb_busy_start("tb-diskfull", &busy, &error));

        ClientSpec a = { .user = "tbuser", .op = OP_START, .config = cfg, .output_fd = fd1, .hold = true };
        ClientSpec b = { .user = "tbadmin", .op = OP_START, .config = cfg, .output_fd = fd2, .hold = true };
        client_spawn(&a, &c1);
        client_spawn(&b, &c2);
        close(fd1);
        close(fd2);
        p1 = client_expect(&c1, 'O', 30000, &err);
        g_assert_nonnull(p1);
        p2 = client_expect(&c2, 'O', 30000, &err);
        g_assert_nonnull(p2);

        /* The first one ends by itself: SessionEnded reaches its client. */
        {
                g_autofree char *x = client_expect(&c1, 'X', 30000, &err);
                g_auto(GStrv) parts = NULL;
                g_assert_nonnull(x);
                note("SessionEnded on the full disk: %s\n", x);
                parts = g_strsplit(x, "\t", 3);
                g_assert_cmpstr(parts[1], ==, "output-error");
                {
                        g_autofree char *tabbed = g_strconcat("\t", parts[2] ? parts[2] : "", NULL);
                        st = parse_stats(tabbed);
                }
        }
        {
                const char *bytes = g_hash_table_lookup(st, "Bytes");
                g_assert_nonnull(bytes);
                g_assert_cmpuint(g_ascii_strtoull(bytes, NULL, 10), >, 0);
                g_assert_cmpuint(g_ascii_strtoull(bytes, NULL, 10), <=, 256 * 1024);
        }
        /* The other one still records and ends complete. */
        {
                g_autofree char *state = tb_session_state(tb_bus()->conn, p2, NULL);
                g_assert_cmpstr(state, ==, "recording");
        }
        stats2 = client_cmd(&c2, "stop", 'S', &err);
        g_assert_nonnull(stats2);
        client_finish(&c1, 5000);
        client_finish(&c2, 5000);
        tb_busy_stop(&busy);
        wait_over(p1, 10000);
        wait_over(p2, 10000);
        summarise(ok_path, &s);
        assert_trace_complete(&s);
        g_assert_cmpint(umount2(mnt, MNT_DETACH), ==, 0);
}

/* The client killed at every phase of its session: right after it asked
 * (before or while polkit answers, while the session starts), while
 * recording, and right after it asked to stop. Each time the session ends, its
 * instance goes, and the file is empty (never started) or a complete trace. */
static void kill_and_check(const char *what, guint delay_ms, bool stop_first) {
        g_autofree char *name = g_strdup_printf("killed-%s-%u.pftrace", what, delay_ms);
        g_autofree char *out_path = NULL, *path = NULL, *err = NULL;
        int fd = open_output(name, &out_path);
        ClientSpec spec = { .user = "tbuser", .op = OP_START, .events = sched_events, .duration_ms = 60000,
                            .output_fd = fd, .hold = true };
        struct stat st;
        Client c;

        client_spawn(&spec, &c);
        close(fd);
        if (stop_first) {
                path = client_expect(&c, 'O', 30000, &err);
                g_assert_nonnull(path);
                g_free(wait_state(path, "recording", 10000));
                g_usleep(delay_ms * 1000);
                g_assert_cmpint(write(c.ctl_fd, "stop\n", 5), ==, 5);
        } else
                g_usleep(delay_ms * 1000);
        client_kill(&c);
        /* Whatever phase it was in: no session, no instance of it, within 15 s. */
        for (int i = 0; i < 150 && n_sessions_root() > 0; i++)
                g_usleep(100 * 1000);
        g_assert_cmpuint(n_sessions_root(), ==, 0);
        for (int i = 0; i < 100; i++) {
                g_auto(GStrv) inst = own_instances();
                if (g_strv_length(inst) == 0)
                        break;
                g_usleep(100 * 1000);
        }
        {
                g_auto(GStrv) inst = own_instances();
                g_assert_cmpuint(g_strv_length(inst), ==, 0);
        }
        g_assert_cmpint(stat(out_path, &st), ==, 0);
        note("client killed %s after %u ms: file of %" G_GINT64_FORMAT " bytes\n", what, delay_ms, (gint64) st.st_size);
        if (st.st_size > 0 || stop_first)
                assert_trace_file_closed(out_path);
}

static void case_client_killed_phases(void) {
        const guint delays[] = { 0, 2, 5, 10, 20, 40, 80, 160, 400, 1000 };

        for (size_t i = 0; i < G_N_ELEMENTS(delays); i++)
                kill_and_check("starting", delays[i], false);
        for (guint d = 0; d <= 20; d += 10)
                kill_and_check("stopping", d, true);
}

/* ===================================================================== */
/* 5. Privacy                                                             */
/* ===================================================================== */

/* A session path of the same shape as @a's that is neither @a nor @b: ids are random,
 * so any other number is (almost surely) no session. */
static char *unused_session_path(const char *a, const char *b) {
        for (guint64 id = 281474976710655ULL;; id--) {
                g_autofree char *p = g_strdup_printf(TB_MANAGER_PATH "/session/%" G_GUINT64_FORMAT, id);
                if (!g_str_equal(p, a) && !g_str_equal(p, b))
                        return g_steal_pointer(&p);
        }
}

/* What a spy's every read and change of the session at @target answers (each call must fail). */
static GPtrArray *spy_replies(Client *o, const char *target, const char *const *props, size_t n_props) {
        static const struct { const char *cmd; char kind; } changes[] = {
                { "getall", 'V' }, { "detach stolen", 'D' }, { "sdetach stolen2", 'D' },
                { "stop", 'S' }, { "sstop", 'S' },
        };
        GPtrArray *replies = g_ptr_array_new_with_free_func(g_free);
        g_autofree char *use = g_strconcat("use ", target, NULL);
        g_autofree char *err = NULL;

        g_free(client_cmd(o, use, 'U', &err));
        for (size_t i = 0; i < n_props; i++) {
                g_autofree char *cmd = g_strconcat("get ", props[i], NULL);
                g_autofree char *v = client_cmd(o, cmd, 'V', &err);
                g_assert_null(v);
                g_assert_true(g_str_has_prefix(err, ERR_UNKNOWN_OBJECT));
                g_ptr_array_add(replies, g_strdup(err));
        }
        for (size_t i = 0; i < G_N_ELEMENTS(changes); i++) {
                g_autofree char *v = client_cmd(o, changes[i].cmd, changes[i].kind, &err);
                g_assert_null(v);
                g_ptr_array_add(replies, g_strdup(err));
        }
        {
                g_autofree char *cmd = g_strconcat("introspect ", target, NULL);
                g_autofree char *xml = client_cmd(o, cmd, 'I', &err);
                g_ptr_array_add(replies, g_strdup(xml ?: err));
        }
        return replies;
}

/* tbother learns nothing of tbuser's sessions: not listed, not in the
 * object tree, no property, key unknown, errors that name nothing of it. */
static void case_privacy_methods(void) {
        g_autofree char *out_path = NULL, *path = NULL, *err = NULL, *detached = NULL, *detached_out = NULL;
        int fd = open_output("private.pftrace", &out_path);
        ClientSpec holder = { .user = "tbuser", .op = OP_START, .events = sched_events, .duration_ms = 60000,
                              .output_fd = fd, .hold = true };
        ClientSpec det = { .user = "tbuser", .op = OP_START, .events = sched_events, .duration_ms = 60000,
                           .detach_key = "k-private-9", .output_fd = -1 };
        ClientSpec spy = { .user = "tbother", .op = OP_HOLD_NAME, .output_fd = -1 };
        g_autofree char *name = NULL;
        g_autoptr(GPtrArray) replies = g_ptr_array_new_with_free_func(g_free);
        Client c, o;

        client_spawn(&holder, &c);
        close(fd);
        path = client_expect(&c, 'O', 30000, &err);
        g_assert_nonnull(path);
        g_assert_null(client_run(&det, &detached));
        detached_out = g_strdup(detached);
        /* Ids are random: the next session's id tells nothing of how many others began
         * in between (a sequence gave the second one id + 1). */
        g_assert_cmpuint(g_ascii_strtoull(strrchr(detached, '/') + 1, NULL, 10), !=,
                         g_ascii_strtoull(strrchr(path, '/') + 1, NULL, 10) + 1);

        client_spawn(&spy, &o);
        name = client_expect(&o, 'N', 10000, &err);
        g_assert_nonnull(name);
        {
                const char *props[] = { "State", "OwnerUid", "OutputPath", "Events", "BytesWritten", "Detached" };
                g_autofree char *l = client_cmd(&o, "list", 'L', &err);
                g_autofree char *i1 = NULL, *i2 = NULL;
                g_assert_nonnull(l);
                g_assert_cmpstr(g_strstrip(l), ==, "");
                g_assert_false(g_str_equal(client_cmd(&o, "isdetached k-private-9", 'B', &err) ?: "", "true"));
                i1 = client_cmd(&o, "introspect /org/tracebus/Tracebus1/session", 'I', &err);
                if (i1)
                        g_ptr_array_add(replies, g_strdup(i1));
                else
                        g_ptr_array_add(replies, g_strdup(err));
                i2 = client_cmd(&o, "introspect /org/tracebus/Tracebus1", 'I', &err);
                g_ptr_array_add(replies, g_strdup(i2 ?: err));
                /* Every answer about tbuser's two sessions is, word for word once the path
                 * tbother sent is taken out, the answer about a path no session has. */
                g_autofree char *missing = unused_session_path(path, detached);
                g_autoptr(GPtrArray) about_missing = spy_replies(&o, missing, props, G_N_ELEMENTS(props));
                for (int k = 0; k < 2; k++) {
                        const char *target = k == 0 ? path : detached;
                        g_autoptr(GPtrArray) about = spy_replies(&o, target, props, G_N_ELEMENTS(props));
                        g_assert_cmpuint(about->len, ==, about_missing->len);
                        for (guint i = 0; i < about->len; i++) {
                                g_autofree char *a = tb_str_replace(about->pdata[i], target, "PATH");
                                g_autofree char *b = tb_str_replace(about_missing->pdata[i], missing, "PATH");
                                g_assert_cmpstr(a, ==, b);
                                g_ptr_array_add(replies, g_steal_pointer(&a));
                        }
                }
                {
                        g_autofree char *v = client_cmd(&o, "attach k-private-9", 'O', &err);
                        g_assert_null(v);
                        g_ptr_array_add(replies, g_strdup(err));
                        g_assert_true(g_str_has_prefix(err, ERR_NO_SUCH_SESSION));
                }
        }
        client_finish(&o, 5000);

        /* Nothing tbother got names tbuser's files, uid, name or key. */
        {
                g_auto(TbUser) u = { 0 };
                g_autofree char *uid_s = NULL;
                g_autofree char *det_path_in_state = NULL;
                g_autoptr(GError) error = NULL;
                g_assert_true(tb_user_lookup("tbuser", &u, &error));
                uid_s = g_strdup_printf("%u", (unsigned) u.uid);
                for (guint i = 0; i < replies->len; i++) {
                        const char *r = replies->pdata[i];
                        note("tbother got: %.200s\n", r);
                        g_assert_null(strstr(r, out_path));
                        g_assert_null(strstr(r, "private.pftrace"));
                        g_assert_null(strstr(r, "tbuser"));
                        g_assert_null(strstr(r, "/traces/"));
                        g_assert_null(strstr(r, "sched_switch"));
                        g_assert_null(strstr(r, strrchr(path, '/')));
                        g_assert_null(strstr(r, strrchr(detached, '/')));
                }
        }

        /* Clean up: tbuser's sessions are intact, and stop normally. */
        {
                g_autofree char *s1 = client_cmd(&c, "stop", 'S', &err);
                g_assert_nonnull(s1);
                ClientSpec stop = { .user = "tbuser", .op = OP_STOP_MANAGER, .path = detached, .output_fd = -1 };
                g_autofree char *e2 = client_run(&stop, NULL);
                g_assert_null(e2);
        }
        client_finish(&c, 5000);
        wait_over(path, 10000);
        wait_over(detached, 10000);
}

/* SessionEnded and PropertiesChanged reach only the owner: a listener as
 * tbother (an ordinary match and an eavesdropping dbus-monitor) hears
 * nothing of tbuser's session, while tbuser's own connection does. */
static void case_privacy_signals(void) {
        g_autofree char *out_path = NULL, *path = NULL, *err = NULL, *name = NULL;
        int fd = open_output("signals.pftrace", &out_path);
        ClientSpec holder = { .user = "tbuser", .op = OP_START, .events = sched_events, .duration_ms = 60000,
                              .output_fd = fd, .hold = true };
        ClientSpec spy = { .user = "tbother", .op = OP_HOLD_NAME, .output_fd = -1 };
        g_autofree char *mon_out = g_build_filename(tb_bus()->tmpdir, "monitor-tbother.txt", NULL);
        g_autoptr(GPtrArray) own_x = NULL, own_p = NULL, spy_x = NULL, spy_p = NULL;
        pid_t monitor;
        Client c, o;

        client_spawn(&spy, &o);
        name = client_expect(&o, 'N', 10000, &err);
        g_assert_nonnull(name);
        monitor = fork();
        g_assert_cmpint(monitor, >=, 0);
        if (monitor == 0) {
                int out = open(mon_out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
                if (out < 0)
                        _exit(127);
                dup2(out, 1);
                dup2(out, 2);
                execlp("setpriv", "setpriv", "--reuid=tbother", "--regid=tbother", "--init-groups", "dbus-monitor",
                       "--system", "sender='" TB_BUS_NAME "'", "eavesdrop=true", (char *) NULL);
                _exit(127);
        }
        g_usleep(500 * 1000);

        client_spawn(&holder, &c);
        close(fd);
        path = client_expect(&c, 'O', 30000, &err);
        g_assert_nonnull(path);
        g_free(wait_state(path, "recording", 10000));
        g_free(client_cmd(&c, "detach sig-key", 'D', &err));
        g_free(client_cmd(&c, "attach sig-key", 'O', &err));
        g_usleep(1500 * 1000);
        g_free(client_cmd(&c, "stop", 'S', &err));
        own_x = client_collect(&c, 'X', 2000);
        own_p = client_collect(&c, 'P', 100);
        spy_x = client_collect(&o, 'X', 500);
        spy_p = client_collect(&o, 'P', 100);
        note("owner got %u SessionEnded, %u PropertiesChanged; tbother %u and %u\n", own_x->len, own_p->len,
             spy_x->len, spy_p->len);
        g_assert_cmpuint(own_x->len, >=, 1);
        g_assert_cmpuint(own_p->len, >=, 1);
        g_assert_cmpuint(spy_x->len, ==, 0);
        g_assert_cmpuint(spy_p->len, ==, 0);
        client_finish(&c, 5000);
        client_finish(&o, 5000);
        wait_over(path, 10000);
        {
                int status;
                g_autofree char *text = NULL;
                (void) kill(monitor, SIGTERM);
                (void) waitpid(monitor, &status, 0);
                g_assert_true(g_file_get_contents(mon_out, &text, NULL, NULL));
                note("dbus-monitor as tbother: %.300s\n", text);
                g_assert_null(strstr(text, path));
                g_assert_null(strstr(text, "SessionEnded"));
                g_assert_null(strstr(text, "signals.pftrace"));
        }
}

static void test_no_leftovers(void) {
        g_auto(GStrv) inst = own_instances();

        g_assert_true(tb_pid_alive(tb_bus()->service_pid));
        g_assert_cmpuint(g_strv_length(inst), ==, 0);
        g_assert_cmpuint(n_sessions_root(), ==, 0);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();

        tb_test_add_isolated("/bus/hostile/03-wrong-signatures", case_wrong_signatures);
        tb_test_add_isolated("/bus/hostile/03-wrong-signatures-busctl", case_wrong_signatures_busctl);
        tb_test_add_isolated("/bus/hostile/03-bad-output-fds", case_bad_output_fds);
        tb_test_add_isolated("/bus/hostile/03-pipe-reader-gone", case_pipe_reader_gone);
        tb_test_add_isolated("/bus/hostile/03-bad-configs", case_bad_configs);
        tb_test_add_isolated("/bus/hostile/03-bad-keys", case_bad_keys);
        tb_test_add_isolated("/bus/hostile/03-no-such-session", case_no_such_session);
        tb_test_add_isolated("/bus/hostile/03-trace-dir-plants", case_trace_dir_plants);
        tb_test_add_isolated("/bus/hostile/03-uid-without-passwd", case_uid_without_passwd);
        tb_test_add_isolated("/bus/hostile/03-start-loop-limits", case_start_loop_limits);
        tb_test_add_isolated("/bus/hostile/03-flood-while-recording", case_flood_while_recording);
        tb_test_add_isolated("/bus/hostile/04-output-disk-full", case_output_disk_full);
        tb_test_add_isolated("/bus/hostile/04-client-killed-phases", case_client_killed_phases);
        tb_test_add_isolated("/bus/hostile/05-privacy-methods", case_privacy_methods);
        tb_test_add_isolated("/bus/hostile/05-privacy-signals", case_privacy_signals);
        tb_test_add_isolated("/bus/hostile/99-no-leftovers", test_no_leftovers);
        return tb_test_run(TB_START_SERVICE);
}
