/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The app's bus side: the Manager proxy, a proxy per session, polling what sends
 * no signals (detached and other programs' sessions), and at startup the
 * recordings kept while the app was away.
 */
#include <glib/gi18n.h>
#include <unistd.h>

#include "tracebus-app-private.h"

#define POLL_INTERVAL_S 1

/* ---- session proxies ---- */

static void on_properties_changed(GDBusProxy *proxy, GVariant *changed, GStrv invalidated, gpointer user_data) {
        TbRecording *r = TB_RECORDING(user_data);
        g_autoptr(GVariant) snapshots = g_variant_lookup_value(changed, "TriggerSnapshots", NULL);

        GApplication *app = g_application_get_default();

        tb_recording_update_from_proxy(r);
        tb_recording_changed(r);
        /* Ours only: another program's session has its own client to tell. */
        if (r->ours && TRACEBUS_IS_APP(app))
                app_show_warnings(TRACEBUS_APP(app), r,
                                  tracebus_dbus_session_get_warnings(TRACEBUS_DBUS_SESSION(proxy)));
        /* A CLONE_SNAPSHOT trigger saved a snapshot of this session. */
        if (TRACEBUS_IS_APP(app) && snapshots)
                app_notify_trigger_snapshot(TRACEBUS_APP(app), r,
                                            tracebus_dbus_session_get_trigger_snapshots(TRACEBUS_DBUS_SESSION(proxy)));
}


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
                app_remove_recording(d->app, d->r);
                return;
        }
        tb_recording_update_from_proxy(d->r);
        tb_recording_changed(d->r);
}

void app_bind_session(TracebusApp *app, TbRecording *r, const char *object_path, gboolean ours) {
        g_free(r->object_path);
        r->object_path = g_strdup(object_path);
        r->ours = ours;
        if (r->state == TB_RECORDING_STARTING || r->state == TB_RECORDING_FINISHED)
                r->state = TB_RECORDING_RECORDING;
        tb_recording_changed(r);
        tracebus_dbus_session_proxy_new(app->bus, G_DBUS_PROXY_FLAGS_NONE, TB_BUS_NAME, object_path, NULL,
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
                        app_remove_recording(d->app, d->r);
                else
                        app_recording_finished(d->app, d->r, NULL, NULL);
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
                g_dbus_connection_call(app->bus, TB_BUS_NAME, r->object_path, "org.freedesktop.DBus.Properties", "GetAll",
                                       g_variant_new("(s)", TB_SESSION_INTERFACE), G_VARIANT_TYPE("(a{sv})"),
                                       G_DBUS_CALL_FLAGS_NO_AUTO_START, 5000, NULL, on_poll_reply,
                                       call_data_new(app, r));
        }
        /* With no window, the app only stays to tell when the kept recordings end. */
        if (app->held && !any_kept && !app_main_window(app)) {
                app->held = FALSE;
                g_application_release(G_APPLICATION(app));
        }
        return G_SOURCE_CONTINUE;
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
                        app_bind_session(d->app, d->r, d->r->object_path, FALSE);
                return;
        }
        d->r->detached = FALSE;
        app_bind_session(d->app, d->r, path, TRUE);
}

void app_attach(TracebusApp *app, TbRecording *r) {
        tracebus_dbus_manager_call_attach(app->manager, r->detach_key, NULL, on_attach_reply, call_data_new(app, r));
}

static void on_session_ended(TracebusDbusManager *manager, const char *path, const char *reason, GVariant *stats,
                             gpointer user_data) {
        TracebusApp *app = user_data;
        TbRecording *r = app_find_by_path(app, path);

        if (r)
                app_recording_finished(app, r, reason, stats);
}

/* ---- startup: events, kept sessions, other sessions ---- */

static void kept_step_done(TracebusApp *app) {
        if (app->pending_kept > 0 && --app->pending_kept == 0) {
                app->kept_done = TRUE;
                app_save_index(app);
                app_check_ready(app);
        }
}

static void on_kept_attach(GObject *source, GAsyncResult *res, gpointer user_data) {
        g_autoptr(CallData) d = user_data;
        g_autoptr(GError) error = NULL;
        g_autofree char *path = NULL;

        if (tracebus_dbus_manager_call_attach_finish(TRACEBUS_DBUS_MANAGER(source), &path, res, &error)) {
                d->r->detached = FALSE;
                app_bind_session(d->app, d->r, path, TRUE);
        } else {
                g_warning("Could not re-attach %s: %s", d->r->detach_key, error->message);
                app_recording_finished(d->app, d->r, NULL, NULL);
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
        app_recording_finished(d->app, d->r, d->r->reason, NULL);
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

                if (app_find_by_path(app, *p))
                        continue;
                r = tb_recording_new(*p);
                r->foreign = TRUE;
                r->summary = g_strdup(_("Started by another program"));
                g_list_store_append(app->recordings, r);
                app_bind_session(app, r, *p, FALSE);
        }
        g_object_unref(app);
}

static void on_list_events(GObject *source, GAsyncResult *res, gpointer user_data) {
        TracebusApp *app = user_data;
        g_autoptr(GError) error = NULL;

        if (!tracebus_dbus_manager_call_list_events_finish(TRACEBUS_DBUS_MANAGER(source), &app->available_events, res,
                                                           &error)) {
                g_autofree char *name = tb_error_get_dbus_name(error);

                /* The events are listed only to those who may record: a refusal here is said
                 * once, when the user asks to record, not at startup. */
                if (g_strcmp0(name, "org.freedesktop.DBus.Error.AccessDenied") != 0)
                        app_emit_error(app, error, _("Could not ask the tracing service which events this kernel offers."));
                app->available_events = NULL;
        }
        app->events_done = TRUE;
        app_check_ready(app);
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

/* Without the bus or the Manager there are no events or kept recordings to wait for: the
 * window shows the error, and drops the reference the startup call held. */
static void startup_failed(TracebusApp *app, const GError *error, const char *text) {
        app_emit_error(app, error, text);
        app->events_done = app->kept_done = TRUE;
        app_check_ready(app);
        g_object_unref(app);
}

static void on_manager_proxy(GObject *source, GAsyncResult *res, gpointer user_data) {
        TracebusApp *app = user_data;
        g_autoptr(GError) error = NULL;

        app->manager = tracebus_dbus_manager_proxy_new_finish(res, &error);
        if (!app->manager) {
                startup_failed(app, error, _("Could not reach the tracing service."));
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
                startup_failed(app, error, _("Could not connect to the system bus."));
                return;
        }
        /* The Manager has no properties; its signal comes from its owner. */
        tracebus_dbus_manager_proxy_new(app->bus, G_DBUS_PROXY_FLAGS_DO_NOT_LOAD_PROPERTIES, TB_BUS_NAME, TB_MANAGER_PATH,
                                        NULL, on_manager_proxy, app);
}

/* Connects to the system bus, then to the Manager; the "ready" signal says when
 * the events and the kept recordings are known. */
void app_connect(TracebusApp *app) {
        g_bus_get(G_BUS_TYPE_SYSTEM, NULL, on_system_bus, g_object_ref(app));
}
