/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <sys/types.h>

/*
 * The Output file descriptor a caller passes to Start. The service writes into it as
 * root, so it takes only what the caller could have written into itself: a regular
 * file, a pipe or FIFO, or a stream socket whose peer runs as the caller (a socket whose
 * peer is another UID, journald's for one, trusts SO_PEERCRED and would take root's
 * writes for the caller's). A pipe is reopened non-blocking through /proc/self/fd: a
 * new open file description, so the caller's end keeps its flags, and the recorder can
 * give up on a reader that stopped reading instead of blocking forever. A file on FUSE or
 * a network filesystem is taken too (the recorder writes it through a relay, within the
 * same deadline), a file of a kernel interface (tracefs, proc...) is not. The file is
 * looked at without asking its filesystem (kernel/file-kind.h): a hung FUSE or NFS mount
 * would otherwise hold the event loop.
 */

/* Checks @fd for @caller_uid and stores in *ret_fd the service's own descriptor for it.
 * On refusal, *ret_why says why, in a sentence for the caller:
 *   -EBADF        not open for writing;
 *   -EMEDIUMTYPE  neither a regular file, a pipe nor a socket;
 *   -EPERM        a socket the service may not write into (not a stream socket, or its
 *                 peer is not @caller_uid), or a file of a kernel interface;
 *   -ENXIO        a FIFO nobody reads (whose reader could come back). */
int output_fd_take(int fd, uid_t caller_uid, int *ret_fd, const char **ret_why);
