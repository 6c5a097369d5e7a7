/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Internals of TracebusWindow, shared by its parts:
 *   tracebus-window.c       the window, the message banner, the new-recording settings;
 *   tracebus-window-rows.c  the list of recordings, a row each, updated every second.
 */

#include "tracebus-window.h"

#define MAX_CATEGORIES 16

struct _TracebusWindow {
        GtkApplicationWindow parent_instance;

        TracebusApp *app;
        GtkWidget *banner, *banner_title, *banner_detail;
        GtkWidget *category_rows[MAX_CATEGORIES], *category_switches[MAX_CATEGORIES];
        GtkWidget *category_subtitles[MAX_CATEGORIES];
        int apps_category;   /* the "Applications (Perfetto SDK)" row's index, or -1 */
        GtkWidget *custom_switch, *custom_subtitle, *custom_button;
        GHashTable *custom_events;
        GtkWidget *mode, *buffer_mb, *duration_min, *max_size_gb, *max_size_row, *keep;
        GtkWidget *record, *record_hint;
        GtkWidget *stack, *list;
        guint tick_id;
};

/* tracebus-window.c: little builders */
GtkWidget *window_label_new(const char *text, const char *css_class, float xalign);
GtkWidget *window_card_new(void);
void window_banner_hide(TracebusWindow *win);

/* tracebus-window-rows.c */
GtkWidget *window_recordings_pane_new(TracebusWindow *win);
/* The rows of running recordings tick on: a g_timeout callback, user_data the window. */
gboolean window_rows_tick(gpointer user_data);
