/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "tracebus-app.h"

int main(int argc, char **argv) {
        g_autoptr(TracebusApp) app = NULL;

        tracebus_app_setup_locale();
        app = tracebus_app_new();
        return g_application_run(G_APPLICATION(app), argc, argv);
}
