/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <glib/gi18n.h>
#include <string.h>

#include "tb-events-dialog.h"

typedef struct {
        GHashTable *chosen;
        GtkCustomFilter *filter;
        GtkWidget *search, *count;
        GCallback done;
        gpointer user_data;
} EventsDialog;

static void events_dialog_free(gpointer p) {
        EventsDialog *d = p;

        g_hash_table_unref(d->chosen);
        g_clear_object(&d->filter);
        g_free(d);
}

static void update_count(EventsDialog *d) {
        guint n = g_hash_table_size(d->chosen);
        g_autofree char *s = g_strdup_printf(g_dngettext(NULL, "%u event chosen", "%u events chosen", n), n);

        gtk_label_set_text(GTK_LABEL(d->count), s);
}

static gboolean match_event(gpointer item, gpointer user_data) {
        EventsDialog *d = user_data;
        const char *text = gtk_editable_get_text(GTK_EDITABLE(d->search));
        const char *event = gtk_string_object_get_string(GTK_STRING_OBJECT(item));
        g_autofree char *needle = NULL, *hay = NULL;

        if (!text || !*text)
                return TRUE;
        needle = g_utf8_casefold(text, -1);
        hay = g_utf8_casefold(event, -1);
        return strstr(hay, needle) != NULL;
}

static void on_search_changed(GtkSearchEntry *entry, gpointer user_data) {
        EventsDialog *d = user_data;
        gtk_filter_changed(GTK_FILTER(d->filter), GTK_FILTER_CHANGE_DIFFERENT);
}

static void on_check_toggled(GtkCheckButton *check, gpointer user_data) {
        EventsDialog *d = user_data;
        const char *event = g_object_get_data(G_OBJECT(check), "tb-event");

        if (!event || g_object_get_data(G_OBJECT(check), "tb-binding"))
                return;
        if (gtk_check_button_get_active(check))
                g_hash_table_add(d->chosen, g_strdup(event));
        else
                g_hash_table_remove(d->chosen, event);
        update_count(d);
}

static void setup_item(GtkSignalListItemFactory *f, GtkListItem *item, gpointer user_data) {
        GtkWidget *check = gtk_check_button_new();

        gtk_widget_set_margin_start(check, 6);
        g_signal_connect(check, "toggled", G_CALLBACK(on_check_toggled), user_data);
        gtk_list_item_set_child(item, check);
}

static void bind_item(GtkSignalListItemFactory *f, GtkListItem *item, gpointer user_data) {
        EventsDialog *d = user_data;
        GtkWidget *check = gtk_list_item_get_child(item);
        const char *event = gtk_string_object_get_string(GTK_STRING_OBJECT(gtk_list_item_get_item(item)));

        g_object_set_data(G_OBJECT(check), "tb-binding", GINT_TO_POINTER(1));
        g_object_set_data_full(G_OBJECT(check), "tb-event", g_strdup(event), g_free);
        gtk_check_button_set_label(GTK_CHECK_BUTTON(check), event);
        gtk_check_button_set_active(GTK_CHECK_BUTTON(check), g_hash_table_contains(d->chosen, event));
        g_object_set_data(G_OBJECT(check), "tb-binding", NULL);
}

static void on_done_clicked(GtkButton *button, gpointer user_data) {
        gtk_window_close(GTK_WINDOW(user_data));
}

static void on_destroy(GtkWidget *w, gpointer user_data) {
        EventsDialog *d = g_object_get_data(G_OBJECT(w), "tb-events-dialog");

        if (d && d->done)
                ((void (*)(gpointer)) d->done)(d->user_data);
}

GtkWindow *tb_events_dialog_new(GtkWindow *parent, const char *const *available, GHashTable *chosen,
                                GCallback done, gpointer user_data) {
        EventsDialog *d = g_new0(EventsDialog, 1);
        GtkWidget *win = gtk_window_new(), *header = gtk_header_bar_new(), *box, *scroll, *list, *button;
        GtkStringList *strings = gtk_string_list_new(available);
        GtkFilterListModel *filtered;
        GtkListItemFactory *factory;

        d->chosen = g_hash_table_ref(chosen);
        d->done = done;
        d->user_data = user_data;
        g_object_set_data_full(G_OBJECT(win), "tb-events-dialog", d, events_dialog_free);

        gtk_window_set_title(GTK_WINDOW(win), _("Custom Events"));
        gtk_window_set_transient_for(GTK_WINDOW(win), parent);
        gtk_window_set_modal(GTK_WINDOW(win), TRUE);
        gtk_window_set_default_size(GTK_WINDOW(win), 460, 560);
        button = gtk_button_new_with_mnemonic(_("_Done"));
        gtk_widget_add_css_class(button, "suggested-action");
        g_signal_connect(button, "clicked", G_CALLBACK(on_done_clicked), win);
        gtk_header_bar_pack_end(GTK_HEADER_BAR(header), button);
        g_object_set_data(G_OBJECT(win), "tb-done-button", button);
        g_object_set_data(G_OBJECT(win), "tb-search-entry", NULL);
        gtk_header_bar_set_show_title_buttons(GTK_HEADER_BAR(header), FALSE);
        gtk_window_set_titlebar(GTK_WINDOW(win), header);

        box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 6);
        gtk_widget_set_margin_start(box, 12);
        gtk_widget_set_margin_end(box, 12);
        gtk_widget_set_margin_top(box, 12);
        gtk_widget_set_margin_bottom(box, 12);
        d->search = gtk_search_entry_new();
        gtk_search_entry_set_key_capture_widget(GTK_SEARCH_ENTRY(d->search), win);
        g_object_set(d->search, "placeholder-text", _("Search events, for example “sched” or “irq/”"), NULL);
        g_signal_connect(d->search, "search-changed", G_CALLBACK(on_search_changed), d);
        gtk_box_append(GTK_BOX(box), d->search);
        g_object_set_data(G_OBJECT(win), "tb-search-entry", d->search);

        d->filter = gtk_custom_filter_new(match_event, d, NULL);
        filtered = gtk_filter_list_model_new(G_LIST_MODEL(strings), GTK_FILTER(g_object_ref(d->filter)));
        factory = gtk_signal_list_item_factory_new();
        g_signal_connect(factory, "setup", G_CALLBACK(setup_item), d);
        g_signal_connect(factory, "bind", G_CALLBACK(bind_item), d);
        list = gtk_list_view_new(GTK_SELECTION_MODEL(gtk_no_selection_new(G_LIST_MODEL(filtered))), factory);
        scroll = gtk_scrolled_window_new();
        gtk_scrolled_window_set_child(GTK_SCROLLED_WINDOW(scroll), list);
        gtk_widget_set_vexpand(scroll, TRUE);
        gtk_widget_add_css_class(scroll, "tb-frame");
        gtk_box_append(GTK_BOX(box), scroll);

        d->count = gtk_label_new(NULL);
        gtk_widget_add_css_class(d->count, "tb-dim");
        gtk_label_set_xalign(GTK_LABEL(d->count), 0);
        update_count(d);
        gtk_box_append(GTK_BOX(box), d->count);
        gtk_window_set_child(GTK_WINDOW(win), box);
        g_signal_connect(win, "destroy", G_CALLBACK(on_destroy), NULL);
        return GTK_WINDOW(win);
}
