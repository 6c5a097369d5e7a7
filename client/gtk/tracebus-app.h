/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The application: one connection to the system bus, the Manager proxy, and
 * the recordings (a GListStore of TbRecording) that every window shows. It
 * outlives its window while a recording kept going after the window closed,
 * to tell when that recording ends. Every bus call is asynchronous.
 */

#include <gtk/gtk.h>

#include "categories.h"
#include "messages.h"
#include "tb-recording.h"

G_BEGIN_DECLS

#define TRACEBUS_APP_ID "org.tracebus.Tracebus"
#define TRACEBUS_DETACH_KEY_PREFIX "tracebus-gtk-"

#define TRACEBUS_TYPE_APP (tracebus_app_get_type())
G_DECLARE_FINAL_TYPE(TracebusApp, tracebus_app, TRACEBUS, APP, GtkApplication)

/* The user's locale and the app's translations: first thing in main(). */
void tracebus_app_setup_locale(void);
/* What makes the app's window. Given by main(), so that the app, which the window
 * calls into, does not also include the window: no include circle. */
typedef GtkWindow *(*TracebusWindowFactory)(TracebusApp *app);
TracebusApp *tracebus_app_new(TracebusWindowFactory new_window);

/* The recordings, newest first (items: TbRecording). */
GListModel *tracebus_app_get_recordings(TracebusApp *app);
/* Sorted group/name list from ListEvents(""), or NULL until it came. */
const char *const *tracebus_app_get_available_events(TracebusApp *app);
/* TRUE once the events are known and kept sessions were looked for. */
gboolean tracebus_app_is_ready(TracebusApp *app);

/* Starts a recording; failures come as the "error" signal. keep: start it
 * detached under a key of the app's own. */
void tracebus_app_start_recording(TracebusApp *app, const TbRecordSettings *settings, const char *summary,
                                  gboolean keep);
void tracebus_app_stop_recording(TracebusApp *app, TbRecording *r);
/* Saves what a running recording holds so far (for a ring buffer, its
 * last minutes) as a recording of its own, while it goes on (Manager.Clone). */
void tracebus_app_snapshot_recording(TracebusApp *app, TbRecording *r);
/* Deletes a finished recording's file and forgets it. */
void tracebus_app_discard_recording(TracebusApp *app, TbRecording *r);
/* Copies a finished recording's trace to dest. */
void tracebus_app_save_recording(TracebusApp *app, TbRecording *r, GFile *dest);
/* Opens the file manager at the saved copy, or at the trace in the cache. */
void tracebus_app_show_in_files(TracebusApp *app, TbRecording *r);

/* Asks the service again which apps built with the Perfetto SDK are connected
 * (Manager.ListProducers); "producers-changed" says when the answer came. */
void tracebus_app_refresh_producers(TracebusApp *app);
/* Those apps in words, a line each (producers.h), or why they could not be listed;
 * NULL until the first answer. */
const char *tracebus_app_get_producers_text(TracebusApp *app);

/* The window is going: detach the recordings to keep, stop the others. */
void tracebus_app_window_closing(TracebusApp *app);

/* ---- hooks for a driver (the test program, tracebus-gtk-test) ---- */

/* What a driver watches, to click through the real widgets as a person would.
 * The installed app sets none; each may be NULL. */
typedef struct {
        /* The app's window was created, and is about to be presented. */
        void (*window_created)(TracebusApp *app, GtkWindow *win, gpointer data);
        /* A Save As chooser is about to show. */
        void (*file_chooser_opening)(TracebusApp *app, GtkFileChooser *chooser, gpointer data);
        /* The closed window's recordings are all stopped or detached; detach_key: the
         * last one's key, or NULL. */
        void (*window_closed)(TracebusApp *app, const char *detach_key, gpointer data);
        /* A trace preview (tb-preview.h) is drawn from its trace. */
        void (*preview_ready)(TracebusApp *app, GtkWindow *preview, gpointer data);
        gpointer data;
} TracebusAppHooks;

/* Before g_application_run(). A driven app does not stay for kept recordings
 * after its window closed: the driver says when it ends. */
void tracebus_app_set_hooks(TracebusApp *app, const TracebusAppHooks *hooks);
/* For the window: the Save As chooser is about to show. */
void tracebus_app_file_chooser_opening(TracebusApp *app, GtkFileChooser *chooser);
/* For the trace preview: it is drawn. */
void tracebus_app_preview_ready(TracebusApp *app, GtkWindow *preview);

G_END_DECLS
