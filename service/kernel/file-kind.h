/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

/*
 * What kind of file a descriptor is, and on which kind of filesystem, found without
 * asking the filesystem: statx() without a sync, and the device number looked up in
 * /proc/self/mountinfo. Neither statfs() nor a synced stat() is used, since FUSE and
 * network filesystems answer those over their connection, which a hostile or hung
 * filesystem never does.
 */

typedef enum FsKind {
        FS_KIND_LOCAL,     /* a disk or memory filesystem of this machine: its writes end */
        FS_KIND_KERNEL,    /* a kernel interface (proc, sysfs, tracefs...): no place for a trace */
        FS_KIND_MAY_BLOCK, /* FUSE, a network filesystem, or one not mounted in the service's
                            * view: a write may wait for as long as the filesystem wants */
} FsKind;

#define FILE_KIND_TYPE_MAX 64

typedef struct FileKind {
        /* S_IFREG, S_IFIFO...; 0 when the filesystem refuses root a stat (a user's own
         * FUSE mount without allow_other). */
        mode_t type;
        FsKind fs;
        char fs_type[FILE_KIND_TYPE_MAX]; /* "ext4", "fuse.sshfs"; "" when not found */
} FileKind;

int file_kind_of_fd(int fd, FileKind *ret);

/* A regular file (or one of unknown type) on a filesystem whose writes may never end. */
static inline bool file_kind_may_block(const FileKind *k) {
        return (k->type == S_IFREG || k->type == 0) && k->fs == FS_KIND_MAY_BLOCK;
}
