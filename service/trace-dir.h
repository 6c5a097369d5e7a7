/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>
#include <sys/types.h>

/*
 * The service's own trace directory, for callers that cannot pass a file descriptor:
 * STATE/traces/<uid>/, one directory per UID, owned by that UID, mode 0700. Files are
 * created by the service with openat(O_CREAT|O_EXCL|O_NOFOLLOW) relative to a directory
 * fd it opened itself (O_NOFOLLOW), then given to the caller with fchown(): nothing a
 * user plants there (symlinks, hard links, FIFOs) is ever followed or reused.
 */

/* Creates a new trace file for @uid. @quota_bytes bounds what @uid's directory may hold;
 * returns -EDQUOT when it is used up, else stores in *ret_remaining what is left. */
int trace_dir_create_file(const char *state_dir, uid_t uid, const char *name_hint,
                          uint64_t quota_bytes, char **ret_path, int *ret_fd, uint64_t *ret_remaining);
