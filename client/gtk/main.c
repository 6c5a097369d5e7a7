/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <glib/gi18n.h>
#include <locale.h>

#include "tracebus-app.h"

int main(int argc, char **argv) {
        g_autoptr(TracebusApp) app = NULL;

        (void) setlocale(LC_ALL, "");
        (void) bindtextdomain(GETTEXT_PACKAGE, LOCALEDIR);
        (void) bind_textdomain_codeset(GETTEXT_PACKAGE, "UTF-8");
        (void) textdomain(GETTEXT_PACKAGE);
        g_set_application_name(_("Tracebus"));

        app = tracebus_app_new();
        return g_application_run(G_APPLICATION(app), argc, argv);
}
