/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite: the producer socket. tracebusd binds $PERFETTO_PRODUCER_SOCK_NAME (TMP/
 * producer.sock, set by the harness); upstream Perfetto's SDK example apps, started as
 * test users, connect, register their data sources, and Manager.ListProducers shows each
 * user their own and an admin all. Hostile clients (garbage, a frame over the cap, a
 * flood of connections from one user) lose their connections while other callers are
 * answered as fast as before.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli-util.h"
#include "system-bus.h"
#include "test-util.h"

#define REGISTER_TIMEOUT_MS 20000

static char *producer_socket(void) {
        return g_build_filename(tb_bus()->tmpdir, TB_PRODUCER_SOCKET, NULL);
}

static GPid spawn_app_as(const char *user, const char *program, TbUser *u) {
        g_autofree char *sock = producer_socket();

        return tb_spawn_sdk_app(user, program, sock, u);
}

static void kill_app(GPid pid) {
        tb_kill_child(pid);
}

/* ListProducers as @user (NULL: root), as busctl prints it. */
static char *list_as(const char *user) {
        const char *argv[] = { "busctl", "--system", "call", TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_IFACE,
                               "ListProducers", NULL };
        g_auto(TbCommandResult) res = { 0 };
        g_autoptr(GError) error = NULL;

        g_assert_true(tb_run_as_user(user, argv, &res, &error));
        if (!tb_command_succeeded(&res))
                g_error("ListProducers as %s: %s", user ?: "root", res.err);
        g_test_message("ListProducers as %s: %s", user ?: "root", res.out);
        return g_steal_pointer(&res.out);
}

static bool wait_listed(const char *user, const char *const *needles) {
        gint64 deadline = g_get_monotonic_time() + (gint64) tb_scaled_ms(REGISTER_TIMEOUT_MS) * 1000;

        while (g_get_monotonic_time() < deadline) {
                g_autofree char *out = list_as(user);
                bool all = true;

                for (size_t i = 0; needles[i]; i++)
                        all = all && strstr(out, needles[i]);
                if (all)
                        return true;
                g_usleep(200 * 1000);
        }
        return false;
}

#define SYSTEM_WIDE_SOURCE "\"track_event\""
#define SHLIB_SOURCE "\"com.example.custom_data_source\""

/* tracebus --query as @user shows @mine's process and data sources, not @theirs. */
static void assert_query(const char *user, const char *mine, const char *theirs) {
        g_auto(TbCommandResult) table = { 0 }, json = { 0 };

        run_cli(user, &table, "--query", NULL);
        assert_exit(&table, 0);
        g_assert_nonnull(strstr(table.out, "PRODUCER PROCESSES CONNECTED:"));
        g_assert_nonnull(strstr(table.out, "DATA SOURCES REGISTERED:"));
        g_assert_nonnull(strstr(table.out, mine));
        g_assert_null(strstr(table.out, theirs));
        run_cli(user, &json, "--query", "--json", NULL);
        assert_exit(&json, 0);
        assert_json(json.out);
        g_assert_nonnull(strstr(json.out, "\"producers\": [{\"id\": "));
        g_assert_nonnull(strstr(json.out, mine));
        g_assert_null(strstr(json.out, theirs));
        if (g_str_equal(mine, "example_system_wide")) {
                g_assert_nonnull(strstr(table.out, "rendering, network.debug, audio.latency"));
                g_assert_nonnull(strstr(json.out, "{\"name\": \"track_event\", \"categories\": [\"rendering\", "
                                                  "\"network.debug\", \"audio.latency\"]}"));
        } else
                g_assert_nonnull(strstr(json.out, "{\"name\": \"com.example.custom_data_source\", \"categories\": []}"));
}

/* Each user sees their own app and its data sources; the admin sees both. */
static void case_listed_per_user(void) {
        g_auto(TbUser) user = { 0 }, other = { 0 };
        GPid a = spawn_app_as("tbuser", "example_system_wide", &user);
        GPid b = spawn_app_as("tbother", "example_shlib_data_source", &other);
        g_autofree char *uid_user = g_strdup_printf(" %u %d ", (unsigned) user.uid, (int) a);
        g_autofree char *uid_other = g_strdup_printf(" %u %d ", (unsigned) other.uid, (int) b);
        const char *mine[] = { SYSTEM_WIDE_SOURCE, "\"rendering\"", "\"network.debug\"", "\"audio.latency\"",
                               "example_system_wide\"", uid_user, NULL };
        const char *theirs[] = { SHLIB_SOURCE, "example_shlib_data_source\"", uid_other, NULL };
        const char *both[] = { SYSTEM_WIDE_SOURCE, SHLIB_SOURCE, NULL };
        g_autofree char *as_user = NULL, *as_other = NULL;

        g_assert_true(wait_listed("tbuser", mine));
        g_assert_true(wait_listed("tbother", theirs));
        g_assert_true(wait_listed("tbadmin", both));
        g_assert_true(wait_listed(NULL, both));
        as_user = list_as("tbuser");
        as_other = list_as("tbother");
        g_assert_null(strstr(as_user, SHLIB_SOURCE));
        g_assert_null(strstr(as_user, uid_other));
        g_assert_null(strstr(as_other, SYSTEM_WIDE_SOURCE));
        g_assert_null(strstr(as_other, uid_user));
        assert_query("tbuser", "example_system_wide", "example_shlib_data_source");
        assert_query("tbother", "example_shlib_data_source", "example_system_wide");
        kill_app(a);
        kill_app(b);
}

static int connect_producer_socket(void) {
        g_autofree char *path = producer_socket();
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpuint(strlen(path), <, sizeof(sa.sun_path));
        strcpy(sa.sun_path, path);
        g_assert_cmpint(connect(fd, (struct sockaddr *) &sa, sizeof(sa)), ==, 0);
        return fd;
}

/* Whether the service closed @fd within @timeout_ms: end of stream, or a reset. */
static bool closed_by_service(int fd, guint timeout_ms) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        char buf[256];

        for (;;) {
                ssize_t n;

                if (poll(&p, 1, (int) tb_scaled_ms(timeout_ms)) <= 0)
                        return false;
                n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
                if (n == 0 || (n < 0 && errno == ECONNRESET))
                        return true;
                if (n < 0 && errno != EAGAIN)
                        return false;
        }
}

static void send_and_expect_close(const void *data, size_t size, const char *what) {
        int fd = connect_producer_socket();

        tb_write_all(fd, data, size);
        if (!closed_by_service(fd, 5000))
                g_error("the service kept a connection that sent %s", what);
        close(fd);
}

/* Garbage and a frame over the cap close that connection, and only that one: the service
 * still answers, and an app connected beside them stays listed. */
static void case_malformed_closed(void) {
        static const guint8 garbage[] = { 8, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
        static const guint8 oversized[] = { 0x00, 0x00, 0x10, 0x00 };   /* 1 MiB */
        g_auto(TbUser) user = { 0 };
        GPid a = spawn_app_as("tbuser", "example_system_wide", &user);
        const char *mine[] = { SYSTEM_WIDE_SOURCE, NULL };

        g_assert_true(wait_listed("tbuser", mine));
        send_and_expect_close(garbage, sizeof(garbage), "garbage");
        send_and_expect_close(oversized, sizeof(oversized), "a frame over the cap");
        g_assert_true(wait_listed("tbuser", mine));
        g_assert_true(tb_pid_alive(a));
        kill_app(a);
}

#define FLOOD_CONNECTIONS 10000
#define FLOOD_LATENCY ((TbLatencyBounds) { .percentile = 10.0, .worst = 50.0 })

static int flood_fds[FLOOD_CONNECTIONS];

/* In the forked child, as @u: @n connections held open, then how many the service
 * kept (not closed after a moment) written to @out as one int. Only system calls. */
static void flood_child(const TbUser *u, const struct sockaddr_un *sa, int out) {
        struct rlimit rl = { FLOOD_CONNECTIONS + 64, FLOOD_CONNECTIONS + 64 };
        int kept = 0;

        if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                _exit(2);
        tb_user_become(u);
        for (int i = 0; i < FLOOD_CONNECTIONS; i++) {
                flood_fds[i] = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (flood_fds[i] < 0 || connect(flood_fds[i], (const struct sockaddr *) sa, sizeof(*sa)) < 0)
                        _exit(3);
        }
        (void) sleep(2);
        for (int i = 0; i < FLOOD_CONNECTIONS; i++) {
                char c;
                ssize_t n = recv(flood_fds[i], &c, 1, MSG_DONTWAIT);

                kept += n < 0 && errno == EAGAIN;
        }
        if (write(out, &kept, sizeof(kept)) != sizeof(kept))
                _exit(4);
        _exit(0);
}

/* 10,000 connections from one user: all but that user's limit are closed, and root's
 * calls are answered as fast as the bus's own meanwhile. */
static void case_connection_flood(void) {
        g_autofree char *path = producer_socket();
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        g_auto(TbUser) u = { 0 };
        g_auto(TbLatency) latency = { 0 };
        g_autoptr(GError) error = NULL;
        int pipefd[2], kept = -1, status;
        pid_t pid;

        strcpy(sa.sun_path, path);
        g_assert_true(tb_user_lookup("tbuser", &u, &error));
        g_assert_cmpint(pipe2(pipefd, O_CLOEXEC), ==, 0);
        pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0)
                flood_child(&u, &sa, pipefd[1]);
        close(pipefd[1]);
        tb_latency_init(&latency);
        while (waitpid(pid, &status, WNOHANG) == 0) {
                tb_latency_probe(&latency, tb_bus()->conn);
                g_usleep(20 * 1000);
        }
        g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        g_assert_cmpint(read(pipefd[0], &kept, sizeof(kept)), ==, sizeof(kept));
        close(pipefd[0]);
        g_test_message("%d of %d connections kept", kept, FLOOD_CONNECTIONS);
        g_assert_cmpint(kept, >, 0);
        g_assert_cmpint(kept, <=, 64);
        tb_latency_assert(&latency, "root's calls during one user's connection flood", FLOOD_LATENCY);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();

        tb_test_add_isolated("/bus/producers/01-listed-per-user", case_listed_per_user);
        tb_test_add_isolated("/bus/producers/02-malformed-closed", case_malformed_closed);
        tb_test_add_isolated("/bus/producers/03-connection-flood", case_connection_flood);
        return tb_test_run(TB_START_SERVICE);
}
