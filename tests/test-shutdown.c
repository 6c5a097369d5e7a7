/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite: the service's own start and end, with a stack of its own (the
 * harness cannot restart tracebusd, and SIGTERM ends it for good).
 *
 *  - a stale tracefs instance "tracebus-<dead pid>-1", made before the
 *    service starts, is gone once it runs;
 *  - SIGTERM with several sessions (attached, detached under a key, keyless
 *    in the trace dir, attached through Attach): every trace complete and
 *    decodable, every instance gone, exit status 0, and the attached clients
 *    got SessionEnded with reason "service-shutdown".
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "system-bus.h"
#include "tb-client.h"
#include "trace-file.h"

#define ENV_STALE "TRACEBUS_TEST_STALE_INSTANCE"

/* Made in main(), before the stack (and so the service) starts. */
static bool make_stale_instance(void) {
        g_autofree char *name = NULL, *dir = NULL;
        pid_t pid;

        /* A pid that surely runs nothing: a child we have reaped. */
        fflush(NULL);
        pid = fork();
        if (pid < 0)
                return false;
        if (pid == 0)
                _exit(0);
        (void) waitpid(pid, NULL, 0);
        name = g_strdup_printf("tracebus-%d-1", (int) pid);
        dir = g_build_filename(TB_INSTANCES_DIR, name, NULL);
        if (mkdir(dir, 0750) < 0) {
                g_printerr("# mkdir %s: %s\n", dir, g_strerror(errno));
                return false;
        }
        g_printerr("# made the stale instance %s\n", name);
        g_setenv(ENV_STALE, name, TRUE);
        return true;
}

static void test_stale_instance_removed(void) {
        const char *name = g_getenv(ENV_STALE);
        g_autofree char *dir = NULL, *log_path = NULL, *log = NULL, *needle = NULL;
        bool left;

        g_assert_nonnull(name);
        dir = g_build_filename(TB_INSTANCES_DIR, name, NULL);
        left = g_file_test(dir, G_FILE_TEST_EXISTS);
        if (left) {
                note("the service left the stale instance %s; removing it\n", name);
                (void) rmdir(dir);
        }
        g_assert_false(left);
        log_path = g_build_filename(tb_bus()->log_dir, "service.log", NULL);
        g_assert_true(g_file_get_contents(log_path, &log, NULL, NULL));
        needle = g_strdup_printf("Removed tracefs instance %s", name);
        g_assert_nonnull(strstr(log, needle));
}

/* Parent side: assertions are non-fatal here, so nothing may g_error(). */
static void check_trace(const char *what, const char *path) {
        g_auto(TbTraceSummary) s = { 0 };
        g_autoptr(GError) error = NULL;
        g_autofree char *desc = NULL;
        bool disabled = false, end_stats = false;

        if (!path) {
                note("%s: no trace file\n", what);
                g_assert_nonnull(path);
                return;
        }
        if (!tb_trace_file_read(path, &s, &error)) {
                note("%s: %s does not decode: %s\n", what, path, error->message);
                g_assert_not_reached();
                return;
        }
        desc = tb_trace_summary_describe(&s);
        note("%s: %s: %s\n", what, path, desc);
        g_assert_true(s.has_clock_snapshot && s.clock_is_boottime && s.has_system_info && s.has_tracing_started &&
                      s.has_trace_config);
        g_assert_true(s.all_have_sequence_id && s.first_packets_flagged);
        g_assert_cmpuint(s.n_ftrace_bundles, >, 0);
        g_assert_cmpuint(s.n_sched_switch + s.n_compact_switch, >, 0);
        g_assert_true(trace_closing_packets(path, &disabled, &end_stats, &error));
        note("%s: tracing_disabled=%d END_OF_TRACE stats=%d\n", what, disabled, end_stats);
        g_assert_true(disabled || end_stats);
}

static void check_ended(Client *c, const char *who, const char *path) {
        g_autofree char *err = NULL, *ended = client_expect(c, 'X', 10000, &err);
        g_auto(GStrv) f = NULL;

        if (!ended) {
                note("%s got no SessionEnded: %s\n", who, err);
                g_assert_nonnull(ended);
                return;
        }
        note("%s: SessionEnded %s\n", who, ended);
        f = g_strsplit(ended, "\t", 3);
        g_assert_cmpstr(f[0], ==, path);
        g_assert_cmpstr(f[1], ==, "service-shutdown");
}

static char *start_expect(Client *c, const char *who) {
        g_autofree char *err = NULL;
        char *path = client_expect(c, 'O', 30000, &err);

        if (!path)
                note("%s's Start failed: %s\n", who, err);
        g_assert_nonnull(path);
        return path;
}

static void test_sigterm_sessions(void) {
        g_autofree char *cfg = config_text(60000);
        g_autofree char *out_a = NULL, *out_b = NULL, *out_d = NULL, *file_c = NULL;
        g_autofree char *path_a = NULL, *path_b = NULL, *path_c = NULL, *path_d = NULL, *name = NULL, *err = NULL;
        g_autofree char *att = NULL, *st_str = NULL, *prefix = NULL;
        int fd_a = open_output("shutdown-attached.pftrace", &out_a);
        int fd_b = open_output("shutdown-detached.pftrace", &out_b);
        int fd_d = open_output("shutdown-reattached.pftrace", &out_d);
        ClientSpec sa = { .user = "tbuser", .op = OP_START, .config = cfg, .output_fd = fd_a, .hold = true };
        ClientSpec sb = { .user = "tbuser", .op = OP_START, .config = cfg, .output_fd = fd_b,
                          .detach_key = "shutdown-key" };
        ClientSpec sc = { .user = "tbadmin", .op = OP_START, .config = cfg, .output_fd = -1 };
        ClientSpec sd = { .user = "tbadmin", .op = OP_START, .config = cfg, .output_fd = fd_d,
                          .detach_key = "shutdown-attach" };
        ClientSpec se = { .user = "tbadmin", .op = OP_HOLD_NAME, .output_fd = -1 };
        g_autoptr(GError) error = NULL;
        g_auto(GStrv) inst = NULL;
        const char *paths[4];
        TbBusy busy;
        Client a, e;
        int status;

        g_assert_true(tb_busy_start("tbbusy-term", &busy, &error));
        /* A: attached (holds the connection that started it). */
        client_spawn(&sa, &a);
        close(fd_a);
        path_a = start_expect(&a, "tbuser (attached)");
        /* B: detached under a key; C: keyless in the trace dir; both clients gone. */
        g_free(client_run(&sb, &path_b));
        close(fd_b);
        g_free(client_run(&sc, &path_c));
        /* D: started detached, then attached by another client E. */
        g_free(client_run(&sd, &path_d));
        close(fd_d);
        g_assert_nonnull(path_b);
        g_assert_nonnull(path_c);
        g_assert_nonnull(path_d);
        client_spawn(&se, &e);
        name = client_expect(&e, 'N', 10000, &err);
        att = client_cmd(&e, "attach shutdown-attach", 'O', &err);
        if (!att)
                note("Attach failed: %s\n", err);
        g_assert_cmpstr(att, ==, path_d);
        if (!path_a || !path_b || !path_c || !path_d) {
                tb_test_note_failure();
                return;
        }
        paths[0] = path_a, paths[1] = path_b, paths[2] = path_c, paths[3] = path_d;
        for (size_t i = 0; i < G_N_ELEMENTS(paths); i++) {
                g_autofree char *state = wait_state(paths[i], "recording", 10000);
                g_assert_cmpstr(state, ==, "recording");
        }
        {
                g_autoptr(GVariant) v = tb_get_property(tb_bus()->conn, path_c, TB_SESSION_IFACE, "OutputPath", &error);
                g_assert_no_error(error);
                if (v)
                        file_c = g_variant_dup_string(v, NULL);
        }
        g_usleep(800 * 1000);

        prefix = g_strdup_printf("tracebus-%d-", (int) tb_bus()->service_pid);
        status = tb_system_bus_stop_service(tb_bus(), 30000);
        st_str = tb_wait_status_to_string(status);
        note("tracebusd after SIGTERM with 4 sessions: %s\n", st_str);
        g_assert_true(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
        tb_busy_stop(&busy);

        check_ended(&a, "tbuser's attached client", path_a);
        check_ended(&e, "tbadmin's attaching client", path_d);
        client_finish(&a, 5000);
        client_finish(&e, 5000);

        /* Only its own: other test runs on the machine may have instances. */
        inst = tb_tracebus_instances();
        for (size_t i = 0; inst[i]; i++) {
                note("instance after the service exited: %s%s\n", inst[i],
                     g_str_has_prefix(inst[i], prefix) ? " (left by it)" : " (another tracebusd's)");
                g_assert_false(g_str_has_prefix(inst[i], prefix));
        }

        check_trace("attached", out_a);
        check_trace("detached with a key", out_b);
        check_trace("keyless in the trace dir", file_c);
        check_trace("re-attached", out_d);
        if (g_test_failed())
                tb_test_note_failure();
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();

        if (!g_test_subprocess() && !make_stale_instance()) {
                printf("Bail out! could not make a stale tracefs instance\n");
                return 1;
        }
        tb_test_add_isolated("/bus/shutdown/a-stale-instance-removed", test_stale_instance_removed);
        /* In the parent: only the stack's owner can SIGTERM the service. */
        g_test_add_func("/bus/shutdown/z-sigterm-sessions", test_sigterm_sessions);
        return tb_test_run(TB_START_SERVICE);
}
