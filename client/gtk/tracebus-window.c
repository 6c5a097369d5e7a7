/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <glib/gi18n.h>
#include <string.h>

#include "tb-events-dialog.h"
#include "tb-preview.h"
#include "tracebus-window-private.h"

G_DEFINE_FINAL_TYPE(TracebusWindow, tracebus_window, GTK_TYPE_APPLICATION_WINDOW)

/* ---- little builders ---- */

GtkWidget *window_label_new(const char *text, const char *css_class, float xalign) {
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
        GtkWidget *t = window_label_new(title, "tb-row-title", 0), *s = window_label_new(subtitle, "tb-caption", 0);

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

GtkWidget *window_card_new(void) {
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

void window_banner_hide(TracebusWindow *win) {
        gtk_revealer_set_reveal_child(GTK_REVEALER(win->banner), FALSE);
}

static void on_banner_close(GtkButton *b, gpointer user_data) {
        window_banner_hide(user_data);
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
        win->banner_title = window_label_new(NULL, "tb-row-title", 0);
        win->banner_detail = window_label_new(NULL, NULL, 0);
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

        window_banner_hide(win);
        for (guint i = 0; i < n_cat && i < MAX_CATEGORIES; i++)
                if (gtk_switch_get_active(GTK_SWITCH(win->category_switches[i])) &&
                    gtk_widget_get_sensitive(win->category_rows[i]))
                        g_ptr_array_add(ids, (char *) cats[i].id);
        if (gtk_switch_get_active(GTK_SWITCH(win->custom_switch)))
                custom = (char **) g_hash_table_get_keys_as_array(win->custom_events, NULL);
        events = tb_categories_resolve((const char *const *) ids->pdata, (const char *const *) custom,
                                       tracebus_app_get_available_events(win->app), &missing);
        s.counters = tb_categories_counters((const char *const *) ids->pdata);
        if (!events[0] && !s.counters) {
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

/* ---- the apps built with the Perfetto SDK ---- */

/* Their category's row says which are connected, under what it records. */
static void on_producers_changed(TracebusApp *app, gpointer user_data) {
        TracebusWindow *win = user_data;
        const char *text = tracebus_app_get_producers_text(app);
        const TbCategory *c;
        guint n_cat;
        g_autofree char *subtitle = NULL;

        if (win->apps_category < 0 || !text)
                return;
        c = &tb_categories_get(&n_cat)[win->apps_category];
        subtitle = g_strdup_printf("%s\n%s", _(c->description), text);
        gtk_label_set_text(GTK_LABEL(win->category_subtitles[win->apps_category]), subtitle);
}

/* Apps come and go: asked again whenever the window comes to the front or the category
 * is switched on. */
static void on_window_active(GObject *object, GParamSpec *pspec, gpointer user_data) {
        TracebusWindow *win = TRACEBUS_WINDOW(object);

        if (gtk_window_is_active(GTK_WINDOW(win)))
                tracebus_app_refresh_producers(win->app);
}

static void on_apps_switch(GObject *object, GParamSpec *pspec, gpointer user_data) {
        TracebusWindow *win = user_data;

        if (gtk_switch_get_active(GTK_SWITCH(object)))
                tracebus_app_refresh_producers(win->app);
}

/* "What to record": a switch per category, and the custom events. */
static GtkWidget *what_card_new(TracebusWindow *win) {
        GtkWidget *what = window_card_new(), *buttons = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 6);
        guint n_cat;
        const TbCategory *cats = tb_categories_get(&n_cat);

        for (guint i = 0; i < n_cat && i < MAX_CATEGORIES; i++) {
                win->category_switches[i] = gtk_switch_new();
                gtk_switch_set_active(GTK_SWITCH(win->category_switches[i]), cats[i].default_on);
                win->category_rows[i] = setting_row_new(_(cats[i].name), _(cats[i].description),
                                                        win->category_switches[i], &win->category_subtitles[i]);
                gtk_list_box_append(GTK_LIST_BOX(what), win->category_rows[i]);
                if (cats[i].counters & TB_COUNTERS_TRACK_EVENT) {
                        win->apps_category = (int) i;
                        g_signal_connect(win->category_switches[i], "notify::active", G_CALLBACK(on_apps_switch), win);
                }
        }
        win->custom_button = gtk_button_new_with_mnemonic(_("_Choose…"));
        g_signal_connect(win->custom_button, "clicked", G_CALLBACK(on_custom_clicked), win);
        win->custom_switch = gtk_switch_new();
        gtk_widget_set_valign(win->custom_button, GTK_ALIGN_CENTER);
        gtk_widget_set_valign(win->custom_switch, GTK_ALIGN_CENTER);
        gtk_box_append(GTK_BOX(buttons), win->custom_button);
        gtk_box_append(GTK_BOX(buttons), win->custom_switch);
        gtk_list_box_append(GTK_LIST_BOX(what), setting_row_new(_("Custom events"), "", buttons, &win->custom_subtitle));
        update_custom_subtitle(win);
        return what;
}

/* "How to record": buffer mode and size, limits, and whether to keep recording. */
static GtkWidget *how_card_new(TracebusWindow *win) {
        GtkWidget *how = window_card_new();
        const char *modes[] = { _("Ring buffer, saved at stop"), _("Long trace, written as it goes"), NULL };

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
        return how;
}

/* The Record button, which stays in view however small the window. */
static GtkWidget *record_footer_new(TracebusWindow *win) {
        GtkWidget *footer = gtk_box_new(GTK_ORIENTATION_VERTICAL, 4);

        gtk_widget_add_css_class(footer, "tb-footer");
        win->record = gtk_button_new_with_mnemonic(_("Start _Recording"));
        gtk_widget_add_css_class(win->record, "suggested-action");
        gtk_widget_add_css_class(win->record, "tb-record");
        gtk_widget_set_sensitive(win->record, FALSE);
        g_signal_connect(win->record, "clicked", G_CALLBACK(on_record_clicked), win);
        gtk_box_append(GTK_BOX(footer), win->record);
        win->record_hint = window_label_new(_("Connecting to the tracing service…"), "tb-caption", 0.5);
        gtk_box_append(GTK_BOX(footer), win->record_hint);
        return footer;
}

static GtkWidget *settings_pane_new(TracebusWindow *win) {
        GtkWidget *scroll = gtk_scrolled_window_new(), *box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 6);
        GtkWidget *pane = gtk_box_new(GTK_ORIENTATION_VERTICAL, 0);

        gtk_widget_add_css_class(box, "tb-pane");
        gtk_box_append(GTK_BOX(box), window_label_new(_("What to record"), "tb-heading", 0));
        gtk_box_append(GTK_BOX(box), what_card_new(win));
        gtk_box_append(GTK_BOX(box), window_label_new(_("How to record"), "tb-heading", 0));
        gtk_box_append(GTK_BOX(box), how_card_new(win));

        gtk_scrolled_window_set_child(GTK_SCROLLED_WINDOW(scroll), box);
        gtk_scrolled_window_set_policy(GTK_SCROLLED_WINDOW(scroll), GTK_POLICY_NEVER, GTK_POLICY_AUTOMATIC);
        gtk_scrolled_window_set_propagate_natural_height(GTK_SCROLLED_WINDOW(scroll), TRUE);
        gtk_widget_set_vexpand(scroll, TRUE);

        gtk_box_append(GTK_BOX(pane), scroll);
        gtk_box_append(GTK_BOX(pane), record_footer_new(win));
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
        tracebus_app_refresh_producers(app);
        gtk_widget_set_sensitive(win->custom_button, available != NULL);
        if (!available)
                return;
        for (guint i = 0; i < n_cat && i < MAX_CATEGORIES; i++) {
                g_auto(GStrv) have = tb_category_available_events(&cats[i], available);
                g_autofree char *list = g_strjoinv(", ", have);

                /* A category with counters records them without any of its events. */
                if (!have[0] && !cats[i].counters) {
                        gtk_switch_set_active(GTK_SWITCH(win->category_switches[i]), FALSE);
                        gtk_widget_set_sensitive(win->category_rows[i], FALSE);
                        gtk_label_set_text(GTK_LABEL(win->category_subtitles[i]), _("Not offered by this kernel"));
                } else
                        gtk_widget_set_tooltip_text(win->category_rows[i], list);
        }
}

/* ---- Open Trace… ---- */

static void on_open_response(GtkNativeDialog *native, int response, gpointer user_data) {
        TracebusWindow *win = user_data;
        g_autoptr(GFile) file = NULL;
        g_autofree char *path = NULL;

        if (response == GTK_RESPONSE_ACCEPT)
                file = gtk_file_chooser_get_file(GTK_FILE_CHOOSER(native));
        path = file ? g_file_get_path(file) : NULL;
        gtk_native_dialog_destroy(native);
        g_object_unref(native);
        if (path)
                tb_preview_window_open(win->app, GTK_WINDOW(win), path, NULL);
}

/* A trace file of the user's, shown in the trace preview. */
static void action_open_trace(GSimpleAction *action, GVariant *param, gpointer user_data) {
        TracebusWindow *win = user_data;
        GtkFileChooserNative *native;
        GtkFileFilter *traces = gtk_file_filter_new(), *all = gtk_file_filter_new();

        G_GNUC_BEGIN_IGNORE_DEPRECATIONS
        native = gtk_file_chooser_native_new(_("Open Trace"), GTK_WINDOW(win), GTK_FILE_CHOOSER_ACTION_OPEN, _("_Open"),
                                             _("_Cancel"));
        gtk_file_filter_set_name(traces, _("Perfetto traces"));
        gtk_file_filter_add_pattern(traces, "*.pftrace");
        gtk_file_filter_add_pattern(traces, "*.perfetto-trace");
        gtk_file_filter_add_pattern(traces, "*.pb");
        gtk_file_filter_set_name(all, _("All files"));
        gtk_file_filter_add_pattern(all, "*");
        gtk_file_chooser_add_filter(GTK_FILE_CHOOSER(native), traces);
        gtk_file_chooser_add_filter(GTK_FILE_CHOOSER(native), all);
        G_GNUC_END_IGNORE_DEPRECATIONS
        gtk_native_dialog_set_modal(GTK_NATIVE_DIALOG(native), TRUE);
        g_signal_connect(native, "response", G_CALLBACK(on_open_response), win);
        tracebus_app_file_chooser_opening(win->app, GTK_FILE_CHOOSER(native));
        gtk_native_dialog_show(GTK_NATIVE_DIALOG(native));
}

/* ---- the window ---- */

static gboolean on_close_request(GtkWindow *w, gpointer user_data) {
        tracebus_app_window_closing(TRACEBUS_WINDOW(w)->app);
        return FALSE;
}

static GtkWidget *header_new(void) {
        GtkWidget *header = gtk_header_bar_new(), *menu_button = gtk_menu_button_new();
        g_autoptr(GMenu) menu = g_menu_new();

        g_menu_append(menu, _("_Open Trace…"), "win.open-trace");
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
        win->apps_category = -1;
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
        gtk_box_append(GTK_BOX(panes), window_recordings_pane_new(win));
        gtk_widget_set_vexpand(panes, TRUE);
        gtk_box_append(GTK_BOX(outer), panes);
        gtk_window_set_child(GTK_WINDOW(win), outer);

        g_signal_connect_object(app, "error", G_CALLBACK(on_app_error), win, 0);
        g_signal_connect_object(app, "warning", G_CALLBACK(on_app_error), win, 0);
        g_signal_connect_object(app, "ready", G_CALLBACK(on_app_ready), win, 0);
        g_signal_connect_object(app, "producers-changed", G_CALLBACK(on_producers_changed), win, 0);
        g_signal_connect(win, "notify::is-active", G_CALLBACK(on_window_active), NULL);
        g_signal_connect(win, "close-request", G_CALLBACK(on_close_request), NULL);
        win->tick_id = g_timeout_add_seconds(1, window_rows_tick, win);
        g_action_map_add_action_entries(G_ACTION_MAP(win),
                                        (const GActionEntry[]) { { .name = "open-trace", .activate = action_open_trace } },
                                        1, win);
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

const char *tracebus_window_get_category_subtitle(TracebusWindow *win, const char *id) {
        GtkWidget *sw = tracebus_window_get_category_switch(win, id);
        guint n_cat;

        tb_categories_get(&n_cat);
        for (guint i = 0; sw && i < n_cat && i < MAX_CATEGORIES; i++)
                if (win->category_switches[i] == sw)
                        return gtk_label_get_text(GTK_LABEL(win->category_subtitles[i]));
        return NULL;
}

GtkWidget *tracebus_window_get_keep_switch(TracebusWindow *win) {
        return win->keep;
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
