/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <glib/gi18n.h>
#include <glib/gstdio.h>
#include <locale.h>

#include "config.h"
#include "tracebus-app-private.h"

enum { SIGNAL_ERROR, SIGNAL_READY, SIGNAL_WARNING, SIGNAL_PRODUCERS_CHANGED, N_SIGNALS };
static guint signals[N_SIGNALS];

G_DEFINE_FINAL_TYPE(TracebusApp, tracebus_app, GTK_TYPE_APPLICATION)

/* ---- small functions the others share ---- */

CallData *call_data_new(TracebusApp *app, TbRecording *r) {
        CallData *d = g_new0(CallData, 1);
        d->app = g_object_ref(app);
        d->r = r ? g_object_ref(r) : NULL;
        return d;
}

void call_data_free(CallData *d) {
        g_object_unref(d->app);
        g_clear_object(&d->r);
        g_free(d);
}

void app_emit_error(TracebusApp *app, const GError *error, const char *what_failed) {
        g_auto(TbMessage) m = { 0 };

        tb_message_from_error(error, what_failed, &m);
        g_printerr("tracebus-gtk: %s %s (%s)\n", m.title, m.detail ? m.detail : "", error ? error->message : "");
        g_signal_emit(app, signals[SIGNAL_ERROR], 0, m.title, m.detail);
}

/* The service's warnings about a recording of ours (Start's reply, then its Warnings
 * property as it grows): the new ones, each once, in the window's banner. */
void app_show_warnings(TracebusApp *app, TbRecording *r, const char *const *warnings) {
        g_autoptr(GString) fresh = g_string_new(NULL);
        guint n = r->warnings ? g_strv_length(r->warnings) : 0;

        for (; warnings && *warnings; warnings++) {
                if (r->warnings && g_strv_contains((const char *const *) r->warnings, *warnings))
                        continue;
                r->warnings = g_renew(char *, r->warnings, n + 2);
                r->warnings[n++] = g_strdup(*warnings);
                r->warnings[n] = NULL;
                g_string_append_printf(fresh, "%s%s", fresh->len > 0 ? "\n" : "", *warnings);
        }
        if (fresh->len == 0)
                return;
        g_printerr("tracebus-gtk: warning: %s\n", fresh->str);
        g_signal_emit(app, signals[SIGNAL_WARNING], 0, _("Recording, but not everything asked for:"), fresh->str);
}

void app_save_index(TracebusApp *app) {
        g_autoptr(GError) error = NULL;

        if (!tb_recordings_save(G_LIST_MODEL(app->recordings), app->index_path, &error))
                g_warning("Could not save the list of recordings in %s: %s", app->index_path, error->message);
}

TbRecording *app_find_by_path(TracebusApp *app, const char *object_path) {
        guint n = g_list_model_get_n_items(G_LIST_MODEL(app->recordings));

        for (guint i = 0; i < n; i++) {
                g_autoptr(TbRecording) r = g_list_model_get_item(G_LIST_MODEL(app->recordings), i);
                if (g_strcmp0(r->object_path, object_path) == 0)
                        return r; /* the store keeps it alive */
        }
        return NULL;
}

void app_remove_recording(TracebusApp *app, TbRecording *r) {
        guint pos;

        if (g_list_store_find(app->recordings, r, &pos))
                g_list_store_remove(app->recordings, pos);
}

GtkWindow *app_main_window(TracebusApp *app) {
        return gtk_application_get_active_window(GTK_APPLICATION(app));
}

void app_check_ready(TracebusApp *app) {
        if (tracebus_app_is_ready(app))
                g_signal_emit(app, signals[SIGNAL_READY], 0);
}

/* ---- notifications ---- */

/* A trace finished: say so when nobody is looking at the window. Needs a session
 * bus and a notification server; without them it is skipped. */
static void notify_finished(TracebusApp *app, TbRecording *r) {
        GtkWindow *win = app_main_window(app);
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

/* A trigger saved a snapshot of a running recording (CLONE_SNAPSHOT):
 * said even with the window in front, as nothing in it shows the file. */
void app_notify_trigger_snapshot(TracebusApp *app, TbRecording *r, const char *const *files) {
        g_autoptr(GNotification) n = NULL;
        g_autofree char *body = NULL;
        guint count = files ? g_strv_length((char **) files) : 0;

        if (count == 0 || !g_application_get_dbus_connection(G_APPLICATION(app)))
                return;
        /* TRANSLATORS: "Scheduling: saved into /var/lib/tracebus/traces/1000/trace-….pftrace.0" */
        body = g_strdup_printf(_("%s: saved into %s"), r->summary ? r->summary : _("Trace"), files[count - 1]);
        n = g_notification_new(_("A trigger saved a snapshot"));
        g_notification_set_body(n, body);
        g_notification_set_default_action(n, "app.show");
        g_application_send_notification(G_APPLICATION(app), "trigger-snapshot", n);
}

void app_recording_finished(TracebusApp *app, TbRecording *r, const char *reason, GVariant *stats) {
        gboolean was = r->state == TB_RECORDING_FINISHED;

        tb_recording_finish(r, reason, stats);
        tb_recording_changed(r);
        app_save_index(app);
        if (!was)
                notify_finished(app, r);
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
        GtkWindow *win = app_main_window(app);

        if (win)
                gtk_window_close(win);
        if (app->held) {
                app->held = FALSE;
                g_application_release(G_APPLICATION(app));
        }
}

static void action_about(GSimpleAction *action, GVariant *param, gpointer user_data) {
        const char *authors[] = { "The tracebus authors", NULL };

        gtk_show_about_dialog(app_main_window(user_data), "program-name", _("Tracebus"), "logo-icon-name", TRACEBUS_APP_ID,
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
        app_connect(app);
}

static void reattach_detached(TracebusApp *app) {
        guint n = g_list_model_get_n_items(G_LIST_MODEL(app->recordings));

        for (guint i = 0; i < n; i++) {
                g_autoptr(TbRecording) r = g_list_model_get_item(G_LIST_MODEL(app->recordings), i);
                if (r->detached && r->detach_key && r->state == TB_RECORDING_RECORDING && app->manager)
                        app_attach(app, r);
        }
}

static void tracebus_app_activate(GApplication *gapp) {
        TracebusApp *app = TRACEBUS_APP(gapp);
        GtkWindow *win = app_main_window(app);

        if (!win) {
                win = app->new_window(app);
                reattach_detached(app);
                if (app->hooks.window_created)
                        app->hooks.window_created(app, win, app->hooks.data);
        }
        gtk_window_present(win);
}

static void tracebus_app_shutdown(GApplication *gapp) {
        TracebusApp *app = TRACEBUS_APP(gapp);

        g_clear_handle_id(&app->poll_id, g_source_remove);
        if (app->recordings)
                app_save_index(app);
        G_APPLICATION_CLASS(tracebus_app_parent_class)->shutdown(gapp);
}

static void tracebus_app_finalize(GObject *object) {
        TracebusApp *app = TRACEBUS_APP(object);

        g_clear_object(&app->manager);
        g_clear_object(&app->bus);
        g_clear_object(&app->recordings);
        g_strfreev(app->available_events);
        g_free(app->cache_dir);
        g_free(app->index_path);
        g_free(app->producers_text);
        G_OBJECT_CLASS(tracebus_app_parent_class)->finalize(object);
}

static void tracebus_app_class_init(TracebusAppClass *klass) {
        GApplicationClass *gapp_class = G_APPLICATION_CLASS(klass);

        G_OBJECT_CLASS(klass)->finalize = tracebus_app_finalize;
        gapp_class->startup = tracebus_app_startup;
        gapp_class->activate = tracebus_app_activate;
        gapp_class->shutdown = tracebus_app_shutdown;

        /* error(title, detail): something the window should say. */
        signals[SIGNAL_ERROR] = g_signal_new("error", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                                             G_TYPE_NONE, 2, G_TYPE_STRING, G_TYPE_STRING);
        signals[SIGNAL_READY] = g_signal_new("ready", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                                             G_TYPE_NONE, 0);
        /* warning(title, detail): what the service skipped of a recording's config. */
        signals[SIGNAL_WARNING] = g_signal_new("warning", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                                               NULL, G_TYPE_NONE, 2, G_TYPE_STRING, G_TYPE_STRING);
        /* producers-changed: ListProducers answered (tracebus_app_get_producers_text()). */
        signals[SIGNAL_PRODUCERS_CHANGED] = g_signal_new("producers-changed", G_TYPE_FROM_CLASS(klass),
                                                         G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL, G_TYPE_NONE, 0);
}

void app_emit_producers_changed(TracebusApp *app) {
        g_signal_emit(app, signals[SIGNAL_PRODUCERS_CHANGED], 0);
}

static void tracebus_app_init(TracebusApp *app) {
        app->recordings = g_list_store_new(TB_TYPE_RECORDING);
}

void tracebus_app_setup_locale(void) {
        (void) setlocale(LC_ALL, "");
        (void) bindtextdomain(GETTEXT_PACKAGE, LOCALEDIR);
        (void) bind_textdomain_codeset(GETTEXT_PACKAGE, "UTF-8");
        (void) textdomain(GETTEXT_PACKAGE);
        g_set_application_name(_("Tracebus"));
}

TracebusApp *tracebus_app_new(TracebusWindowFactory new_window) {
        TracebusApp *app = g_object_new(TRACEBUS_TYPE_APP, "application-id", TRACEBUS_APP_ID,
                                        "flags", G_APPLICATION_DEFAULT_FLAGS, NULL);

        g_assert(new_window);
        app->new_window = new_window;
        return app;
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

void tracebus_app_set_hooks(TracebusApp *app, const TracebusAppHooks *hooks) {
        app->hooks = *hooks;
        app->driven = TRUE;
}

void tracebus_app_file_chooser_opening(TracebusApp *app, GtkFileChooser *chooser) {
        if (app->hooks.file_chooser_opening)
                app->hooks.file_chooser_opening(app, chooser, app->hooks.data);
}

void tracebus_app_preview_ready(TracebusApp *app, GtkWindow *preview) {
        if (app->hooks.preview_ready)
                app->hooks.preview_ready(app, preview, app->hooks.data);
}
