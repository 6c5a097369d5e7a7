/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "fd-util.h"
#include "log.h"
#include "session.h"
#include "time-util.h"

#define PROGRESS_INTERVAL_USEC (1000ull * 1000ull)

static const char *const session_state_table[_SESSION_STATE_MAX] = {
        [SESSION_STARTING] = "starting",
        [SESSION_RECORDING] = "recording",
        [SESSION_STOPPING] = "stopping",
        [SESSION_ENDED] = "ended",
        [SESSION_ARMED] = "armed",
};

static const char *const session_end_reason_table[_SESSION_END_REASON_MAX] = {
        [SESSION_END_STOPPED] = "stopped",
        [SESSION_END_DURATION_REACHED] = "duration-reached",
        [SESSION_END_SIZE_REACHED] = "size-reached",
        [SESSION_END_CLIENT_VANISHED] = "client-vanished",
        [SESSION_END_OUTPUT_ERROR] = "output-error",
        [SESSION_END_SERVICE_SHUTDOWN] = "service-shutdown",
        [SESSION_END_QUOTA] = "quota",
        [SESSION_END_OUTPUT_STALLED] = "output-stalled",
        [SESSION_END_TRIGGER_TIMEOUT] = "trigger-timeout",
        [SESSION_END_TRIGGERED] = "triggered",
};

const char *session_state_to_string(SessionState s) {
        return s >= 0 && s < _SESSION_STATE_MAX ? session_state_table[s] : NULL;
}

const char *session_end_reason_to_string(SessionEndReason r) {
        return r >= 0 && r < _SESSION_END_REASON_MAX ? session_end_reason_table[r] : NULL;
}

void session_get_stats(const Session *s, RecorderStats *ret) {
        if (s->recorder)
                recorder_get_stats(s->recorder, ret);
        else
                *ret = s->final_stats;
}

static void report_changed(Session *s, SessionChange what) {
        if (s->callbacks && s->callbacks->on_changed)
                s->callbacks->on_changed(s, what, s->callbacks_userdata);
}

static SessionEndReason reason_for_recorder_end(Session *s, RecorderEnd end) {
        switch (end) {
        case RECORDER_END_SIZE_REACHED:
                return SESSION_END_SIZE_REACHED;
        case RECORDER_END_OUTPUT_ERROR:
        case RECORDER_END_READ_ERROR:
                return SESSION_END_OUTPUT_ERROR;
        case RECORDER_END_QUOTA:
                return SESSION_END_QUOTA;
        case RECORDER_END_OUTPUT_STALLED:
                return SESSION_END_OUTPUT_STALLED;
        case RECORDER_END_STOPPED:
        default:
                return s->end_reason;
        }
}

/* The recorder thread is gone: the trace is complete. Tidy up and tell the owner. */
static int on_recorder_done(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        Session *s = ASSERT_PTR(userdata);
        RecorderEnd end;

        if (s->state == SESSION_RECORDING)
                /* Ended by itself (size limit, output error): reason from the recorder. */
                s->end_reason = SESSION_END_STOPPED;

        session_cancel_final_reads(s);
        data_sources_stop(&s->sources);
        session_rotate_done(s);
        end = recorder_join(s->recorder, &s->end_error);
        session_clone_abandon(s);
        session_collect_warnings(s);
        s->end_reason = reason_for_recorder_end(s, end);
        recorder_get_stats(s->recorder, &s->final_stats);
        s->recorder = recorder_free(s->recorder);
        s->instance = trace_instance_free(s->instance);
        data_sources_teardown_instance(&s->config, s->id);
        s->done_source = sd_event_source_disable_unref(s->done_source);
        s->duration_source = sd_event_source_disable_unref(s->duration_source);
        s->progress_source = sd_event_source_disable_unref(s->progress_source);
        session_triggers_free(s);
        s->state = SESSION_ENDED;

        if (s->end_error < 0 && s->end_error != -EFBIG && s->end_error != -EDQUOT)
                log_warning_errno(s->end_error, "Session %" PRIu64 " ended early, the output failed: %m", s->id);
        log_info("Session %" PRIu64 " of UID %u ended (%s): %" PRIu64 " events, %" PRIu64 " bytes, %" PRIu64 " lost.",
                 s->id, (unsigned) s->owner_uid, session_end_reason_to_string(s->end_reason),
                 s->final_stats.events, s->final_stats.bytes_written, s->final_stats.events_lost);

        /* The owner tells its observers (Stop is answered, SessionEnded sent), then
         * frees the session: nothing may touch @s after this. */
        if (s->callbacks && s->callbacks->on_ended)
                s->callbacks->on_ended(s, s->callbacks_userdata);
        return 0;
}

static int on_duration_reached(sd_event_source *source, uint64_t usec, void *userdata) {
        Session *s = ASSERT_PTR(userdata);

        (void) session_stop(s, SESSION_END_DURATION_REACHED);
        return 0;
}

static int on_progress(sd_event_source *source, uint64_t usec, void *userdata) {
        Session *s = ASSERT_PTR(userdata);
        RecorderStats now;
        int r;

        session_collect_warnings(s);
        session_get_stats(s, &now);
        if (memcmp(&now, &s->progress_reported, sizeof(now)) != 0) {
                s->progress_reported = now;
                report_changed(s, SESSION_CHANGED_PROGRESS);
        }
        /* sd-event switched the one-shot timer off before calling us: re-arm it. */
        r = sd_event_source_set_time_relative(source, PROGRESS_INTERVAL_USEC);
        if (r < 0)
                return r;
        return sd_event_source_set_enabled(source, SD_EVENT_ONESHOT);
}

static int session_add_event_sources(Session *s) {
        sd_event *e = s->event;
        int r;

        r = sd_event_add_io(e, &s->done_source, recorder_done_fd(s->recorder), EPOLLIN, on_recorder_done, s);
        if (r < 0)
                return r;
        r = sd_event_add_time_relative(e, &s->progress_source, CLOCK_MONOTONIC, PROGRESS_INTERVAL_USEC, 0,
                                       on_progress, s);
        if (r < 0)
                return r;
        if (s->config.duration_ms == 0)
                return 0;
        /* Perfetto's duration_ms does not count time suspended, so CLOCK_MONOTONIC. */
        return sd_event_add_time_relative(e, &s->duration_source, CLOCK_MONOTONIC,
                                          (uint64_t) s->config.duration_ms * 1000ull, 0, on_duration_reached, s);
}

/* The session's kernel side, done by its data sources (linux.ftrace makes the instance). */
static int session_setup_instance(Session *s) {
        DataSourceInstance si = {
                .config = &s->config,
                .session_id = s->id,
        };
        int r;

        r = data_sources_setup_instance(&si);
        s->instance = si.instance;
        return r;
}

int session_new(sd_event *event, Poller *poller, uint64_t id, uid_t owner_uid, SessionConfig *config, SessionOutput *output,
                Session **ret) {
        _cleanup_close_ int fd = TAKE_FD(output->fd);
        _cleanup_close_ int chunk_dir_fd = output->has_chunk_dir ? TAKE_FD(output->chunk_dir_fd) : -EBADF;
        Session *s;
        int r;

        assert(event);
        assert(config);
        assert(ret);

        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->event = event;
        s->poller = poller;
        s->id = id;
        s->owner_uid = owner_uid;
        s->state = SESSION_STARTING;
        s->config = *config;
        *config = (SessionConfig) {};
        s->output_budget = output->budget;
        if (output->path && !(s->output_path = strdup(output->path))) {
                session_free(s);
                return -ENOMEM;
        }

        r = session_setup_instance(s);
        if (r >= 0)
                r = recorder_new(&s->config, s->instance, TAKE_FD(fd), &s->recorder);
        if (r >= 0)
                r = recorder_set_output_limits(s->recorder, output->timeout_usec, output->budget, owner_uid);
        if (r >= 0)
                r = session_rotate_setup(s, TAKE_FD(chunk_dir_fd));
        if (r >= 0)
                r = session_add_event_sources(s);
        /* START_TRACING: instance and recorder ready, nothing recorded until a trigger. */
        if (r >= 0 && s->config.trigger_mode == SESSION_TRIGGER_START)
                s->state = SESSION_ARMED;
        else if (r >= 0)
                r = session_begin_recording(s);
        if (r >= 0)
                r = session_triggers_setup(s);
        if (r < 0) {
                session_free(s);
                return r;
        }

        log_info("Session %" PRIu64 " of UID %u %s into %s.", s->id, (unsigned) owner_uid,
                 s->state == SESSION_ARMED ? "armed, to record" : "recording", s->output_path ?: "a file descriptor");
        *ret = s;
        return 0;
}

int session_begin_recording(Session *s) {
        DataSourceContext ctx = {
                .poller = s->poller,
                .recorder = s->recorder,
                .owner_uid = s->owner_uid,
                .config = &s->config,
        };
        int r;

        s->started_at_usec = now_usec(CLOCK_REALTIME);
        r = recorder_start(s->recorder, s->instance);
        if (r >= 0)
                r = data_sources_start(&ctx, &s->sources);
        if (r < 0)
                return r;
        s->state = SESSION_RECORDING;
        /* Armed until now: the apps start with the recording. */
        if (s->apps)
                for (Producer *p = session_producers_list(s); p; p = p->next)
                        session_producers_offer(s, p, NULL);
        return 0;
}

Session *session_free(Session *s) {
        if (!s)
                return NULL;
        if (s->callbacks && s->callbacks->on_free)
                s->callbacks->on_free(s, s->callbacks_userdata);
        sd_event_source_disable_unref(s->done_source);
        sd_event_source_disable_unref(s->duration_source);
        sd_event_source_disable_unref(s->progress_source);
        session_triggers_free(s);
        session_cancel_final_reads(s);
        session_rotate_done(s);
        data_sources_stop(&s->sources);
        session_clone_abandon(s);
        session_producers_free(s);
        recorder_free(s->recorder);
        trace_instance_free(s->instance);
        data_sources_teardown_instance(&s->config, s->id);
        session_config_done(&s->config);
        free(s->output_path);
        free(s->detach_key);
        return mfree(s);
}

/* Every source's packets are in: no packet may reach the recorder after its final drain. */
static void session_finish_stop(Session *s) {
        s->final_source = sd_event_source_disable_unref(s->final_source);
        data_sources_stop(&s->sources);
        recorder_stop(s->recorder);
}

/* On the poller's thread, after the session's final reads. */
static void final_reads_done(uint64_t now, void *userdata) {
        Session *s = userdata;

        (void) eventfd_write(s->final_fd, 1);
}

static int on_final_reads(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        eventfd_t v;

        /* The poller's write is read, not only seen by epoll: the read is what orders
         * its eventfd_write() before the close of the fd in session_finish_stop() (for
         * ThreadSanitizer, which does not follow epoll). */
        (void) eventfd_read(fd, &v);
        session_finish_stop(userdata);
        return 0;
}

static int queue_final_reads(Session *s) {
        int r;

        r = data_sources_queue_final(&s->sources, s);
        if (r >= 0)
                r = poller_call(s->poller, final_reads_done, s, s);
        return r;
}

/* As Perfetto's data sources flush at Stop: each source of the session that polls reads
 * once more (the journal's last entries, a last sample) on the pollers' thread, while the
 * loop goes on; the recorder is told to stop when they are done. 0 when there is none. */
static int start_final_reads(Session *s) {
        _cleanup_close_ int fd = -EBADF;
        int r;

        if (!data_sources_have_final_reads(&s->sources))
                return 0;
        fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (fd < 0)
                return -errno;
        r = sd_event_add_io(s->event, &s->final_source, fd, EPOLLIN, on_final_reads, s);
        if (r < 0)
                return r;
        (void) sd_event_source_set_io_fd_own(s->final_source, true);
        s->final_fd = TAKE_FD(fd);
        r = queue_final_reads(s);
        if (r < 0) {
                session_cancel_final_reads(s);
                return r;
        }
        return 1;
}

void session_cancel_final_reads(Session *s) {
        if (!s->final_source)
                return;
        poller_cancel(s->poller, s);
        s->final_source = sd_event_source_disable_unref(s->final_source);
}

static void stop_sources(Session *s) {
        int r;

        r = start_final_reads(s);
        if (r < 0)
                log_warning_errno(r, "Session %" PRIu64 ": the pollers' final reads cannot be queued, skipped: %m",
                                  s->id);
        if (r <= 0)
                session_finish_stop(s);
}

/* An armed session recorded nothing and its recorder's thread never ran, so nothing
 * else makes done_fd readable: the end is taken on the loop as any recorder's
 * (on_recorder_done()), with an empty trace, as Perfetto returns no data. */
static int session_stop_armed(Session *s, SessionEndReason reason) {
        s->state = SESSION_STOPPING;
        s->end_reason = reason;
        if (eventfd_write(recorder_done_fd(s->recorder), 1) < 0)
                return log_error_errno(errno, "Session %" PRIu64 ": cannot end the armed session: %m", s->id);
        report_changed(s, SESSION_CHANGED_STATE);
        log_info("Session %" PRIu64 " ends armed, nothing recorded (%s).", s->id, session_end_reason_to_string(reason));
        return 0;
}

int session_stop(Session *s, SessionEndReason reason) {
        int r;

        if (!session_is_running(s))
                return -EALREADY;
        if (s->state == SESSION_ARMED)
                return session_stop_armed(s, reason);

        s->state = SESSION_STOPPING;
        s->end_reason = reason;
        s->duration_source = sd_event_source_disable_unref(s->duration_source);

        /* Off first, so that the recorder's final drain empties the buffers for good. */
        r = s->instance ? trace_instance_set_tracing(s->instance, false) : 0;
        if (r < 0)
                log_warning_errno(r, "Failed to switch tracing off in %s, stopping anyway: %m",
                                  trace_instance_name(s->instance));
        /* The events' unregistering (an RCU grace period) runs while the recorder
         * drains, not after it, before Stop's reply. */
        if (s->instance)
                (void) trace_instance_write_file(s->instance, "events/enable", "0");
        /* The apps flush and stop first (bounded), then the pollers read once more. */
        if (session_producers_stop(s, stop_sources) <= 0)
                stop_sources(s);
        report_changed(s, SESSION_CHANGED_STATE);
        log_info("Session %" PRIu64 " stopping (%s).", s->id, session_end_reason_to_string(reason));
        return 0;
}

void session_client_vanished(Session *s) {
        log_info("The client of session %" PRIu64 " left the bus; stopping it.", s->id);
        (void) session_stop(s, SESSION_END_CLIENT_VANISHED);
}

bool session_visible_to(const Session *s, uid_t uid) {
        return uid == 0 || uid == s->owner_uid;
}

bool session_detach_key_valid(const char *key) {
        size_t n = key ? strlen(key) : 0;

        if (n == 0 || n > SESSION_DETACH_KEY_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if (key[i] < 0x20 || key[i] > 0x7e)
                        return false;
        return true;
}

void session_set_detached(Session *s, bool detached, char *key) {
        free(s->detach_key);
        s->detach_key = key;
        s->detached = detached;
        if (s->recorder)
                recorder_annotate(s->recorder, detached ? "detached" : "attached");
        log_info("Session %" PRIu64 " %s%s%s.", s->id, detached ? "detached" : "attached",
                 key ? " under key " : "", strempty(key));
        report_changed(s, SESSION_CHANGED_STATE);
}
