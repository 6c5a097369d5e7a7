/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Load suite: 16 sessions of 5 users recording scheduling at full rate for a
 * minute, then 1,000 start/stop cycles. Throughout, the service answers a call
 * about as fast as the bus driver answers one beside it (a ratio measured in the
 * run: TB_LATENCY_DIRECT in test-util.h); after the cycles the service has no more
 * fds, not much more memory and no more tracefs instances than before; every trace
 * is valid. Then a
 * long trace and a ring holding megabytes each: their memory goes back at the end.
 *
 * TRACEBUS_LOAD_SECONDS (60) and TRACEBUS_LOAD_CYCLES (1000) override the
 * sizes. Where everything is several times slower (tb_time_factor() > 1, as in
 * a sanitizer build) the run is 20 s and 300 cycles, so that the suite keeps
 * to its time: every check is still made.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gio/gunixfdlist.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "system-bus.h"
#include "tb-client.h"
#include "trace-file.h"

#define RULES_FILE "40-tracebus-load.rules"

static bool slow_build(void) {
        return tb_time_factor() > 1;
}

static guint env_uint(const char *name, guint def) {
        const char *v = g_getenv(name);
        return v && *v ? (guint) g_ascii_strtoull(v, NULL, 10) : def;
}

static guint count_dir(const char *path) {
        g_autoptr(GDir) d = g_dir_open(path, 0, NULL);
        guint n = 0;

        while (d && g_dir_read_name(d))
                n++;
        return n;
}

static guint service_fds(void) {
        g_autofree char *p = g_strdup_printf("/proc/%d/fd", (int) tb_bus()->service_pid);
        return count_dir(p);
}

static guint64 service_rss_kb(void) {
        return tb_process_rss_kib(tb_bus()->service_pid);
}

#if defined(__SANITIZE_ADDRESS__)
#define TB_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TB_ASAN 1
#endif
#endif

/* How much RSS a leak-free service may gain in AddressSanitizer's build (the test
 * and the service are built alike): a freed block waits in ASan's quarantine
 * (quarantine_size_mb of ASAN_OPTIONS, 256 MiB by default) with its shadow (1/8),
 * plus a few MiB of per-thread quarantine and allocator metadata. A leak shows there
 * too, in LeakSanitizer's report at the service's exit, which fails the run
 * (tb_test_run()). 0 in a build without ASan. */
static guint64 asan_rss_slack_kb(void) {
#ifdef TB_ASAN
        const char *o = g_getenv("ASAN_OPTIONS"), *q = o ? strstr(o, "quarantine_size_mb=") : NULL;
        guint64 mb = q ? g_ascii_strtoull(q + strlen("quarantine_size_mb="), NULL, 10) : 256;

        return mb * 1024 * 9 / 8 + 8 * 1024;
#else
        return 0;
#endif
}

static void allow_more_users(bool allow) {
        g_autofree char *rule = g_build_filename(tb_bus()->tmpdir, "rules.d", RULES_FILE, NULL);
        g_autoptr(GError) error = NULL;

        if (!allow) {
                (void) unlink(rule);
                return;
        }
        g_assert_true(g_file_set_contents_full(
                rule,
                "// Added by tests/test-load.c: five users who may record.\n"
                "polkit.addRule(function(action, subject) {\n"
                "    if (action.id == \"org.tracebus.record\" &&\n"
                "        (subject.user == \"nobody\" || subject.user == \"tbother\"))\n"
                "        return polkit.Result.YES;\n"
                "});\n",
                -1, G_FILE_SET_CONTENTS_CONSISTENT, 0644, &error));
        g_assert_no_error(error);
        /* polkitd reloads its rules on inotify, in tens of ms. */
        g_usleep(1500 * 1000);
}

/* 16 sessions of 5 users (root, tbuser, tbadmin, tbother, nobody), all
 * recording scheduling while two busy pairs switch as fast as they can. */
static void case_sixteen_sessions(void) {
        const char *users[16] = { "root", "root", "root", "root", "tbuser", "tbuser", "tbuser", "tbadmin",
                                  "tbadmin", "tbadmin", "tbother", "tbother", "tbother", "nobody", "nobody", "nobody" };
        /* Perfetto's ring-buffer mode: the service drains the kernel at full rate for the
         * whole run but keeps only the newest 8 MiB, so that 16 files of a minute of
         * scheduling fit on any disk (written into the file, it was 1 GiB each). */
        const char *cfg = "buffers { size_kb: 8192 }\n"
                          "data_sources { config { name: \"linux.ftrace\" ftrace_config {\n"
                          "  ftrace_events: \"sched/sched_switch\" ftrace_events: \"sched/sched_waking\"\n"
                          "  ftrace_events: \"sched/sched_wakeup\" buffer_size_kb: 2048 } } }\n";
        guint seconds = env_uint("TRACEBUS_LOAD_SECONDS", slow_build() ? 20 : 60);
        char *paths[16] = { 0 }, *outs[16] = { 0 };
        Client clients[16];
        TbBusy busy[2] = { 0 };
        g_autoptr(GError) error = NULL;
        g_auto(TbLatency) latency = { 0 };
        gint64 end;

        allow_more_users(true);
        g_assert_true(tb_busy_start("tb-load-a", &busy[0], &error));
        g_assert_true(tb_busy_start("tb-load-b", &busy[1], &error));
        for (int i = 0; i < 16; i++) {
                g_autofree char *name = g_strdup_printf("load-%02d.pftrace", i);
                g_autofree char *err = NULL;
                int fd = open_output(name, &outs[i]);
                ClientSpec spec = { .user = users[i], .op = OP_START, .config = cfg, .output_fd = fd, .hold = true };

                client_spawn(&spec, &clients[i]);
                close(fd);
                paths[i] = client_expect(&clients[i], 'O', 30000, &err);
                if (!paths[i])
                        g_error("session %d of %s: %s", i, users[i], err);
        }
        allow_more_users(false);
        note("16 sessions recording for %u s\n", seconds);

        tb_latency_init(&latency);
        end = g_get_monotonic_time() + (gint64) seconds * G_USEC_PER_SEC;
        while (g_get_monotonic_time() < end) {
                tb_latency_probe(&latency, tb_bus()->conn);
                g_usleep(100 * 1000);
        }
        for (int i = 0; i < 16; i++) {
                g_autofree char *state = tb_session_state(tb_bus()->conn, paths[i], NULL);
                g_assert_cmpstr(state, ==, "recording");
        }
        for (int i = 0; i < 16; i++) {
                g_autofree char *err = NULL;
                g_autofree char *stats = client_cmd(&clients[i], "stop", 'S', &err);
                if (!stats)
                        g_error("stopping session %d: %s", i, err);
                client_finish(&clients[i], 10000);
        }
        tb_busy_stop(&busy[0]);
        tb_busy_stop(&busy[1]);
        for (int i = 0; i < 16; i++) {
                g_auto(TbTraceSummary) s = { 0 };
                summarise(outs[i], &s);
                assert_trace_complete(&s);
                assert_trace_file_closed(outs[i]);
                (void) unlink(outs[i]);
                g_free(outs[i]);
                g_free(paths[i]);
        }
        tb_latency_assert(&latency, "during the recording", TB_LATENCY_DIRECT);
}

/* Start and Stop, again and again, from root's connection. */
static void case_start_stop_cycles(void) {
        guint cycles = env_uint("TRACEBUS_LOAD_CYCLES", slow_build() ? 300 : 1000);
        g_autofree char *dir = g_build_filename(tb_bus()->tmpdir, "cycles", NULL);
        guint fds_before = 0, fds_after, n_checked = 0;
        guint64 rss_before = 0, rss_after;
        g_auto(GStrv) inst_before = own_instances();
        g_auto(TbLatency) latency = { 0 };
        gint64 t_start = g_get_monotonic_time();

        g_assert_cmpint(g_mkdir_with_parents(dir, 0755), ==, 0);
        tb_latency_init(&latency);
        /* A few cycles first, so that caches and pools are warm before measuring. */
        for (guint i = 0; i < cycles + 20; i++) {
                g_autofree char *out = g_strdup_printf("%s/cycle-%u.pftrace", dir, i);
                g_autoptr(GUnixFDList) fds = g_unix_fd_list_new();
                g_autoptr(GVariant) reply = NULL, stats = NULL;
                g_autoptr(GError) error = NULL;
                GVariantBuilder b;
                const char *path;
                int fd;

                if (i == 20) {
                        fds_before = service_fds();
                        rss_before = service_rss_kb();
                }
                fd = open(out, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
                g_assert_cmpint(fd, >=, 0);
                g_assert_cmpint(g_unix_fd_list_append(fds, fd, &error), ==, 0);
                close(fd);
                g_variant_builder_init(&b, G_VARIANT_TYPE("a{sv}"));
                g_variant_builder_add(&b, "{sv}", "Events", g_variant_new_strv(sched_events, -1));
                g_variant_builder_add(&b, "{sv}", "BufferSizeKb", g_variant_new_uint32(256));
                g_variant_builder_add(&b, "{sv}", "Output", g_variant_new_handle(0));
                reply = g_dbus_connection_call_with_unix_fd_list_sync(
                        tb_bus()->conn, TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_IFACE, "Start",
                        g_variant_new("(s@a{sv})", "", g_variant_builder_end(&b)), G_VARIANT_TYPE("(oas)"),
                        G_DBUS_CALL_FLAGS_NONE, 30000, fds, NULL, NULL, &error);
                if (!reply)
                        g_error("cycle %u: Start: %s", i, error->message);
                g_variant_get_child(reply, 0, "&o", &path);
                stats = g_dbus_connection_call_sync(tb_bus()->conn, TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_IFACE,
                                                    "Stop", g_variant_new("(o)", path), G_VARIANT_TYPE("(a{sv})"),
                                                    G_DBUS_CALL_FLAGS_NONE, 30000, NULL, &error);
                if (!stats)
                        g_error("cycle %u: Stop: %s", i, error->message);
                tb_latency_probe(&latency, tb_bus()->conn);
                /* Every file decodes; each 50th is checked in full. */
                if (i % 50 == 0) {
                        assert_trace_file_closed(out);
                        n_checked++;
                } else {
                        g_auto(TbTraceSummary) s = { 0 };
                        g_autoptr(GError) e2 = NULL;
                        if (!tb_trace_file_read(out, &s, &e2))
                                g_error("cycle %u: %s does not decode: %s", i, out, e2->message);
                }
                (void) unlink(out);
        }
        /* Ended sessions go away on their own; give the last one a moment. */
        for (int i = 0; i < 50 && service_fds() > fds_before; i++)
                g_usleep(100 * 1000);
        fds_after = service_fds();
        rss_after = service_rss_kb();
        note("%u cycles in %.1f s; service fds %u -> %u, VmRSS %" G_GUINT64_FORMAT " -> %" G_GUINT64_FORMAT
             " KiB (bound +%" G_GUINT64_FORMAT "); %u files checked in full\n",
             cycles, (g_get_monotonic_time() - t_start) / 1e6, fds_before, fds_after, rss_before, rss_after,
             1024 + asan_rss_slack_kb(), n_checked);
        g_assert_cmpuint(fds_after, <=, fds_before);
        /* malloc keeps some pages; a leak of even 1 KiB a cycle would show. */
        g_assert_cmpuint(rss_after, <, rss_before + 1024 + asan_rss_slack_kb());
        {
                g_auto(GStrv) inst = own_instances();
                g_assert_cmpuint(g_strv_length(inst), ==, g_strv_length(inst_before));
        }
        tb_latency_assert(&latency, "between the cycles", TB_LATENCY_DIRECT);
}

/* Starts @config (text) with an output file under @dir; returns the session path and
 * the session's tracefs instance directory. */
static char *start_config(const char *config, const char *out, char **ret_instance) {
        g_auto(GStrv) before = own_instances(), added = NULL, after = NULL;
        g_autoptr(GUnixFDList) fds = g_unix_fd_list_new();
        g_autoptr(GVariant) reply = NULL;
        g_autoptr(GError) error = NULL;
        GVariantBuilder b;
        const char *path;
        int fd;

        fd = open(out, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(g_unix_fd_list_append(fds, fd, &error), ==, 0);
        close(fd);
        g_variant_builder_init(&b, G_VARIANT_TYPE("a{sv}"));
        g_variant_builder_add(&b, "{sv}", "Output", g_variant_new_handle(0));
        reply = g_dbus_connection_call_with_unix_fd_list_sync(
                tb_bus()->conn, TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_IFACE, "Start",
                g_variant_new("(s@a{sv})", config, g_variant_builder_end(&b)), G_VARIANT_TYPE("(oas)"),
                G_DBUS_CALL_FLAGS_NONE, 30000, fds, NULL, NULL, &error);
        g_assert_no_error(error);
        g_variant_get_child(reply, 0, "&o", &path);
        after = own_instances();
        added = tb_strv_added(before, after);
        g_assert_cmpuint(g_strv_length(added), ==, 1);
        *ret_instance = g_build_filename(TB_INSTANCES_DIR, added[0], NULL);
        return g_strdup(path);
}

/* @mb MiB of trace_marker lines into @instance, paced so that the kernel's buffer
 * (4 MiB per CPU, drained every 100 ms) keeps them. */
static void write_markers(const char *instance, guint mb) {
        g_autofree char *p = g_build_filename(instance, "trace_marker", NULL);
        char line[1024];
        int fd = open(p, O_WRONLY | O_CLOEXEC);

        g_assert_cmpint(fd, >=, 0);
        memset(line, 'm', sizeof(line));
        for (guint i = 0; i < mb * 1024; i++) {
                g_assert_cmpint(write(fd, line, sizeof(line)), ==, (gssize) sizeof(line));
                if (i % 512 == 511)
                        tb_sleep_scaled(150);
        }
        close(fd);
}

static void stop_session(const char *path) {
        g_autoptr(GVariant) stats = NULL;
        g_autoptr(GError) error = NULL;

        stats = g_dbus_connection_call_sync(tb_bus()->conn, TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_IFACE, "Stop",
                                            g_variant_new("(o)", path), G_VARIANT_TYPE("(a{sv})"),
                                            G_DBUS_CALL_FLAGS_NONE, 60000, NULL, &error);
        g_assert_no_error(error);
}

/* A session's memory goes back when it ends, also after a long trace held megabytes
 * in one buffer between two writes: glibc, left to itself, raises its trim threshold
 * when such a buffer is freed and then keeps that much free memory in the worker's
 * arena (here the service stayed 13 MiB larger for good). */
static void case_memory_given_back(void) {
        static const char *const configs[] = {
                "write_into_file: true file_write_period_ms: 60000 buffers { size_kb: 65536 } "
                "data_sources { config { name: \"linux.ftrace\" ftrace_config { ftrace_events: \"ftrace/print\" "
                "buffer_size_kb: 4096 drain_period_ms: 100 } } }",
                "buffers { size_kb: 65536 } "
                "data_sources { config { name: \"linux.ftrace\" ftrace_config { ftrace_events: \"ftrace/print\" "
                "buffer_size_kb: 4096 drain_period_ms: 100 } } }",
        };
        g_autofree char *dir = g_build_filename(tb_bus()->tmpdir, "memory", NULL);
        guint fds_before = service_fds();
        guint64 rss_before = service_rss_kb(), rss_after, rss_peak = 0;

        g_assert_cmpint(g_mkdir_with_parents(dir, 0755), ==, 0);
        for (size_t i = 0; i < G_N_ELEMENTS(configs); i++) {
                g_autofree char *out = g_strdup_printf("%s/memory-%zu.pftrace", dir, i);
                g_autofree char *instance = NULL;
                g_autofree char *path = start_config(configs[i], out, &instance);

                write_markers(instance, 12);
                g_usleep(300 * 1000);
                rss_peak = MAX(rss_peak, service_rss_kb());
                stop_session(path);
                {
                        g_auto(TbTraceSummary) sum = { 0 };
                        g_autoptr(GError) error = NULL;

                        g_assert_true(tb_trace_file_read(out, &sum, &error));
                        g_assert_no_error(error);
                        /* Every marker: the ring is large enough to keep them all. */
                        g_assert_cmpuint(sum.n_ftrace_events, >=, 12 * 1024);
                }
                (void) unlink(out);
        }
        for (int i = 0; i < 50 && service_fds() > fds_before; i++)
                g_usleep(100 * 1000);
        rss_after = service_rss_kb();
        note("VmRSS %" G_GUINT64_FORMAT " KiB before, %" G_GUINT64_FORMAT " while holding 12 MiB of markers, %"
             G_GUINT64_FORMAT " after (bound +%" G_GUINT64_FORMAT ")\n", rss_before, rss_peak, rss_after,
             2048 + asan_rss_slack_kb());
        /* The sessions did hold the data: otherwise there is nothing to give back. */
        g_assert_cmpuint(rss_peak, >, rss_before + 8 * 1024);
        g_assert_cmpuint(rss_after, <, rss_before + 2048 + asan_rss_slack_kb());
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();

        tb_test_add_isolated("/load/1-sixteen-sessions", case_sixteen_sessions);
        tb_test_add_isolated("/load/2-start-stop-cycles", case_start_stop_cycles);
        tb_test_add_isolated("/load/3-memory-given-back", case_memory_given_back);
        return tb_test_run(TB_START_SERVICE);
}
