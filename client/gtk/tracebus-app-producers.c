/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The apps built with the Perfetto SDK that are connected to the service's producer socket:
 * Manager.ListProducers (the user's own apps; every user's for an administrator), asked when
 * the window opens or comes to the front, kept in words for the "Applications (Perfetto SDK)"
 * category's row.
 */
#include <glib/gi18n.h>

#include "producers.h"
#include "tracebus-app-private.h"

static void set_text(TracebusApp *app, char *text) {
        g_free(app->producers_text);
        app->producers_text = text;
        app_emit_producers_changed(app);
}

static void on_list_producers(GObject *source, GAsyncResult *res, gpointer user_data) {
        TracebusApp *app = user_data;
        g_autoptr(GVariant) producers = NULL;
        g_autoptr(GError) error = NULL;

        app->producers_pending = FALSE;
        if (!tracebus_dbus_manager_call_list_producers_finish(TRACEBUS_DBUS_MANAGER(source), &producers, res, &error)) {
                g_autofree char *remote = g_dbus_error_get_remote_error(error);

                g_dbus_error_strip_remote_error(error);
                /* An older service has no producer socket to list. */
                if (g_strcmp0(remote, "org.freedesktop.DBus.Error.UnknownMethod") == 0)
                        set_text(app, g_strdup(_("This tracing service does not serve apps built with the Perfetto SDK.")));
                else
                        set_text(app, g_strdup_printf(_("Could not list the connected apps: %s"), error->message));
        } else
                set_text(app, tb_producers_describe(producers));
        g_object_unref(app);
}

void tracebus_app_refresh_producers(TracebusApp *app) {
        /* One question at a time: the answer to it is as fresh as a second one's. */
        if (!app->manager || app->producers_pending)
                return;
        app->producers_pending = TRUE;
        tracebus_dbus_manager_call_list_producers(app->manager, NULL, on_list_producers, g_object_ref(app));
}

const char *tracebus_app_get_producers_text(TracebusApp *app) {
        return app->producers_text;
}
