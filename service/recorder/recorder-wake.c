/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/utsname.h>

#include "log.h"
#include "recorder-local.h"

/* What wakes the worker. An idle session must cost nearly nothing: no timer unless
 * something asks for a period; the kernel says when a buffer needs reading. */

/* poll() on trace_pipe_raw waits for buffer_percent only from Linux 6.9: before, it
 * polls readable at the first event, and the worker would spin on a buffer it leaves
 * partly read. */
static bool kernel_polls_watermark(void) {
        struct utsname u;
        unsigned a = 0, b = 0;

        if (uname(&u) < 0 || sscanf(u.release, "%u.%u", &a, &b) < 2)
                return false;
        return a > 6 || (a == 6 && b >= 9);
}

/* The watermark: the config's drain_buffer_percent (ftrace-options.c wrote it), else a
 * tenth of each CPU's buffer: the kernel would overwrite nothing the session's own buffer
 * could keep, and what is left for Stop's final drain stays small. A config that names
 * its drain_period_ms and no drain_buffer_percent is drained on its period alone, as
 * traced_probes drains it. */
static bool setup_watermark(Recorder *rec, const SessionConfig *config, TraceInstance *instance) {
        if (!instance || rec->n_cpus == 0 || !kernel_polls_watermark())
                return false;
        if (config->drain_period_set && config->drain_buffer_percent == 0)
                return false;
        if (config->drain_buffer_percent == 0 && trace_instance_write_file(instance, "buffer_percent", "10") < 0) {
                log_debug("Cannot set buffer_percent in %s: draining every %u ms", trace_instance_name(instance),
                          rec->drain_period_ms);
                return false;
        }
        return true;
}

int recorder_wake_init(Recorder *rec, const SessionConfig *config, TraceInstance *instance) {
        rec->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (rec->wake_fd < 0)
                return -errno;
        rec->stop_drain_threads = config->stop_drain_threads;
        rec->watermark = setup_watermark(rec, config, instance);
        /* Without a watermark, the pipes are read every drain period as before. */
        rec->periodic_drain = rec->n_cpus > 0 &&
                (config->drain_period_set || config->flush_period_ms > 0 || !rec->watermark);
        rec->n_poll_fds = 2 + (rec->watermark ? rec->n_cpus : 0);
        rec->poll_fds = calloc(rec->n_poll_fds, sizeof(struct pollfd));
        if (!rec->poll_fds)
                return -ENOMEM;
        rec->poll_fds[0] = (struct pollfd) { .fd = rec->stop_fd, .events = POLLIN };
        rec->poll_fds[1] = (struct pollfd) { .fd = rec->wake_fd, .events = POLLIN };
        for (unsigned cpu = 0; rec->watermark && cpu < rec->n_cpus; cpu++)
                rec->poll_fds[2 + cpu] = (struct pollfd) { .fd = rec->pipe_fds[cpu], .events = POLLIN };
        return 0;
}

void recorder_wake_done(Recorder *rec) {
        RecorderDrainRequest left[RECORDER_MAX_DRAIN_REQUESTS];
        size_t n = recorder_take_drain_requests(rec, left);

        /* Their callers wait for an answer: the recorder ended before the drain. */
        for (size_t i = 0; i < n; i++)
                left[i].callback(rec, NULL, left[i].userdata);
        rec->poll_fds = mfree(rec->poll_fds);
        rec->wake_fd = safe_close(rec->wake_fd);
}

void recorder_wake(Recorder *rec) {
        uint64_t one = 1;

        if (rec->wake_fd >= 0)
                (void) write(rec->wake_fd, &one, sizeof(one));
}

static uint64_t due_after(uint64_t last, uint64_t period) {
        return period > UINT64_MAX - last ? UINT64_MAX : last + period;
}

/* The next moment a period asks for: a periodic drain, a write into the file, a clock
 * snapshot, a chunk by time. UINT64_MAX: none, sleep until woken. */
static uint64_t next_due(const Recorder *rec) {
        uint64_t due = due_after(rec->last_snapshot_ns, rec->snapshot_interval_ns);

        if (rec->periodic_drain || rec->busy)
                due = MIN(due, due_after(rec->last_drain_ns, (uint64_t) rec->drain_period_ms * 1000000ull));
        if (rec->writer.mode == TRACE_WRITER_STREAM && rec->write_period_ns != UINT64_MAX)
                due = MIN(due, due_after(rec->last_write_ns, rec->write_period_ns));
        return MIN(due, recorder_rotate_next_ns(rec));
}

static int timeout_ms(const Recorder *rec) {
        uint64_t due = next_due(rec), now = now_ns(CLOCK_MONOTONIC);

        if (due == UINT64_MAX)
                return -1;
        if (due <= now)
                return 0;
        return (int) MIN((due - now + 999999) / 1000000, (uint64_t) INT_MAX);
}

bool recorder_drain_due(Recorder *rec) {
        uint64_t now = now_ns(CLOCK_MONOTONIC);

        if ((rec->periodic_drain || rec->busy) && now - rec->last_drain_ns >= (uint64_t) rec->drain_period_ms * 1000000ull)
                return true;
        /* A write into the file takes what the kernel holds first. */
        return rec->n_cpus > 0 && rec->writer.mode == TRACE_WRITER_STREAM && rec->write_period_ns != UINT64_MAX &&
               now - rec->last_write_ns >= rec->write_period_ns;
}

unsigned recorder_wait(Recorder *rec) {
        unsigned why = 0;
        uint64_t v;

        if (poll(rec->poll_fds, rec->n_poll_fds, timeout_ms(rec)) < 0)
                return 0;
        atomic_fetch_add(&rec->wakeups, 1);
        if ((rec->poll_fds[0].revents & POLLIN) && read(rec->stop_fd, &v, sizeof(v)) == sizeof(v))
                why |= RECORDER_WAKE_STOP;
        if ((rec->poll_fds[1].revents & POLLIN) && read(rec->wake_fd, &v, sizeof(v)) == sizeof(v))
                why |= RECORDER_WAKE_INBOX;
        for (size_t i = 2; i < rec->n_poll_fds; i++)
                if (rec->poll_fds[i].revents & (POLLIN | POLLERR))
                        why |= RECORDER_WAKE_WATERMARK;
        return why;
}

int recorder_request_drain(Recorder *rec, RecorderDrainCallback callback, void *userdata) {
        int r = 0;

        assert(rec);
        assert(callback);
        (void) pthread_mutex_lock(&rec->drain_lock);
        if (rec->n_drain_requests >= RECORDER_MAX_DRAIN_REQUESTS)
                r = -EBUSY;
        else
                rec->drain_requests[rec->n_drain_requests++] = (RecorderDrainRequest) { callback, userdata };
        (void) pthread_mutex_unlock(&rec->drain_lock);
        if (r >= 0)
                recorder_wake(rec);
        return r;
}

size_t recorder_take_drain_requests(Recorder *rec, RecorderDrainRequest ret[static RECORDER_MAX_DRAIN_REQUESTS]) {
        size_t n;

        (void) pthread_mutex_lock(&rec->drain_lock);
        n = rec->n_drain_requests;
        for (size_t i = 0; i < n; i++)
                ret[i] = rec->drain_requests[i];
        rec->n_drain_requests = 0;
        (void) pthread_mutex_unlock(&rec->drain_lock);
        return n;
}

uint64_t recorder_wakeups(const Recorder *rec) {
        return atomic_load(&rec->wakeups);
}
