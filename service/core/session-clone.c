/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd-util.h"
#include "kernel/file-kind.h"
#include "log.h"
#include "recorder/output-relay.h"
#include "session-clone.h"
#include "time-util.h"

/* A clone in two steps, each off the event loop: the recorder's thread copies
 * (recorder_clone()) and writes the eventfd; the loop then starts the clone's own thread,
 * which writes the copy into the output and writes the eventfd again; the loop joins it
 * and calls back. The clone lives on its own: its session may end in between. */

typedef struct SessionClone {
        Session *session;             /* NULL once the session let go of it */
        sd_event_source *source;      /* rc.done_fd */
        RecorderClone rc;
        int fd;
        int relay_done_fd;            /* a relay writes fd into the file; -EBADF: none */
        TraceWriterOutput output;
        uint64_t timeout_usec, max_bytes;
        TraceBudget *budget;
        pthread_t thread;
        bool thread_started;
        bool waiting_apps;            /* the apps flush first (session_producers_flush()) */
        int write_error;
        uint64_t started_usec;
        SessionCloneDone done;
        void *userdata;
} SessionClone;

static SessionClone *clone_free(SessionClone *c) {
        if (!c)
                return NULL;
        if (c->session && c->session->clone == c)
                c->session->clone = NULL;
        sd_event_source_disable_unref(c->source);
        safe_close(c->rc.done_fd);
        safe_close(c->fd);
        safe_close(c->relay_done_fd);
        trace_writer_done(&c->rc.snapshot);
        return mfree(c);
}

/* As the recorder writes into a caller's fd: a socket or a non-blocking pipe within the
 * deadline, anything else as a file. */
static TraceWriterOutput output_kind(int fd) {
        struct stat st;
        int flags;

        if (fstat(fd, &st) < 0 || (flags = fcntl(fd, F_GETFL)) < 0)
                return TRACE_OUTPUT_FILE;
        if (S_ISSOCK(st.st_mode))
                return TRACE_OUTPUT_SOCKET;
        if (S_ISFIFO(st.st_mode) && (flags & O_NONBLOCK))
                return TRACE_OUTPUT_PIPE;
        return TRACE_OUTPUT_FILE;
}

/* A caller's file on FUSE or a network filesystem is written through a relay, as the
 * recorder writes it (recorder.h): its pipe takes the file's place. */
static int relay_if_may_block(SessionClone *c) {
        FileKind kind;
        int pipe_fd, r;

        if (c->budget || file_kind_of_fd(c->fd, &kind) < 0 || !file_kind_may_block(&kind))
                return 0;
        r = output_relay_start(c->fd, c->session->owner_uid, &pipe_fd, &c->relay_done_fd);
        if (r < 0)
                return r;
        safe_close(c->fd);
        c->fd = pipe_fd;
        return 0;
}

static void *write_main(void *userdata) {
        SessionClone *c = userdata;
        uint64_t one = 1;
        int r;

        r = trace_writer_snapshot_write(&c->rc.snapshot, c->fd, c->output, c->timeout_usec, c->budget, c->max_bytes);
        if (r == -EPIPE)
                r = output_relay_error(c->relay_done_fd, r);
        if (r >= 0 && c->relay_done_fd >= 0)
                r = output_relay_finish(&c->fd, &c->relay_done_fd, c->timeout_usec);
        c->write_error = r;
        (void) write(c->rc.done_fd, &one, sizeof(one));
        return NULL;
}

static void finish(SessionClone *c, int error) {
        SessionCloneResult result = {
                .error = error,
                .bytes = c->rc.snapshot.stats.bytes_written,
                .events = c->rc.events,
                .copy_usec = c->rc.copy_ns / 1000,
                .total_usec = now_usec(CLOCK_MONOTONIC) - c->started_usec,
                .streamed = c->rc.streamed,
        };

        if (c->session)
                log_info("Session %" PRIu64 " cloned: %" PRIu64 " bytes, %" PRIu64 " events, copied in %" PRIu64
                         " us, written in %" PRIu64 " us%s.", c->session->id, result.bytes, result.events,
                         result.copy_usec, result.total_usec, error < 0 ? " (failed)" : "");
        c->done(&result, c->userdata);
        clone_free(c);
}

static int on_clone_event(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        SessionClone *c = userdata;
        uint64_t v;
        int r;

        (void) read(fd, &v, sizeof(v));
        if (c->thread_started) {
                (void) pthread_join(c->thread, NULL);
                finish(c, c->write_error);
                return 0;
        }
        if (c->rc.error < 0) {
                finish(c, c->rc.error);
                return 0;
        }
        /* The copy is made: written out on a thread of the clone's own, never here. */
        r = -pthread_create(&c->thread, NULL, write_main, c);
        if (r < 0) {
                finish(c, r);
                return 0;
        }
        c->thread_started = true;
        return 0;
}

int session_clone_check(Session *s, uint64_t min_interval_usec) {
        uint64_t now = now_usec(CLOCK_MONOTONIC);

        if (s->state != SESSION_RECORDING || !s->recorder)
                return -ESRCH;
        if (s->clone)
                return -EBUSY;
        if (s->last_clone_usec > 0 && now - s->last_clone_usec < min_interval_usec)
                return -EBUSY;
        return 0;
}

/* The eventfd the worker writes when its copy is done, watched on the event loop. */
static int watch_copy_done(Session *s, SessionClone *c) {
        int r;

        c->rc.done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (c->rc.done_fd < 0)
                return log_warning_errno(-errno, "Session %" PRIu64 ": snapshot: cannot create its eventfd: %m", s->id);
        r = sd_event_add_io(s->event, &c->source, c->rc.done_fd, EPOLLIN, on_clone_event, c);
        if (r < 0)
                return log_warning_errno(r, "Session %" PRIu64 ": snapshot: cannot watch its eventfd: %m", s->id);
        return 0;
}

/* Ends the clone through the loop, as any other end: @error in the copy's result. */
static void fail_copy(SessionClone *c, int error) {
        uint64_t one = 1;

        c->rc.error = error;
        (void) write(c->rc.done_fd, &one, sizeof(one));
}

static void copy_after_apps(Session *s) {
        SessionClone *c = s->clone;
        int r;

        if (!c)
                return;
        c->waiting_apps = false;
        r = recorder_clone(s->recorder, &c->rc);
        if (r < 0)
                fail_copy(c, r);
}

int session_clone(Session *s, SessionCloneOptions *o, SessionCloneDone done, void *userdata) {
        _cleanup_close_ int fd = TAKE_FD(o->fd);
        SessionClone *c;
        int r;

        assert(s);
        assert(done);

        r = session_clone_check(s, o->min_interval_usec);
        if (r < 0)
                return r;
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        *c = (SessionClone) { .session = s, .fd = TAKE_FD(fd), .relay_done_fd = -EBADF,
                              .timeout_usec = o->timeout_usec, .max_bytes = o->max_bytes,
                              .budget = o->budget, .started_usec = now_usec(CLOCK_MONOTONIC),
                              .done = done, .userdata = userdata };
        trace_writer_snapshot_init(&c->rc.snapshot);
        r = relay_if_may_block(c);
        c->output = output_kind(c->fd);
        if (r >= 0)
                r = watch_copy_done(s, c);
        /* What the apps hold goes into the snapshot: they flush first, bounded. */
        if (r >= 0)
                c->waiting_apps = session_producers_flush(s, copy_after_apps) > 0;
        if (r >= 0 && !c->waiting_apps)
                /* -EBUSY (a snapshot is asked for already) is the caller's to report. */
                r = recorder_clone(s->recorder, &c->rc);
        if (r < 0) {
                c->session = NULL;
                clone_free(c);
                return r;
        }
        s->clone = c;
        s->last_clone_usec = c->started_usec;
        return 0;
}

void session_clone_abandon(Session *s) {
        SessionClone *c = s->clone;

        if (!c)
                return;
        s->clone = NULL;
        c->session = NULL;
        /* Not copied yet: it never will be. Failed through the loop, as any other end. */
        if (c->waiting_apps) {
                session_producers_cancel_flush(s);
                fail_copy(c, -ECANCELED);
        } else if (s->recorder && recorder_clone_cancel(s->recorder, &c->rc))
                fail_copy(c, -ECANCELED);
}
