/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite: a hostile user against the service's outputs. The quota of the trace
 * directory counted as sessions write, not when a file is created; what would hide
 * usage from it (a subdirectory, a link) refused; Output sockets whose peer is another
 * user refused, since the service writes as root; and a reader that stops reading
 * cannot hold a session, Stop or shutdown for longer than OutputTimeoutSec=.
 *
 * The service runs with a small quota and a short write deadline (its tracebusd.conf
 * below). Timing is measured against that configured deadline, as a ratio.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "root-call.h"
#include "session-util.h"

#define QUOTA_BYTES (384u * 1024u)
#define OUTPUT_TIMEOUT_SEC 3u
#define ERR_TRACE_DIR_REFUSED TB_ERROR_TRACE_DIRECTORY_REFUSED
#define ERR_OUTPUT_REFUSED TB_ERROR_OUTPUT_REFUSED

static char *user_trace_dir(const char *user) {
        g_autofree char *tdir = traces_dir();

        return g_strdup_printf("%s/%u", tdir, (unsigned) tb_user_uid(user));
}

/* The sizes of the files in @dir, all whole packets; with @opened, each also has the
 * trace's opening packets (a session started with little of the quota left may not). */
static off_t total_of_traces(const char *dir, bool opened) {
        g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
        const char *name;
        off_t total = 0;

        g_assert_nonnull(d);
        while ((name = g_dir_read_name(d))) {
                g_autofree char *file = g_build_filename(dir, name, NULL);
                g_auto(TbTraceSummary) s = { 0 };
                g_autoptr(GError) error = NULL;

                note("%s: %lld bytes\n", file, (long long) file_size(file));
                total += file_size(file);
                if (!tb_trace_file_read(file, &s, &error))
                        g_error("the trace cut at the quota does not decode: %s", error->message);
                if (opened) {
                        g_assert_true(s.has_trace_config && s.has_tracing_started);
                        g_assert_true(s.all_have_sequence_id && s.first_packets_flagged);
                }
        }
        return total;
}

/* A session into the trace directory as tbuser, with busy processes to record, that
 * must end with reason quota (or be refused at once when the quota is used up). */
static void record_until_quota(void) {
        g_autofree char *cfg = config_periodic(120000, 100, 0), *path = NULL, *err = NULL;
        ClientSpec spec = { .user = "tbuser", .op = OP_START, .config = cfg, .output_fd = -1 };
        g_autoptr(GError) error = NULL;
        TbBusy busy;

        g_assert_true(tb_busy_start("tbbusy-quota", &busy, &error));
        err = client_run(&spec, &path);
        if (err) {
                tb_busy_stop(&busy);
                g_assert_cmpstr(err, ==, ERR_QUOTA);
                return;
        }
        /* 120 s without the quota; it is full long before. */
        wait_ended(path, tb_scaled_ms(60000), &busy, tb_user_uid("tbuser"), "quota");
}

/* Sessions into the trace directory cross the quota while they record: each ends with
 * reason quota, its file a complete trace, and all of them together stay within the
 * quota, the second counted on top of what the first left. */
static void test_quota_mid_recording(void) {
        g_autofree char *udir = user_trace_dir("tbuser");
        g_autoptr(GDir) d = NULL;
        const char *name;
        off_t total;

        record_until_quota();
        total = total_of_traces(udir, true);
        note("after one session: %lld bytes, quota %u\n", (long long) total, QUOTA_BYTES);
        g_assert_cmpint(total, <=, QUOTA_BYTES);
        g_assert_cmpint(total, >, QUOTA_BYTES / 2);

        record_until_quota();
        total = total_of_traces(udir, false);
        note("after two sessions: %lld bytes\n", (long long) total);
        g_assert_cmpint(total, <=, QUOTA_BYTES);

        d = g_dir_open(udir, 0, NULL);
        while ((name = g_dir_read_name(d))) {
                g_autofree char *file = g_build_filename(udir, name, NULL);
                g_assert_cmpint(unlink(file), ==, 0);
        }
}
SESSION_CASE(quota_mid_recording)

/* A start into the trace directory as tbadmin: the error name (NULL on success), the
 * whole "name\tmessage" in *ret_full. */
static char *start_in_trace_dir(char **ret_full) {
        ClientSpec spec = { .user = "tbadmin", .op = OP_START, .events = sched_events, .duration_ms = 300,
                            .output_fd = -1 };
        g_autofree char *path = NULL;
        char *err = client_run_full(&spec, &path, ret_full);

        if (!err)
                wait_over(path, tb_scaled_ms(10000));
        return err;
}

/* Refused with TraceDirectoryRefused naming @entry, and nothing created. */
static void assert_dir_refused(const char *udir, const char *entry) {
        g_auto(GStrv) before = tb_list_tree(udir), after = NULL;
        g_autofree char *full = NULL, *err = start_in_trace_dir(&full);

        note("Start with %s planted -> %s\n", entry, full ? full : "ok");
        g_assert_cmpstr(err, ==, ERR_TRACE_DIR_REFUSED);
        g_assert_nonnull(strstr(error_message(full), entry));
        after = tb_list_tree(udir);
        g_assert_cmpuint(g_strv_length(after), ==, g_strv_length(before));
}

/* A subdirectory, a hard link and a symlink in the trace directory would each hide
 * usage from the quota (or lead the service elsewhere): each is refused, never
 * followed or counted, until the user removes it. */
static void test_trace_dir_refused(void) {
        g_autofree char *udir = user_trace_dir("tbadmin"), *err = NULL;
        g_autofree char *sub = g_build_filename(udir, "subdir", NULL);
        g_autofree char *a = g_build_filename(udir, "a-file", NULL), *b = g_build_filename(udir, "b-link", NULL);
        g_autofree char *l = g_build_filename(udir, "sym-link", NULL);
        g_autoptr(GError) error = NULL;

        /* The user's directory exists once one session wrote there. */
        err = start_in_trace_dir(NULL);
        g_assert_null(err);

        g_assert_cmpint(mkdir(sub, 0700), ==, 0);
        assert_dir_refused(udir, "subdir");
        g_assert_cmpint(rmdir(sub), ==, 0);

        g_assert_true(g_file_set_contents(a, "mine\n", -1, &error));
        g_assert_cmpint(link(a, b), ==, 0);
        assert_dir_refused(udir, "-");
        g_assert_cmpint(unlink(b), ==, 0);

        g_assert_cmpint(symlink("/etc/shadow", l), ==, 0);
        assert_dir_refused(udir, "sym-link");
        g_assert_cmpint(unlink(l), ==, 0);

        /* Cleared, it takes sessions again. */
        g_free(err);
        err = start_in_trace_dir(NULL);
        g_assert_null(err);
}
SESSION_CASE(trace_dir_refused)

/* A socket pair whose peer credentials are @uid's (SO_PEERCRED holds the creator's EUID). */
static void socketpair_as(uid_t uid, int type, int pair[2]) {
        g_assert_cmpint(seteuid(uid), ==, 0);
        g_assert_cmpint(socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, pair), ==, 0);
        g_assert_cmpint(seteuid(0), ==, 0);
}

static char *start_into(int fd, char **ret_path, char **ret_full) {
        ClientSpec spec = { .user = "tbuser", .op = OP_START, .events = sched_events, .duration_ms = 500,
                            .output_fd = fd };

        return client_run_full(&spec, ret_path, ret_full);
}

static void assert_output_refused(const char *what, int fd) {
        g_autofree char *full = NULL, *err = start_into(fd, NULL, &full);

        note("Output %s -> %s\n", what, full ? full : "accepted");
        g_assert_cmpstr(err, ==, ERR_OUTPUT_REFUSED);
}

/* Reads @fd to its end into @file. */
static void drain_into(int fd, const char *file) {
        g_autoptr(GByteArray) all = g_byte_array_new();
        g_autoptr(GError) error = NULL;
        guint8 buf[65536];
        ssize_t n;

        while ((n = read(fd, buf, sizeof(buf))) > 0)
                g_byte_array_append(all, buf, (guint) n);
        g_assert_cmpint(n, ==, 0);
        g_assert_true(g_file_set_contents(file, (const char *) all->data, all->len, &error));
}

/* Root's socket (as journald's would be) and a datagram socket are refused for tbuser;
 * tbuser's own stream socket pair is written into, a whole trace. */
static void test_output_socket_peer(void) {
        g_autofree char *path = NULL, *out = NULL, *err = NULL;
        g_auto(TbTraceSummary) s = { 0 };
        g_autoptr(GError) error = NULL;
        uid_t uid = tb_user_uid("tbuser");
        int root_pair[2], dgram[2], own[2];

        socketpair_as(0, SOCK_STREAM, root_pair);
        assert_output_refused("socket with root as peer", root_pair[0]);
        socketpair_as(uid, SOCK_DGRAM, dgram);
        assert_output_refused("datagram socket of tbuser's", dgram[0]);

        socketpair_as(uid, SOCK_STREAM, own);
        err = start_into(own[0], &path, NULL);
        g_assert_null(err);
        close(own[0]);
        out = g_build_filename(tb_bus()->tmpdir, "socket-output.pftrace", NULL);
        drain_into(own[1], out);
        wait_over(path, tb_scaled_ms(10000));
        if (!tb_trace_file_read(out, &s, &error))
                g_error("the trace from the socket does not decode: %s", error->message);
        g_assert_true(s.has_trace_config && s.has_tracing_started);
        for (int i = 0; i < 2; i++) {
                close(root_pair[i]);
                close(dgram[i]);
        }
        close(own[1]);
}
SESSION_CASE(output_socket_peer)

/* Until the pipe holds most of what it can. */
static void wait_pipe_full(int read_fd, int capacity) {
        gint64 deadline = g_get_monotonic_time() + tb_scaled_ms(30000) * 1000ll;
        int queued = 0;

        while (g_get_monotonic_time() < deadline) {
                g_assert_cmpint(ioctl(read_fd, FIONREAD, &queued), ==, 0);
                if (queued >= capacity * 3 / 4)
                        return;
                g_usleep(20 * 1000);
        }
        g_error("the pipe holds %d bytes after 30 s", queued);
}

/* A pipe nobody reads: the recorder gives up after OutputTimeoutSec=, so Stop is
 * answered within a few deadlines (not never), with reason output-stalled. */
static void test_stalled_pipe(void) {
        g_autofree char *cfg = config_periodic(120000, 100, 0), *path = NULL, *stats = NULL;
        g_autoptr(GHashTable) st = NULL;
        g_autoptr(GError) error = NULL;
        ClientSpec spec = { .user = "tbuser", .op = OP_START, .config = cfg, .hold = true };
        int p[2], capacity;
        gint64 t0, elapsed_us;
        double ratio;
        TbBusy busy;
        Client c;

        g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
        capacity = fcntl(p[1], F_SETPIPE_SZ, 4096);
        g_assert_cmpint(capacity, >, 0);
        spec.output_fd = p[1];
        g_assert_true(tb_busy_start("tbbusy-stall", &busy, &error));
        path = start_held(&spec, &c);
        close(p[1]);
        wait_pipe_full(p[0], capacity);

        t0 = g_get_monotonic_time();
        stats = must(&c, "stop", 'S');
        elapsed_us = g_get_monotonic_time() - t0;
        ratio = (double) elapsed_us / (OUTPUT_TIMEOUT_SEC * 1e6);
        st = parse_stats(stats);
        note("Stop with a stalled reader: %.2f s, %.2fx the deadline, reason %s\n", elapsed_us / 1e6, ratio,
             (const char *) g_hash_table_lookup(st, "Reason"));
        g_assert_cmpstr(g_hash_table_lookup(st, "Reason"), ==, "output-stalled");
        g_assert_cmpfloat(ratio, <, 3.0);
        tb_busy_stop(&busy);
        client_finish(&c, 5000);
        wait_over(path, tb_scaled_ms(10000));
        close(p[0]);
}
SESSION_CASE(stalled_pipe)

int main(int argc, char **argv) {
        g_autofree char *conf = g_strdup_printf("[Limits]\nTraceDirQuota=%uK\nOutputTimeoutSec=%us\n",
                                                QUOTA_BYTES / 1024, OUTPUT_TIMEOUT_SEC);

        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();
        g_setenv(TB_TEST_TRACEBUSD_CONF, conf, TRUE);

        tb_test_add_isolated("/bus/hostile-output/quota-mid-recording", case_quota_mid_recording);
        tb_test_add_isolated("/bus/hostile-output/trace-dir-refused", case_trace_dir_refused);
        tb_test_add_isolated("/bus/hostile-output/output-socket-peer", case_output_socket_peer);
        tb_test_add_isolated("/bus/hostile-output/stalled-pipe", case_stalled_pipe);
        tb_test_add_isolated("/bus/hostile-output/zz-no-leftovers", session_test_no_leftovers);
        return tb_test_run(TB_START_SERVICE);
}
