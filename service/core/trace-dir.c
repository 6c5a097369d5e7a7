/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "macro.h"
#include "trace-dir.h"

DEFINE_TRIVIAL_CLEANUP_FUNC_VOID(DIR *, closedir);

/* Opens (creating if needed) @name below @parent_fd as a directory, never through a symlink,
 * and makes sure it has the owner and mode we expect. */
static int open_private_dir(int parent_fd, const char *name, uid_t owner, mode_t mode) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st;

        if (mkdirat(parent_fd, name, mode) < 0 && errno != EEXIST)
                return -errno;
        fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (st.st_uid != owner && fchown(fd, owner, (gid_t) -1) < 0)
                return -errno;
        if ((st.st_mode & 07777) != mode && fchmod(fd, mode) < 0)
                return -errno;
        return TAKE_FD(fd);
}

static bool skipped(const struct stat *st, const TraceDirFileId *skip, size_t n_skip) {
        for (size_t i = 0; i < n_skip; i++)
                if (skip[i].dev == st->st_dev && skip[i].ino == st->st_ino)
                        return true;
        return false;
}

/* Why an entry cannot be counted (see trace_dir_usage()), or 0. */
static int entry_refusal(const struct stat *st) {
        if (S_ISLNK(st->st_mode))
                return -ELOOP;
        if (!S_ISREG(st->st_mode))
                return -ENOTDIR;
        if (st->st_nlink > 1)
                return -EMLINK;
        return 0;
}

int trace_dir_usage(int dir_fd, const TraceDirFileId *skip, size_t n_skip, uint64_t *ret_usage, char **ret_refused) {
        _cleanup_(closedirp) DIR *d = NULL;
        uint64_t total = 0;
        unsigned n = 0;
        int fd;

        *ret_refused = NULL;
        fd = fcntl(dir_fd, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                return -errno;
        d = fdopendir(fd);
        if (!d) {
                safe_close(fd);
                return -errno;
        }
        rewinddir(d);
        for (struct dirent *de; (errno = 0, de = readdir(d));) {
                struct stat st;
                int r;

                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                if (++n > TRACE_DIR_MAX_ENTRIES)
                        return -E2BIG;
                if (fstatat(dir_fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                        if (errno == ENOENT)    /* deleted meanwhile */
                                continue;
                        return -errno;
                }
                r = entry_refusal(&st);
                if (r < 0) {
                        *ret_refused = strdup(de->d_name);
                        return *ret_refused ? r : -ENOMEM;
                }
                /* What a file holds on disk, or its size if more: a sparse file counts
                 * as written. */
                if (!skipped(&st, skip, n_skip))
                        total += MAX((uint64_t) st.st_size, (uint64_t) st.st_blocks * 512);
        }
        if (errno > 0)
                return -errno;
        *ret_usage = total;
        return 0;
}

static int create_unique_file(int dir_fd, const char *hint, char *name, size_t name_size) {
        char stamp[32];
        struct tm tm;
        time_t now = time(NULL);

        (void) strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", localtime_r(&now, &tm));
        for (unsigned attempt = 0; attempt < 100; attempt++) {
                int fd;

                if (attempt == 0)
                        snprintf(name, name_size, "trace-%s-%s.pftrace", stamp, hint);
                else
                        snprintf(name, name_size, "trace-%s-%s.%u.pftrace", stamp, hint, attempt);

                fd = openat(dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
                if (fd >= 0)
                        return fd;
                if (errno != EEXIST)
                        return -errno;
        }
        return -EEXIST;
}

int trace_dir_open_user(const char *state_dir, uid_t uid) {
        _cleanup_close_ int state_fd = -EBADF, traces_fd = -EBADF;
        char uid_name[16];

        assert(state_dir);

        if (mkdir(state_dir, 0711) < 0 && errno != EEXIST)
                return -errno;
        state_fd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (state_fd < 0)
                return -errno;
        traces_fd = open_private_dir(state_fd, "traces", 0, 0711);
        if (traces_fd < 0)
                return traces_fd;
        snprintf(uid_name, sizeof(uid_name), "%u", (unsigned) uid);
        return open_private_dir(traces_fd, uid_name, uid, 0700);
}

/* The new file @name (@fd) made @uid's, its path and identity; removed on failure. */
static int finish_created(int dir_fd, int fd_in, const char *name, const char *state_dir, uid_t uid, char **ret_path,
                          TraceDirFileId *ret_id);

int trace_dir_create_file(int dir_fd, const char *state_dir, uid_t uid, const char *name_hint,
                          char **ret_path, TraceDirFileId *ret_id) {
        char name[256];
        int fd;

        assert(ret_path);
        assert(ret_id);

        fd = create_unique_file(dir_fd, name_hint, name, sizeof(name));
        if (fd < 0)
                return fd;
        return finish_created(dir_fd, fd, name, state_dir, uid, ret_path, ret_id);
}

/* A trigger's CLONE_SNAPSHOT file, FILE.N, named as Perfetto's command line tool names
 * them. It never replaces an existing file and never follows a link. */
int trace_dir_create_named(int dir_fd, const char *state_dir, uid_t uid, const char *name, char **ret_path,
                           TraceDirFileId *ret_id) {
        int fd;

        if (!name || !*name || strchr(name, '/') || name[0] == '.')
                return -EINVAL;
        fd = openat(dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
        if (fd < 0)
                return -errno;
        return finish_created(dir_fd, fd, name, state_dir, uid, ret_path, ret_id);
}

static int finish_created(int dir_fd, int fd_in, const char *name, const char *state_dir, uid_t uid, char **ret_path,
                          TraceDirFileId *ret_id) {
        _cleanup_close_ int fd = fd_in;
        struct stat st;
        char *path;
        int r;

        if (fchown(fd, uid, (gid_t) -1) < 0 || fstat(fd, &st) < 0) {
                r = -errno;
                (void) unlinkat(dir_fd, name, 0);
                return r;
        }
        if (asprintf(&path, "%s/traces/%u/%s", state_dir, (unsigned) uid, name) < 0) {
                (void) unlinkat(dir_fd, name, 0);
                return -ENOMEM;
        }
        *ret_path = path;
        *ret_id = (TraceDirFileId) { st.st_dev, st.st_ino };
        return TAKE_FD(fd);
}
