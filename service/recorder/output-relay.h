/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>
#include <sys/types.h>

/*
 * A relay for an output whose writes may never end: a file on FUSE or on a network
 * filesystem (kernel/file-kind.h). A small process of its own writes into the file what
 * the service puts into a pipe. The service writes into that pipe as into a caller's
 * pipe, within the write deadline (OutputTimeoutSec=), and gives up on it when the
 * deadline passes; the process may wait in the filesystem for as long as the filesystem
 * wants, and the service still stops its sessions and exits. A thread could not do this:
 * a FUSE request the filesystem never answers cannot be interrupted once sent, not even
 * by SIGKILL, and a process does not end before all its threads have.
 *
 * The process is no child of the service (it is handed to init), so nobody waits for it.
 * It is tracebusd executed again (OUTPUT_RELAY_ARG), holding nothing of the service's
 * but its three descriptors. It ignores SIGTERM: at shutdown it finishes what the
 * service gave it, then exits.
 */

/* tracebusd's first argument when it runs as a relay: "tracebusd --output-relay IN FILE
 * DONE" (descriptor numbers), started by the service only. */
#define OUTPUT_RELAY_ARG "--output-relay"
#define OUTPUT_RELAY_ARGC 5

/* The relay's process: never returns but on bad arguments. */
int output_relay_main(char **argv);

/* A filesystem that never answers holds its relay for good: a user whose relays still
 * running are this many gets no more (each is a process in the service's cgroup). */
#define OUTPUT_RELAY_MAX_PER_USER 16u

/* -EUSERS when @uid has OUTPUT_RELAY_MAX_PER_USER relays still running, else 0. */
int output_relay_check_user(uid_t uid);

/* Starts the relay into @file_fd (borrowed; the relay holds its own copy), counted for
 * @uid. *ret_pipe_fd: the non-blocking pipe to write the output into; *ret_done_fd: for
 * output_relay_finish() and output_relay_error(). */
int output_relay_start(int file_fd, uid_t uid, int *ret_pipe_fd, int *ret_done_fd);

/* Closes *pipe_fd (the end of the output) and waits at most @timeout_usec (UINT64_MAX:
 * no limit) until the relay wrote everything into the file; then closes *done_fd.
 * Returns 0, the relay's write error, or -ETIMEDOUT: the file took nothing more in time
 * and is left behind. */
int output_relay_finish(int *pipe_fd, int *done_fd, uint64_t timeout_usec);

/* The write error of a relay that ended early (a full disk, a filesystem gone), which
 * the service's side saw only as a broken pipe; @fallback when it has none to tell. */
int output_relay_error(int done_fd, int fallback);
