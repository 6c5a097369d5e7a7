/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite: snapshots of a running session, against
 * the real service, polkitd and tracefs. Session.Clone through the command line
 * (tracebus --clone, --clone-by-name, --clone-key) as the test users; the snapshots read
 * back with libtracebus's reader (tests/recorder.h, tests/trace-file.h).
 *
 * tests/polkit-rules: tbuser may record; tbadmin may also manage; tbother may do neither.
 * The service runs with CloneMinIntervalSec=1s.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli-util.h"
#include "recorder.h"
#include "session-util.h"
#include "system-bus.h"
#include "tb-client.h"
#include "trace-file.h"

#define CLONE_INTERVAL_MS 1000

static const char *const clone_events[] = { "sched/sched_switch", "sched/sched_waking", "ftrace/print", NULL };

/* A ring of 16 MiB: the flight recorder's configuration. */
static char *ring_config(const char *extra_top) {
        g_autofree char *top = g_strdup_printf("buffers { size_kb: 16384 fill_policy: RING_BUFFER }\n%s",
                                               extra_top ?: "");
        return ftrace_config(top, clone_events, "  buffer_size_kb: 8192\n");
}

static void write_markers(int fd, const char *tag, guint n) {
        for (guint i = 0; i < n; i++) {
                char buf[64];
                g_snprintf(buf, sizeof buf, "%s %u\n", tag, i);
                marker_write(fd, buf);
        }
}

/* What makes a snapshot load alone: clock snapshot, system info, a process tree, the
 * service's track descriptors, every sequence opened with its incremental state cleared. */
static void check_self_contained(const char *path) {
        g_auto(TbTraceSummary) s = { 0 };
        g_autoptr(GError) error = NULL;
        g_auto(Trace) t = { 0 };
        gboolean tree = FALSE, tracks = FALSE, stats = FALSE;

        g_assert_true(tb_trace_file_read(path, &s, &error));
        g_assert_no_error(error);
        g_assert_true(s.has_clock_snapshot);
        g_assert_true(s.clock_is_boottime);
        g_assert_true(s.has_system_info);
        g_assert_true(s.has_utsname);
        g_assert_true(s.all_have_sequence_id);
        if (!s.first_packets_flagged)
                g_error("%s: %s", path, s.first_problem);
        trace_load(path, false, &t);
        for (guint i = 0; i < t.pkts->len; i++) {
                const Tracebus__TracePacket *p = PKT(&t, i)->p;
                tree = tree || (p->process_tree && p->process_tree->n_threads + p->process_tree->n_processes > 0);
                tracks = tracks || (p->track_descriptor && p->track_descriptor->name &&
                                    strcmp(p->track_descriptor->name, "tracebus") == 0);
                stats = stats || p->trace_stats;
        }
        g_assert_true(tree);
        g_assert_true(tracks);
        g_assert_true(stats);
        check_trace(&t, &(CheckOpts) { .closed = false });
        verdict();
}

static void clone_as(const char *user, const char *option, const char *out, TbCommandResult *res) {
        run_cli(user, res, option, "-o", out, NULL);
}

static guint64 last_event_ts(const char *path) {
        g_auto(Trace) t = { 0 };
        guint64 max = 0;

        trace_load(path, false, &t);
        for (guint i = 0; i < t.evs->len; i++)
                max = MAX(max, EV(&t, i)->ts);
        return max;
}

/* Markers written before a clone are in it, or counted lost by the kernel. */
static void check_markers(const char *path, const char *tag, guint n) {
        g_auto(Trace) t = { 0 };
        g_auto(Markers) m = { 0 };
        guint present;
        guint64 lost;

        trace_load(path, false, &t);
        markers_collect(&t, tag, n, &m);
        present = markers_present(&m);
        lost = ftrace_stats_lost(&t, -1);
        g_assert_cmpuint(lost, !=, G_MAXUINT64);
        note("%s: %u of %u markers '%s', kernel lost %" G_GUINT64_FORMAT "\n", path, present, n, tag, lost);
        g_assert_cmpuint(present + lost, >=, n);
}

/* Twice while a storm runs: each snapshot loads alone, the second has newer events, the
 * session records on and its own trace has them all. */
static void test_twice_under_storm(void) {
        g_autofree char *cfg = ring_config(NULL);
        g_autofree char *dir = make_user_dir("tbuser", "clone-storm");
        g_autofree char *one = g_build_filename(dir, "one.pftrace", NULL);
        g_autofree char *two = g_build_filename(dir, "two.pftrace", NULL);
        g_autofree char *opt = NULL;
        g_auto(TbCommandResult) c1 = { 0 }, c2 = { 0 };
        g_autoptr(GHashTable) st = NULL;
        g_auto(Rec) r = { 0 };
        GPid storm;
        int fd;

        rec_start(&r, "tbuser", "clone-storm.pftrace", cfg);
        opt = g_strdup_printf("--clone=%s", session_id(r.path));
        fd = marker_open(&r);
        storm = storm_start(200000, true);
        write_markers(fd, "tbclone-a", 2000);
        clone_as("tbuser", opt, one, &c1);
        assert_exit(&c1, 0);
        assert_stderr_has(&c1, "Snapshot written into");
        write_markers(fd, "tbclone-b", 2000);
        g_usleep(CLONE_INTERVAL_MS * 1000);
        clone_as("tbuser", opt, two, &c2);
        assert_exit(&c2, 0);
        storm_wait(storm);
        close(fd);
        assert_recording(r.path);

        check_self_contained(one);
        check_self_contained(two);
        check_markers(one, "tbclone-a", 2000);
        check_markers(two, "tbclone-b", 2000);
        g_assert_cmpuint(last_event_ts(two), >, last_event_ts(one));

        st = rec_stop(&r);
        check_markers(r.out, "tbclone-a", 2000);
        check_markers(r.out, "tbclone-b", 2000);
}

/* Another user's session: NoSuchSession (exit 2) for who may not manage; a holder of
 * org.tracebus.manage may clone it. */
static void test_foreign(void) {
        g_autofree char *cfg = ring_config(NULL);
        g_autofree char *other_dir = make_user_dir("tbother", "clone-foreign-other");
        g_autofree char *admin_dir = make_user_dir("tbadmin", "clone-foreign-admin");
        g_autofree char *other_out = g_build_filename(other_dir, "x.pftrace", NULL);
        g_autofree char *admin_out = g_build_filename(admin_dir, "x.pftrace", NULL);
        g_autofree char *opt = NULL;
        g_auto(TbCommandResult) other = { 0 }, admin = { 0 };
        g_autoptr(GHashTable) st = NULL;
        g_auto(Rec) r = { 0 };

        rec_start(&r, "tbuser", "clone-foreign.pftrace", cfg);
        opt = g_strdup_printf("--clone=%s", session_id(r.path));
        run_cli("tbother", &other, opt, "-o", other_out, "--no-ask-password", NULL);
        assert_exit(&other, 2);
        assert_stderr_has(&other, "no such tracing session");
        g_assert_cmpint(file_size(other_out), ==, 0);
        clone_as("tbadmin", opt, admin_out, &admin);
        assert_exit(&admin, 0);
        check_self_contained(admin_out);
        st = rec_stop(&r);
}

/* A second clone within CloneMinIntervalSec= is refused with its named error. */
static void test_rate_limit(void) {
        g_autofree char *cfg = ring_config(NULL);
        g_autofree char *dir = make_user_dir("tbuser", "clone-rate");
        g_autofree char *one = g_build_filename(dir, "one.pftrace", NULL);
        g_autofree char *two = g_build_filename(dir, "two.pftrace", NULL);
        g_autofree char *three = g_build_filename(dir, "three.pftrace", NULL);
        g_autofree char *opt = NULL;
        g_auto(TbCommandResult) c1 = { 0 }, c2 = { 0 }, c3 = { 0 };
        g_autoptr(GHashTable) st = NULL;
        g_auto(Rec) r = { 0 };

        rec_start(&r, "tbuser", "clone-rate.pftrace", cfg);
        opt = g_strdup_printf("--clone=%s", session_id(r.path));
        clone_as("tbuser", opt, one, &c1);
        assert_exit(&c1, 0);
        clone_as("tbuser", opt, two, &c2);
        assert_exit(&c2, 1);
        assert_stderr_has(&c2, "CloneMinIntervalSec");
        g_usleep(CLONE_INTERVAL_MS * 1000 + 200 * 1000);
        clone_as("tbuser", opt, three, &c3);
        assert_exit(&c3, 0);
        st = rec_stop(&r);
}

/* --clone-by-name (the config's unique_session_name) and --clone-key (a detached
 * session's key), and the service's trace directory when there is no -o. */
static void test_by_name_and_key(void) {
        g_autofree char *dir = make_user_dir("tbuser", "clone-name");
        g_autofree char *text = ring_config("unique_session_name: \"tbclone-name\"\n");
        g_autofree char *cfg = user_file("tbuser", dir, "config.pbtxt", text, -1);
        g_autofree char *out = g_build_filename(dir, "trace.pftrace", NULL);
        g_autofree char *by_name = g_build_filename(dir, "by-name.pftrace", NULL);
        g_autofree char *by_key = g_build_filename(dir, "by-key.pftrace", NULL);
        g_autofree char *tdir = traces_dir();
        g_autofree char *prefix = g_strdup_printf("%s/%u/", tdir, (unsigned) tb_user_uid("tbuser"));
        g_auto(TbCommandResult) start = { 0 }, c1 = { 0 }, c2 = { 0 }, c3 = { 0 }, c4 = { 0 }, stop = { 0 };
        g_autofree char *path = NULL;
        const char *p, *end;

        run_cli("tbuser", &start, "--detach=tbclone-key", "-c", cfg, "--txt", "-o", out, NULL);
        assert_exit(&start, 0);
        clone_as("tbuser", "--clone-by-name=tbclone-name", by_name, &c1);
        assert_exit(&c1, 0);
        check_self_contained(by_name);
        g_usleep(CLONE_INTERVAL_MS * 1000 + 200 * 1000);
        clone_as("tbuser", "--clone-key=tbclone-key", by_key, &c2);
        assert_exit(&c2, 0);
        check_self_contained(by_key);
        clone_as("tbuser", "--clone-key=tbclone-nokey", by_key, &c3);
        assert_exit(&c3, 2);
        /* No -o: a file of the caller's trace directory, and where it is. */
        g_usleep(CLONE_INTERVAL_MS * 1000 + 200 * 1000);
        run_cli("tbuser", &c4, "--clone-key=tbclone-key", NULL);
        assert_exit(&c4, 0);
        p = strstr(c4.err, prefix);
        g_assert_nonnull(p);
        end = strchr(p, ':');
        g_assert_nonnull(end);
        path = g_strndup(p, (gsize) (end - p));
        assert_service_file(path, tb_user_uid("tbuser"));
        check_self_contained(path);
        run_cli("tbuser", &stop, "--attach=tbclone-key", "--stop", NULL);
        assert_exit(&stop, 0);
        assert_file_complete(out);
}

/* A session writing into its file as it goes: its snapshot holds what it has not written
 * yet, loads alone all the same, and says so. */
static void test_streamed(void) {
        g_autofree char *cfg = ftrace_config("write_into_file: true\nfile_write_period_ms: 60000\nbuffers { size_kb: 4096 }\n",
                                             clone_events, NULL);
        g_autofree char *dir = make_user_dir("tbuser", "clone-stream");
        g_autofree char *one = g_build_filename(dir, "one.pftrace", NULL);
        g_autofree char *opt = NULL;
        g_auto(TbCommandResult) c1 = { 0 };
        g_autoptr(GHashTable) st = NULL;
        g_auto(Rec) r = { 0 };
        int fd;

        rec_start(&r, "tbuser", "clone-stream.pftrace", cfg);
        opt = g_strdup_printf("--clone=%s", session_id(r.path));
        fd = marker_open(&r);
        write_markers(fd, "tbclone-s", 500);
        close(fd);
        clone_as("tbuser", opt, one, &c1);
        assert_exit(&c1, 0);
        assert_stderr_has(&c1, "warning: the session writes its trace into its output as it goes");
        check_self_contained(one);
        check_markers(one, "tbclone-s", 500);
        st = rec_stop(&r);
}

/* The flags' rules, before anything is asked. */
static void test_cli_flags(void) {
        g_auto(TbCommandResult) both = { 0 }, cfg = { 0 }, report = { 0 }, bad = { 0 };

        run_cli("tbuser", &both, "--clone=1", "--clone-key=k", "-o", "/tmp/x", NULL);
        assert_exit(&both, 1);
        assert_stderr_has(&both, "mutually exclusive");
        run_cli("tbuser", &cfg, "--clone=1", "-c", "/dev/null", "-o", "/tmp/x", NULL);
        assert_exit(&cfg, 1);
        run_cli("tbuser", &report, "--clone-for-bugreport", NULL);
        assert_exit(&report, 3);
        run_cli("tbuser", &bad, "--clone=abc", NULL);
        assert_exit(&bad, 2);
}

RECORDER_WRAP(test_twice_under_storm)
RECORDER_WRAP(test_foreign)
RECORDER_WRAP(test_rate_limit)
RECORDER_WRAP(test_by_name_and_key)
RECORDER_WRAP(test_cli_flags)
RECORDER_WRAP(test_streamed)

int main(int argc, char **argv) {
        g_autofree char *conf = g_strdup_printf("[Limits]\nCloneMinIntervalSec=%ums\n", CLONE_INTERVAL_MS);

        if (!freopen("/dev/null", "r", stdin))
                return EXIT_FAILURE;
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();
        g_setenv(TB_TEST_TRACEBUSD_CONF, conf, TRUE);
        tb_test_add_isolated("/bus/clone/twice-under-storm", case_test_twice_under_storm);
        tb_test_add_isolated("/bus/clone/foreign", case_test_foreign);
        tb_test_add_isolated("/bus/clone/rate-limit", case_test_rate_limit);
        tb_test_add_isolated("/bus/clone/by-name-and-key", case_test_by_name_and_key);
        tb_test_add_isolated("/bus/clone/cli-flags", case_test_cli_flags);
        tb_test_add_isolated("/bus/clone/streamed", case_test_streamed);
        return tb_test_run(TB_START_SERVICE);
}
