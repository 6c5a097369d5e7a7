/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The window's list of recordings: one row per TbRecording of the app's model,
 * with its state, counters and buttons (stop, save, show, discard).
 */
#include <glib/gi18n.h>
#include <string.h>

#include "tb-preview.h"
#include "tracebus-window-private.h"

/* The widgets of one recording's row. */
typedef struct {
        TbRecording *r; /* not a reference: the model holds it as long as the row */
        GtkWidget *icon, *spinner, *title, *subtitle;
        GtkWidget *elapsed, *written, *events, *lost;
        GtkWidget *stop, *save, *show, *discard;
        GtkWidget *preview;
        GtkWidget *snapshot;            /* Save Snapshot, while recording */
        TbRecordingState last_state; /* to open the preview once, when it finishes */
} RowWidgets;

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
        gtk_widget_set_visible(w->snapshot, live);
        gtk_widget_set_sensitive(w->snapshot, r->state == TB_RECORDING_RECORDING && r->object_path);
        gtk_widget_set_visible(w->save, !live && r->file_path);
        gtk_widget_set_visible(w->show, !live && r->file_path);
        gtk_widget_set_visible(w->discard, !live && !r->foreign);
        gtk_widget_set_visible(w->preview, !live && r->file_path);
}

static TracebusWindow *row_window(GtkWidget *w) {
        return TRACEBUS_WINDOW(gtk_widget_get_root(w));
}

static void open_preview(GtkWidget *row, TbRecording *r) {
        TracebusWindow *win = row_window(row);

        tb_preview_window_open(win->app, GTK_WINDOW(win), r->file_path, r->summary);
}

/* A recording of ours that just finished shows its preview; one found finished
 * (in the index at startup) waits for its Preview button. */
static void on_recording_changed(TbRecording *r, gpointer user_data) {
        RowWidgets *w = g_object_get_data(G_OBJECT(user_data), "tb-row");
        gboolean just_finished = w->last_state != TB_RECORDING_FINISHED && r->state == TB_RECORDING_FINISHED;

        w->last_state = r->state;
        row_update(w);
        if (just_finished && !r->foreign && r->file_path && gtk_widget_get_mapped(GTK_WIDGET(user_data)))
                open_preview(GTK_WIDGET(user_data), r);
}

static void on_preview_clicked(GtkButton *b, gpointer user_data) {
        RowWidgets *w = user_data;

        open_preview(GTK_WIDGET(b), w->r);
}

static void on_stop_clicked(GtkButton *b, gpointer user_data) {
        RowWidgets *w = user_data;
        TracebusWindow *win = row_window(GTK_WIDGET(b));

        window_banner_hide(win);
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
        tracebus_app_file_chooser_opening(win->app, GTK_FILE_CHOOSER(native));
        gtk_native_dialog_show(GTK_NATIVE_DIALOG(native));
}

static void on_show_clicked(GtkButton *b, gpointer user_data) {
        RowWidgets *w = user_data;
        tracebus_app_show_in_files(row_window(GTK_WIDGET(b))->app, w->r);
}

static void on_snapshot_clicked(GtkButton *b, gpointer user_data) {
        RowWidgets *w = user_data;
        tracebus_app_snapshot_recording(row_window(GTK_WIDGET(b))->app, w->r);
}

static void on_discard_clicked(GtkButton *b, gpointer user_data) {
        RowWidgets *w = user_data;
        tracebus_app_discard_recording(row_window(GTK_WIDGET(b))->app, w->r);
}

static GtkWidget *stat_new(GtkWidget *grid, int column, const char *caption) {
        GtkWidget *value = window_label_new("0", "tb-stat", 0), *cap = window_label_new(caption, "tb-caption", 0);

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
        w->last_state = r->state;
        g_object_set_data_full(G_OBJECT(row), "tb-row", w, g_free);
        w->icon = gtk_image_new();
        gtk_image_set_pixel_size(GTK_IMAGE(w->icon), 24);
        w->spinner = gtk_spinner_new();
        gtk_widget_set_size_request(w->spinner, 24, 24);
        gtk_widget_set_valign(w->icon, GTK_ALIGN_START);
        gtk_widget_set_valign(w->spinner, GTK_ALIGN_START);
        gtk_box_append(GTK_BOX(box), w->icon);
        gtk_box_append(GTK_BOX(box), w->spinner);

        w->title = window_label_new(NULL, "tb-row-title", 0);
        w->subtitle = window_label_new(NULL, "tb-caption", 0);
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
        w->snapshot = row_button_new(_("Save S_napshot"), NULL, G_CALLBACK(on_snapshot_clicked), w);
        gtk_widget_set_tooltip_text(w->snapshot, _("Save what the recording holds so far; it goes on recording"));
        w->show = row_button_new(_("Show in _Files"), NULL, G_CALLBACK(on_show_clicked), w);
        w->preview = row_button_new(_("_Preview"), NULL, G_CALLBACK(on_preview_clicked), w);
        w->discard = gtk_button_new_from_icon_name("user-trash-symbolic");
        gtk_widget_set_tooltip_text(w->discard, _("Delete this trace"));
        gtk_widget_set_valign(w->discard, GTK_ALIGN_CENTER);
        g_signal_connect(w->discard, "clicked", G_CALLBACK(on_discard_clicked), w);
        gtk_box_append(GTK_BOX(buttons), w->snapshot);
        gtk_box_append(GTK_BOX(buttons), w->stop);
        gtk_box_append(GTK_BOX(buttons), w->preview);
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

gboolean window_rows_tick(gpointer user_data) {
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
        GtkWidget *title = window_label_new(_("No recordings yet"), "tb-empty-title", 0.5);
        GtkWidget *text = window_label_new(_("Choose what to record, then press Start Recording. "
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

GtkWidget *window_recordings_pane_new(TracebusWindow *win) {
        GtkWidget *box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 6);
        GtkWidget *scroll = gtk_scrolled_window_new(), *inner = gtk_box_new(GTK_ORIENTATION_VERTICAL, 6);
        GListModel *model = tracebus_app_get_recordings(win->app);

        gtk_widget_add_css_class(box, "tb-pane");
        gtk_widget_set_hexpand(box, TRUE);
        gtk_box_append(GTK_BOX(box), window_label_new(_("Recordings"), "tb-heading", 0));

        win->list = window_card_new();
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
                else if (g_str_equal(which, "preview"))
                        b = w->preview;
                else if (g_str_equal(which, "snapshot"))
                        b = w->snapshot;
                return b && gtk_widget_get_visible(b) && gtk_widget_is_sensitive(b) ? b : NULL;
        }
}

