/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <gtk/gtk.h>

#include "tracebus-app.h"

G_BEGIN_DECLS

#define TRACEBUS_TYPE_WINDOW (tracebus_window_get_type())
G_DECLARE_FINAL_TYPE(TracebusWindow, tracebus_window, TRACEBUS, WINDOW, GtkApplicationWindow)

TracebusWindow *tracebus_window_new(TracebusApp *app);

/* For the test driver, which clicks through the real widgets. */
GtkWidget *tracebus_window_get_record_button(TracebusWindow *win);
GtkWidget *tracebus_window_get_category_switch(TracebusWindow *win, const char *id);
/* The text under a category's title (for "apps", the connected apps too); NULL: no such id. */
const char *tracebus_window_get_category_subtitle(TracebusWindow *win, const char *id);
GtkWidget *tracebus_window_get_keep_switch(TracebusWindow *win);
/* which: "stop", "save", "show", "discard" or "preview"; NULL when the row has none shown. */
GtkWidget *tracebus_window_get_row_button(TracebusWindow *win, TbRecording *r, const char *which);
/* The error message shown, or NULL. */
char *tracebus_window_get_message(TracebusWindow *win);
GtkWidget *tracebus_window_get_custom_button(TracebusWindow *win);
/* A PNG of what the window (or a dialog) shows now. */
gboolean tracebus_window_save_screenshot(GtkWindow *win, const char *path, GError **error);

G_END_DECLS
