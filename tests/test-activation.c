/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite: D-Bus activation and the idle exit. The private bus activates the build
 * tree's tracebusd (TB_START_ACTIVATABLE) with a 1 s idle timeout; the cases check that
 * it exits when idle and comes back on the next call, that a call racing the exit is
 * answered, and that a detached session or a connected SDK app keeps it running.
 *
 * The race is made deterministic with the notification socket: tracebusd sends
 * STOPPING=1 (a blocking datagram) after it has decided to exit and before it releases
 * its name. With the socket's queue full, it waits right there, still owning the name,
 * while the test sends its call; then the test empties the queue.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "system-bus.h"
#include "test-util.h"

#define IDLE_TIMEOUT "1"
#define note(...) g_printerr("# " __VA_ARGS__)

/* ---- calls ---- */

/* ListSessions through the well-known name (activating it when needed); the reply's
 * sender in *ret_sender. */
static bool list_sessions(char **ret_sender, GError **error) {
        g_autoptr(GDBusMessage) msg = g_dbus_message_new_method_call(TB_BUS_NAME, TB_MANAGER_PATH,
                                                                     TB_MANAGER_IFACE, "ListSessions");
        g_autoptr(GDBusMessage) reply = NULL;

        reply = g_dbus_connection_send_message_with_reply_sync(tb_bus()->conn, msg, G_DBUS_SEND_MESSAGE_FLAGS_NONE,
                                                               25000, NULL, NULL, error);
        if (!reply || g_dbus_message_to_gerror(reply, error))
                return false;
        if (ret_sender)
                *ret_sender = g_strdup(g_dbus_message_get_sender(reply));
        return true;
}

static pid_t owner_pid(char **ret_unique) {
        g_autoptr(GError) error = NULL;
        pid_t pid = tb_name_owner_pid(tb_bus()->conn, TB_BUS_NAME, ret_unique, &error);

        g_assert_no_error(error);
        g_assert_cmpint(pid, >, 0);
        return pid;
}

/* The instance exited (and was reaped by the bus) within timeout_ms. */
static void wait_pid_gone(pid_t pid, guint timeout_ms) {
        g_assert_true(tb_wait_pid_gone(pid, timeout_ms));
}

/* No instance left from an earlier case. */
static void wait_no_service(void) {
        g_autoptr(GError) error = NULL;

        g_assert_true(tb_wait_for_name_gone(tb_bus()->conn, TB_BUS_NAME, 15000, &error));
        g_assert_no_error(error);
}

/* ---- the notification socket ---- */

static char *notify_path(void) {
        return g_build_filename(tb_bus()->tmpdir, "notify", NULL);
}

static int notify_bind(void) {
        g_autofree char *path = notify_path();
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd;

        g_assert_cmpuint(strlen(path), <, sizeof(sa.sun_path));
        strcpy(sa.sun_path, path);
        (void) unlink(path);
        fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(bind(fd, (struct sockaddr *) &sa, sizeof(sa)), ==, 0);
        return fd;
}

/* Reads datagrams until one has a line equal to @what. */
static bool notify_wait_for(int fd, const char *what, guint timeout_ms) {
        gint64 deadline = g_get_monotonic_time() + (gint64) timeout_ms * 1000;

        for (;;) {
                struct pollfd pfd = { .fd = fd, .events = POLLIN };
                gint64 left = (deadline - g_get_monotonic_time()) / 1000;
                char buf[4096];
                ssize_t n;

                if (left <= 0 || poll(&pfd, 1, (int) left) <= 0)
                        return false;
                n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
                if (n <= 0)
                        continue;
                buf[n] = '\0';
                g_auto(GStrv) lines = g_strsplit(buf, "\n", -1);
                if (g_strv_contains((const char *const *) lines, what))
                        return true;
        }
}

/* Fills the socket's receive queue (net.unix.max_dgram_qlen datagrams), so that the next
 * blocking send to it waits. New senders until even a fresh one cannot send: then the
 * queue, not a sender's buffer, is what is full. */
static GArray *notify_fill(void) {
        g_autofree char *path = notify_path();
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        GArray *senders = g_array_new(FALSE, FALSE, sizeof(int));

        strcpy(sa.sun_path, path);
        for (int round = 0; round < 64; round++) {
                int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0), sent = 0;

                g_assert_cmpint(fd, >=, 0);
                g_array_append_val(senders, fd);
                while (sendto(fd, "X=1", 3, MSG_DONTWAIT, (struct sockaddr *) &sa, sizeof(sa)) == 3)
                        sent++;
                g_assert_cmpint(errno, ==, EAGAIN);
                if (sent == 0)
                        return senders;
        }
        g_error("could not fill the notification socket's queue");
}

static void notify_drain(int fd, GArray *senders) {
        char buf[4096];

        while (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) >= 0)
                ;
        for (guint i = 0; i < senders->len; i++)
                close(g_array_index(senders, int, i));
        g_array_free(senders, TRUE);
}

/* True once @pid sleeps in a blocked datagram send (unix_wait_for_peer). */
static bool wait_blocked_in_send(pid_t pid, guint timeout_ms) {
        gint64 deadline = g_get_monotonic_time() + (gint64) timeout_ms * 1000;
        g_autofree char *path = g_strdup_printf("/proc/%d/wchan", (int) pid);

        while (g_get_monotonic_time() < deadline) {
                g_autofree char *wchan = NULL;

                if (g_file_get_contents(path, &wchan, NULL, NULL) && strstr(wchan, "unix_wait_for_peer"))
                        return true;
                g_usleep(20 * 1000);
        }
        return false;
}

/* With no instance left, a call activates a new one, which becomes ready:
 * its pid, its notifications on *ret_nfd and its unique name. */
static pid_t activate_fresh(int *ret_nfd, char **ret_unique) {
        g_autoptr(GError) error = NULL;
        pid_t pid;

        wait_no_service();
        *ret_nfd = notify_bind();
        g_assert_true(list_sessions(NULL, &error));
        g_assert_no_error(error);
        pid = owner_pid(ret_unique);
        g_assert_true(notify_wait_for(*ret_nfd, "READY=1", 10000));
        return pid;
}

/* ---- cases ---- */

static void test_idle_exit_and_reactivation(void) {
        g_autoptr(GError) error = NULL;
        g_autofree char *first = NULL, *second = NULL;
        pid_t pid1, pid2;
        gint64 t0;

        wait_no_service();
        g_assert_true(list_sessions(&first, &error));
        g_assert_no_error(error);
        pid1 = owner_pid(NULL);
        t0 = g_get_monotonic_time();
        note("activated tracebusd pid %d (%s)\n", (int) pid1, first);

        g_assert_true(tb_wait_for_name_gone(tb_bus()->conn, TB_BUS_NAME, 10000, &error));
        g_assert_no_error(error);
        note("name released after %" G_GINT64_FORMAT " ms\n", (g_get_monotonic_time() - t0) / 1000);
        /* Idle for the whole timeout first (less a little for the clocks). */
        g_assert_cmpint(g_get_monotonic_time() - t0, >=, 900 * 1000);
        wait_pid_gone(pid1, 5000);

        g_assert_true(list_sessions(&second, &error));
        g_assert_no_error(error);
        pid2 = owner_pid(NULL);
        note("re-activated as pid %d (%s)\n", (int) pid2, second);
        g_assert_cmpint(pid2, !=, pid1);
        g_assert_cmpstr(second, !=, first);
        wait_pid_gone(pid2, 10000);
}

typedef struct {
        GDBusMessage *reply;
        GError *error;
        bool done;
} AsyncReply;

static void on_reply(GObject *source, GAsyncResult *res, gpointer userdata) {
        AsyncReply *r = userdata;

        r->reply = g_dbus_connection_send_message_with_reply_finish(G_DBUS_CONNECTION(source), res, &r->error);
        r->done = true;
}

static void test_call_racing_idle_exit_is_answered(void) {
        g_autoptr(GError) error = NULL;
        g_autofree char *unique = NULL, *owner_now = NULL;
        g_autoptr(GDBusMessage) msg = NULL;
        AsyncReply r = { 0 };
        GArray *senders;
        int nfd;
        pid_t pid;

        pid = activate_fresh(&nfd, &unique);

        /* STOPPING=1 will block: the service has decided to exit and still owns the name. */
        senders = notify_fill();
        if (!wait_blocked_in_send(pid, 10000))
                g_error("tracebusd (pid %d) did not block sending STOPPING=1", (int) pid);
        g_assert_cmpint(tb_name_owner_pid(tb_bus()->conn, TB_BUS_NAME, &owner_now, &error), ==, pid);
        g_assert_cmpstr(owner_now, ==, unique);
        note("tracebusd %d is exiting and still owns the name; calling it\n", (int) pid);

        msg = g_dbus_message_new_method_call(TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_IFACE, "ListSessions");
        g_dbus_connection_send_message_with_reply(tb_bus()->conn, msg, G_DBUS_SEND_MESSAGE_FLAGS_NONE, 25000,
                                                  NULL, NULL, on_reply, &r);
        /* Let the call reach the service's socket, behind the release it is about to send. */
        g_usleep(200 * 1000);
        notify_drain(nfd, senders);
        while (!r.done)
                g_main_context_iteration(NULL, TRUE);
        g_assert_no_error(r.error);
        g_assert_nonnull(r.reply);
        g_assert_false(g_dbus_message_to_gerror(r.reply, &error));
        g_assert_no_error(error);
        /* Answered by the exiting instance itself, which then went away. */
        g_assert_cmpstr(g_dbus_message_get_sender(r.reply), ==, unique);
        g_assert_true(tb_wait_for_name_gone(tb_bus()->conn, TB_BUS_NAME, 10000, &error));
        g_assert_no_error(error);
        wait_pid_gone(pid, 5000);
        g_object_unref(r.reply);
        close(nfd);
}

/* The race as it comes: a call right after STOPPING=1 reaches either the exiting
 * instance or a new one; it is answered in both cases. */
static void test_calls_at_the_exit_are_answered(void) {
        guint by_old = 0, by_new = 0;

        for (int i = 0; i < 4; i++) {
                g_autoptr(GError) error = NULL;
                g_autofree char *unique = NULL, *sender = NULL;
                pid_t pid;
                int nfd;

                pid = activate_fresh(&nfd, &unique);
                g_assert_true(notify_wait_for(nfd, "STOPPING=1", 10000));
                g_assert_true(list_sessions(&sender, &error));
                g_assert_no_error(error);
                if (g_strcmp0(sender, unique) == 0)
                        by_old++;
                else
                        by_new++;
                wait_pid_gone(pid, 10000);
                close(nfd);
        }
        note("calls right after STOPPING=1: %u answered by the exiting instance, %u by a new one\n", by_old, by_new);
}

static void test_detached_session_keeps_service(void) {
        const char *config = "duration_ms: 60000\n"
                             "data_sources { config { name: \"linux.ftrace\" ftrace_config {\n"
                             "  ftrace_events: \"sched/sched_switch\" } } }\n";
        g_autoptr(GVariantBuilder) opts = g_variant_builder_new(G_VARIANT_TYPE("a{sv}"));
        g_autoptr(GVariant) started = NULL, detached = NULL, stopped = NULL;
        g_autoptr(GError) error = NULL;
        const char *path;
        gboolean is_detached = FALSE;
        pid_t pid;

        wait_no_service();
        g_variant_builder_add(opts, "{sv}", "DetachKey", g_variant_new_string("keepalive"));
        started = g_dbus_connection_call_sync(tb_bus()->conn, TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_IFACE,
                                              "Start", g_variant_new("(sa{sv})", config, opts),
                                              G_VARIANT_TYPE("(oas)"), G_DBUS_CALL_FLAGS_NONE, 25000, NULL, &error);
        g_assert_no_error(error);
        g_variant_get_child(started, 0, "&o", &path);
        pid = owner_pid(NULL);
        note("detached session %s in pid %d\n", path, (int) pid);

        /* Four idle timeouts with no call at all: the session keeps it. */
        g_usleep(4 * G_USEC_PER_SEC);
        g_assert_true(tb_pid_alive(pid));
        g_assert_cmpint(owner_pid(NULL), ==, pid);
        detached = g_dbus_connection_call_sync(tb_bus()->conn, TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_IFACE,
                                               "IsDetached", g_variant_new("(s)", "keepalive"),
                                               G_VARIANT_TYPE("(b)"), G_DBUS_CALL_FLAGS_NONE, 25000, NULL, &error);
        g_assert_no_error(error);
        g_variant_get(detached, "(b)", &is_detached);
        g_assert_true(is_detached);

        stopped = g_dbus_connection_call_sync(tb_bus()->conn, TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_IFACE,
                                              "Stop", g_variant_new("(o)", path), G_VARIANT_TYPE("(a{sv})"),
                                              G_DBUS_CALL_FLAGS_NONE, 25000, NULL, &error);
        g_assert_no_error(error);
        /* Once it has ended, the service is idle again and goes. */
        g_assert_true(tb_wait_for_name_gone(tb_bus()->conn, TB_BUS_NAME, 10000, &error));
        g_assert_no_error(error);
        wait_pid_gone(pid, 5000);
}

/* ListProducers through the well-known name (activating the service when needed), as
GVariant's text. */
static char *list_producers(void) {
        g_autoptr(GVariant) reply = NULL;
        g_autoptr(GError) error = NULL;

        reply = g_dbus_connection_call_sync(tb_bus()->conn, TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_IFACE,
                                            "ListProducers", NULL, G_VARIANT_TYPE("(a(tsuua(sas)))"),
                                            G_DBUS_CALL_FLAGS_NONE, 25000, NULL, &error);
        g_assert_no_error(error);
        return g_variant_print(reply, FALSE);
}

/* An SDK app started before the service is there (no socket yet) connects once the
 * activated service binds the socket; while it is connected the service does not exit
 * for idleness, and once it has gone the service does. */
static void test_connected_app_keeps_service(void) {
        g_autofree char *sock = g_build_filename(tb_bus()->tmpdir, TB_PRODUCER_SOCKET, NULL);
        gint64 deadline = g_get_monotonic_time() + (gint64) tb_scaled_ms(20000) * 1000;
        g_auto(TbUser) user = { 0 };
        g_autoptr(GError) error = NULL;
        bool listed = false;
        GPid app;
        pid_t pid;

        wait_no_service();
        app = tb_spawn_sdk_app("tbuser", "example_system_wide", sock, &user);
        /* Its first connect fails: no service, no socket. */
        g_usleep(500 * 1000);
        g_assert_true(tb_pid_alive(app));
        while (!listed && g_get_monotonic_time() < deadline) {
                g_autofree char *text = list_producers();

                listed = strstr(text, "'track_event'") && strstr(text, "'rendering'");
                if (!listed)
                        g_usleep(100 * 1000);
        }
        g_assert_true(listed);
        pid = owner_pid(NULL);
        note("app %d connected to pid %d\n", (int) app, (int) pid);

        /* Four idle timeouts with no call at all: the app keeps it. */
        g_usleep(4 * G_USEC_PER_SEC);
        g_assert_true(tb_pid_alive(pid));
        g_assert_cmpint(owner_pid(NULL), ==, pid);

        tb_kill_child(app);
        g_assert_true(tb_wait_for_name_gone(tb_bus()->conn, TB_BUS_NAME, 10000, &error));
        g_assert_no_error(error);
        wait_pid_gone(pid, 5000);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();
        /* Inherited by dbus-daemon, and so by every activated tracebusd. */
        g_setenv("TRACEBUS_IDLE_TIMEOUT_SEC", IDLE_TIMEOUT, TRUE);

        tb_test_add_isolated("/bus/activation/a-idle-exit-and-reactivation", test_idle_exit_and_reactivation);
        tb_test_add_isolated("/bus/activation/b-call-racing-idle-exit-is-answered", test_call_racing_idle_exit_is_answered);
        tb_test_add_isolated("/bus/activation/c-calls-at-the-exit-are-answered", test_calls_at_the_exit_are_answered);
        tb_test_add_isolated("/bus/activation/d-detached-session-keeps-service", test_detached_session_keeps_service);
        tb_test_add_isolated("/bus/activation/e-connected-app-keeps-service", test_connected_app_keeps_service);
        return tb_test_run(TB_START_ACTIVATABLE);
}
