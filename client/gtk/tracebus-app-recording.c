/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the window asks of the app: start a recording (into a new file of the
 * cache, passed to the service as an fd), stop it, save, show or discard it,
 * and stop or detach the recordings when the window closes.
 */
#include <errno.h>
#include <fcntl.h>
#include <gio/gunixfdlist.h>
#include <glib/gi18n.h>
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

#include "tracebus-app-private.h"

/* ---- Start ---- */

char *app_new_trace_path(TracebusApp *app, int *ret_fd, GError **error) {
        g_autoptr(GDateTime) now = g_date_time_new_now_local();
        g_autofree char *stamp = g_date_time_format(now, "%Y%m%d-%H%M%S");

        for (int i = 0; i < 100; i++) {
                g_autofree char *name = i ? g_strdup_printf("trace-%s-%d.pftrace", stamp, i)
                                          : g_strdup_printf("trace-%s.pftrace", stamp);
                char *path = g_build_filename(app->cache_dir, name, NULL);
                int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);

                if (fd >= 0) {
                        *ret_fd = fd;
                        return path;
                }
                if (errno != EEXIST) {
                        int e = errno;
                        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(e), _("Could not create %s: %s"), path,
                                    g_strerror(e));
                        g_free(path);
                        return NULL;
                }
                g_free(path);
        }
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_EXISTS, _("Could not find a free file name in %s"), app->cache_dir);
        return NULL;
}

static void start_failed(TracebusApp *app, TbRecording *r, const GError *error) {
        app_emit_error(app, error, _("Could not start recording."));
        if (r->file_path)
                (void) g_unlink(r->file_path);
        app_remove_recording(app, r);
        app_save_index(app);
}


static void on_start_reply(GObject *source, GAsyncResult *res, gpointer user_data) {
        g_autoptr(CallData) d = user_data;
        g_autoptr(GError) error = NULL;
        g_autoptr(GVariant) reply = g_dbus_proxy_call_with_unix_fd_list_finish(G_DBUS_PROXY(source), NULL, res, &error);
        const char *path;

        if (!reply) {
                start_failed(d->app, d->r, error);
                return;
        }
        g_variant_get_child(reply, 0, "&o", &path);
        d->r->object_path = g_strdup(path);
        if (g_variant_n_children(reply) > 1) {
                g_autofree const char **warnings = NULL;

                g_variant_get_child(reply, 1, "^a&s", &warnings);
                app_show_warnings(d->app, d->r, warnings);
        }
        d->r->started_at_us = g_get_real_time();
        app_save_index(d->app);
        /* Started detached so that it survives the app; bound to us while the window is
         * open, for PropertiesChanged and SessionEnded. */
        if (d->r->detach_key)
                app_attach(d->app, d->r);
        else
                app_bind_session(d->app, d->r, path, TRUE);
}

void tracebus_app_start_recording(TracebusApp *app, const TbRecordSettings *settings, const char *summary,
                                  gboolean keep) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GUnixFDList) fds = g_unix_fd_list_new();
        g_autoptr(TbRecording) r = NULL;
        g_autofree char *config = NULL, *path = NULL, *base = NULL;
        GVariantBuilder opts;
        int fd = -1, idx;

        path = app_new_trace_path(app, &fd, &error);
        if (!path) {
                app_emit_error(app, error, _("Could not start recording."));
                return;
        }
        idx = g_unix_fd_list_append(fds, fd, &error);
        (void) close(fd);
        if (idx < 0) {
                (void) g_unlink(path);
                app_emit_error(app, error, _("Could not start recording."));
                return;
        }
        base = g_path_get_basename(path);
        r = tb_recording_new(base);
        r->state = TB_RECORDING_STARTING;
        r->file_path = g_strdup(path);
        r->summary = g_strdup(summary);
        r->started_at_us = g_get_real_time();
        if (keep) {
                g_autofree char *stem = g_strndup(base, strlen(base) - strlen(".pftrace"));
                r->detach_key = g_strconcat(TRACEBUS_DETACH_KEY_PREFIX, stem + strlen("trace-"), NULL);
        }
        g_list_store_insert(app->recordings, 0, r);

        config = tb_record_settings_to_config(settings);
        g_variant_builder_init(&opts, G_VARIANT_TYPE("a{sv}"));
        g_variant_builder_add(&opts, "{sv}", "Output", g_variant_new_handle(idx));
        if (r->detach_key)
                g_variant_builder_add(&opts, "{sv}", "DetachKey", g_variant_new_string(r->detach_key));
        /* Interactive: the desktop's polkit agent may ask for a password, which can
         * take as long as the person needs. */
        g_dbus_proxy_call_with_unix_fd_list(G_DBUS_PROXY(app->manager), "Start",
                                            g_variant_new("(sa{sv})", config, &opts),
                                            G_DBUS_CALL_FLAGS_ALLOW_INTERACTIVE_AUTHORIZATION, G_MAXINT, fds, NULL,
                                            on_start_reply, call_data_new(app, r));
}

/* ---- Stop ---- */

static void on_stop_reply(GObject *source, GAsyncResult *res, gpointer user_data) {
        g_autoptr(CallData) d = user_data;
        g_autoptr(GError) error = NULL;
        g_autoptr(GVariant) stats = NULL;
        g_autofree char *name = NULL;

        if (tracebus_dbus_manager_call_stop_finish(TRACEBUS_DBUS_MANAGER(source), &stats, res, &error)) {
                app_recording_finished(d->app, d->r, NULL, stats);
                return;
        }
        name = tb_error_get_dbus_name(error);
        if (d->r->state == TB_RECORDING_FINISHED)
                return;
        if (name && (g_str_has_suffix(name, ".NoSuchSession") || g_str_has_suffix(name, ".UnknownObject"))) {
                app_recording_finished(d->app, d->r, NULL, NULL);
                return;
        }
        d->r->state = TB_RECORDING_RECORDING;
        tb_recording_changed(d->r);
        app_emit_error(d->app, error, _("Could not stop the recording."));
}

void tracebus_app_stop_recording(TracebusApp *app, TbRecording *r) {
        if (!r->object_path || r->state == TB_RECORDING_FINISHED)
                return;
        r->state = TB_RECORDING_STOPPING;
        r->user_stopped = TRUE;
        tb_recording_changed(r);
        /* Stop answers once the trace is complete, which may take a while for a large buffer. */
        g_dbus_proxy_call(G_DBUS_PROXY(app->manager), "Stop", g_variant_new("(o)", r->object_path),
                          G_DBUS_CALL_FLAGS_NONE, G_MAXINT, NULL, on_stop_reply, call_data_new(app, r));
}

/* ---- finished recordings ---- */

void tracebus_app_discard_recording(TracebusApp *app, TbRecording *r) {
        g_autoptr(TbRecording) keep = g_object_ref(r);

        if (r->state != TB_RECORDING_FINISHED)
                return;
        if (r->file_path && !r->foreign && g_unlink(r->file_path) < 0 && errno != ENOENT)
                g_warning("Could not delete %s: %s", r->file_path, g_strerror(errno));
        app_remove_recording(app, r);
        app_save_index(app);
}

static void on_copied(GObject *source, GAsyncResult *res, gpointer user_data) {
        g_autoptr(CallData) d = user_data;
        g_autoptr(GError) error = NULL;

        if (!g_file_copy_finish(G_FILE(source), res, &error)) {
                app_emit_error(d->app, error, _("Could not save the trace."));
                g_clear_pointer(&d->r->saved_path, g_free);
        } else
                app_save_index(d->app);
        tb_recording_changed(d->r);
}

void tracebus_app_save_recording(TracebusApp *app, TbRecording *r, GFile *dest) {
        g_autoptr(GFile) src = NULL;
        GFile *dest_arg = dest;

        if (!r->file_path)
                return;
        src = g_file_new_for_path(r->file_path);
        g_free(r->saved_path);
        r->saved_path = g_file_get_path(dest_arg);
        /* The file chooser already asked before replacing. */
        g_file_copy_async(src, dest_arg, G_FILE_COPY_OVERWRITE | G_FILE_COPY_TARGET_DEFAULT_PERMS, G_PRIORITY_DEFAULT,
                          NULL, NULL, NULL, on_copied, call_data_new(app, r));
}

static void on_show_items(GObject *source, GAsyncResult *res, gpointer user_data) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GVariant) reply = g_dbus_connection_call_finish(G_DBUS_CONNECTION(source), res, &error);
        g_autofree char *dir_uri = user_data;

        if (!reply)
                /* No FileManager1: at least open the folder. */
                g_app_info_launch_default_for_uri_async(dir_uri, NULL, NULL, NULL, NULL);
}

void tracebus_app_show_in_files(TracebusApp *app, TbRecording *r) {
        const char *path = r->saved_path ? r->saved_path : r->file_path;
        g_autoptr(GFile) file = NULL, dir = NULL;
        g_autofree char *uri = NULL;
        GDBusConnection *session;
        const char *uris[2] = { NULL, NULL };

        if (!path)
                return;
        file = g_file_new_for_path(path);
        dir = g_file_get_parent(file);
        uri = g_file_get_uri(file);
        uris[0] = uri;
        session = g_application_get_dbus_connection(G_APPLICATION(app));
        if (!session) {
                g_autofree char *dir_uri = g_file_get_uri(dir);
                g_app_info_launch_default_for_uri_async(dir_uri, NULL, NULL, NULL, NULL);
                return;
        }
        g_dbus_connection_call(session, "org.freedesktop.FileManager1", "/org/freedesktop/FileManager1",
                               "org.freedesktop.FileManager1", "ShowItems", g_variant_new("(^ass)", uris, ""), NULL,
                               G_DBUS_CALL_FLAGS_NONE, 10000, NULL, on_show_items, g_file_get_uri(dir));
}

/* ---- the window closes ---- */

static void on_closing_call_done(GObject *source, GAsyncResult *res, gpointer user_data) {
        g_autoptr(CallData) d = user_data;
        g_autoptr(GError) error = NULL;
        g_autoptr(GVariant) reply = g_dbus_proxy_call_finish(G_DBUS_PROXY(source), res, &error);

        if (!reply)
                g_warning("While closing: %s", error->message);
        else if (!d->r->detached) {
                g_autoptr(GVariant) stats = g_variant_get_child_value(reply, 0);
                app_recording_finished(d->app, d->r, NULL, stats);
        }
        app_save_index(d->app);
        if (--d->app->closing_calls == 0 && d->app->hooks.window_closed)
                d->app->hooks.window_closed(d->app, d->r->detach_key, d->app->hooks.data);
        g_application_release(G_APPLICATION(d->app));
}

void tracebus_app_window_closing(TracebusApp *app) {
        guint n = g_list_model_get_n_items(G_LIST_MODEL(app->recordings));
        gboolean any_kept = FALSE;

        for (guint i = 0; i < n; i++) {
                g_autoptr(TbRecording) r = g_list_model_get_item(G_LIST_MODEL(app->recordings), i);

                if (!r->ours || !r->object_path || r->state == TB_RECORDING_FINISHED)
                        continue;
                app->closing_calls++;
                g_application_hold(G_APPLICATION(app));
                if (r->detach_key) {
                        /* Kept: it records on, with nobody bound to it. */
                        r->ours = FALSE;
                        r->detached = TRUE;
                        any_kept = TRUE;
                        g_dbus_proxy_call(G_DBUS_PROXY(app->manager), "Detach",
                                          g_variant_new("(os)", r->object_path, r->detach_key), G_DBUS_CALL_FLAGS_NONE,
                                          -1, NULL, on_closing_call_done, call_data_new(app, r));
                } else {
                        r->state = TB_RECORDING_STOPPING;
                        g_dbus_proxy_call(G_DBUS_PROXY(app->manager), "Stop", g_variant_new("(o)", r->object_path),
                                          G_DBUS_CALL_FLAGS_NONE, G_MAXINT, NULL, on_closing_call_done,
                                          call_data_new(app, r));
                }
        }
        /* Stay, without a window, to say when the kept recordings end; a driver only
         * wants them detached. */
        if (any_kept && !app->held && !app->driven) {
                app->held = TRUE;
                g_application_hold(G_APPLICATION(app));
        }
}
