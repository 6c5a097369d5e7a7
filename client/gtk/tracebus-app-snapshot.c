/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Save Snapshot on a running recording. Manager.Clone writes what the
 * session holds so far into a new file of the app's cache (opened here, passed as
 * Output); the snapshot then shows as a finished recording of its own, with Preview,
 * Save As and Show in Files, while the recording goes on.
 */
#include <gio/gunixfdlist.h>
#include <glib/gi18n.h>
#include <glib/gstdio.h>
#include <unistd.h>

#include "tracebus-app-private.h"

static void on_clone_reply(GObject *source, GAsyncResult *res, gpointer user_data) {
        g_autoptr(CallData) d = user_data;
        g_autoptr(GError) error = NULL;
        g_autoptr(GVariant) reply = g_dbus_proxy_call_finish(G_DBUS_PROXY(source), res, &error);
        g_autoptr(GVariant) result = NULL;

        if (!reply) {
                (void) g_unlink(d->r->file_path);
                app_remove_recording(d->app, d->r);
                app_emit_error(d->app, error, _("Could not save a snapshot of the recording."));
                return;
        }
        result = g_variant_get_child_value(reply, 0);
        tb_recording_finish(d->r, "snapshot", result);
        tb_recording_changed(d->r);
        app_save_index(d->app);
}

void tracebus_app_snapshot_recording(TracebusApp *app, TbRecording *r) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GUnixFDList) fds = g_unix_fd_list_new();
        g_autoptr(TbRecording) snap = NULL;
        g_autofree char *path = NULL, *base = NULL;
        GVariantBuilder opts;
        int fd = -1, idx;

        if (!r->object_path || r->state != TB_RECORDING_RECORDING)
                return;
        path = app_new_trace_path(app, &fd, &error);
        idx = path ? g_unix_fd_list_append(fds, fd, &error) : -1;
        if (fd >= 0)
                (void) close(fd);
        if (idx < 0) {
                if (path)
                        (void) g_unlink(path);
                app_emit_error(app, error, _("Could not save a snapshot of the recording."));
                return;
        }
        base = g_path_get_basename(path);
        snap = tb_recording_new(base);
        snap->state = TB_RECORDING_STOPPING;   /* "finishing": the file is being written */
        snap->file_path = g_strdup(path);
        snap->summary = g_strdup_printf(_("Snapshot: %s"), r->summary ? r->summary : "");
        snap->started_at_us = r->started_at_us;
        g_list_store_insert(app->recordings, 0, snap);

        g_variant_builder_init(&opts, G_VARIANT_TYPE("a{sv}"));
        g_variant_builder_add(&opts, "{sv}", "Output", g_variant_new_handle(idx));
        g_dbus_proxy_call_with_unix_fd_list(G_DBUS_PROXY(app->manager), "Clone",
                                            g_variant_new("(oa{sv})", r->object_path, &opts),
                                            G_DBUS_CALL_FLAGS_NONE, G_MAXINT, fds, NULL, on_clone_reply,
                                            call_data_new(app, snap));
}
