/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
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

/* Sums the sizes of the regular files in the directory: the UID's use of its quota. */
static int dir_usage(int dir_fd, uint64_t *ret) {
        _cleanup_(closedirp) DIR *d = NULL;
        uint64_t total = 0;
        int fd;

        fd = dup(dir_fd);
        if (fd < 0)
                return -errno;
        d = fdopendir(fd);
        if (!d) {
                safe_close(fd);
                return -errno;
        }
        rewinddir(d);
        for (struct dirent *de; (de = readdir(d));) {
                struct stat st;

                if (fstatat(dir_fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                /* Hard links to files elsewhere would count twice if we followed nlink; we count
                 * what this directory holds, which is what the user can delete to make room. */
                if (S_ISREG(st.st_mode))
                        total += (uint64_t) st.st_blocks * 512;
        }
        *ret = total;
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

int trace_dir_create_file(const char *state_dir, uid_t uid, const char *name_hint,
                          uint64_t quota_bytes, char **ret_path, int *ret_fd, uint64_t *ret_remaining) {
        _cleanup_close_ int state_fd = -EBADF, traces_fd = -EBADF, user_fd = -EBADF, fd = -EBADF;
        char uid_name[16], name[256];
        uint64_t used = 0;
        char *path;
        int r;

        assert(state_dir);
        assert(ret_path);
        assert(ret_fd);

        if (mkdir(state_dir, 0711) < 0 && errno != EEXIST)
                return -errno;
        state_fd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (state_fd < 0)
                return -errno;
        traces_fd = open_private_dir(state_fd, "traces", 0, 0711);
        if (traces_fd < 0)
                return traces_fd;

        snprintf(uid_name, sizeof(uid_name), "%u", (unsigned) uid);
        user_fd = open_private_dir(traces_fd, uid_name, uid, 0700);
        if (user_fd < 0)
                return user_fd;

        r = dir_usage(user_fd, &used);
        if (r < 0)
                return r;
        if (quota_bytes > 0 && used >= quota_bytes)
                return -EDQUOT;

        fd = create_unique_file(user_fd, name_hint, name, sizeof(name));
        if (fd < 0)
                return fd;
        if (fchown(fd, uid, (gid_t) -1) < 0) {
                r = -errno;
                (void) unlinkat(user_fd, name, 0);
                return r;
        }

        if (asprintf(&path, "%s/traces/%s/%s", state_dir, uid_name, name) < 0) {
                (void) unlinkat(user_fd, name, 0);
                return -ENOMEM;
        }
        *ret_path = path;
        *ret_fd = TAKE_FD(fd);
        if (ret_remaining)
                *ret_remaining = quota_bytes > 0 ? quota_bytes - used : 0;
        return 0;
}
