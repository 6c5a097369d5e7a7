/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The test mode (--test-record and friends, see tracebus-app.h): clicks
 * through the window's real widgets as a person would, waits, and reports
 * "TEST: ok: ..." or "TEST: failed: ..." on stdout with the exit status.
 * Used by tests/test-gtk.c under Xvfb; inert outside the test mode.
 */

#include "tracebus-app.h"
#include "tracebus-window.h"

void tracebus_test_driver_start(TracebusApp *app, TracebusWindow *win);
/* The Save As chooser is about to show: pick --save-to in it, then accept, as a person would. */
void tracebus_test_driver_file_chooser_opening(TracebusApp *app, GtkFileChooser *chooser);
