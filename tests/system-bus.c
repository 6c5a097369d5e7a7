/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "system-bus.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glib-unix.h>
#include <glib/gstdio.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ENV_TMPDIR "TRACEBUS_TEST_TMPDIR"
#define POLKIT_NAME "org.freedesktop.PolicyKit1"
#define POLKIT_BUS_CONF "/usr/share/dbus-1/system.d/org.freedesktop.PolicyKit1.conf"

static const char *const test_users[] = { "tbuser", "tbadmin", "tbother", "tbchallenge", NULL };

/* ---- emergency cleanup: a fatal signal in the owner process ---- */

static char emergency_logs[3][PATH_MAX];
static volatile pid_t emergency_pids[3];

static void dump_file_raw(const char *path) {
        char buf[4096];
        int fd;
        ssize_t n;

        if (!path[0])
                return;
        tb_write_all(2, "\n===== ", 7);
        tb_write_all(2, path, strlen(path));
        tb_write_all(2, " =====\n", 7);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return;
        while ((n = read(fd, buf, sizeof buf)) > 0)
                tb_write_all(2, buf, (size_t) n);
        close(fd);
}

static void emergency_handler(int sig) {
        /* Only async-signal-safe calls: the process is going down anyway. */
        tb_write_all(2, "\n# tracebus test harness: fatal signal, dumping logs and killing the stack\n", 75);
        for (size_t i = 0; i < G_N_ELEMENTS(emergency_logs); i++)
                dump_file_raw(emergency_logs[i]);
        for (size_t i = 0; i < G_N_ELEMENTS(emergency_pids); i++)
                if (emergency_pids[i] > 0)
                        kill(emergency_pids[i], SIGKILL);
        signal(sig, SIG_DFL);
        raise(sig);
}

static void install_emergency_handler(const TbSystemBus *bus) {
        const char *names[] = { "service.log", "polkitd.log", "bus.log" };
        struct sigaction sa = { .sa_handler = emergency_handler };

        for (size_t i = 0; i < G_N_ELEMENTS(names); i++)
                g_snprintf(emergency_logs[i], sizeof emergency_logs[i], "%s/%s", bus->log_dir, names[i]);
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESETHAND;
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGABRT, &sa, NULL);
        sigaction(SIGSEGV, &sa, NULL);
}

static void set_emergency_pids(const TbSystemBus *bus) {
        emergency_pids[0] = bus->service_pid;
        emergency_pids[1] = bus->polkitd_pid;
        emergency_pids[2] = bus->bus_pid;
}

/* ---- environment checks ---- */

static bool have_program(const char *name) {
        g_autofree char *p = g_find_program_in_path(name);
        return p != NULL;
}

static const char *polkitd_path(void) {
        if (access("/usr/lib/polkit-1/polkitd", X_OK) == 0)
                return "/usr/lib/polkit-1/polkitd";
        if (access("/usr/libexec/polkitd", X_OK) == 0)
                return "/usr/libexec/polkitd";
        return NULL;
}

static char *missing_requirement(void) {
        if (geteuid() != 0)
                return g_strdup("not running as root");
        if (access(TB_INSTANCES_DIR, F_OK) < 0)
                return g_strdup("tracefs is not mounted at /sys/kernel/tracing (tools/setup-debian mounts it)");
        if (!have_program("dbus-daemon"))
                return g_strdup("dbus-daemon not found (package dbus-daemon)");
        if (!polkitd_path())
                return g_strdup("polkitd not found (package polkitd)");
        if (access(POLKIT_BUS_CONF, R_OK) < 0)
                return g_strdup("polkitd's bus policy " POLKIT_BUS_CONF " is missing");
        if (!have_program("unshare") || !have_program("busctl") || !have_program("timeout"))
                return g_strdup("unshare, busctl or timeout not found");
        for (size_t i = 0; test_users[i]; i++)
                if (!getpwnam(test_users[i]))
                        return g_strdup_printf("test user %s does not exist (run tools/setup-debian)", test_users[i]);
        if (!g_getenv("TRACEBUS_SOURCE_DIR") || !g_getenv("TRACEBUS_BUILD_DIR"))
                return g_strdup("TRACEBUS_SOURCE_DIR/TRACEBUS_BUILD_DIR not set (run through meson test)");
        return NULL;
}

void tb_require_system_bus_environment(void) {
        g_autofree char *why = missing_requirement();
        const char *ci = g_getenv("CI");

        if (!why)
                return;
        if (ci && *ci) {
                printf("Bail out! CI is set, refusing to skip: %s\n", why);
                fflush(stdout);
                exit(1);
        }
        printf("1..0 # SKIP %s\n", why);
        fflush(stdout);
        exit(0);
}

/* ---- processes ---- */

typedef struct {
        int stdout_fd; /* -1: leave as set up by g_spawn */
        bool pdeathsig;
} ChildSetup;

static void child_setup_pdeathsig(gpointer data) {
        const ChildSetup *cs = data;
        if (cs && cs->pdeathsig)
                (void) prctl(PR_SET_PDEATHSIG, SIGTERM);
}

/* waitpid with a timeout. Returns true and the status when pid exited. */
static bool wait_pid_timeout(pid_t pid, guint timeout_ms, int *ret_status) {
        gint64 deadline = g_get_monotonic_time() + (gint64) timeout_ms * 1000;

        for (;;) {
                int status;
                pid_t r = waitpid(pid, &status, WNOHANG);
                if (r == pid) {
                        *ret_status = status;
                        return true;
                }
                if (r < 0 && errno != EINTR)
                        return false;
                if (g_get_monotonic_time() > deadline)
                        return false;
                g_usleep(10 * 1000);
        }
}

static int stop_pid(GPid *pid, int sig, guint timeout_ms, const char *what) {
        int status = -1;

        if (*pid <= 0)
                return -1;
        (void) kill(*pid, sig);
        if (!wait_pid_timeout(*pid, timeout_ms, &status)) {
                g_printerr("# %s (pid %d) did not exit within %u ms, killing it\n", what, (int) *pid, timeout_ms);
                (void) kill(*pid, SIGKILL);
                (void) waitpid(*pid, NULL, 0);
                status = -1;
        }
        *pid = 0;
        return status;
}

static bool spawn_logged(char **argv, char **envp, const char *log_path, int stdout_pipe_wanted,
                         GPid *ret_pid, int *ret_stdout, GError **error) {
        ChildSetup cs = { .pdeathsig = true };
        int log_fd, null_fd, pipefd[2] = { -1, -1 };
        bool ok;

        log_fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (log_fd < 0) {
                g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno), "open %s: %s", log_path, g_strerror(errno));
                return false;
        }
        null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (stdout_pipe_wanted && !g_unix_open_pipe(pipefd, FD_CLOEXEC, error)) {
                close(log_fd);
                close(null_fd);
                return false;
        }
        ok = g_spawn_async_with_fds(NULL, argv, envp, G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_SEARCH_PATH,
                                    child_setup_pdeathsig, &cs, ret_pid, null_fd,
                                    stdout_pipe_wanted ? pipefd[1] : log_fd, log_fd, error);
        close(log_fd);
        close(null_fd);
        if (pipefd[1] >= 0)
                close(pipefd[1]);
        if (!ok) {
                if (pipefd[0] >= 0)
                        close(pipefd[0]);
                return false;
        }
        if (ret_stdout)
                *ret_stdout = pipefd[0];
        return true;
}

/* Reads one line from fd within timeout_ms. */
char *tb_read_line(int fd, guint timeout_ms, GError **error) {
        GString *s = g_string_new(NULL);
        gint64 deadline = g_get_monotonic_time() + (gint64) timeout_ms * 1000;

        for (;;) {
                struct pollfd pfd = { .fd = fd, .events = POLLIN };
                gint64 left = (deadline - g_get_monotonic_time()) / 1000;
                char c;
                int r;

                if (left <= 0) {
                        g_set_error(error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT, "timed out reading a line");
                        break;
                }
                r = poll(&pfd, 1, (int) left);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r <= 0)
                        continue;
                r = (int) read(fd, &c, 1);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r <= 0) {
                        g_set_error(error, G_IO_ERROR, G_IO_ERROR_BROKEN_PIPE, "EOF before a full line (\"%s\")", s->str);
                        break;
                }
                if (c == '\n')
                        return g_string_free(s, FALSE);
                g_string_append_c(s, c);
        }
        g_string_free(s, TRUE);
        return NULL;
}

bool tb_wait_for_name(GDBusConnection *conn, const char *name, GPid watch_pid, guint timeout_ms, GError **error) {
        gint64 deadline = g_get_monotonic_time() + (gint64) timeout_ms * 1000;

        for (;;) {
                g_autoptr(GVariant) reply = NULL;
                g_autoptr(GError) e = NULL;
                gboolean has = FALSE;

                reply = g_dbus_connection_call_sync(conn, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                                    "org.freedesktop.DBus", "NameHasOwner",
                                                    g_variant_new("(s)", name), G_VARIANT_TYPE("(b)"),
                                                    G_DBUS_CALL_FLAGS_NONE, 5000, NULL, &e);
                if (!reply) {
                        g_propagate_prefixed_error(error, g_steal_pointer(&e), "NameHasOwner(%s): ", name);
                        return false;
                }
                g_variant_get(reply, "(b)", &has);
                if (has)
                        return true;
                if (watch_pid > 0 && !tb_pid_alive(watch_pid)) {
                        g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED,
                                    "pid %d exited before %s appeared on the bus", (int) watch_pid, name);
                        return false;
                }
                if (g_get_monotonic_time() > deadline) {
                        g_set_error(error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
                                    "%s did not appear on the bus within %u ms", name, timeout_ms);
                        return false;
                }
                g_usleep(20 * 1000);
        }
}

bool tb_wait_for_name_gone(GDBusConnection *conn, const char *name, guint timeout_ms, GError **error) {
        gint64 deadline = g_get_monotonic_time() + (gint64) timeout_ms * 1000;

        for (;;) {
                g_autoptr(GVariant) reply = NULL;
                gboolean has = TRUE;

                reply = g_dbus_connection_call_sync(conn, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                                    "org.freedesktop.DBus", "NameHasOwner",
                                                    g_variant_new("(s)", name), G_VARIANT_TYPE("(b)"),
                                                    G_DBUS_CALL_FLAGS_NONE, 5000, NULL, error);
                if (!reply)
                        return false;
                g_variant_get(reply, "(b)", &has);
                if (!has)
                        return true;
                if (g_get_monotonic_time() > deadline) {
                        g_set_error(error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
                                    "%s still has an owner after %u ms", name, timeout_ms);
                        return false;
                }
                g_usleep(20 * 1000);
        }
}

pid_t tb_name_owner_pid(GDBusConnection *conn, const char *name, char **ret_unique, GError **error) {
        g_autoptr(GVariant) owner = NULL, pid = NULL;
        const char *unique;
        guint32 p;

        owner = g_dbus_connection_call_sync(conn, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                            "org.freedesktop.DBus", "GetNameOwner", g_variant_new("(s)", name),
                                            G_VARIANT_TYPE("(s)"), G_DBUS_CALL_FLAGS_NONE, 5000, NULL, error);
        if (!owner)
                return 0;
        g_variant_get(owner, "(&s)", &unique);
        pid = g_dbus_connection_call_sync(conn, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                          "org.freedesktop.DBus", "GetConnectionUnixProcessID",
                                          g_variant_new("(s)", unique), G_VARIANT_TYPE("(u)"),
                                          G_DBUS_CALL_FLAGS_NONE, 5000, NULL, error);
        if (!pid)
                return 0;
        g_variant_get(pid, "(u)", &p);
        if (ret_unique)
                *ret_unique = g_strdup(unique);
        return (pid_t) p;
}

/* ---- setting up the temporary directory ---- */

static bool copy_matching(const char *from_dir, const char *suffix, const char *to_dir, guint *ret_n, GError **error) {
        g_autoptr(GDir) d = g_dir_open(from_dir, 0, error);
        const char *name;
        guint n = 0;

        if (!d)
                return false;
        while ((name = g_dir_read_name(d))) {
                g_autofree char *src = NULL, *dst = NULL, *contents = NULL;
                gsize len;

                if (!g_str_has_suffix(name, suffix))
                        continue;
                src = g_build_filename(from_dir, name, NULL);
                dst = g_build_filename(to_dir, name, NULL);
                if (!g_file_get_contents(src, &contents, &len, error) ||
                    !g_file_set_contents_full(dst, contents, (gssize) len, G_FILE_SET_CONTENTS_NONE, 0644, error))
                        return false;
                n++;
        }
        if (ret_n)
                *ret_n = n;
        return true;
}

static const char bus_config_template[] =
        "<!DOCTYPE busconfig PUBLIC \"-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN\"\n"
        " \"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd\">\n"
        "<!-- Generated by tests/system-bus.c: /usr/share/dbus-1/system.conf without <user>, <fork>,\n"
        "     <pidfile>, <syslog> and <servicehelper>, with test-local paths. -->\n"
        "<busconfig>\n"
        "  <type>system</type>\n"
        "  <auth>EXTERNAL</auth>\n"
        "  <listen>unix:path=@T@/system_bus_socket</listen>\n"
        "  <servicedir>@T@/services</servicedir>\n"
        "  <limit name=\"max_message_size\">" G_STRINGIFY(TB_TEST_BUS_MAX_MESSAGE_BYTES) "</limit>\n"
        "  <policy context=\"default\">\n"
        "    <allow user=\"*\"/>\n"
        "    <deny own=\"*\"/>\n"
        "    <deny send_type=\"method_call\"/>\n"
        "    <allow send_type=\"signal\"/>\n"
        "    <allow send_requested_reply=\"true\" send_type=\"method_return\"/>\n"
        "    <allow send_requested_reply=\"true\" send_type=\"error\"/>\n"
        "    <allow receive_type=\"method_call\"/>\n"
        "    <allow receive_type=\"method_return\"/>\n"
        "    <allow receive_type=\"error\"/>\n"
        "    <allow receive_type=\"signal\"/>\n"
        "    <allow send_destination=\"org.freedesktop.DBus\" send_interface=\"org.freedesktop.DBus\"/>\n"
        "    <allow send_destination=\"org.freedesktop.DBus\" send_interface=\"org.freedesktop.DBus.Introspectable\"/>\n"
        "    <allow send_destination=\"org.freedesktop.DBus\" send_interface=\"org.freedesktop.DBus.Properties\"/>\n"
        "    <deny send_destination=\"org.freedesktop.DBus\" send_interface=\"org.freedesktop.DBus\"\n"
        "          send_member=\"UpdateActivationEnvironment\"/>\n"
        "    <deny send_destination=\"org.freedesktop.DBus\" send_interface=\"org.freedesktop.DBus.Debug.Stats\"/>\n"
        "  </policy>\n"
        "  <policy user=\"root\">\n"
        "    <allow send_destination=\"org.freedesktop.DBus\" send_interface=\"org.freedesktop.DBus.Monitoring\"/>\n"
        "  </policy>\n"
        "  <include>" POLKIT_BUS_CONF "</include>\n"
        "  <includedir>@T@/system.d</includedir>\n"
        "</busconfig>\n";

static bool prepare_tmpdir(TbSystemBus *bus, GError **error) {
        const char *subdirs[] = { "system.d", "services", "actions", "rules.d", "empty", "state", "logs", "config" };
        g_autofree char *config = NULL, *conf_path = NULL, *src = NULL;
        g_auto(GStrv) parts = NULL;
        guint n;

        bus->tmpdir = g_dir_make_tmp("tracebus-test-XXXXXX", error);
        if (!bus->tmpdir)
                return false;
        /* mktemp's 0700 would keep polkitd (after it drops root) and the
         * non-root test clients away from the socket. */
        if (chmod(bus->tmpdir, 0755) < 0) {
                g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno), "chmod %s: %s", bus->tmpdir, g_strerror(errno));
                return false;
        }
        for (size_t i = 0; i < G_N_ELEMENTS(subdirs); i++) {
                g_autofree char *p = g_build_filename(bus->tmpdir, subdirs[i], NULL);
                if (g_mkdir(p, 0755) < 0 || chmod(p, 0755) < 0) {
                        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno), "mkdir %s: %s", p, g_strerror(errno));
                        return false;
                }
        }
        bus->state_dir = g_build_filename(bus->tmpdir, "state", NULL);
        bus->log_dir = g_build_filename(bus->tmpdir, "logs", NULL);
        if (g_getenv(TB_TEST_TRACEBUSD_CONF)) {
                g_autofree char *p = g_build_filename(bus->tmpdir, "config", "tracebusd.conf", NULL);
                if (!g_file_set_contents_full(p, g_getenv(TB_TEST_TRACEBUSD_CONF), -1, G_FILE_SET_CONTENTS_NONE,
                                              0644, error))
                        return false;
        }

        parts = g_strsplit(bus_config_template, "@T@", -1);
        config = g_strjoinv(bus->tmpdir, parts);
        conf_path = g_build_filename(bus->tmpdir, "system.conf", NULL);
        if (!g_file_set_contents_full(conf_path, config, -1, G_FILE_SET_CONTENTS_NONE, 0644, error))
                return false;

        /* The shipped bus policy, polkit actions and the test rules. */
        src = g_build_filename(bus->source_dir, "dbus", NULL);
        {
                g_autofree char *dst = g_build_filename(bus->tmpdir, "system.d", NULL);
                if (!copy_matching(src, ".conf", dst, &n, error))
                        return false;
                if (n == 0) {
                        g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "no dbus/*.conf in %s", src);
                        return false;
                }
        }
        g_free(src);
        src = g_build_filename(bus->source_dir, "polkit", NULL);
        {
                g_autofree char *dst = g_build_filename(bus->tmpdir, "actions", NULL);
                if (!copy_matching(src, ".policy", dst, &n, error))
                        return false;
                if (n == 0) {
                        g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "no polkit/*.policy in %s", src);
                        return false;
                }
        }
        g_free(src);
        src = g_build_filename(bus->source_dir, "tests", "polkit-rules", NULL);
        {
                g_autofree char *dst = g_build_filename(bus->tmpdir, "rules.d", NULL);
                if (!copy_matching(src, ".rules", dst, &n, error))
                        return false;
        }
        return true;
}

/* The sanitizers' options of the harness's environment as shell exports: dbus-daemon
 * activates a system service with an environment of its own, and an activated
 * tracebusd must stop at its first report as the directly started one does. */
static char *sanitizer_exports(void) {
        static const char *const names[] = { "ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS", "TSAN_OPTIONS" };
        GString *s = g_string_new(NULL);

        for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
                const char *v = g_getenv(names[i]);
                g_autofree char *quoted = v ? g_shell_quote(v) : NULL;

                if (quoted)
                        g_string_append_printf(s, "export %s=%s\n", names[i], quoted);
        }
        return g_string_free(s, FALSE);
}

/* The activation file and the script it runs: the environment tracebusd gets from
 * the harness when started directly, and its output in logs/service.log. */
static bool write_activation_files(TbSystemBus *bus, GError **error) {
        g_autofree char *exe = g_build_filename(bus->build_dir, "service", "tracebusd", NULL);
        g_autofree char *script = g_build_filename(bus->tmpdir, "activate-tracebusd.sh", NULL);
        g_autofree char *service = g_build_filename(bus->tmpdir, "services", TB_BUS_NAME ".service", NULL);
        g_autofree char *script_text = NULL, *service_text = NULL, *exports = sanitizer_exports();
        const char *t = bus->tmpdir;

        script_text = g_strdup_printf(
                "#!/bin/sh\n"
                "# Generated by tests/system-bus.c: dbus-daemon runs this to activate tracebusd.\n"
                "%s"
                "export DBUS_SYSTEM_BUS_ADDRESS='unix:path=%s/system_bus_socket'\n"
                "export STATE_DIRECTORY='%s/state' TRACEBUS_CONFIG_DIR='%s/config' NOTIFY_SOCKET='%s/notify'\n"
                "export PERFETTO_PRODUCER_SOCK_NAME='%s/" TB_PRODUCER_SOCKET "'\n"
                ": \"${TRACEBUS_IDLE_TIMEOUT_SEC:=0}\"\n"
                "export TRACEBUS_IDLE_TIMEOUT_SEC\n"
                "echo $$ >>'%s/activated.pids'\n"
                "echo \"# activated as pid $$, idle timeout $TRACEBUS_IDLE_TIMEOUT_SEC\" >>'%s/logs/service.log'\n"
                "exec '%s' >>'%s/logs/service.log' 2>&1\n",
                exports, t, t, t, t, t, t, t, exe, t);
        service_text = g_strdup_printf("[D-BUS Service]\n"
                                       "Name=" TB_BUS_NAME "\n"
                                       "Exec=%s\n"
                                       "User=root\n", script);
        return g_file_set_contents_full(script, script_text, -1, G_FILE_SET_CONTENTS_NONE, 0755, error) &&
               g_file_set_contents_full(service, service_text, -1, G_FILE_SET_CONTENTS_NONE, 0644, error);
}

/* Activated instances are dbus-daemon's children, not ours: SIGTERM them by pid and
 * wait until they are gone (or zombies, for their parent to reap). */
static void stop_activated(TbSystemBus *bus) {
        g_autofree char *path = g_build_filename(bus->tmpdir, "activated.pids", NULL);
        g_autofree char *text = NULL;
        g_auto(GStrv) pids = NULL;

        if (!g_file_get_contents(path, &text, NULL, NULL))
                return;
        pids = g_strsplit(text, "\n", -1);
        for (size_t i = 0; pids[i]; i++) {
                pid_t pid = (pid_t) atoi(pids[i]);
                gint64 deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;

                if (pid <= 0 || !tb_pid_alive(pid))
                        continue;
                (void) kill(pid, SIGTERM);
                while (tb_pid_alive(pid) && g_get_monotonic_time() < deadline)
                        g_usleep(20 * 1000);
                if (tb_pid_alive(pid)) {
                        g_printerr("# activated tracebusd (pid %d) did not exit, killing it\n", (int) pid);
                        (void) kill(pid, SIGKILL);
                }
        }
}

/* ---- start/stop ---- */

static bool start_dbus_daemon(TbSystemBus *bus, GError **error) {
        g_autofree char *conf_arg = g_strdup_printf("--config-file=%s/system.conf", bus->tmpdir);
        g_autofree char *log = g_build_filename(bus->log_dir, "bus.log", NULL);
        char *argv[] = { "dbus-daemon", conf_arg, "--nofork", "--print-address=1", NULL };
        g_autoptr(GError) e = NULL;
        int out_fd = -1;

        if (!spawn_logged(argv, NULL, log, true, &bus->bus_pid, &out_fd, error))
                return false;
        bus->address = tb_read_line(out_fd, 10000, &e);
        close(out_fd);
        if (!bus->address) {
                g_propagate_prefixed_error(error, g_steal_pointer(&e), "dbus-daemon did not print its address: ");
                return false;
        }
        g_setenv("DBUS_SYSTEM_BUS_ADDRESS", bus->address, TRUE);
        return true;
}

static bool connect_bus(TbSystemBus *bus, GError **error) {
        bus->conn = g_dbus_connection_new_for_address_sync(
                        bus->address,
                        G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT | G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION,
                        NULL, NULL, error);
        if (!bus->conn)
                return false;
        g_dbus_connection_set_exit_on_close(bus->conn, FALSE);
        return true;
}

static bool start_polkitd(TbSystemBus *bus, GError **error) {
        g_autofree char *script = g_build_filename(bus->source_dir, "tests", "polkitd-private.sh", NULL);
        g_autofree char *actions = g_build_filename(bus->tmpdir, "actions", NULL);
        g_autofree char *rules = g_build_filename(bus->tmpdir, "rules.d", NULL);
        g_autofree char *empty = g_build_filename(bus->tmpdir, "empty", NULL);
        g_autofree char *log = g_build_filename(bus->log_dir, "polkitd.log", NULL);
        char *argv[] = { "unshare", "--mount", "--propagation", "private", "/bin/sh", script,
                         actions, rules, empty, NULL };

        /* unshare without --fork execs, so the pid is polkitd's own. */
        if (!spawn_logged(argv, NULL, log, false, &bus->polkitd_pid, NULL, error))
                return false;
        set_emergency_pids(bus);
        if (!tb_wait_for_name(bus->conn, POLKIT_NAME, bus->polkitd_pid, 15000, error)) {
                g_prefix_error(error, "polkitd: ");
                return false;
        }
        return true;
}

static bool start_service(TbSystemBus *bus, GError **error) {
        g_autofree char *exe = g_build_filename(bus->build_dir, "service", "tracebusd", NULL);
        g_autofree char *log = g_build_filename(bus->log_dir, "service.log", NULL);
        g_autofree char *config_dir = g_build_filename(bus->tmpdir, "config", NULL);
        g_autofree char *producer_socket = g_build_filename(bus->tmpdir, TB_PRODUCER_SOCKET, NULL);
        g_auto(GStrv) envp = g_get_environ();
        char *plain_argv[] = { exe, NULL };

        if (access(exe, X_OK) < 0) {
                g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "%s is not built", exe);
                return false;
        }
        envp = g_environ_setenv(envp, "DBUS_SYSTEM_BUS_ADDRESS", bus->address, TRUE);
        envp = g_environ_setenv(envp, "STATE_DIRECTORY", bus->state_dir, TRUE);
        envp = g_environ_setenv(envp, "TRACEBUS_CONFIG_DIR", config_dir, TRUE);
        envp = g_environ_setenv(envp, "TRACEBUS_IDLE_TIMEOUT_SEC", "0", FALSE);
        envp = g_environ_setenv(envp, "PERFETTO_PRODUCER_SOCK_NAME", producer_socket, TRUE);
        if (!spawn_logged(plain_argv, envp, log, false, &bus->service_pid, NULL, error))
                return false;
        set_emergency_pids(bus);
        if (!tb_wait_for_name(bus->conn, TB_BUS_NAME, bus->service_pid, 15000, error)) {
                g_prefix_error(error, "tracebusd: ");
                return false;
        }
        return true;
}

static char *env_dir(const char *name) {
        const char *v = g_getenv(name);
        if (!v)
                return NULL;
        /* Work from a canonical absolute path whatever the cwd. */
        return g_canonicalize_filename(v, NULL);
}

TbSystemBus *tb_system_bus_start(TbStartFlags flags, GError **error) {
        TbSystemBus *bus = g_new0(TbSystemBus, 1);
        g_autofree char *pidstr = NULL, *pidfile = NULL;

        bus->owner = true;
        bus->source_dir = env_dir("TRACEBUS_SOURCE_DIR");
        bus->build_dir = env_dir("TRACEBUS_BUILD_DIR");
        if (!bus->source_dir || !bus->build_dir) {
                g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                            "TRACEBUS_SOURCE_DIR and TRACEBUS_BUILD_DIR must be set");
                goto fail;
        }
        if (!prepare_tmpdir(bus, error))
                goto fail;
        /* Before dbus-daemon starts: it reads its servicedirs at startup. */
        if ((flags & TB_START_ACTIVATABLE) && !write_activation_files(bus, error))
                goto fail;
        g_setenv(ENV_TMPDIR, bus->tmpdir, TRUE);
        install_emergency_handler(bus);
        if (!start_dbus_daemon(bus, error))
                goto fail;
        set_emergency_pids(bus);
        if (!connect_bus(bus, error) || !start_polkitd(bus, error))
                goto fail;
        if ((flags & TB_START_SERVICE) && !start_service(bus, error))
                goto fail;

        /* For attached subprocesses (no setenv() now: GDBus has threads). */
        pidstr = g_strdup_printf("%d\n", (int) bus->service_pid);
        pidfile = g_build_filename(bus->tmpdir, "service.pid", NULL);
        if (!g_file_set_contents(pidfile, pidstr, -1, error))
                goto fail;
        return bus;

fail:
        if (bus->log_dir)
                tb_system_bus_dump_logs(bus);
        tb_system_bus_stop(bus, g_getenv("TRACEBUS_TEST_KEEP") != NULL);
        return NULL;
}

TbSystemBus *tb_system_bus_attach(GError **error) {
        g_autoptr(GError) e = NULL;
        TbSystemBus *bus = g_new0(TbSystemBus, 1);
        const char *tmp = g_getenv(ENV_TMPDIR), *addr = g_getenv("DBUS_SYSTEM_BUS_ADDRESS");
        g_autofree char *pidfile = NULL, *pid = NULL;

        if (!tmp || !addr) {
                g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                            "not started by tb_system_bus_start() (no " ENV_TMPDIR ")");
                g_free(bus);
                return NULL;
        }
        bus->owner = false;
        bus->tmpdir = g_strdup(tmp);
        bus->address = g_strdup(addr);
        bus->state_dir = g_build_filename(tmp, "state", NULL);
        bus->log_dir = g_build_filename(tmp, "logs", NULL);
        bus->source_dir = env_dir("TRACEBUS_SOURCE_DIR");
        bus->build_dir = env_dir("TRACEBUS_BUILD_DIR");
        pidfile = g_build_filename(tmp, "service.pid", NULL);
        bus->service_pid = g_file_get_contents(pidfile, &pid, NULL, NULL) ? atoi(pid) : 0;
        if (!connect_bus(bus, error)) {
                tb_system_bus_stop(bus, true);
                return NULL;
        }
        return bus;
}

int tb_system_bus_stop_service(TbSystemBus *bus, guint timeout_ms) {
        if (!bus->owner || bus->service_pid <= 0)
                return -1;
        return stop_pid(&bus->service_pid, SIGTERM, timeout_ms, "tracebusd");
}

void tb_system_bus_stop(TbSystemBus *bus, bool keep) {
        if (!bus)
                return;
        if (bus->owner) {
                if (bus->service_pid > 0) {
                        int st = tb_system_bus_stop_service(bus, 30000);
                        g_autofree char *s = tb_wait_status_to_string(st);
                        g_printerr("# tracebusd stopped: %s\n", s);
                }
                stop_activated(bus);
                stop_pid(&bus->polkitd_pid, SIGTERM, 5000, "polkitd");
        }
        g_clear_object(&bus->conn);
        if (bus->owner) {
                stop_pid(&bus->bus_pid, SIGTERM, 5000, "dbus-daemon");
                memset((void *) emergency_pids, 0, sizeof emergency_pids);
                if (bus->tmpdir && !keep) {
                        const char *argv[] = { "rm", "-rf", "--one-file-system", bus->tmpdir, NULL };
                        (void) g_spawn_sync(NULL, (char **) argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL,
                                            NULL, NULL, NULL, NULL);
                } else if (bus->tmpdir)
                        g_printerr("# test files kept in %s\n", bus->tmpdir);
        }
        g_free(bus->tmpdir);
        g_free(bus->address);
        g_free(bus->state_dir);
        g_free(bus->log_dir);
        g_free(bus->source_dir);
        g_free(bus->build_dir);
        g_free(bus);
}

void tb_system_bus_dump_logs(const TbSystemBus *bus) {
        const char *names[] = { "service.log", "polkitd.log", "bus.log" };

        fflush(stdout);
        for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
                g_autofree char *p = g_build_filename(bus->log_dir, names[i], NULL);
                g_autofree char *contents = NULL;

                g_printerr("\n===== %s =====\n", p);
                if (g_file_get_contents(p, &contents, NULL, NULL))
                        g_printerr("%s", contents);
                else
                        g_printerr("(missing)\n");
        }
        g_printerr("===== end of logs =====\n");
}

/* ---- running test cases ---- */

static TbSystemBus *the_bus;
static bool any_failed;

TbSystemBus *tb_bus(void) {
        return the_bus;
}

void tb_test_note_failure(void) {
        any_failed = true;
}

static void run_isolated(gconstpointer data) {
        void (*func)(void) = (void (*)(void)) data;

        if (g_test_subprocess()) {
                func();
                return;
        }
        g_test_trap_subprocess(NULL, (guint64) tb_scaled_ms(240 * 1000) * 1000, G_TEST_SUBPROCESS_INHERIT_STDERR);
        if (!g_test_trap_has_passed()) {
                g_printerr("# %s failed in its subprocess (see its stderr above)\n", g_test_get_path());
                any_failed = true;
                g_test_fail();
        }
}

void tb_test_add_isolated(const char *path, void (*func)(void)) {
        g_test_add_data_func(path, (gconstpointer) func, run_isolated);
}

/* Whether a sanitizer reported in logs/service.log, which every tracebusd of the run
 * writes to, the activated ones too: their exit status is dbus-daemon's to see, not
 * ours. Each report ends in a "SUMMARY: <name>Sanitizer: " line. */
static bool service_log_has_sanitizer_report(const TbSystemBus *bus) {
        g_autofree char *p = g_build_filename(bus->log_dir, "service.log", NULL);
        g_autofree char *text = NULL;

        if (!g_file_get_contents(p, &text, NULL, NULL))
                return false;
        for (const char *s = strstr(text, "SUMMARY: "); s; s = strstr(s + 1, "SUMMARY: ")) {
                const char *colon = strchr(s + 9, ':');

                if (colon && colon - s > 9 + 9 && g_str_has_prefix(colon - 9, "Sanitizer")) {
                        g_printerr("# a sanitizer reported in tracebusd: see service.log\n");
                        return true;
                }
        }
        return false;
}

/* SIGTERMs the tracebusd the harness started, unless a case already stopped it.
 * False unless it exits 0: LeakSanitizer reports as the service exits (and with
 * abort_on_error, aborts), which no case would see. */
static bool stop_service_clean(TbSystemBus *bus) {
        g_autofree char *s = NULL;
        int st;

        if (!bus->owner || bus->service_pid <= 0)
                return true;
        st = tb_system_bus_stop_service(bus, 30000);
        s = tb_wait_status_to_string(st);
        g_printerr("# tracebusd stopped: %s\n", s);
        if (st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0)
                return true;
        g_printerr("# tracebusd did not exit 0 on SIGTERM (a sanitizer report? see service.log)\n");
        return false;
}

int tb_test_run(TbStartFlags flags) {
        g_autoptr(GError) error = NULL;
        int r;

        if (g_test_subprocess()) {
                the_bus = tb_system_bus_attach(&error);
                if (!the_bus)
                        g_error("cannot attach to the test bus: %s", error->message);
                r = g_test_run();
                tb_system_bus_stop(the_bus, true);
                return r;
        }

        the_bus = tb_system_bus_start(flags, &error);
        if (!the_bus) {
                printf("Bail out! could not bring up the test bus: %s\n", error->message);
                fflush(stdout);
                return 1;
        }
        g_printerr("# test bus at %s, files in %s\n", the_bus->address, the_bus->tmpdir);
        if (tb_time_factor() != 1)
                g_printerr("# time windows, storms and rate bounds scaled by %u (%s)\n", tb_time_factor(),
                           g_getenv("TRACEBUS_TEST_TIME_FACTOR") ? "TRACEBUS_TEST_TIME_FACTOR" : "sanitizer build");
        /* Only parent-side checks run here; they must not abort the run. */
        g_test_set_nonfatal_assertions();
        r = g_test_run();
        /* Before the logs are dumped, so that what the service says as it exits is in them. */
        if (!stop_service_clean(the_bus))
                any_failed = true;
        /* The activated instances too, so that what they report as they exit is read. */
        if (the_bus->owner)
                stop_activated(the_bus);
        if (service_log_has_sanitizer_report(the_bus))
                any_failed = true;
        if (r != 0 || any_failed) {
                g_printerr("# some test failed: logs of the test stack follow\n");
                tb_system_bus_dump_logs(the_bus);
        }
        tb_system_bus_stop(the_bus, (r != 0 || any_failed) && g_getenv("TRACEBUS_TEST_KEEP"));
        the_bus = NULL;
        return r != 0 || any_failed ? 1 : 0;
}
