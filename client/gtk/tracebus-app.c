/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <gio/gunixfdlist.h>
#include <glib/gi18n.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "tracebus-app.h"
#include "tracebus-test-driver.h"
#include "tracebus-window.h"

#define BUS_NAME "org.tracebus.Tracebus1"
#define MANAGER_PATH "/org/tracebus/Tracebus1"
#define SESSION_IFACE "org.tracebus.Tracebus1.Session"
#define POLL_INTERVAL_S 1

struct _TracebusApp {
        GtkApplication parent_instance;

        GDBusConnection *bus;
        TracebusDbusManager *manager;
        GListStore *recordings;
        char **available_events;
        gboolean events_done, kept_done;
        guint pending_kept; /* IsDetached/Attach answers still to come at startup */
        char *cache_dir;    /* $XDG_CACHE_HOME/tracebus */
        char *index_path;
        guint poll_id;
        gboolean held;      /* held for recordings kept after the window closed */
        guint closing_calls;

        TracebusTestOptions test;
        gboolean test_mode;
        int exit_status;
};

enum { SIGNAL_ERROR, SIGNAL_READY, N_SIGNALS };
static guint signals[N_SIGNALS];

G_DEFINE_FINAL_TYPE(TracebusApp, tracebus_app, GTK_TYPE_APPLICATION)

/* ---- small helpers ---- */

static void emit_error(TracebusApp *app, const GError *error, const char *what_failed) {
        g_auto(TbMessage) m = { 0 };

        tb_message_from_error(error, what_failed, &m);
        g_printerr("tracebus-gtk: %s %s (%s)\n", m.title, m.detail ? m.detail : "", error ? error->message : "");
        g_signal_emit(app, signals[SIGNAL_ERROR], 0, m.title, m.detail);
}

static void save_index(TracebusApp *app) {
        g_autoptr(GError) error = NULL;

        if (!tb_recordings_save(G_LIST_MODEL(app->recordings), app->index_path, &error))
                g_warning("Could not save the list of recordings in %s: %s", app->index_path, error->message);
}

static TbRecording *find_by_path(TracebusApp *app, const char *object_path) {
        guint n = g_list_model_get_n_items(G_LIST_MODEL(app->recordings));

        for (guint i = 0; i < n; i++) {
                g_autoptr(TbRecording) r = g_list_model_get_item(G_LIST_MODEL(app->recordings), i);
                if (g_strcmp0(r->object_path, object_path) == 0)
                        return r; /* the store keeps it alive */
        }
        return NULL;
}

static void remove_recording(TracebusApp *app, TbRecording *r) {
        guint pos;

        if (g_list_store_find(app->recordings, r, &pos))
                g_list_store_remove(app->recordings, pos);
}

static GtkWindow *main_window(TracebusApp *app) {
        return gtk_application_get_active_window(GTK_APPLICATION(app));
}

static void check_ready(TracebusApp *app) {
        if (tracebus_app_is_ready(app))
                g_signal_emit(app, signals[SIGNAL_READY], 0);
}

/* ---- notifications ---- */

/* A trace finished: say so when nobody is looking at the window. Needs a session
 * bus and a notification server; without them it is skipped. */
static void notify_finished(TracebusApp *app, TbRecording *r) {
        GtkWindow *win = main_window(app);
        g_autoptr(GNotification) n = NULL;
        g_autofree char *size = NULL, *elapsed = NULL, *body = NULL;

        if (win && gtk_window_is_active(win))
                return;
        if (!g_application_get_dbus_connection(G_APPLICATION(app)))
                return;
        size = tb_format_bytes(r->bytes);
        elapsed = tb_format_elapsed(tb_recording_elapsed_seconds(r));
        /* TRANSLATORS: "Scheduling, Interrupts — 1:02, 12.3 MB. Reached its time limit." */
        body = g_strdup_printf(_("%s — %s, %s. %s."), r->summary ? r->summary : _("Trace"), elapsed, size,
                               tb_end_reason_to_string(r->reason));
        n = g_notification_new(_("Trace finished"));
        g_notification_set_body(n, body);
        g_notification_set_default_action(n, "app.show");
        g_notification_add_button(n, _("Save As…"), "app.show");
        g_application_send_notification(G_APPLICATION(app), "trace-finished", n);
}

static void recording_finished(TracebusApp *app, TbRecording *r, const char *reason, GVariant *stats) {
        gboolean was = r->state == TB_RECORDING_FINISHED;

        tb_recording_finish(r, reason, stats);
        tb_recording_changed(r);
        save_index(app);
        if (!was)
                notify_finished(app, r);
}

/* ---- session proxies ---- */

static void on_properties_changed(GDBusProxy *proxy, GVariant *changed, GStrv invalidated, gpointer user_data) {
        TbRecording *r = TB_RECORDING(user_data);

        tb_recording_update_from_proxy(r);
        tb_recording_changed(r);
}

typedef struct {
        TracebusApp *app;
        TbRecording *r;
} CallData;

static CallData *call_data_new(TracebusApp *app, TbRecording *r) {
        CallData *d = g_new0(CallData, 1);
        d->app = g_object_ref(app);
        d->r = r ? g_object_ref(r) : NULL;
        return d;
}

static void call_data_free(CallData *d) {
        g_object_unref(d->app);
        g_clear_object(&d->r);
        g_free(d);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(CallData, call_data_free)

static void on_session_proxy(GObject *source, GAsyncResult *res, gpointer user_data) {
        g_autoptr(CallData) d = user_data;
        g_autoptr(GError) error = NULL;
        TracebusDbusSession *proxy = tracebus_dbus_session_proxy_new_finish(res, &error);

        if (!proxy) {
                g_warning("No proxy for %s: %s", d->r->object_path, error->message);
                return;
        }
        if (d->r->state == TB_RECORDING_FINISHED) {
                g_object_unref(proxy);
                return;
        }
        g_clear_object(&d->r->proxy);
        d->r->proxy = proxy;
        g_signal_connect_object(proxy, "g-properties-changed", G_CALLBACK(on_properties_changed), d->r, 0);
        /* A session of another program may belong to another user (root's view). */
        if (d->r->foreign && tracebus_dbus_session_get_owner_uid(proxy) != getuid()) {
                remove_recording(d->app, d->r);
                return;
        }
        tb_recording_update_from_proxy(d->r);
        tb_recording_changed(d->r);
}

static void bind_session(TracebusApp *app, TbRecording *r, const char *object_path, gboolean ours) {
        g_free(r->object_path);
        r->object_path = g_strdup(object_path);
        r->ours = ours;
        if (r->state == TB_RECORDING_STARTING || r->state == TB_RECORDING_FINISHED)
                r->state = TB_RECORDING_RECORDING;
        tb_recording_changed(r);
        tracebus_dbus_session_proxy_new(app->bus, G_DBUS_PROXY_FLAGS_NONE, BUS_NAME, object_path, NULL,
                                        on_session_proxy, call_data_new(app, r));
}

/* ---- polling what sends us no signals (detached and foreign sessions) ---- */

static void on_poll_reply(GObject *source, GAsyncResult *res, gpointer user_data) {
        g_autoptr(CallData) d = user_data;
        g_autoptr(GError) error = NULL;
        g_autoptr(GVariant) reply = g_dbus_connection_call_finish(G_DBUS_CONNECTION(source), res, &error);
        g_autoptr(GVariant) props = NULL;
        GVariantIter iter;
        const char *key;
        GVariant *value;

        if (!d->r->proxy || d->r->state == TB_RECORDING_FINISHED)
                return;
        if (!reply) {
                /* The object is gone: the session ended while nobody was bound to it. */
                if (d->r->foreign && !d->r->file_path)
                        remove_recording(d->app, d->r);
                else
                        recording_finished(d->app, d->r, NULL, NULL);
                return;
        }
        props = g_variant_get_child_value(reply, 0);
        g_variant_iter_init(&iter, props);
        while (g_variant_iter_loop(&iter, "{&sv}", &key, &value))
                g_dbus_proxy_set_cached_property(G_DBUS_PROXY(d->r->proxy), key, value);
        tb_recording_update_from_proxy(d->r);
        tb_recording_changed(d->r);
}

static gboolean on_poll(gpointer user_data) {
        TracebusApp *app = user_data;
        guint n = g_list_model_get_n_items(G_LIST_MODEL(app->recordings));
        gboolean any_kept = FALSE;

        for (guint i = 0; i < n; i++) {
                g_autoptr(TbRecording) r = g_list_model_get_item(G_LIST_MODEL(app->recordings), i);

                if (r->state == TB_RECORDING_FINISHED || !r->object_path)
                        continue;
                any_kept |= r->detached;
                if (r->ours || !r->proxy)
                        continue;
                g_dbus_connection_call(app->bus, BUS_NAME, r->object_path, "org.freedesktop.DBus.Properties", "GetAll",
                                       g_variant_new("(s)", SESSION_IFACE), G_VARIANT_TYPE("(a{sv})"),
                                       G_DBUS_CALL_FLAGS_NO_AUTO_START, 5000, NULL, on_poll_reply,
                                       call_data_new(app, r));
        }
        /* With no window, the app only stays to tell when the kept recordings end. */
        if (app->held && !any_kept && !main_window(app)) {
                app->held = FALSE;
                g_application_release(G_APPLICATION(app));
        }
        return G_SOURCE_CONTINUE;
}

/* ---- Start ---- */

static char *new_trace_path(TracebusApp *app, int *ret_fd, GError **error) {
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
        emit_error(app, error, _("Could not start recording."));
        if (r->file_path)
                (void) g_unlink(r->file_path);
        remove_recording(app, r);
        save_index(app);
}

static void on_attach_reply(GObject *source, GAsyncResult *res, gpointer user_data) {
        g_autoptr(CallData) d = user_data;
        g_autoptr(GError) error = NULL;
        g_autofree char *path = NULL;

        if (!tracebus_dbus_manager_call_attach_finish(TRACEBUS_DBUS_MANAGER(source), &path, res, &error)) {
                /* Still detached: it records on; the poll tells when it ends. */
                g_warning("Could not re-attach the recording kept under %s: %s", d->r->detach_key, error->message);
                d->r->detached = TRUE;
                if (d->r->object_path && !d->r->proxy)
                        bind_session(d->app, d->r, d->r->object_path, FALSE);
                return;
        }
        d->r->detached = FALSE;
        bind_session(d->app, d->r, path, TRUE);
}

static void attach(TracebusApp *app, TbRecording *r) {
        tracebus_dbus_manager_call_attach(app->manager, r->detach_key, NULL, on_attach_reply, call_data_new(app, r));
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
        g_variant_get(reply, "(&o)", &path);
        d->r->object_path = g_strdup(path);
        d->r->started_at_us = g_get_real_time();
        save_index(d->app);
        /* Started detached so that it survives the app; bound to us while the window is
         * open, for PropertiesChanged and SessionEnded. */
        if (d->r->detach_key)
                attach(d->app, d->r);
        else
                bind_session(d->app, d->r, path, TRUE);
}

void tracebus_app_start_recording(TracebusApp *app, const TbRecordSettings *settings, const char *summary,
                                  gboolean keep) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GUnixFDList) fds = g_unix_fd_list_new();
        g_autoptr(TbRecording) r = NULL;
        g_autofree char *config = NULL, *path = NULL, *base = NULL;
        GVariantBuilder opts;
        int fd = -1, idx;

        path = new_trace_path(app, &fd, &error);
        if (!path) {
                emit_error(app, error, _("Could not start recording."));
                return;
        }
        idx = g_unix_fd_list_append(fds, fd, &error);
        (void) close(fd);
        if (idx < 0) {
                (void) g_unlink(path);
                emit_error(app, error, _("Could not start recording."));
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
                recording_finished(d->app, d->r, NULL, stats);
                return;
        }
        name = tb_error_get_dbus_name(error);
        if (d->r->state == TB_RECORDING_FINISHED)
                return;
        if (name && (g_str_has_suffix(name, ".NoSuchSession") || g_str_has_suffix(name, ".UnknownObject"))) {
                recording_finished(d->app, d->r, NULL, NULL);
                return;
        }
        d->r->state = TB_RECORDING_RECORDING;
        tb_recording_changed(d->r);
        emit_error(d->app, error, _("Could not stop the recording."));
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

static void on_session_ended(TracebusDbusManager *manager, const char *path, const char *reason, GVariant *stats,
                             gpointer user_data) {
        TracebusApp *app = user_data;
        TbRecording *r = find_by_path(app, path);

        if (r)
                recording_finished(app, r, reason, stats);
}

/* ---- finished recordings ---- */

void tracebus_app_discard_recording(TracebusApp *app, TbRecording *r) {
        g_autoptr(TbRecording) keep = g_object_ref(r);

        if (r->state != TB_RECORDING_FINISHED)
                return;
        if (r->file_path && !r->foreign && g_unlink(r->file_path) < 0 && errno != ENOENT)
                g_warning("Could not delete %s: %s", r->file_path, g_strerror(errno));
        remove_recording(app, r);
        save_index(app);
}

static void on_copied(GObject *source, GAsyncResult *res, gpointer user_data) {
        g_autoptr(CallData) d = user_data;
        g_autoptr(GError) error = NULL;

        if (!g_file_copy_finish(G_FILE(source), res, &error)) {
                emit_error(d->app, error, _("Could not save the trace."));
                g_clear_pointer(&d->r->saved_path, g_free);
        } else
                save_index(d->app);
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
                recording_finished(d->app, d->r, NULL, stats);
        }
        save_index(d->app);
        if (--d->app->closing_calls == 0 && d->app->test_mode && d->app->test.keep)
                tracebus_app_test_finish(d->app, 0, "detached %s", d->r->detach_key ? d->r->detach_key : "");
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
        /* Stay, without a window, to say when the kept recordings end; the test only
         * wants them detached. */
        if (any_kept && !app->held && !app->test_mode) {
                app->held = TRUE;
                g_application_hold(G_APPLICATION(app));
        }
}

/* ---- startup: events, kept sessions, other sessions ---- */

static void kept_step_done(TracebusApp *app) {
        if (app->pending_kept > 0 && --app->pending_kept == 0) {
                app->kept_done = TRUE;
                save_index(app);
                check_ready(app);
        }
}

static void on_kept_attach(GObject *source, GAsyncResult *res, gpointer user_data) {
        g_autoptr(CallData) d = user_data;
        g_autoptr(GError) error = NULL;
        g_autofree char *path = NULL;

        if (tracebus_dbus_manager_call_attach_finish(TRACEBUS_DBUS_MANAGER(source), &path, res, &error)) {
                d->r->detached = FALSE;
                bind_session(d->app, d->r, path, TRUE);
        } else {
                g_warning("Could not re-attach %s: %s", d->r->detach_key, error->message);
                recording_finished(d->app, d->r, NULL, NULL);
        }
        kept_step_done(d->app);
}

static void on_kept_is_detached(GObject *source, GAsyncResult *res, gpointer user_data) {
        g_autoptr(CallData) d = user_data;
        g_autoptr(GError) error = NULL;
        gboolean detached = FALSE;

        if (!tracebus_dbus_manager_call_is_detached_finish(TRACEBUS_DBUS_MANAGER(source), &detached, res, &error))
                g_warning("IsDetached(%s): %s", d->r->detach_key, error->message);
        if (detached) {
                /* Ours again: it was kept recording while the app was away. */
                tracebus_dbus_manager_call_attach(d->app->manager, d->r->detach_key, NULL, on_kept_attach,
                                                  call_data_new(d->app, d->r));
                return;
        }
        /* It ended while the app was away; its file is complete. */
        d->r->state = TB_RECORDING_STOPPING;
        recording_finished(d->app, d->r, d->r->reason, NULL);
        kept_step_done(d->app);
}

static void on_list_sessions(GObject *source, GAsyncResult *res, gpointer user_data) {
        TracebusApp *app = user_data;
        g_autoptr(GError) error = NULL;
        g_auto(GStrv) paths = NULL;

        if (!tracebus_dbus_manager_call_list_sessions_finish(TRACEBUS_DBUS_MANAGER(source), &paths, res, &error)) {
                g_warning("ListSessions: %s", error->message);
                g_object_unref(app);
                return;
        }
        for (char **p = paths; *p; p++) {
                g_autoptr(TbRecording) r = NULL;

                if (find_by_path(app, *p))
                        continue;
                r = tb_recording_new(*p);
                r->foreign = TRUE;
                r->summary = g_strdup(_("Started by another program"));
                g_list_store_append(app->recordings, r);
                bind_session(app, r, *p, FALSE);
        }
        g_object_unref(app);
}

static void on_list_events(GObject *source, GAsyncResult *res, gpointer user_data) {
        TracebusApp *app = user_data;
        g_autoptr(GError) error = NULL;

        if (!tracebus_dbus_manager_call_list_events_finish(TRACEBUS_DBUS_MANAGER(source), &app->available_events, res,
                                                           &error)) {
                emit_error(app, error, _("Could not ask the tracing service which events this kernel offers."));
                app->available_events = NULL;
        }
        app->events_done = TRUE;
        check_ready(app);
        g_object_unref(app);
}

static void find_kept_recordings(TracebusApp *app) {
        guint n = g_list_model_get_n_items(G_LIST_MODEL(app->recordings));

        app->pending_kept = 1; /* until the loop is done */
        for (guint i = 0; i < n; i++) {
                g_autoptr(TbRecording) r = g_list_model_get_item(G_LIST_MODEL(app->recordings), i);

                if (r->state == TB_RECORDING_FINISHED || !r->detach_key)
                        continue;
                app->pending_kept++;
                tracebus_dbus_manager_call_is_detached(app->manager, r->detach_key, NULL, on_kept_is_detached,
                                                       call_data_new(app, r));
        }
        kept_step_done(app);
}

static void on_manager_proxy(GObject *source, GAsyncResult *res, gpointer user_data) {
        TracebusApp *app = user_data;
        g_autoptr(GError) error = NULL;

        app->manager = tracebus_dbus_manager_proxy_new_finish(res, &error);
        if (!app->manager) {
                emit_error(app, error, _("Could not reach the tracing service."));
                app->events_done = app->kept_done = TRUE;
                check_ready(app);
                g_object_unref(app);
                return;
        }
        g_dbus_proxy_set_default_timeout(G_DBUS_PROXY(app->manager), 30000);
        g_signal_connect_object(app->manager, "session-ended", G_CALLBACK(on_session_ended), app, 0);
        find_kept_recordings(app);
        tracebus_dbus_manager_call_list_events(app->manager, "", NULL, on_list_events, g_object_ref(app));
        tracebus_dbus_manager_call_list_sessions(app->manager, NULL, on_list_sessions, g_object_ref(app));
        app->poll_id = g_timeout_add_seconds(POLL_INTERVAL_S, on_poll, app);
        g_object_unref(app);
}

static void on_system_bus(GObject *source, GAsyncResult *res, gpointer user_data) {
        TracebusApp *app = user_data;
        g_autoptr(GError) error = NULL;

        app->bus = g_bus_get_finish(res, &error);
        if (!app->bus) {
                emit_error(app, error, _("Could not connect to the system bus."));
                app->events_done = app->kept_done = TRUE;
                check_ready(app);
                g_object_unref(app);
                return;
        }
        /* The Manager has no properties; its signal comes from its owner. */
        tracebus_dbus_manager_proxy_new(app->bus, G_DBUS_PROXY_FLAGS_DO_NOT_LOAD_PROPERTIES, BUS_NAME, MANAGER_PATH,
                                        NULL, on_manager_proxy, app);
}

static void load_recordings(TracebusApp *app) {
        g_autoptr(GPtrArray) loaded = NULL;

        app->cache_dir = g_build_filename(g_get_user_cache_dir(), "tracebus", NULL);
        if (g_mkdir_with_parents(app->cache_dir, 0700) < 0)
                g_warning("Could not create %s: %s", app->cache_dir, g_strerror(errno));
        app->index_path = g_build_filename(app->cache_dir, "recordings.ini", NULL);
        loaded = tb_recordings_load(app->index_path);
        /* The index is written newest first. */
        for (guint i = 0; i < loaded->len; i++)
                g_list_store_append(app->recordings, g_ptr_array_index(loaded, i));
}

/* ---- GApplication ---- */

static void action_show(GSimpleAction *action, GVariant *param, gpointer user_data) {
        g_application_activate(G_APPLICATION(user_data));
}

static void action_quit(GSimpleAction *action, GVariant *param, gpointer user_data) {
        TracebusApp *app = user_data;
        GtkWindow *win = main_window(app);

        if (win)
                gtk_window_close(win);
        if (app->held) {
                app->held = FALSE;
                g_application_release(G_APPLICATION(app));
        }
}

static void action_about(GSimpleAction *action, GVariant *param, gpointer user_data) {
        const char *authors[] = { "The tracebus authors", NULL };

        gtk_show_about_dialog(main_window(user_data), "program-name", _("Tracebus"), "logo-icon-name", TRACEBUS_APP_ID,
                              "version", PACKAGE_VERSION, "comments",
                              _("Record what the kernel does, and open it in Perfetto"), "license-type",
                              GTK_LICENSE_LGPL_2_1, "authors", authors, NULL);
}

static const GActionEntry app_actions[] = {
        { .name = "show", .activate = action_show },
        { .name = "quit", .activate = action_quit },
        { .name = "about", .activate = action_about },
};

static void tracebus_app_startup(GApplication *gapp) {
        TracebusApp *app = TRACEBUS_APP(gapp);
        const char *quit_accels[] = { "<Control>q", NULL };

        G_APPLICATION_CLASS(tracebus_app_parent_class)->startup(gapp);
        g_action_map_add_action_entries(G_ACTION_MAP(app), app_actions, G_N_ELEMENTS(app_actions), app);
        gtk_application_set_accels_for_action(GTK_APPLICATION(app), "app.quit", quit_accels);
        gtk_window_set_default_icon_name(TRACEBUS_APP_ID);
        load_recordings(app);
        g_bus_get(G_BUS_TYPE_SYSTEM, NULL, on_system_bus, g_object_ref(app));
}

static void reattach_detached(TracebusApp *app) {
        guint n = g_list_model_get_n_items(G_LIST_MODEL(app->recordings));

        for (guint i = 0; i < n; i++) {
                g_autoptr(TbRecording) r = g_list_model_get_item(G_LIST_MODEL(app->recordings), i);
                if (r->detached && r->detach_key && r->state == TB_RECORDING_RECORDING && app->manager)
                        attach(app, r);
        }
}

static void tracebus_app_activate(GApplication *gapp) {
        TracebusApp *app = TRACEBUS_APP(gapp);
        GtkWindow *win = main_window(app);

        if (!win) {
                win = GTK_WINDOW(tracebus_window_new(app));
                reattach_detached(app);
                if (app->test_mode)
                        tracebus_test_driver_start(app, TRACEBUS_WINDOW(win));
        }
        gtk_window_present(win);
}

static void tracebus_app_shutdown(GApplication *gapp) {
        TracebusApp *app = TRACEBUS_APP(gapp);

        g_clear_handle_id(&app->poll_id, g_source_remove);
        if (app->recordings)
                save_index(app);
        G_APPLICATION_CLASS(tracebus_app_parent_class)->shutdown(gapp);
}

static int tracebus_app_handle_local_options(GApplication *gapp, GVariantDict *options) {
        TracebusApp *app = TRACEBUS_APP(gapp);

        app->test_mode = app->test.record_seconds > 0 || app->test.reattach_stop || app->test.keep;
        if (app->test_mode) {
                /* One instance per test run, and no session bus to find it on. */
                g_application_set_flags(gapp, g_application_get_flags(gapp) | G_APPLICATION_NON_UNIQUE);
        }
        return -1;
}

static void tracebus_app_finalize(GObject *object) {
        TracebusApp *app = TRACEBUS_APP(object);

        g_clear_object(&app->manager);
        g_clear_object(&app->bus);
        g_clear_object(&app->recordings);
        g_strfreev(app->available_events);
        g_free(app->cache_dir);
        g_free(app->index_path);
        g_free(app->test.save_to);
        g_free(app->test.screenshot);
        g_strfreev(app->test.categories);
        g_free(app->test.custom_search);
        g_free(app->test.dialog_screenshot);
        G_OBJECT_CLASS(tracebus_app_parent_class)->finalize(object);
}

static void tracebus_app_class_init(TracebusAppClass *klass) {
        GApplicationClass *gapp_class = G_APPLICATION_CLASS(klass);

        G_OBJECT_CLASS(klass)->finalize = tracebus_app_finalize;
        gapp_class->startup = tracebus_app_startup;
        gapp_class->activate = tracebus_app_activate;
        gapp_class->shutdown = tracebus_app_shutdown;
        gapp_class->handle_local_options = tracebus_app_handle_local_options;

        /* error(title, detail): something the window should say. */
        signals[SIGNAL_ERROR] = g_signal_new("error", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                                             G_TYPE_NONE, 2, G_TYPE_STRING, G_TYPE_STRING);
        signals[SIGNAL_READY] = g_signal_new("ready", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                                             G_TYPE_NONE, 0);
}

static void tracebus_app_init(TracebusApp *app) {
        const GOptionEntry entries[] = {
                { "test-record", 0, 0, G_OPTION_ARG_DOUBLE, &app->test.record_seconds,
                  "Test mode: press Record, wait SECONDS, stop and save", "SECONDS" },
                { "save-to", 0, 0, G_OPTION_ARG_FILENAME, &app->test.save_to, "Test mode: where Save As saves",
                  "PATH" },
                { "screenshot", 0, 0, G_OPTION_ARG_FILENAME, &app->test.screenshot,
                  "Test mode: save a PNG of the window while recording", "PATH" },
                { "test-categories", 0, 0, G_OPTION_ARG_STRING_ARRAY, &app->test.categories,
                  "Test mode: switch on this category (repeatable)", "ID" },
                { "test-keep", 0, 0, G_OPTION_ARG_NONE, &app->test.keep,
                  "Test mode: keep recording after closing the window, then close it", NULL },
                { "test-reattach-stop", 0, 0, G_OPTION_ARG_NONE, &app->test.reattach_stop,
                  "Test mode: stop and save the recording kept from before", NULL },
                { "test-expect-error", 0, 0, G_OPTION_ARG_NONE, &app->test.expect_error,
                  "Test mode: an error message in the window ends the test successfully", NULL },
                { "test-custom-events", 0, 0, G_OPTION_ARG_STRING, &app->test.custom_search,
                  "Test mode: search the custom events for TEXT and tick the first", "TEXT" },
                { "dialog-screenshot", 0, 0, G_OPTION_ARG_FILENAME, &app->test.dialog_screenshot,
                  "Test mode: save a PNG of the custom events dialog", "PATH" },
                { NULL },
        };

        app->recordings = g_list_store_new(TB_TYPE_RECORDING);
        g_application_add_main_option_entries(G_APPLICATION(app), entries);
}

TracebusApp *tracebus_app_new(void) {
        return g_object_new(TRACEBUS_TYPE_APP, "application-id", TRACEBUS_APP_ID, "flags", G_APPLICATION_DEFAULT_FLAGS,
                            NULL);
}

GListModel *tracebus_app_get_recordings(TracebusApp *app) {
        return G_LIST_MODEL(app->recordings);
}

const char *const *tracebus_app_get_available_events(TracebusApp *app) {
        return (const char *const *) app->available_events;
}

gboolean tracebus_app_is_ready(TracebusApp *app) {
        return app->events_done && app->kept_done;
}

const TracebusTestOptions *tracebus_app_get_test_options(TracebusApp *app) {
        return app->test_mode ? &app->test : NULL;
}

void tracebus_app_test_finish(TracebusApp *app, int exit_status, const char *fmt, ...) {
        g_autofree char *msg = NULL;
        va_list ap;

        va_start(ap, fmt);
        msg = g_strdup_vprintf(fmt, ap);
        va_end(ap);
        printf("TEST: %s: %s\n", exit_status == 0 ? "ok" : "failed", msg);
        fflush(stdout);
        app->exit_status = exit_status;
        g_application_quit(G_APPLICATION(app));
}

int tracebus_app_get_exit_status(TracebusApp *app) {
        return app->exit_status;
}
