/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite: outputs whose writes never end. A FUSE filesystem of the test's own
 * (tests/hostile-fuse.c) never answers a write; a FIFO nobody reads takes nothing once
 * full; trace_pipe is a kernel interface. Whatever the caller's output does:
 *
 *  - Stop of its session is answered within a few write deadlines (OutputTimeoutSec=),
 *    with reason output-stalled, and another user's calls are answered meanwhile;
 *  - at SIGTERM with such sessions running, another user's trace is complete and the
 *    service exits within a few deadlines;
 *  - a file of a kernel interface is refused at Start, named.
 *
 * Two FUSE mounts: tbuser's own, through fusermount3, which root may not even stat (as
 * sshfs mounts are by default), and root's with allow_other, which root may stat and
 * whose writes then hang as the user's would. The service's write deadline is short
 * (its tracebusd.conf below), and the timings are ratios to it.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "session-util.h"

/* The service's write deadline, scaled as the tests' windows are (a sanitizer build's
 * service is slower: a session there may end on its deadline before the test's Stop). */
#define OUTPUT_TIMEOUT_SEC (3u * tb_time_factor())
#define DEADLINE_US (OUTPUT_TIMEOUT_SEC * 1e6)
/* Stop and shutdown with a stalled output: one deadline for the write that waits, plus
 * the time the session takes to end anyway. */
#define MAX_DEADLINES 3.0

typedef struct {
        GPid pid;
        char *mnt;
} HostileMount;

static bool mounted(const char *mnt) {
        g_autofree char *info = NULL, *needle = g_strdup_printf(" %s ", mnt);

        g_assert_true(g_file_get_contents("/proc/self/mountinfo", &info, NULL, NULL));
        return strstr(info, needle) != NULL;
}

/* hostile-fuse mounted at a new directory: @user's own mount (through fusermount3), or
 * with @user NULL root's, with allow_other, its file owned by tbuser. */
static void hostile_mount(const char *user, const char *name, HostileMount *ret) {
        g_autofree char *src = g_build_filename(tb_bus()->build_dir, "tests", "hostile-fuse", NULL);
        g_autofree char *exe = copy_executable(src, "hostile-fuse");
        g_autofree char *uid = NULL, *gid = NULL;
        g_auto(TbUser) u = { 0 }, owner = { 0 };
        gint64 deadline;

        /* The filesystem's mount needs the kernel's FUSE: a machine without it fails
         * here, loudly, rather than skip. */
        if (access("/dev/fuse", R_OK | W_OK) < 0)
                g_error("/dev/fuse: %s (modprobe fuse; tools/setup-debian)", g_strerror(errno));
        g_assert_true(tb_user_lookup("tbuser", &owner, NULL));
        if (user)
                g_assert_true(tb_user_lookup(user, &u, NULL));
        uid = g_strdup_printf("%u", (unsigned) owner.uid);
        gid = g_strdup_printf("%u", (unsigned) owner.gid);
        ret->mnt = make_user_dir("tbuser", name);
        fflush(NULL);
        ret->pid = fork();
        g_assert_cmpint(ret->pid, >=, 0);
        if (ret->pid == 0) {
                /* Each write never answered holds one of libfuse's worker threads (10 by
                 * default): room for every relay of fuse-relay-cap and more. */
                const char *argv[] = { "hostile-fuse", uid, gid, "-f", "-o",
                                       user ? "auto_unmount,max_threads=64" : "allow_other,max_threads=64",
                                       ret->mnt, NULL };

                if (user)
                        tb_user_become(&u);
                execv(exe, (char **) argv);
                _exit(127);
        }
        deadline = g_get_monotonic_time() + tb_scaled_ms(10000) * 1000ll;
        while (!mounted(ret->mnt)) {
                if (g_get_monotonic_time() > deadline || waitpid(ret->pid, NULL, WNOHANG) != 0)
                        g_error("hostile-fuse did not mount %s", ret->mnt);
                g_usleep(20 * 1000);
        }
        note("hostile-fuse (pid %d) mounted %s as %s\n", (int) ret->pid, ret->mnt, user ? user : "root");
}

static void unmount_lazily(const char *mnt) {
        const char *argv[] = { "umount", "-l", mnt, NULL };

        if (mounted(mnt))
                (void) g_spawn_sync(NULL, (char **) argv, NULL, G_SPAWN_SEARCH_PATH | G_SPAWN_STDERR_TO_DEV_NULL,
                                    NULL, NULL, NULL, NULL, NULL, NULL);
}

/* The filesystem dies, which fails its pending writes (ENOTCONN), and goes. */
static void hostile_unmount(HostileMount *m) {
        (void) kill(m->pid, SIGKILL);
        (void) waitpid(m->pid, NULL, 0);
        unmount_lazily(m->mnt);
        g_free(m->mnt);
}

typedef struct {
        pid_t fs_pid;
        guint after_ms;
        gint cancelled;
} Watchdog;

/* Without a deadline of its own, a service whose thread waits in the filesystem never
 * exits, not even on SIGKILL: the filesystem dies after @after_ms, so that a failing run
 * ends and says so rather than hang. */
static gpointer watchdog_thread(gpointer userdata) {
        Watchdog *w = userdata;

        for (guint ms = 0; ms < w->after_ms; ms += 50) {
                if (g_atomic_int_get(&w->cancelled))
                        return NULL;
                g_usleep(50 * 1000);
        }
        note("the service still waits after %u ms: the filesystem dies\n", w->after_ms);
        (void) kill(w->fs_pid, SIGKILL);
        return NULL;
}

/* @path opened for writing by @user in a child (root may not open a file on a user's
 * own FUSE mount), the descriptor sent back over a socket. */
static int open_as(const char *user, const char *path) {
        g_auto(TbUser) u = { 0 };
        char cbuf[CMSG_SPACE(sizeof(int))] = { 0 }, byte = 0;
        struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
        struct cmsghdr *cm;
        int pair[2], fd = -1;
        pid_t pid;

        g_assert_true(tb_user_lookup(user, &u, NULL));
        g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), ==, 0);
        fflush(NULL);
        pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                tb_user_become(&u);
                fd = open(path, O_WRONLY | O_CLOEXEC);
                if (fd < 0)
                        _exit(1);
                cm = CMSG_FIRSTHDR(&mh);
                cm->cmsg_level = SOL_SOCKET;
                cm->cmsg_type = SCM_RIGHTS;
                cm->cmsg_len = CMSG_LEN(sizeof(int));
                memcpy(CMSG_DATA(cm), &fd, sizeof(int));
                _exit(sendmsg(pair[1], &mh, 0) == 1 ? 0 : 1);
        }
        close(pair[1]);
        if (recvmsg(pair[0], &mh, 0) == 1 && (cm = CMSG_FIRSTHDR(&mh)) && cm->cmsg_type == SCM_RIGHTS)
                memcpy(&fd, CMSG_DATA(cm), sizeof(int));
        close(pair[0]);
        (void) waitpid(pid, NULL, 0);
        if (fd < 0)
                g_error("%s cannot open %s", user, path);
        return fd;
}

/* A FIFO in the tmpdir, open read-write (so opening it for writing does not wait), and
 * then read by nobody. */
static int open_unread_fifo(const char *name) {
        g_autofree char *path = g_build_filename(tb_bus()->tmpdir, name, NULL);
        int fd;

        g_assert_cmpint(mkfifo(path, 0600), ==, 0);
        fd = open(path, O_RDWR | O_CLOEXEC);
        g_assert_cmpint(fd, >=, 0);
        return fd;
}

/* A session of tbuser's into @fd, held, recording busy processes and writing every
 * 100 ms, so the output stalls at once. */
static char *start_stalling(int fd, Client *c) {
        g_autofree char *cfg = config_periodic(120000, 100, 0);
        ClientSpec spec = { .user = "tbuser", .op = OP_START, .config = cfg, .output_fd = fd, .hold = true };
        char *path = start_held(&spec, c);

        close(fd);
        return path;
}

static char *start_admin(char **ret_file, Client *c) {
        g_autofree char *cfg = config_periodic(120000, 100, 0);
        int fd = open_output("hostile-fs-admin.pftrace", ret_file);
        ClientSpec spec = { .user = "tbadmin", .op = OP_START, .config = cfg, .output_fd = fd, .hold = true };
        char *path = start_held(&spec, c);

        close(fd);
        return path;
}

typedef struct {
        Client *client;
        gint done;
        gint64 elapsed_us;
        char *reason;
} StopJob;

static gpointer stop_thread(gpointer userdata) {
        StopJob *job = userdata;
        gint64 t0 = g_get_monotonic_time();
        g_autofree char *stats = must(job->client, "stop", 'S');
        g_autoptr(GHashTable) st = parse_stats(stats);

        job->elapsed_us = g_get_monotonic_time() - t0;
        job->reason = g_strdup(g_hash_table_lookup(st, "Reason"));
        g_atomic_int_set(&job->done, 1);
        return NULL;
}

/* Stop of the stalled session, while tbadmin's calls go on: those are answered at once,
 * the Stop within MAX_DEADLINES, with reason output-stalled; tbadmin's own Stop and trace
 * are as ever. */
static void stop_stalled_beside_admin(const char *what, Client *stalled) {
        g_autofree char *admin_file = NULL, *admin_path = NULL, *props = NULL, *stats = NULL;
        StopJob job = { .client = stalled };
        gint64 t0, call_us, admin_stop_us;
        GThread *thread;
        Client admin;

        admin_path = start_admin(&admin_file, &admin);
        tb_sleep_scaled(1000);
        thread = g_thread_new("stop", stop_thread, &job);
        g_usleep(OUTPUT_TIMEOUT_SEC * 1000 * 1000 / 3);
        t0 = g_get_monotonic_time();
        props = must(&admin, "getall", 'V');
        call_us = g_get_monotonic_time() - t0;
        /* Still stopping: the call came in while the stalled session held its Stop. */
        g_assert_cmpint(g_atomic_int_get(&job.done), ==, 0);
        t0 = g_get_monotonic_time();
        stats = must(&admin, "stop", 'S');
        admin_stop_us = g_get_monotonic_time() - t0;
        g_thread_join(thread);
        note("%s: Stop %.2f s (%.2fx the deadline, %.1fx tbadmin's Stop of %.3f s), reason %s; "
             "tbadmin's call meanwhile %.3f s\n", what, job.elapsed_us / 1e6, job.elapsed_us / DEADLINE_US,
             (double) job.elapsed_us / (double) MAX(admin_stop_us, 1), admin_stop_us / 1e6, job.reason, call_us / 1e6);
        g_assert_cmpstr(job.reason, ==, "output-stalled");
        g_assert_cmpfloat(job.elapsed_us / DEADLINE_US, <, MAX_DEADLINES);
        g_assert_cmpfloat(call_us / DEADLINE_US, <, 0.5);
        assert_trace_file_closed(admin_file);
        client_finish(&admin, 5000);
        g_free(job.reason);
}

/* tbuser's own FUSE mount, as an sshfs home is: the service may not stat the file, takes
 * it all the same, and its Stop does not wait for the write that never ends. */
static void test_fuse_own_mount(void) {
        g_autofree char *file = NULL, *path = NULL;
        g_autoptr(GError) error = NULL;
        HostileMount m;
        TbBusy busy;
        Client c;

        g_assert_true(tb_busy_start("tbbusy-fuse", &busy, &error));
        hostile_mount("tbuser", "fuse-own", &m);
        file = g_build_filename(m.mnt, "trace", NULL);
        path = start_stalling(open_as("tbuser", file), &c);
        stop_stalled_beside_admin("tbuser's own FUSE mount", &c);
        client_finish(&c, 5000);
        wait_over(path, tb_scaled_ms(10000));
        tb_busy_stop(&busy);
        hostile_unmount(&m);
}
SESSION_CASE(fuse_own_mount)

/* OUTPUT_RELAY_MAX_PER_USER (service/recorder/output-relay.h): the relays a filesystem
 * may hold for one user; MaxSessionsPerUser= (5 by default): sessions at once. */
#define RELAYS_PER_USER 16u
#define SESSIONS_PER_USER 5u

/* Sessions of tbuser's into files of their own on @mnt (a pending write keeps its file's
 * page locked, and opening that file again would wait), numbered from @first, whose
 * clients leave at once: each stops, its relay blocked in the filesystem, and ends
 * output-stalled. */
static void leave_stalled(const char *mnt, unsigned first, unsigned n) {
        char *paths[SESSIONS_PER_USER] = { NULL };
        ClientSpec spec = { .user = "tbuser", .op = OP_START, .events = sched_events, .duration_ms = 60000 };

        g_assert_cmpuint(n, <=, SESSIONS_PER_USER);
        for (unsigned i = 0; i < n; i++) {
                g_autofree char *name = g_strdup_printf("trace-%u", first + i);
                g_autofree char *file = g_build_filename(mnt, name, NULL), *err = NULL;

                spec.output_fd = open_as("tbuser", file);
                err = client_run(&spec, &paths[i]);
                close(spec.output_fd);
                if (err)
                        g_error("Start %u into the FUSE file: %s", i, err);
        }
        for (unsigned i = 0; i < n; i++) {
                wait_over(paths[i], tb_scaled_ms((guint) (MAX_DEADLINES * OUTPUT_TIMEOUT_SEC * 1000)));
                g_free(paths[i]);
        }
}

/* A filesystem that never answers holds each relay for good: past RELAYS_PER_USER of
 * them, tbuser's next output there is refused, named; once the filesystem is gone (its
 * relays end), one is taken again. */
static void test_fuse_relay_cap(void) {
        g_autofree char *file = NULL, *file2 = NULL, *full = NULL, *err = NULL, *again = NULL, *path = NULL;
        ClientSpec spec = { .user = "tbuser", .op = OP_START, .events = sched_events, .duration_ms = 500 };
        HostileMount m;

        hostile_mount("tbuser", "fuse-cap", &m);
        for (unsigned done = 0; done < RELAYS_PER_USER; done += SESSIONS_PER_USER)
                leave_stalled(m.mnt, done, MIN(RELAYS_PER_USER - done, SESSIONS_PER_USER));
        file = g_build_filename(m.mnt, "trace", NULL);
        spec.output_fd = open_as("tbuser", file);
        err = client_run_full(&spec, NULL, &full);
        close(spec.output_fd);
        note("Output on FUSE with %u relays held -> %s\n", RELAYS_PER_USER, full ? full : "accepted");
        g_assert_cmpstr(err, ==, TB_ERROR_OUTPUT_REFUSED);
        g_assert_nonnull(strstr(error_message(full), "still being written"));
        hostile_unmount(&m);

        hostile_mount("tbuser", "fuse-cap-2", &m);
        file2 = g_build_filename(m.mnt, "trace", NULL);
        spec.output_fd = open_as("tbuser", file2);
        again = client_run(&spec, &path);
        close(spec.output_fd);
        g_assert_null(again);
        wait_over(path, tb_scaled_ms((guint) (MAX_DEADLINES * OUTPUT_TIMEOUT_SEC * 1000)));
        hostile_unmount(&m);
}
SESSION_CASE(fuse_relay_cap)

/* A FIFO that the caller holds open for reading and never reads. */
static void test_fifo_unread(void) {
        g_autofree char *path = NULL;
        g_autoptr(GError) error = NULL;
        TbBusy busy;
        Client c;

        g_assert_true(tb_busy_start("tbbusy-fifo", &busy, &error));
        path = start_stalling(open_unread_fifo("unread.fifo"), &c);
        stop_stalled_beside_admin("an unread FIFO", &c);
        client_finish(&c, 5000);
        wait_over(path, tb_scaled_ms(10000));
        tb_busy_stop(&busy);
}
SESSION_CASE(fifo_unread)

/* trace_pipe, through a symlink, opened by root for writing: a read there waits for
 * events, a write is a command to the kernel. Refused at Start, saying why. */
static void test_trace_pipe(void) {
        g_autofree char *link = g_build_filename(tb_bus()->tmpdir, "not-a-trace", NULL);
        g_autofree char *full = NULL, *err = NULL;
        ClientSpec spec = { .user = "tbuser", .op = OP_START, .events = sched_events, .duration_ms = 500 };
        int fd;

        g_assert_cmpint(symlink("/sys/kernel/tracing/trace_pipe", link), ==, 0);
        fd = open(link, O_WRONLY | O_CLOEXEC);
        g_assert_cmpint(fd, >=, 0);
        spec.output_fd = fd;
        err = client_run_full(&spec, NULL, &full);
        close(fd);
        note("Output trace_pipe -> %s\n", full ? full : "accepted");
        g_assert_cmpstr(err, ==, TB_ERROR_OUTPUT_REFUSED);
        g_assert_nonnull(strstr(error_message(full), "kernel interface"));
}
SESSION_CASE(trace_pipe)

/* Parent side, last (SIGTERM ends the service for good): tbuser records into a file on
 * root's FUSE mount and into an unread FIFO, tbadmin into a file; at SIGTERM the service
 * exits 0 within MAX_DEADLINES, tbadmin's trace complete. */
static void test_sigterm(void) {
        g_autofree char *file = NULL, *admin_file = NULL, *fuse_path = NULL, *fifo_path = NULL, *admin_path = NULL;
        g_autofree char *st_str = NULL;
        g_autoptr(GError) error = NULL;
        Client fuse_client, fifo_client, admin;
        g_autofree char *own_mnt = g_build_filename(tb_bus()->tmpdir, "fuse-own", NULL);
        gint64 t0, elapsed_us;
        Watchdog watchdog;
        GThread *thread;
        HostileMount m;
        TbBusy busy;
        int status;

        /* What a failed case above may have left (the tmpdir's removal stops at a mount). */
        unmount_lazily(own_mnt);
        for (int i = 0; i < 2; i++) {
                g_autofree char *cap_mnt = g_build_filename(tb_bus()->tmpdir, i ? "fuse-cap-2" : "fuse-cap", NULL);

                unmount_lazily(cap_mnt);
        }
        g_assert_true(tb_busy_start("tbbusy-term", &busy, &error));
        hostile_mount(NULL, "fuse-root", &m);
        file = g_build_filename(m.mnt, "trace", NULL);
        fuse_path = start_stalling(open_as("tbuser", file), &fuse_client);
        fifo_path = start_stalling(open_unread_fifo("sigterm.fifo"), &fifo_client);
        admin_path = start_admin(&admin_file, &admin);
        tb_sleep_scaled(1000);

        watchdog = (Watchdog) { .fs_pid = m.pid, .after_ms = (guint) (MAX_DEADLINES * 3 * OUTPUT_TIMEOUT_SEC * 1000) };
        thread = g_thread_new("watchdog", watchdog_thread, &watchdog);
        t0 = g_get_monotonic_time();
        status = tb_system_bus_stop_service(tb_bus(), (guint) (MAX_DEADLINES * 2 * OUTPUT_TIMEOUT_SEC * 1000));
        elapsed_us = g_get_monotonic_time() - t0;
        g_atomic_int_set(&watchdog.cancelled, 1);
        g_thread_join(thread);
        st_str = tb_wait_status_to_string(status);
        note("tracebusd after SIGTERM with stalled outputs: %s in %.2f s (%.2fx the deadline)\n", st_str,
             elapsed_us / 1e6, elapsed_us / DEADLINE_US);
        g_assert_true(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
        g_assert_cmpfloat(elapsed_us / DEADLINE_US, <, MAX_DEADLINES);
        tb_busy_stop(&busy);
        assert_trace_file_closed(admin_file);
        client_finish(&fuse_client, 5000);
        client_finish(&fifo_client, 5000);
        client_finish(&admin, 5000);
        hostile_unmount(&m);
}

int main(int argc, char **argv) {
        g_autofree char *conf = g_strdup_printf("[Limits]\nOutputTimeoutSec=%us\n", OUTPUT_TIMEOUT_SEC);

        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();
        g_setenv(TB_TEST_TRACEBUSD_CONF, conf, TRUE);

        tb_test_add_isolated("/bus/hostile-fs/fuse-own-mount", case_fuse_own_mount);
        tb_test_add_isolated("/bus/hostile-fs/fuse-relay-cap", case_fuse_relay_cap);
        tb_test_add_isolated("/bus/hostile-fs/fifo-unread", case_fifo_unread);
        tb_test_add_isolated("/bus/hostile-fs/trace-pipe", case_trace_pipe);
        /* In the parent: only the stack's owner can SIGTERM the service. */
        g_test_add_func("/bus/hostile-fs/z-sigterm", test_sigterm);
        return tb_test_run(TB_START_SERVICE);
}
