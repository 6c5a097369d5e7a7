/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "tracebus-app.h"
#include "tracebus-window.h"

static GtkWindow *new_window(TracebusApp *app) {
        return GTK_WINDOW(tracebus_window_new(app));
}

int main(int argc, char **argv) {
        g_autoptr(TracebusApp) app = NULL;

        tracebus_app_setup_locale();
        app = tracebus_app_new(new_window);
        return g_application_run(G_APPLICATION(app), argc, argv);
}
