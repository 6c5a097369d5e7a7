/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "file-kind.h"
#include "macro.h"
#include "strv.h"

/* Filesystems whose writes are the kernel's own work on this machine's disks or memory. */
static const char *const local_types[] = {
        "ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "bcachefs", "jfs", "reiserfs", "nilfs2",
        "zfs", "vfat", "msdos", "exfat", "ntfs3", "hfs", "hfsplus", "udf",
        "tmpfs", "ramfs", "devtmpfs", "overlay", NULL,
};

/* Kernel interfaces: a write there is a command to the kernel, not a trace's bytes. */
static const char *const kernel_types[] = {
        "proc", "sysfs", "tracefs", "debugfs", "securityfs", "cgroup", "cgroup2", "configfs",
        "bpf", "pstore", "efivarfs", "fusectl", "binfmt_misc", "hugetlbfs", "mqueue", "devpts",
        "autofs", "rpc_pipefs", "selinuxfs", "nsfs", NULL,
};

static FsKind kind_of_type(const char *type) {
        if (strv_contains((char *const *) local_types, type))
                return FS_KIND_LOCAL;
        if (strv_contains((char *const *) kernel_types, type))
                return FS_KIND_KERNEL;
        return FS_KIND_MAY_BLOCK;
}

/* The type of the filesystem of device @dev in a mountinfo line
 * "ID PARENT MAJOR:MINOR ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - TYPE SOURCE OPTIONS";
 * false when the line is of another device. Paths escape their blanks (\040). */
static bool line_type(const char *line, dev_t dev, char type[static FILE_KIND_TYPE_MAX]) {
        unsigned major_nr, minor_nr;
        const char *sep;

        if (sscanf(line, "%*u %*u %u:%u", &major_nr, &minor_nr) != 2 || makedev(major_nr, minor_nr) != dev)
                return false;
        sep = strstr(line, " - ");
        return sep && sscanf(sep + 3, "%63s", type) == 1;
}

static void fclosep(FILE **f) {
        if (*f)
                (void) fclose(*f);
}

static int fs_type_of_dev(dev_t dev, char type[static FILE_KIND_TYPE_MAX]) {
        _cleanup_(fclosep) FILE *f = fopen("/proc/self/mountinfo", "re");
        _cleanup_free_ char *line = NULL;
        size_t size = 0;
        bool found = false;

        type[0] = '\0';
        if (!f)
                return -errno;
        while (!found && getline(&line, &size, f) > 0)
                found = line_type(line, dev, type);
        return 0;
}

int file_kind_of_fd(int fd, FileKind *ret) {
        struct statx stx;
        int r;

        assert(ret);
        *ret = (FileKind) {};
        /* Without a sync: FUSE and NFS answer from what they hold. A user's own FUSE mount
         * refuses root everything but the device (the mask 0 asks for nothing more). */
        r = statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_TYPE, &stx);
        if (r < 0 && errno == EACCES)
                r = statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, 0, &stx);
        if (r < 0)
                return -errno;
        if (stx.stx_mask & STATX_TYPE)
                ret->type = stx.stx_mode & S_IFMT;
        r = fs_type_of_dev(makedev(stx.stx_dev_major, stx.stx_dev_minor), ret->fs_type);
        if (r < 0)
                return r;
        ret->fs = ret->fs_type[0] ? kind_of_type(ret->fs_type) : FS_KIND_MAY_BLOCK;
        return 0;
}
