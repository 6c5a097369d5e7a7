/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The bus suites' helpers that do not start or stop the stack: test users and
 * commands run as them, the busy process pair, tracefs and trace-dir listings,
 * root's D-Bus property reads, and the time windows (see test-util.h).
 */
#include "test-util.h"
#include "tracebus-bus.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

void tb_write_all(int fd, const char *p, size_t n) {
        while (n > 0) {
                ssize_t k = write(fd, p, n);
                if (k <= 0)
                        return;
                p += k;
                n -= (size_t) k;
        }
}

guint64 tb_process_rss_kib(pid_t pid) {
        g_autofree char *path = g_strdup_printf("/proc/%d/status", (int) pid), *status = NULL;
        const char *line;

        g_assert_true(g_file_get_contents(path, &status, NULL, NULL));
        line = strstr(status, "\nVmRSS:");
        g_assert_nonnull(line);
        return g_ascii_strtoull(line + strlen("\nVmRSS:"), NULL, 10);
}

bool tb_wait_pid_gone(pid_t pid, guint timeout_ms) {
        gint64 deadline = g_get_monotonic_time() + (gint64) timeout_ms * 1000;

        while (tb_pid_alive(pid)) {
                if (g_get_monotonic_time() > deadline)
                        return false;
                g_usleep(20 * 1000);
        }
        return true;
}

/* ---- upstream Perfetto ---- */

bool tb_sets_meet(GHashTable *a, GHashTable *b) {
        GHashTableIter it;
        gpointer k;

        g_hash_table_iter_init(&it, a);
        while (g_hash_table_iter_next(&it, &k, NULL))
                if (g_hash_table_contains(b, k))
                        return true;
        return false;
}

char *tb_perfetto_program(const char *kind, const char *name) {
        const char *dir = g_getenv(g_str_equal(kind, "sdk") ? "TRACEBUS_PERFETTO_SDK" : "TRACEBUS_PERFETTO_BIN");
        g_autofree char *fallback = g_build_filename(g_getenv("TRACEBUS_SOURCE_DIR") ?: ".", "..", "shared",
                                                     "perfetto", kind, NULL);
        char *path = g_build_filename(dir ?: fallback, name, NULL);

        if (access(path, X_OK) < 0)
                g_error("upstream Perfetto's %s is not at %s (%m): it sits in ../shared/perfetto/%s beside "
                        "the source tree, or in $TRACEBUS_PERFETTO_%s", name, path, kind,
                        g_str_equal(kind, "sdk") ? "SDK" : "BIN");
        return path;
}

GPid tb_spawn_sdk_app(const char *user, const char *program, const char *socket, TbUser *u) {
        g_autofree char *path = tb_perfetto_program("sdk", program);
        g_auto(GStrv) env = g_environ_setenv(g_get_environ(), "PERFETTO_PRODUCER_SOCK_NAME", socket, TRUE);
        char *argv[] = { path, NULL };
        g_autoptr(GError) error = NULL;
        GPid pid = 0;

        g_assert_true(tb_user_lookup(user, u, &error));
        g_spawn_async("/", argv, env, G_SPAWN_DO_NOT_REAP_CHILD, (GSpawnChildSetupFunc) tb_user_become, u, &pid, &error);
        g_assert_no_error(error);
        return pid;
}

void tb_kill_child(GPid pid) {
        (void) kill(pid, SIGKILL);
        (void) waitpid(pid, NULL, 0);
}

/* ---- users ---- */

bool tb_user_lookup(const char *name, TbUser *ret, GError **error) {
        struct passwd *pw = getpwnam(name);
        int n = 64;

        if (!pw) {
                g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "no such user %s", name);
                return false;
        }
        ret->name = g_strdup(name);
        ret->uid = pw->pw_uid;
        ret->gid = pw->pw_gid;
        ret->groups = g_new(gid_t, n);
        if (getgrouplist(name, pw->pw_gid, ret->groups, &n) < 0) {
                ret->groups = g_renew(gid_t, ret->groups, n);
                (void) getgrouplist(name, pw->pw_gid, ret->groups, &n);
        }
        ret->n_groups = n;
        return true;
}

uid_t tb_user_uid(const char *name) {
        g_auto(TbUser) u = { 0 };

        g_assert_true(tb_user_lookup(name, &u, NULL));
        return u.uid;
}

void tb_user_clear(TbUser *user) {
        g_clear_pointer(&user->name, g_free);
        g_clear_pointer(&user->groups, g_free);
}

static void die_raw(const char *msg) {
        tb_write_all(2, msg, strlen(msg));
        _exit(126);
}

void tb_user_become(const TbUser *user) {
        if (setgroups((size_t) user->n_groups, user->groups) < 0)
                die_raw("tb_user_become: setgroups failed\n");
        if (setresgid(user->gid, user->gid, user->gid) < 0)
                die_raw("tb_user_become: setresgid failed\n");
        if (setresuid(user->uid, user->uid, user->uid) < 0)
                die_raw("tb_user_become: setresuid failed\n");
        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
}

static void child_setup_user(gpointer data) {
        const TbUser *user = data;
        if (user)
                tb_user_become(user);
        else
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
}

bool tb_run_as_user(const char *user, const char *const *argv, TbCommandResult *ret, GError **error) {
        g_auto(TbUser) u = { 0 };
        g_autoptr(GPtrArray) args = g_ptr_array_new();
        g_auto(GStrv) envp = g_get_environ();
        bool ok;

        if (user && !tb_user_lookup(user, &u, error))
                return false;
        /* Nothing here may hang the suite: the service could. */
        g_ptr_array_add(args, (char *) "timeout");
        g_ptr_array_add(args, (char *) "-k");
        g_ptr_array_add(args, (char *) "5");
        g_ptr_array_add(args, (char *) "120");
        for (size_t i = 0; argv[i]; i++)
                g_ptr_array_add(args, (char *) argv[i]);
        g_ptr_array_add(args, NULL);
        envp = g_environ_setenv(envp, "HOME", "/", TRUE);
        if (user) {
                envp = g_environ_setenv(envp, "USER", user, TRUE);
                envp = g_environ_setenv(envp, "LOGNAME", user, TRUE);
        }
        memset(ret, 0, sizeof *ret);
        ok = g_spawn_sync("/", (char **) args->pdata, envp, G_SPAWN_SEARCH_PATH, child_setup_user,
                          user ? &u : NULL, &ret->out, &ret->err, &ret->wait_status, error);
        return ok;
}

void tb_command_result_clear(TbCommandResult *res) {
        g_clear_pointer(&res->out, g_free);
        g_clear_pointer(&res->err, g_free);
}

char *tb_wait_status_to_string(int st) {
        if (st == -1)
                return g_strdup("killed by the harness (timeout) or not running");
        if (WIFEXITED(st))
                return g_strdup_printf("exit %d", WEXITSTATUS(st));
        if (WIFSIGNALED(st))
                return g_strdup_printf("signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
        return g_strdup_printf("wait status 0x%x", st);
}

bool tb_command_succeeded(const TbCommandResult *res) {
        return WIFEXITED(res->wait_status) && WEXITSTATUS(res->wait_status) == 0;
}

/* ---- busy processes ---- */

static void busy_loop(const char *comm, int in_fd, int out_fd, bool starts) {
        struct timespec ts = { .tv_sec = 0, .tv_nsec = 1000 * 1000 };
        unsigned i = 0;
        char c = 'x';

        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
        (void) prctl(PR_SET_NAME, comm);
        if (starts && write(out_fd, &c, 1) != 1)
                _exit(1);
        for (;;) {
                if (read(in_fd, &c, 1) != 1)
                        _exit(0);
                /* A breather every 32 rounds: still tens of thousands of
                 * switches per second, without starving the machine. */
                if (starts && ++i % 32 == 0)
                        nanosleep(&ts, NULL);
                if (write(out_fd, &c, 1) != 1)
                        _exit(0);
        }
}

bool tb_busy_start(const char *comm, TbBusy *ret, GError **error) {
        int a[2], b[2];

        memset(ret, 0, sizeof *ret);
        g_strlcpy(ret->comm, comm, sizeof ret->comm);
        if (pipe2(a, O_CLOEXEC) < 0 || pipe2(b, O_CLOEXEC) < 0) {
                g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno), "pipe: %s", g_strerror(errno));
                return false;
        }
        fflush(NULL);
        ret->pid = fork();
        if (ret->pid == 0)
                busy_loop(ret->comm, b[0], a[1], true);
        ret->peer_pid = fork();
        if (ret->peer_pid == 0)
                busy_loop(ret->comm, a[0], b[1], false);
        close(a[0]);
        close(a[1]);
        close(b[0]);
        close(b[1]);
        if (ret->pid < 0 || ret->peer_pid < 0) {
                g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "fork failed");
                tb_busy_stop(ret);
                return false;
        }
        /* Let them get going (and set their names) before anything records. */
        g_usleep(50 * 1000);
        return true;
}

void tb_busy_stop(TbBusy *busy) {
        /* The pids stay in *busy: tests look for them in the trace after. */
        pid_t pids[] = { busy->pid, busy->peer_pid };
        if (busy->stopped)
                return;
        for (size_t i = 0; i < G_N_ELEMENTS(pids); i++) {
                if (pids[i] > 0) {
                        kill(pids[i], SIGKILL);
                        (void) waitpid(pids[i], NULL, 0);
                }
        }
        busy->stopped = true;
}

/* ---- tracefs and directories ---- */

static gint cmp_str(gconstpointer a, gconstpointer b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

static char **sorted_strv(GPtrArray *a) {
        g_ptr_array_sort(a, cmp_str);
        g_ptr_array_add(a, NULL);
        return (char **) g_ptr_array_free(a, FALSE);
}

char **tb_tracebus_instances(void) {
        GPtrArray *a = g_ptr_array_new();
        DIR *d = opendir(TB_INSTANCES_DIR);
        struct dirent *de;

        if (d) {
                while ((de = readdir(d)))
                        if (g_str_has_prefix(de->d_name, "tracebus-"))
                                g_ptr_array_add(a, g_strdup(de->d_name));
                closedir(d);
        }
        return sorted_strv(a);
}

static void list_tree_rec(const char *root, const char *rel, GPtrArray *out) {
        g_autofree char *path = rel ? g_build_filename(root, rel, NULL) : g_strdup(root);
        g_autoptr(GDir) d = g_dir_open(path, 0, NULL);
        const char *name;

        if (!d)
                return;
        while ((name = g_dir_read_name(d))) {
                char *r = rel ? g_build_filename(rel, name, NULL) : g_strdup(name);
                g_autofree char *full = g_build_filename(root, r, NULL);
                g_ptr_array_add(out, r);
                if (g_file_test(full, G_FILE_TEST_IS_DIR) && !g_file_test(full, G_FILE_TEST_IS_SYMLINK))
                        list_tree_rec(root, r, out);
        }
}

char **tb_list_tree(const char *dir) {
        GPtrArray *a = g_ptr_array_new();
        list_tree_rec(dir, NULL, a);
        return sorted_strv(a);
}

char *tb_str_replace(const char *s, const char *what, const char *with) {
        g_auto(GStrv) parts = g_strsplit(s, what, -1);
        return g_strjoinv(with, parts);
}

char **tb_strv_added(char *const *a, char *const *b) {
        GPtrArray *r = g_ptr_array_new();
        for (size_t i = 0; b && b[i]; i++)
                if (!a || !g_strv_contains((const char *const *) a, b[i]))
                        g_ptr_array_add(r, g_strdup(b[i]));
        g_ptr_array_add(r, NULL);
        return (char **) g_ptr_array_free(r, FALSE);
}

/* ---- D-Bus helpers ---- */

GVariant *tb_get_property(GDBusConnection *conn, const char *path, const char *iface, const char *name,
                          GError **error) {
        g_autoptr(GVariant) reply = NULL;
        GVariant *v = NULL;

        reply = g_dbus_connection_call_sync(conn, TB_BUS_NAME, path, "org.freedesktop.DBus.Properties", "Get",
                                            g_variant_new("(ss)", iface, name), G_VARIANT_TYPE("(v)"),
                                            G_DBUS_CALL_FLAGS_NONE, 10000, NULL, error);
        if (!reply)
                return NULL;
        g_variant_get(reply, "(v)", &v);
        return v;
}

char *tb_session_state(GDBusConnection *conn, const char *path, GError **error) {
        g_autoptr(GVariant) v = tb_get_property(conn, path, TB_SESSION_INTERFACE, "State", error);

        if (!v)
                return NULL;
        if (!g_variant_is_of_type(v, G_VARIANT_TYPE_STRING)) {
                g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "State has type %s, not s",
                            g_variant_get_type_string(v));
                return NULL;
        }
        return g_variant_dup_string(v, NULL);
}

bool tb_wait_session_over(GDBusConnection *conn, const char *path, char *const *instance_names, guint timeout_ms,
                          GError **error) {
        gint64 deadline = g_get_monotonic_time() + (gint64) timeout_ms * 1000;
        g_autofree char *last_state = NULL;

        for (;;) {
                g_autoptr(GError) e = NULL;
                g_autofree char *state = tb_session_state(conn, path, &e);
                g_auto(GStrv) now = tb_tracebus_instances();
                bool over = !state || g_str_equal(state, "ended");
                bool instance_left = false;

                for (size_t i = 0; instance_names && instance_names[i]; i++)
                        if (g_strv_contains((const char *const *) now, instance_names[i]))
                                instance_left = true;
                if (over && !instance_left)
                        return true;
                g_free(last_state);
                last_state = g_strdup(state ? state : e->message);
                if (g_get_monotonic_time() > deadline) {
                        g_set_error(error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
                                    "session %s not over after %u ms (state: %s, its instance %s)", path, timeout_ms,
                                    last_state, instance_left ? "still exists" : "is gone");
                        return false;
                }
                g_usleep(50 * 1000);
        }
}

/* ---- time windows ---- */

guint tb_time_factor(void) {
        static guint factor;
        const char *v;
        guint64 f;

        if (factor)
                return factor;
#ifdef TB_TEST_SANITIZED
        f = 4;
#else
        f = 1;
#endif
        v = g_getenv("TRACEBUS_TEST_TIME_FACTOR");
        if (v && *v)
                f = CLAMP(g_ascii_strtoull(v, NULL, 10), 1, 20);
        factor = (guint) f;
        return factor;
}

guint tb_scaled_ms(guint ms) {
        return ms * tb_time_factor();
}

void tb_sleep_scaled(guint ms) {
        g_usleep((gulong) tb_scaled_ms(ms) * 1000);
}

bool tb_pid_alive(pid_t pid) {
        g_autofree char *path = NULL, *stat = NULL;
        const char *p;

        if (pid <= 0)
                return false;
        path = g_strdup_printf("/proc/%d/stat", (int) pid);
        if (!g_file_get_contents(path, &stat, NULL, NULL))
                return false;
        p = strrchr(stat, ')');
        if (!p || strlen(p) < 3)
                return false;
        return p[2] != 'Z' && p[2] != 'X';
}

/* ---- latency against a floor measured alongside ---- */

/* The high percentile compared: the 90th, high enough that a service slowed on
 * most calls shows, low enough that a few scheduling hiccups in 30 to 600 pairs
 * (on two vCPUs shared with other builds) do not decide it. */
#define LATENCY_PERMILLE 900

void tb_latency_init(TbLatency *lat) {
        lat->service_us = g_array_new(FALSE, FALSE, sizeof(gint64));
        lat->floor_us = g_array_new(FALSE, FALSE, sizeof(gint64));
}

void tb_latency_clear(TbLatency *lat) {
        g_clear_pointer(&lat->service_us, g_array_unref);
        g_clear_pointer(&lat->floor_us, g_array_unref);
}

/* One synchronous call on @conn, its round trip in µs; the test fails on an error. */
static gint64 timed_call(GDBusConnection *conn, const char *dest, const char *path, const char *iface,
                         const char *method, GVariant *args) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GVariant) reply = NULL;
        gint64 t0 = g_get_monotonic_time();

        reply = g_dbus_connection_call_sync(conn, dest, path, iface, method, args, NULL, G_DBUS_CALL_FLAGS_NONE, 60000,
                                            NULL, &error);
        g_assert_no_error(error);
        return g_get_monotonic_time() - t0;
}

void tb_latency_probe(TbLatency *lat, GDBusConnection *conn) {
        /* Which one goes first alternates, so that neither always finds the other's wake-ups. */
        bool floor_first = lat->floor_us->len % 2 == 0;
        gint64 floor_us, service_us;

        if (!floor_first)
                service_us = timed_call(conn, TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_INTERFACE, "IsDetached",
                                        g_variant_new("(s)", "latency-probe"));
        floor_us = timed_call(conn, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetId",
                              NULL);
        if (floor_first)
                service_us = timed_call(conn, TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_INTERFACE, "IsDetached",
                                        g_variant_new("(s)", "latency-probe"));
        g_array_append_val(lat->floor_us, floor_us);
        g_array_append_val(lat->service_us, service_us);
}

static gint cmp_gint64(gconstpointer a, gconstpointer b) {
        gint64 x = *(const gint64 *) a, y = *(const gint64 *) b;

        return x < y ? -1 : x > y;
}

/* The @permille-th per mille of @samples (1000: the worst), in µs, at least 1. */
static double percentile_us(GArray *samples, guint permille) {
        g_autoptr(GArray) sorted = g_array_copy(samples);
        guint i;

        g_assert_cmpuint(sorted->len, >, 0);
        g_array_sort(sorted, cmp_gint64);
        i = (guint) (((guint64) sorted->len * permille + 999) / 1000);
        return MAX((double) g_array_index(sorted, gint64, i > 0 ? i - 1 : 0), 1.0);
}

void tb_latency_assert(const TbLatency *lat, const char *what, TbLatencyBounds bounds) {
        double s50 = percentile_us(lat->service_us, 500), f50 = percentile_us(lat->floor_us, 500);
        double shigh = percentile_us(lat->service_us, LATENCY_PERMILLE);
        double fhigh = percentile_us(lat->floor_us, LATENCY_PERMILLE);
        double smax = percentile_us(lat->service_us, 1000), fmax = percentile_us(lat->floor_us, 1000);

        g_printerr("# %s: %u pairs; IsDetached / the bus driver's GetId in ms: median %.2f / %.2f (x%.1f), "
                   "p%u %.2f / %.2f (x%.1f, bound x%.0f), worst %.2f / %.2f (x%.1f, bound x%.0f)\n",
                   what, lat->service_us->len, s50 / 1000, f50 / 1000, s50 / f50, LATENCY_PERMILLE / 10,
                   shigh / 1000, fhigh / 1000, shigh / fhigh, bounds.percentile, smax / 1000, fmax / 1000,
                   smax / fmax, bounds.worst);
        g_assert_cmpfloat(shigh / fhigh, <, bounds.percentile);
        g_assert_cmpfloat(smax / fmax, <, bounds.worst);
}
