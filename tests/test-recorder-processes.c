/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite, the recorder (tests/recorder.h says what every piece checks), part 03:
 * ProcessTree: the scan at start, threads renamed, started and gone;
 * 04: the service's tracks (TrackDescriptor/TrackEvent);
 * 05: processes that live a millisecond, described from their task_newtask.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "system-bus.h"
#include "tb-client.h"
#include "trace-file.h"
#include "trace-reader.h"
#include "trace.pb-c.h"
#include "recorder.h"

/* ---- 3. processes and threads ---- */

typedef struct {
        int go[2];          /* test -> child: one byte per step */
        int rep;            /* child -> test: tids */
        pid_t pid;
        pid_t worker_tid, late_tid;
} MtChild;

static pid_t mt_worker_tid = 0;

static void *mt_worker(void *arg) {
        (void) prctl(PR_SET_NAME, (const char *) arg);
        __atomic_store_n(&mt_worker_tid, gettid_(), __ATOMIC_SEQ_CST);
        for (;;)
                pause();
        return NULL;
}

/* A child process "tbmt-main" with a thread "tbmt-worker"; on its first go
 * byte it renames itself "tbmt-renamed"; on the second it starts a thread
 * "tbmt-late". It reports tids through report_fd. */
static void mt_child_start(MtChild *m) {
        int rep[2];

        g_assert_cmpint(pipe2(m->go, O_CLOEXEC), ==, 0);
        g_assert_cmpint(pipe2(rep, O_CLOEXEC), ==, 0);
        fflush(NULL);
        m->pid = fork();
        g_assert_cmpint(m->pid, >=, 0);
        if (m->pid == 0) {
                pthread_t th;
                pid_t tid;
                char c;

                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                (void) prctl(PR_SET_NAME, "tbmt-main");
                pthread_create(&th, NULL, mt_worker, (void *) "tbmt-worker");
                while (!(tid = __atomic_load_n(&mt_worker_tid, __ATOMIC_SEQ_CST)))
                        usleep(1000);
                (void) write(rep[1], &tid, sizeof tid);
                if (read(m->go[0], &c, 1) != 1)
                        _exit(0);
                (void) prctl(PR_SET_NAME, "tbmt-renamed");
                /* Run a little under the new name. */
                for (int i = 0; i < 20; i++)
                        usleep(20 * 1000);
                if (read(m->go[0], &c, 1) != 1)
                        _exit(0);
                __atomic_store_n(&mt_worker_tid, 0, __ATOMIC_SEQ_CST);
                pthread_create(&th, NULL, mt_worker, (void *) "tbmt-late");
                while (!(tid = __atomic_load_n(&mt_worker_tid, __ATOMIC_SEQ_CST)))
                        usleep(1000);
                (void) write(rep[1], &tid, sizeof tid);
                for (int i = 0; i < 50; i++)
                        usleep(20 * 1000);
                for (;;)
                        pause();
        }
        close(rep[1]);
        close(m->go[0]);
        m->rep = rep[0];
        g_assert_cmpint(read(m->rep, &m->worker_tid, sizeof m->worker_tid), ==, sizeof m->worker_tid);
}

static void mt_child_step(MtChild *m) {
        char c = 1;
        g_assert_cmpint(write(m->go[1], &c, 1), ==, 1);
}

static void test_processes(void) {
        const char *const events[] = { "sched/sched_switch", "sched/sched_waking", "sched/sched_process_exit",
                                       "sched/sched_process_free", "task/task_newtask", "task/task_rename", NULL };
        g_autofree char *cfg = ftrace_config("buffers { size_kb: 32768 }\n", events, NULL);
        g_autofree char *newproc = copy_binary("/bin/sleep", "tbnewproc");
        g_autoptr(GHashTable) st = NULL;
        g_auto(Described) d = { 0 };
        g_auto(Trace) t = { 0 };
        g_auto(Rec) r = { 0 };
        const Tracebus__ProcessTree *first = NULL;
        const Tracebus__ProcessTree__Process *p;
        MtChild m = { 0 };
        pid_t np, me = getpid();
        bool renamed_event = false;
        int status;

        mt_child_start(&m);
        /* tbadmin: the test's processes are root's, which a caller without manage sees by
         * name only (test-process-stats checks that rule); here every field is checked. */
        rec_start(&r, "tbadmin", "processes.pftrace", cfg);
        /* Well after the start: the scan at start must be done by now. */
        tb_sleep_scaled(500);

        /* A pre-existing thread renames itself; a process starts and exits; a new
         * thread starts in a pre-existing process. */
        mt_child_step(&m);
        fflush(NULL);
        np = fork();
        g_assert_cmpint(np, >=, 0);
        if (np == 0) {
                char *const argv[] = { newproc, (char *) "1", NULL };
                execv(newproc, argv);
                _exit(127);
        }
        g_usleep(300 * 1000);
        mt_child_step(&m);
        g_assert_cmpint(read(m.rep, &m.late_tid, sizeof m.late_tid), ==, sizeof m.late_tid);
        g_assert_cmpint(waitpid(np, &status, 0), ==, np);
        /* Time for the service to describe the new thread and process. */
        tb_sleep_scaled(1200);
        st = rec_stop(&r);
        kill_reap(m.pid);
        trace_load(r.out, false, &t);
        check_trace(&t, &(CheckOpts) { .closed = true, .describe_all = true });
        described_collect(&t, &d);
        note("pre-existing: tbmt %d (worker %d, late thread %d); new process tbnewproc %d; test %d\n", m.pid,
             m.worker_tid, m.late_tid, np, me);

        for (guint i = 0; i < t.pkts->len && !first; i++)
                first = PKT(&t, i)->p->process_tree;
        g_assert_nonnull(first);
        {
                /* The first ProcessTree is the scan at start. */
                g_autoptr(GHashTable) fp = g_hash_table_new(g_direct_hash, g_direct_equal);
                g_autoptr(GHashTable) ft = g_hash_table_new(g_direct_hash, g_direct_equal);
                const Tracebus__ProcessTree__Process *pp;
                const Tracebus__ProcessTree__Thread *tt;
                g_autofree char *cmdline = NULL;
                gsize clen = 0;

                for (size_t i = 0; i < first->n_processes; i++)
                        g_hash_table_insert(fp, GINT_TO_POINTER(first->processes[i]->pid), first->processes[i]);
                for (size_t i = 0; i < first->n_threads; i++)
                        g_hash_table_insert(ft, GINT_TO_POINTER(first->threads[i]->tid), first->threads[i]);
                note("the scan at start: %zu processes, %zu threads\n", first->n_processes, first->n_threads);
                pp = g_hash_table_lookup(fp, GINT_TO_POINTER(1));
                expect(pp && pp->ppid == 0 && pp->n_cmdline > 0, "the scan at start lacks pid 1 (ppid 0, cmdline)");
                pp = g_hash_table_lookup(fp, GINT_TO_POINTER(2));
                expect(pp && pp->n_cmdline == 1 && g_strcmp0(pp->cmdline[0], "kthreadd") == 0 && pp->cmdline_is_comm,
                       "the scan at start lacks kthreadd (pid 2, cmdline its comm, cmdline_is_comm)");
                pp = g_hash_table_lookup(fp, GINT_TO_POINTER(me));
                g_assert_true(g_file_get_contents("/proc/self/cmdline", &cmdline, &clen, NULL));
                expect(pp && pp->ppid == getppid() && pp->n_cmdline > 0 && g_strcmp0(pp->cmdline[0], cmdline) == 0,
                       "the scan at start: the test process %d is not there with ppid %d and cmdline[0] \"%s\"", me,
                       getppid(), cmdline);
                pp = g_hash_table_lookup(fp, GINT_TO_POINTER(m.pid));
                expect(pp && pp->ppid == me, "the scan at start: process %d (tbmt) not there with ppid %d", m.pid, me);
                tt = g_hash_table_lookup(ft, GINT_TO_POINTER(m.pid));
                expect(tt && tt->tgid == m.pid && g_strcmp0(tt->name, "tbmt-main") == 0,
                       "the scan at start: thread %d not there as \"tbmt-main\" of %d (got \"%s\" of %d)", m.pid, m.pid,
                       tt ? tt->name : NULL, tt ? tt->tgid : 0);
                tt = g_hash_table_lookup(ft, GINT_TO_POINTER(m.worker_tid));
                expect(tt && tt->tgid == m.pid && g_strcmp0(tt->name, "tbmt-worker") == 0,
                       "the scan at start: thread %d not there as \"tbmt-worker\" of %d (got \"%s\" of %d)", m.worker_tid,
                       m.pid, tt ? tt->name : NULL, tt ? tt->tgid : 0);
        }
        for (guint i = 0; i < t.evs->len; i++) {
                const Ev *e = EV(&t, i);
                g_autofree char *nc = e->kind == EV_TASK_RENAME ? ev_str(e, 3) : NULL;
                if (e->kind == EV_TASK_RENAME && ev_int(e, 1, 0) == m.pid && g_strcmp0(nc, "tbmt-renamed") == 0)
                        renamed_event = true;
        }
        expect(renamed_event, "no task_rename of %d to \"tbmt-renamed\"", m.pid);
        /* The renamed thread is described again, under its new name. */
        {
                const char *later = g_hash_table_lookup(d.names_later, GINT_TO_POINTER(m.pid));
                expect(g_strcmp0(later, "tbmt-renamed") == 0,
                       "thread %d, renamed to \"tbmt-renamed\" during the trace, is not described again under that name "
                       "(a later ProcessTree says \"%s\")", m.pid, later);
        }
        /* The new thread of the old process. */
        {
                const char *name = g_hash_table_lookup(d.threads, GINT_TO_POINTER(m.late_tid));
                int tgid = GPOINTER_TO_INT(g_hash_table_lookup(d.tgid, GINT_TO_POINTER(m.late_tid)));
                expect(g_strcmp0(name, "tbmt-late") == 0 && tgid == m.pid,
                       "thread %d, started during the trace in process %d as \"tbmt-late\", is not described (name \"%s\", "
                       "tgid %d)", m.late_tid, m.pid, name, tgid);
        }
        /* The process started after the trace began and gone before Stop. */
        p = g_hash_table_lookup(d.processes, GINT_TO_POINTER(np));
        {
                const char *name = g_hash_table_lookup(d.threads, GINT_TO_POINTER(np));
                bool named = (p && p->n_cmdline > 0 && g_str_has_suffix(p->cmdline[0], "tbnewproc")) ||
                             g_strcmp0(name, "tbnewproc") == 0;
                expect(p && p->ppid == me, "process %d (tbnewproc), started during the trace and gone before Stop, has no "
                       "ProcessTree process with ppid %d", np, me);
                expect(named, "process %d (tbnewproc) is not named in any ProcessTree (cmdline[0] \"%s\", thread name \"%s\")",
                       np, p && p->n_cmdline ? p->cmdline[0] : NULL, name);
        }
        verdict();
}

/* ---- 4. the service's own tracks ---- */

static guint64 instant_ts(const char *s) {
        const char *at = strrchr(s, '@');
        return at ? g_ascii_strtoull(at + 1, NULL, 10) : 0;
}

static void test_service_tracks(void) {
        const char *const events[] = { "sched/sched_switch", "sched/sched_waking", NULL };
        g_autofree char *cfg = ftrace_config("write_into_file: true\nfile_write_period_ms: 700\nbuffers { size_kb: 16384 }\n",
                                             events, NULL);
        g_autoptr(GPtrArray) inst = g_ptr_array_new_with_free_func(g_free);
        g_autoptr(GHashTable) st = NULL;
        g_autofree char *err = NULL, *a = NULL, *d = NULL;
        g_auto(Trace) t = { 0 };
        g_auto(Rec) r = { 0 };
        const char *order[] = { "started", "detached", "attached", "periodic write", "stopped" };
        guint next = 0, n_periodic = 0;
        guint64 last = 0;

        rec_start(&r, "tbuser", "tracks.pftrace", cfg);
        g_usleep(800 * 1000);
        d = client_cmd(&r.c, "detach tb-recorder-tracks", 'D', &err);
        expect(d != NULL, "Detach failed: %s", err);
        g_usleep(300 * 1000);
        g_clear_pointer(&err, g_free);
        a = client_cmd(&r.c, "attach tb-recorder-tracks", 'O', &err);
        expect(a != NULL, "Attach failed: %s", err);
        /* Long enough for a second periodic write (a slower build writes later). */
        tb_sleep_scaled(900);
        st = rec_stop(&r);
        trace_load(r.out, false, &t);
        check_trace(&t, &(CheckOpts) { .closed = true });
        check_tracks(&t, inst);
        for (guint i = 0; i < inst->len; i++) {
                const char *s = g_ptr_array_index(inst, i);
                g_autofree char *name = g_strndup(s, (gsize) (strrchr(s, '@') - s));
                guint64 ts = instant_ts(s);
                note("instant: %s\n", s);
                expect(ts >= last, "instant \"%s\" comes before the one before it in the file", name);
                last = MAX(last, ts);
                if (g_str_equal(name, "periodic write")) {
                        n_periodic++;
                        continue;
                }
                while (next < G_N_ELEMENTS(order) && !g_str_equal(order[next], name))
                        next++;
                if (next == G_N_ELEMENTS(order))
                        shortfall("instant \"%s\" is out of order (expected started, detached, attached, periodic write, "
                                  "stopped)", name);
        }
        for (size_t k = 0; k < G_N_ELEMENTS(order); k++) {
                bool found = false;
                for (guint i = 0; i < inst->len; i++)
                        found = found || g_str_has_prefix(g_ptr_array_index(inst, i), order[k]);
                expect(found, "no \"%s\" instant on the tracebus track", order[k]);
        }
        expect(n_periodic >= 2, "%u \"periodic write\" instants in ~%.1f s with file_write_period_ms 700", n_periodic,
               (1100 + tb_scaled_ms(900)) / 1000.0);
        if (inst->len)
                expect(instant_ts(g_ptr_array_index(inst, 0)) == tracing_started_ts(&t),
                       "the \"started\" instant is not at tracing_started");
        verdict();
}

/* ---- 5. a process that lives a millisecond ---- */

#define SHORT_N 200
#define SHORT_COMM "tbshort"

/* SHORT_N children, one after another, each renamed SHORT_COMM, gone after 1 ms: long
 * before the service reads /proc for them, after the drain period (100 ms). */
static void short_lived_run(pid_t *pids) {
        for (unsigned i = 0; i < SHORT_N; i++) {
                int status;

                fflush(NULL);
                pids[i] = fork();
                g_assert_cmpint(pids[i], >=, 0);
                if (pids[i] == 0) {
                        (void) prctl(PR_SET_NAME, SHORT_COMM);
                        usleep(1000);
                        _exit(0);
                }
                g_assert_cmpint(waitpid(pids[i], &status, 0), ==, pids[i]);
        }
}

static void test_short_lived(void) {
        const char *const events[] = { "sched/sched_switch", "sched/sched_process_free", "task/task_newtask",
                                       "task/task_rename", NULL };
        g_autofree char *cfg = ftrace_config("buffers { size_kb: 8192 }\n", events, NULL);
        g_autoptr(GHashTable) st = NULL;
        g_auto(Described) d = { 0 };
        g_auto(Trace) t = { 0 };
        g_auto(Rec) r = { 0 };
        pid_t pids[SHORT_N], me = getpid();
        unsigned no_process = 0, wrong_parent = 0, wrong_name = 0;

        rec_start(&r, "tbuser", "short-lived.pftrace", cfg);
        tb_sleep_scaled(300);
        short_lived_run(pids);
        wait_caught_up(&r, tb_scaled_ms(5000));
        tb_sleep_scaled(300);
        st = rec_stop(&r);
        trace_load(r.out, false, &t);
        check_trace(&t, &(CheckOpts) { .closed = true });
        described_collect(&t, &d);
        for (unsigned i = 0; i < SHORT_N; i++) {
                const Tracebus__ProcessTree__Process *p = g_hash_table_lookup(d.processes, GINT_TO_POINTER(pids[i]));
                const char *name = g_hash_table_lookup(d.threads, GINT_TO_POINTER(pids[i]));

                no_process += !p;
                wrong_parent += p && (!p->has_ppid || p->ppid != me);
                wrong_name += g_strcmp0(name, SHORT_COMM) != 0;
        }
        note("%u processes of 1 ms: %u without a ProcessTree process, %u with another parent, %u not named %s\n",
             SHORT_N, no_process, wrong_parent, wrong_name, SHORT_COMM);
        expect(no_process == 0, "%u of %u processes that lived 1 ms have no ProcessTree process", no_process, SHORT_N);
        expect(wrong_parent == 0, "%u of %u processes that lived 1 ms lack their parent %d", wrong_parent, SHORT_N,
               (int) me);
        expect(wrong_name == 0, "%u of %u threads that lived 1 ms are not named \"%s\"", wrong_name, SHORT_N,
               SHORT_COMM);
        verdict();
}

RECORDER_WRAP(test_processes)
RECORDER_WRAP(test_service_tracks)
RECORDER_WRAP(test_short_lived)

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();
        RECORDER_CASE("03-processes", test_processes);
        RECORDER_CASE("04-service-tracks", test_service_tracks);
        RECORDER_CASE("05-short-lived", test_short_lived);
        return tb_test_run(TB_START_SERVICE);
}
