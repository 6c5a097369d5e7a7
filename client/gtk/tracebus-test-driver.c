/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tb-events-dialog.h"
#include "tb-preview.h"
#include "tracebus-test-driver.h"
#include "tracebus-window.h"

#define TICK_MS 100
#define TIMEOUT_S 90

typedef enum {
        STEP_WAIT_READY,
        STEP_CUSTOM_OPEN,      /* Choose… clicked: wait for the dialog */
        STEP_CUSTOM_SEARCHED,  /* text typed: tick the first match */
        STEP_CUSTOM_TICKED,    /* ticked: the dialog's picture, then Done */
        STEP_CUSTOM_CLOSED,    /* Done clicked */
        STEP_WAIT_RECORDING,
        STEP_RECORDING,
        STEP_WAIT_FINISHED,
        STEP_WAIT_SAVED,
        STEP_WAIT_PREVIEW,     /* the preview window is being drawn from the trace */
        STEP_DONE,
} Step;

typedef struct {
        TracebusApp *app;
        TracebusWindow *win;
        const TracebusTestOptions *opt;
        Step step;
        TbRecording *r;        /* the recording under test */
        gint64 started_us;     /* of the test */
        gint64 recording_us;   /* when it was seen recording */
        gboolean shot;
        gboolean custom_done;
        guint shot_tries;
        gint64 mark_us;
        guint tick_id;
        int exit_status;
        GtkWindow *preview;    /* drawn: the preview_ready hook said so */
        char *warning;         /* the banner of the app's last "warning": not a failure */
        gboolean warning_said;
        guint preview_shot_tries;
        gboolean snapshot_clicked, snapshot_seen;  /* --test-snapshot */
        gboolean app_listed;   /* --test-expect-app: the row showed it */
} Driver;

static Driver driver;

static void finish(int status, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static void finish(int status, const char *fmt, ...) {
        g_autofree char *msg = NULL;
        va_list ap;

        va_start(ap, fmt);
        msg = g_strdup_vprintf(fmt, ap);
        va_end(ap);

        driver.step = STEP_DONE;
        g_clear_handle_id(&driver.tick_id, g_source_remove);
        printf("TEST: %s: %s\n", status == 0 ? "ok" : "failed", msg);
        fflush(stdout);
        driver.exit_status = status;
        g_application_quit(G_APPLICATION(driver.app));
}

static void log_step(const char *what) {
        printf("TEST: %s\n", what);
        fflush(stdout);
}

static void click(GtkWidget *button, const char *what) {
        g_autofree char *msg = g_strdup_printf("click %s", what);

        log_step(msg);
        gtk_widget_activate(button);
}

static GtkWindow *find_events_dialog(void) {
        GListModel *tops = gtk_window_get_toplevels();
        GtkWindow *found = NULL;

        for (guint i = 0; i < g_list_model_get_n_items(tops) && !found; i++) {
                g_autoptr(GtkWindow) w = g_list_model_get_item(tops, i);
                if (g_object_get_data(G_OBJECT(w), TB_EVENTS_DIALOG_KEY) && gtk_widget_get_mapped(GTK_WIDGET(w)))
                        found = w;
        }
        return found; /* the toplevels list keeps it */
}

static GtkWidget *first_check(GtkWidget *w) {
        if (GTK_IS_CHECK_BUTTON(w) && gtk_widget_get_mapped(w))
                return w;
        for (GtkWidget *c = gtk_widget_get_first_child(w); c; c = gtk_widget_get_next_sibling(c)) {
                GtkWidget *found = first_check(c);
                if (found)
                        return found;
        }
        return NULL;
}

/* Choose…, type the search, tick the first event, Done: as a person would. */
static void custom_events_step(gint64 now) {
        GtkWindow *dlg = find_events_dialog();
        GtkWidget *check;
        g_autoptr(GError) error = NULL;
        g_autofree char *msg = NULL;

        switch (driver.step) {
        case STEP_CUSTOM_OPEN:
                if (!dlg)
                        return;
                log_step("type into the search");
                gtk_editable_set_text(GTK_EDITABLE(g_object_get_data(G_OBJECT(dlg), "tb-search-entry")),
                                      driver.opt->custom_search);
                driver.mark_us = now;
                driver.step = STEP_CUSTOM_SEARCHED;
                return;
        case STEP_CUSTOM_SEARCHED:
                /* GtkSearchEntry waits a moment before it says the text changed. */
                if (!dlg || now - driver.mark_us < 600 * 1000 || !(check = first_check(GTK_WIDGET(dlg))))
                        return;
                msg = g_strdup_printf("tick custom event %s", gtk_check_button_get_label(GTK_CHECK_BUTTON(check)));
                click(check, msg + strlen("tick "));
                driver.mark_us = now;
                driver.step = STEP_CUSTOM_TICKED;
                return;
        case STEP_CUSTOM_TICKED:
                /* A picture once the tick is drawn (a widget being redrawn has none). */
                if (!dlg)
                        return;
                if (driver.opt->dialog_screenshot &&
                    !tracebus_window_save_screenshot(dlg, driver.opt->dialog_screenshot, &error)) {
                        if (now - driver.mark_us < 3 * G_USEC_PER_SEC)
                                return;
                        printf("TEST: dialog screenshot failed: %s\n", error->message);
                }
                click(g_object_get_data(G_OBJECT(dlg), "tb-done-button"), "Done");
                driver.step = STEP_CUSTOM_CLOSED;
                return;
        case STEP_CUSTOM_CLOSED:
                if (dlg)
                        return;
                driver.custom_done = TRUE;
                driver.step = STEP_WAIT_READY;
                return;
        default:
                return;
        }
}

static TbRecording *newest_live_recording(void) {
        GListModel *m = tracebus_app_get_recordings(driver.app);
        guint n = g_list_model_get_n_items(m);

        for (guint i = 0; i < n; i++) {
                g_autoptr(TbRecording) r = g_list_model_get_item(m, i);
                if (r->state != TB_RECORDING_FINISHED && !r->foreign)
                        return r;
        }
        return NULL;
}

static void press_record(void) {
        GtkWidget *keep = tracebus_window_get_keep_switch(driver.win);

        if (driver.opt->categories) {
                guint n;
                const TbCategory *cats = tb_categories_get(&n);
                for (guint i = 0; i < n; i++) {
                        GtkWidget *sw = tracebus_window_get_category_switch(driver.win, cats[i].id);
                        gtk_switch_set_active(GTK_SWITCH(sw),
                                              g_strv_contains((const char *const *) driver.opt->categories, cats[i].id));
                }
        }
        gtk_switch_set_active(GTK_SWITCH(keep), driver.opt->keep);
        click(tracebus_window_get_record_button(driver.win), "Start Recording");
        driver.step = STEP_WAIT_RECORDING;
}

/* FALSE while the window is being redrawn (it has no picture then): try again
 * on the next tick, for a while. */
static gboolean take_screenshot(void) {
        g_autoptr(GError) error = NULL;

        if (!driver.opt->screenshot) {
                driver.shot = TRUE;
                return TRUE;
        }
        if (!tracebus_window_save_screenshot(GTK_WINDOW(driver.win), driver.opt->screenshot, &error)) {
                if (++driver.shot_tries < 30)
                        return FALSE;
                printf("TEST: screenshot failed: %s\n", error->message);
        } else
                log_step("screenshot saved");
        driver.shot = TRUE;
        return TRUE;
}

/* --test-snapshot: Save Snapshot, then wait for the snapshot's own row to finish. FALSE
 * until it has. */
static gboolean snapshot_done(void) {
        GListModel *m = tracebus_app_get_recordings(driver.app);
        GtkWidget *b;

        if (!driver.opt->snapshot || driver.snapshot_seen)
                return TRUE;
        if (!driver.snapshot_clicked) {
                b = tracebus_window_get_row_button(driver.win, driver.r, "snapshot");
                if (b) {
                        click(b, "Save Snapshot");
                        driver.snapshot_clicked = TRUE;
                }
                return FALSE;
        }
        for (guint i = 0; i < g_list_model_get_n_items(m); i++) {
                g_autoptr(TbRecording) r = g_list_model_get_item(m, i);
                if (r->state == TB_RECORDING_FINISHED && g_strcmp0(r->reason, "snapshot") == 0) {
                        printf("TEST: snapshot %s\n", r->file_path);
                        fflush(stdout);
                        driver.snapshot_seen = TRUE;
                        return TRUE;
                }
        }
        return FALSE;
}

static void while_recording(gint64 now) {
        double secs = (now - driver.recording_us) / (double) G_USEC_PER_SEC;
        double want = driver.opt->record_seconds > 0 ? driver.opt->record_seconds : 2;
        GtkWidget *stop;

        /* The counters come once a second: show them moving before the picture. */
        if (!driver.shot && secs >= MIN(want * 0.75, want - 0.2) && driver.r->events > 0)
                take_screenshot();
        if (secs < want || driver.step == STEP_DONE)
                return;
        if (!driver.shot && !take_screenshot())
                return;
        if (driver.opt->keep) {
                log_step("close the window");
                gtk_window_close(GTK_WINDOW(driver.win)); /* the app reports once detached */
                driver.step = STEP_DONE;
                g_clear_handle_id(&driver.tick_id, g_source_remove);
                return;
        }
        if (!snapshot_done())
                return;
        stop = tracebus_window_get_row_button(driver.win, driver.r, "stop");
        if (!stop)
                return;
        click(stop, "Stop");
        driver.step = STEP_WAIT_FINISHED;
}

static const char *step_name(Step step) {
        static const char *const names[] = {
                "ready", "custom-open", "custom-searched", "custom-ticked", "custom-closed",
                "wait-recording", "recording", "wait-finished", "wait-saved", "wait-preview", "done",
        };

        return names[step];
}

/* An error message in the window, or the time limit, ends the test. Returns
 * TRUE when the tick should go no further. */
static gboolean check_message_or_timeout(gint64 now) {
        g_autofree char *message = tracebus_window_get_message(driver.win);

        /* What the service skipped (no cpufreq in a VM) is said, and recording goes on. */
        if (message && driver.warning && g_str_equal(message, driver.warning)) {
                if (!driver.warning_said)
                        printf("TEST: warning shown: %s\n", message);
                fflush(stdout);
                driver.warning_said = TRUE;
                g_clear_pointer(&message, g_free);
        }
        if (message) {
                /* The picture of a refusal is worth keeping too. */
                if (!driver.shot && !take_screenshot())
                        return TRUE;
                if (driver.opt->expect_error)
                        finish(0, "message shown: %s", message);
                else
                        finish(2, "message shown: %s", message);
                return TRUE;
        }
        if (now - driver.started_us > TIMEOUT_S * G_USEC_PER_SEC) {
                finish(3, "timed out in step %s", step_name(driver.step));
                return TRUE;
        }
        return FALSE;
}

/* --test-expect-app: TRUE once the apps category's row names the app (it may connect after
 * the window opened: the driver asks again, as the window does when it comes to the front). */
static gboolean app_listed(void) {
        const char *subtitle = tracebus_window_get_category_subtitle(driver.win, "apps");
        g_autofree char *line = NULL;

        if (!driver.opt->expect_app || driver.app_listed)
                return TRUE;
        if (!subtitle || !strstr(subtitle, driver.opt->expect_app)) {
                tracebus_app_refresh_producers(driver.app);
                return FALSE;
        }
        line = g_strdup_printf("apps row: %s", subtitle);
        log_step(line);
        driver.app_listed = TRUE;
        return TRUE;
}

/* Ready: open the custom events first if asked, else find the kept recording or press Record. */
static void when_ready(void) {
        if (!tracebus_app_is_ready(driver.app) || !gtk_widget_get_mapped(GTK_WIDGET(driver.win)) || !app_listed())
                return;
        if (driver.opt->open_trace) {
                log_step("Open Trace…");
                g_action_group_activate_action(G_ACTION_GROUP(driver.win), "open-trace", NULL);
                driver.step = STEP_WAIT_PREVIEW;
        } else if (driver.opt->custom_search && !driver.custom_done) {
                click(tracebus_window_get_custom_button(driver.win), "Choose custom events");
                driver.step = STEP_CUSTOM_OPEN;
        } else if (driver.opt->reattach_stop) {
                driver.r = newest_live_recording();
                if (!driver.r)
                        finish(4, "no kept recording to re-attach to");
                else
                        driver.step = STEP_WAIT_RECORDING;
        } else
                press_record();
}

static void wait_recording(gint64 now) {
        g_autofree char *what = NULL;

        if (!driver.r)
                driver.r = newest_live_recording();
        if (!driver.r || driver.r->state != TB_RECORDING_RECORDING || !driver.r->ours)
                return;
        what = g_strdup_printf("%s: %s", driver.opt->reattach_stop ? "re-attached" : "recording",
                               driver.r->summary ? driver.r->summary : "");
        log_step(what);
        driver.recording_us = now;
        driver.step = STEP_RECORDING;
}

static void wait_finished(void) {
        GtkWidget *save;

        if (driver.r->state != TB_RECORDING_FINISHED)
                return;
        save = tracebus_window_get_row_button(driver.win, driver.r, "save");
        if (!save)
                return;
        log_step("finished");
        if (!driver.opt->save_to && driver.opt->preview) {
                driver.step = STEP_WAIT_PREVIEW;
                return;
        }
        if (!driver.opt->save_to) {
                finish(0, "finished, %s", driver.r->file_path);
                return;
        }
        click(save, "Save As");
        driver.step = STEP_WAIT_SAVED;
}

/* What the preview shows, a line each: the summary, every series, every section's note. */
static void report_preview(const TbPreview *m) {
        printf("TEST: preview: %" G_GUINT64_FORMAT " ns, %" G_GUINT64_FORMAT " events, %" G_GUINT64_FORMAT
               " lost, %u warnings\n",
               tb_preview_duration_ns(m), m->n_events, m->n_lost, m->warnings->len);
        for (guint i = 0; i < m->series->len; i++) {
                const TbSeries *s = g_ptr_array_index(m->series, i);
                static const char *const kinds[] = { "meminfo", "cpufreq", "cpu_frequency", "rss", "cpu_idle",
                                                     "idle_state" };

                printf("TEST: preview series %s %s: %u points\n", kinds[s->kind], s->name, s->n_points);
        }
        for (TbPreviewSection sec = 0; sec < _TB_SECTION_MAX; sec++) {
                g_autofree char *note = tb_preview_section_note(m, sec);
                if (note)
                        printf("TEST: preview note: %s\n", note);
        }
        for (guint i = 0; i < m->warnings->len; i++)
                printf("TEST: preview warning: %s\n", (const char *) g_ptr_array_index(m->warnings, i));
        fflush(stdout);
}

/* The preview drawn: report it, take its picture (once it has one), done. */
static void wait_preview(void) {
        g_autoptr(GError) error = NULL;
        const TbPreview *m;

        /* Drawn once laid out: give it a moment before its picture. */
        if (!driver.preview || !(m = tb_preview_window_get_model(driver.preview)) ||
            g_get_monotonic_time() - driver.mark_us < 700 * 1000)
                return;
        if (driver.opt->preview_screenshot &&
            !tracebus_window_save_screenshot(driver.preview, driver.opt->preview_screenshot, &error)) {
                if (++driver.preview_shot_tries < 30)
                        return;
                printf("TEST: preview screenshot failed: %s\n", error->message);
        } else if (driver.opt->preview_screenshot)
                log_step("preview screenshot saved");
        report_preview(m);
        finish(0, "preview");
}

static gboolean on_tick(gpointer user_data) {
        gint64 now = g_get_monotonic_time();

        if (!gtk_widget_get_mapped(GTK_WIDGET(driver.win)))
                return G_SOURCE_CONTINUE;
        if (check_message_or_timeout(now))
                return driver.step == STEP_DONE ? G_SOURCE_REMOVE : G_SOURCE_CONTINUE;
        switch (driver.step) {
        case STEP_WAIT_READY:
                when_ready();
                break;
        case STEP_CUSTOM_OPEN:
        case STEP_CUSTOM_SEARCHED:
        case STEP_CUSTOM_TICKED:
        case STEP_CUSTOM_CLOSED:
                custom_events_step(now);
                break;
        case STEP_WAIT_RECORDING:
                wait_recording(now);
                break;
        case STEP_RECORDING:
                while_recording(now);
                break;
        case STEP_WAIT_FINISHED:
                wait_finished();
                break;
        case STEP_WAIT_SAVED:
                if (!driver.r->saved_path || !g_file_test(driver.r->saved_path, G_FILE_TEST_IS_REGULAR))
                        break;
                if (driver.opt->preview) {
                        log_step("saved");
                        driver.step = STEP_WAIT_PREVIEW;
                } else
                        finish(0, "saved %s", driver.r->saved_path);
                break;
        case STEP_WAIT_PREVIEW:
                wait_preview();
                break;
        case STEP_DONE:
                break;
        }
        return driver.step == STEP_DONE ? G_SOURCE_REMOVE : G_SOURCE_CONTINUE;
}

static void on_window_created(TracebusApp *app, GtkWindow *win, gpointer data) {
        driver.win = TRACEBUS_WINDOW(win);
        driver.started_us = g_get_monotonic_time();
        driver.step = STEP_WAIT_READY;
        driver.tick_id = g_timeout_add(TICK_MS, on_tick, NULL);
}

typedef struct {
        GtkFileChooser *chooser;
        GFile *file;
} Accept;

static gboolean accept_chooser(gpointer user_data) {
        Accept *a = user_data;

        log_step("accept Save As");
        /* What the chooser's Save button does. */
        g_signal_emit_by_name(a->chooser, "response", GTK_RESPONSE_ACCEPT);
        g_object_unref(a->chooser);
        g_object_unref(a->file);
        g_free(a);
        return G_SOURCE_REMOVE;
}

static void on_file_chooser_opening(TracebusApp *app, GtkFileChooser *chooser, gpointer data) {
        const TracebusTestOptions *opt = driver.opt;
        g_autoptr(GError) error = NULL;
        g_autofree char *name = NULL;
        gboolean open = gtk_file_chooser_get_action(chooser) == GTK_FILE_CHOOSER_ACTION_OPEN;
        const char *path = open ? opt->open_trace : opt->save_to;
        Accept *a;

        if (!path)
                return;
        a = g_new0(Accept, 1);
        a->chooser = g_object_ref(chooser);
        a->file = g_file_new_for_path(path);
        name = g_file_get_basename(a->file);
        /* Typed into the chooser before it shows: folder and name (a name only when saving). */
        G_GNUC_BEGIN_IGNORE_DEPRECATIONS
        if (!gtk_file_chooser_set_file(chooser, a->file, &error))
                printf("TEST: could not pick the file in the chooser: %s\n", error->message);
        if (!open)
                gtk_file_chooser_set_current_name(chooser, name);
        G_GNUC_END_IGNORE_DEPRECATIONS
        /* Let it come up first, as a person would see it. */
        g_timeout_add(500, accept_chooser, a);
}

/* With --test-keep the window closes while recording: the test is done once the
 * recording is detached. */
static void on_window_closed(TracebusApp *app, const char *detach_key, gpointer data) {
        if (driver.opt->keep)
                finish(0, "detached %s", detach_key ? detach_key : "");
}

static void on_app_warning(TracebusApp *app, const char *title, const char *detail, gpointer data) {
        g_free(driver.warning);
        driver.warning = g_strdup_printf("%s %s", title, detail);
        driver.warning_said = FALSE;
}

static void on_preview_ready(TracebusApp *app, GtkWindow *preview, gpointer data) {
        log_step("preview drawn");
        driver.preview = preview;
        driver.mark_us = g_get_monotonic_time();
}

void tracebus_test_driver_install(TracebusApp *app, const TracebusTestOptions *opt) {
        const TracebusAppHooks hooks = {
                .preview_ready = on_preview_ready,
                .window_created = on_window_created,
                .file_chooser_opening = on_file_chooser_opening,
                .window_closed = on_window_closed,
        };

        driver.app = app;
        driver.opt = opt;
        tracebus_app_set_hooks(app, &hooks);
        g_signal_connect(app, "warning", G_CALLBACK(on_app_warning), NULL);
}

int tracebus_test_driver_get_exit_status(void) {
        return driver.exit_status;
}
