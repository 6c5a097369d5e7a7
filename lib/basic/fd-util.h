/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Writes all of @buf, retrying on EINTR and short writes. Returns 0 or -errno. */
int loop_write(int fd, const void *buf, size_t len);

/* Reads a whole (small) file into a NUL-terminated malloc'd buffer; at most @max bytes. */
int read_full_file(const char *path, size_t max, char **ret, size_t *ret_len);
/* The same, but a longer file gives its first @max bytes instead of -EFBIG. */
int read_file_head(const char *path, size_t max, char **ret, size_t *ret_len);
/* The same for procfs and sysfs files, which give all they hold in one read(): a short
 * read ends the file. Not for regular files, pipes or sockets. */
int read_virtual_file(const char *path, size_t max, char **ret, size_t *ret_len);
int read_virtual_file_head(const char *path, size_t max, char **ret, size_t *ret_len);

/* Waits until @fd has one of @events (poll()), at most @timeout_usec (UINT64_MAX: no
 * limit), across EINTR. Returns the events it has (POLLERR and POLLHUP too), or
 * -ETIMEDOUT. */
int fd_wait_for(int fd, short events, uint64_t timeout_usec);

/* One sendmsg() of @size bytes with @flags on the socket @sock, carrying the descriptor
 * @fd (SCM_RIGHTS) unless it is negative. Returns the bytes sent, or -errno. */
ssize_t send_with_fd(int sock, const void *data, size_t size, int fd, int flags);

/* Writes @value to the file at @path, which must exist (sysfs/tracefs style). */
int write_string_file(const char *path, const char *value);
