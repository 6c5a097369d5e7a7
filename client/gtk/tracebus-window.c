/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <glib/gi18n.h>
#include <string.h>

#include "tb-events-dialog.h"
#include "tracebus-test-driver.h"
#include "tracebus-window.h"

#define MAX_CATEGORIES 16

/* The widgets of one recording's row. */
typedef struct {
        TbRecording *r; /* not a reference: the model holds it as long as the row */
        GtkWidget *icon, *spinner, *title, *subtitle;
        GtkWidget *elapsed, *written, *events, *lost;
        GtkWidget *stop, *save, *show, *discard;
} RowWidgets;

struct _TracebusWindow {
        GtkApplicationWindow parent_instance;

        TracebusApp *app;
        GtkWidget *banner, *banner_title, *banner_detail;
        GtkWidget *category_rows[MAX_CATEGORIES], *category_switches[MAX_CATEGORIES];
        GtkWidget *category_subtitles[MAX_CATEGORIES];
        GtkWidget *custom_switch, *custom_subtitle, *custom_button;
        GHashTable *custom_events;
        GtkWidget *mode, *buffer_mb, *duration_min, *max_size_gb, *max_size_row, *keep;
        GtkWidget *record, *record_hint;
        GtkWidget *stack, *list;
        guint tick_id;
};

G_DEFINE_FINAL_TYPE(TracebusWindow, tracebus_window, GTK_TYPE_APPLICATION_WINDOW)

/* ---- little builders ---- */

static GtkWidget *label_new(const char *text, const char *css_class, float xalign) {
        GtkWidget *l = gtk_label_new(text);

        gtk_label_set_xalign(GTK_LABEL(l), xalign);
        if (css_class)
                gtk_widget_add_css_class(l, css_class);
        return l;
}

/* A settings row: title and subtitle on the left, a control on the right. */
static GtkWidget *setting_row_new(const char *title, const char *subtitle, GtkWidget *control,
                                  GtkWidget **ret_subtitle) {
        GtkWidget *row = gtk_list_box_row_new();
        GtkWidget *box = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 12);
        GtkWidget *text = gtk_box_new(GTK_ORIENTATION_VERTICAL, 2);
        GtkWidget *t = label_new(title, "tb-row-title", 0), *s = label_new(subtitle, "tb-caption", 0);

        gtk_label_set_wrap(GTK_LABEL(s), TRUE);
        gtk_widget_set_visible(s, subtitle != NULL);
        gtk_widget_set_hexpand(text, TRUE);
        gtk_widget_set_valign(text, GTK_ALIGN_CENTER);
        gtk_box_append(GTK_BOX(text), t);
        gtk_box_append(GTK_BOX(text), s);
        gtk_box_append(GTK_BOX(box), text);
        if (control) {
                gtk_widget_set_valign(control, GTK_ALIGN_CENTER);
                gtk_box_append(GTK_BOX(box), control);
        }
        gtk_list_box_row_set_child(GTK_LIST_BOX_ROW(row), box);
        gtk_list_box_row_set_activatable(GTK_LIST_BOX_ROW(row), FALSE);
        if (ret_subtitle)
                *ret_subtitle = s;
        return row;
}

static GtkWidget *card_new(void) {
        GtkWidget *list = gtk_list_box_new();

        gtk_list_box_set_selection_mode(GTK_LIST_BOX(list), GTK_SELECTION_NONE);
        gtk_widget_add_css_class(list, "tb-card");
        return list;
}

static GtkWidget *spin_new(double min, double max, double value) {
        GtkWidget *s = gtk_spin_button_new_with_range(min, max, 1);

        gtk_spin_button_set_value(GTK_SPIN_BUTTON(s), value);
        gtk_spin_button_set_numeric(GTK_SPIN_BUTTON(s), TRUE);
        return s;
}

/* ---- the message banner ---- */

static void banner_show(TracebusWindow *win, const char *title, const char *detail) {
        gtk_label_set_text(GTK_LABEL(win->banner_title), title);
        gtk_label_set_text(GTK_LABEL(win->banner_detail), detail ? detail : "");
        gtk_widget_set_visible(win->banner_detail, detail && *detail);
        gtk_revealer_set_reveal_child(GTK_REVEALER(win->banner), TRUE);
}

static void banner_hide(TracebusWindow *win) {
        gtk_revealer_set_reveal_child(GTK_REVEALER(win->banner), FALSE);
}

static void on_banner_close(GtkButton *b, gpointer user_data) {
        banner_hide(user_data);
}

static void on_app_error(TracebusApp *app, const char *title, const char *detail, gpointer user_data) {
        banner_show(user_data, title, detail);
}

static GtkWidget *banner_new(TracebusWindow *win) {
        GtkWidget *box = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 12);
        GtkWidget *text = gtk_box_new(GTK_ORIENTATION_VERTICAL, 2);
        GtkWidget *icon = gtk_image_new_from_icon_name("dialog-warning-symbolic");
        GtkWidget *close = gtk_button_new_from_icon_name("window-close-symbolic");

        gtk_widget_add_css_class(box, "tb-banner");
        gtk_widget_set_valign(icon, GTK_ALIGN_START);
        win->banner_title = label_new(NULL, "tb-row-title", 0);
        win->banner_detail = label_new(NULL, NULL, 0);
        gtk_label_set_wrap(GTK_LABEL(win->banner_title), TRUE);
        gtk_label_set_wrap(GTK_LABEL(win->banner_detail), TRUE);
        gtk_label_set_selectable(GTK_LABEL(win->banner_detail), TRUE);
        gtk_widget_set_hexpand(text, TRUE);
        gtk_box_append(GTK_BOX(text), win->banner_title);
        gtk_box_append(GTK_BOX(text), win->banner_detail);
        gtk_widget_add_css_class(close, "flat");
        gtk_widget_set_valign(close, GTK_ALIGN_START);
        gtk_widget_set_tooltip_text(close, _("Dismiss"));
        g_signal_connect(close, "clicked", G_CALLBACK(on_banner_close), win);
        gtk_box_append(GTK_BOX(box), icon);
        gtk_box_append(GTK_BOX(box), text);
        gtk_box_append(GTK_BOX(box), close);

        win->banner = gtk_revealer_new();
        gtk_revealer_set_child(GTK_REVEALER(win->banner), box);
        return win->banner;
}

/* ---- recordings list ---- */

static const char *state_title(const TbRecording *r) {
        switch (r->state) {
        case TB_RECORDING_STARTING:
                return _("Starting…");
        case TB_RECORDING_RECORDING:
                return r->detached ? _("Recording in the background") : _("Recording");
        case TB_RECORDING_STOPPING:
                return _("Finishing the trace…");
        case TB_RECORDING_FINISHED:
        default:
                return tb_end_reason_to_string(r->reason);
        }
}

static char *row_subtitle(const TbRecording *r) {
        g_autoptr(GDateTime) started = r->started_at_us ? g_date_time_new_from_unix_local(r->started_at_us / G_USEC_PER_SEC) : NULL;
        g_autoptr(GDateTime) now = g_date_time_new_now_local();
        g_autofree char *when = NULL;
        g_autofree char *base = r->file_path ? g_path_get_basename(r->file_path) : NULL;
        GString *s = g_string_new(r->summary ? r->summary : _("Trace"));

        if (started) {
                gboolean today = g_date_time_get_day_of_year(started) == g_date_time_get_day_of_year(now) &&
                                 g_date_time_get_year(started) == g_date_time_get_year(now);
                /* TRANSLATORS: when a recording started: a time today, else a date and time */
                when = g_date_time_format(started, today ? _("started %H:%M") : _("started %x %H:%M"));
                g_string_append_printf(s, " · %s", when);
        }
        if (r->saved_path) {
                g_autofree char *saved = g_path_get_basename(r->saved_path);
                g_string_append_printf(s, " · %s", saved);
                g_string_append_printf(s, _(" (saved)"));
        } else if (base)
                g_string_append_printf(s, " · %s", base);
        if (r->detach_key && r->state != TB_RECORDING_FINISHED)
                g_string_append_printf(s, " · %s", _("keeps recording after the window closes"));
        return g_string_free(s, FALSE);
}

static void row_update(RowWidgets *w) {
        TbRecording *r = w->r;
        gboolean live = r->state != TB_RECORDING_FINISHED, busy = r->state == TB_RECORDING_STARTING ||
                                                              r->state == TB_RECORDING_STOPPING;
        g_autofree char *sub = row_subtitle(r), *elapsed = tb_format_elapsed(tb_recording_elapsed_seconds(r));
        g_autofree char *written = tb_format_bytes(r->bytes), *events = tb_format_count(r->events);
        g_autofree char *lost = tb_format_count(r->lost);

        gtk_label_set_text(GTK_LABEL(w->title), state_title(r));
        gtk_label_set_text(GTK_LABEL(w->subtitle), sub);
        gtk_label_set_text(GTK_LABEL(w->elapsed), elapsed);
        gtk_label_set_text(GTK_LABEL(w->written), written);
        gtk_label_set_text(GTK_LABEL(w->events), events);
        gtk_label_set_text(GTK_LABEL(w->lost), lost);
        if (r->lost)
                gtk_widget_add_css_class(w->lost, "tb-warning");
        else
                gtk_widget_remove_css_class(w->lost, "tb-warning");

        gtk_widget_set_visible(w->spinner, busy);
        gtk_spinner_set_spinning(GTK_SPINNER(w->spinner), busy);
        gtk_widget_set_visible(w->icon, !busy);
        gtk_image_set_from_icon_name(GTK_IMAGE(w->icon), live ? "media-record-symbolic" : "emblem-ok-symbolic");
        if (live)
                gtk_widget_add_css_class(w->icon, "tb-recording");
        else
                gtk_widget_remove_css_class(w->icon, "tb-recording");

        gtk_widget_set_visible(w->stop, live);
        gtk_widget_set_sensitive(w->stop, r->state == TB_RECORDING_RECORDING && r->object_path);
        gtk_widget_set_visible(w->save, !live && r->file_path);
        gtk_widget_set_visible(w->show, !live && r->file_path);
        gtk_widget_set_visible(w->discard, !live && !r->foreign);
}

static void on_recording_changed(TbRecording *r, gpointer user_data) {
        row_update(g_object_get_data(G_OBJECT(user_data), "tb-row"));
}

static TracebusWindow *row_window(GtkWidget *w) {
        return TRACEBUS_WINDOW(gtk_widget_get_root(w));
}

static void on_stop_clicked(GtkButton *b, gpointer user_data) {
        RowWidgets *w = user_data;
        TracebusWindow *win = row_window(GTK_WIDGET(b));

        banner_hide(win);
        tracebus_app_stop_recording(win->app, w->r);
}

typedef struct {
        TracebusWindow *win;
        TbRecording *r;
} SaveData;

static void on_save_response(GtkNativeDialog *native, int response, gpointer user_data) {
        SaveData *d = user_data;

        if (response == GTK_RESPONSE_ACCEPT) {
                g_autoptr(GFile) file = gtk_file_chooser_get_file(GTK_FILE_CHOOSER(native));
                if (file)
                        tracebus_app_save_recording(d->win->app, d->r, file);
        }
        gtk_native_dialog_destroy(native);
        g_object_unref(native);
        g_object_unref(d->r);
        g_free(d);
}

static void on_save_clicked(GtkButton *b, gpointer user_data) {
        RowWidgets *w = user_data;
        TracebusWindow *win = row_window(GTK_WIDGET(b));
        g_autofree char *name = g_path_get_basename(w->r->saved_path ? w->r->saved_path : w->r->file_path);
        g_autoptr(GtkFileFilter) filter = gtk_file_filter_new();
        g_autoptr(GtkFileFilter) all = gtk_file_filter_new();
        SaveData *d = g_new0(SaveData, 1);
        GtkFileChooserNative *native;

        /* GtkFileDialog came with GTK 4.10; Debian 12 has 4.8. */
        G_GNUC_BEGIN_IGNORE_DEPRECATIONS
        native = gtk_file_chooser_native_new(_("Save Trace"), GTK_WINDOW(win), GTK_FILE_CHOOSER_ACTION_SAVE, _("_Save"),
                                             _("_Cancel"));
        gtk_file_chooser_set_current_name(GTK_FILE_CHOOSER(native), name);
        gtk_file_filter_set_name(filter, _("Perfetto traces"));
        gtk_file_filter_add_pattern(filter, "*.pftrace");
        gtk_file_filter_add_pattern(filter, "*.perfetto-trace");
        gtk_file_chooser_add_filter(GTK_FILE_CHOOSER(native), filter);
        gtk_file_filter_set_name(all, _("All files"));
        gtk_file_filter_add_pattern(all, "*");
        gtk_file_chooser_add_filter(GTK_FILE_CHOOSER(native), all);
        G_GNUC_END_IGNORE_DEPRECATIONS
        gtk_native_dialog_set_modal(GTK_NATIVE_DIALOG(native), TRUE);
        d->win = win;
        d->r = g_object_ref(w->r);
        g_signal_connect(native, "response", G_CALLBACK(on_save_response), d);
        tracebus_test_driver_file_chooser_opening(win->app, GTK_FILE_CHOOSER(native));
        gtk_native_dialog_show(GTK_NATIVE_DIALOG(native));
}

static void on_show_clicked(GtkButton *b, gpointer user_data) {
        RowWidgets *w = user_data;
        tracebus_app_show_in_files(row_window(GTK_WIDGET(b))->app, w->r);
}

static void on_discard_clicked(GtkButton *b, gpointer user_data) {
        RowWidgets *w = user_data;
        tracebus_app_discard_recording(row_window(GTK_WIDGET(b))->app, w->r);
}

static GtkWidget *stat_new(GtkWidget *grid, int column, const char *caption) {
        GtkWidget *value = label_new("0", "tb-stat", 0), *cap = label_new(caption, "tb-caption", 0);

        gtk_grid_attach(GTK_GRID(grid), value, column, 0, 1, 1);
        gtk_grid_attach(GTK_GRID(grid), cap, column, 1, 1, 1);
        return value;
}

static GtkWidget *row_button_new(const char *label, const char *css_class, GCallback cb, RowWidgets *w) {
        GtkWidget *b = gtk_button_new_with_mnemonic(label);

        if (css_class)
                gtk_widget_add_css_class(b, css_class);
        gtk_widget_set_valign(b, GTK_ALIGN_CENTER);
        g_signal_connect(b, "clicked", cb, w);
        return b;
}

static GtkWidget *create_row(gpointer item, gpointer user_data) {
        TbRecording *r = TB_RECORDING(item);
        RowWidgets *w = g_new0(RowWidgets, 1);
        GtkWidget *row = gtk_list_box_row_new();
        GtkWidget *box = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 12), *text = gtk_box_new(GTK_ORIENTATION_VERTICAL, 4);
        GtkWidget *stats = gtk_grid_new(), *buttons = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 6);

        w->r = r;
        g_object_set_data_full(G_OBJECT(row), "tb-row", w, g_free);
        w->icon = gtk_image_new();
        gtk_image_set_pixel_size(GTK_IMAGE(w->icon), 24);
        w->spinner = gtk_spinner_new();
        gtk_widget_set_size_request(w->spinner, 24, 24);
        gtk_widget_set_valign(w->icon, GTK_ALIGN_START);
        gtk_widget_set_valign(w->spinner, GTK_ALIGN_START);
        gtk_box_append(GTK_BOX(box), w->icon);
        gtk_box_append(GTK_BOX(box), w->spinner);

        w->title = label_new(NULL, "tb-row-title", 0);
        w->subtitle = label_new(NULL, "tb-caption", 0);
        gtk_label_set_wrap(GTK_LABEL(w->subtitle), TRUE);
        gtk_grid_set_column_spacing(GTK_GRID(stats), 24);
        gtk_widget_set_margin_top(stats, 4);
        w->elapsed = stat_new(stats, 0, _("Elapsed"));
        w->written = stat_new(stats, 1, _("Written"));
        w->events = stat_new(stats, 2, _("Events"));
        w->lost = stat_new(stats, 3, _("Lost"));
        gtk_widget_set_hexpand(text, TRUE);
        gtk_box_append(GTK_BOX(text), w->title);
        gtk_box_append(GTK_BOX(text), w->subtitle);
        gtk_box_append(GTK_BOX(text), stats);
        gtk_box_append(GTK_BOX(box), text);

        w->stop = row_button_new(_("_Stop"), "destructive-action", G_CALLBACK(on_stop_clicked), w);
        w->save = row_button_new(_("Save _As…"), "suggested-action", G_CALLBACK(on_save_clicked), w);
        w->show = row_button_new(_("Show in _Files"), NULL, G_CALLBACK(on_show_clicked), w);
        w->discard = gtk_button_new_from_icon_name("user-trash-symbolic");
        gtk_widget_set_tooltip_text(w->discard, _("Delete this trace"));
        gtk_widget_set_valign(w->discard, GTK_ALIGN_CENTER);
        g_signal_connect(w->discard, "clicked", G_CALLBACK(on_discard_clicked), w);
        gtk_box_append(GTK_BOX(buttons), w->stop);
        gtk_box_append(GTK_BOX(buttons), w->save);
        gtk_box_append(GTK_BOX(buttons), w->show);
        gtk_box_append(GTK_BOX(buttons), w->discard);
        gtk_widget_set_valign(buttons, GTK_ALIGN_CENTER);
        gtk_box_append(GTK_BOX(box), buttons);

        gtk_list_box_row_set_child(GTK_LIST_BOX_ROW(row), box);
        gtk_list_box_row_set_activatable(GTK_LIST_BOX_ROW(row), FALSE);
        g_signal_connect_object(r, "changed", G_CALLBACK(on_recording_changed), row, 0);
        row_update(w);
        return row;
}

static void update_empty_state(TracebusWindow *win) {
        GListModel *m = tracebus_app_get_recordings(win->app);
        gtk_stack_set_visible_child_name(GTK_STACK(win->stack), g_list_model_get_n_items(m) ? "list" : "empty");
}

static void on_items_changed(GListModel *m, guint pos, guint removed, guint added, gpointer user_data) {
        update_empty_state(user_data);
}

static gboolean on_tick(gpointer user_data) {
        TracebusWindow *win = user_data;

        for (int i = 0;; i++) {
                GtkListBoxRow *row = gtk_list_box_get_row_at_index(GTK_LIST_BOX(win->list), i);
                RowWidgets *w;

                if (!row)
                        break;
                w = g_object_get_data(G_OBJECT(row), "tb-row");
                if (w && w->r->state != TB_RECORDING_FINISHED)
                        row_update(w);
        }
        return G_SOURCE_CONTINUE;
}

static GtkWidget *empty_state_new(void) {
        GtkWidget *box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 12);
        GtkWidget *icon = gtk_image_new_from_icon_name(TRACEBUS_APP_ID);
        GtkWidget *title = label_new(_("No recordings yet"), "tb-empty-title", 0.5);
        GtkWidget *text = label_new(_("Choose what to record, then press Start Recording. "
                                      "Traces open in Perfetto (ui.perfetto.dev)."),
                                    "tb-dim", 0.5);

        gtk_image_set_pixel_size(GTK_IMAGE(icon), 128);
        gtk_label_set_wrap(GTK_LABEL(text), TRUE);
        gtk_label_set_justify(GTK_LABEL(text), GTK_JUSTIFY_CENTER);
        gtk_label_set_max_width_chars(GTK_LABEL(text), 40);
        gtk_widget_set_valign(box, GTK_ALIGN_CENTER);
        gtk_widget_set_vexpand(box, TRUE);
        gtk_box_append(GTK_BOX(box), icon);
        gtk_box_append(GTK_BOX(box), title);
        gtk_box_append(GTK_BOX(box), text);
        return box;
}

static GtkWidget *recordings_pane_new(TracebusWindow *win) {
        GtkWidget *box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 6);
        GtkWidget *scroll = gtk_scrolled_window_new(), *inner = gtk_box_new(GTK_ORIENTATION_VERTICAL, 6);
        GListModel *model = tracebus_app_get_recordings(win->app);

        gtk_widget_add_css_class(box, "tb-pane");
        gtk_widget_set_hexpand(box, TRUE);
        gtk_box_append(GTK_BOX(box), label_new(_("Recordings"), "tb-heading", 0));

        win->list = card_new();
        gtk_list_box_bind_model(GTK_LIST_BOX(win->list), model, create_row, win, NULL);
        gtk_widget_set_valign(win->list, GTK_ALIGN_START);
        gtk_box_append(GTK_BOX(inner), win->list);
        gtk_scrolled_window_set_child(GTK_SCROLLED_WINDOW(scroll), inner);
        gtk_scrolled_window_set_policy(GTK_SCROLLED_WINDOW(scroll), GTK_POLICY_NEVER, GTK_POLICY_AUTOMATIC);

        win->stack = gtk_stack_new();
        gtk_stack_add_named(GTK_STACK(win->stack), empty_state_new(), "empty");
        gtk_stack_add_named(GTK_STACK(win->stack), scroll, "list");
        gtk_widget_set_vexpand(win->stack, TRUE);
        gtk_box_append(GTK_BOX(box), win->stack);
        g_signal_connect_object(model, "items-changed", G_CALLBACK(on_items_changed), win, 0);
        update_empty_state(win);
        return box;
}

/* ---- the new-recording settings ---- */

static void update_custom_subtitle(TracebusWindow *win) {
        guint n = g_hash_table_size(win->custom_events);
        g_autofree char *s = n ? g_strdup_printf(g_dngettext(NULL, "%u event chosen", "%u events chosen", n), n)
                               : g_strdup(_("Any event this kernel offers"));

        gtk_label_set_text(GTK_LABEL(win->custom_subtitle), s);
}

static void on_events_dialog_done(gpointer user_data) {
        TracebusWindow *win = user_data;

        update_custom_subtitle(win);
        gtk_switch_set_active(GTK_SWITCH(win->custom_switch), g_hash_table_size(win->custom_events) > 0);
}

static void on_custom_clicked(GtkButton *b, gpointer user_data) {
        TracebusWindow *win = user_data;
        const char *const *available = tracebus_app_get_available_events(win->app);
        const char *const none[] = { NULL };
        GtkWindow *dialog = tb_events_dialog_new(GTK_WINDOW(win), available ? available : none, win->custom_events,
                                                 G_CALLBACK(on_events_dialog_done), win);

        gtk_window_present(dialog);
}

static void on_mode_changed(GObject *dropdown, GParamSpec *pspec, gpointer user_data) {
        TracebusWindow *win = user_data;
        gtk_widget_set_sensitive(win->max_size_row,
                                 gtk_drop_down_get_selected(GTK_DROP_DOWN(win->mode)) == TB_BUFFER_LONG);
}

static char *settings_summary(TracebusWindow *win, GPtrArray *ids) {
        g_autoptr(GPtrArray) names = g_ptr_array_new();
        guint n_custom = gtk_switch_get_active(GTK_SWITCH(win->custom_switch)) ? g_hash_table_size(win->custom_events) : 0;
        g_autofree char *custom = NULL;

        for (guint i = 0; i < ids->len; i++)
                g_ptr_array_add(names, (char *) _(tb_category_lookup(g_ptr_array_index(ids, i))->name));
        if (n_custom) {
                custom = g_strdup_printf(g_dngettext(NULL, "%u custom event", "%u custom events", n_custom), n_custom);
                g_ptr_array_add(names, custom);
        }
        g_ptr_array_add(names, NULL);
        return g_strjoinv(", ", (char **) names->pdata);
}

static void on_record_clicked(GtkButton *b, gpointer user_data) {
        TracebusWindow *win = user_data;
        guint n_cat;
        const TbCategory *cats = tb_categories_get(&n_cat);
        g_autoptr(GPtrArray) ids = g_ptr_array_new_null_terminated(0, NULL, TRUE);
        g_autofree char **custom = NULL;
        g_auto(GStrv) events = NULL, missing = NULL;
        g_autofree char *summary = NULL;
        TbRecordSettings s = { 0 };

        banner_hide(win);
        for (guint i = 0; i < n_cat && i < MAX_CATEGORIES; i++)
                if (gtk_switch_get_active(GTK_SWITCH(win->category_switches[i])) &&
                    gtk_widget_get_sensitive(win->category_rows[i]))
                        g_ptr_array_add(ids, (char *) cats[i].id);
        if (gtk_switch_get_active(GTK_SWITCH(win->custom_switch)))
                custom = (char **) g_hash_table_get_keys_as_array(win->custom_events, NULL);
        events = tb_categories_resolve((const char *const *) ids->pdata, (const char *const *) custom,
                                       tracebus_app_get_available_events(win->app), &missing);
        if (!events[0]) {
                banner_show(win, _("Nothing to record."),
                            _("Switch on at least one category, or choose custom events this kernel offers."));
                return;
        }
        s.events = (const char *const *) events;
        s.mode = gtk_drop_down_get_selected(GTK_DROP_DOWN(win->mode)) == 1 ? TB_BUFFER_LONG : TB_BUFFER_RING;
        s.buffer_size_kb = (guint) gtk_spin_button_get_value_as_int(GTK_SPIN_BUTTON(win->buffer_mb)) * 1024u;
        s.duration_ms = (guint) gtk_spin_button_get_value_as_int(GTK_SPIN_BUTTON(win->duration_min)) * 60u * 1000u;
        if (s.mode == TB_BUFFER_LONG)
                s.max_file_size_bytes = (guint64) gtk_spin_button_get_value_as_int(GTK_SPIN_BUTTON(win->max_size_gb)) *
                                        1024ull * 1024 * 1024;
        s.n_cpus = g_get_num_processors();
        summary = settings_summary(win, ids);
        tracebus_app_start_recording(win->app, &s, summary, gtk_switch_get_active(GTK_SWITCH(win->keep)));
}

static GtkWidget *settings_pane_new(TracebusWindow *win) {
        GtkWidget *scroll = gtk_scrolled_window_new(), *box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 6);
        GtkWidget *what = card_new(), *how = card_new(), *buttons, *footer, *pane;
        const char *modes[] = { _("Ring buffer, saved at stop"), _("Long trace, written as it goes"), NULL };
        guint n_cat;
        const TbCategory *cats = tb_categories_get(&n_cat);

        gtk_widget_add_css_class(box, "tb-pane");
        gtk_box_append(GTK_BOX(box), label_new(_("What to record"), "tb-heading", 0));
        for (guint i = 0; i < n_cat && i < MAX_CATEGORIES; i++) {
                win->category_switches[i] = gtk_switch_new();
                gtk_switch_set_active(GTK_SWITCH(win->category_switches[i]), cats[i].default_on);
                win->category_rows[i] = setting_row_new(_(cats[i].name), _(cats[i].description),
                                                        win->category_switches[i], &win->category_subtitles[i]);
                gtk_list_box_append(GTK_LIST_BOX(what), win->category_rows[i]);
        }
        buttons = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 6);
        win->custom_button = gtk_button_new_with_mnemonic(_("_Choose…"));
        g_signal_connect(win->custom_button, "clicked", G_CALLBACK(on_custom_clicked), win);
        win->custom_switch = gtk_switch_new();
        gtk_widget_set_valign(win->custom_button, GTK_ALIGN_CENTER);
        gtk_widget_set_valign(win->custom_switch, GTK_ALIGN_CENTER);
        gtk_box_append(GTK_BOX(buttons), win->custom_button);
        gtk_box_append(GTK_BOX(buttons), win->custom_switch);
        gtk_list_box_append(GTK_LIST_BOX(what), setting_row_new(_("Custom events"), "", buttons, &win->custom_subtitle));
        update_custom_subtitle(win);
        gtk_box_append(GTK_BOX(box), what);

        gtk_box_append(GTK_BOX(box), label_new(_("How to record"), "tb-heading", 0));
        win->mode = gtk_drop_down_new_from_strings(modes);
        g_signal_connect(win->mode, "notify::selected", G_CALLBACK(on_mode_changed), win);
        gtk_widget_set_tooltip_text(win->mode, _("A ring buffer keeps the latest events and writes them when the "
                                                 "recording stops; a long trace writes into the file every few seconds"));
        gtk_list_box_append(GTK_LIST_BOX(how), setting_row_new(_("Buffer"), NULL, win->mode, NULL));
        win->buffer_mb = spin_new(1, TB_MAX_BUFFER_SIZE_KB / 1024, TB_DEFAULT_BUFFER_SIZE_KB / 1024);
        gtk_list_box_append(GTK_LIST_BOX(how), setting_row_new(_("Buffer size per CPU"), _("In MB"), win->buffer_mb, NULL));
        win->duration_min = spin_new(0, TB_MAX_DURATION_MS / 60000, TB_DEFAULT_DURATION_MS / 60000);
        gtk_list_box_append(GTK_LIST_BOX(how), setting_row_new(_("Stop after"), _("In minutes; 0 records until you stop it"),
                                                               win->duration_min, NULL));
        win->max_size_gb = spin_new(1, 1024, (double) (TB_DEFAULT_LONG_TRACE_MAX_BYTES >> 30));
        win->max_size_row = setting_row_new(_("Maximum file size"), _("In GB, for long traces"), win->max_size_gb, NULL);
        gtk_list_box_append(GTK_LIST_BOX(how), win->max_size_row);
        win->keep = gtk_switch_new();
        gtk_list_box_append(GTK_LIST_BOX(how),
                            setting_row_new(_("Keep recording after closing this window"),
                                            _("Stop it later from this app"), win->keep, NULL));
        on_mode_changed(NULL, NULL, win);
        gtk_box_append(GTK_BOX(box), how);

        gtk_scrolled_window_set_child(GTK_SCROLLED_WINDOW(scroll), box);
        gtk_scrolled_window_set_policy(GTK_SCROLLED_WINDOW(scroll), GTK_POLICY_NEVER, GTK_POLICY_AUTOMATIC);
        gtk_scrolled_window_set_propagate_natural_height(GTK_SCROLLED_WINDOW(scroll), TRUE);
        gtk_widget_set_vexpand(scroll, TRUE);

        /* The button stays in view however small the window. */
        footer = gtk_box_new(GTK_ORIENTATION_VERTICAL, 4);
        gtk_widget_add_css_class(footer, "tb-footer");
        win->record = gtk_button_new_with_mnemonic(_("Start _Recording"));
        gtk_widget_add_css_class(win->record, "suggested-action");
        gtk_widget_add_css_class(win->record, "tb-record");
        gtk_widget_set_sensitive(win->record, FALSE);
        g_signal_connect(win->record, "clicked", G_CALLBACK(on_record_clicked), win);
        gtk_box_append(GTK_BOX(footer), win->record);
        win->record_hint = label_new(_("Connecting to the tracing service…"), "tb-caption", 0.5);
        gtk_box_append(GTK_BOX(footer), win->record_hint);

        pane = gtk_box_new(GTK_ORIENTATION_VERTICAL, 0);
        gtk_box_append(GTK_BOX(pane), scroll);
        gtk_box_append(GTK_BOX(pane), footer);
        gtk_widget_set_size_request(pane, 440, -1);
        return pane;
}

/* The events are known: say which categories this kernel cannot record. */
static void on_app_ready(TracebusApp *app, gpointer user_data) {
        TracebusWindow *win = user_data;
        const char *const *available = tracebus_app_get_available_events(app);
        guint n_cat;
        const TbCategory *cats = tb_categories_get(&n_cat);

        gtk_widget_set_sensitive(win->record, TRUE);
        gtk_widget_set_visible(win->record_hint, FALSE);
        gtk_widget_set_sensitive(win->custom_button, available != NULL);
        if (!available)
                return;
        for (guint i = 0; i < n_cat && i < MAX_CATEGORIES; i++) {
                g_auto(GStrv) have = tb_category_available_events(&cats[i], available);
                g_autofree char *list = g_strjoinv(", ", have);

                if (!have[0]) {
                        gtk_switch_set_active(GTK_SWITCH(win->category_switches[i]), FALSE);
                        gtk_widget_set_sensitive(win->category_rows[i], FALSE);
                        gtk_label_set_text(GTK_LABEL(win->category_subtitles[i]), _("Not offered by this kernel"));
                } else
                        gtk_widget_set_tooltip_text(win->category_rows[i], list);
        }
}

/* ---- the window ---- */

static gboolean on_close_request(GtkWindow *w, gpointer user_data) {
        tracebus_app_window_closing(TRACEBUS_WINDOW(w)->app);
        return FALSE;
}

static GtkWidget *header_new(void) {
        GtkWidget *header = gtk_header_bar_new(), *menu_button = gtk_menu_button_new();
        g_autoptr(GMenu) menu = g_menu_new();

        g_menu_append(menu, _("_About Tracebus"), "app.about");
        g_menu_append(menu, _("_Quit"), "app.quit");
        gtk_menu_button_set_icon_name(GTK_MENU_BUTTON(menu_button), "open-menu-symbolic");
        gtk_menu_button_set_menu_model(GTK_MENU_BUTTON(menu_button), G_MENU_MODEL(menu));
        gtk_widget_set_tooltip_text(menu_button, _("Main Menu"));
        gtk_header_bar_pack_end(GTK_HEADER_BAR(header), menu_button);
        return header;
}

static void load_css(void) {
        static gboolean done;
        g_autoptr(GtkCssProvider) css = NULL;

        if (done)
                return;
        done = TRUE;
        css = gtk_css_provider_new();
        gtk_css_provider_load_from_resource(css, "/org/tracebus/Tracebus/style.css");
        gtk_style_context_add_provider_for_display(gdk_display_get_default(), GTK_STYLE_PROVIDER(css),
                                                   GTK_STYLE_PROVIDER_PRIORITY_APPLICATION);
}

static void tracebus_window_dispose(GObject *object) {
        TracebusWindow *win = TRACEBUS_WINDOW(object);

        g_clear_handle_id(&win->tick_id, g_source_remove);
        g_clear_pointer(&win->custom_events, g_hash_table_unref);
        G_OBJECT_CLASS(tracebus_window_parent_class)->dispose(object);
}

static void tracebus_window_class_init(TracebusWindowClass *klass) {
        G_OBJECT_CLASS(klass)->dispose = tracebus_window_dispose;
}

static void tracebus_window_init(TracebusWindow *win) {
        win->custom_events = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
}

TracebusWindow *tracebus_window_new(TracebusApp *app) {
        TracebusWindow *win = g_object_new(TRACEBUS_TYPE_WINDOW, "application", app, NULL);
        GtkWidget *outer = gtk_box_new(GTK_ORIENTATION_VERTICAL, 0);
        GtkWidget *panes = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 0);

        load_css();
        win->app = app;
        gtk_window_set_title(GTK_WINDOW(win), _("Tracebus"));
        gtk_window_set_default_size(GTK_WINDOW(win), 1120, 840);
        gtk_window_set_titlebar(GTK_WINDOW(win), header_new());

        gtk_box_append(GTK_BOX(outer), banner_new(win));
        gtk_box_append(GTK_BOX(panes), settings_pane_new(win));
        gtk_box_append(GTK_BOX(panes), gtk_separator_new(GTK_ORIENTATION_VERTICAL));
        gtk_box_append(GTK_BOX(panes), recordings_pane_new(win));
        gtk_widget_set_vexpand(panes, TRUE);
        gtk_box_append(GTK_BOX(outer), panes);
        gtk_window_set_child(GTK_WINDOW(win), outer);

        g_signal_connect_object(app, "error", G_CALLBACK(on_app_error), win, 0);
        g_signal_connect_object(app, "ready", G_CALLBACK(on_app_ready), win, 0);
        g_signal_connect(win, "close-request", G_CALLBACK(on_close_request), NULL);
        win->tick_id = g_timeout_add_seconds(1, on_tick, win);
        if (tracebus_app_is_ready(app))
                on_app_ready(app, win);
        return win;
}

/* ---- for the test driver ---- */

GtkWidget *tracebus_window_get_record_button(TracebusWindow *win) {
        return win->record;
}

GtkWidget *tracebus_window_get_category_switch(TracebusWindow *win, const char *id) {
        guint n_cat;
        const TbCategory *cats = tb_categories_get(&n_cat);

        for (guint i = 0; i < n_cat && i < MAX_CATEGORIES; i++)
                if (g_str_equal(cats[i].id, id))
                        return win->category_switches[i];
        return NULL;
}

GtkWidget *tracebus_window_get_keep_switch(TracebusWindow *win) {
        return win->keep;
}

GtkWidget *tracebus_window_get_row_button(TracebusWindow *win, TbRecording *r, const char *which) {
        for (int i = 0;; i++) {
                GtkListBoxRow *row = gtk_list_box_get_row_at_index(GTK_LIST_BOX(win->list), i);
                RowWidgets *w;
                GtkWidget *b = NULL;

                if (!row)
                        return NULL;
                w = g_object_get_data(G_OBJECT(row), "tb-row");
                if (!w || w->r != r)
                        continue;
                if (g_str_equal(which, "stop"))
                        b = w->stop;
                else if (g_str_equal(which, "save"))
                        b = w->save;
                else if (g_str_equal(which, "show"))
                        b = w->show;
                else if (g_str_equal(which, "discard"))
                        b = w->discard;
                return b && gtk_widget_get_visible(b) && gtk_widget_is_sensitive(b) ? b : NULL;
        }
}

char *tracebus_window_get_message(TracebusWindow *win) {
        const char *detail = gtk_label_get_text(GTK_LABEL(win->banner_detail));

        if (!gtk_revealer_get_child_revealed(GTK_REVEALER(win->banner)))
                return NULL;
        return g_strdup_printf("%s %s", gtk_label_get_text(GTK_LABEL(win->banner_title)), detail);
}

GtkWidget *tracebus_window_get_custom_button(TracebusWindow *win) {
        return win->custom_button;
}

gboolean tracebus_window_save_screenshot(GtkWindow *win, const char *path, GError **error) {
        int w = gtk_widget_get_width(GTK_WIDGET(win)), h = gtk_widget_get_height(GTK_WIDGET(win));
        g_autoptr(GdkPaintable) paintable = gtk_widget_paintable_new(GTK_WIDGET(win));
        GtkSnapshot *snapshot = gtk_snapshot_new();
        g_autoptr(GskRenderNode) node = NULL;
        g_autoptr(GdkTexture) texture = NULL;
        GskRenderer *renderer = gtk_native_get_renderer(GTK_NATIVE(win));

        gdk_paintable_snapshot(paintable, snapshot, w, h);
        node = gtk_snapshot_free_to_node(snapshot);
        if (!node || !renderer) {
                g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "the window has not been drawn yet (%dx%d%s%s)", w, h,
                            node ? "" : ", nothing to draw", renderer ? "" : ", no renderer");
                return FALSE;
        }
        texture = gsk_renderer_render_texture(renderer, node, &GRAPHENE_RECT_INIT(0, 0, w, h));
        if (!gdk_texture_save_to_png(texture, path)) {
                g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "could not write %s", path);
                return FALSE;
        }
        return TRUE;
}
