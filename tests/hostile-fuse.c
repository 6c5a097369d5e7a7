/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A hostile filesystem for tests/test-hostile-fs.c: files /trace and /trace-ANYTHING that
 * open, stat and truncate as any file does, and whose write() is never answered. The
 * request waits until this process dies, which ends the connection (the kernel then fails
 * what is pending with ENOTCONN). Each session of a test needs a file of its own: the
 * kernel keeps the page of a pending write locked, and a new open() of that same file
 * waits for it.
 *
 *   hostile-fuse UID GID [FUSE OPTIONS] MOUNTPOINT
 *
 * UID and GID own the file and the root directory. Run as the user it is for (through
 * fusermount3), or as root with -o allow_other.
 */
#define FUSE_USE_VERSION 31

#include <errno.h>
#include <stdbool.h>
#include <fuse.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uid_t owner_uid;
static gid_t owner_gid;

static bool is_file(const char *path) {
        return strcmp(path, "/trace") == 0 || strncmp(path, "/trace-", 7) == 0;
}

static int hf_getattr(const char *path, struct stat *st, struct fuse_file_info *fi) {
        memset(st, 0, sizeof(*st));
        if (strcmp(path, "/") == 0) {
                st->st_mode = S_IFDIR | 0755;
                st->st_nlink = 2;
        } else if (is_file(path)) {
                st->st_mode = S_IFREG | 0600;
                st->st_nlink = 1;
        } else
                return -ENOENT;
        st->st_uid = owner_uid;
        st->st_gid = owner_gid;
        return 0;
}

static int hf_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t offset,
                      struct fuse_file_info *fi, enum fuse_readdir_flags flags) {
        if (strcmp(path, "/") != 0)
                return -ENOENT;
        filler(buf, ".", NULL, 0, 0);
        filler(buf, "..", NULL, 0, 0);
        filler(buf, "trace", NULL, 0, 0);
        return 0;
}

static int hf_open(const char *path, struct fuse_file_info *fi) {
        return is_file(path) ? 0 : -ENOENT;
}

static int hf_truncate(const char *path, off_t size, struct fuse_file_info *fi) {
        return is_file(path) ? 0 : -ENOENT;
}

/* Never answered: the worker thread that took the request waits here for good. */
static int hf_write(const char *path, const char *buf, size_t size, off_t offset, struct fuse_file_info *fi) {
        for (;;)
                pause();
        return -EIO;
}

static const struct fuse_operations hostile_ops = {
        .getattr = hf_getattr,
        .readdir = hf_readdir,
        .open = hf_open,
        .truncate = hf_truncate,
        .write = hf_write,
};

int main(int argc, char **argv) {
        if (argc < 4)
                return 2;
        owner_uid = (uid_t) strtoul(argv[1], NULL, 10);
        owner_gid = (gid_t) strtoul(argv[2], NULL, 10);
        argv[2] = argv[0];
        return fuse_main(argc - 2, argv + 2, &hostile_ops, NULL);
}
