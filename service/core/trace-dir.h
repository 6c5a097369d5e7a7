/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>
#include <sys/types.h>

/*
 * The service's own trace directory, for callers that cannot pass a file descriptor:
 * STATE/traces/<uid>/, one directory per UID, owned by that UID, mode 0700. Files are
 * created by the service with openat(O_CREAT|O_EXCL|O_NOFOLLOW) relative to a directory
 * fd it opened itself (O_NOFOLLOW), then given to the caller with fchown(): nothing a
 * user plants there (symlinks, hard links, FIFOs) is ever followed or reused. What the
 * user's quota counts is the regular files there, each with one link: anything else
 * (a subdirectory, a symlink, a hard link, a FIFO) would hide usage from the count, so
 * the directory is refused until its owner removes it. These calls block on the file
 * system: the service runs them on its worker thread (worker.h), never on the loop.
 */

/* A directory with more entries than this is refused rather than read through. */
#define TRACE_DIR_MAX_ENTRIES 100000u

/* A file the scan leaves out: a live session's, already counted as it is written. */
typedef struct TraceDirFileId {
        dev_t dev;
        ino_t ino;
} TraceDirFileId;

/* Opens STATE/traces/<uid>/, creating it (and STATE/traces/) with the owner and mode
 * above if needed. Returns the directory fd. */
int trace_dir_open_user(const char *state_dir, uid_t uid);

/* Sums the sizes of the regular files in @dir_fd, leaving out the @n_skip files in
 * @skip. On refusal, *ret_refused is the entry's name (NULL for -E2BIG):
 *   -ENOTDIR  a subdirectory or another non-regular entry;
 *   -ELOOP    a symlink;
 *   -EMLINK   a file with more than one link;
 *   -E2BIG    more than TRACE_DIR_MAX_ENTRIES entries. */
int trace_dir_usage(int dir_fd, const TraceDirFileId *skip, size_t n_skip, uint64_t *ret_usage, char **ret_refused);

/* Creates a new trace file in @dir_fd (the UID's directory, from trace_dir_open_user()),
 * owned by @uid: its fd, its full path below @state_dir and its identity. */
int trace_dir_create_file(int dir_fd, const char *state_dir, uid_t uid, const char *name_hint,
                          char **ret_path, TraceDirFileId *ret_id);
/* As trace_dir_create_file(), but named exactly @name (no '/', not hidden):
 * -EEXIST when it exists. */
int trace_dir_create_named(int dir_fd, const char *state_dir, uid_t uid, const char *name, char **ret_path,
                           TraceDirFileId *ret_id);
