/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The test driver of tracebus-gtk-test (never in the installed app): clicks
 * through the window's real widgets as a person would, waits, and reports
 * "TEST: ok: ..." or "TEST: failed: ..." on stdout with the exit status. It
 * follows the app through its hooks (TracebusAppHooks). Used by
 * tests/test-gtk.c under Xvfb.
 */

#include "tracebus-app.h"

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
        gboolean preview;         /* --test-preview: once finished (and saved), report the preview */
        char *open_trace;         /* --test-open: Open Trace… this file, report its preview */
        char *preview_screenshot; /* --preview-screenshot: PNG of the preview window */
        gboolean snapshot;        /* --test-snapshot: Save Snapshot once while recording */
        char *expect_app;         /* --test-expect-app: first wait until the apps row lists NAME */
} TracebusTestOptions;

/* Before g_application_run(); @opt must outlive the run. */
void tracebus_test_driver_install(TracebusApp *app, const TracebusTestOptions *opt);
/* 0 if the test passed, else which step failed (see tracebus-test-driver.c). */
int tracebus_test_driver_get_exit_status(void);
