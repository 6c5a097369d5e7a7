/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <gtk/gtk.h>

G_BEGIN_DECLS

/*
 * "Custom events": a searchable list of what this kernel offers, with a
 * check box each. chosen is a set of "group/name" strings, edited in place;
 * done is called when the dialog closes.
 */
GtkWindow *tb_events_dialog_new(GtkWindow *parent, const char *const *available, GHashTable *chosen,
                                GCallback done, gpointer user_data);
/* For the test driver: the dialog's widgets ("tb-done-button", "tb-search-entry"
 * object data) are found with these. */
#define TB_EVENTS_DIALOG_KEY "tb-events-dialog"

G_END_DECLS
