/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <glib/gi18n.h>
#include <string.h>

#include "producers.h"

/* The SDK apps name themselves by their argv[0]: the last part says which program. */
static void append_name(GString *s, const char *name) {
        const char *slash = strrchr(name, '/');

        g_string_append(s, slash && slash[1] ? slash + 1 : name);
}

static void append_sources(GString *s, GVariantIter *sources) {
        const char *source;
        GVariantIter *categories;
        gboolean first = TRUE;

        while (g_variant_iter_next(sources, "(&sas)", &source, &categories)) {
                const char *category;
                gboolean first_category = TRUE;

                g_string_append(s, first ? " " : ", ");
                g_string_append(s, source);
                while (g_variant_iter_next(categories, "&s", &category)) {
                        g_string_append(s, first_category ? " (" : ", ");
                        g_string_append(s, category);
                        first_category = FALSE;
                }
                if (!first_category)
                        g_string_append_c(s, ')');
                g_variant_iter_free(categories);
                first = FALSE;
        }
        if (first)
                g_string_append_printf(s, " %s", _("no data source yet"));
}

char *tb_producers_describe(GVariant *producers) {
        GString *s;
        GVariantIter iter, *sources;
        const char *name;
        guint64 id;
        guint32 uid, pid;

        if (!producers || !g_variant_is_of_type(producers, G_VARIANT_TYPE(TB_PRODUCERS_TYPE)))
                return NULL;
        if (g_variant_n_children(producers) == 0)
                return g_strdup(_("No app connected now."));
        s = g_string_new(NULL);
        g_variant_iter_init(&iter, producers);
        while (g_variant_iter_next(&iter, "(t&suua(sas))", &id, &name, &uid, &pid, &sources)) {
                if (s->len > 0)
                        g_string_append_c(s, '\n');
                append_name(s, name);
                /* TRANSLATORS: after an app's name: its process id, then its data sources */
                g_string_append_printf(s, _(" (pid %u):"), pid);
                append_sources(s, sources);
                g_variant_iter_free(sources);
        }
        return g_string_free(s, FALSE);
}
