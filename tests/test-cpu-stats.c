/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* per_cpu/cpuN/stats as the kernel writes it (copied from 6.18), and the real file of
 * the top-level instance when tracefs is there. */
#include "tracefs-instance.h"  /* first: its MIN and MAX, then glib's replace them */

#include <fcntl.h>
#include <glib.h>
#include <sys/mman.h>
#include <unistd.h>

static const char kernel_text[] =
        "entries: 2\n"
        "overrun: 1182433\n"
        "commit overrun: 7\n"
        "bytes: 7108\n"
        "oldest event ts:  3971.615462\n"
        "now ts:  4005.779230\n"
        "dropped events: 3\n"
        "read events: 42\n";

static int memfd_with(const char *text) {
        int fd = memfd_create("stats", MFD_CLOEXEC);

        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(write(fd, text, strlen(text)), ==, (gssize) strlen(text));
        return fd;
}

static void test_kernel_text(void) {
        TraceCpuStats s;
        int fd = memfd_with(kernel_text);

        g_assert_cmpint(trace_instance_read_cpu_stats_fd(fd, &s), ==, 0);
        g_assert_cmpuint(s.entries, ==, 2);
        g_assert_cmpuint(s.overrun, ==, 1182433);
        g_assert_cmpuint(s.commit_overrun, ==, 7);
        g_assert_cmpuint(s.bytes, ==, 7108);
        g_assert_cmpfloat_with_epsilon(s.oldest_event_ts, 3971.615462, 1e-9);
        g_assert_cmpfloat_with_epsilon(s.now_ts, 4005.779230, 1e-9);
        g_assert_cmpuint(s.dropped_events, ==, 3);
        g_assert_cmpuint(s.read_events, ==, 42);
        /* Read again from the start: the recorder keeps the fd open. */
        g_assert_cmpint(trace_instance_read_cpu_stats_fd(fd, &s), ==, 0);
        g_assert_cmpuint(s.read_events, ==, 42);
        close(fd);
}

/* Lines it does not know, and a truncated last line, change nothing else. */
static void test_other_lines(void) {
        TraceCpuStats s;
        int fd = memfd_with("overrun: 5\nfuture field: 9\nentries:\nread events: 1");

        g_assert_cmpint(trace_instance_read_cpu_stats_fd(fd, &s), ==, 0);
        g_assert_cmpuint(s.overrun, ==, 5);
        g_assert_cmpuint(s.entries, ==, 0);
        g_assert_cmpuint(s.commit_overrun, ==, 0);
        g_assert_cmpuint(s.read_events, ==, 1);
        close(fd);
}

static void test_real_file(void) {
        TraceCpuStats s;
        const char *root = trace_instance_tracefs_root();
        g_autofree char *path = NULL;
        int fd;

        if (!root) {
                /* A developer may run the unit suite without tracefs; CI mounts it. */
                if (g_getenv("CI"))
                        g_error("tracefs is not mounted");
                g_test_skip("tracefs is not mounted");
                return;
        }
        path = g_build_filename(root, "per_cpu", "cpu0", "stats", NULL);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(trace_instance_read_cpu_stats_fd(fd, &s), ==, 0);
        /* The kernel's clock has been running since boot. */
        g_assert_cmpfloat(s.now_ts, >, 0.0);
        g_assert_cmpfloat(s.oldest_event_ts, <=, s.now_ts);
        close(fd);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/cpu-stats/kernel-text", test_kernel_text);
        g_test_add_func("/cpu-stats/other-lines", test_other_lines);
        g_test_add_func("/cpu-stats/real-file", test_real_file);
        return g_test_run();
}
