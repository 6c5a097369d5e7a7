/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite: the GTK app (client/gtk) under Xvfb, against tracebusd on the
 * private test bus with the real polkitd, run as the test users. The app's
 * test mode (--test-record and friends) clicks through its real widgets:
 * Start Recording, Stop, Save As, closing the window. This test then decodes
 * the saved trace, and keeps a screenshot of the window while recording at
 * $TRACEBUS_BUILD_DIR/tests/gtk-main-window.png for a person to look at.
 *
 * Needs root, tracefs, the test users (tools/setup-debian), Xvfb and the
 * app built (meson option gtk).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "system-bus.h"
#include "trace-file.h"

#define note(...) g_printerr("# " __VA_ARGS__)

/* ---- Xvfb ---- */

typedef struct {
        GPid pid;
        char *display;
} Xvfb;

static void xvfb_stop(Xvfb *x) {
        if (x->pid > 0) {
                (void) kill(x->pid, SIGTERM);
                (void) waitpid(x->pid, NULL, 0);
                x->pid = 0;
        }
        g_clear_pointer(&x->display, g_free);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Xvfb, xvfb_stop)

static void xvfb_child_setup(gpointer data) {
        (void) prctl(PR_SET_PDEATHSIG, SIGTERM);
}

/* An X server of its own for this case; -displayfd picks a free display. No
 * -auth: local clients (the test users) may connect. */
static void xvfb_start(Xvfb *x) {
        g_autoptr(GError) error = NULL;
        g_autofree char *line = NULL;
        const char *argv[] = { "Xvfb", "-displayfd", "1", "-screen", "0", "1280x1024x24", "-nolisten", "tcp",
                               "-noreset", NULL };
        int out = -1;

        if (!g_spawn_async_with_pipes(NULL, (char **) argv, NULL, G_SPAWN_SEARCH_PATH | G_SPAWN_DO_NOT_REAP_CHILD,
                                      xvfb_child_setup, NULL, &x->pid, NULL, &out, NULL, &error))
                g_error("cannot start Xvfb: %s", error->message);
        line = tb_read_line(out, 20000, &error);
        close(out);
        if (!line)
                g_error("Xvfb did not say its display: %s", error->message);
        x->display = g_strdup_printf(":%s", g_strstrip(line));
        note("Xvfb on %s\n", x->display);
}

/* ---- the app's own home, owned by the test user ---- */

static char *user_dir(const TbUser *u, const char *name) {
        char *dir = g_build_filename(tb_bus()->tmpdir, name, NULL);

        g_assert_cmpint(g_mkdir_with_parents(dir, 0700), ==, 0);
        g_assert_cmpint(chown(dir, u->uid, u->gid), ==, 0);
        g_assert_cmpint(chmod(dir, 0700), ==, 0);
        return dir;
}

typedef struct {
        TbUser user;
        char *home;    /* HOME and XDG_* under it */
        char *runtime; /* XDG_RUNTIME_DIR */
        char *cache;   /* $XDG_CACHE_HOME/tracebus */
} AppHome;

static void app_home_clear(AppHome *h) {
        tb_user_clear(&h->user);
        g_clear_pointer(&h->home, g_free);
        g_clear_pointer(&h->runtime, g_free);
        g_clear_pointer(&h->cache, g_free);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(AppHome, app_home_clear)

static void app_home_init(AppHome *h, const char *user, const char *tag) {
        g_autofree char *home_name = g_strdup_printf("gtk-home-%s", tag), *run_name = g_strdup_printf("gtk-run-%s", tag);

        g_assert_true(tb_user_lookup(user, &h->user, NULL));
        h->home = user_dir(&h->user, home_name);
        h->runtime = user_dir(&h->user, run_name);
        h->cache = g_build_filename(h->home, ".cache", "tracebus", NULL);
}

static char *app_path(void) {
        return g_build_filename(tb_bus()->build_dir, "client", "gtk", "tracebus-gtk-test", NULL);
}

/* Runs the app as the user under Xvfb with test-mode arguments; its stdout
 * carries "TEST: ..." lines, the last "TEST: ok: ..." or "TEST: failed: ...". */
static void run_app(const AppHome *h, const Xvfb *x, const char *const *args, TbCommandResult *res) {
        g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func(g_free);
        g_autoptr(GError) error = NULL;
        g_autofree char *status = NULL;

        g_ptr_array_add(argv, g_strdup("env"));
        g_ptr_array_add(argv, g_strdup("-u"));
        g_ptr_array_add(argv, g_strdup("DBUS_SESSION_BUS_ADDRESS"));
        g_ptr_array_add(argv, g_strdup("-u"));
        g_ptr_array_add(argv, g_strdup("WAYLAND_DISPLAY"));
        g_ptr_array_add(argv, g_strdup_printf("HOME=%s", h->home));
        g_ptr_array_add(argv, g_strdup_printf("XDG_CACHE_HOME=%s/.cache", h->home));
        g_ptr_array_add(argv, g_strdup_printf("XDG_CONFIG_HOME=%s/.config", h->home));
        g_ptr_array_add(argv, g_strdup_printf("XDG_DATA_HOME=%s/.local/share", h->home));
        g_ptr_array_add(argv, g_strdup_printf("XDG_RUNTIME_DIR=%s", h->runtime));
        g_ptr_array_add(argv, g_strdup_printf("DISPLAY=%s", x->display));
        g_ptr_array_add(argv, g_strdup("GDK_BACKEND=x11"));
        g_ptr_array_add(argv, g_strdup("GSK_RENDERER=cairo")); /* no GL under Xvfb */
        g_ptr_array_add(argv, g_strdup("GTK_A11Y=none"));      /* no session bus for AT-SPI */
        g_ptr_array_add(argv, g_strdup("GSETTINGS_BACKEND=memory"));
        g_ptr_array_add(argv, g_strdup("LANG=C.UTF-8"));
        g_ptr_array_add(argv, app_path());
        for (const char *const *a = args; *a; a++)
                g_ptr_array_add(argv, g_strdup(*a));
        g_ptr_array_add(argv, NULL);

        g_assert_true(tb_run_as_user(h->user.name, (const char *const *) argv->pdata, res, &error));
        status = tb_wait_status_to_string(res->wait_status);
        note("tracebus-gtk %s as %s: %s\n", args[0], h->user.name, status);
        note("stdout:\n%s", res->out ? res->out : "");
        note("stderr:\n%s", res->err ? res->err : "");
}

static void assert_test_ok(const TbCommandResult *res, const char *what) {
        g_autofree char *want = g_strdup_printf("TEST: ok: %s", what);

        g_assert_nonnull(res->out);
        g_assert_nonnull(strstr(res->out, want));
        g_assert_true(tb_command_succeeded(res));
}

static void assert_trace_has_events(const char *path) {
        g_auto(TbTraceSummary) s = { 0 };
        g_autoptr(GError) error = NULL;
        g_autofree char *desc = NULL;
        struct stat st;

        g_assert_cmpint(stat(path, &st), ==, 0);
        g_assert_true(tb_trace_file_read(path, &s, &error));
        g_assert_no_error(error);
        desc = tb_trace_summary_describe(&s);
        note("%s (%lld bytes): %s\n", path, (long long) st.st_size, desc);
        g_assert_true(s.has_clock_snapshot);
        g_assert_true(s.has_tracing_started);
        g_assert_cmpuint(s.n_ftrace_events, >, 0);
        /* Scheduling is on by default. */
        g_assert_cmpuint(s.n_sched_switch + s.n_compact_switch, >, 0);
}

static void count_meminfo(const Tracebus__TracePacket *p, const TraceRawPacket *raw, guint index, gpointer userdata) {
        guint *n = userdata;

        *n += p->sys_stats && p->sys_stats->n_meminfo > 0;
}

/* The Memory category's counters: SysStats with meminfo, read by linux.sys_stats. */
static void assert_trace_has_meminfo(const char *path) {
        g_autofree char *data = NULL;
        g_autoptr(GError) error = NULL;
        gsize len = 0;
        guint n = 0;

        g_assert_true(g_file_get_contents(path, &data, &len, &error));
        g_assert_true(tb_trace_foreach_packet((const guint8 *) data, len, count_meminfo, &n, NULL, &error));
        g_assert_no_error(error);
        note("%s: %u SysStats packets with meminfo\n", path, n);
        g_assert_cmpuint(n, >, 0);
}

static void keep_artifact(const char *from, const char *name) {
        g_autofree char *to = g_build_filename(tb_bus()->build_dir, "tests", name, NULL);
        g_autofree char *data = NULL;
        g_autoptr(GError) error = NULL;
        gsize len = 0;

        g_assert_true(g_file_get_contents(from, &data, &len, &error));
        g_assert_cmpuint(len, >, 8);
        g_assert_cmpmem(data, 8, "\x89PNG\r\n\x1a\n", 8);
        g_assert_true(g_file_set_contents(to, data, (gssize) len, &error));
        note("screenshot: %s (%" G_GSIZE_FORMAT " bytes)\n", to, len);
}

/* ---- cases ---- */

/* tbuser presses Start Recording, waits, Stop, Save As: the saved file is a
 * complete trace with events, and so is the app's own file in the cache. */
static void test_record_save(void) {
        g_auto(AppHome) h = { 0 };
        g_auto(Xvfb) x = { 0 };
        g_auto(TbCommandResult) res = { 0 };
        g_autoptr(GError) error = NULL;
        g_autofree char *saved = NULL, *shot = NULL, *arg_save = NULL, *arg_shot = NULL, *index = NULL;
        g_autoptr(GDir) dir = NULL;
        TbBusy busy;
        const char *name;
        guint n_traces = 0;

        app_home_init(&h, "tbuser", "record");
        saved = g_build_filename(h.home, "saved.pftrace", NULL);
        shot = g_build_filename(h.home, "window.png", NULL);
        arg_save = g_strdup_printf("--save-to=%s", saved);
        arg_shot = g_strdup_printf("--screenshot=%s", shot);
        g_assert_true(tb_busy_start("tbbusy-gtk", &busy, &error));
        xvfb_start(&x);
        run_app(&h, &x, (const char *[]) { "--test-record=3", arg_save, arg_shot, NULL }, &res);
        tb_busy_stop(&busy);
        assert_test_ok(&res, "saved");
        g_assert_nonnull(strstr(res.out, "TEST: screenshot saved"));
        keep_artifact(shot, "gtk-main-window.png");

        assert_trace_has_events(saved);
        /* The app opened its own file in the user's cache and passed it to Start. */
        dir = g_dir_open(h.cache, 0, &error);
        g_assert_no_error(error);
        while ((name = g_dir_read_name(dir)))
                if (g_str_has_suffix(name, ".pftrace")) {
                        g_autofree char *p = g_build_filename(h.cache, name, NULL);
                        struct stat st;

                        g_assert_cmpint(stat(p, &st), ==, 0);
                        g_assert_cmpuint(st.st_uid, ==, h.user.uid);
                        g_assert_cmpuint(st.st_mode & 0777, ==, 0600);
                        assert_trace_has_events(p);
                        n_traces++;
                }
        g_assert_cmpuint(n_traces, ==, 1);
        index = g_build_filename(h.cache, "recordings.ini", NULL);
        g_assert_true(g_file_test(index, G_FILE_TEST_IS_REGULAR));
}

/* Every category switched on, and one custom event picked in the searchable
 * list: the service takes what each maps to on this kernel (what the kernel
 * lacks was dropped with ListEvents). */
static void test_all_categories(void) {
        g_auto(AppHome) h = { 0 };
        g_auto(Xvfb) x = { 0 };
        g_auto(TbCommandResult) res = { 0 };
        g_autofree char *saved = NULL, *arg_save = NULL, *shot = NULL, *arg_shot = NULL;

        app_home_init(&h, "tbuser", "all");
        saved = g_build_filename(h.home, "all.pftrace", NULL);
        shot = g_build_filename(h.home, "dialog.png", NULL);
        arg_save = g_strdup_printf("--save-to=%s", saved);
        arg_shot = g_strdup_printf("--dialog-screenshot=%s", shot);
        xvfb_start(&x);
        run_app(&h, &x,
                (const char *[]) { "--test-record=1", arg_save, "--test-categories=sched", "--test-categories=freq",
                                   "--test-categories=irq", "--test-categories=disk", "--test-categories=memory",
                                   "--test-categories=power", "--test-categories=markers",
                                   "--test-custom-events=sched_process_exec", arg_shot, NULL },
                &res);
        assert_test_ok(&res, "saved");
        g_assert_nonnull(strstr(res.out, "TEST: click custom event sched/sched_process_exec"));
        g_assert_nonnull(strstr(res.out, "TEST: recording: Scheduling, CPU frequency and idle, Interrupts, "
                                         "Block I/O, Memory, Power and suspend, Userspace markers, 1 custom event"));
        keep_artifact(shot, "gtk-custom-events.png");
        assert_trace_has_events(saved);
        assert_trace_has_meminfo(saved);
}

/* "Keep recording after closing this window": the app closes with the
 * session detached under its own key; started again, it re-attaches,
 * stops and saves a complete trace. */
static void test_keep_reattach(void) {
        g_auto(AppHome) h = { 0 };
        g_auto(Xvfb) x = { 0 };
        g_auto(TbCommandResult) first = { 0 }, second = { 0 };
        g_autoptr(GError) error = NULL;
        g_autofree char *saved = NULL, *arg_save = NULL;
        TbBusy busy;

        app_home_init(&h, "tbuser", "keep");
        saved = g_build_filename(h.home, "kept.pftrace", NULL);
        arg_save = g_strdup_printf("--save-to=%s", saved);
        g_assert_true(tb_busy_start("tbbusy-keep", &busy, &error));
        xvfb_start(&x);
        run_app(&h, &x, (const char *[]) { "--test-record=2", "--test-keep", NULL }, &first);
        assert_test_ok(&first, "detached tracebus-gtk-");

        /* Nobody holds it now: it records on. */
        g_usleep(1500 * 1000);
        run_app(&h, &x, (const char *[]) { "--test-reattach-stop", "--test-record=1", arg_save, NULL }, &second);
        tb_busy_stop(&busy);
        g_assert_nonnull(strstr(second.out, "TEST: re-attached"));
        assert_test_ok(&second, "saved");
        assert_trace_has_events(saved);
}

/* A user polkit refuses gets words, with what to ask an administrator. */
static void test_refused(const char *user, const char *tag) {
        g_auto(AppHome) h = { 0 };
        g_auto(Xvfb) x = { 0 };
        g_auto(TbCommandResult) res = { 0 };
        g_autofree char *shot = NULL, *arg_shot = NULL, *png = NULL;
        g_autoptr(GDir) dir = NULL;
        const char *name;

        app_home_init(&h, user, tag);
        shot = g_build_filename(h.home, "window.png", NULL);
        arg_shot = g_strdup_printf("--screenshot=%s", shot);
        xvfb_start(&x);
        run_app(&h, &x, (const char *[]) { "--test-record=1", "--test-expect-error", arg_shot, NULL }, &res);
        assert_test_ok(&res, "message shown: ");
        g_assert_nonnull(strstr(res.out, "administrator"));
        /* Words, not a D-Bus error name. */
        g_assert_null(strstr(res.out, "org.freedesktop.DBus.Error"));
        g_assert_null(strstr(res.out, "GDBus.Error"));
        png = g_strdup_printf("gtk-refused-%s.png", tag);
        keep_artifact(shot, png);
        /* The file it opened for the refused recording is gone. */
        dir = g_dir_open(h.cache, 0, NULL);
        while (dir && (name = g_dir_read_name(dir)))
                g_assert_false(g_str_has_suffix(name, ".pftrace"));
}

/* The number of points the app reported for a preview series ("TEST: preview series
 * meminfo MemAvailable: 3 points"), or -1 when it reported none. */
static int preview_points(const char *out, const char *kind, const char *name) {
        g_autofree char *want = g_strdup_printf("TEST: preview series %s %s: ", kind, name);
        const char *at = strstr(out, want);

        return at ? atoi(at + strlen(want)) : -1;
}

/* The preview's lines, for comparing two reports of one trace. */
static char *preview_lines(const char *out) {
        g_auto(GStrv) lines = g_strsplit(out, "\n", -1);
        GString *s = g_string_new(NULL);

        for (char **l = lines; *l; l++)
                if (g_str_has_prefix(*l, "TEST: preview series ") || g_str_has_prefix(*l, "TEST: preview note: ") ||
                    g_str_has_prefix(*l, "TEST: preview: "))
                        g_string_append_printf(s, "%s\n", *l);
        return g_string_free(s, FALSE);
}

/* Memory and CPU frequency recorded: once finished, the app's preview plots
 * MemAvailable over several samples, and CPU frequency either as series or,
 * on a machine without cpufreq (a VM), as a note with the service's warning.
 * The saved copy, opened with Open Trace…, previews the same. */
static void test_preview(void) {
        g_auto(AppHome) h = { 0 };
        g_auto(Xvfb) x = { 0 };
        g_auto(TbCommandResult) res = { 0 }, opened = { 0 };
        g_autofree char *saved = NULL, *arg_save = NULL, *shot = NULL, *arg_shot = NULL, *arg_open = NULL;
        g_autofree char *first = NULL, *second = NULL;
        gboolean freq_series;
        const char *freq_note;

        app_home_init(&h, "tbuser", "preview");
        saved = g_build_filename(h.home, "preview.pftrace", NULL);
        shot = g_build_filename(h.home, "preview.png", NULL);
        arg_save = g_strdup_printf("--save-to=%s", saved);
        arg_shot = g_strdup_printf("--preview-screenshot=%s", shot);
        xvfb_start(&x);
        run_app(&h, &x,
                (const char *[]) { "--test-record=3.5", arg_save, "--test-categories=memory", "--test-categories=freq",
                                   "--test-preview", arg_shot, NULL },
                &res);
        assert_test_ok(&res, "preview");
        g_assert_nonnull(strstr(res.out, "TEST: preview drawn"));
        g_assert_nonnull(strstr(res.out, "TEST: preview screenshot saved"));
        keep_artifact(shot, "gtk-preview.png");
        /* Memory is read once a second: a 3.5 s recording has three samples at least. */
        g_assert_cmpint(preview_points(res.out, "meminfo", "MemAvailable"), >, 1);
        g_assert_cmpint(preview_points(res.out, "meminfo", "MemFree"), >, 1);
        freq_series = strstr(res.out, "TEST: preview series cpufreq ") || strstr(res.out, "TEST: preview series cpu_frequency ");
        freq_note = strstr(res.out, "TEST: preview note: No frequency data on this machine: ");
        note("frequency: %s\n", freq_series ? "series" : "note");
        g_assert_true(freq_series || freq_note);
        if (!freq_series) {
                /* The note carries the service's warning, which the trace has too. */
                g_assert_nonnull(strstr(freq_note, "cpufreq"));
                g_assert_nonnull(strstr(res.out, "TEST: preview warning: linux.sys_stats cpufreq: "));
                /* The window said it when recording started, and recording went on. */
                g_assert_nonnull(strstr(res.out, "TEST: warning shown: "));
        }

        arg_open = g_strdup_printf("--test-open=%s", saved);
        run_app(&h, &x, (const char *[]) { arg_open, NULL }, &opened);
        assert_test_ok(&opened, "preview");
        first = preview_lines(res.out);
        second = preview_lines(opened.out);
        g_assert_cmpstr(first, ==, second);
}

static void test_denied(void) {
        test_refused("tbother", "denied");
}

static void test_challenge(void) {
        test_refused("tbchallenge", "challenge");
}

/* Save Snapshot while recording: the snapshot is a recording of its own,
 * a trace with events that loads alone, and the recording goes on to its Stop. */
static void test_snapshot(void) {
        g_auto(AppHome) h = { 0 };
        g_auto(Xvfb) x = { 0 };
        g_auto(TbCommandResult) res = { 0 };
        g_autoptr(GError) error = NULL;
        g_autofree char *saved = NULL, *arg_save = NULL, *snap = NULL;
        const char *p, *end;
        TbBusy busy;

        app_home_init(&h, "tbuser", "snapshot");
        saved = g_build_filename(h.home, "saved.pftrace", NULL);
        arg_save = g_strdup_printf("--save-to=%s", saved);
        g_assert_true(tb_busy_start("tbbusy-gtksnap", &busy, &error));
        xvfb_start(&x);
        run_app(&h, &x, (const char *[]) { "--test-record=2", arg_save, "--test-snapshot", NULL }, &res);
        tb_busy_stop(&busy);
        assert_test_ok(&res, "saved");
        p = strstr(res.out, "TEST: snapshot ");
        g_assert_nonnull(p);
        p += strlen("TEST: snapshot ");
        end = strchr(p, '\n');
        snap = g_strndup(p, end ? (gsize) (end - p) : strlen(p));
        assert_trace_has_events(snap);
        assert_trace_has_events(saved);
}

typedef struct {
        guint n_configs, n_track_event_sources, n_track_events;
        gboolean all_categories;
} AppsInTrace;

static void count_apps(const Tracebus__TracePacket *p, const TraceRawPacket *raw, guint index, gpointer userdata) {
        AppsInTrace *a = userdata;

        a->n_track_events += p->track_event != NULL;
        if (!p->trace_config)
                return;
        a->n_configs++;
        for (size_t i = 0; i < p->trace_config->n_data_sources; i++) {
                const Tracebus__DataSourceConfig *ds = p->trace_config->data_sources[i]->config;

                if (!ds || g_strcmp0(ds->name, "track_event") != 0)
                        continue;
                a->n_track_event_sources++;
                a->all_categories = ds->track_event_config && ds->track_event_config->n_enabled_categories == 1 &&
                                    g_str_equal(ds->track_event_config->enabled_categories[0], "*");
        }
}

/* "Applications (Perfetto SDK)": with a Perfetto SDK app of the user's connected, the
 * category's row lists it (its name, pid and data sources, from ListProducers); switched
 * on, the config the app sends has a track_event data source of every category. */
static void test_apps(void) {
        g_auto(AppHome) h = { 0 };
        g_auto(Xvfb) x = { 0 };
        g_auto(TbCommandResult) res = { 0 };
        g_auto(TbUser) app_user = { 0 };
        g_autoptr(GError) error = NULL;
        g_autofree char *saved = NULL, *arg_save = NULL, *data = NULL, *listed = NULL;
        g_autofree char *sock = g_build_filename(tb_bus()->tmpdir, TB_PRODUCER_SOCKET, NULL);
        AppsInTrace a = { 0 };
        gsize len = 0;
        GPid sdk_app;

        app_home_init(&h, "tbuser", "apps");
        saved = g_build_filename(h.home, "apps.pftrace", NULL);
        arg_save = g_strdup_printf("--save-to=%s", saved);
        sdk_app = tb_spawn_sdk_app("tbuser", "example_system_wide", sock, &app_user);
        xvfb_start(&x);
        run_app(&h, &x,
                (const char *[]) { "--test-record=2", arg_save, "--test-categories=sched", "--test-categories=apps",
                                   "--test-expect-app=example_system_wide", NULL },
                &res);
        tb_kill_child(sdk_app);
        assert_test_ok(&res, "saved");
        listed = g_strdup_printf("example_system_wide (pid %d): track_event (rendering, network.debug, audio.latency)",
                                 (int) sdk_app);
        g_assert_nonnull(strstr(res.out, "TEST: apps row: "));
        g_assert_nonnull(strstr(res.out, listed));
        g_assert_nonnull(strstr(res.out, "TEST: recording: Scheduling, Applications (Perfetto SDK)"));
        assert_trace_has_events(saved);
        g_assert_true(g_file_get_contents(saved, &data, &len, &error));
        g_assert_true(tb_trace_foreach_packet((const guint8 *) data, len, count_apps, &a, NULL, &error));
        g_assert_no_error(error);
        note("%s: %u configs, %u track_event sources, %u TrackEvent packets\n", saved, a.n_configs,
             a.n_track_event_sources, a.n_track_events);
        g_assert_cmpuint(a.n_configs, ==, 1);
        g_assert_cmpuint(a.n_track_event_sources, ==, 1);
        g_assert_true(a.all_categories);
}

int main(int argc, char **argv) {
        g_autofree char *xvfb = NULL;

        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();
        xvfb = g_find_program_in_path("Xvfb");
        if (!xvfb) {
                if (g_getenv("CI")) {
                        printf("Bail out! Xvfb is missing (tools/setup-debian installs xvfb)\n");
                        return 1;
                }
                printf("1..0 # SKIP Xvfb is missing\n");
                return 0;
        }
        tb_test_add_isolated("/bus/gtk/record-save", test_record_save);
        tb_test_add_isolated("/bus/gtk/all-categories", test_all_categories);
        tb_test_add_isolated("/bus/gtk/keep-reattach", test_keep_reattach);
        tb_test_add_isolated("/bus/gtk/denied", test_denied);
        tb_test_add_isolated("/bus/gtk/challenge", test_challenge);
        tb_test_add_isolated("/bus/gtk/preview", test_preview);
        tb_test_add_isolated("/bus/gtk/snapshot", test_snapshot);
        tb_test_add_isolated("/bus/gtk/apps", test_apps);
        return tb_test_run(TB_START_SERVICE);
}
