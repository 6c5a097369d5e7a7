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

TracebusApp *tracebus_app_new(void);

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
/* Deletes a finished recording's file and forgets it. */
void tracebus_app_discard_recording(TracebusApp *app, TbRecording *r);
/* Copies a finished recording's trace to dest. */
void tracebus_app_save_recording(TracebusApp *app, TbRecording *r, GFile *dest);
/* Opens the file manager at the saved copy, or at the trace in the cache. */
void tracebus_app_show_in_files(TracebusApp *app, TbRecording *r);

/* The window is going: detach the recordings to keep, stop the others. */
void tracebus_app_window_closing(TracebusApp *app);

/* ---- test mode (tests/test-gtk.c) ---- */

typedef struct {
        double record_seconds;    /* --test-record: press Record, wait, Stop, Save As */
        char *save_to;            /* --save-to: the file Save As picks */
        char *screenshot;         /* --screenshot: PNG of the window while recording */
        char **categories;        /* --test-categories: the toggles to switch on (ids) */
        gboolean keep;            /* --test-keep: keep recording, close the window */
        gboolean reattach_stop;   /* --test-reattach-stop: stop and save the kept recording */
        gboolean expect_error;    /* --test-expect-error: the banner showing is success */
        char *custom_search;      /* --test-custom-events: search the Custom Events list, tick the first */
        char *dialog_screenshot;  /* --dialog-screenshot: PNG of that dialog */
} TracebusTestOptions;

/* NULL outside the test mode. */
const TracebusTestOptions *tracebus_app_get_test_options(TracebusApp *app);
int tracebus_app_get_exit_status(TracebusApp *app);
void tracebus_app_test_finish(TracebusApp *app, int exit_status, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

G_END_DECLS
