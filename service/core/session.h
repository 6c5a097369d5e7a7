/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "config/session-config.h"
#include "kernel/tracefs-instance.h"
#include "producers/producers.h"
#include "recorder/recorder.h"
#include "sources/data-source.h"
#include "sources/poller.h"

typedef struct Manager Manager;
typedef struct Session Session;

typedef enum SessionState {
        SESSION_STARTING,
        SESSION_RECORDING,
        SESSION_STOPPING,
        SESSION_ENDED,
        SESSION_ARMED,               /* START_TRACING, waiting for a trigger */
        _SESSION_STATE_MAX,
        _SESSION_STATE_INVALID = -EINVAL,
} SessionState;

typedef enum SessionEndReason {
        SESSION_END_STOPPED,
        SESSION_END_DURATION_REACHED,
        SESSION_END_SIZE_REACHED,
        SESSION_END_CLIENT_VANISHED,
        SESSION_END_OUTPUT_ERROR,
        SESSION_END_SERVICE_SHUTDOWN,
        SESSION_END_QUOTA,
        SESSION_END_OUTPUT_STALLED,
        SESSION_END_TRIGGER_TIMEOUT, /* trigger_timeout_ms passed without a trigger */
        SESSION_END_TRIGGERED,       /* stop_delay_ms after a STOP_TRACING trigger */
        _SESSION_END_REASON_MAX,
        _SESSION_END_REASON_INVALID = -EINVAL,
} SessionEndReason;

const char *session_state_to_string(SessionState s);
const char *session_end_reason_to_string(SessionEndReason r);

/* What changed, for SessionCallbacks.on_changed. */
typedef enum SessionChange {
        SESSION_CHANGED_STATE = 1 << 0,     /* state, detached */
        SESSION_CHANGED_PROGRESS = 1 << 1,  /* bytes, events, lost: at most once a second */
        SESSION_CHANGED_WARNINGS = 1 << 2,  /* config.warnings grew */
        SESSION_CHANGED_ROTATED = 1 << 3,   /* a new chunk (chunk_index) began */
        SESSION_CHANGED_TRIGGER_SNAPSHOTS = 1 << 4, /* a CLONE_SNAPSHOT file written */
} SessionChange;

/* Each change is a bit of its own: the bus layer tells them apart by testing each. */
_Static_assert(__builtin_popcount(SESSION_CHANGED_STATE | SESSION_CHANGED_PROGRESS | SESSION_CHANGED_WARNINGS |
                                  SESSION_CHANGED_ROTATED | SESSION_CHANGED_TRIGGER_SNAPSHOTS) == 5,
               "two SessionChange values share a bit");

/* How a session reports to its owner. It calls no one else: whoever presents sessions
 * (the bus layer) hears of them through the manager, which passes these on. */
typedef struct SessionCallbacks {
        void (*on_changed)(Session *s, SessionChange what, void *userdata);
        /* The trace is complete: state, end reason and final stats are set. The owner
         * frees the session in it (the manager does): the session touches nothing after. */
        void (*on_ended)(Session *s, void *userdata);
        /* The session is being freed: drop what was kept for it (observer_data). */
        void (*on_free)(Session *s, void *userdata);
        /* CLONE_SNAPSHOT's snapshot @n is due (stop_delay_ms after a trigger). */
        void (*on_snapshot_due)(Session *s, unsigned n, void *userdata);
} SessionCallbacks;

struct Session {
        Manager *manager;            /* its owner (manager.c); opaque here */
        Session *next, *prev;
        sd_event *event;             /* its owner's */
        Poller *poller;              /* its owner's: where its polling data sources run */
        const SessionCallbacks *callbacks;
        void *callbacks_userdata;
        /* Kept by whoever presents the session (the bus layer: session-dbus.c), released
         * through on_free. */
        void *observer_data;

        uint64_t id;
        uid_t owner_uid;
        SessionConfig config;
        char *output_path;           /* set when the service chose the file */
        TraceBudget *output_budget;  /* as SessionOutput.budget */
        dev_t output_dev;            /* the trace directory's file, left out of the quota's */
        ino_t output_ino;            /* scans while it is written (counted as written) */
        uint64_t started_at_usec;    /* CLOCK_REALTIME */

        /* A detached session outlives its client. It has a key when Detach or DetachKey
         * gave it one; a session writing into the trace directory starts detached
         * without one, since its callers (busctl) leave the bus right after Start. */
        bool detached;
        char *detach_key;

        SessionState state;
        SessionEndReason end_reason;
        int end_error;

        TraceInstance *instance;
        Recorder *recorder;
        RecorderStats final_stats;

        sd_event_source *duration_source;
        sd_event_source *done_source;
        sd_event_source *progress_source;
        RecorderStats progress_reported;

        /* The data sources that run for it beside the recorder (sources/data-sources.c),
         * stopped before the recorder's final drain. */
        DataSourcesRunning sources;
        /* The sources' packets the recorder refused, as last warned about. */
        uint64_t submitted_dropped_warned;
        /* The sources' final reads at Stop, queued on the pollers' thread; its last call
         * writes @final_fd (owned by @final_source) to wake the loop. */
        sd_event_source *final_source;
        int final_fd;
        /* The recorder's rotations, watched (session-rotate.c). */
        sd_event_source *rotated_source;
        uint32_t chunk_index;
        /* trigger_config at run time (session-triggers.c). */
        struct SessionTriggers *triggers;
        /* The clone running (session-clone.c), one at a time, and when
         * the last began (CLOCK_MONOTONIC; 0: never), for the rate limit. */
        struct SessionClone *clone;
        uint64_t last_clone_usec;
        /* The apps that record for it (session-producers.c). */
        struct SessionProducers *apps;
};

/* Session ids (manager_new_session_id()) are at most this: 48 random bits. */
#define SESSION_ID_MASK ((UINT64_C(1) << 48) - 1)

/* Where a session writes. */
typedef struct SessionOutput {
        int fd;                      /* taken over by session_new(), also on failure */
        const char *path;            /* set when the service chose the file */
        uint64_t timeout_usec;       /* pipes and sockets: the write deadline */
        TraceBudget *budget;         /* the owner's trace-directory quota; NULL for a caller's fd.
                                      * Not owned: it must outlive the session's recorder. */
        /* The trace directory's file of a rotating session is BASE.0, and
         * its next chunks BASE.N go into @chunk_dir_fd (taken over by session_new()). */
        bool has_chunk_dir;
        int chunk_dir_fd;
} SessionOutput;

/* Creates session @id's tracefs instance, enables its events and starts recording into
 * @output. Its timers and the recorder's end are watched on @event, its polling data
 * sources run on @poller. It reports nothing until its owner has set its callbacks. */
int session_new(sd_event *event, Poller *poller, uint64_t id, uid_t owner_uid, SessionConfig *config, SessionOutput *output,
                Session **ret);

/* Frees an ended session (or one that failed to start). */
Session *session_free(Session *s);

/* Stops recording: switches tracing off and lets the recorder drain the rest. The session
 * ends (SessionCallbacks.on_ended) once the trace is complete. Returns 0 if it was
 * recording, -EALREADY if it was already stopping. */
int session_stop(Session *s, SessionEndReason reason);

/* Drops the pollers' final reads session_stop() queued, if any: after it returns none
 * of them runs. */
void session_cancel_final_reads(Session *s);

/* The client the session is bound to has gone: an attached session stops with it. */
void session_client_vanished(Session *s);

/* Who may see the session at all (its object, its properties): its owner and root. */
bool session_visible_to(const Session *s, uid_t uid);

void session_get_stats(const Session *s, RecorderStats *ret);

static inline bool session_is_detached(const Session *s) {
        return s->detached;
}

/* Detach keys: 1 to 64 printable ASCII characters. */
#define SESSION_DETACH_KEY_MAX 64u
bool session_detach_key_valid(const char *key);

/* Marks the session detached, under @key (moved; may be NULL), or attached again, and
 * reports the change. */
void session_set_detached(Session *s, bool detached, char *key);

/* session-warnings.c: a warning made on the event loop, printf format:
 * added to the session's Warnings (config.warnings, capped), written into the trace and
 * reported (SESSION_CHANGED_WARNINGS). Returns 0 or -ENOMEM. */
int session_warn(Session *s, const char *fmt, ...) _printf_(2, 3);
/* Takes the warnings the recorder's threads made (recorder_warn()) into the session's:
 * from its progress timer, and before the recorder goes. */
void session_collect_warnings(Session *s);

/* session-rotate.c: after the recorder is made, the chunks' directory
 * (SessionOutput.chunk_dir_fd, taken; -EBADF: none) and the watch on its rotations
 * (SESSION_CHANGED_ROTATED). */
int session_rotate_setup(Session *s, int chunk_dir_fd);
void session_rotate_done(Session *s);
/* SetNextOutput: @fd (taken) is the next chunk's output. -ENOTCONN: the session does not
 * rotate into fds; -ESTALE: it is stopping. */
int session_set_next_output(Session *s, int fd);
/* Whether the session takes Stop, Detach, triggers: it is
 * recording, or armed (START_TRACING) and waiting for a trigger. */
static inline bool session_is_running(const Session *s) {
        return s->state == SESSION_RECORDING || s->state == SESSION_ARMED;
}

/* session.c: an armed session starts recording (its first START_TRACING trigger). */
int session_begin_recording(Session *s);

/* session-triggers.c: the trigger timers of @s's config (trigger_timeout_ms), armed by
 * session_new(); freed with the session. */
int session_triggers_setup(Session *s);
void session_triggers_free(Session *s);
/* Trigger @name, sent by @producer (the caller's name) of @uid at @now_ns (BOOTTIME):
 * as Perfetto's ActivateTriggers does for one session. 1 when the session took it
 * (recorded in the trace, acted on), 0 when it has no such trigger or skipped it. */
int session_activate_trigger(Session *s, const char *name, const char *producer, uid_t uid, uint64_t now_ns);
/* session-producers.c: the apps on the producer socket that record the config's data
 * sources for this session (track_event, ...). Started with the recording (and in every
 * allowed app that registers a matching data source later), stopped at Stop: a flush,
 * StopDataSource, a bounded wait for the apps, then what their buffers hold is scraped
 * before the recorder's final drain. */
int session_producers_start(Session *s, Producers *producers);
/* The producers connected (NULL when the session has no app data sources). */
Producer *session_producers_list(Session *s);
/* @producer registered @name (NULL: any of its data sources) while @s runs. */
void session_producers_offer(Session *s, Producer *producer, const char *name);
/* A packet of @producer for the service-global @target_buffer: true when it was @s's. */
bool session_producers_packet(Session *s, Producer *producer, uint32_t target_buffer, uint16_t writer_id,
                              bool dropped, const uint8_t *data, size_t size);
/* A packet an app wrote for the service-global @target_buffer and the service dropped (no
 * TracePacket, or a field only the service writes): true when it was @s's, which counts it
 * for a warning at Stop. */
bool session_producers_packet_refused(Session *s, uint32_t target_buffer);
/* Whether @producer may send @s triggers or be set up by it. */
bool session_producers_allowed(const Session *s, const Producer *producer);
/* At Stop: 1 when the apps were told to stop and session_producers_stopped() is called
 * once they did or their time ran out; 0 when there were none. */
int session_producers_stop(Session *s, void (*done)(Session *s));
/* Before a snapshot: the apps flush, and @done is called once each acknowledged or after
 * the stop timeout. 1 when waiting, 0 when there is no app to wait for. */
int session_producers_flush(Session *s, void (*done)(Session *s));
void session_producers_cancel_flush(Session *s);
void session_producers_flush_acked(Session *s, Producer *producer, uint64_t flush_request_id);
/* @producer said NotifyDataSourceStopped for @instance_id. */
void session_producers_instance_stopped(Session *s, Producer *producer, uint64_t instance_id);
void session_producers_free(Session *s);

/* session-clone.c: the session or its recorder goes; a clone not
 * copied yet fails with -ECANCELED, one being written finishes on its own. */
void session_clone_abandon(Session *s);
/* CLONE_SNAPSHOT: the snapshot files its triggers wrote (the last
 * SESSION_MAX_TRIGGER_SNAPSHOTS), for the Session's TriggerSnapshots (NULL: none).
 * session_note_trigger_snapshot() adds @path and reports the change. */
#define SESSION_MAX_TRIGGER_SNAPSHOTS 64u
char **session_trigger_snapshots(const Session *s);
void session_note_trigger_snapshot(Session *s, const char *path);
