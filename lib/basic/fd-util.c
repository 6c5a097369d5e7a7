/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fd-util.h"
#include "macro.h"
#include "time-util.h"

int loop_write(int fd, const void *buf, size_t len) {
        const char *p = buf;

        while (len > 0) {
                ssize_t n = write(fd, p, len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        return -EIO;
                p += n;
                len -= (size_t) n;
        }
        return 0;
}

/* With @cut, a file longer than @max is read up to @max bytes; otherwise it is -EFBIG.
 * With @virtual, a read that returns less than it asked for is the end: procfs and
 * sysfs files hand out all they hold at once (seq_file fills the buffer it is given
 * before it returns), which saves the read() that would only return 0, a fifth of the
 * syscalls of a /proc scan. */
static int read_file_up_to(const char *path, size_t max, bool cut, bool virtual, char **ret, size_t *ret_len) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        size_t size = 0, allocated = 4096;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;

        buf = malloc(allocated);
        if (!buf)
                return -ENOMEM;

        for (;;) {
                ssize_t n;

                if (size + 1 >= allocated) {
                        if (allocated >= max + 1) {
                                if (!cut)
                                        return -EFBIG;
                                break;
                        }
                        char *p = realloc(buf, MIN(allocated * 2, max + 1));
                        if (!p)
                                return -ENOMEM;
                        buf = p;
                        allocated = MIN(allocated * 2, max + 1);
                }
                n = read(fd, buf + size, allocated - size - 1);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        break;
                size += (size_t) n;
                if (virtual && size + 1 < allocated)
                        break;
        }

        buf[size] = 0;
        if (ret_len)
                *ret_len = size;
        *ret = TAKE_PTR(buf);
        return 0;
}

int read_full_file(const char *path, size_t max, char **ret, size_t *ret_len) {
        return read_file_up_to(path, max, /* cut= */ false, /* virtual= */ false, ret, ret_len);
}

int read_file_head(const char *path, size_t max, char **ret, size_t *ret_len) {
        return read_file_up_to(path, max, /* cut= */ true, /* virtual= */ false, ret, ret_len);
}

int read_virtual_file(const char *path, size_t max, char **ret, size_t *ret_len) {
        return read_file_up_to(path, max, /* cut= */ false, /* virtual= */ true, ret, ret_len);
}

int read_virtual_file_head(const char *path, size_t max, char **ret, size_t *ret_len) {
        return read_file_up_to(path, max, /* cut= */ true, /* virtual= */ true, ret, ret_len);
}

int write_string_file(const char *path, const char *value) {
        _cleanup_close_ int fd = -EBADF;

        fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY | O_TRUNC);
        if (fd < 0)
                return -errno;
        return loop_write(fd, value, strlen(value));
}

int fd_wait_for(int fd, short events, uint64_t timeout_usec) {
        uint64_t deadline = timeout_usec == UINT64_MAX ? UINT64_MAX : now_usec(CLOCK_MONOTONIC) + timeout_usec;

        for (;;) {
                struct pollfd p = { .fd = fd, .events = events };
                uint64_t now = now_usec(CLOCK_MONOTONIC);
                int timeout_ms = -1, k;

                if (deadline != UINT64_MAX) {
                        if (now >= deadline)
                                return -ETIMEDOUT;
                        timeout_ms = (int) MIN((deadline - now + 999) / 1000, (uint64_t) INT32_MAX);
                }
                k = poll(&p, 1, timeout_ms);
                if (k < 0 && errno != EINTR)
                        return -errno;
                if (k > 0)
                        return p.revents;
        }
}

ssize_t send_with_fd(int sock, const void *data, size_t size, int fd, int flags) {
        union {
                struct cmsghdr header;
                uint8_t space[CMSG_SPACE(sizeof(int))];
        } control = {};
        struct iovec iov = { (void *) data, size };
        struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
        ssize_t n;

        if (fd >= 0) {
                struct cmsghdr *c;

                msg.msg_control = &control;
                msg.msg_controllen = sizeof(control);
                c = CMSG_FIRSTHDR(&msg);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int));
                memcpy(CMSG_DATA(c), &fd, sizeof(int));
        }
        n = sendmsg(sock, &msg, flags);
        return n < 0 ? -errno : n;
}
