/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite: faults around the service. The bus activates the build
 * tree's tracebusd (TB_START_ACTIVATABLE), so that a killed service comes back on the
 * next call, as under systemd.
 *
 *  1. tracebusd SIGKILLed while it records a long trace (write_into_file, 500 ms
 *     periods) into a file the client passed: the file is whole packets to its last
 *     byte, keeps what the last periodic write wrote (markers written before it are
 *     in it), and the next call activates a service whose start removed the dead
 *     one's tracefs instance; Start and Stop work again.
 *  2. tracefs trouble: (a) a uprobe event the session records is removed: the kernel
 *     refuses while the event is enabled (as it refuses rmdir of the session's
 *     instance), and once an administrator disables it in the instance the event is
 *     gone; the session records on and ends complete, and a Start naming it is
 *     UnknownEvent. (b) a tracebusd in a mount namespace without tracefs, under the
 *     unit's capabilities (no CAP_SYS_ADMIN, so it cannot mount tracefs itself): Start and
 *     ListEvents answer TracingUnavailable, other calls are answered, and once tracefs
 *     is mounted in its namespace Start records without a restart.
 *  3. polkitd gone (killed; then an activation file that points at nothing; then
 *     killed while it holds a query): Start answers AuthorizationUnavailable within
 *     seconds while a running session records on and stops complete; polkitd
 *     activated again, Start works at once.
 *
 * Waits scale with TRACEBUS_TEST_TIME_FACTOR (default 4 under ASan, else 1).
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
#include <time.h>
#include <unistd.h>

#include "system-bus.h"
#include "tb-client.h"
#include "trace-file.h"
#include "trace.pb-c.h"

#define ERR_TRACING_UNAVAILABLE TB_ERROR_TRACING_UNAVAILABLE
#define ERR_AUTH_UNAVAILABLE TB_ERROR_AUTHORIZATION_UNAVAILABLE
#define POLKIT_NAME "org.freedesktop.PolicyKit1"
#define ENV_UPROBE_GROUP "TRACEBUS_TEST_UPROBE_GROUP"
#define MARKER_PREFIX "tbfault-marker-"

/* ===================================================================== */
/* Small helpers                                                          */
/* ===================================================================== */

static guint64 boottime_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_BOOTTIME, &ts);
        return (guint64) ts.tv_sec * 1000000000ull + (guint64) ts.tv_nsec;
}

static gint64 elapsed_ms(gint64 since_usec) {
        return (g_get_monotonic_time() - since_usec) / 1000;
}

static char *service_log(void) {
        g_autofree char *path = g_build_filename(tb_bus()->log_dir, "service.log", NULL);
        char *text = NULL;

        g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
        return text;
}

/* The running tracebusd, activated by a call if none runs. */
static pid_t service_pid(void) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GVariant) r = NULL;
        pid_t pid;

        r = g_dbus_connection_call_sync(tb_bus()->conn, TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_IFACE, "ListSessions",
                                        NULL, G_VARIANT_TYPE("(ao)"), G_DBUS_CALL_FLAGS_NONE, 25000, NULL, &error);
        g_assert_no_error(error);
        pid = tb_name_owner_pid(tb_bus()->conn, TB_BUS_NAME, NULL, &error);
        g_assert_no_error(error);
        g_assert_cmpint(pid, >, 0);
        return pid;
}

/* Until /proc/PID is gone or a zombie. */
static bool wait_pid_dead(pid_t pid, guint timeout_ms) {
        gint64 deadline = g_get_monotonic_time() + (gint64) timeout_ms * 1000;

        while (tb_pid_alive(pid)) {
                if (g_get_monotonic_time() > deadline)
                        return false;
                g_usleep(10 * 1000);
        }
        return true;
}

/* SIGTERM an activated (or our own) tracebusd and wait until it left the bus. */
static void stop_service(pid_t pid) {
        g_autoptr(GError) error = NULL;

        g_assert_cmpint(kill(pid, SIGTERM), ==, 0);
        g_assert_true(tb_wait_for_name_gone(tb_bus()->conn, TB_BUS_NAME, tb_scaled_ms(15000), &error));
        g_assert_no_error(error);
        g_assert_true(wait_pid_dead(pid, tb_scaled_ms(15000)));
}

/* A holding client of base->user that started a session into a new file of the tmpdir. */
static char *start_holding(const ClientSpec *base, const char *file, Client *ret, char **ret_out) {
        g_autofree char *err = NULL;
        ClientSpec spec = *base;
        char *path;

        spec.output_fd = open_output(file, ret_out);
        spec.op = OP_START;
        spec.hold = true;
        client_spawn(&spec, ret);
        close(spec.output_fd);
        path = client_expect(ret, 'O', tb_scaled_ms(30000), &err);
        if (!path)
                note("Start of %s failed: %s\n", file, err);
        g_assert_nonnull(path);
        return path;
}

/* A property of the client's own session, asked on its own connection. */
static char *client_get(Client *c, const char *prop) {
        g_autofree char *cmd = g_strdup_printf("get %s", prop), *err = NULL, *v = client_cmd(c, cmd, 'V', &err);
        g_autofree char *prefix = g_strdup_printf("\t%s=", prop);

        if (!v)
                note("get %s: %s\n", prop, err);
        g_assert_nonnull(v);
        g_assert_true(g_str_has_prefix(v, prefix));
        return g_strdup(v + strlen(prefix));
}

static guint64 client_get_u64(Client *c, const char *prop) {
        g_autofree char *v = client_get(c, prop);
        return g_ascii_strtoull(v, NULL, 10);
}

static void stop_and_check(Client *c, const char *out_path) {
        g_autofree char *err = NULL, *stats = client_cmd(c, "stop", 'S', &err);

        if (!stats)
                note("Stop failed: %s\n", err);
        g_assert_nonnull(stats);
        note("stopped: %s\n", stats);
        client_finish(c, 10000);
        assert_trace_file_closed(out_path);
}

/* A Start expected to fail; returns the error reply ("name\tmessage"). *ret_ms: how long
 * the answer took, the client's connection and its exit included. */
static char *start_refused(const char *user, gint64 *ret_ms) {
        g_autofree char *out = NULL, *session = NULL, *full = NULL, *name = NULL;
        ClientSpec spec = { .user = user, .op = OP_START, .events = sched_events, .duration_ms = 60000,
                            .output_fd = open_output("refused.pftrace", &out) };
        gint64 t0 = g_get_monotonic_time();

        name = client_run_full(&spec, &session, &full);
        *ret_ms = elapsed_ms(t0);
        close(spec.output_fd);
        if (session)
                note("Start by %s was not refused: %s\n", user, session);
        g_assert_null(session);
        g_assert_nonnull(full);
        return g_steal_pointer(&full);
}

/* Start, recording, Stop, a complete file. */
static void assert_start_works(const char *user, const char *file) {
        g_autofree char *out = NULL, *path = NULL, *state = NULL;
        ClientSpec spec = { .user = user, .events = sched_events, .duration_ms = 60000 };
        Client c;

        path = start_holding(&spec, file, &c, &out);
        state = client_get(&c, "State");
        g_assert_cmpstr(state, ==, "recording");
        g_usleep(tb_scaled_ms(200) * 1000);
        stop_and_check(&c, out);
}

/* ===================================================================== */
/* Reading a trace file that may have been cut off                        */
/* ===================================================================== */

typedef struct {
        gsize len;           /* bytes in the file */
        gsize whole_len;     /* bytes of whole, decodable packets from the start */
        char *problem;       /* why decoding stopped before len, NULL when it did not */
        GHashTable *markers; /* marker text (no newline) -> nothing */
        GArray *periodic;    /* guint64 timestamps of the "periodic write" instants */
        guint n_generic;     /* GenericFtraceEvent of the name in generic_name */
        const char *generic_name;
        bool tracing_disabled;
} Scan;

static void scan_clear(Scan *s) {
        g_clear_pointer(&s->problem, g_free);
        g_clear_pointer(&s->markers, g_hash_table_unref);
        g_clear_pointer(&s->periodic, g_array_unref);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Scan, scan_clear)

static void scan_packet(const Tracebus__TracePacket *p, const TraceRawPacket *raw, guint index, gpointer userdata) {
        Scan *s = userdata;

        if (p->service_event && p->service_event->has_tracing_disabled && p->service_event->tracing_disabled)
                s->tracing_disabled = true;
        if (p->track_event && p->track_event->name && g_str_equal(p->track_event->name, "periodic write"))
                g_array_append_val(s->periodic, p->timestamp);
        if (!p->ftrace_events)
                return;
        for (size_t i = 0; i < p->ftrace_events->n_event; i++) {
                const Tracebus__FtraceEvent *e = p->ftrace_events->event[i];

                if (e->print && e->print->buf && g_str_has_prefix(e->print->buf, MARKER_PREFIX))
                        g_hash_table_add(s->markers, g_strchomp(g_strdup(e->print->buf)));
                if (e->generic && s->generic_name && g_strcmp0(e->generic->event_name, s->generic_name) == 0)
                        s->n_generic++;
        }
}

/* The whole packets from the start, with the one trace reader (tests/trace-file.h). */
static void scan_bytes(const guint8 *data, gsize len, Scan *s) {
        g_autoptr(GError) error = NULL;

        s->len = len;
        s->markers = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        s->periodic = g_array_new(FALSE, FALSE, sizeof(guint64));
        if (!tb_trace_foreach_packet(data, len, scan_packet, s, &s->whole_len, &error))
                s->problem = g_strdup_printf("no whole packet after offset %" G_GSIZE_FORMAT " of %" G_GSIZE_FORMAT
                                             ": %s",
                                             s->whole_len, len, error->message);
}

static GBytes *read_file(const char *path) {
        g_autoptr(GError) error = NULL;
        char *data = NULL;
        gsize len = 0;

        g_assert_true(g_file_get_contents(path, &data, &len, &error));
        g_assert_no_error(error);
        return g_bytes_new_take(data, len);
}

static void scan_file(const char *path, Scan *s) {
        g_autoptr(GBytes) b = read_file(path);
        gsize len;
        const guint8 *d = g_bytes_get_data(b, &len);

        scan_bytes(d, len, s);
}

static guint64 last_periodic(const Scan *s) {
        guint64 last = 0;

        for (guint i = 0; i < s->periodic->len; i++)
                last = MAX(last, g_array_index(s->periodic, guint64, i));
        return last;
}

/* ===================================================================== */
/* 1. SIGKILL while recording                                             */
/* ===================================================================== */

typedef struct {
        int fd;            /* the session instance's own trace_marker */
        GArray *written;   /* guint64 CLOCK_BOOTTIME after each write, by number */
} Markers;

static void marker_write(Markers *m) {
        char line[64];
        int n = g_snprintf(line, sizeof line, MARKER_PREFIX "%05u\n", m->written->len);
        guint64 ts;

        g_assert_cmpint(write(m->fd, line, (size_t) n), ==, n);
        ts = boottime_ns();
        g_array_append_val(m->written, ts);
}

/* Writes markers every 10 ms for ms milliseconds. */
static void markers_for(Markers *m, guint ms) {
        gint64 end = g_get_monotonic_time() + (gint64) ms * 1000;

        while (g_get_monotonic_time() < end) {
                marker_write(m);
                g_usleep(10 * 1000);
        }
}

/* The drain that precedes a "periodic write" instant ran within this before it. */
static guint64 drain_slack_ns(void) {
        return (guint64) tb_scaled_ms(250) * 1000000ull;
}

/* Writes markers until the file shows more than n periodic writes, the last one at
 * after_ns or later, then returns its scan. */
static void markers_until_written(Markers *m, const char *path, guint n, guint64 after_ns, guint timeout_ms,
                                  Scan *ret) {
        gint64 deadline = g_get_monotonic_time() + (gint64) timeout_ms * 1000;

        for (;;) {
                g_auto(Scan) s = { 0 };

                markers_for(m, 50);
                scan_file(path, &s);
                /* Read while the service may be writing: only a torn tail is allowed. */
                if (s.periodic->len > n && last_periodic(&s) >= after_ns && g_hash_table_size(s.markers) > 0) {
                        *ret = s;
                        s = (Scan) { 0 };
                        return;
                }
                if (g_get_monotonic_time() > deadline)
                        g_error("%u ms and the file shows %u periodic write(s), %u marker(s), not more than %u", timeout_ms,
                                s.periodic->len, g_hash_table_size(s.markers), n);
        }
}

static char *marker_name(guint i) {
        return g_strdup_printf(MARKER_PREFIX "%05u", i);
}

/* Every marker written before the last periodic write's drain began is in the file. */
static void assert_markers_up_to_last_write(const Markers *m, const Scan *s) {
        guint64 last = last_periodic(s), slack = drain_slack_ns();
        guint expected = 0, missing_later = 0;

        for (guint i = 0; i < m->written->len; i++) {
                g_autofree char *name = marker_name(i);
                guint64 at = g_array_index(m->written, guint64, i);

                if (at + slack <= last) {
                        expected++;
                        if (!g_hash_table_contains(s->markers, name))
                                g_error("%s, written %.3f s before the last periodic write, is not in the file", name,
                                        (double) (last - at) / 1e9);
                } else if (!g_hash_table_contains(s->markers, name))
                        missing_later++;
        }
        note("%u markers written, %u of them well before the last periodic write (all in the file), %u in the file, "
             "%u written later and lost with the service\n", m->written->len, expected, g_hash_table_size(s->markers),
             missing_later);
        g_assert_cmpuint(expected, >, 10);
}

static void assert_killed_file(const char *path, const GBytes *mid, const Markers *m) {
        g_autoptr(GBytes) b = read_file(path);
        g_auto(Scan) s = { 0 };
        g_auto(TbTraceSummary) sum = { 0 };
        g_autoptr(GError) error = NULL;
        g_autofree char *text = NULL;
        gsize len, mid_len;
        const guint8 *d = g_bytes_get_data(b, &len), *md = g_bytes_get_data((GBytes *) mid, &mid_len);

        scan_bytes(d, len, &s);
        note("after SIGKILL: %" G_GSIZE_FORMAT " bytes, %u periodic writes, %u markers%s%s\n", len, s.periodic->len,
             g_hash_table_size(s.markers), s.problem ? "; " : "", s.problem ? s.problem : "");
        /* Whole packets to the last byte: no torn packet at the end. */
        g_assert_null(s.problem);
        g_assert_cmpuint(s.whole_len, ==, len);
        g_assert_true(tb_trace_file_read(path, &sum, &error));
        g_assert_no_error(error);
        assert_trace_complete(&sum);
        g_assert_true(tb_trace_protoc_decode(tb_bus()->source_dir, path, &text, &error));
        g_assert_no_error(error);
        /* What was on disk before is still there, byte for byte: the service appends only. */
        g_assert_cmpuint(len, >=, mid_len);
        g_assert_true(memcmp(d, md, mid_len) == 0);
        /* The killed service never closed the trace. */
        g_assert_false(s.tracing_disabled);
        assert_markers_up_to_last_write(m, &s);
}

/* The instance of the killed service is still there, and goes when the next one starts. */
static pid_t assert_stale_instance_removed(pid_t dead, const char *instance) {
        g_autofree char *dir = g_build_filename(TB_INSTANCES_DIR, instance, NULL);
        g_autofree char *log = NULL, *needle = g_strdup_printf("Removed tracefs instance %s", instance);
        pid_t pid;

        g_assert_true(g_file_test(dir, G_FILE_TEST_IS_DIR));
        pid = service_pid();
        note("re-activated as pid %d (the killed one was %d)\n", (int) pid, (int) dead);
        g_assert_cmpint(pid, !=, dead);
        if (g_file_test(dir, G_FILE_TEST_EXISTS)) {
                note("the new service left the stale instance %s\n", instance);
                (void) rmdir(dir);
                g_assert_not_reached();
        }
        log = service_log();
        g_assert_nonnull(strstr(log, needle));
        return pid;
}

static void test_sigkill_while_recording(void) {
        const char *cfg = "duration_ms: 120000\nwrite_into_file: true\nfile_write_period_ms: 500\n"
                          "buffers { size_kb: 8192 }\n"
                          "data_sources { config { name: \"linux.ftrace\" ftrace_config {\n"
                          "  ftrace_events: \"ftrace/print\" ftrace_events: \"sched/sched_switch\"\n"
                          "  ftrace_events: \"sched/sched_waking\" drain_period_ms: 100 } } }\n";
        g_autofree char *out = NULL, *path = NULL, *marker_path = NULL;
        g_auto(Scan) first = { 0 }, second = { 0 };
        g_autoptr(GBytes) mid = NULL;
        g_autoptr(GError) error = NULL;
        g_auto(GStrv) inst = NULL;
        Markers m = { .written = g_array_new(FALSE, FALSE, sizeof(guint64)) };
        ClientSpec spec = { .user = "tbuser", .config = cfg };
        TbBusy busy;
        pid_t pid, pid2;
        Client c;

        pid = service_pid();
        path = start_holding(&spec, "killed.pftrace", &c, &out);
        inst = instances_of_pid(pid);
        g_assert_cmpuint(g_strv_length(inst), ==, 1);
        note("tracebusd %d records %s in %s\n", (int) pid, path, inst[0]);
        marker_path = g_build_filename(TB_INSTANCES_DIR, inst[0], "trace_marker", NULL);
        m.fd = open(marker_path, O_WRONLY | O_CLOEXEC);
        g_assert_cmpint(m.fd, >=, 0);
        g_assert_true(tb_busy_start("tbfault-kill", &busy, &error));

        /* A periodic write with markers in it, then one more, then 300 ms of data that
         * only memory holds when the service dies. */
        markers_until_written(&m, out, 0, 0, tb_scaled_ms(10000), &first);
        {
                /* Whole packets only: the file may be written to as we read it. */
                g_autoptr(GBytes) all = read_file(out);
                mid = g_bytes_new_from_bytes(all, 0, MIN(first.whole_len, g_bytes_get_size(all)));
        }
        /* Late enough that a fair number of markers precede it by more than the slack. */
        markers_until_written(&m, out, first.periodic->len,
                              g_array_index(m.written, guint64, 0) + drain_slack_ns() + 300 * 1000000ull,
                              tb_scaled_ms(10000), &second);
        markers_for(&m, 300);
        note("SIGKILL tracebusd %d after %u periodic writes seen\n", (int) pid, second.periodic->len);
        g_assert_cmpint(kill(pid, SIGKILL), ==, 0);
        g_assert_true(wait_pid_dead(pid, tb_scaled_ms(5000)));
        close(m.fd);
        tb_busy_stop(&busy);

        assert_killed_file(out, mid, &m);
        client_finish(&c, 5000);

        pid2 = assert_stale_instance_removed(pid, inst[0]);
        assert_start_works("tbuser", "after-kill.pftrace");
        g_assert_cmpint(service_pid(), ==, pid2);
        g_array_unref(m.written);
}

/* ===================================================================== */
/* 2a. An event that disappears                                           */
/* ===================================================================== */

/* The uprobe's target: a function of this very binary, so that only this test hits it. */
__attribute__((noinline)) int tbfault_probed(int x);
__attribute__((noinline)) int tbfault_probed(int x) {
        __asm__ volatile("" ::: "memory");
        return x * 3 + 1;
}

/* "PATH:0xOFFSET" of tbfault_probed, as uprobe_events wants it: the file offset. */
static char *uprobe_place(void) {
        g_autofree char *exe = g_file_read_link("/proc/self/exe", NULL), *maps = NULL;
        g_auto(GStrv) lines = NULL;
        guintptr addr = (guintptr) &tbfault_probed;

        g_assert_nonnull(exe);
        g_assert_true(g_file_get_contents("/proc/self/maps", &maps, NULL, NULL));
        lines = g_strsplit(maps, "\n", -1);
        for (size_t i = 0; lines[i]; i++) {
                unsigned long start, end, off;
                char perms[8];

                if (sscanf(lines[i], "%lx-%lx %7s %lx", &start, &end, perms, &off) == 4 && addr >= start &&
                    addr < end && strstr(lines[i], exe))
                        return g_strdup_printf("%s:0x%lx", exe, (unsigned long) (addr - start + off));
        }
        g_error("tbfault_probed (%p) is in no file mapping of %s", (void *) addr, exe);
}

static const char *uprobe_group(void) {
        const char *g = g_getenv(ENV_UPROBE_GROUP);
        g_assert_nonnull(g);
        return g;
}

/* Appends a line to uprobe_events; 0 or the errno of the write. */
static int uprobe_events_write(const char *line) {
        int fd = open("/sys/kernel/tracing/uprobe_events", O_WRONLY | O_APPEND | O_CLOEXEC), e = 0;

        if (fd < 0)
                return errno;
        if (write(fd, line, strlen(line)) < 0)
                e = errno;
        close(fd);
        return e;
}

static void write_enable(const char *dir, const char *value) {
        int fd = open(dir, O_WRONLY | O_CLOEXEC);

        if (fd < 0)
                return;
        if (write(fd, value, strlen(value)) < 0)
                g_printerr("# %s: %s\n", dir, g_strerror(errno));
        close(fd);
}

/* Disables the test's uprobe event wherever it is enabled, then removes it. Used
 * before and after the case, and by the parent at the end of the run: the probe
 * must never outlive the suite. Returns the errno of the removal (ENOENT: none). */
static int uprobe_cleanup(const char *group) {
        g_autofree char *top = g_strdup_printf("/sys/kernel/tracing/events/%s/up/enable", group);
        g_autofree char *removal = g_strdup_printf("-:%s/up\n", group);
        g_autoptr(GDir) d = g_dir_open(TB_INSTANCES_DIR, 0, NULL);
        const char *name;

        if (!g_file_test(top, G_FILE_TEST_EXISTS))
                return ENOENT;
        write_enable(top, "0");
        while (d && (name = g_dir_read_name(d))) {
                g_autofree char *e = g_strdup_printf("%s/%s/events/%s/up/enable", TB_INSTANCES_DIR, name, group);
                write_enable(e, "0");
        }
        return uprobe_events_write(removal);
}

static char *uprobe_event(void) {
        return g_strdup_printf("%s/up", uprobe_group());
}

static void uprobe_define(void) {
        g_autofree char *place = uprobe_place(), *def = g_strdup_printf("p:%s/up %s\n", uprobe_group(), place);
        g_autofree char *format = g_strdup_printf("/sys/kernel/tracing/events/%s/up/format", uprobe_group());
        int e;

        (void) uprobe_cleanup(uprobe_group());
        e = uprobe_events_write(def);
        if (e != 0)
                g_error("defining the uprobe \"%s\" failed: %s", def, g_strerror(e));
        note("uprobe %s/up at %s\n", uprobe_group(), place);
        g_assert_true(g_file_test(format, G_FILE_TEST_IS_REGULAR));
}

static void hit_uprobe(guint n) {
        static volatile int sink;

        for (guint i = 0; i < n; i++)
                sink += tbfault_probed((int) i);
}

/* What the kernel answers to removing an event that a session has enabled, and to
 * removing the session's instance: both refused while in use. */
static void assert_removal_refused(const char *instance) {
        g_autofree char *removal = g_strdup_printf("-:%s/up\n", uprobe_group());
        g_autofree char *dir = g_build_filename(TB_INSTANCES_DIR, instance, NULL);
        int e = uprobe_events_write(removal);

        note("removing the enabled uprobe: %s\n", e ? g_strerror(e) : "done");
        g_assert_cmpint(e, ==, EBUSY);
        g_assert_cmpint(rmdir(dir), ==, -1);
        note("rmdir of the session's instance %s: %s\n", instance, g_strerror(errno));
        g_assert_cmpint(errno, ==, EBUSY);
}

/* An administrator disables the event in the session's instance: then it can go. */
static void remove_event_under_session(const char *instance) {
        g_autofree char *enable = g_strdup_printf("%s/%s/events/%s/up/enable", TB_INSTANCES_DIR, instance, uprobe_group());
        g_autofree char *removal = g_strdup_printf("-:%s/up\n", uprobe_group());
        g_autofree char *group_dir = g_strdup_printf("/sys/kernel/tracing/events/%s", uprobe_group());
        int e;

        write_enable(enable, "0");
        e = uprobe_events_write(removal);
        note("removing the uprobe disabled in the session's instance: %s\n", e ? g_strerror(e) : "done");
        g_assert_cmpint(e, ==, 0);
        g_assert_false(g_file_test(group_dir, G_FILE_TEST_EXISTS));
}

static void assert_start_unknown_event(const char *event) {
        g_autofree char *out = NULL, *session = NULL, *full = NULL, *name = NULL;
        /* Alone: with another event the session would record that one, with a warning. */
        const char *const events[] = { event, NULL };
        /* tbadmin: a probe root defined is recorded only by those who may manage. */
        ClientSpec spec = { .user = "tbadmin", .op = OP_START, .events = events, .duration_ms = 10000,
                            .output_fd = open_output("removed-event.pftrace", &out) };

        name = client_run_full(&spec, &session, &full);
        close(spec.output_fd);
        g_assert_null(session);
        g_assert_cmpstr(name, ==, ERR_UNKNOWN_EVENT);
        g_assert_nonnull(strstr(error_message(full), event));
}

/* Polls the file (written every 100 ms) until it holds n events of the uprobe. */
static void wait_uprobe_events_written(const char *path, guint n) {
        gint64 deadline = g_get_monotonic_time() + (gint64) tb_scaled_ms(5000) * 1000;

        for (;;) {
                g_auto(Scan) s = { .generic_name = "up" };

                scan_file(path, &s);
                if (s.n_generic >= n)
                        return;
                if (g_get_monotonic_time() > deadline)
                        g_error("after %u ms the file holds %u of the %u uprobe events", tb_scaled_ms(5000), s.n_generic, n);
                g_usleep(50 * 1000);
        }
}

static void test_event_disappears(void) {
        g_autofree char *event = NULL, *cfg = NULL, *out = NULL, *path = NULL, *state = NULL, *log = NULL;
        g_auto(Scan) s = { .generic_name = "up" };
        g_auto(TbTraceSummary) sum = { 0 };
        g_autoptr(GError) error = NULL;
        g_auto(GStrv) inst = NULL;
        /* tbadmin: a probe root defined is recorded only by those who may manage. */
        ClientSpec spec = { .user = "tbadmin" };
        TbBusy busy;
        pid_t pid;
        Client c;

        uprobe_define();
        event = uprobe_event();
        cfg = g_strdup_printf("duration_ms: 60000\nwrite_into_file: true\nfile_write_period_ms: 100\n"
                              "buffers { size_kb: 4096 }\n"
                              "data_sources { config { name: \"linux.ftrace\" ftrace_config {\n"
                              "  ftrace_events: \"%s\" ftrace_events: \"sched/sched_switch\"\n"
                              "  ftrace_events: \"sched/sched_waking\" drain_period_ms: 50 } } }\n",
                              event);
        spec.config = cfg;
        pid = service_pid();
        path = start_holding(&spec, "uprobe.pftrace", &c, &out);
        inst = instances_of_pid(pid);
        g_assert_cmpuint(g_strv_length(inst), ==, 1);
        hit_uprobe(200);
        wait_uprobe_events_written(out, 200);

        assert_removal_refused(inst[0]);
        /* Gone for good; the kernel clears the buffers of the session's instance with it. */
        remove_event_under_session(inst[0]);
        hit_uprobe(200); /* no probe any more: nothing */

        /* The session records on, and the service answers. */
        g_assert_true(tb_busy_start("tbfault-after", &busy, &error));
        g_usleep(tb_scaled_ms(600) * 1000);
        state = client_get(&c, "State");
        g_assert_cmpstr(state, ==, "recording");
        g_assert_cmpint(service_pid(), ==, pid);
        assert_start_unknown_event(event);
        tb_busy_stop(&busy);
        stop_and_check(&c, out);

        scan_file(out, &s);
        g_assert_null(s.problem);
        note("%u uprobe events in the trace\n", s.n_generic);
        g_assert_cmpuint(s.n_generic, ==, 200);
        g_assert_true(tb_trace_file_read(out, &sum, &error));
        g_assert_no_error(error);
        assert_busy_seen(&sum, &busy);
        /* What the kernel threw away is marked in the trace and in the log, not silent. */
        note("%u bundle(s) with lost_events\n", sum.n_lost_bundles);
        g_assert_cmpuint(sum.n_lost_bundles, >, 0);
        log = service_log();
        g_assert_nonnull(strstr(log, "The kernel cleared the trace buffer of CPU"));
        g_assert_cmpint(uprobe_cleanup(uprobe_group()), ==, ENOENT);
}

/* ===================================================================== */
/* 2b. No tracefs                                                         */
/* ===================================================================== */

static void child_die_with_parent(gpointer data) {
        (void) prctl(PR_SET_PDEATHSIG, SIGTERM);
}

/* tracebusd in a mount namespace of its own where tracefs (and debugfs, where libtracefs
 * would look next) are unmounted, with only the capabilities of the unit's
 * CapabilityBoundingSet= and no new privileges, as under systemd: without CAP_SYS_ADMIN it
 * cannot mount tracefs itself. The machine's tracefs stays: the umounts happen in the new
 * namespace only. (The rest of the unit's sandbox is checked under a real systemd, in
 * tests/systemd/.) */
static GPid spawn_service_without_tracefs(void) {
        const char *script =
                "for m in /sys/kernel/debug/tracing /sys/kernel/debug /sys/kernel/tracing; do\n"
                "        umount -l \"$m\" 2>/dev/null || true\n"
                "done\n"
                "if grep -qE ' (tracefs|debugfs) ' /proc/self/mounts; then\n"
                "        echo 'test-faults: tracefs is still mounted in the namespace' >&2; exit 99\n"
                "fi\n"
                "caps=$(sed -n 's/^CapabilityBoundingSet=//p' \"$1\" | tail -n 1 | tr 'A-Z ' 'a-z,' | sed 's/cap_/+/g')\n"
                "shift\n"
                "exec setpriv --bounding-set=-all,\"$caps\" --inh-caps=-all --ambient-caps=-all --no-new-privs \"$@\"\n";
        TbSystemBus *bus = tb_bus();
        g_autofree char *unit = g_build_filename(bus->build_dir, "systemd", "tracebusd.service", NULL);
        g_autofree char *exe = g_build_filename(bus->build_dir, "service", "tracebusd", NULL);
        g_autofree char *config = g_build_filename(bus->tmpdir, "config", NULL);
        g_autofree char *log = g_build_filename(bus->log_dir, "service.log", NULL);
        const char *argv[] = { "unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", script, "sh",
                               unit, exe, NULL };
        g_auto(GStrv) envp = g_get_environ();
        g_autoptr(GError) error = NULL;
        int log_fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        GPid pid;

        g_assert_cmpint(log_fd, >=, 0);
        envp = g_environ_setenv(envp, "STATE_DIRECTORY", bus->state_dir, TRUE);
        envp = g_environ_setenv(envp, "TRACEBUS_CONFIG_DIR", config, TRUE);
        envp = g_environ_setenv(envp, "TRACEBUS_IDLE_TIMEOUT_SEC", "0", TRUE);
        g_assert_true(g_spawn_async_with_fds(NULL, (char **) argv, envp,
                                             G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_SEARCH_PATH, child_die_with_parent,
                                             NULL, &pid, -1, log_fd, log_fd, &error));
        g_assert_no_error(error);
        close(log_fd);
        /* unshare, sh and setpriv exec: the pid is tracebusd's. */
        g_assert_true(tb_wait_for_name(bus->conn, TB_BUS_NAME, pid, tb_scaled_ms(15000), &error));
        g_assert_no_error(error);
        g_assert_cmpint(tb_name_owner_pid(bus->conn, TB_BUS_NAME, NULL, &error), ==, pid);
        return pid;
}

static bool ns_has_tracefs(pid_t pid) {
        g_autofree char *path = g_strdup_printf("/proc/%d/mounts", (int) pid), *mounts = NULL;

        g_assert_true(g_file_get_contents(path, &mounts, NULL, NULL));
        return strstr(mounts, " tracefs ") != NULL;
}

/* A call on root's connection; the error name, NULL on success. */
static char *call_error(const char *method, GVariant *args, const char *reply_type) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GVariant) r = NULL;

        r = g_dbus_connection_call_sync(tb_bus()->conn, TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_IFACE, method, args,
                                        G_VARIANT_TYPE(reply_type), G_DBUS_CALL_FLAGS_NONE, 25000, NULL, &error);
        if (r)
                return NULL;
        note("%s: %s\n", method, error->message);
        return g_dbus_error_get_remote_error(error);
}

static void assert_tracing_unavailable(const char *user) {
        gint64 ms;
        g_autofree char *err = start_refused(user, &ms), *name = error_name(err);

        g_assert_cmpstr(name, ==, ERR_TRACING_UNAVAILABLE);
        g_assert_nonnull(strstr(error_message(err), "tracefs"));
}

static void assert_answers_without_tracefs(void) {
        g_autofree char *list_events = call_error("ListEvents", g_variant_new("(s)", "sched/*"), "(as)");
        g_autofree char *list = call_error("ListSessions", NULL, "(ao)");
        g_autofree char *detached = call_error("IsDetached", g_variant_new("(s)", "tbfault-key"), "(b)");

        g_assert_cmpstr(list_events, ==, ERR_TRACING_UNAVAILABLE);
        g_assert_null(list);
        g_assert_null(detached);
}

/* tracefs mounted in the service's namespace (by root, from outside): no restart needed. */
static void mount_tracefs_for(pid_t pid) {
        g_autofree char *target = g_strdup_printf("%d", (int) pid);
        const char *argv[] = { "nsenter", "-t", target, "-m", "mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing",
                               NULL };
        g_auto(TbCommandResult) res = { 0 };
        g_autoptr(GError) error = NULL;

        g_assert_true(tb_run_as_user(NULL, argv, &res, &error));
        log_command("nsenter mount tracefs", &res);
        g_assert_true(tb_command_succeeded(&res));
        g_assert_true(ns_has_tracefs(pid));
}

static void test_tracefs_unavailable(void) {
        g_autofree char *log = NULL;
        g_auto(GStrv) inst = NULL;
        int status = 0;
        GPid pid;

        stop_service(service_pid());
        pid = spawn_service_without_tracefs();
        g_assert_false(ns_has_tracefs(pid));
        note("tracebusd %d runs without tracefs\n", (int) pid);

        assert_tracing_unavailable("tbuser");
        assert_tracing_unavailable("root");
        assert_answers_without_tracefs();
        g_assert_true(tb_pid_alive(pid));
        inst = instances_of_pid(pid);
        g_assert_cmpuint(g_strv_length(inst), ==, 0);
        log = service_log();
        g_assert_nonnull(strstr(log, "tracefs is not mounted"));
        /* The machine's own tracefs was never touched. */
        g_assert_true(g_file_test(TB_INSTANCES_DIR, G_FILE_TEST_IS_DIR));

        mount_tracefs_for(pid);
        assert_start_works("tbuser", "tracefs-later.pftrace");

        g_assert_cmpint(kill(pid, SIGTERM), ==, 0);
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* ===================================================================== */
/* 3. polkitd absent, failing, killed mid-query, back                     */
/* ===================================================================== */

static pid_t polkit_pid(void) {
        g_autoptr(GError) error = NULL;
        pid_t pid = tb_name_owner_pid(tb_bus()->conn, POLKIT_NAME, NULL, &error);

        g_assert_no_error(error);
        g_assert_cmpint(pid, >, 0);
        return pid;
}

static void kill_polkitd(int sig) {
        g_autoptr(GError) error = NULL;
        pid_t pid = polkit_pid();

        note("polkitd is pid %d: signal %d\n", (int) pid, sig);
        g_assert_cmpint(kill(pid, sig), ==, 0);
        g_assert_true(tb_wait_for_name_gone(tb_bus()->conn, POLKIT_NAME, tb_scaled_ms(10000), &error));
        g_assert_no_error(error);
}

/* An activation file for polkitd, read at once (ReloadConfig) rather than whenever the
 * bus notices the new file. exec NULL: the working one, polkitd as the harness runs it. */
static void polkit_activation(const char *exec) {
        TbSystemBus *bus = tb_bus();
        g_autofree char *file = g_build_filename(bus->tmpdir, "services", POLKIT_NAME ".service", NULL);
        g_autofree char *script = g_build_filename(bus->source_dir, "tests", "polkitd-private.sh", NULL);
        g_autofree char *working = g_strdup_printf(
                "/bin/sh -c 'exec unshare --mount --propagation private /bin/sh %s %s/actions %s/rules.d %s/empty "
                ">>%s/polkitd.log 2>&1'", script, bus->tmpdir, bus->tmpdir, bus->tmpdir, bus->log_dir);
        g_autofree char *text = g_strdup_printf("[D-BUS Service]\nName=" POLKIT_NAME "\nExec=%s\nUser=root\n",
                                                exec ? exec : working);
        g_autoptr(GError) error = NULL;
        g_autoptr(GVariant) r = NULL;

        g_assert_true(g_file_set_contents(file, text, -1, &error));
        g_assert_no_error(error);
        r = g_dbus_connection_call_sync(bus->conn, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                        "org.freedesktop.DBus", "ReloadConfig", NULL, NULL, G_DBUS_CALL_FLAGS_NONE,
                                        10000, NULL, &error);
        g_assert_no_error(error);
}

/* How much longer than a refusal by polkitd (the floor: measured in this run with polkitd
 * up, the same client and trip; the median of three) the refusal without polkitd may
 * take. "At once" is the point: the bus answers for a missing polkitd at once, which
 * costs about what polkitd's own answer does (measured x0.6-2.6 of a floor of 10-30 ms,
 * ASan too, with the busy pair running); the margin is for a loaded machine. Waiting
 * for the bus's 25 s timeout instead is x800 and more. */
#define AUTH_UNAVAILABLE_MAX_RATIO 50

/* The median time of three Starts refused by polkitd. */
static gint64 polkit_refusal_ms(void) {
        gint64 ms[3];

        for (size_t i = 0; i < G_N_ELEMENTS(ms); i++)
                g_free(start_refused("tbother", &ms[i]));
        return MAX(MIN(ms[0], ms[1]), MIN(MAX(ms[0], ms[1]), ms[2]));
}

/* Start is refused at once, saying why. */
static void assert_start_auth_unavailable(const char *user, const char *situation, gint64 floor_ms) {
        gint64 ms;
        g_autofree char *err = start_refused(user, &ms), *name = error_name(err);

        note("Start by %s with %s: answered in %" G_GINT64_FORMAT " ms (x%.1f a refusal by polkitd): %s\n", user,
             situation, ms, (double) ms / MAX(floor_ms, 1), err);
        g_assert_cmpstr(name, ==, ERR_AUTH_UNAVAILABLE);
        g_assert_nonnull(strstr(error_message(err), "authorization could not be checked"));
        g_assert_cmpint(ms, <, AUTH_UNAVAILABLE_MAX_RATIO * MAX(floor_ms, 1));
}

/* polkitd stopped (SIGSTOP) holds the query; killed, the bus answers for it. */
static void assert_query_in_flight_answered(void) {
        g_autofree char *out = NULL, *session = NULL, *err = NULL, *name = NULL;
        ClientSpec spec = { .user = "tbuser", .op = OP_START, .events = sched_events, .duration_ms = 60000,
                            .output_fd = open_output("in-flight.pftrace", &out) };
        pid_t pk = polkit_pid();
        gint64 t0;
        Client c;

        g_assert_cmpint(kill(pk, SIGSTOP), ==, 0);
        client_spawn(&spec, &c);
        close(spec.output_fd);
        session = client_expect(&c, 'O', 500, &err);
        g_assert_null(session);
        g_assert_true(g_str_has_prefix(err, "local.NoReport"));
        g_clear_pointer(&err, g_free);
        t0 = g_get_monotonic_time();
        kill_polkitd(SIGKILL);
        session = client_expect(&c, 'O', tb_scaled_ms(5000), &err);
        note("Start waiting for a killed polkitd: answered %" G_GINT64_FORMAT " ms after the kill: %s\n",
             elapsed_ms(t0), err);
        client_finish(&c, 5000);
        g_assert_null(session);
        name = error_name(err);
        g_assert_cmpstr(name, ==, ERR_AUTH_UNAVAILABLE);
}

/* The session started before polkitd went keeps writing its periodic writes. */
static void assert_still_recording(Client *c, guint64 bytes_before) {
        gint64 deadline = g_get_monotonic_time() + (gint64) tb_scaled_ms(5000) * 1000;
        g_autofree char *state = client_get(c, "State");
        guint64 now;

        g_assert_cmpstr(state, ==, "recording");
        while ((now = client_get_u64(c, "BytesWritten")) <= bytes_before && g_get_monotonic_time() < deadline)
                g_usleep(100 * 1000);
        note("BytesWritten %" G_GUINT64_FORMAT " -> %" G_GUINT64_FORMAT " while polkitd was gone\n", bytes_before, now);
        g_assert_cmpuint(now, >, bytes_before);
}

static void test_polkitd_gone(void) {
        const char *cfg = "duration_ms: 120000\nwrite_into_file: true\nfile_write_period_ms: 500\n"
                          "buffers { size_kb: 4096 }\n"
                          "data_sources { config { name: \"linux.ftrace\" ftrace_config {\n"
                          "  ftrace_events: \"sched/sched_switch\" ftrace_events: \"sched/sched_waking\" } } }\n";
        g_autofree char *out = NULL, *path = NULL;
        g_auto(TbTraceSummary) sum = { 0 };
        g_autoptr(GError) error = NULL;
        ClientSpec spec = { .user = "tbuser", .config = cfg };
        TbBusy busy;
        guint64 bytes;
        gint64 floor_ms;
        pid_t service;
        Client c;

        service = service_pid();
        path = start_holding(&spec, "through-polkit-outage.pftrace", &c, &out);
        g_free(wait_state(path, "recording", tb_scaled_ms(5000)));
        bytes = client_get_u64(&c, "BytesWritten");

        /* The floor: refusals by polkitd itself, the same trip with polkitd up. */
        floor_ms = polkit_refusal_ms();
        /* Gone, and nothing on the bus would start it. */
        kill_polkitd(SIGKILL);
        g_assert_true(tb_busy_start("tbfault-nopk", &busy, &error));
        assert_start_auth_unavailable("tbuser", "no polkitd", floor_ms);
        assert_start_auth_unavailable("root", "no polkitd", floor_ms);
        /* Gone, and its activation fails. */
        polkit_activation("/nonexistent/polkitd");
        assert_start_auth_unavailable("tbuser", "an activation file pointing at nothing", floor_ms);
        assert_still_recording(&c, bytes);

        /* Back by activation: the very next Start works. */
        polkit_activation(NULL);
        assert_start_works("tbuser", "polkitd-back.pftrace");
        note("polkitd re-activated as pid %d\n", (int) polkit_pid());
        /* Killed while it holds a query; activated again by the next one. */
        assert_query_in_flight_answered();
        assert_start_works("tbuser", "polkitd-back-again.pftrace");
        assert_start_works("tbadmin", "polkitd-back-tbadmin.pftrace");

        tb_busy_stop(&busy);
        g_assert_cmpint(service_pid(), ==, service);
        stop_and_check(&c, out);
        g_assert_true(tb_trace_file_read(out, &sum, &error));
        g_assert_no_error(error);
        assert_busy_seen(&sum, &busy);
}

int main(int argc, char **argv) {
        g_autofree char *group = NULL;
        int r;

        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();

        /* One uprobe group per run, known to the parent, which removes it at the end
         * whatever happened in the cases. */
        if (!g_test_subprocess()) {
                group = g_strdup_printf("tbfault_%d", (int) getpid());
                g_setenv(ENV_UPROBE_GROUP, group, TRUE);
        }
        tb_test_add_isolated("/bus/faults/1-sigkill-while-recording", test_sigkill_while_recording);
        tb_test_add_isolated("/bus/faults/2a-event-disappears", test_event_disappears);
        tb_test_add_isolated("/bus/faults/2b-tracefs-unavailable", test_tracefs_unavailable);
        tb_test_add_isolated("/bus/faults/3-polkitd-gone", test_polkitd_gone);
        r = tb_test_run(TB_START_ACTIVATABLE);
        if (group) {
                int e = uprobe_cleanup(group);
                if (e != 0 && e != ENOENT) {
                        g_printerr("# could not remove the uprobe group %s: %s\n", group, g_strerror(e));
                        r = 1;
                }
        }
        return r;
}
