/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite: apps built with upstream Perfetto's SDK record into tracebus sessions. A
 * config naming track_event (or an app's own data source) sets up every app of the
 * session's owner that registered it, before or after the session started; what the
 * apps write is in the trace, each packet stamped once with the app's uid and pid on a
 * sequence of its own; another user's app is set up only by a session of root.
 */
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli-util.h"
#include "system-bus.h"
#include "tb-client.h"
#include "test-util.h"
#include "trace-writer.h"
#include "trace.pb-c.h"

#define REGISTER_TIMEOUT_MS 20000

#define TRACK_EVENT_CONFIG "duration_ms: %u\nbuffers { size_kb: 4096 }\n" \
        "data_sources { config { name: \"track_event\" track_event_config { enabled_categories: \"*\" } } }\n"

static char *producer_socket(void) {
        return g_build_filename(tb_bus()->tmpdir, TB_PRODUCER_SOCKET, NULL);
}

static GPid spawn_app(const char *user, const char *program, TbUser *u) {
        g_autofree char *sock = producer_socket();

        return tb_spawn_sdk_app(user, program, sock, u);
}

/* ListProducers as root names @program's data source @source for @pid. */
static bool registered(GPid pid, const char *source) {
        const char *argv[] = { "busctl", "--system", "call", TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_IFACE,
                               "ListProducers", NULL };
        g_autofree char *pid_text = g_strdup_printf(" %d ", (int) pid);
        gint64 deadline = g_get_monotonic_time() + (gint64) tb_scaled_ms(REGISTER_TIMEOUT_MS) * 1000;

        while (g_get_monotonic_time() < deadline) {
                g_auto(TbCommandResult) res = { 0 };
                g_autoptr(GError) error = NULL;

                g_assert_true(tb_run_as_user(NULL, argv, &res, &error));
                if (res.out && strstr(res.out, pid_text) && strstr(res.out, source))
                        return true;
                g_usleep(100 * 1000);
        }
        return false;
}

/* The rows of @sql's answer on @trace, without the header line and the quotes. */
static char *tp_query(const char *trace, const char *sql) {
        g_autofree char *tp = tb_perfetto_program("bin", "trace_processor_shell");
        const char *argv[] = { tp, "-Q", sql, trace, NULL };
        g_autofree char *err = NULL;
        g_autoptr(GError) error = NULL;
        char *out = NULL;
        int status = 0;

        g_assert_true(g_spawn_sync(NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &status, &error));
        if (!g_spawn_check_wait_status(status, NULL))
                g_error("trace_processor_shell failed on %s for \"%s\": %s", trace, sql, err);
        g_test_message("%s: %s", sql, out);
        return out;
}

/* DrawGame and its two DrawPlayer slices, player_number 1 and 2, on one thread's track;
 * no import error. */
static void assert_game_drawn(const char *trace) {
        g_autofree char *slices = tp_query(trace, "select s.name, a.int_value from slice s left join args a "
                                                  "on a.arg_set_id = s.arg_set_id and a.key = 'debug.player_number' "
                                                  "join thread_track t on s.track_id = t.id order by s.ts");
        g_autofree char *errors = tp_query(trace, "select count(*) from stats where severity in ('error', 'data_loss') "
                                                  "and value > 0 and name not like 'ftrace%'");

        g_assert_nonnull(strstr(slices, "\"DrawGame\""));
        g_assert_nonnull(strstr(slices, "\"DrawPlayer\",1"));
        g_assert_nonnull(strstr(slices, "\"DrawPlayer\",2"));
        g_assert_nonnull(strstr(errors, "\n0"));
}

static void assert_no_game(const char *trace) {
        g_autofree char *slices = tp_query(trace, "select count(*) from slice where name like 'Draw%'");

        g_assert_nonnull(strstr(slices, "\n0"));
}

static Tracebus__Trace *read_trace(const char *path) {
        g_autofree char *data = NULL;
        gsize len = 0;
        Tracebus__Trace *t;

        g_assert_true(g_file_get_contents(path, &data, &len, NULL));
        t = tracebus__trace__unpack(NULL, len, (const uint8_t *) data);
        g_assert_nonnull(t);
        return t;
}

/* Every packet with an app's uid carries it once (protobuf-c keeps the last; a forged
 * one would be an unknown repeat, so the packet's own bytes are counted too), with the
 * app's pid, on a sequence above the service's own. Returns how many there are. */
static guint assert_app_packets(const char *path, uid_t uid, pid_t pid) {
        Tracebus__Trace *t = read_trace(path);
        guint n = 0;

        for (size_t i = 0; i < t->n_packet; i++) {
                const Tracebus__TracePacket *p = t->packet[i];

                if (!p->has_trusted_pid)
                        continue;
                g_assert_true(p->has_trusted_uid);
                g_assert_cmpint(p->trusted_uid, ==, (int32_t) uid);
                g_assert_cmpint(p->trusted_pid, ==, (int32_t) pid);
                g_assert_cmpuint(p->trusted_packet_sequence_id, >=, _TRACE_SEQUENCE_MAX);
                n++;
        }
        tracebus__trace__free_unpacked(t, NULL);
        return n;
}

static char *write_config(const char *user, const char *dir, guint duration_ms) {
        g_autofree char *text = g_strdup_printf(TRACK_EVENT_CONFIG, duration_ms);

        return user_file(user, dir, "te.pbtxt", text, -1);
}

static void wait_exit(GPid pid) {
        gint64 deadline = g_get_monotonic_time() + (gint64) tb_scaled_ms(REGISTER_TIMEOUT_MS) * 1000;

        while (waitpid(pid, NULL, WNOHANG) == 0) {
                if (g_get_monotonic_time() > deadline) {
                        tb_kill_child(pid);
                        return;
                }
                g_usleep(50 * 1000);
        }
}

/* The owner's app, connected before the session starts, records its slices. */
static void case_track_event(void) {
        g_autofree char *dir = make_user_dir("tbuser", "ps-te");
        g_autofree char *config = write_config("tbuser", dir, 4000);
        g_autofree char *out = g_build_filename(dir, "te.pftrace", NULL);
        g_auto(TbCommandResult) res = { 0 };
        g_auto(TbUser) u = { 0 };
        GPid app = spawn_app("tbuser", "example_system_wide", &u);

        g_assert_true(registered(app, "track_event"));
        run_cli("tbuser", &res, "-c", config, "--txt", "-o", out, NULL);
        assert_exit(&res, 0);
        wait_exit(app);
        assert_game_drawn(out);
        g_assert_cmpuint(assert_app_packets(out, u.uid, app), >, 0);
}

/* An app that starts after the session did is set up when it registers. */
static void case_app_after_start(void) {
        g_autofree char *dir = make_user_dir("tbuser", "ps-late");
        g_autofree char *config = write_config("tbuser", dir, 6000);
        g_autofree char *out = g_build_filename(dir, "late.pftrace", NULL);
        const char *args[] = { "-c", config, "--txt", "-o", out, NULL };
        g_auto(TbUser) u = { 0 };
        CliProc cli = { 0 };
        GPid app;

        cli_spawn("tbuser", args, -1, &cli);
        g_assert_true(cli_proc_expect(&cli, "no producer has registered it", tb_scaled_ms(REGISTER_TIMEOUT_MS)));
        app = spawn_app("tbuser", "example_system_wide", &u);
        g_assert_cmpint(cli_proc_wait(&cli, tb_scaled_ms(30000)), ==, 0);
        cli_proc_clear(&cli);
        wait_exit(app);
        assert_game_drawn(out);
        g_assert_cmpuint(assert_app_packets(out, u.uid, app), >, 0);
}

/* Another user's app is not set up by tbuser's session (a warning says none registered
 * it), and is by root's. */
static void case_isolation(void) {
        g_autofree char *dir = make_user_dir("tbuser", "ps-iso");
        g_autofree char *config = write_config("tbuser", dir, 3000);
        g_autofree char *out = g_build_filename(dir, "iso.pftrace", NULL);
        g_autofree char *root_out = g_build_filename(tb_bus()->tmpdir, "ps-iso-root.pftrace", NULL);
        g_auto(TbCommandResult) res = { 0 }, root = { 0 };
        g_auto(TbUser) other = { 0 };
        GPid app = spawn_app("tbother", "example_system_wide", &other);

        g_assert_true(registered(app, "track_event"));
        run_cli("tbuser", &res, "-c", config, "--txt", "-o", out, NULL);
        assert_exit(&res, 0);
        assert_stderr_has(&res, "track_event: no producer has registered it");
        assert_no_game(out);
        g_assert_cmpuint(assert_app_packets(out, other.uid, app), ==, 0);

        run_cli(NULL, &root, "-c", config, "--txt", "-o", root_out, NULL);
        assert_exit(&root, 0);
        wait_exit(app);
        assert_game_drawn(root_out);
        g_assert_cmpuint(assert_app_packets(root_out, other.uid, app), >, 0);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();

        tb_test_add_isolated("/bus/producer-sessions/01-track-event", case_track_event);
        tb_test_add_isolated("/bus/producer-sessions/02-app-after-start", case_app_after_start);
        tb_test_add_isolated("/bus/producer-sessions/03-isolation", case_isolation);
        return tb_test_run(TB_START_SERVICE);
}
