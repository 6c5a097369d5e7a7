/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tracebus-gtk-test: the app with its test driver, for tests/test-gtk.c. Built
 * only with tests enabled and never installed: the installed tracebus-gtk
 * carries no test code and no test options.
 */
#include "tracebus-app.h"
#include "tracebus-window.h"
#include "tracebus-test-driver.h"

static void test_options_clear(TracebusTestOptions *opt) {
        g_free(opt->save_to);
        g_free(opt->screenshot);
        g_strfreev(opt->categories);
        g_free(opt->custom_search);
        g_free(opt->dialog_screenshot);
        g_free(opt->open_trace);
        g_free(opt->preview_screenshot);
        g_free(opt->expect_app);
}

static void add_test_options(TracebusApp *app, TracebusTestOptions *opt) {
        const GOptionEntry entries[] = {
                { "test-record", 0, 0, G_OPTION_ARG_DOUBLE, &opt->record_seconds,
                  "Press Record, wait SECONDS, stop and save", "SECONDS" },
                { "save-to", 0, 0, G_OPTION_ARG_FILENAME, &opt->save_to, "Where Save As saves", "PATH" },
                { "screenshot", 0, 0, G_OPTION_ARG_FILENAME, &opt->screenshot,
                  "Save a PNG of the window while recording", "PATH" },
                { "test-categories", 0, 0, G_OPTION_ARG_STRING_ARRAY, &opt->categories,
                  "Switch on this category (repeatable)", "ID" },
                { "test-keep", 0, 0, G_OPTION_ARG_NONE, &opt->keep,
                  "Keep recording after closing the window, then close it", NULL },
                { "test-reattach-stop", 0, 0, G_OPTION_ARG_NONE, &opt->reattach_stop,
                  "Stop and save the recording kept from before", NULL },
                { "test-expect-error", 0, 0, G_OPTION_ARG_NONE, &opt->expect_error,
                  "An error message in the window ends the test successfully", NULL },
                { "test-custom-events", 0, 0, G_OPTION_ARG_STRING, &opt->custom_search,
                  "Search the custom events for TEXT and tick the first", "TEXT" },
                { "dialog-screenshot", 0, 0, G_OPTION_ARG_FILENAME, &opt->dialog_screenshot,
                  "Save a PNG of the custom events dialog", "PATH" },
                { "test-preview", 0, 0, G_OPTION_ARG_NONE, &opt->preview,
                  "Once the recording finished (and is saved), report its preview", NULL },
                { "test-open", 0, 0, G_OPTION_ARG_FILENAME, &opt->open_trace,
                  "Open this trace with Open Trace… and report its preview", "PATH" },
                { "preview-screenshot", 0, 0, G_OPTION_ARG_FILENAME, &opt->preview_screenshot,
                  "Save a PNG of the preview window", "PATH" },
                { "test-snapshot", 0, 0, G_OPTION_ARG_NONE, &opt->snapshot,
                  "Save a snapshot of the recording once, before stopping it", NULL },
                { "test-expect-app", 0, 0, G_OPTION_ARG_STRING, &opt->expect_app,
                  "First wait until the Applications (Perfetto SDK) row lists an app named NAME", "NAME" },
                { NULL },
        };

        g_application_add_main_option_entries(G_APPLICATION(app), entries);
}

static GtkWindow *new_window(TracebusApp *app) {
        return GTK_WINDOW(tracebus_window_new(app));
}

int main(int argc, char **argv) {
        g_autoptr(TracebusApp) app = NULL;
        TracebusTestOptions opt = { 0 };
        int status;

        tracebus_app_setup_locale();
        app = tracebus_app_new(new_window);
        /* One instance per test run, and no session bus to find it on. */
        g_application_set_flags(G_APPLICATION(app),
                                g_application_get_flags(G_APPLICATION(app)) | G_APPLICATION_NON_UNIQUE);
        add_test_options(app, &opt);
        tracebus_test_driver_install(app, &opt);
        status = g_application_run(G_APPLICATION(app), argc, argv);
        test_options_clear(&opt);
        return status ? status : tracebus_test_driver_get_exit_status();
}
