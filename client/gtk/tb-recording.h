/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * One recording as the window lists it: a live session of the service (with
 * its generated proxy), or a finished trace file in the user's cache. The
 * app keeps them in a GListStore and in an index file, so that finished
 * traces and sessions kept recording after the window closed are found again.
 */

#include <gio/gio.h>

#include "tracebus-dbus.h"

G_BEGIN_DECLS

typedef enum {
        TB_RECORDING_STARTING,  /* Start sent, no answer yet */
        TB_RECORDING_RECORDING,
        TB_RECORDING_STOPPING,  /* Stop sent: the service is finishing the trace */
        TB_RECORDING_FINISHED,  /* the trace file is complete */
} TbRecordingState;

#define TB_TYPE_RECORDING (tb_recording_get_type())
G_DECLARE_FINAL_TYPE(TbRecording, tb_recording, TB, RECORDING, GObject)

struct _TbRecording {
        GObject parent_instance;

        char *id;               /* the index's name: the file's basename, or the object path */
        TbRecordingState state;
        char *object_path;      /* while the session exists */
        TracebusDbusSession *proxy;
        gboolean ours;          /* the session belongs to our connection: its signals come to us */
        gboolean foreign;       /* started by another program of this user (the CLI, busctl) */
        char *detach_key;       /* "keep recording after closing this window" */
        gboolean detached;      /* detached now (the window closed) */
        gboolean user_stopped;  /* Stop came from this app */
        char *file_path;        /* the trace: our cache file, or the service's OutputPath */
        char *saved_path;       /* where Save As put a copy */
        char *summary;          /* "Scheduling, Interrupts" */
        gint64 started_at_us;   /* wall clock */
        gint64 ended_at_us;
        guint64 bytes, events, lost;
        char *reason;           /* the service's end reason */
        char **warnings;        /* the service's warnings, shown once each (NULL-terminated) */
};

TbRecording *tb_recording_new(const char *id);
/* Tells the views that fields changed. */
void tb_recording_changed(TbRecording *r);
/* Takes State, counters and StartedAt from the proxy's property cache. */
void tb_recording_update_from_proxy(TbRecording *r);
/* Takes Events, Bytes, EventsLost, Reason (and OutputPath) from Stop's or
 * SessionEnded's a{sv}, and marks it finished. */
void tb_recording_finish(TbRecording *r, const char *reason, GVariant *stats);
/* Whole seconds recorded so far (or in all, once finished). */
gint64 tb_recording_elapsed_seconds(const TbRecording *r);

/* ---- the index: $XDG_CACHE_HOME/tracebus/recordings.ini ---- */

/* Loads what the index holds; entries whose file is gone are dropped. */
GPtrArray *tb_recordings_load(const char *index_path);
/* Saves the recordings that have a file of ours (not foreign ones). */
gboolean tb_recordings_save(GListModel *recordings, const char *index_path, GError **error);

G_END_DECLS
