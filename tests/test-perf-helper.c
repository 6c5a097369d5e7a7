/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * service/sources/perf/perf-helper.c against helpers that misbehave, and the identity
 * it gives them: started by fork (the test runs as root, as the harness's tracebusd
 * does), the helper runs as tbuser with tbuser's groups, no capability at all and
 * no_new_privs; a helper that does not answer is killed at the deadline, one that exits
 * or writes what is not a reply is stopped, and each time the sampler is told why and
 * never asks it again.
 */
#include <errno.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf-helper.h"

static char *tmp;

/* A helper program: a shell script of @body in the test's directory. */
static char *script(const char *name, const char *body) {
        g_autofree char *text = g_strdup_printf("#!/bin/sh\n%s\n", body);
        char *path = g_build_filename(tmp, name, NULL);

        g_assert_true(g_file_set_contents(path, text, -1, NULL));
        g_assert_cmpint(chmod(path, 0755), ==, 0);
        return path;
}

/* Asks the helper at @path, run as @user, for one sample: the result, and the helper's
 * state after it in @h (to be done by the caller). */
static int ask(PerfHelper *h, const char *user, const char *path) {
        const uint64_t ips[] = { 0x1000 };
        UnwindRequest req = { .pid = getpid(), .tid = getpid(), .ips = ips, .n_ips = 1 };
        UnwindFrame frames[4];
        UnwindReplyFixed reply;
        size_t n;

        g_assert_true(g_setenv("TRACEBUS_UNWIND_HELPER", path, TRUE));
        perf_helper_init(h, getpwnam(user)->pw_uid, 0);
        return perf_helper_unwind(h, &req, &reply, frames, G_N_ELEMENTS(frames), &n);
}

/* A helper that exited: before the request was written, or before it answered. */
static bool gone_early(const PerfHelper *h) {
        return h->failed && h->pid == 0 && (strstr(h->failure, "exited") || strstr(h->failure, "took no request"));
}

static void test_identity(void) {
        g_autofree char *out = g_build_filename(tmp, "identity", NULL);
        g_autofree char *body = g_strdup_printf("{ /usr/bin/id -u; /usr/bin/id -G; /bin/grep -E '^(CapEff|CapBnd|"
                                                "NoNewPrivs):' /proc/self/status; } >%s", out);
        g_autofree char *path = script("identity.sh", body), *text = NULL, *ids = NULL;
        struct passwd *pw = getpwnam("tbuser");
        PerfHelper h;

        g_assert_nonnull(pw);
        g_assert_cmpint(ask(&h, "tbuser", path), ==, -ENOTCONN);
        g_assert_true(gone_early(&h));
        perf_helper_done(&h);
        g_assert_true(g_file_get_contents(out, &text, NULL, NULL));
        /* tbuser's uid, then its groups from the user database, its own first. */
        ids = g_strdup_printf("%u\n%u", (unsigned) pw->pw_uid, (unsigned) pw->pw_gid);
        g_assert_true(g_str_has_prefix(text, ids));
        g_assert_nonnull(strstr(text, "CapEff:\t0000000000000000"));
        g_assert_nonnull(strstr(text, "CapBnd:\t0000000000000000"));
        g_assert_nonnull(strstr(text, "NoNewPrivs:\t1"));
}

/* Quiet: killed at the deadline, so the sampler's Stop does not wait on it. */
static void test_slow(void) {
        g_autofree char *path = script("slow.sh", "exec /bin/sleep 60");
        UnwindRequest req = { .pid = getpid(), .tid = getpid() };
        UnwindReplyFixed reply;
        UnwindFrame frame;
        PerfHelper h;
        size_t n;

        g_assert_cmpint(ask(&h, "tbuser", path), ==, -ENOTCONN);
        g_assert_nonnull(strstr(h.failure, "did not answer within a second"));
        g_assert_true(h.failed);
        g_assert_cmpint(h.pid, ==, 0);         /* killed and reaped */
        /* Never asked again: the next sample is refused at once. */
        g_assert_cmpint(perf_helper_unwind(&h, &req, &reply, &frame, 1, &n), ==, -ENOTCONN);
        perf_helper_done(&h);
}

static void test_garbage(void) {
        g_autofree char *path = script("garbage.sh", "printf 'TBUA\\377\\377\\377\\377'; exec /bin/sleep 60");
        PerfHelper h;

        g_assert_cmpint(ask(&h, "tbuser", path), ==, -ENOTCONN);
        g_assert_nonnull(strstr(h.failure, "reply was refused"));
        g_assert_cmpint(h.pid, ==, 0);
        perf_helper_done(&h);
}

static void test_missing(void) {
        g_autofree char *path = g_build_filename(tmp, "no-such-helper", NULL);
        PerfHelper h;

        g_assert_cmpint(ask(&h, "tbuser", path), ==, -ENOTCONN);
        g_assert_true(gone_early(&h));
        perf_helper_done(&h);
}

int main(int argc, char **argv) {
        struct passwd *pw;
        int r;

        g_test_init(&argc, &argv, NULL);
        if (geteuid() != 0 || !(pw = getpwnam("tbuser"))) {
                if (g_getenv("CI"))
                        g_error("needs root and the user tbuser (tools/setup-debian)");
                g_test_skip("needs root and the user tbuser");
                return g_test_run();
        }
        /* A helper's writes to a socket whose reader is gone must not end the test. */
        signal(SIGPIPE, SIG_IGN);
        tmp = g_dir_make_tmp("tb-perf-helper-XXXXXX", NULL);
        g_assert_nonnull(tmp);
        g_assert_cmpint(chmod(tmp, 0755), ==, 0);
        g_assert_cmpint(chown(tmp, pw->pw_uid, pw->pw_gid), ==, 0);
        g_test_add_func("/perf-helper/identity", test_identity);
        g_test_add_func("/perf-helper/slow", test_slow);
        g_test_add_func("/perf-helper/garbage", test_garbage);
        g_test_add_func("/perf-helper/missing", test_missing);
        r = g_test_run();
        g_autofree char *cmd = g_strdup_printf("rm -rf %s", tmp);
        (void) system(cmd);
        return r;
}
