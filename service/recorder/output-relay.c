/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "array-util.h"
#include "fd-util.h"
#include "macro.h"
#include "output-relay.h"

/* The relays started and not known to have ended, each with the UID it is counted for
 * and a copy of its done pipe's read end, which polls POLLHUP once the relay is gone. */
typedef struct RunningRelay {
        uid_t uid;
        int fd;
} RunningRelay;

static pthread_mutex_t running_lock = PTHREAD_MUTEX_INITIALIZER;
static RunningRelay *running;
static size_t n_running, n_running_allocated;

/* Forgets the relays that ended; how many of @uid's still run. Under running_lock. */
static unsigned prune_running(uid_t uid) {
        unsigned n = 0;
        size_t kept = 0;

        for (size_t i = 0; i < n_running; i++) {
                struct pollfd p = { .fd = running[i].fd };

                if (poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR | POLLNVAL))) {
                        safe_close(running[i].fd);
                        continue;
                }
                n += running[i].uid == uid;
                running[kept++] = running[i];
        }
        n_running = kept;
        return n;
}

int output_relay_check_user(uid_t uid) {
        unsigned n;

        (void) pthread_mutex_lock(&running_lock);
        n = prune_running(uid);
        (void) pthread_mutex_unlock(&running_lock);
        return n >= OUTPUT_RELAY_MAX_PER_USER ? -EUSERS : 0;
}

/* Counts the relay behind @done_fd for @uid, unless @uid has too many already. Under
 * running_lock. */
static int add_running(uid_t uid, int done_fd) {
        int copy;

        if (prune_running(uid) >= OUTPUT_RELAY_MAX_PER_USER)
                return -EUSERS;
        if (n_running == n_running_allocated) {
                RunningRelay *grown = array_grow(running, &n_running_allocated, sizeof(*running), 16);

                if (!grown)
                        return -ENOMEM;
                running = grown;
        }
        copy = fcntl(done_fd, F_DUPFD_CLOEXEC, 3);
        if (copy < 0)
                return -errno;
        running[n_running++] = (RunningRelay) { .uid = uid, .fd = copy };
        return 0;
}

/* One read from the pipe, one write into the file: what a pipe holds by default. */
#define RELAY_BUFFER_SIZE ((size_t) 64 * 1024)

/* Closes every descriptor from @from up, but @keep (ascending): the relay must hold no
 * other session's output, which would then never see its end. */
static void close_all_but(int from, const int keep[3]) {
        struct rlimit rl;

        for (int i = 0; i <= 3; i++) {
                int to = i < 3 ? keep[i] - 1 : INT32_MAX;

                if (from <= to && close_range((unsigned) from, (unsigned) to, 0) < 0 && i == 3 &&
                    getrlimit(RLIMIT_NOFILE, &rl) >= 0)
                        /* No close_range(): one by one, up to the limit. */
                        for (int fd = from; (rlim_t) fd < rl.rlim_cur; fd++)
                                (void) close(fd);
                if (i < 3)
                        from = keep[i] + 1;
        }
}

/* The relay's loop, until the service closes the pipe or the file fails; then its word
 * (0 or an errno) on @done_fd. Async-signal-safe: it also runs in a forked copy. */
static _Noreturn void relay_loop(int in_fd, int file_fd, int done_fd, uint8_t *buf) {
        int error = 0;

        for (;;) {
                ssize_t n = read(in_fd, buf, RELAY_BUFFER_SIZE);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        error = n < 0 ? errno : 0;
                        break;
                }
                for (ssize_t done = 0; done < n && error == 0;) {
                        ssize_t k = write(file_fd, buf + done, (size_t) (n - done));

                        if (k > 0)
                                done += k;
                        else if (k == 0 || errno != EINTR)
                                error = k == 0 ? EIO : errno;
                }
                if (error != 0)
                        break;
        }
        (void) write(done_fd, &error, sizeof(error));
        _exit(EXIT_SUCCESS);
}

/* At shutdown the relay finishes what it was given: systemd's SIGTERM to the unit's
 * processes must not cut it short. */
static void ignore_stop_signals(void) {
        (void) signal(SIGTERM, SIG_IGN);
        (void) signal(SIGINT, SIG_IGN);
        (void) signal(SIGHUP, SIG_IGN);
        (void) signal(SIGPIPE, SIG_IGN);
}

/* What the relay's process needs, made before fork(): after it, only async-signal-safe
 * calls. */
typedef struct RelaySpawn {
        int fds[3];               /* the pipe's read end, the file, the done pipe's write end */
        char args[3][16];
        uint8_t *buf;
} RelaySpawn;

static void sort_fds(int fds[3]) {
        for (int i = 0; i < 2; i++)
                for (int j = i + 1; j < 3; j++)
                        if (fds[j] < fds[i]) {
                                int t = fds[i];
                                fds[i] = fds[j];
                                fds[j] = t;
                        }
}

/* The first child forks the relay and exits at once, so init adopts the relay. The relay
 * executes this binary again (output_relay_main()): a copy of the service's memory would
 * keep, for as long as a filesystem holds the relay, every page the service changes after
 * the fork twice. Should the exec fail, the copy relays all the same. */
static _Noreturn void spawn_relay(const RelaySpawn *s) {
        const char *argv[] = { "tb-output-relay", OUTPUT_RELAY_ARG, s->args[0], s->args[1], s->args[2], NULL };
        int keep[3] = { s->fds[0], s->fds[1], s->fds[2] };
        pid_t pid = fork();

        if (pid != 0)
                _exit(pid < 0 ? EXIT_FAILURE : EXIT_SUCCESS);
        ignore_stop_signals();
        sort_fds(keep);
        close_all_but(3, keep);
        for (int i = 0; i < 3; i++)
                (void) fcntl(keep[i], F_SETFD, 0);
        (void) execv("/proc/self/exe", (char **) argv);
        (void) prctl(PR_SET_NAME, "tb-output-relay");
        relay_loop(s->fds[0], s->fds[1], s->fds[2], s->buf);
}

/* A descriptor number the service passed, above the standard three. */
static int parse_fd(const char *s) {
        char *end;
        long v;

        errno = 0;
        v = strtol(s, &end, 10);
        return errno == 0 && end != s && *end == '\0' && v >= 3 && v <= INT32_MAX ? (int) v : -EBADF;
}

int output_relay_main(char **argv) {
        _cleanup_free_ uint8_t *buf = malloc(RELAY_BUFFER_SIZE);
        int fds[3];

        (void) prctl(PR_SET_NAME, "tb-output-relay");
        ignore_stop_signals();
        for (int i = 0; i < 3; i++)
                if ((fds[i] = parse_fd(argv[2 + i])) < 0)
                        return EXIT_FAILURE;
        if (!buf)
                return EXIT_FAILURE;
        relay_loop(fds[0], fds[1], fds[2], buf);
}

static int wait_first_child(pid_t pid) {
        int status;

        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        return WIFEXITED(status) && WEXITSTATUS(status) == EXIT_SUCCESS ? 0 : -EAGAIN;
}

int output_relay_start(int file_fd, uid_t uid, int *ret_pipe_fd, int *ret_done_fd) {
        _cleanup_close_ int data_in = -EBADF, data_out = -EBADF, done_in = -EBADF, done_out = -EBADF;
        _cleanup_free_ uint8_t *buf = malloc(RELAY_BUFFER_SIZE);
        int data[2], done[2], r;
        RelaySpawn spawn;
        pid_t pid;

        assert(ret_pipe_fd);
        assert(ret_done_fd);
        /* Below 3 the relay's descriptors would be among the standard ones it keeps. */
        if (file_fd < 3)
                return -EBADF;
        if (!buf)
                return -ENOMEM;
        if (pipe2(data, O_CLOEXEC) < 0)
                return -errno;
        data_in = data[0];
        data_out = data[1];
        if (pipe2(done, O_CLOEXEC) < 0)
                return -errno;
        done_in = done[0];
        done_out = done[1];
        /* The service's end only: the relay's reads wait. */
        if (fcntl(data_out, F_SETFL, O_NONBLOCK) < 0)
                return -errno;
        (void) pthread_mutex_lock(&running_lock);
        r = add_running(uid, done_in);
        (void) pthread_mutex_unlock(&running_lock);
        if (r < 0)
                return r;

        spawn = (RelaySpawn) { .fds = { data_in, file_fd, done_out }, .buf = buf };
        for (int i = 0; i < 3; i++)
                snprintf(spawn.args[i], sizeof(spawn.args[i]), "%i", spawn.fds[i]);
        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0)
                spawn_relay(&spawn);
        r = wait_first_child(pid);
        if (r < 0)
                return r;
        *ret_pipe_fd = TAKE_FD(data_out);
        *ret_done_fd = TAKE_FD(done_in);
        return 0;
}

/* The relay's word: 0, its errno negated, or -EPIPE when it ended without one. */
static int read_word(int done_fd) {
        int error = 0;
        ssize_t n = read(done_fd, &error, sizeof(error));

        if (n < 0)
                return errno == EAGAIN ? -EAGAIN : -errno;
        return n == (ssize_t) sizeof(error) ? -error : -EPIPE;
}

int output_relay_finish(int *pipe_fd, int *done_fd, uint64_t timeout_usec) {
        int r;

        *pipe_fd = safe_close(*pipe_fd);
        r = fd_wait_for(*done_fd, POLLIN, timeout_usec);
        if (r >= 0)
                r = read_word(*done_fd);
        *done_fd = safe_close(*done_fd);
        return r;
}

int output_relay_error(int done_fd, int fallback) {
        struct pollfd p = { .fd = done_fd, .events = POLLIN };
        int r;

        if (done_fd < 0 || poll(&p, 1, 0) <= 0)
                return fallback;
        r = read_word(done_fd);
        return r < 0 && r != -EPIPE && r != -EAGAIN ? r : fallback;
}
