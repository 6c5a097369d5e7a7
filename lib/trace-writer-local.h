/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The trace writer's internals shared by its files: trace-writer.c (packets, limits)
 * and trace-writer-output.c (getting bytes into the output, within the deadline). */

#include <sys/uio.h>

#include "trace-writer.h"

/* Writes all of @iov (modifies it), adding what went out to *written. A PIPE or SOCKET
 * output that takes nothing for w->timeout_usec fails with -ETIMEDOUT. */
int trace_writer_output_writev(TraceWriter *w, struct iovec *iov, int n, uint64_t *written);
