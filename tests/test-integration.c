/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite: tracebusd on a private system bus with the real polkitd, driven
 * as the test users by the CLI, busctl and a small sd-bus client. Needs root
 * and tracefs (tools/setup-debian); see tests/system-bus.h.
 *
 * Test users and what tests/polkit-rules/50-tracebus-test.rules says about
 * org.tracebus.record: tbuser YES, tbadmin YES (group tbadmins), tbchallenge
 * AUTH_ADMIN (a challenge: there is no agent), tbother NO.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include "system-bus.h"
#include "trace-file.h"

#define ERR_ACCESS_DENIED "org.freedesktop.DBus.Error.AccessDenied"
#define ERR_INTERACTIVE "org.freedesktop.DBus.Error.InteractiveAuthorizationRequired"
#define ERR_INVALID_CONFIG "org.tracebus.Tracebus1.Error.InvalidConfig"
#define ERR_UNKNOWN_EVENT "org.tracebus.Tracebus1.Error.UnknownEvent"

#define note(...) g_printerr("# " __VA_ARGS__)

static const char *const sched_events[] = { "sched/sched_switch", "sched/sched_waking", NULL };

static char *config_text(guint duration_ms) {
        return g_strdup_printf("duration_ms: %u\n"
                               "buffers { size_kb: 4096 }\n"
                               "data_sources {\n"
                               "  config {\n"
                               "    name: \"linux.ftrace\"\n"
                               "    ftrace_config {\n"
                               "      ftrace_events: \"sched/sched_switch\"\n"
                               "      ftrace_events: \"sched/sched_waking\"\n"
                               "    }\n"
                               "  }\n"
                               "}\n",
                               duration_ms);
}

/* ===================================================================== */
/* A small sd-bus client, run as a test user in a forked child.           */
/* ===================================================================== */

typedef enum {
        OP_HOLD_NAME,     /* connect, report the unique name, wait */
        OP_START,         /* Manager.Start; with hold, keep the connection, 's' on ctl stops */
        OP_STOP_MANAGER,  /* Manager.Stop(path) */
        OP_STOP_SESSION,  /* Session.Stop() on path */
} ClientOp;

typedef struct {
        const char *user;
        ClientOp op;
        const char *config;         /* Start: "" when NULL */
        const char *const *events;  /* Start: option Events */
        guint32 duration_ms;        /* Start: option DurationMs, when non-zero */
        int output_fd;              /* Start: option Output, when >= 0 */
        const char *path;           /* Stop */
        bool interactive;
        bool hold;
} ClientSpec;

typedef struct {
        pid_t pid;
        int report_fd; /* lines from the child */
        int ctl_fd;    /* commands to the child */
} Client;

/* Child side: report lines are "N name", "O path", "S\tkey=value...",
 * "E error.name\tmessage". */

static void child_report_error(int fd, const char *what, const sd_bus_error *e, int r) {
        if (e && sd_bus_error_is_set(e))
                dprintf(fd, "E %s\t%s\n", e->name, e->message ? e->message : "");
        else
                dprintf(fd, "E local.%s\t%s\n", what, strerror(r < 0 ? -r : r));
}

static int child_append_options(sd_bus_message *m, const ClientSpec *spec) {
        int r = sd_bus_message_open_container(m, 'a', "{sv}");
        if (r < 0)
                return r;
        if (spec->output_fd >= 0) {
                r = sd_bus_message_append(m, "{sv}", "Output", "h", spec->output_fd);
                if (r < 0)
                        return r;
        }
        if (spec->events) {
                r = sd_bus_message_open_container(m, 'e', "sv");
                if (r >= 0)
                        r = sd_bus_message_append(m, "s", "Events");
                if (r >= 0)
                        r = sd_bus_message_open_container(m, 'v', "as");
                if (r >= 0)
                        r = sd_bus_message_append_strv(m, (char **) spec->events);
                if (r >= 0)
                        r = sd_bus_message_close_container(m);
                if (r >= 0)
                        r = sd_bus_message_close_container(m);
                if (r < 0)
                        return r;
        }
        if (spec->duration_ms) {
                r = sd_bus_message_append(m, "{sv}", "DurationMs", "u", spec->duration_ms);
                if (r < 0)
                        return r;
        }
        return sd_bus_message_close_container(m);
}

static int child_call(sd_bus *b, int report_fd, const ClientSpec *spec, sd_bus_message *m, sd_bus_message **reply) {
        sd_bus_error e = SD_BUS_ERROR_NULL;
        int r;

        (void) sd_bus_message_set_allow_interactive_authorization(m, spec->interactive);
        r = sd_bus_call(b, m, 60 * 1000 * 1000ULL, &e, reply);
        if (r < 0)
                child_report_error(report_fd, "call", &e, r);
        sd_bus_error_free(&e);
        return r;
}

static int child_start(sd_bus *b, int report_fd, const ClientSpec *spec, char **ret_path) {
        sd_bus_message *m = NULL, *reply = NULL;
        const char *path;
        int r;

        r = sd_bus_message_new_method_call(b, &m, TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_IFACE, "Start");
        if (r >= 0)
                r = sd_bus_message_append(m, "s", spec->config ? spec->config : "");
        if (r >= 0)
                r = child_append_options(m, spec);
        if (r < 0) {
                child_report_error(report_fd, "build-message", NULL, r);
                return r;
        }
        r = child_call(b, report_fd, spec, m, &reply);
        sd_bus_message_unref(m);
        if (r < 0)
                return r;
        r = sd_bus_message_read(reply, "o", &path);
        if (r < 0) {
                child_report_error(report_fd, "read-reply", NULL, r);
                return r;
        }
        *ret_path = strdup(path);
        sd_bus_message_unref(reply);
        dprintf(report_fd, "O %s\n", *ret_path);
        return 0;
}

static int child_report_stats(int fd, sd_bus_message *reply) {
        char line[4096] = "S";
        int r = sd_bus_message_enter_container(reply, 'a', "{sv}");

        while (r >= 0 && (r = sd_bus_message_enter_container(reply, 'e', "sv")) > 0) {
                const char *key, *contents, *sv;
                char type, item[1024];
                uint64_t t;
                uint32_t u;

                r = sd_bus_message_read(reply, "s", &key);
                if (r >= 0)
                        r = sd_bus_message_peek_type(reply, &type, &contents);
                if (r >= 0)
                        r = sd_bus_message_enter_container(reply, 'v', contents);
                if (r < 0)
                        break;
                if (g_str_equal(contents, "t") && sd_bus_message_read(reply, "t", &t) >= 0)
                        g_snprintf(item, sizeof item, "\t%s=%" PRIu64, key, t);
                else if (g_str_equal(contents, "u") && sd_bus_message_read(reply, "u", &u) >= 0)
                        g_snprintf(item, sizeof item, "\t%s=%" PRIu32, key, u);
                else if (g_str_equal(contents, "s") && sd_bus_message_read(reply, "s", &sv) >= 0)
                        g_snprintf(item, sizeof item, "\t%s=%s", key, sv);
                else {
                        g_snprintf(item, sizeof item, "\t%s:%s=?", key, contents);
                        (void) sd_bus_message_skip(reply, contents);
                }
                g_strlcat(line, item, sizeof line);
                r = sd_bus_message_exit_container(reply);
                if (r >= 0)
                        r = sd_bus_message_exit_container(reply);
        }
        if (r < 0) {
                child_report_error(fd, "read-stats", NULL, r);
                return r;
        }
        dprintf(fd, "%s\n", line);
        return 0;
}

static int child_stop(sd_bus *b, int report_fd, const ClientSpec *spec, const char *path, bool via_session) {
        sd_bus_message *m = NULL, *reply = NULL;
        int r;

        if (via_session)
                r = sd_bus_message_new_method_call(b, &m, TB_BUS_NAME, path, TB_SESSION_IFACE, "Stop");
        else {
                r = sd_bus_message_new_method_call(b, &m, TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_IFACE, "Stop");
                if (r >= 0)
                        r = sd_bus_message_append(m, "o", path);
        }
        if (r < 0) {
                child_report_error(report_fd, "build-message", NULL, r);
                return r;
        }
        r = child_call(b, report_fd, spec, m, &reply);
        sd_bus_message_unref(m);
        if (r < 0)
                return r;
        r = child_report_stats(report_fd, reply);
        sd_bus_message_unref(reply);
        return r;
}

static G_NORETURN void client_child(const ClientSpec *spec, const TbUser *user, int report_fd, int ctl_fd) {
        sd_bus *b = NULL;
        const char *unique;
        char *path = NULL;
        char c;
        int r;

        tb_user_become(user);
        r = sd_bus_open_system(&b);
        if (r < 0) {
                child_report_error(report_fd, "connect", NULL, r);
                _exit(3);
        }
        r = sd_bus_get_unique_name(b, &unique);
        if (r < 0) {
                child_report_error(report_fd, "unique-name", NULL, r);
                _exit(3);
        }
        dprintf(report_fd, "N %s\n", unique);

        switch (spec->op) {
        case OP_HOLD_NAME:
                (void) read(ctl_fd, &c, 1);
                _exit(0);
        case OP_START:
                if (child_start(b, report_fd, spec, &path) < 0)
                        _exit(2);
                if (!spec->hold)
                        _exit(0);
                /* Keep the connection (and so the session) until told. */
                if (read(ctl_fd, &c, 1) == 1 && c == 's')
                        _exit(child_stop(b, report_fd, spec, path, false) < 0 ? 2 : 0);
                _exit(0);
        case OP_STOP_MANAGER:
        case OP_STOP_SESSION:
                _exit(child_stop(b, report_fd, spec, spec->path, spec->op == OP_STOP_SESSION) < 0 ? 2 : 0);
        }
        _exit(4);
}

static void client_spawn(const ClientSpec *spec, Client *ret) {
        g_auto(TbUser) user = { 0 };
        g_autoptr(GError) error = NULL;
        int rep[2], ctl[2];

        g_assert_true(tb_user_lookup(spec->user, &user, &error));
        g_assert_no_error(error);
        g_assert_cmpint(pipe2(rep, O_CLOEXEC), ==, 0);
        g_assert_cmpint(pipe2(ctl, O_CLOEXEC), ==, 0);
        fflush(NULL);
        ret->pid = fork();
        g_assert_cmpint(ret->pid, >=, 0);
        if (ret->pid == 0) {
                close(rep[0]);
                close(ctl[1]);
                client_child(spec, &user, rep[1], ctl[0]);
        }
        close(rep[1]);
        close(ctl[0]);
        ret->report_fd = rep[0];
        ret->ctl_fd = ctl[1];
}

/* The next report line of the given kind ('N', 'O', 'S'); on 'E' lines,
 * ret_error gets "name\tmessage" and NULL is returned. */
static char *client_expect(Client *c, char kind, guint timeout_ms, char **ret_error) {
        for (;;) {
                g_autoptr(GError) error = NULL;
                g_autofree char *line = tb_read_line(c->report_fd, timeout_ms, &error);

                if (!line) {
                        if (ret_error)
                                *ret_error = g_strdup_printf("local.NoReport\t%s", error->message);
                        return NULL;
                }
                if (line[0] == 'E' && line[1] == ' ') {
                        if (ret_error)
                                *ret_error = g_strdup(line + 2);
                        return NULL;
                }
                if (line[0] == kind)
                        return g_strdup(line + (kind == 'S' ? 1 : 2));
        }
}

static int client_finish(Client *c, guint timeout_ms) {
        int status = -1;
        gint64 deadline = g_get_monotonic_time() + (gint64) timeout_ms * 1000;

        if (c->ctl_fd >= 0)
                close(c->ctl_fd);
        c->ctl_fd = -1;
        while (c->pid > 0) {
                pid_t r = waitpid(c->pid, &status, WNOHANG);
                if (r == c->pid)
                        break;
                if (g_get_monotonic_time() > deadline) {
                        kill(c->pid, SIGKILL);
                        (void) waitpid(c->pid, &status, 0);
                        break;
                }
                g_usleep(10 * 1000);
        }
        c->pid = 0;
        if (c->report_fd >= 0)
                close(c->report_fd);
        c->report_fd = -1;
        return status;
}

/* Runs a non-holding client to completion. Returns the error name (NULL on
 * success); the O or S payload in ret_out. */
static char *client_run(const ClientSpec *spec, char **ret_out) {
        Client c;
        char kind = spec->op == OP_START ? 'O' : 'S';
        char *err = NULL, *out;

        g_assert_false(spec->hold);
        client_spawn(spec, &c);
        out = client_expect(&c, kind, 60000, &err);
        client_finish(&c, 10000);
        if (ret_out)
                *ret_out = out;
        else
                g_free(out);
        if (err) {
                char *tab = strchr(err, '\t');
                note("%s: %s\n", spec->user, err);
                if (tab)
                        *tab = 0;
        }
        return err;
}

/* "S\tEvents=1\tOutputPath=/x" -> table */
static GHashTable *parse_stats(const char *s) {
        GHashTable *h = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
        g_auto(GStrv) items = g_strsplit(s, "\t", -1);

        for (size_t i = 0; items[i]; i++) {
                char *eq = strchr(items[i], '=');
                if (eq)
                        g_hash_table_insert(h, g_strndup(items[i], (gsize) (eq - items[i])), g_strdup(eq + 1));
        }
        return h;
}

/* ===================================================================== */
/* Helpers                                                                */
/* ===================================================================== */

static char *make_user_dir(const char *user, const char *name) {
        g_auto(TbUser) u = { 0 };
        char *dir = g_build_filename(tb_bus()->tmpdir, name, NULL);

        g_assert_true(tb_user_lookup(user, &u, NULL));
        g_assert_cmpint(g_mkdir_with_parents(dir, 0700), ==, 0);
        g_assert_cmpint(chown(dir, u.uid, u.gid), ==, 0);
        g_assert_cmpint(chmod(dir, 0700), ==, 0);
        return dir;
}

/* The CLI, copied where every test user can execute it: the build tree may
 * sit under a directory they cannot traverse (e.g. /root). */
static char *cli_path(void) {
        g_autofree char *src = g_build_filename(tb_bus()->build_dir, "client", "cli", "tracebus", NULL);
        g_autofree char *bindir = g_build_filename(tb_bus()->tmpdir, "bin", NULL);
        char *dst = g_build_filename(bindir, "tracebus", NULL);
        g_autofree char *contents = NULL;
        gsize len;
        g_autoptr(GError) error = NULL;

        if (access(dst, X_OK) == 0)
                return dst;
        g_assert_cmpint(g_mkdir_with_parents(bindir, 0755), ==, 0);
        g_assert_true(g_file_get_contents(src, &contents, &len, &error));
        g_assert_no_error(error);
        g_assert_true(g_file_set_contents_full(dst, contents, (gssize) len, G_FILE_SET_CONTENTS_NONE, 0755, &error));
        g_assert_no_error(error);
        return dst;
}

static void log_command(const char *what, const TbCommandResult *res) {
        g_autofree char *st = tb_wait_status_to_string(res->wait_status);
        note("%s: %s\n", what, st);
        if (res->out && *res->out)
                note("  stdout: %s\n", res->out);
        if (res->err && *res->err)
                note("  stderr: %s\n", res->err);
}

static void summarise(const char *path, TbTraceSummary *s) {
        g_autoptr(GError) error = NULL;
        g_autofree char *desc = NULL;

        if (!tb_trace_file_read(path, s, &error))
                g_error("trace file does not decode: %s", error->message);
        desc = tb_trace_summary_describe(s);
        note("%s: %s\n", path, desc);
}

/* What every complete trace must have. */
static void assert_trace_complete(const TbTraceSummary *s) {
        g_assert_cmpuint(s->n_packets, >, 0);
        g_assert_true(s->has_clock_snapshot);
        g_assert_true(s->clock_is_boottime);
        g_assert_true(s->has_system_info);
        g_assert_true(s->has_utsname);
        g_assert_true(s->has_tracing_started);
        g_assert_true(s->has_trace_config);
        if (s->first_problem)
                note("sequence problem: %s\n", s->first_problem);
        g_assert_true(s->all_have_sequence_id);
        g_assert_true(s->first_packets_flagged);
        g_assert_cmpuint(s->n_ftrace_bundles, >, 0);
        g_assert_cmpuint(s->n_sched_switch + s->n_compact_switch, >, 0);
}

static void assert_busy_seen(const TbTraceSummary *s, const TbBusy *busy) {
        if (!tb_trace_summary_has_switch(s, busy->pid, busy->comm) &&
            !tb_trace_summary_has_switch(s, busy->peer_pid, busy->comm)) {
                note("no sched_switch with pid %d/%d and comm \"%s\" (pid %d seen with any comm: %d)\n", busy->pid,
                     busy->peer_pid, busy->comm, busy->pid, tb_trace_summary_has_switch(s, busy->pid, NULL));
                g_assert_not_reached();
        }
}

static char *wait_state(const char *path, const char *want, guint timeout_ms) {
        gint64 deadline = g_get_monotonic_time() + (gint64) timeout_ms * 1000;

        for (;;) {
                g_autoptr(GError) error = NULL;
                char *state = tb_session_state(tb_bus()->conn, path, &error);

                if (state && g_str_equal(state, want))
                        return state;
                if (g_get_monotonic_time() > deadline) {
                        note("session %s: state %s, expected %s\n", path, state ? state : error->message, want);
                        return state;
                }
                g_free(state);
                g_usleep(20 * 1000);
        }
}

static int open_output(const char *name, char **ret_path) {
        char *path = g_build_filename(tb_bus()->tmpdir, name, NULL);
        int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

        g_assert_cmpint(fd, >=, 0);
        *ret_path = path;
        return fd;
}

static char *traces_dir(void) {
        return g_build_filename(tb_bus()->state_dir, "traces", NULL);
}

/* ===================================================================== */
/* Cases                                                                  */
/* ===================================================================== */

/* The harness itself: polkitd runs with our policy and the test rules. */
static void test_harness_polkit(void) {
        struct {
                const char *user;
                gboolean authorized, challenge;
        } expect[] = {
                { "tbuser", TRUE, FALSE },
                { "tbadmin", TRUE, FALSE },
                { "tbother", FALSE, FALSE },
                { "tbchallenge", FALSE, TRUE },
        };

        for (size_t i = 0; i < G_N_ELEMENTS(expect); i++) {
                ClientSpec spec = { .user = expect[i].user, .op = OP_HOLD_NAME, .output_fd = -1 };
                g_autoptr(GVariant) reply = NULL;
                g_autoptr(GError) error = NULL;
                g_autofree char *name = NULL, *err = NULL;
                GVariantBuilder subject;
                gboolean authorized, challenge;
                Client c;

                client_spawn(&spec, &c);
                name = client_expect(&c, 'N', 10000, &err);
                if (!name)
                        g_error("%s could not connect to the bus: %s", expect[i].user, err);
                g_variant_builder_init(&subject, G_VARIANT_TYPE("a{sv}"));
                g_variant_builder_add(&subject, "{sv}", "name", g_variant_new_string(name));
                reply = g_dbus_connection_call_sync(
                                tb_bus()->conn, "org.freedesktop.PolicyKit1", "/org/freedesktop/PolicyKit1/Authority",
                                "org.freedesktop.PolicyKit1.Authority", "CheckAuthorization",
                                g_variant_new("((sa{sv})sa{ss}us)", "system-bus-name", &subject, "org.tracebus.record",
                                              NULL, (guint32) 0, ""),
                                G_VARIANT_TYPE("((bba{ss}))"), G_DBUS_CALL_FLAGS_NONE, 10000, NULL, &error);
                g_assert_no_error(error);
                g_variant_get(reply, "((bb@a{ss}))", &authorized, &challenge, NULL);
                note("polkit org.tracebus.record for %s (%s): authorized=%d challenge=%d\n", expect[i].user, name,
                     authorized, challenge);
                client_finish(&c, 5000);
                g_assert_cmpint(authorized, ==, expect[i].authorized);
                g_assert_cmpint(challenge, ==, expect[i].challenge);
        }
}

/* (a) tbuser records with the CLI while a known busy process runs. */
static void test_cli_record(void) {
        g_autofree char *cli = cli_path();
        g_autofree char *dir = make_user_dir("tbuser", "out-cli");
        g_autofree char *out = g_build_filename(dir, "trace.pftrace", NULL);
        g_autofree char *decoded = NULL;
        const char *argv[] = { cli, "-t", "2s", "-o", out, "sched/sched_switch", "sched/sched_waking", NULL };
        g_auto(TbCommandResult) res = { 0 };
        g_auto(TbTraceSummary) s = { 0 };
        g_autoptr(GError) error = NULL;
        g_auto(GStrv) before = tb_tracebus_instances(), after = NULL;
        TbBusy busy;
        struct stat st;

        g_assert_true(tb_busy_start("tbbusy-cli", &busy, &error));
        g_assert_true(tb_run_as_user("tbuser", argv, &res, &error));
        tb_busy_stop(&busy);
        g_assert_no_error(error);
        log_command("tracebus -t 2s as tbuser", &res);
        g_assert_true(tb_command_succeeded(&res));

        g_assert_cmpint(stat(out, &st), ==, 0);
        g_assert_true(S_ISREG(st.st_mode));
        g_assert_cmpint(st.st_size, >, 0);
        summarise(out, &s);
        assert_trace_complete(&s);
        assert_busy_seen(&s, &busy);

        /* An independent decoder agrees: protoc with our .proto files. */
        g_assert_true(tb_trace_protoc_decode(tb_bus()->source_dir, out, &decoded, &error));
        g_assert_no_error(error);
        g_assert_true(strstr(decoded, "sched_switch") || strstr(decoded, "compact_sched"));
        g_assert_nonnull(strstr(decoded, "tracing_started: true"));

        after = tb_tracebus_instances();
        g_assert_cmpuint(g_strv_length(after), ==, g_strv_length(before));
}

/* (a2) The CLI with a config file in text format. */
static void test_cli_config_file(void) {
        g_autofree char *cli = cli_path();
        g_autofree char *dir = make_user_dir("tbuser", "out-cli-config");
        g_autofree char *cfg = g_build_filename(dir, "config.pbtxt", NULL);
        g_autofree char *out = g_build_filename(dir, "trace.pftrace", NULL);
        g_autofree char *text = config_text(1500);
        const char *argv[] = { cli, "-c", cfg, "--txt", "-o", out, NULL };
        g_auto(TbCommandResult) res = { 0 };
        g_auto(TbTraceSummary) s = { 0 };
        g_autoptr(GError) error = NULL;
        g_auto(TbUser) u = { 0 };
        TbBusy busy;

        g_assert_true(g_file_set_contents(cfg, text, -1, &error));
        g_assert_true(tb_user_lookup("tbuser", &u, NULL));
        g_assert_cmpint(chown(cfg, u.uid, u.gid), ==, 0);
        g_assert_true(tb_busy_start("tbbusy-cfg", &busy, &error));
        g_assert_true(tb_run_as_user("tbuser", argv, &res, &error));
        tb_busy_stop(&busy);
        log_command("tracebus -c config.pbtxt --txt as tbuser", &res);
        g_assert_true(tb_command_succeeded(&res));
        summarise(out, &s);
        assert_trace_complete(&s);
        assert_busy_seen(&s, &busy);
}

/* (a3) The CLI, refused: non-zero exit and a single line on stderr. */
static void test_cli_denied(void) {
        g_autofree char *cli = cli_path();
        g_autofree char *dir = make_user_dir("tbother", "out-cli-denied");
        g_autofree char *out = g_build_filename(dir, "trace.pftrace", NULL);
        const char *argv[] = { cli, "-t", "1s", "-o", out, "sched/sched_switch", NULL };
        g_auto(TbCommandResult) res = { 0 };
        g_autoptr(GError) error = NULL;
        g_autofree char *err = NULL;

        g_assert_true(tb_run_as_user("tbother", argv, &res, &error));
        log_command("tracebus as tbother", &res);
        g_assert_true(WIFEXITED(res.wait_status));
        g_assert_cmpint(WEXITSTATUS(res.wait_status), !=, 0);
        err = g_strstrip(g_strdup(res.err ? res.err : ""));
        g_assert_cmpstr(err, !=, "");
        g_assert_null(strchr(err, '\n'));
}

/* Splits busctl's output into tokens, honouring "..." with \ escapes. */
static char **busctl_tokens(const char *s) {
        GPtrArray *a = g_ptr_array_new();

        while (*s) {
                GString *t;
                while (*s == ' ' || *s == '\n' || *s == '\t')
                        s++;
                if (!*s)
                        break;
                t = g_string_new(NULL);
                if (*s == '"') {
                        for (s++; *s && *s != '"'; s++) {
                                if (*s == '\\' && s[1])
                                        s++;
                                g_string_append_c(t, *s);
                        }
                        if (*s)
                                s++;
                } else
                        while (*s && *s != ' ' && *s != '\n' && *s != '\t')
                                g_string_append_c(t, *s++);
                g_ptr_array_add(a, g_string_free(t, FALSE));
        }
        g_ptr_array_add(a, NULL);
        return (char **) g_ptr_array_free(a, FALSE);
}

static void snapshot_state(char ***ret_instances, char ***ret_files);

/* A file the service wrote for uid: a new regular file directly in
 * STATE_DIRECTORY/traces/<uid>/, owned by uid, mode 0600. */
static void assert_service_file(const char *file, uid_t uid) {
        g_autofree char *tdir = traces_dir();
        g_autofree char *user_dir = g_strdup_printf("%s/%u/", tdir, (unsigned) uid);
        struct stat st;

        note("service-written file %s (expected in %s)\n", file, user_dir);
        g_assert_true(g_str_has_prefix(file, user_dir));
        g_assert_null(strchr(file + strlen(user_dir), '/'));
        g_assert_cmpint(lstat(file, &st), ==, 0);
        g_assert_true(S_ISREG(st.st_mode));
        g_assert_cmpuint(st.st_uid, ==, uid);
        g_assert_cmpuint(st.st_mode & 07777, ==, 0600);
}

/* The one new regular file under traces/ since before, as an absolute path. */
static char *new_trace_file(char **files_before) {
        g_autofree char *tdir = traces_dir();
        g_auto(GStrv) now = tb_list_tree(tdir), added = tb_strv_added(files_before, now);
        char *found = NULL;

        for (size_t i = 0; added[i]; i++) {
                g_autofree char *full = g_build_filename(tdir, added[i], NULL);
                note("new in the trace dir: %s\n", added[i]);
                if (g_file_test(full, G_FILE_TEST_IS_REGULAR)) {
                        g_assert_null(found);
                        found = g_steal_pointer(&full);
                }
        }
        return found;
}

/* busctl's a{sv} output (a{sv} N "Key" t 1 "OutputPath" s "/x" ...) -> table. */
static GHashTable *busctl_stats(const char *out) {
        g_auto(GStrv) tok = busctl_tokens(out);
        GHashTable *h = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);

        g_assert_cmpstr(tok[0], ==, "a{sv}");
        for (size_t i = 2; tok[i] && tok[i + 1] && tok[i + 2]; i += 3)
                g_hash_table_insert(h, g_strdup(tok[i]), g_strdup(tok[i + 2]));
        return h;
}

/* (b1) tbuser with plain busctl: Start, then Stop. busctl leaves the bus
 * right after Start; a session writing into the trace directory starts
 * detached, so it keeps recording until Stop, whose OutputPath is a new file
 * of tbuser's in STATE_DIRECTORY/traces/<uid>/. */
static void test_busctl_service_file(void) {
        g_autofree char *config = config_text(20000);
        const char *start_argv[] = { "busctl", "--system", "call", TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_IFACE,
                                     "Start", "sa{sv}", config, "0", NULL };
        g_auto(TbCommandResult) start = { 0 }, stop = { 0 };
        g_autoptr(GError) error = NULL;
        g_autoptr(GHashTable) st = NULL;
        g_auto(GStrv) tok = NULL, inst = NULL, files = NULL;
        g_autofree char *state = NULL, *created = NULL;
        g_auto(TbTraceSummary) s = { 0 };
        g_auto(TbUser) u = { 0 };
        const char *path, *file;
        TbBusy busy;

        g_assert_true(tb_user_lookup("tbuser", &u, NULL));
        snapshot_state(&inst, &files);
        g_assert_true(tb_busy_start("tbbusy-ctl", &busy, &error));
        g_assert_true(tb_run_as_user("tbuser", start_argv, &start, &error));
        log_command("busctl Start as tbuser", &start);
        g_assert_true(tb_command_succeeded(&start));
        tok = busctl_tokens(start.out);
        g_assert_cmpuint(g_strv_length(tok), ==, 2);
        g_assert_cmpstr(tok[0], ==, "o");
        path = tok[1];
        g_assert_true(g_variant_is_object_path(path));
        g_assert_true(g_str_has_prefix(path, TB_MANAGER_PATH "/session/"));

        g_usleep(500 * 1000);
        state = tb_session_state(tb_bus()->conn, path, &error);
        g_assert_no_error(error);
        g_assert_cmpstr(state, ==, "recording");
        {
                const char *stop_argv[] = { "busctl", "--system", "call", TB_BUS_NAME, TB_MANAGER_PATH,
                                            TB_MANAGER_IFACE, "Stop", "o", path, NULL };
                g_assert_true(tb_run_as_user("tbuser", stop_argv, &stop, &error));
        }
        tb_busy_stop(&busy);
        log_command("busctl Stop as tbuser", &stop);
        g_assert_true(tb_command_succeeded(&stop));
        st = busctl_stats(stop.out);
        file = g_hash_table_lookup(st, "OutputPath");
        g_assert_nonnull(file);
        g_assert_cmpstr(g_hash_table_lookup(st, "Reason"), ==, "stopped");
        g_assert_true(tb_wait_session_over(tb_bus()->conn, path, NULL, 10000, &error));
        g_assert_no_error(error);
        {
                g_auto(GStrv) now = tb_tracebus_instances(), added = tb_strv_added(inst, now);
                g_assert_cmpuint(g_strv_length(added), ==, 0);
        }

        /* It is the one new file, and the service made it for tbuser. */
        created = new_trace_file(files);
        g_assert_cmpstr(created, ==, file);
        assert_service_file(file, u.uid);
        summarise(file, &s);
        assert_trace_complete(&s);
        assert_busy_seen(&s, &busy);
}

/* (b2) tbuser keeps the connection, then stops: Stop's OutputPath is the
 * file the service chose, and matches the session's OutputPath property. */
static void test_stop_output_path(void) {
        g_autofree char *path = NULL, *err = NULL, *state = NULL, *stats = NULL;
        g_autoptr(GHashTable) st = NULL;
        g_autoptr(GVariant) prop = NULL;
        g_autoptr(GError) error = NULL;
        g_auto(TbTraceSummary) s = { 0 };
        g_auto(TbUser) u = { 0 };
        const char *file;
        ClientSpec holder = { .user = "tbuser", .op = OP_START, .events = sched_events, .duration_ms = 60000,
                              .output_fd = -1, .hold = true };
        TbBusy busy;
        Client c;

        g_assert_true(tb_user_lookup("tbuser", &u, NULL));
        g_assert_true(tb_busy_start("tbbusy-path", &busy, &error));
        client_spawn(&holder, &c);
        path = client_expect(&c, 'O', 30000, &err);
        if (!path)
                g_error("tbuser's Start failed: %s", err);
        state = wait_state(path, "recording", 10000);
        g_assert_cmpstr(state, ==, "recording");
        prop = tb_get_property(tb_bus()->conn, path, TB_SESSION_IFACE, "OutputPath", &error);
        g_assert_no_error(error);
        g_usleep(500 * 1000);

        g_assert_cmpint(write(c.ctl_fd, "s", 1), ==, 1);
        stats = client_expect(&c, 'S', 30000, &err);
        client_finish(&c, 10000);
        tb_busy_stop(&busy);
        if (!stats)
                g_error("tbuser's Stop failed: %s", err);
        note("Stop stats:%s\n", stats);
        st = parse_stats(stats);
        file = g_hash_table_lookup(st, "OutputPath");
        g_assert_nonnull(file);
        g_assert_cmpstr(g_variant_get_string(prop, NULL), ==, file);
        g_assert_cmpstr(g_hash_table_lookup(st, "Reason"), ==, "stopped");
        assert_service_file(file, u.uid);
        summarise(file, &s);
        assert_trace_complete(&s);
        assert_busy_seen(&s, &busy);
}

/* (b3) busctl with DetachKey: the session outlives busctl's connection, and
 * a later busctl Stop returns OutputPath: the service's file for tbuser. */
static void test_busctl_detached(void) {
        g_autofree char *config = config_text(30000);
        const char *start_argv[] = { "busctl", "--system", "call", TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_IFACE,
                                     "Start", "sa{sv}", config, "1", "DetachKey", "s", "tb-detach-1", NULL };
        const char *is_argv[] = { "busctl", "--system", "call", TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_IFACE,
                                  "IsDetached", "s", "tb-detach-1", NULL };
        g_auto(TbCommandResult) start = { 0 }, isdet = { 0 }, stop = { 0 };
        g_autoptr(GError) error = NULL;
        g_autoptr(GHashTable) st = NULL;
        g_autoptr(GVariant) detached = NULL;
        g_auto(GStrv) tok = NULL;
        g_autofree char *state = NULL;
        g_auto(TbTraceSummary) s = { 0 };
        g_auto(TbUser) u = { 0 };
        const char *file;
        TbBusy busy;
        const char *path;

        g_assert_true(tb_user_lookup("tbuser", &u, NULL));
        g_assert_true(tb_busy_start("tbbusy-det", &busy, &error));
        g_assert_true(tb_run_as_user("tbuser", start_argv, &start, &error));
        log_command("busctl Start (DetachKey) as tbuser", &start);
        g_assert_true(tb_command_succeeded(&start));
        tok = busctl_tokens(start.out);
        g_assert_cmpuint(g_strv_length(tok), ==, 2);
        path = tok[1];

        /* busctl is gone; the session is not. */
        g_usleep(500 * 1000);
        state = tb_session_state(tb_bus()->conn, path, &error);
        g_assert_no_error(error);
        g_assert_cmpstr(state, ==, "recording");
        detached = tb_get_property(tb_bus()->conn, path, TB_SESSION_IFACE, "Detached", &error);
        g_assert_no_error(error);
        g_assert_true(g_variant_get_boolean(detached));
        g_assert_true(tb_run_as_user("tbuser", is_argv, &isdet, &error));
        log_command("busctl IsDetached as tbuser", &isdet);
        g_assert_true(tb_command_succeeded(&isdet));
        g_assert_cmpstr(g_strstrip(isdet.out), ==, "b true");

        {
                const char *stop_argv[] = { "busctl", "--system", "call", TB_BUS_NAME, TB_MANAGER_PATH,
                                            TB_MANAGER_IFACE, "Stop", "o", path, NULL };
                g_assert_true(tb_run_as_user("tbuser", stop_argv, &stop, &error));
        }
        tb_busy_stop(&busy);
        log_command("busctl Stop as tbuser", &stop);
        g_assert_true(tb_command_succeeded(&stop));
        st = busctl_stats(stop.out);
        file = g_hash_table_lookup(st, "OutputPath");
        g_assert_nonnull(file);
        g_assert_cmpstr(g_hash_table_lookup(st, "Reason"), ==, "stopped");
        g_assert_true(tb_wait_session_over(tb_bus()->conn, path, NULL, 10000, &error));
        assert_service_file(file, u.uid);
        summarise(file, &s);
        assert_trace_complete(&s);
        assert_busy_seen(&s, &busy);
}

static void snapshot_state(char ***ret_instances, char ***ret_files) {
        g_autofree char *tdir = traces_dir();
        *ret_instances = tb_tracebus_instances();
        *ret_files = tb_list_tree(tdir);
}

static void assert_nothing_created(char **instances_before, char **files_before) {
        g_auto(GStrv) inst = NULL, files = NULL, new_inst = NULL, new_files = NULL;

        /* Give a wrongly started session a moment to show up. */
        g_usleep(200 * 1000);
        snapshot_state(&inst, &files);
        new_inst = tb_strv_added(instances_before, inst);
        new_files = tb_strv_added(files_before, files);
        for (size_t i = 0; new_inst[i]; i++)
                note("new tracefs instance: %s\n", new_inst[i]);
        for (size_t i = 0; new_files[i]; i++)
                note("new file in the trace dir: %s\n", new_files[i]);
        g_assert_cmpuint(g_strv_length(new_inst), ==, 0);
        g_assert_cmpuint(g_strv_length(new_files), ==, 0);
}

/* (c) tbother may not record: AccessDenied, and nothing is created. */
static void test_denied(void) {
        g_auto(GStrv) inst = NULL, files = NULL;
        g_autofree char *config = config_text(1000);
        ClientSpec with_options = { .user = "tbother", .op = OP_START, .events = sched_events,
                                    .duration_ms = 1000, .output_fd = -1 };
        ClientSpec with_config = { .user = "tbother", .op = OP_START, .config = config, .output_fd = -1 };
        g_autofree char *e1 = NULL, *e2 = NULL;

        snapshot_state(&inst, &files);
        e1 = client_run(&with_options, NULL);
        e2 = client_run(&with_config, NULL);
        g_assert_cmpstr(e1, ==, ERR_ACCESS_DENIED);
        g_assert_cmpstr(e2, ==, ERR_ACCESS_DENIED);
        assert_nothing_created(inst, files);
}

/* (d) A polkit challenge on a call that does not allow interactive auth. */
static void test_challenge(void) {
        g_auto(GStrv) inst = NULL, files = NULL;
        ClientSpec spec = { .user = "tbchallenge", .op = OP_START, .events = sched_events, .duration_ms = 1000,
                            .output_fd = -1, .interactive = false };
        g_autofree char *e = NULL;

        snapshot_state(&inst, &files);
        e = client_run(&spec, NULL);
        g_assert_cmpstr(e, ==, ERR_INTERACTIVE);
        assert_nothing_created(inst, files);
}

/* (e) tbother cannot stop tbuser's session; tbuser can. */
static void test_stop_other_uid(void) {
        g_autofree char *out_path = NULL, *path = NULL, *err = NULL, *state = NULL, *stats = NULL;
        g_autofree char *e1 = NULL, *e2 = NULL;
        g_auto(GStrv) before = tb_tracebus_instances(), during = NULL, mine = NULL;
        g_autoptr(GHashTable) st = NULL;
        g_autoptr(GVariant) owner = NULL;
        g_auto(TbTraceSummary) s = { 0 };
        g_auto(TbUser) u = { 0 };
        g_autoptr(GError) error = NULL;
        int fd = open_output("stop-other.pftrace", &out_path);
        ClientSpec holder = { .user = "tbuser", .op = OP_START, .events = sched_events, .duration_ms = 60000,
                              .output_fd = fd, .hold = true };
        TbBusy busy;
        Client c;

        g_assert_true(tb_user_lookup("tbuser", &u, NULL));
        g_assert_true(tb_busy_start("tbbusy-stop", &busy, &error));
        client_spawn(&holder, &c);
        close(fd);
        path = client_expect(&c, 'O', 30000, &err);
        if (!path)
                g_error("tbuser's Start failed: %s", err);
        note("tbuser's session: %s\n", path);
        state = wait_state(path, "recording", 10000);
        g_assert_cmpstr(state, ==, "recording");
        owner = tb_get_property(tb_bus()->conn, path, TB_SESSION_IFACE, "OwnerUid", &error);
        g_assert_no_error(error);
        g_assert_cmpuint(g_variant_get_uint32(owner), ==, u.uid);
        during = tb_tracebus_instances();
        mine = tb_strv_added(before, during);
        g_assert_cmpuint(g_strv_length(mine), ==, 1);
        g_assert_true(g_str_has_prefix(mine[0], "tracebus-"));

        {
                ClientSpec via_manager = { .user = "tbother", .op = OP_STOP_MANAGER, .path = path, .output_fd = -1 };
                ClientSpec via_session = { .user = "tbother", .op = OP_STOP_SESSION, .path = path, .output_fd = -1 };
                e1 = client_run(&via_manager, NULL);
                e2 = client_run(&via_session, NULL);
        }
        g_assert_cmpstr(e1, ==, ERR_ACCESS_DENIED);
        /* tracebusd shows a session object only to its owner and root, so
         * Session.Stop() from another UID may also find no object at all. */
        if (g_strcmp0(e2, "org.freedesktop.DBus.Error.UnknownObject") != 0)
                g_assert_cmpstr(e2, ==, ERR_ACCESS_DENIED);
        g_free(state);
        state = tb_session_state(tb_bus()->conn, path, &error);
        g_assert_no_error(error);
        g_assert_cmpstr(state, ==, "recording");
        {
                g_autofree char *inst = g_build_filename(TB_INSTANCES_DIR, mine[0], NULL);
                g_assert_true(g_file_test(inst, G_FILE_TEST_IS_DIR));
        }

        /* The owner stops it. */
        g_usleep(300 * 1000);
        g_assert_cmpint(write(c.ctl_fd, "s", 1), ==, 1);
        stats = client_expect(&c, 'S', 30000, &err);
        client_finish(&c, 10000);
        tb_busy_stop(&busy);
        if (!stats)
                g_error("tbuser's Stop failed: %s", err);
        note("Stop stats:%s\n", stats);
        st = parse_stats(stats);
        g_assert_nonnull(g_hash_table_lookup(st, "Events"));
        g_assert_nonnull(g_hash_table_lookup(st, "Bytes"));
        g_assert_nonnull(g_hash_table_lookup(st, "EventsLost"));
        g_assert_cmpstr(g_hash_table_lookup(st, "Reason"), ==, "stopped");
        /* The caller chose the output (an fd): no OutputPath. */
        g_assert_null(g_hash_table_lookup(st, "OutputPath"));
        g_assert_cmpuint(g_ascii_strtoull(g_hash_table_lookup(st, "Events"), NULL, 10), >, 0);

        g_assert_true(tb_wait_session_over(tb_bus()->conn, path, mine, 10000, &error));
        g_assert_no_error(error);
        summarise(out_path, &s);
        assert_trace_complete(&s);
        assert_busy_seen(&s, &busy);
}

/* (e2) tbadmin holds org.tracebus.manage: it may stop tbuser's session. */
static void test_admin_stops_other(void) {
        g_autofree char *out_path = NULL, *path = NULL, *err = NULL, *state = NULL, *stats = NULL;
        g_autofree char *e = NULL;
        g_autoptr(GHashTable) st = NULL;
        g_auto(TbTraceSummary) s = { 0 };
        g_autoptr(GError) error = NULL;
        int fd = open_output("admin-stop.pftrace", &out_path);
        ClientSpec holder = { .user = "tbuser", .op = OP_START, .events = sched_events, .duration_ms = 60000,
                              .output_fd = fd, .hold = true };
        Client c;

        client_spawn(&holder, &c);
        close(fd);
        path = client_expect(&c, 'O', 30000, &err);
        if (!path)
                g_error("tbuser's Start failed: %s", err);
        state = wait_state(path, "recording", 10000);
        g_assert_cmpstr(state, ==, "recording");
        g_usleep(300 * 1000);
        {
                ClientSpec admin = { .user = "tbadmin", .op = OP_STOP_MANAGER, .path = path, .output_fd = -1 };
                e = client_run(&admin, &stats);
        }
        g_assert_null(e);
        note("tbadmin's Stop stats:%s\n", stats);
        st = parse_stats(stats);
        g_assert_nonnull(g_hash_table_lookup(st, "Events"));
        g_assert_true(tb_wait_session_over(tb_bus()->conn, path, NULL, 10000, &error));
        g_assert_no_error(error);
        client_finish(&c, 5000);
        summarise(out_path, &s);
        assert_trace_complete(&s);
}

/* (f) The client is killed with SIGKILL while recording. */
static void test_client_killed(void) {
        g_autofree char *out_path = NULL, *path = NULL, *err = NULL, *state = NULL;
        g_auto(GStrv) before = tb_tracebus_instances(), during = NULL, mine = NULL;
        g_auto(TbTraceSummary) s = { 0 };
        g_autoptr(GError) error = NULL;
        int fd = open_output("killed.pftrace", &out_path), status;
        ClientSpec holder = { .user = "tbuser", .op = OP_START, .events = sched_events, .duration_ms = 60000,
                              .output_fd = fd, .hold = true };
        TbBusy busy;
        Client c;
        struct stat st1, st2;

        g_assert_true(tb_busy_start("tbbusy-kill", &busy, &error));
        client_spawn(&holder, &c);
        close(fd);
        path = client_expect(&c, 'O', 30000, &err);
        if (!path)
                g_error("tbuser's Start failed: %s", err);
        state = wait_state(path, "recording", 10000);
        g_assert_cmpstr(state, ==, "recording");
        during = tb_tracebus_instances();
        mine = tb_strv_added(before, during);
        g_assert_cmpuint(g_strv_length(mine), ==, 1);
        note("session %s, instance %s; killing the client\n", path, mine[0]);

        g_usleep(1000 * 1000);
        g_assert_cmpint(kill(c.pid, SIGKILL), ==, 0);
        status = client_finish(&c, 5000);
        g_assert_true(WIFSIGNALED(status));

        g_assert_true(tb_wait_session_over(tb_bus()->conn, path, mine, 15000, &error));
        g_assert_no_error(error);
        tb_busy_stop(&busy);
        /* Complete means nothing is appended any more, too. */
        g_assert_cmpint(stat(out_path, &st1), ==, 0);
        g_usleep(300 * 1000);
        g_assert_cmpint(stat(out_path, &st2), ==, 0);
        g_assert_cmpint(st1.st_size, ==, st2.st_size);
        summarise(out_path, &s);
        assert_trace_complete(&s);
        assert_busy_seen(&s, &busy);
}

/* (g) Bad input gets the named errors. */
static void test_bad_input(void) {
        g_auto(GStrv) inst = NULL, files = NULL;
        const char *const unknown[] = { "sched/no_such_event", NULL };
        const char *unknown_config = "duration_ms: 1000 data_sources { config { name: \"linux.ftrace\" "
                                     "ftrace_config { ftrace_events: \"sched/no_such_event\" } } }";
        ClientSpec bad_config = { .user = "tbuser", .op = OP_START, .config = "this is { not a TraceConfig",
                                  .output_fd = -1 };
        ClientSpec bad_event = { .user = "tbuser", .op = OP_START, .events = unknown, .duration_ms = 1000,
                                 .output_fd = -1 };
        ClientSpec bad_event_config = { .user = "tbuser", .op = OP_START, .config = unknown_config,
                                        .output_fd = -1 };
        g_autofree char *e1 = NULL, *e2 = NULL, *e3 = NULL;

        snapshot_state(&inst, &files);
        e1 = client_run(&bad_config, NULL);
        e2 = client_run(&bad_event, NULL);
        e3 = client_run(&bad_event_config, NULL);
        g_assert_cmpstr(e1, ==, ERR_INVALID_CONFIG);
        g_assert_cmpstr(e2, ==, ERR_UNKNOWN_EVENT);
        g_assert_cmpstr(e3, ==, ERR_UNKNOWN_EVENT);
        assert_nothing_created(inst, files);
}

/* (h) After everything: the service still runs and left no instance. */
static void test_service_survived(void) {
        g_auto(GStrv) inst = tb_tracebus_instances();
        g_autoptr(GError) error = NULL;

        g_assert_true(tb_pid_alive(tb_bus()->service_pid));
        g_assert_true(tb_wait_for_name(tb_bus()->conn, TB_BUS_NAME, 0, 100, &error));
        g_assert_no_error(error);
        for (size_t i = 0; inst[i]; i++)
                note("left-over instance: %s\n", inst[i]);
        g_assert_cmpuint(g_strv_length(inst), ==, 0);
}

/* In the parent, last (assertions are non-fatal here): SIGTERM while a
 * session records makes the service finalize it and exit cleanly. */
static void test_shutdown(void) {
        g_autofree char *out_path = NULL, *path = NULL, *err = NULL, *state = NULL, *desc = NULL, *st_str = NULL;
        g_auto(GStrv) inst = NULL;
        g_auto(TbTraceSummary) s = { 0 };
        g_autoptr(GError) error = NULL;
        int fd = open_output("shutdown.pftrace", &out_path), status;
        ClientSpec holder = { .user = "tbuser", .op = OP_START, .events = sched_events, .duration_ms = 60000,
                              .output_fd = fd, .hold = true };
        Client c;

        client_spawn(&holder, &c);
        close(fd);
        path = client_expect(&c, 'O', 30000, &err);
        if (!path)
                note("tbuser's Start failed: %s\n", err);
        g_assert_nonnull(path);
        if (path) {
                state = wait_state(path, "recording", 10000);
                g_assert_cmpstr(state, ==, "recording");
                g_usleep(500 * 1000);
        }

        status = tb_system_bus_stop_service(tb_bus(), 30000);
        st_str = tb_wait_status_to_string(status);
        g_printerr("# tracebusd after SIGTERM with a session recording: %s\n", st_str);
        g_assert_true(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
        client_finish(&c, 5000);

        inst = tb_tracebus_instances();
        for (size_t i = 0; inst[i]; i++)
                note("left-over instance: %s\n", inst[i]);
        g_assert_cmpuint(g_strv_length(inst), ==, 0);

        if (path) {
                if (tb_trace_file_read(out_path, &s, &error)) {
                        desc = tb_trace_summary_describe(&s);
                        note("%s: %s\n", out_path, desc);
                        g_assert_true(s.has_clock_snapshot && s.has_tracing_started);
                        g_assert_cmpuint(s.n_sched_switch + s.n_compact_switch, >, 0);
                } else {
                        note("trace of the session cut by SIGTERM does not decode: %s\n", error->message);
                        g_assert_not_reached();
                }
        }
        if (g_test_failed())
                tb_test_note_failure();
}

int main(int argc, char **argv) {
        bool service = !g_getenv("TRACEBUS_TEST_NO_SERVICE");

        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();

        tb_test_add_isolated("/bus/integration/harness-polkit", test_harness_polkit);
        if (service) {
                tb_test_add_isolated("/bus/integration/a-cli-record", test_cli_record);
                tb_test_add_isolated("/bus/integration/a-cli-config-file", test_cli_config_file);
                tb_test_add_isolated("/bus/integration/a-cli-denied", test_cli_denied);
                tb_test_add_isolated("/bus/integration/b-busctl-service-file", test_busctl_service_file);
                tb_test_add_isolated("/bus/integration/b-stop-output-path", test_stop_output_path);
                tb_test_add_isolated("/bus/integration/b-busctl-detached", test_busctl_detached);
                tb_test_add_isolated("/bus/integration/c-denied", test_denied);
                tb_test_add_isolated("/bus/integration/d-challenge", test_challenge);
                tb_test_add_isolated("/bus/integration/e-stop-other-uid", test_stop_other_uid);
                tb_test_add_isolated("/bus/integration/e-admin-stops-other", test_admin_stops_other);
                tb_test_add_isolated("/bus/integration/f-client-killed", test_client_killed);
                tb_test_add_isolated("/bus/integration/g-bad-input", test_bad_input);
                tb_test_add_isolated("/bus/integration/h-service-survived", test_service_survived);
                g_test_add_func("/bus/integration/z-shutdown", test_shutdown);
        }
        return tb_test_run(service ? TB_START_SERVICE : 0);
}
