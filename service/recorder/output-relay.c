/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fd-util.h"
#include "macro.h"
#include "output-relay.h"

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

/* The relay's loop: only async-signal-safe calls, in a child of a threaded process. */
static _Noreturn void relay_main(int in_fd, int file_fd, int done_fd, uint8_t *buf) {
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

/* The first child forks the relay and exits at once, so init adopts the relay. */
static _Noreturn void spawn_relay(int in_fd, int file_fd, int done_fd, uint8_t *buf) {
        int keep[3] = { in_fd, file_fd, done_fd };
        pid_t pid = fork();

        if (pid != 0)
                _exit(pid < 0 ? EXIT_FAILURE : EXIT_SUCCESS);
        (void) prctl(PR_SET_NAME, "tb-output-relay");
        (void) signal(SIGTERM, SIG_IGN);
        (void) signal(SIGINT, SIG_IGN);
        (void) signal(SIGHUP, SIG_IGN);
        (void) signal(SIGPIPE, SIG_IGN);
        for (int i = 0; i < 2; i++)
                for (int j = i + 1; j < 3; j++)
                        if (keep[j] < keep[i]) {
                                int t = keep[i];
                                keep[i] = keep[j];
                                keep[j] = t;
                        }
        close_all_but(3, keep);
        relay_main(in_fd, file_fd, done_fd, buf);
}

static int wait_first_child(pid_t pid) {
        int status;

        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        return WIFEXITED(status) && WEXITSTATUS(status) == EXIT_SUCCESS ? 0 : -EAGAIN;
}

int output_relay_start(int file_fd, int *ret_pipe_fd, int *ret_done_fd) {
        _cleanup_close_ int data_in = -EBADF, data_out = -EBADF, done_in = -EBADF, done_out = -EBADF;
        _cleanup_free_ uint8_t *buf = malloc(RELAY_BUFFER_SIZE);
        int data[2], done[2], r;
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

        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0)
                spawn_relay(data_in, file_fd, done_out, buf);
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
