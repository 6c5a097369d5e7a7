/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>

#include "fd-util.h"
#include "macro.h"
#include "time-util.h"
#include "trace-writer-local.h"

void trace_writer_set_output(TraceWriter *w, TraceWriterOutput output, uint64_t timeout_usec) {
        w->output = output;
        w->timeout_usec = timeout_usec;
}

/* Waits until the output takes bytes again, at most w->timeout_usec: a reader that
 * stopped reading must not hold the recorder (and with it Stop and shutdown) forever.
 * POLLERR and POLLHUP too: the next write says what went wrong. */
static int wait_writable(TraceWriter *w) {
        int r = fd_wait_for(w->fd, POLLOUT, w->timeout_usec);

        return r < 0 ? r : 0;
}

/* Bytes one call hands the kernel. On the development VM a file's 64 MB took 85-100 ms
 * in writes of 4 MiB and 20-40 ms in writes of 1 MiB or of 2000 KiB (bench/stop-write.c;
 * README, Performance). A buffered write() of N bytes lets the page cache take folios of
 * up to N (ext4 since Linux 6.16), and 2 MiB is the block this VM's balloon reports free
 * to the host (page_reporting_order 9): likely each such folio's pages fault on the host
 * as they are filled. 64 calls for 64 MB cost nothing anywhere. */
#define OUTPUT_WRITE_MAX ((size_t) 1 << 20)

static ssize_t output_call(TraceWriter *w, struct iovec *iov, int n) {
        if (w->output == TRACE_OUTPUT_SOCKET) {
                /* MSG_NOSIGNAL: a reader that went away is an error, not a signal. */
                struct msghdr mh = { .msg_iov = iov, .msg_iovlen = (size_t) n };
                return sendmsg(w->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
        }
        return writev(w->fd, iov, n);
}

/* One call of at most OUTPUT_WRITE_MAX bytes from the start of @iov: the buffers that fit,
 * the last one cut short for the call and given back its length after it. */
static ssize_t output_writev(TraceWriter *w, struct iovec *iov, int n) {
        size_t total = 0, full_len;
        ssize_t k;
        int m = 0;

        while (m < n && total < OUTPUT_WRITE_MAX)
                total += iov[m++].iov_len;
        full_len = iov[m - 1].iov_len;
        if (total > OUTPUT_WRITE_MAX)
                iov[m - 1].iov_len -= total - OUTPUT_WRITE_MAX;
        k = output_call(w, iov, m);
        /* Not errno: the caller reads it when k < 0. */
        iov[m - 1].iov_len = full_len;
        return k;
}

int trace_writer_output_writev(TraceWriter *w, struct iovec *iov, int n, uint64_t *written) {
        while (n > 0) {
                ssize_t k = output_writev(w, iov, n);

                if (k < 0) {
                        int r;

                        if (errno == EINTR)
                                continue;
                        if (errno != EAGAIN || w->output == TRACE_OUTPUT_FILE)
                                return -errno;
                        r = wait_writable(w);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (k == 0)
                        return -EIO;
                *written += (uint64_t) k;
                while (n > 0 && (size_t) k >= iov->iov_len) {
                        k -= (ssize_t) iov->iov_len;
                        iov++;
                        n--;
                }
                if (n > 0) {
                        iov->iov_base = (uint8_t *) iov->iov_base + k;
                        iov->iov_len -= (size_t) k;
                }
        }
        return 0;
}

void trace_writer_begin_output(TraceWriter *w, int fd) {
        w->fd = fd;
        w->output = TRACE_OUTPUT_FILE;
        memset(w->sequence_started, 0, sizeof(w->sequence_started));
}
