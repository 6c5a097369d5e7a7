/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit suite: tracebusd.conf parsing (service/core/daemon-config.c). */
#include "daemon-config.h"

#include <glib.h>
#include <glib/gstdio.h>
#include <stdio.h>

static void test_defaults(void) {
        DaemonConfig c;

        daemon_config_init(&c);
        g_assert_cmpuint(c.limits.max_sessions, ==, 16);
        g_assert_cmpuint(c.limits.max_sessions_per_uid, ==, 5);
        g_assert_cmpuint(c.limits.trace_dir_quota_bytes, ==, 4ull << 30);
        g_assert_cmpuint(c.limits.max_buffer_size_kb, ==, SESSION_MAX_BUFFER_SIZE_KB);
        g_assert_cmpuint(c.idle_timeout_usec, ==, 30 * G_USEC_PER_SEC);
}

static void test_all_keys(void) {
        DaemonConfig c;

        daemon_config_init(&c);
        g_assert_cmpint(daemon_config_parse(&c,
                                            "# a comment\n"
                                            "; another\n"
                                            "\n"
                                            "[Limits]\n"
                                            "MaxSessions = 8\n"
                                            "MaxSessionsPerUser=2\n"
                                            "  TraceDirQuota=512M  \n"
                                            "MaxBufferSizeKB=16384\n"
                                            "[Service]\n"
                                            "IdleTimeoutSec=2min 5s\n",
                                            "t.conf"), ==, 0);
        g_assert_cmpuint(c.limits.max_sessions, ==, 8);
        g_assert_cmpuint(c.limits.max_sessions_per_uid, ==, 2);
        g_assert_cmpuint(c.limits.trace_dir_quota_bytes, ==, 512ull << 20);
        g_assert_cmpuint(c.limits.max_buffer_size_kb, ==, 16384);
        g_assert_cmpuint(c.idle_timeout_usec, ==, 125 * G_USEC_PER_SEC);
}

static void test_broken_lines_keep_defaults(void) {
        DaemonConfig c, d;

        daemon_config_init(&c);
        daemon_config_init(&d);
        /* Each bad line is ignored on its own; the good ones still count. */
        g_assert_cmpint(daemon_config_parse(&c,
                                            "MaxSessions=3\n"               /* 1: outside a section */
                                            "[Limits]\n"
                                            "MaxSessions=0\n"               /* 3: out of range */
                                            "MaxSessionsPerUser=lots\n"     /* 4: not a number */
                                            "TraceDirQuota=5Q\n"            /* 5: bad suffix */
                                            "MaxBufferSizeKB=1000000\n"     /* 6: above the hard limit */
                                            "Bogus=1\n"                     /* 7: unknown key */
                                            "just words\n"                  /* 8: no '=' */
                                            "[Limits\n"                     /* 9: bad header */
                                            "[Nope]\n"                      /* 10: unknown section */
                                            "MaxSessions=4\n"               /* 11: ignored with it */
                                            "[Service]\n"
                                            "IdleTimeoutSec=-5\n"           /* 13: negative */
                                            "IdleTimeoutSec=5 parsecs\n"    /* 14: bad unit */
                                            "[Limits]\n"
                                            "MaxSessionsPerUser=3\n",       /* fine */
                                            "bad.conf"), ==, 12);
        g_assert_cmpuint(c.limits.max_sessions, ==, d.limits.max_sessions);
        g_assert_cmpuint(c.limits.max_sessions_per_uid, ==, 3);
        g_assert_cmpuint(c.limits.trace_dir_quota_bytes, ==, d.limits.trace_dir_quota_bytes);
        g_assert_cmpuint(c.limits.max_buffer_size_kb, ==, d.limits.max_buffer_size_kb);
        g_assert_cmpuint(c.idle_timeout_usec, ==, d.idle_timeout_usec);
}

static void test_warning_names_file_and_line(void) {
        if (g_test_subprocess()) {
                DaemonConfig c;

                daemon_config_init(&c);
                (void) daemon_config_parse(&c, "[Limits]\n\nMaxSessions=many\n", "/etc/tracebus/tracebusd.conf");
                return;
        }
        g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
        g_test_trap_assert_passed();
        g_test_trap_assert_stderr("*/etc/tracebus/tracebusd.conf:3: invalid MaxSessions=many*keeping the previous value*");
}

static void test_idle_zero_and_infinity(void) {
        DaemonConfig c;

        daemon_config_init(&c);
        g_assert_cmpint(daemon_config_parse(&c, "[Service]\nIdleTimeoutSec=0\n", "t"), ==, 0);
        g_assert_cmpuint(c.idle_timeout_usec, ==, 0);
        daemon_config_init(&c);
        g_assert_cmpint(daemon_config_parse(&c, "[Service]\nIdleTimeoutSec=infinity\n", "t"), ==, 0);
        g_assert_cmpuint(c.idle_timeout_usec, ==, 0);
        g_assert_cmpint(daemon_config_parse(&c, "[Service]\nIdleTimeoutSec=500ms\n", "t"), ==, 0);
        g_assert_cmpuint(c.idle_timeout_usec, ==, 500 * 1000);
}

/* OutputTimeoutSec=: 30 s by default, a time span or infinity, never 0. */
static void test_output_timeout(void) {
        DaemonConfig c;

        daemon_config_init(&c);
        g_assert_cmpuint(c.limits.output_timeout_usec, ==, 30ull * 1000 * 1000);
        g_assert_cmpint(daemon_config_parse(&c, "[Limits]\nOutputTimeoutSec=1500ms\n", "t"), ==, 0);
        g_assert_cmpuint(c.limits.output_timeout_usec, ==, 1500ull * 1000);
        g_assert_cmpint(daemon_config_parse(&c, "[Limits]\nOutputTimeoutSec=0\n", "t"), ==, 1);
        g_assert_cmpuint(c.limits.output_timeout_usec, ==, 1500ull * 1000);
        g_assert_cmpint(daemon_config_parse(&c, "[Limits]\nOutputTimeoutSec=infinity\n", "t"), ==, 0);
        g_assert_cmpuint(c.limits.output_timeout_usec, ==, UINT64_MAX);
}

/* ProducerHandshakeTimeoutSec=: 10 s by default, a time span above 0, at most 5 min. */
static void test_producer_handshake_timeout(void) {
        DaemonConfig c;

        daemon_config_init(&c);
        g_assert_cmpuint(c.limits.producer_handshake_timeout_usec, ==, 10ull * 1000 * 1000);
        g_assert_cmpint(daemon_config_parse(&c, "[Limits]\nProducerHandshakeTimeoutSec=750ms\n", "t"), ==, 0);
        g_assert_cmpuint(c.limits.producer_handshake_timeout_usec, ==, 750ull * 1000);
        g_assert_cmpint(daemon_config_parse(&c, "[Limits]\nProducerHandshakeTimeoutSec=0\n", "t"), ==, 1);
        g_assert_cmpint(daemon_config_parse(&c, "[Limits]\nProducerHandshakeTimeoutSec=infinity\n", "t"), ==, 1);
        g_assert_cmpint(daemon_config_parse(&c, "[Limits]\nProducerHandshakeTimeoutSec=6min\n", "t"), ==, 1);
        g_assert_cmpuint(c.limits.producer_handshake_timeout_usec, ==, 750ull * 1000);
}

/* CloneMinIntervalSec=: 5 s by default, a time span or 0, never infinity. */
static void test_clone_interval(void) {
        DaemonConfig c;

        daemon_config_init(&c);
        g_assert_cmpuint(c.limits.clone_min_interval_usec, ==, 5ull * 1000 * 1000);
        g_assert_cmpint(daemon_config_parse(&c, "[Limits]\nCloneMinIntervalSec=250ms\n", "t"), ==, 0);
        g_assert_cmpuint(c.limits.clone_min_interval_usec, ==, 250ull * 1000);
        g_assert_cmpint(daemon_config_parse(&c, "[Limits]\nCloneMinIntervalSec=0\n", "t"), ==, 0);
        g_assert_cmpuint(c.limits.clone_min_interval_usec, ==, 0);
        g_assert_cmpint(daemon_config_parse(&c, "[Limits]\nCloneMinIntervalSec=infinity\n", "t"), ==, 1);
        g_assert_cmpuint(c.limits.clone_min_interval_usec, ==, 0);
}

/* StopDrainThreads=: 8 by default, 1 to 256. */
static void test_stop_drain_threads(void) {
        DaemonConfig c;

        daemon_config_init(&c);
        g_assert_cmpuint(c.limits.stop_drain_threads, ==, 8);
        g_assert_cmpint(daemon_config_parse(&c, "[Limits]\nStopDrainThreads=2\n", "t"), ==, 0);
        g_assert_cmpuint(c.limits.stop_drain_threads, ==, 2);
        g_assert_cmpint(daemon_config_parse(&c, "[Limits]\nStopDrainThreads=0\n", "t"), ==, 1);
        g_assert_cmpint(daemon_config_parse(&c, "[Limits]\nStopDrainThreads=257\n", "t"), ==, 1);
        g_assert_cmpuint(c.limits.stop_drain_threads, ==, 2);
}

static void write_file(const char *dir, const char *name, const char *text) {
        g_autofree char *p = g_build_filename(dir, name, NULL);
        g_autoptr(GError) e = NULL;

        g_assert_true(g_file_set_contents(p, text, -1, &e));
}

static void test_load_dropins_in_order(void) {
        g_autofree char *dir = g_dir_make_tmp("tb-conf-XXXXXX", NULL);
        g_autofree char *d = g_build_filename(dir, "tracebusd.conf.d", NULL);
        DaemonConfig c;

        g_assert_nonnull(dir);
        g_assert_cmpint(g_mkdir(d, 0755), ==, 0);
        write_file(dir, "tracebusd.conf", "[Limits]\nMaxSessions=10\nMaxSessionsPerUser=4\n[Service]\nIdleTimeoutSec=60\n");
        write_file(d, "50-b.conf", "[Limits]\nMaxSessions=12\n");
        write_file(d, "20-a.conf", "[Limits]\nMaxSessions=11\nMaxSessionsPerUser=1\n");
        write_file(d, "90-c.conf.disabled", "[Limits]\nMaxSessions=99\n");  /* not *.conf */
        write_file(d, "60-broken.conf", "[Limits]\nMaxSessionsPerUser=\xff\n");

        daemon_config_init(&c);
        g_assert_cmpint(daemon_config_load(&c, dir), ==, 4);
        g_assert_cmpuint(c.limits.max_sessions, ==, 12);          /* 50-b after 20-a */
        g_assert_cmpuint(c.limits.max_sessions_per_uid, ==, 1);   /* the broken line changed nothing */
        g_assert_cmpuint(c.idle_timeout_usec, ==, 60 * G_USEC_PER_SEC);

        {
                const char *files[] = { "50-b.conf", "20-a.conf", "90-c.conf.disabled", "60-broken.conf" };
                for (size_t i = 0; i < G_N_ELEMENTS(files); i++) {
                        g_autofree char *p = g_build_filename(d, files[i], NULL);
                        (void) g_unlink(p);
                }
        }
        g_autofree char *main_conf = g_build_filename(dir, "tracebusd.conf", NULL);
        (void) g_unlink(main_conf);
        (void) g_rmdir(d);
        (void) g_rmdir(dir);
}

static void test_load_missing_dir(void) {
        DaemonConfig c, d;

        daemon_config_init(&c);
        daemon_config_init(&d);
        g_assert_cmpint(daemon_config_load(&c, "/nonexistent/tracebus"), ==, 0);
        g_assert_cmpuint(c.limits.max_sessions, ==, d.limits.max_sessions);
        g_assert_cmpuint(c.limits.max_sessions_per_uid, ==, d.limits.max_sessions_per_uid);
        g_assert_cmpuint(c.limits.trace_dir_quota_bytes, ==, d.limits.trace_dir_quota_bytes);
        g_assert_cmpuint(c.limits.max_buffer_size_kb, ==, d.limits.max_buffer_size_kb);
        g_assert_cmpuint(c.idle_timeout_usec, ==, d.idle_timeout_usec);
}

/* The [Limits] keys of the fair limits: pending calls, descriptors, buffers. */
static void test_fair_limit_keys(void) {
        DaemonConfig c;

        daemon_config_init(&c);
        g_assert_cmpuint(c.limits.max_pending, ==, 96);
        g_assert_cmpuint(c.limits.max_pending_per_uid, ==, 8);
        g_assert_cmpuint(c.limits.max_files_per_uid, ==, 16384);
        g_assert_cmpuint(c.limits.max_buffer_memory_bytes, ==, 0);    /* 1/8 of MemTotal, at start */
        g_assert_cmpint(daemon_config_check(&c), ==, 0);              /* the defaults are consistent */
        g_assert_cmpint(daemon_config_parse(&c,
                                            "[Limits]\n"
                                            "MaxPending=40\n"
                                            "MaxPendingPerUser=4\n"
                                            "MaxFilesPerUser=500\n"
                                            "MaxBufferMemory=2G\n"
                                            "MaxPending=121\n"             /* above the bus's room */
                                            "MaxPendingPerUser=0\n"
                                            "MaxFilesPerUser=15\n"          /* below one session */
                                            "MaxBufferMemory=0\n",
                                            "t.conf"), ==, 4);
        g_assert_cmpuint(c.limits.max_pending, ==, 40);
        g_assert_cmpuint(c.limits.max_pending_per_uid, ==, 4);
        g_assert_cmpuint(c.limits.max_files_per_uid, ==, 500);
        g_assert_cmpuint(c.limits.max_buffer_memory_bytes, ==, 2ull << 30);
        g_assert_cmpint(daemon_config_check(&c), ==, 0);
        /* Empty: back to the default. */
        g_assert_cmpint(daemon_config_parse(&c, "[Limits]\nMaxBufferMemory=\n", "t.conf"), ==, 0);
        g_assert_cmpuint(c.limits.max_buffer_memory_bytes, ==, 0);
}

/* One user's share of the calls waiting for polkit is at most half of them all. */
static void test_pending_share_checked(void) {
        DaemonConfig c;

        daemon_config_init(&c);
        g_assert_cmpint(daemon_config_parse(&c, "[Limits]\nMaxPending=10\nMaxPendingPerUser=10\n", "t.conf"), ==, 0);
        g_assert_cmpint(daemon_config_check(&c), ==, 1);
        g_assert_cmpuint(c.limits.max_pending, ==, 10);
        g_assert_cmpuint(c.limits.max_pending_per_uid, ==, 5);
        /* One call in all: it is everybody's. */
        g_assert_cmpint(daemon_config_parse(&c, "[Limits]\nMaxPending=1\nMaxPendingPerUser=1\n", "t.conf"), ==, 0);
        g_assert_cmpint(daemon_config_check(&c), ==, 0);
        g_assert_cmpuint(c.limits.max_pending_per_uid, ==, 1);
}

/* MaxProcessEntries: the default, a value in range, and values outside 64..4194304 ignored. */
static void test_process_entries(void) {
        DaemonConfig c;

        daemon_config_init(&c);
        g_assert_cmpuint(c.limits.max_process_entries, ==, DAEMON_DEFAULT_MAX_PROCESS_ENTRIES);
        g_assert_cmpint(daemon_config_parse(&c, "[Limits]\nMaxProcessEntries=4096\n", "t.conf"), ==, 0);
        g_assert_cmpuint(c.limits.max_process_entries, ==, 4096);
        g_assert_cmpint(daemon_config_parse(&c, "[Limits]\nMaxProcessEntries=63\nMaxProcessEntries=4194305\n"
                                                "MaxProcessEntries=1K\n", "t.conf"), ==, 3);
        g_assert_cmpuint(c.limits.max_process_entries, ==, 4096);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/daemon-config/defaults", test_defaults);
        g_test_add_func("/daemon-config/all-keys", test_all_keys);
        g_test_add_func("/daemon-config/broken-lines-keep-defaults", test_broken_lines_keep_defaults);
        g_test_add_func("/daemon-config/warning-names-file-and-line", test_warning_names_file_and_line);
        g_test_add_func("/daemon-config/idle-zero-and-infinity", test_idle_zero_and_infinity);
        g_test_add_func("/daemon-config/load-dropins-in-order", test_load_dropins_in_order);
        g_test_add_func("/daemon-config/load-missing-dir", test_load_missing_dir);
        g_test_add_func("/daemon-config/fair-limit-keys", test_fair_limit_keys);
        g_test_add_func("/daemon-config/pending-share-checked", test_pending_share_checked);
        g_test_add_func("/daemon-config/process-entries", test_process_entries);
        g_test_add_func("/daemon-config/output-timeout", test_output_timeout);
        g_test_add_func("/daemon-config/clone-interval", test_clone_interval);
        g_test_add_func("/daemon-config/producer-handshake-timeout", test_producer_handshake_timeout);
        g_test_add_func("/daemon-config/stop-drain-threads", test_stop_drain_threads);
        return g_test_run();
}
