/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite: hostile input and privacy. Every method gets bad input and must
 * answer with a named error and leave the service unchanged: no session, no
 * tracefs instance, no file. This part: bad input: wrong signatures, unusable
 * Output descriptors, absurd configs, bad keys. The other parts are
 * tests/test-hostile-*.c.
 *
 * Raw calls go through root's own GDBus connection (tests/root-call.h); the
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
#include "root-call.h"
#include "session-util.h"

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
                g_variant_get_child(reply, 0, "&o", &path);
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
                /* Over the Events option's cap: refused before polkit, not parsed. */
                expect_err("10,000 events", manager_call("Start", g_variant_new("(s@a{sv})", "",
                           options_with("Events", events_option((const char *const *) many->pdata))), NULL),
                           TB_ERROR_REQUEST_TOO_LARGE);
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
        /* A text config over 1 MiB, and a binary one: over a cap, refused before polkit. */
        {
                g_autofree char *big = g_strnfill(1024 * 1024 + 16, ' ');
                g_autofree guint8 *bin = g_malloc0(1024 * 1024 + 16);
                expect_err("1 MiB text", start_text(big), TB_ERROR_REQUEST_TOO_LARGE);
                expect_err("1 MiB binary", manager_call("Start", g_variant_new("(s@a{sv})", "",
                           options_with("BinaryConfig", g_variant_new_fixed_array(G_VARIANT_TYPE_BYTE, bin,
                                                                                   1024 * 1024 + 16, 1))), NULL),
                           TB_ERROR_REQUEST_TOO_LARGE);
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
        tb_test_add_isolated("/bus/hostile/99-no-leftovers", root_test_no_leftovers);
        return tb_test_run(TB_START_SERVICE);
}
