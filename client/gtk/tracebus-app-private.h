/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Internals of TracebusApp, shared by its parts:
 *   tracebus-app.c            the GApplication, the list of recordings, notifications;
 *   tracebus-app-sessions.c   the bus side: connecting, session proxies, polling,
 *                             kept (detached) sessions at startup;
 *   tracebus-app-recording.c  what the window asks: start, stop, save, discard,
 *                             and what happens to the recordings when it closes;
 *   tracebus-app-producers.c  the apps connected to the producer socket (ListProducers).
 */

#include "tracebus-app.h"
#include "tracebus-bus.h"

struct _TracebusApp {
        GtkApplication parent_instance;

        GDBusConnection *bus;
        TracebusDbusManager *manager;
        GListStore *recordings;
        char **available_events;
        gboolean events_done, kept_done;
        guint pending_kept; /* IsDetached/Attach answers still to come at startup */
        char *cache_dir;    /* $XDG_CACHE_HOME/tracebus */
        char *index_path;
        guint poll_id;
        gboolean held;      /* held for recordings kept after the window closed */
        guint closing_calls;
        char *producers_text; /* the connected SDK apps in words (producers.h), or NULL */
        gboolean producers_pending;

        TracebusWindowFactory new_window;
        TracebusAppHooks hooks;
        gboolean driven;    /* hooks are set: a driver, not a person, decides when the app ends */
};

/* An async call's context: the app and the recording it is about, both referenced. */
typedef struct {
        TracebusApp *app;
        TbRecording *r;
} CallData;

CallData *call_data_new(TracebusApp *app, TbRecording *r);
void call_data_free(CallData *d);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(CallData, call_data_free)

/* tracebus-app.c */
void app_emit_error(TracebusApp *app, const GError *error, const char *what_failed);
void app_show_warnings(TracebusApp *app, TbRecording *r, const char *const *warnings);
void app_save_index(TracebusApp *app);
TbRecording *app_find_by_path(TracebusApp *app, const char *object_path);
void app_remove_recording(TracebusApp *app, TbRecording *r);
GtkWindow *app_main_window(TracebusApp *app);
void app_check_ready(TracebusApp *app);
void app_recording_finished(TracebusApp *app, TbRecording *r, const char *reason, GVariant *stats);
void app_emit_producers_changed(TracebusApp *app);
/* A CLONE_SNAPSHOT trigger wrote @files (the last is new): a notification. */
void app_notify_trigger_snapshot(TracebusApp *app, TbRecording *r, const char *const *files);

/* tracebus-app-sessions.c */
void app_connect(TracebusApp *app);
void app_bind_session(TracebusApp *app, TbRecording *r, const char *object_path, gboolean ours);
void app_attach(TracebusApp *app, TbRecording *r);

/* tracebus-app-recording.c: a new trace file in the cache, opened (O_EXCL) into *ret_fd. */
char *app_new_trace_path(TracebusApp *app, int *ret_fd, GError **error);
