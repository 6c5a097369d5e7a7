/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite, hostile resources: a user who spawns processes must not grow
 * the service's memory without end. A ring session with a small buffer records while
 * a storm of N short-lived processes runs, then a storm of 3N more: what the service
 * keeps of the processes it described is bounded (service/kernel/process-scan-table.c), so
 * its RSS after all 4N has grown about as much as after the first N. Before, every
 * description stayed in memory until the end of the trace and the growth was four
 * times as large. Only a ratio measured in this run is checked, never bytes.
 *
 * Each storm process carries a command line of nearly 4 KiB (the storm driver's, which
 * its children share), so that each description weighs what a hostile user can make
 * it weigh. A process with a 64 KiB command line, before the session, is described with
 * its first 4 KiB (it used to be left out).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "recorder.h"
#include "system-bus.h"
#include "tb-client.h"
#include "test-util.h"

#define STORM_ARG "--storm"
#define IDLE_ARG "--idle"
#define STORM_PAD_BYTES 3800          /* the storm's command line stays under 4 KiB */
#define LONG_ARG_BYTES 1000
#define LONG_ARGS 66                  /* 66 KB of command line */
#define STORM_N 3000
#define STORM_WIDTH 200               /* children alive at once */
#define STORM_LIFE_MS 200             /* each outlives a drain period (100 ms), so it is described from /proc */

/* The storm driver (this binary, exec'd with STORM_ARG): @n children, @width at a time,
 * each sleeping STORM_LIFE_MS and exiting. */
static int storm_main(unsigned n) {
        unsigned alive = 0;

        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
        for (unsigned i = 0; i < n; i++) {
                pid_t pid;

                if (alive >= STORM_WIDTH && wait(NULL) > 0)
                        alive--;
                pid = fork();
                if (pid == 0) {
                        usleep(STORM_LIFE_MS * 1000);
                        _exit(0);
                }
                alive += pid > 0;
        }
        while (wait(NULL) > 0)
                ;
        return 0;
}

/* This binary where the storm's user may run it (the build tree may be out of its reach). */
static const char *storm_exe(void) {
        static char *exe = NULL;

        if (!exe) {
                g_autofree char *self = g_file_read_link("/proc/self/exe", NULL);

                g_assert_nonnull(self);
                exe = copy_executable(self, "tb-forkstorm");
        }
        return exe;
}

/* This binary with @mode and @args of @arg_bytes bytes each, run by the recording user,
 * tbuser, as a child of the test: the processes are the user's own, so the service
 * describes them whole, command lines included. */
static pid_t spawn_self(const char *mode, const char *count, unsigned n_args, size_t arg_bytes) {
        g_autofree char *arg = g_strnfill(arg_bytes, 'p');
        g_autoptr(GPtrArray) argv = g_ptr_array_new();
        g_auto(TbUser) user = { 0 };
        g_autoptr(GError) error = NULL;
        const char *exe = storm_exe();
        pid_t pid;

        g_assert_true(tb_user_lookup("tbuser", &user, &error));
        g_ptr_array_add(argv, (char *) exe);
        g_ptr_array_add(argv, (char *) mode);
        g_ptr_array_add(argv, (char *) count);
        for (unsigned i = 0; i < n_args; i++)
                g_ptr_array_add(argv, arg);
        g_ptr_array_add(argv, NULL);
        fflush(NULL);
        pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                tb_user_become(&user);
                execv(exe, (char **) argv->pdata);
                _exit(127);
        }
        return pid;
}

static void run_storm(unsigned n) {
        g_autofree char *count = g_strdup_printf("%u", n);
        gint64 start = g_get_monotonic_time();
        pid_t pid = spawn_self(STORM_ARG, count, 1, STORM_PAD_BYTES);
        int status;

        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        note("storm of %u processes: %.1f s\n", n, (double) (g_get_monotonic_time() - start) / G_USEC_PER_SEC);
}

/* The 64 KiB process: described, with its first whole arguments within 4 KiB. */
static void check_long_cmdline(const Described *d, pid_t pid) {
        const Tracebus__ProcessTree__Process *p = g_hash_table_lookup(d->processes, GINT_TO_POINTER(pid));
        const char *exe = storm_exe();
        size_t total = 0;

        expect(p, "the process %d with a 64 KiB command line is not in the trace", (int) pid);
        if (!p)
                return;
        for (size_t i = 0; i < p->n_cmdline; i++)
                total += strlen(p->cmdline[i]) + 1;
        note("64 KiB command line: %zu arguments, %zu bytes kept\n", p->n_cmdline, total);
        expect(p->n_cmdline >= 3 && g_strcmp0(p->cmdline[0], exe) == 0 && g_strcmp0(p->cmdline[1], IDLE_ARG) == 0,
               "the 64 KiB command line does not start with its first arguments");
        /* Whole arguments: at most one short of 4 KiB. */
        expect(total <= 4096 && total > 4096 - (LONG_ARG_BYTES + 1), "%zu bytes of the 64 KiB command line kept, not 4 KiB",
               total);
}

static guint n_storm_described(const Described *d) {
        GHashTableIter it;
        gpointer value;
        guint n = 0;

        g_hash_table_iter_init(&it, d->processes);
        while (g_hash_table_iter_next(&it, NULL, &value)) {
                const Tracebus__ProcessTree__Process *p = value;
                n += p->n_cmdline > 1 && g_strcmp0(p->cmdline[1], STORM_ARG) == 0;
        }
        return n;
}

static void test_fork_storm(void) {
        const char *const events[] = { "sched/sched_switch", "task/task_newtask", NULL };
        g_autofree char *cfg = ftrace_config("buffers { size_kb: 1024 }\n", events, NULL);
        g_auto(Described) d = { 0 };
        g_auto(Trace) t = { 0 };
        g_auto(Rec) r = { 0 };
        g_autoptr(GHashTable) st = NULL;
        pid_t service = tb_bus()->service_pid, long_pid = spawn_self(IDLE_ARG, "0", LONG_ARGS, LONG_ARG_BYTES);
        guint64 rss0, rss1, rss4;
        double ratio;

        tb_sleep_scaled(200);   /* the long command line in place before the scan at start */
        rec_start(&r, "tbuser", "forkstorm.pftrace", cfg);
        tb_sleep_scaled(300);
        rss0 = tb_process_rss_kib(service);
        run_storm(STORM_N);
        wait_caught_up(&r, tb_scaled_ms(10000));
        tb_sleep_scaled(500);
        rss1 = tb_process_rss_kib(service);
        run_storm(3 * STORM_N);
        wait_caught_up(&r, tb_scaled_ms(10000));
        tb_sleep_scaled(500);
        rss4 = tb_process_rss_kib(service);
        ratio = (double) (rss4 - MIN(rss4, rss0)) / (double) MAX(rss1 - MIN(rss1, rss0), (guint64) 1);
        note("tracebusd VmRSS: %" G_GUINT64_FORMAT " KiB at start, +%" G_GINT64_FORMAT " KiB after %u processes, +%"
             G_GINT64_FORMAT " KiB after %u: ratio %.2f\n", rss0, (gint64) (rss1 - rss0), STORM_N,
             (gint64) (rss4 - rss0), 4 * STORM_N, ratio);

        st = rec_stop(&r);
        kill_reap(long_pid);
        trace_load(r.out, false, &t);
        check_trace(&t, &(CheckOpts) { .closed = true, .wrapped = true });
        described_collect(&t, &d);
        note("%u storm processes described in the trace\n", n_storm_described(&d));
        expect(n_storm_described(&d) > 0, "no process of the storm is described in the trace");
        check_long_cmdline(&d, long_pid);
        /* Bounded: four times the processes, about the same growth (unbounded: four times). */
        expect(ratio < 2.0, "the service grew %.2f times as much over %u processes as over %u: not bounded", ratio,
               4 * STORM_N, STORM_N);
        verdict();
}

RECORDER_WRAP(test_fork_storm)

int main(int argc, char **argv) {
        if (argc >= 3 && g_str_equal(argv[1], STORM_ARG))
                return storm_main((unsigned) g_ascii_strtoull(argv[2], NULL, 10));
        if (argc >= 2 && g_str_equal(argv[1], IDLE_ARG)) {
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                for (;;)
                        pause();
        }
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();
        /* In AddressSanitizer's build a freed block waits in a quarantine of 256 MiB:
         * the service started below frees what it evicts at once, or its RSS would count
         * every description it forgot. (Without ASan the variable means nothing.) */
        {
                const char *old = g_getenv("ASAN_OPTIONS");
                g_autofree char *o = g_strdup_printf("%s%squarantine_size_mb=0", old ? old : "", old && *old ? ":" : "");
                g_setenv("ASAN_OPTIONS", o, TRUE);
        }
        tb_test_add_isolated("/bus/hostile/fork-storm", case_test_fork_storm);
        return tb_test_run(TB_START_SERVICE);
}
