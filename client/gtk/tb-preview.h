/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The trace preview: a window with a finished trace's summary (duration,
 * events, lost, warnings) and plots of its counters (memory, CPU frequency,
 * the processes with the most memory, CPU idle). The trace is read by
 * preview-model.c in a worker thread (GTask): the window shows a spinner
 * meanwhile and never blocks.
 */

#include <gtk/gtk.h>

#include "preview-model.h"
#include "tracebus-app.h"

G_BEGIN_DECLS

/* Opens a preview of the trace at @path (@title: what the trace is, or NULL),
 * transient for @parent. The app's preview_ready hook is told once it is drawn
 * from the trace. */
GtkWindow *tb_preview_window_open(TracebusApp *app, GtkWindow *parent, const char *path, const char *title);
/* The trace's model once read, or NULL while reading (or when it could not be). */
const TbPreview *tb_preview_window_get_model(GtkWindow *win);

G_END_DECLS
