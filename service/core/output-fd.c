/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd-util.h"
#include "kernel/file-kind.h"
#include "recorder/output-relay.h"
#include "macro.h"
#include "output-fd.h"

/* A stream socket (AF_UNIX: only there is the peer's UID known) whose peer is @caller_uid. */
static int check_socket(int fd, uid_t caller_uid, const char **ret_why) {
        struct ucred peer = {};
        socklen_t len = sizeof(int);
        int type = 0, domain = 0;

        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0)
                return -errno;
        len = sizeof(int);
        if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0)
                return -errno;
        if (type != SOCK_STREAM || domain != AF_UNIX) {
                *ret_why = "The Output socket is not a Unix stream socket; pass a file, a pipe or a stream socket.";
                return -EPERM;
        }
        len = sizeof(peer);
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) < 0)
                return -errno;
        /* Unconnected, the peer is UID -1: refused as well. */
        if (peer.uid != caller_uid) {
                *ret_why = "The Output socket's peer runs as another user; the service writes only into "
                           "sockets whose peer is you.";
                return -EPERM;
        }
        return 0;
}

/* A new non-blocking open file description of the pipe @fd. */
static int reopen_pipe_nonblocking(int fd, const char **ret_why) {
        char path[64];
        int copy;

        snprintf(path, sizeof(path), "/proc/self/fd/%i", fd);
        copy = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (copy < 0 && errno == ENXIO)
                *ret_why = "Nobody reads the Output pipe.";
        return copy < 0 ? -errno : copy;
}

/* A file the service writes into: a regular one, or one on a filesystem that refuses root
 * a stat (a user's own FUSE mount), which the recorder then writes through a relay; never
 * a file of a kernel interface. */
static int check_file(const FileKind *kind, const char **ret_why) {
        if (kind->type != S_IFREG && kind->type != 0) {
                *ret_why = "The Output file descriptor must be a regular file, a pipe or a socket.";
                return -EMEDIUMTYPE;
        }
        if (kind->fs == FS_KIND_KERNEL) {
                *ret_why = "The Output file is on a kernel interface (proc, sysfs, tracefs, debugfs or the like), "
                           "whose reads and writes are commands to the kernel; pass a file on a disk, a pipe or a socket.";
                return -EPERM;
        }
        return 0;
}

/* A file on FUSE or a network filesystem is written by a relay process: not past
 * OUTPUT_RELAY_MAX_PER_USER of the caller's that their filesystems still hold. */
static int check_relays(const FileKind *kind, uid_t caller_uid, const char **ret_why) {
        if (!file_kind_may_block(kind) || output_relay_check_user(caller_uid) >= 0)
                return 0;
        *ret_why = "Too many of your outputs on FUSE or network filesystems are still being written (their "
                   "filesystems did not take them, or not yet); the service takes no more until those end.";
        return -EPERM;
}

int output_fd_take(int fd, uid_t caller_uid, int *ret_fd, const char **ret_why) {
        FileKind kind;
        int flags, copy, r;

        assert(ret_fd);
        assert(ret_why);

        flags = fcntl(fd, F_GETFL);
        if (flags < 0)
                return -errno;
        if ((flags & O_ACCMODE) != O_WRONLY && (flags & O_ACCMODE) != O_RDWR) {
                *ret_why = "The Output file descriptor is not open for writing.";
                return -EBADF;
        }
        r = file_kind_of_fd(fd, &kind);
        if (r < 0)
                return r;
        if (kind.type == S_IFIFO)
                copy = reopen_pipe_nonblocking(fd, ret_why);
        else {
                r = kind.type == S_IFSOCK ? check_socket(fd, caller_uid, ret_why) : check_file(&kind, ret_why);
                if (r >= 0)
                        r = check_relays(&kind, caller_uid, ret_why);
                if (r < 0)
                        return r;
                copy = fcntl(fd, F_DUPFD_CLOEXEC, 3);
                if (copy < 0)
                        return -errno;
        }
        if (copy < 0)
                return copy;
        *ret_fd = copy;
        return 0;
}
