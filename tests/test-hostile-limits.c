/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite: fair limits per user. Each case runs a tracebusd of
 * its own, with a tracebusd.conf of its own, on the harness's bus and polkitd, and
 * ends it with SIGTERM:
 *
 *  - one user fills its share of the calls waiting for polkit (polkitd held with
 *    SIGSTOP): its next calls are refused TooManyPendingCalls at once, and another
 *    user's Start still reaches polkit and succeeds once polkitd runs again; two
 *    users fill the service's cap: a third user's Start is refused, naming it;
 *  - a Start waiting for polkit is dropped when its caller leaves the bus: the
 *    service closes its Output at once (the pipe's reader sees EOF);
 *  - MaxBufferMemory: a Start whose kernel buffer would pass it is refused
 *    BufferMemoryExhausted, a smaller one still fits;
 *  - MaxFilesPerUser: a Start past the user's descriptor budget is refused
 *    ResourceLimit, another user's is not; the budget's estimate covers what a
 *    session really holds;
 *  - SIGTERM: a Start waiting for polkit is answered ShuttingDown, and so is a
 *    Start made while the last session (its output reader stuck) still finishes.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/sysinfo.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>
#include <unistd.h>

#include "root-call.h"
#include "session-util.h"

#define ERR_TOO_MANY_PENDING TB_ERROR_TOO_MANY_PENDING_CALLS
#define POLKIT_NAME "org.freedesktop.PolicyKit1"

/* ===================================================================== */
/* A tracebusd of the case's own                                          */
/* ===================================================================== */

static void die_with_parent(gpointer data) {
        (void) prctl(PR_SET_PDEATHSIG, SIGTERM);
}

/* Starts tracebusd with @conf as its tracebusd.conf; waits for its name. */
static GPid service_start(const char *name, const char *conf) {
        TbSystemBus *bus = tb_bus();
        g_autofree char *dir = g_build_filename(bus->tmpdir, name, NULL);
        g_autofree char *file = g_build_filename(dir, "tracebusd.conf", NULL);
        g_autofree char *exe = g_build_filename(bus->build_dir, "service", "tracebusd", NULL);
        g_autofree char *log = g_build_filename(bus->log_dir, "service.log", NULL);
        char *argv[] = { exe, NULL };
        g_auto(GStrv) envp = g_get_environ();
        g_autoptr(GError) error = NULL;
        int log_fd;
        GPid pid;

        g_assert_cmpint(g_mkdir_with_parents(dir, 0755), ==, 0);
        g_assert_true(g_file_set_contents(file, conf, -1, &error));
        envp = g_environ_setenv(envp, "DBUS_SYSTEM_BUS_ADDRESS", bus->address, TRUE);
        envp = g_environ_setenv(envp, "STATE_DIRECTORY", bus->state_dir, TRUE);
        envp = g_environ_setenv(envp, "TRACEBUS_CONFIG_DIR", dir, TRUE);
        envp = g_environ_setenv(envp, "TRACEBUS_IDLE_TIMEOUT_SEC", "0", TRUE);
        log_fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        g_assert_cmpint(log_fd, >=, 0);
        g_assert_true(g_spawn_async_with_fds(NULL, argv, envp, G_SPAWN_DO_NOT_REAP_CHILD, die_with_parent, NULL,
                                             &pid, -1, log_fd, log_fd, &error));
        g_assert_no_error(error);
        close(log_fd);
        g_assert_true(tb_wait_for_name(tb_bus()->conn, TB_BUS_NAME, pid, tb_scaled_ms(15000), &error));
        g_assert_no_error(error);
        note("%s: tracebusd %d with: %s\n", name, (int) pid, conf);
        return pid;
}

/* Waits up to timeout_ms for @pid; its wait status, or -1 (then it is killed). */
static int service_wait(GPid pid, guint timeout_ms) {
        gint64 deadline = g_get_monotonic_time() + (gint64) timeout_ms * 1000;
        int status;

        while (g_get_monotonic_time() < deadline) {
                if (waitpid(pid, &status, WNOHANG) == pid)
                        return status;
                g_usleep(20 * 1000);
        }
        (void) kill(pid, SIGKILL);
        (void) waitpid(pid, &status, 0);
        return -1;
}

/* SIGTERM: the service finishes its sessions and exits 0. */
static void service_stop(GPid pid) {
        int status;

        g_assert_cmpint(kill(pid, SIGTERM), ==, 0);
        status = service_wait(pid, tb_scaled_ms(30000));
        g_assert_true(status != -1 && WIFEXITED(status));
        g_assert_cmpint(WEXITSTATUS(status), ==, 0);
}

static pid_t polkitd_pid(void) {
        g_autoptr(GError) error = NULL;
        pid_t pid = tb_name_owner_pid(tb_bus()->conn, POLKIT_NAME, NULL, &error);

        g_assert_no_error(error);
        g_assert_cmpint(pid, >, 0);
        return pid;
}

static void polkitd_signal(int sig) {
        g_assert_cmpint(kill(polkitd_pid(), sig), ==, 0);
}

/* A Start of @c that has no answer yet: it waits for polkit. */
static void assert_start_waiting(Client *c) {
        g_autofree char *err = NULL, *path = client_expect(c, 'O', tb_scaled_ms(500), &err);

        g_assert_null(path);
        g_assert_true(g_str_has_prefix(err, "local.NoReport"));
}

static unsigned n_cpus(void) {
        return (unsigned) get_nprocs_conf();
}

/* ===================================================================== */
/* One user's share of the calls waiting for polkit                       */
/* ===================================================================== */

/* Together more than the 128 replies dbus-daemon lets the service wait for. */
enum { FLOOD_CONNECTIONS = 2, FLOOD_CALLS = 100 };
/* MaxPendingPerUser's default. */
#define PENDING_SHARE 8u

typedef struct {
        unsigned answered, too_many, denied, other;
} FloodCount;

static int on_flood_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        FloodCount *fc = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(m);

        fc->answered++;
        if (e && strcmp(e->name, ERR_TOO_MANY_PENDING) == 0)
                fc->too_many++;
        else if (e && (strcmp(e->name, ERR_ACCESS_DENIED) == 0 || strcmp(e->name, ERR_INTERACTIVE) == 0))
                fc->denied++;
        else {
                if (fc->other < 3)
                        fprintf(stderr, "# flood: unexpected answer %s: %s\n", e ? e->name : "success",
                                e ? e->message : "");
                fc->other++;
        }
        return 0;
}

static void flood_send(sd_bus *bus, FloodCount *fc) {
        for (unsigned i = 0; i < FLOOD_CALLS; i++) {
                sd_bus_message *m = NULL;

                if (sd_bus_message_new_method_call(bus, &m, TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_IFACE, "Start") < 0 ||
                    sd_bus_message_append(m, "sa{sv}", "", 2, "Events", "as", 1, "sched/sched_switch",
                                          "DurationMs", "u", 60000) < 0 ||
                    sd_bus_call_async(bus, NULL, m, on_flood_reply, fc, 120 * 1000 * 1000) < 0)
                        _exit(3);
                sd_bus_message_unref(m);
        }
}

static void flood_run(sd_event *e, FloodCount *fc, unsigned want, guint ms) {
        gint64 deadline = g_get_monotonic_time() + (gint64) ms * 1000;

        while (fc->answered < want && g_get_monotonic_time() < deadline)
                (void) sd_event_run(e, 50 * 1000);
}

/* The flooder, as tbother, in a forked child: FLOOD_CONNECTIONS x FLOOD_CALLS Starts
 * pipelined; reports "R ..." once the refusals are in, waits for a byte on @ctl
 * (polkitd runs again), then reports "F ..." once everything is answered. */
static G_NORETURN void flood_child(const TbUser *user, int report, int ctl, const void *data) {
        sd_event *e = NULL;
        sd_bus *buses[FLOOD_CONNECTIONS] = {};
        FloodCount fc = {};
        char line[128], byte;

        tb_user_become(user);
        if (sd_event_new(&e) < 0)
                _exit(2);
        for (unsigned i = 0; i < FLOOD_CONNECTIONS; i++) {
                if (sd_bus_open_system(&buses[i]) < 0 || sd_bus_attach_event(buses[i], e, 0) < 0)
                        _exit(2);
                flood_send(buses[i], &fc);
        }
        /* All but one share are refused at once; the share waits for polkit. */
        flood_run(e, &fc, FLOOD_CONNECTIONS * FLOOD_CALLS - PENDING_SHARE, tb_scaled_ms(10000));
        flood_run(e, &fc, UINT_MAX, tb_scaled_ms(500));
        snprintf(line, sizeof(line), "R %u %u %u %u\n", fc.answered, fc.too_many, fc.denied, fc.other);
        tb_write_all(report, line, strlen(line));
        if (read(ctl, &byte, 1) < 0)
                _exit(2);
        flood_run(e, &fc, FLOOD_CONNECTIONS * FLOOD_CALLS, tb_scaled_ms(30000));
        snprintf(line, sizeof(line), "F %u %u %u %u\n", fc.answered, fc.too_many, fc.denied, fc.other);
        tb_write_all(report, line, strlen(line));
        _exit(0);
}

static void read_counts(Client *flooder, char kind, FloodCount *ret) {
        g_autofree char *err = NULL, *line = client_expect(flooder, kind, tb_scaled_ms(40000), &err);

        g_assert_nonnull(line);
        g_assert_cmpint(sscanf(line, "%u %u %u %u", &ret->answered, &ret->too_many, &ret->denied, &ret->other), ==, 4);
        note("flooder %c: %u answered, %u TooManyPendingCalls, %u denied, %u other\n", kind, ret->answered,
             ret->too_many, ret->denied, ret->other);
}

/* tbother (who may not record) sends 200 Starts while polkitd is stopped: 8 wait, the
 * rest are refused at once, and tbuser's Start still waits for polkit, then succeeds.
 * Without the caps the service's 128 replies on the bus are all tbother's, and every
 * other Start fails with AuthorizationUnavailable. */
static void test_pending_share(void) {
        GPid service = service_start("pending-share", "[Limits]\n");
        ClientSpec spec = { .user = "tbuser", .op = OP_START, .events = sched_events, .duration_ms = 500,
                            .output_fd = -1 };
        g_autofree char *path = NULL, *err = NULL;
        FloodCount first, last;
        Client flooder, user;

        polkitd_signal(SIGSTOP);
        client_spawn_func("tbother", flood_child, NULL, &flooder);
        read_counts(&flooder, 'R', &first);
        client_spawn(&spec, &user);
        assert_start_waiting(&user);
        polkitd_signal(SIGCONT);
        path = client_expect(&user, 'O', tb_scaled_ms(30000), &err);
        note("tbuser's Start while tbother filled its share: %s\n", path ?: err);
        client_finish(&user, 5000);
        g_assert_cmpint(write(flooder.ctl_fd, "c", 1), ==, 1);
        read_counts(&flooder, 'F', &last);
        client_finish(&flooder, 5000);

        g_assert_cmpuint(first.too_many, ==, FLOOD_CONNECTIONS * FLOOD_CALLS - PENDING_SHARE);
        g_assert_cmpuint(first.answered, ==, first.too_many);
        g_assert_nonnull(path);
        g_assert_cmpuint(last.answered, ==, FLOOD_CONNECTIONS * FLOOD_CALLS);
        g_assert_cmpuint(last.denied, ==, PENDING_SHARE);
        g_assert_cmpuint(last.other, ==, 0);
        service_stop(service);
}

/* MaxPending=4, MaxPendingPerUser=2: two users fill the service's cap between them; a
 * third user's Start is refused at once, naming the service's cap, not the user's. */
static void test_pending_total(void) {
        static const char *const users[] = { "tbother", "tbother", "tbchallenge", "tbchallenge" };
        GPid service = service_start("pending-total", "[Limits]\nMaxPending=4\nMaxPendingPerUser=2\n");
        ClientSpec spec = { .op = OP_START, .events = sched_events, .duration_ms = 500, .output_fd = -1 };
        g_autofree char *err = NULL, *name = NULL;
        Client waiting[G_N_ELEMENTS(users)], third;

        polkitd_signal(SIGSTOP);
        for (size_t i = 0; i < G_N_ELEMENTS(users); i++) {
                spec.user = users[i];
                client_spawn(&spec, &waiting[i]);
                assert_start_waiting(&waiting[i]);
        }
        spec.user = "tbuser";
        client_spawn(&spec, &third);
        g_free(client_expect(&third, 'O', tb_scaled_ms(5000), &err));
        client_finish(&third, 5000);
        polkitd_signal(SIGCONT);
        for (size_t i = 0; i < G_N_ELEMENTS(users); i++) {
                g_autofree char *e = NULL;
                g_free(client_expect(&waiting[i], 'O', tb_scaled_ms(30000), &e));
                note("%s's Start, once polkitd ran again: %s\n", users[i], e ?: "started");
                client_finish(&waiting[i], 5000);
        }
        note("tbuser's Start while the others waited: %s\n", err);
        name = error_name(err);
        g_assert_cmpstr(name, ==, ERR_TOO_MANY_PENDING);
        g_assert_nonnull(strstr(error_message(err), "MaxPending=4"));
        service_stop(service);
}

/* ===================================================================== */
/* A waiting Start dropped when its caller leaves                         */
/* ===================================================================== */

/* Whether @fd reads EOF within timeout_ms (nothing else may come). */
static bool eof_within(int fd, guint timeout_ms) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        char buf[64];

        if (poll(&p, 1, (int) timeout_ms) <= 0)
                return false;
        return read(fd, buf, sizeof(buf)) == 0;
}

/* tbuser's Start waits for a stopped polkitd with a pipe as its Output; tbuser leaves
 * the bus. The service lets go of the pipe at once, not when polkit answers. */
static void test_dropped_when_caller_leaves(void) {
        GPid service = service_start("caller-leaves", "[Limits]\n");
        ClientSpec spec = { .user = "tbuser", .op = OP_START, .events = sched_events, .duration_ms = 60000 };
        int p[2];
        bool eof;
        Client c;

        g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
        spec.output_fd = p[1];
        polkitd_signal(SIGSTOP);
        client_spawn(&spec, &c);
        close(p[1]);
        assert_start_waiting(&c);
        client_kill(&c);
        eof = eof_within(p[0], tb_scaled_ms(3000));
        polkitd_signal(SIGCONT);
        close(p[0]);
        note("the Output pipe %s once its caller left\n", eof ? "closed" : "stayed open");
        g_assert_true(eof);
        /* polkit's answer, when it comes, starts nothing. */
        tb_sleep_scaled(1000);
        g_assert_cmpuint(n_sessions_root(), ==, 0);
        service_stop(service);
}

/* ===================================================================== */
/* Kernel buffer memory and descriptors                                   */
/* ===================================================================== */

/* A detached Start of @user (its trace in the trace directory): the error name, or
 * NULL with the session's path in @ret_path; the whole error in @ret_error. */
static char *start_as(const char *user, guint32 buffer_kb, char **ret_path, char **ret_error) {
        ClientSpec spec = { .user = user, .op = OP_START, .events = sched_events, .duration_ms = 60000,
                            .buffer_size_kb = buffer_kb, .output_fd = -1 };

        return client_run_full(&spec, ret_path, ret_error);
}

static void assert_starts(const char *user, guint32 buffer_kb) {
        g_autofree char *path = NULL, *full = NULL, *err = start_as(user, buffer_kb, &path, &full);

        note("Start by %s, %u KiB per CPU: %s\n", user, buffer_kb, err ? full : path);
        g_assert_null(err);
}

static void assert_refused(const char *user, guint32 buffer_kb, const char *want, const char *says) {
        g_autofree char *path = NULL, *full = NULL, *err = start_as(user, buffer_kb, &path, &full);

        note("Start by %s, %u KiB per CPU: %s\n", user, buffer_kb, err ? full : path);
        g_assert_cmpstr(err, ==, want);
        g_assert_nonnull(strstr(full, says));
}

/* MaxBufferMemory holds 2.5 sessions of 4 MiB per CPU: the third is refused, saying how
 * much is in use and the cap; a 1 MiB one still fits. */
static void test_buffer_memory(void) {
        g_autofree char *conf = g_strdup_printf("[Limits]\nMaxBufferMemory=%uK\n", 10240 * n_cpus());
        GPid service = service_start("buffer-memory", conf);
        g_autofree char *in_use = g_strdup_printf("use %u KiB of the %u KiB", 8192 * n_cpus(), 10240 * n_cpus());

        assert_starts("tbuser", 4096);
        assert_starts("tbadmin", 4096);
        assert_refused("tbuser", 4096, TB_ERROR_BUFFER_MEMORY_EXHAUSTED, in_use);
        assert_refused("tbadmin", 4096, TB_ERROR_BUFFER_MEMORY_EXHAUSTED, "MaxBufferMemory");
        assert_starts("tbuser", 1024);
        service_stop(service);
}

static unsigned open_fds(GPid pid) {
        g_autofree char *dir = g_strdup_printf("/proc/%d/fd", (int) pid);
        g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
        unsigned n = 0;

        g_assert_nonnull(d);
        while (g_dir_read_name(d))
                n++;
        return n;
}

/* MaxFilesPerUser holds 2.5 sessions: tbuser's third Start is refused ResourceLimit,
 * tbadmin's is not. The service's estimate of a session covers what one really holds. */
static void test_file_budget(void) {
        unsigned cost = 2 * n_cpus() + 8, before, held;
        g_autofree char *conf = g_strdup_printf("[Limits]\nMaxFilesPerUser=%u\n", 2 * cost + cost / 2);
        GPid service = service_start("file-budget", conf);

        before = open_fds(service);
        assert_starts("tbuser", 1024);
        tb_sleep_scaled(500);
        held = open_fds(service) - before;
        note("one session holds %u descriptors; the service counts %u\n", held, cost);
        g_assert_cmpuint(held, <=, cost);
        assert_starts("tbuser", 1024);
        assert_refused("tbuser", 1024, TB_ERROR_RESOURCE_LIMIT, "MaxFilesPerUser");
        assert_starts("tbadmin", 1024);
        service_stop(service);
}

/* ===================================================================== */
/* SIGTERM                                                                */
/* ===================================================================== */

/* The pipe holds one page, and nobody reads it: the session's writes soon block. */
static void wait_pipe_full(int fd) {
        gint64 deadline = g_get_monotonic_time() + (gint64) tb_scaled_ms(20000) * 1000;
        int queued = 0;

        while (g_get_monotonic_time() < deadline) {
                g_assert_cmpint(ioctl(fd, FIONREAD, &queued), ==, 0);
                if (queued >= 4096)
                        return;
                g_usleep(50 * 1000);
        }
        g_error("the session wrote only %d bytes into its Output", queued);
}

/* A session whose Output nobody reads keeps the service finishing after SIGTERM; a
 * Start waiting for polkit then is answered ShuttingDown at once, and so is a new one. */
static void test_start_after_sigterm(void) {
        static const char cfg[] = "duration_ms: 120000\nwrite_into_file: true\nfile_write_period_ms: 100\n"
                                  "buffers { size_kb: 1024 }\n"
                                  "data_sources { config { name: \"linux.ftrace\" ftrace_config {\n"
                                  "  ftrace_events: \"sched/sched_switch\" } } }\n";
        GPid service = service_start("sigterm", "[Limits]\n");
        ClientSpec stuck = { .user = "tbuser", .op = OP_START, .config = cfg, .detach_key = "stuck" };
        ClientSpec waiting = { .user = "tbuser", .op = OP_START, .events = sched_events, .output_fd = -1 };
        g_autofree char *path = NULL, *err = NULL, *late = NULL, *late_full = NULL, *name = NULL, *late_path = NULL;
        int p[2], status;
        Client c;

        g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
        g_assert_cmpint(fcntl(p[1], F_SETPIPE_SZ, 4096), >=, 4096);
        stuck.output_fd = p[1];
        g_assert_null(client_run(&stuck, &path));
        close(p[1]);
        wait_pipe_full(p[0]);

        polkitd_signal(SIGSTOP);
        client_spawn(&waiting, &c);
        assert_start_waiting(&c);
        g_assert_cmpint(kill(service, SIGTERM), ==, 0);
        g_free(client_expect(&c, 'O', tb_scaled_ms(5000), &err));
        client_finish(&c, 5000);
        polkitd_signal(SIGCONT);
        note("the Start waiting for polkit at SIGTERM: %s\n", err);
        name = error_name(err);
        g_assert_cmpstr(name, ==, TB_ERROR_SHUTTING_DOWN);

        late = start_as("root", 0, &late_path, &late_full);
        note("a Start after SIGTERM: %s\n", late ? late_full : late_path);
        g_assert_cmpstr(late, ==, TB_ERROR_SHUTTING_DOWN);
        g_assert_true(tb_pid_alive(service));
        /* The reader goes: the stuck session ends, and with it the service. */
        close(p[0]);
        status = service_wait(service, tb_scaled_ms(30000));
        g_assert_true(status != -1 && WIFEXITED(status));
        g_assert_cmpint(WEXITSTATUS(status), ==, 0);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();
        tb_test_add_isolated("/limits/pending-share", test_pending_share);
        tb_test_add_isolated("/limits/pending-total", test_pending_total);
        tb_test_add_isolated("/limits/dropped-when-caller-leaves", test_dropped_when_caller_leaves);
        tb_test_add_isolated("/limits/buffer-memory", test_buffer_memory);
        tb_test_add_isolated("/limits/file-budget", test_file_budget);
        tb_test_add_isolated("/limits/start-after-sigterm", test_start_after_sigterm);
        /* No service from the harness: each case runs one with its own tracebusd.conf. */
        return tb_test_run(0);
}
