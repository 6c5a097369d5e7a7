/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit suite: what the service takes as an Output fd (service/core/output-fd.c). Runs as any
 * user: the caller's UID is this process's EUID, "another user" is any other. */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "output-fd.h"

static int take(int fd, uid_t uid, const char **ret_why) {
        int copy = -1, r;

        *ret_why = NULL;
        r = output_fd_take(fd, uid, &copy, ret_why);
        if (r < 0) {
                g_assert_cmpint(copy, ==, -1);
                g_assert_nonnull(*ret_why);
                return r;
        }
        g_assert_cmpint(copy, >=, 0);
        g_assert_cmpint(copy, !=, fd);
        close(copy);
        return 0;
}

/* A stream socket whose peer is the caller is taken; for anyone else, refused. */
static void test_socket_peer(void) {
        const char *why;
        int s[2];

        g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s), ==, 0);
        g_assert_cmpint(take(s[0], geteuid(), &why), ==, 0);
        g_assert_cmpint(take(s[0], geteuid() + 1, &why), ==, -EPERM);
        g_assert_nonnull(strstr(why, "another user"));
        close(s[0]);
        close(s[1]);

        /* Datagrams and sequenced packets: refused whoever the peer is. */
        g_assert_cmpint(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, s), ==, 0);
        g_assert_cmpint(take(s[0], geteuid(), &why), ==, -EPERM);
        close(s[0]);
        close(s[1]);
        g_assert_cmpint(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, s), ==, 0);
        g_assert_cmpint(take(s[0], geteuid(), &why), ==, -EPERM);
        close(s[0]);
        close(s[1]);
}

/* A pipe is reopened non-blocking, the caller's end left blocking; a FIFO nobody
 * reads is refused. */
static void test_pipe(void) {
        const char *why;
        int p[2], copy = -1;

        g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
        g_assert_cmpint(output_fd_take(p[1], geteuid(), &copy, &why), ==, 0);
        g_assert_cmpint(fcntl(copy, F_GETFL) & O_NONBLOCK, !=, 0);
        g_assert_cmpint(fcntl(p[1], F_GETFL) & O_NONBLOCK, ==, 0);
        /* The same pipe: what goes into the copy comes out of the read end. */
        g_assert_cmpint(write(copy, "x", 1), ==, 1);
        close(copy);
        close(p[1]);
        {
                char c = 0;
                g_assert_cmpint(read(p[0], &c, 1), ==, 1);
                g_assert_cmpint(c, ==, 'x');
        }
        close(p[0]);

        /* A FIFO whose readers are gone: one could come back and stop reading. */
        {
                g_autofree char *dir = g_dir_make_tmp("output-fd-XXXXXX", NULL);
                g_autofree char *fifo = g_build_filename(dir, "fifo", NULL);
                int r, w;

                g_assert_cmpint(mkfifo(fifo, 0600), ==, 0);
                r = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
                w = open(fifo, O_WRONLY | O_CLOEXEC);
                g_assert_cmpint(w, >=, 0);
                close(r);
                g_assert_cmpint(take(w, geteuid(), &why), ==, -ENXIO);
                close(w);
                unlink(fifo);
                rmdir(dir);
        }
}

/* Not for writing, or not a file, pipe or socket. */
static void test_wrong_kinds(void) {
        const char *why;
        int fd, p[2];

        g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
        g_assert_cmpint(take(p[0], geteuid(), &why), ==, -EBADF);
        close(p[0]);
        close(p[1]);
        fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
        g_assert_cmpint(take(fd, geteuid(), &why), ==, -EMEDIUMTYPE);
        close(fd);
        fd = memfd_create("output", MFD_CLOEXEC);
        g_assert_cmpint(take(fd, geteuid(), &why), ==, 0);
        close(fd);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/output-fd/socket-peer", test_socket_peer);
        g_test_add_func("/output-fd/pipe", test_pipe);
        g_test_add_func("/output-fd/wrong-kinds", test_wrong_kinds);
        return g_test_run();
}
