/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite, linux.process_stats: ProcessStats every proc_stats_poll_ms, as
 * Perfetto v58's protos define them, read back field by field. A child of the test, run
 * as tbuser (the session's owner), allocates 64 MiB and spins while the session records:
 * its vm_rss_kb and rss_anon_kb must grow by about that much, its runtime_user_mode
 * grow, its oom_score_adj be the one it set, its smaps_rollup be there (its owner's),
 * and its ProcessTree entry carry its start time (record_process_age). The test's own
 * processes (root's) must have no smaps_rollup values: another user's.
 * Sessions at the same period share one walk of /proc a period (the very same sample
 * times), each with its own fields, smaps_rollup rule and cache; another period walks
 * on its own; each session takes a final sample of its own at Stop. Another user's
 * process is named, not described, for a caller without org.tracebus.manage.
 */
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "recorder.h"
#include "system-bus.h"
#include "tb-client.h"

#define GROW_MIB 64
#define OOM_ADJ 123
#define SPIN_MS 300

typedef struct {
        pid_t pid;
        int go;       /* test -> child */
        int done;     /* child -> test: allocated and spun */
} Child;

static long cpu_ms(void) {
        struct timespec t;

        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
        return t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Spins for @ms more of this process's CPU time, in user mode: the process CPU clock is a
 * system call, so it is read once per million additions, or most of the spin would be
 * the kernel's time. */
static void spin_cpu_ms(long ms) {
        long until = cpu_ms() + ms;
        volatile unsigned long sum = 0;

        while (cpu_ms() < until)
                for (unsigned long i = 0; i < 1000000; i++)
                        sum += i;
}

/* Sets its oom_score_adj (as root: after setuid, /proc/self is root's), becomes tbuser,
 * and on the go byte allocates GROW_MIB, spins SPIN_MS of CPU time and says so. */
static void child_main(int go, int done) {
        struct passwd *pw = getpwnam("tbuser");
        volatile char *p;
        char c = 1;
        FILE *f;

        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
        (void) prctl(PR_SET_NAME, "tbpsmem");
        f = fopen("/proc/self/oom_score_adj", "w");
        if (f) {
                fprintf(f, "%d\n", OOM_ADJ);
                fclose(f);
        }
        if (!pw || setgid(pw->pw_gid) < 0 || setuid(pw->pw_uid) < 0)
                _exit(2);
        if (read(go, &c, 1) != 1)
                _exit(0);
        p = malloc((size_t) GROW_MIB << 20);
        for (size_t i = 0; p && i < ((size_t) GROW_MIB << 20); i += 4096)
                p[i] = 1;
        spin_cpu_ms(SPIN_MS);
        (void) write(done, &c, 1);
        for (;;)
                pause();
}

static void child_start(Child *ch) {
        int p[2], q[2];

        g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
        g_assert_cmpint(pipe2(q, O_CLOEXEC), ==, 0);
        fflush(NULL);
        ch->pid = fork();
        g_assert_cmpint(ch->pid, >=, 0);
        if (ch->pid == 0) {
                close(p[1]);
                close(q[0]);
                child_main(p[0], q[1]);
        }
        close(p[0]);
        close(q[1]);
        ch->go = p[1];
        ch->done = q[0];
}

/* Field @f of every ProcessStats entry of @pid, in file order: min and max, and how
 * many packets had it. */
typedef struct {
        guint n;
        gint64 min, max;
} Series;

#define SERIES_ADD(s, value) do { \
                gint64 v_ = (gint64) (value); \
                if ((s).n++ == 0 || v_ < (s).min) (s).min = v_; \
                if ((s).n == 1 || v_ > (s).max) (s).max = v_; \
        } while (0)

typedef struct {
        Series rss, anon, size, hwm, oom, smr_rss, smr_pss, user_ns;
        guint n_packets, bad_ts, bad_seq, other_smaps;
} Seen;

static void collect(const Trace *t, pid_t child, Seen *s) {
        guint64 start = tracing_started_ts(t), end = tracing_disabled_ts(t);

        for (guint i = 0; i < t->pkts->len; i++) {
                const Tracebus__TracePacket *p = PKT(t, i)->p;
                const Tracebus__ProcessStats *ps = p->process_stats;

                if (!ps)
                        continue;
                s->n_packets++;
                s->bad_ts += !p->has_timestamp || p->timestamp < start || (end && p->timestamp > end) ||
                             !ps->has_collection_end_timestamp || ps->collection_end_timestamp < p->timestamp;
                s->bad_seq += p->trusted_packet_sequence_id != 6;   /* TRACE_SEQUENCE_PROCESS_STATS */
                for (size_t j = 0; j < ps->n_processes; j++) {
                        const Tracebus__ProcessStats__Process *pr = ps->processes[j];

                        if (pr->pid != child) {
                                s->other_smaps += pr->pid == getpid() && pr->has_smr_rss_kb;
                                continue;
                        }
                        if (pr->has_vm_rss_kb) SERIES_ADD(s->rss, pr->vm_rss_kb);
                        if (pr->has_rss_anon_kb) SERIES_ADD(s->anon, pr->rss_anon_kb);
                        if (pr->has_vm_size_kb) SERIES_ADD(s->size, pr->vm_size_kb);
                        if (pr->has_vm_hwm_kb) SERIES_ADD(s->hwm, pr->vm_hwm_kb);
                        if (pr->has_oom_score_adj) SERIES_ADD(s->oom, pr->oom_score_adj);
                        if (pr->has_smr_rss_kb) SERIES_ADD(s->smr_rss, pr->smr_rss_kb);
                        if (pr->has_smr_pss_kb) SERIES_ADD(s->smr_pss, pr->smr_pss_kb);
                        if (pr->has_runtime_user_mode) SERIES_ADD(s->user_ns, pr->runtime_user_mode);
                }
        }
}

/* The child's start time, as /proc says it, in ns since boot. */
static guint64 start_time_ns(pid_t pid) {
        g_autofree char *path = g_strdup_printf("/proc/%d/stat", (int) pid), *stat = NULL;
        unsigned long long start = 0;
        const char *s;

        g_assert_true(g_file_get_contents(path, &stat, NULL, NULL));
        s = strrchr(stat, ')');
        g_assert_nonnull(s);
        g_assert_cmpint(sscanf(s + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
                               &start), ==, 1);
        return start * (1000000000ull / (guint64) sysconf(_SC_CLK_TCK));
}

static void check_tree(const Trace *t, pid_t child) {
        g_auto(Described) d = { 0 };
        const Tracebus__ProcessTree__Process *p;

        described_collect(t, &d);
        p = g_hash_table_lookup(d.processes, GINT_TO_POINTER(child));
        expect(p != NULL, "the child %d is not in the ProcessTree", (int) child);
        if (!p)
                return;
        expect(p->has_process_start_from_boot && p->process_start_from_boot == start_time_ns(child),
               "the child's process_start_from_boot is %" G_GUINT64_FORMAT ", /proc says %" G_GUINT64_FORMAT,
               p->process_start_from_boot, start_time_ns(child));
}

static void test_process_stats(void) {
        const char *const events[] = { "sched/sched_switch", NULL };
        g_autofree char *ftrace = ftrace_config("", events, NULL);
        g_autofree char *cfg = g_strconcat(ftrace, "data_sources { config { name: \"linux.process_stats\" "
                                           "process_stats_config { proc_stats_poll_ms: 100 scan_smaps_rollup: true "
                                           "record_process_runtime: true record_process_age: true } } }\n", NULL);
        g_autoptr(GHashTable) st = NULL;
        g_auto(Trace) t = { 0 };
        g_auto(Rec) r = { 0 };
        Seen s = { 0 };
        Child ch;
        char go = 1;

        child_start(&ch);
        rec_start(&r, "tbuser", "process-stats.pftrace", cfg);
        tb_sleep_scaled(400);
        g_assert_cmpint(write(ch.go, &go, 1), ==, 1);
        g_assert_cmpint(read(ch.done, &go, 1), ==, 1);
        tb_sleep_scaled(500);   /* polls after the growth */
        st = rec_stop(&r);
        trace_load(r.out, false, &t);
        check_trace(&t, &(CheckOpts) { .closed = true });
        collect(&t, ch.pid, &s);
        check_tree(&t, ch.pid);
        kill_reap(ch.pid);

        note("%u ProcessStats packets; child rss %" G_GINT64_FORMAT "..%" G_GINT64_FORMAT " kB (%u values), anon %"
             G_GINT64_FORMAT "..%" G_GINT64_FORMAT ", oom_score_adj %" G_GINT64_FORMAT ", smaps rss %u values, user %"
             G_GINT64_FORMAT "..%" G_GINT64_FORMAT " ns\n", s.n_packets, s.rss.min, s.rss.max, s.rss.n, s.anon.min,
             s.anon.max, s.oom.max, s.smr_rss.n, s.user_ns.min, s.user_ns.max);
        expect(s.n_packets >= 5, "%u ProcessStats packets in over 900 ms at 100 ms", s.n_packets);
        expect(s.bad_ts == 0, "%u ProcessStats packets with a timestamp outside the trace or no collection end", s.bad_ts);
        expect(s.bad_seq == 0, "%u ProcessStats packets not on sequence 6", s.bad_seq);
        expect(s.rss.n >= 2 && s.rss.max - s.rss.min >= (GROW_MIB - 4) * 1024,
               "the child's vm_rss_kb grew by %" G_GINT64_FORMAT " kB, not by %d MiB", s.rss.max - s.rss.min, GROW_MIB);
        expect(s.anon.n >= 2 && s.anon.max - s.anon.min >= (GROW_MIB - 4) * 1024,
               "the child's rss_anon_kb grew by %" G_GINT64_FORMAT " kB", s.anon.max - s.anon.min);
        expect(s.size.n >= 1 && s.size.max >= GROW_MIB * 1024, "the child's vm_size_kb is missing or small");
        expect(s.hwm.n >= 1 && s.hwm.max >= s.rss.max, "the child's vm_hwm_kb is missing or below its rss");
        /* Written when it changes: the same value is not repeated every period. */
        expect(s.oom.n == 1 && s.oom.max == OOM_ADJ, "the child's oom_score_adj: %u values, %" G_GINT64_FORMAT, s.oom.n,
               s.oom.max);
        expect(s.smr_rss.n >= 2 && s.smr_pss.n >= 1, "the child's smaps_rollup (its owner's process) is missing");
        /* Most of the spin is user time; the page faults are the kernel's. */
        expect(s.user_ns.n >= 2 && s.user_ns.max - s.user_ns.min >= SPIN_MS / 2 * 1000000ll,
               "the child's runtime_user_mode grew by %" G_GINT64_FORMAT " ns after %d ms of CPU spinning",
               s.user_ns.max - s.user_ns.min, SPIN_MS);
        expect(s.other_smaps == 0, "smaps_rollup of root's process %d is in tbuser's trace", (int) getpid());
        verdict();
}

typedef struct {
        GArray *times;          /* guint64: the packets' timestamps */
        guint self_smaps, runtime;
} Shared;

static void shared_collect(const Trace *t, Shared *s) {
        s->times = g_array_new(false, false, sizeof(guint64));
        for (guint i = 0; i < t->pkts->len; i++) {
                const Tracebus__TracePacket *p = PKT(t, i)->p;

                if (!p->process_stats)
                        continue;
                g_array_append_val(s->times, p->timestamp);
                for (size_t j = 0; j < p->process_stats->n_processes; j++) {
                        const Tracebus__ProcessStats__Process *pr = p->process_stats->processes[j];

                        s->self_smaps += pr->pid == getpid() && pr->has_smr_rss_kb;
                        s->runtime += pr->has_runtime_user_mode;
                }
        }
}

/* How many of @b's times are @a's. */
static guint times_shared(const Shared *a, const Shared *b) {
        g_autoptr(GHashTable) set = g_hash_table_new(g_int64_hash, g_int64_equal);
        guint n = 0;

        for (guint i = 0; i < a->times->len; i++)
                g_hash_table_add(set, &g_array_index(a->times, guint64, i));
        for (guint i = 0; i < b->times->len; i++)
                n += g_hash_table_contains(set, &g_array_index(b->times, guint64, i));
        return n;
}

/* Root's session (smaps_rollup, run times) and tbuser's (smaps_rollup) at 100 ms, both
 * written whole every poll (cache ttl = period), share the walks: every sample of
 * tbuser's but its final one is at one of root's very times, yet root's own process has
 * smaps_rollup in root's trace only, and run times are in root's only. tbuser's at
 * 140 ms shares none. */
static void test_shared_walks(void) {
        const char *const events[] = { "sched/sched_process_exit", NULL };
        g_autofree char *ftrace = ftrace_config("", events, NULL);
        g_autofree char *cfg_a = g_strconcat(ftrace, "data_sources { config { name: \"linux.process_stats\" "
                                             "process_stats_config { proc_stats_poll_ms: 100 proc_stats_cache_ttl_ms: 100 "
                                             "scan_smaps_rollup: true record_process_runtime: true } } }\n", NULL);
        g_autofree char *cfg_b = g_strconcat(ftrace, "data_sources { config { name: \"linux.process_stats\" "
                                             "process_stats_config { proc_stats_poll_ms: 100 proc_stats_cache_ttl_ms: 100 "
                                             "scan_smaps_rollup: true } } }\n", NULL);
        g_autofree char *cfg_c = g_strconcat(ftrace, "data_sources { config { name: \"linux.process_stats\" "
                                             "process_stats_config { proc_stats_poll_ms: 140 proc_stats_cache_ttl_ms: 140 "
                                             "} } }\n", NULL);
        g_autoptr(GHashTable) st1 = NULL, st2 = NULL, st3 = NULL;
        g_auto(Trace) ta = { 0 }, tb = { 0 }, tc = { 0 };
        g_auto(Rec) ra = { 0 }, rb = { 0 }, rc = { 0 };
        Shared a = { 0 }, b = { 0 }, c = { 0 };
        guint b_in_a, c_in_a;

        rec_start(&ra, "root", "process-stats-shared-a.pftrace", cfg_a);
        rec_start(&rb, "tbuser", "process-stats-shared-b.pftrace", cfg_b);
        rec_start(&rc, "tbuser", "process-stats-shared-c.pftrace", cfg_c);
        g_usleep(1500 * 1000);
        st3 = rec_stop(&rc);
        st2 = rec_stop(&rb);
        st1 = rec_stop(&ra);
        trace_load(ra.out, false, &ta);
        trace_load(rb.out, false, &tb);
        trace_load(rc.out, false, &tc);
        shared_collect(&ta, &a);
        shared_collect(&tb, &b);
        shared_collect(&tc, &c);
        b_in_a = times_shared(&a, &b);
        c_in_a = times_shared(&a, &c);
        note("shared walks: A %u samples, B %u (%u at A's times), C (140 ms) %u (%u at A's times); "
             "root's smaps_rollup in A %u, in B %u\n", a.times->len, b.times->len, b_in_a, c.times->len, c_in_a,
             a.self_smaps, b.self_smaps);
        expect(b.times->len >= 8, "B has only %u samples in 1.5 s at 100 ms, written whole every poll", b.times->len);
        expect(b_in_a + 1 == b.times->len, "%u of B's %u samples are not at A's walks (1 expected: its final one)",
               b.times->len - b_in_a, b.times->len);
        expect(c.times->len >= 5 && c_in_a == 0, "C at 140 ms: %u samples, %u at A's times", c.times->len, c_in_a);
        expect(a.self_smaps > 0, "root's session lacks root's own smaps_rollup");
        expect(b.self_smaps == 0, "tbuser's session got smaps_rollup of root's process %d (%u times)", (int) getpid(),
               b.self_smaps);
        expect(a.runtime > 0 && b.runtime == 0 && c.runtime == 0, "run times: A %u, B %u, C %u (only A asked)",
               a.runtime, b.runtime, c.runtime);
        g_array_unref(a.times);
        g_array_unref(b.times);
        g_array_unref(c.times);
        verdict();
}

/* A shell of @user's whose command line carries @marker, looping until killed. */
static pid_t marked_process_as(const char *user, const char *marker) {
        struct passwd *pw = getpwnam(user);
        pid_t pid;

        g_assert_nonnull(pw);
        fflush(NULL);
        pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (setgroups(0, NULL) < 0 || setgid(pw->pw_gid) < 0 || setuid(pw->pw_uid) < 0)
                        _exit(2);
                execl("/bin/sh", "sh", "-c", "while :; do sleep 0.1; done", marker, (char *) NULL);
                _exit(127);
        }
        return pid;
}

/* Whether /proc is mounted hidepid= here: other users' processes are then hidden. */
static bool proc_hides_pids(void) {
        g_autofree char *mountinfo = NULL;
        g_auto(GStrv) lines = NULL;
        bool hides = false;

        g_assert_true(g_file_get_contents("/proc/self/mountinfo", &mountinfo, NULL, NULL));
        lines = g_strsplit(mountinfo, "\n", -1);
        for (guint i = 0; lines[i]; i++) {
                g_auto(GStrv) f = g_strsplit(lines[i], " ", -1);

                if (g_strv_length(f) > 4 && g_str_equal(f[4], "/proc") && strstr(lines[i], " - proc "))
                        hides = strstr(lines[i], "hidepid=") && !strstr(lines[i], "hidepid=0") &&
                                !strstr(lines[i], "hidepid=off");
        }
        return hides;
}

typedef struct {
        const Tracebus__ProcessTree__Process *mine, *other;
        bool marker_anywhere, mine_stats, other_stats;
} Others;

static void others_collect(const Trace *t, pid_t mine, pid_t other, const char *marker, Described *d, Others *o) {
        described_collect(t, d);
        o->mine = g_hash_table_lookup(d->processes, GINT_TO_POINTER(mine));
        o->other = g_hash_table_lookup(d->processes, GINT_TO_POINTER(other));
        o->marker_anywhere = memmem(t->data, t->len, marker, strlen(marker)) != NULL;
        for (guint i = 0; i < t->pkts->len; i++) {
                const Tracebus__ProcessStats *ps = PKT(t, i)->p->process_stats;

                for (size_t j = 0; ps && j < ps->n_processes; j++) {
                        o->mine_stats |= ps->processes[j]->pid == mine && ps->processes[j]->has_vm_rss_kb;
                        o->other_stats |= ps->processes[j]->pid == other && ps->processes[j]->has_vm_rss_kb;
                }
        }
}

static bool cmdline_has(const Tracebus__ProcessTree__Process *p, const char *marker) {
        for (size_t i = 0; p && i < p->n_cmdline; i++)
                if (strstr(p->cmdline[i], marker))
                        return true;
        return false;
}

/* Another user's process (tbother's shell, its command line marked): a caller with
 * org.tracebus.record only (tbuser) has it by pid, parent and comm, without command line
 * or uid, and its memory counters (any user reads /proc/PID/status), or nothing of it
 * when /proc is mounted hidepid=; its own process whole. A holder of org.tracebus.manage
 * (tbadmin) has both whole. */
static void test_others_processes(void) {
        const char *const events[] = { "sched/sched_switch", NULL };
        g_autofree char *ftrace = ftrace_config("", events, NULL);
        g_autofree char *cfg = g_strconcat(ftrace, "data_sources { config { name: \"linux.process_stats\" "
                                           "process_stats_config { proc_stats_poll_ms: 100 } } }\n", NULL);
        g_autofree char *other_marker = g_strdup_printf("tbsecret-other-%d", (int) getpid());
        g_autofree char *mine_marker = g_strdup_printf("tbsecret-mine-%d", (int) getpid());
        pid_t other = marked_process_as("tbother", other_marker), mine = marked_process_as("tbuser", mine_marker);
        g_autoptr(GHashTable) st1 = NULL, st2 = NULL;
        g_auto(Described) du = { 0 }, da = { 0 };
        g_auto(Trace) tu = { 0 }, ta = { 0 };
        g_auto(Rec) ru = { 0 }, ra = { 0 };
        Others u = { 0 }, a = { 0 };
        bool hidden = proc_hides_pids();

        tb_sleep_scaled(100);   /* both have exec'd their shell */
        rec_start(&ru, "tbuser", "process-others-user.pftrace", cfg);
        rec_start(&ra, "tbadmin", "process-others-admin.pftrace", cfg);
        tb_sleep_scaled(500);
        st1 = rec_stop(&ru);
        st2 = rec_stop(&ra);
        kill_reap(other);
        kill_reap(mine);
        trace_load(ru.out, false, &tu);
        trace_load(ra.out, false, &ta);
        check_trace(&tu, &(CheckOpts) { .closed = true });
        check_trace(&ta, &(CheckOpts) { .closed = true });
        others_collect(&tu, mine, other, other_marker, &du, &u);
        others_collect(&ta, mine, other, other_marker, &da, &a);
        note("others' processes (/proc %s): tbuser's trace has tbother's %s, its command line %s; tbadmin's %s\n",
             hidden ? "hides them" : "shows them", u.other ? "process" : "nothing",
             u.marker_anywhere ? "somewhere" : "nowhere", a.other && cmdline_has(a.other, other_marker) ? "whole" : "not");
        expect(!u.marker_anywhere, "tbother's command line (%s) is in tbuser's trace", other_marker);
        expect(u.mine && cmdline_has(u.mine, mine_marker) && u.mine->has_uid && u.mine->uid == (int32_t)
               getpwnam("tbuser")->pw_uid, "tbuser's own process is not whole in its trace");
        expect(u.mine_stats, "tbuser's trace lacks its own process's memory counters");
        if (hidden)
                expect(!u.other && !u.other_stats, "/proc hides tbother's process, yet tbuser's trace has it");
        else {
                expect(u.other && u.other->cmdline_is_comm && u.other->n_cmdline == 1 &&
                       g_strcmp0(u.other->cmdline[0], "sh") == 0 && !u.other->has_uid &&
                       u.other->ppid == getpid(), "tbother's process is not in tbuser's trace by pid, parent "
                       "and comm alone");
                expect(u.other_stats, "tbuser's trace lacks tbother's memory counters, which /proc shows it");
        }
        expect(a.other && cmdline_has(a.other, other_marker) && a.other->has_uid,
               "tbadmin (org.tracebus.manage) lacks tbother's whole process");
        expect(a.mine && cmdline_has(a.mine, mine_marker), "tbadmin lacks tbuser's whole process");
        verdict();
}

RECORDER_WRAP(test_process_stats)
RECORDER_WRAP(test_shared_walks)
RECORDER_WRAP(test_others_processes)

/* Perfetto's memory-counters page gives a config of linux.process_stats alone: no
 * ftrace instance, no ftrace parser. It records, and the service lives on. */
static void test_process_stats_only(void) {
        const char *cfg = "buffers { size_kb: 4096 }\n"
                          "data_sources { config { name: \"linux.process_stats\" process_stats_config {\n"
                          "  scan_all_processes_on_start: true proc_stats_poll_ms: 100 } } }\n";
        g_autoptr(GHashTable) st = NULL;
        g_auto(Trace) t = { 0 };
        g_auto(Rec) r = { 0 };
        Seen s = { 0 };

        rec_start(&r, "tbuser", "process-stats-only.pftrace", cfg);
        tb_sleep_scaled(500);
        st = rec_stop(&r);
        /* No check_trace(): a trace without the ftrace data source has no FtraceStats,
         * as Perfetto's has none. */
        trace_load(r.out, false, &t);
        collect(&t, getpid(), &s);
        note("%u ProcessStats packets without ftrace\n", s.n_packets);
        expect(s.n_packets >= 2, "%u ProcessStats packets in 500 ms at 100 ms without ftrace", s.n_packets);
        expect(s.bad_seq == 0, "%u ProcessStats packets not on sequence 6", s.bad_seq);
        expect(kill(tb_bus()->service_pid, 0) == 0, "tracebusd died on a config without ftrace");
        verdict();
}

RECORDER_WRAP(test_process_stats_only)

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();
        RECORDER_CASE("process-stats", test_process_stats);
        RECORDER_CASE("process-stats-only", test_process_stats_only);
        RECORDER_CASE("process-stats-shared-walks", test_shared_walks);
        RECORDER_CASE("process-stats-others", test_others_processes);
        return tb_test_run(TB_START_SERVICE);
}
