/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The trace preview window (tb-preview.h): a spinner while a worker thread
 * reads the trace (preview-model.c), then the summary and one plot per kind of
 * counter, drawn with cairo in a GtkDrawingArea, a legend under each.
 */
#include <glib/gi18n.h>

#include "messages.h"
#include "tb-preview.h"

#define PREVIEW_KEY "tb-preview"
#define PLOT_HEIGHT 150
#define MARGIN_LEFT 78
#define MARGIN_RIGHT 12
#define MARGIN_TOP 8
#define MARGIN_BOTTOM 22

typedef struct {
        TracebusApp *app;
        TbPreview *model;
        GCancellable *cancel;
        GtkWidget *stack, *content;
        char *title;
        guint n_plots;
} Preview;

static void preview_free(gpointer p) {
        Preview *pv = p;

        g_cancellable_cancel(pv->cancel);
        g_clear_object(&pv->cancel);
        g_clear_object(&pv->app);
        g_clear_pointer(&pv->model, tb_preview_free);
        g_free(pv->title);
        g_free(pv);
}

/* ---- one plot ---- */

typedef struct {
        const TbPreview *model; /* the window's, which outlives its widgets */
        TbSeriesKind kind;
} Plot;

static const double palette[][3] = {
        { 0.21, 0.52, 0.89 }, { 0.90, 0.38, 0.00 }, { 0.18, 0.76, 0.49 }, { 0.75, 0.11, 0.16 },
        { 0.57, 0.25, 0.67 }, { 0.96, 0.76, 0.07 }, { 0.39, 0.27, 0.17 }, { 0.40, 0.40, 0.40 },
};

static char *format_value(TbSeriesKind kind, double v) {
        switch (kind) {
        case TB_SERIES_MEMINFO:
        case TB_SERIES_RSS:
                return g_format_size_full((guint64) MAX(v, 0) * 1024, G_FORMAT_SIZE_IEC_UNITS);
        case TB_SERIES_CPUFREQ:
        case TB_SERIES_CPUFREQ_EVENTS:
                return g_strdup_printf("%.2f GHz", v / 1e6);
        case TB_SERIES_CPU_IDLE:
                return g_strdup_printf("%.0f %%", v);
        default:
                return g_strdup_printf("%.0f", v);
        }
}

/* The range of the kind's series; a flat line gets room above and below. */
static void plot_range(const Plot *pl, double *lo, double *hi) {
        gboolean any = FALSE;

        *lo = *hi = 0;
        for (guint i = 0; i < pl->model->series->len; i++) {
                const TbSeries *s = g_ptr_array_index(pl->model->series, i);
                if (s->kind != pl->kind || !tb_series_plotted(s))
                        continue;
                *lo = any ? MIN(*lo, s->min) : s->min;
                *hi = any ? MAX(*hi, s->max) : s->max;
                any = TRUE;
        }
        if (*hi - *lo < 1e-9) {
                *lo -= MAX(1, ABS(*lo) * 0.05);
                *hi += MAX(1, ABS(*hi) * 0.05);
        }
}

static void draw_axes(cairo_t *cr, const Plot *pl, int w, int h, double lo, double hi) {
        g_autofree char *top = format_value(pl->kind, hi), *bottom = format_value(pl->kind, lo);
        g_autofree char *end = g_strdup_printf("%.1f s", tb_preview_duration_ns(pl->model) / 1e9);

        cairo_set_source_rgba(cr, 0.5, 0.5, 0.5, 0.35);
        cairo_set_line_width(cr, 1);
        for (int i = 0; i <= 2; i++) {
                double y = MARGIN_TOP + (h - MARGIN_TOP - MARGIN_BOTTOM) * i / 2.0;
                cairo_move_to(cr, MARGIN_LEFT, (int) y + 0.5);
                cairo_line_to(cr, w - MARGIN_RIGHT, (int) y + 0.5);
        }
        cairo_stroke(cr);
        cairo_set_source_rgb(cr, 0.5, 0.5, 0.5);
        cairo_set_font_size(cr, 11);
        cairo_move_to(cr, 4, MARGIN_TOP + 10);
        cairo_show_text(cr, top);
        cairo_move_to(cr, 4, h - MARGIN_BOTTOM);
        cairo_show_text(cr, bottom);
        cairo_move_to(cr, MARGIN_LEFT, h - 6);
        cairo_show_text(cr, "0 s");
        cairo_move_to(cr, w - MARGIN_RIGHT - 40, h - 6);
        cairo_show_text(cr, end);
}

static void draw_series(cairo_t *cr, const Plot *pl, const TbSeries *s, guint color, int w, int h, double lo,
                        double hi) {
        double span = MAX(1, (double) tb_preview_duration_ns(pl->model));
        double pw = w - MARGIN_LEFT - MARGIN_RIGHT, ph = h - MARGIN_TOP - MARGIN_BOTTOM;

        cairo_set_source_rgb(cr, palette[color][0], palette[color][1], palette[color][2]);
        cairo_set_line_width(cr, 1.5);
        for (guint i = 0; i < s->n_points; i++) {
                double x = MARGIN_LEFT + pw * (double) (s->points[i].ts - pl->model->first_ts) / span;
                double y = MARGIN_TOP + ph * (1 - (s->points[i].value - lo) / (hi - lo));

                if (i == 0)
                        cairo_move_to(cr, x, y);
                else
                        cairo_line_to(cr, x, y);
        }
        /* linux.process_stats writes a value only when it changed: it holds until the end. */
        if (s->kind == TB_SERIES_RSS && s->n_points > 0)
                cairo_line_to(cr, MARGIN_LEFT + pw, MARGIN_TOP + ph * (1 - (s->points[s->n_points - 1].value - lo) / (hi - lo)));
        if (s->n_points == 1 && s->kind != TB_SERIES_RSS) {
                cairo_stroke(cr);
                cairo_arc(cr, MARGIN_LEFT + pw * (double) (s->points[0].ts - pl->model->first_ts) / span,
                          MARGIN_TOP + ph * (1 - (s->points[0].value - lo) / (hi - lo)), 2.5, 0, 2 * G_PI);
                cairo_fill(cr);
                return;
        }
        cairo_stroke(cr);
}

static void draw_plot(GtkDrawingArea *area, cairo_t *cr, int w, int h, gpointer data) {
        const Plot *pl = data;
        double lo, hi;
        guint n = 0;

        plot_range(pl, &lo, &hi);
        draw_axes(cr, pl, w, h, lo, hi);
        for (guint i = 0; i < pl->model->series->len; i++) {
                const TbSeries *s = g_ptr_array_index(pl->model->series, i);
                if (s->kind == pl->kind && tb_series_plotted(s))
                        draw_series(cr, pl, s, n++ % G_N_ELEMENTS(palette), w, h, lo, hi);
        }
}

static GtkWidget *legend_new(const TbPreview *model, TbSeriesKind kind) {
        GtkWidget *flow = gtk_flow_box_new();
        guint n = 0;

        gtk_flow_box_set_selection_mode(GTK_FLOW_BOX(flow), GTK_SELECTION_NONE);
        gtk_flow_box_set_max_children_per_line(GTK_FLOW_BOX(flow), 8);
        for (guint i = 0; i < model->series->len; i++) {
                const TbSeries *s = g_ptr_array_index(model->series, i);
                const double *c = palette[n % G_N_ELEMENTS(palette)];
                g_autofree char *markup = NULL;
                GtkWidget *label;

                if (s->kind != kind || !tb_series_plotted(s))
                        continue;
                n++;
                markup = g_markup_printf_escaped("<span foreground=\"#%02x%02x%02x\">■</span> %s", (int) (c[0] * 255),
                                                 (int) (c[1] * 255), (int) (c[2] * 255), s->name);
                label = gtk_label_new(NULL);
                gtk_label_set_markup(GTK_LABEL(label), markup);
                gtk_label_set_xalign(GTK_LABEL(label), 0);
                gtk_widget_add_css_class(label, "tb-caption");
                gtk_flow_box_append(GTK_FLOW_BOX(flow), label);
        }
        return flow;
}

static GtkWidget *label_new(const char *text, const char *css_class) {
        GtkWidget *l = gtk_label_new(text);

        gtk_label_set_xalign(GTK_LABEL(l), 0);
        gtk_label_set_wrap(GTK_LABEL(l), TRUE);
        if (css_class)
                gtk_widget_add_css_class(l, css_class);
        return l;
}

static void add_plot(Preview *pv, GtkWidget *box, TbSeriesKind kind) {
        GtkWidget *area = gtk_drawing_area_new();
        const char *caption = _(tb_series_kind_title(kind));
        Plot *pl = g_new0(Plot, 1);

        pl->model = pv->model;
        pl->kind = kind;
        gtk_drawing_area_set_content_height(GTK_DRAWING_AREA(area), PLOT_HEIGHT);
        gtk_widget_set_hexpand(area, TRUE);
        gtk_drawing_area_set_draw_func(GTK_DRAWING_AREA(area), draw_plot, pl, g_free);
        gtk_box_append(GTK_BOX(box), label_new(caption, "tb-caption"));
        gtk_box_append(GTK_BOX(box), area);
        gtk_box_append(GTK_BOX(box), legend_new(pv->model, kind));
        pv->n_plots++;
}

/* ---- the page ---- */

static GtkWidget *stat_new(GtkWidget *grid, int column, const char *value, const char *caption) {
        GtkWidget *v = label_new(value, "tb-stat");

        gtk_grid_attach(GTK_GRID(grid), v, column, 0, 1, 1);
        gtk_grid_attach(GTK_GRID(grid), label_new(caption, "tb-caption"), column, 1, 1, 1);
        return v;
}

static void add_summary(Preview *pv, GtkWidget *box) {
        const TbPreview *m = pv->model;
        GtkWidget *grid = gtk_grid_new();
        g_autofree char *duration = g_strdup_printf(_("%.1f s"), tb_preview_duration_ns(m) / 1e9);
        g_autofree char *events = tb_format_count(m->n_events), *lost = tb_format_count(m->n_lost);
        g_autofree char *warnings = tb_format_count(m->warnings->len);

        gtk_grid_set_column_spacing(GTK_GRID(grid), 24);
        stat_new(grid, 0, duration, _("Duration"));
        stat_new(grid, 1, events, _("Events"));
        if (m->n_lost)
                gtk_widget_add_css_class(stat_new(grid, 2, lost, _("Lost")), "tb-warning");
        else
                stat_new(grid, 2, lost, _("Lost"));
        stat_new(grid, 3, warnings, _("Warnings"));
        gtk_box_append(GTK_BOX(box), label_new(pv->title, "tb-heading"));
        gtk_box_append(GTK_BOX(box), grid);
        if (m->read_error)
                gtk_box_append(GTK_BOX(box), label_new(m->read_error, "tb-warning"));
        for (guint i = 0; i < m->warnings->len; i++) {
                g_autofree char *w = g_strdup_printf("⚠ %s", (const char *) g_ptr_array_index(m->warnings, i));
                gtk_box_append(GTK_BOX(box), label_new(w, "tb-caption"));
        }
}

/* A section: its plots, or the note of why there are none; nothing when the trace
 * has neither. Returns whether it showed. */
static gboolean add_section(Preview *pv, GtkWidget *box, TbPreviewSection section) {
        g_autofree char *note = tb_preview_section_note(pv->model, section);

        if (!note && !tb_preview_section_has_series(pv->model, section))
                return FALSE;
        gtk_box_append(GTK_BOX(box), label_new(_(tb_preview_section_title(section)), "tb-heading"));
        if (note) {
                gtk_box_append(GTK_BOX(box), label_new(note, "tb-dim"));
                return TRUE;
        }
        for (TbSeriesKind k = 0; k < _TB_SERIES_KIND_MAX; k++)
                if (tb_series_kind_section(k) == section && tb_preview_count_kind(pv->model, k) > 0)
                        add_plot(pv, box, k);
        return TRUE;
}

/* The CPU profile (linux.perf): the functions with the most samples, as a table of self
 * and total shares. Returns whether the trace has one. */
static gboolean add_profile(Preview *pv, GtkWidget *box) {
        const TbPreview *m = pv->model;
        GtkWidget *grid;
        g_autofree char *samples = tb_format_count(m->perf.n_samples), *lost = tb_format_count(m->perf.n_lost);
        g_autofree char *caption = NULL;
        double n = (double) MAX(m->perf.n_samples, 1u);

        if (m->perf.n_samples + m->perf.n_unresolved + m->perf.n_lost + m->perf.n_skipped == 0)
                return FALSE;
        gtk_box_append(GTK_BOX(box), label_new(_("CPU profile"), "tb-heading"));
        caption = g_strdup_printf(_("%s samples with a call stack, %s kernel records lost; "
                                    "the functions that were running most often:"), samples, lost);
        gtk_box_append(GTK_BOX(box), label_new(caption, m->perf.n_lost ? "tb-warning" : "tb-caption"));
        grid = gtk_grid_new();
        gtk_grid_set_column_spacing(GTK_GRID(grid), 18);
        gtk_grid_attach(GTK_GRID(grid), label_new(_("Self"), "tb-caption"), 0, 0, 1, 1);
        gtk_grid_attach(GTK_GRID(grid), label_new(_("Total"), "tb-caption"), 1, 0, 1, 1);
        gtk_grid_attach(GTK_GRID(grid), label_new(_("Function"), "tb-caption"), 2, 0, 1, 1);
        for (guint i = 0; i < m->functions->len; i++) {
                const TbFunction *f = g_ptr_array_index(m->functions, i);
                g_autofree char *self = g_strdup_printf("%.1f %%", 100.0 * (double) f->self / n);
                g_autofree char *total = g_strdup_printf("%.1f %%", 100.0 * (double) f->total / n);

                gtk_grid_attach(GTK_GRID(grid), label_new(self, NULL), 0, (int) i + 1, 1, 1);
                gtk_grid_attach(GTK_GRID(grid), label_new(total, NULL), 1, (int) i + 1, 1, 1);
                gtk_grid_attach(GTK_GRID(grid), label_new(f->name, NULL), 2, (int) i + 1, 1, 1);
        }
        gtk_box_append(GTK_BOX(box), grid);
        return TRUE;
}

static void show_model(GtkWindow *win, Preview *pv) {
        GtkWidget *box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 8);
        gboolean any = FALSE;

        gtk_widget_add_css_class(box, "tb-pane");
        add_summary(pv, box);
        any |= add_profile(pv, box);
        for (TbPreviewSection s = 0; s < _TB_SECTION_MAX; s++)
                any |= add_section(pv, box, s);
        if (!any)
                gtk_box_append(GTK_BOX(box), label_new(_("This trace has no counters to plot: the Memory and CPU "
                                                         "frequency categories record them."),
                                                       "tb-dim"));
        gtk_scrolled_window_set_child(GTK_SCROLLED_WINDOW(pv->content), box);
        gtk_stack_set_visible_child_name(GTK_STACK(pv->stack), "preview");
}

static void read_in_thread(GTask *task, gpointer source, gpointer data, GCancellable *cancel) {
        const TbPreviewLimits limits = TB_PREVIEW_LIMITS_DEFAULT;
        GError *error = NULL;
        TbPreview *p = tb_preview_new_from_file(data, &limits, &error);

        if (!p)
                g_task_return_error(task, error);
        else
                g_task_return_pointer(task, p, (GDestroyNotify) tb_preview_free);
}

static void on_read(GObject *source, GAsyncResult *res, gpointer user_data) {
        GtkWindow *win = GTK_WINDOW(source);
        Preview *pv = g_object_get_data(G_OBJECT(win), PREVIEW_KEY);
        g_autoptr(GError) error = NULL;
        TbPreview *p = g_task_propagate_pointer(G_TASK(res), &error);

        if (!pv || g_cancellable_is_cancelled(pv->cancel)) {
                tb_preview_free(p);
                return;
        }
        if (!p) {
                g_autofree char *text = g_strdup_printf(_("Could not read the trace: %s"), error->message);
                gtk_label_set_text(GTK_LABEL(gtk_stack_get_child_by_name(GTK_STACK(pv->stack), "error")), text);
                gtk_stack_set_visible_child_name(GTK_STACK(pv->stack), "error");
                return;
        }
        pv->model = p;
        show_model(win, pv);
        tracebus_app_preview_ready(pv->app, win);
}

static GtkWidget *loading_new(void) {
        GtkWidget *box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 12), *spinner = gtk_spinner_new();

        gtk_spinner_start(GTK_SPINNER(spinner));
        gtk_widget_set_size_request(spinner, 32, 32);
        gtk_widget_set_valign(box, GTK_ALIGN_CENTER);
        gtk_box_append(GTK_BOX(box), spinner);
        gtk_box_append(GTK_BOX(box), gtk_label_new(_("Reading the trace…")));
        return box;
}

static void on_destroy(GtkWidget *win, gpointer user_data) {
        Preview *pv = g_object_get_data(G_OBJECT(win), PREVIEW_KEY);

        if (pv)
                g_cancellable_cancel(pv->cancel);
}

GtkWindow *tb_preview_window_open(TracebusApp *app, GtkWindow *parent, const char *path, const char *title) {
        GtkWindow *win = GTK_WINDOW(gtk_window_new());
        Preview *pv = g_new0(Preview, 1);
        g_autoptr(GTask) task = NULL;
        GtkWidget *error = label_new(NULL, "tb-warning");

        pv->app = g_object_ref(app);
        pv->cancel = g_cancellable_new();
        pv->title = title ? g_strdup(title) : g_path_get_basename(path);
        pv->stack = gtk_stack_new();
        pv->content = gtk_scrolled_window_new();
        gtk_scrolled_window_set_policy(GTK_SCROLLED_WINDOW(pv->content), GTK_POLICY_NEVER, GTK_POLICY_AUTOMATIC);
        gtk_widget_set_margin_start(error, 24);
        gtk_stack_add_named(GTK_STACK(pv->stack), loading_new(), "loading");
        gtk_stack_add_named(GTK_STACK(pv->stack), error, "error");
        gtk_stack_add_named(GTK_STACK(pv->stack), pv->content, "preview");
        g_object_set_data_full(G_OBJECT(win), PREVIEW_KEY, pv, preview_free);
        g_signal_connect(win, "destroy", G_CALLBACK(on_destroy), NULL);

        gtk_window_set_title(GTK_WINDOW(win), _("Trace Preview"));
        gtk_window_set_default_size(win, 900, 780);
        /* Not one of the app's windows: it goes with the main one. */
        gtk_window_set_transient_for(win, parent);
        gtk_window_set_destroy_with_parent(win, TRUE);
        gtk_window_set_child(win, pv->stack);
        gtk_window_present(win);

        task = g_task_new(win, pv->cancel, on_read, NULL);
        g_task_set_task_data(task, g_strdup(path), g_free);
        g_task_run_in_thread(task, read_in_thread);
        return win;
}

const TbPreview *tb_preview_window_get_model(GtkWindow *win) {
        Preview *pv = g_object_get_data(G_OBJECT(win), PREVIEW_KEY);

        return pv ? pv->model : NULL;
}
