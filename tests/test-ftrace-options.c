/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite: FtraceConfig's options beyond events and sizes (service/config/session-config-ftrace.c,
 * service/sources/ftrace/ftrace-options.c), each recorded by the real service into its own tracefs
 * instance and read back with the project's reader (tests/recorder.h). Each case names
 * what Perfetto v58's protos/perfetto/config/ftrace/ftrace_config.proto says the
 * option does, and checks the trace for that:
 *   syscall_events    only the named syscalls' raw_syscalls/sys_{enter,exit}
 *   tids_to_trace     only events of those threads (set_event_pid)
 *   tracing_cpumask   only events of those CPUs
 *   print_filter      only the ftrace/print the rules allow
 *   use_monotonic_raw_clock   bundles say FTRACE_CLOCK_MONO_RAW, timestamps on that clock
 *   tracefs_options, drain_buffer_percent, disable_generic_events, throttle_rss_stat:
 *                     the instance's files while recording
 *   bad values        InvalidConfig naming the field
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tracebus-bus.h"
#include "recorder.h"
#include "session-util.h"
#include "system-bus.h"
#include "tb-client.h"
#include "test-util.h"

static const char *const no_events[] = { NULL };

static void spin_syscall(long nr, guint n) {
        for (guint i = 0; i < n; i++)
                (void) syscall(nr);
}

/* A child that makes getppid() calls for @ms, then exits. */
static pid_t spinning_child(guint ms) {
        pid_t pid;

        fflush(NULL);
        pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                gint64 end = g_get_monotonic_time() + (gint64) ms * 1000;
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                while (g_get_monotonic_time() < end)
                        spin_syscall(SYS_getppid, 100);
                _exit(0);
        }
        return pid;
}

static char *read_instance_file(const Rec *r, const char *file) {
        g_autofree char *p = g_build_filename(r->instance, file, NULL);
        char *text = NULL;

        if (!g_file_get_contents(p, &text, NULL, NULL))
                return g_strdup("(unreadable)");
        return g_strstrip(text);
}

/* Perfetto: "The subset of syscalls to record ... perfetto v43+ does the right thing if you
 * set only this field. Example: ["sys_read", "sys_open"]". trace_processor builds syscall
 * slices from sys_enter/sys_exit's id. */
static void test_syscall_events(void) {
        g_auto(Rec) r = {};
        g_auto(Trace) t = {};
        g_autofree char *cfg = ftrace_config("", no_events,
                "  syscall_events: \"sys_getppid\"\n  syscall_events: \"sys_getpgrp\"\n"
                "  syscall_events: \"sys_no_such_call\"\n");
        guint enter = 0, exit_ = 0, getppid_seen = 0, getpgrp_seen = 0, other = 0;

        rec_start(&r, "tbuser", "syscalls.pftrace", cfg);
        spin_syscall(SYS_getppid, 500);
        spin_syscall(SYS_getpgrp, 500);
        spin_syscall(SYS_getuid, 500);
        g_usleep(300 * 1000);
        g_hash_table_unref(rec_stop(&r));
        trace_load(r.out, false, &t);
        for (guint i = 0; i < t.evs->len; i++) {
                const Ev *e = EV(&t, i);
                gint64 id;

                if (e->kind != EV_SYS_ENTER && e->kind != EV_SYS_EXIT)
                        continue;
                e->kind == EV_SYS_ENTER ? enter++ : exit_++;
                id = ev_int(e, 1, -1);
                if (id == SYS_getppid)
                        getppid_seen++;
                else if (id == SYS_getpgrp)
                        getpgrp_seen++;
                else
                        other++;
        }
        note("sys_enter %u sys_exit %u: getppid %u getpgrp %u other %u\n", enter, exit_, getppid_seen, getpgrp_seen,
             other);
        expect(enter >= 500 && exit_ >= 500, "too few raw_syscalls events (%u enter, %u exit)", enter, exit_);
        expect(getppid_seen >= 1000 && getpgrp_seen >= 1000, "the named syscalls are missing (%u, %u)", getppid_seen,
               getpgrp_seen);
        expect(other == 0, "%u events of syscalls that were not named", other);
        verdict();
}

/* Perfetto: "Filter ftrace events by Thread ID (TID). This writes the TIDs to
 * set_event_pid." Here in the session's own instance, so no exclusive session. */
static void test_tids_to_trace(void) {
        g_auto(Rec) r = {};
        g_auto(Trace) t = {};
        g_autofree char *extra = g_strdup_printf("  tids_to_trace: %d\n", (int) gettid_());
        g_autofree char *cfg = ftrace_config("", (const char *const[]) { "raw_syscalls/sys_enter", NULL }, extra);
        g_autofree char *pids = NULL;
        guint mine = 0, others = 0;
        pid_t child;
        int status;

        rec_start(&r, "tbuser", "tids.pftrace", cfg);
        pids = read_instance_file(&r, "set_event_pid");
        expect(atoi(pids) == (int) gettid_(), "set_event_pid is '%s', not %d", pids, (int) gettid_());
        child = spinning_child(300);
        spin_syscall(SYS_getppid, 500);
        g_assert_cmpint(waitpid(child, &status, 0), ==, child);
        g_hash_table_unref(rec_stop(&r));
        trace_load(r.out, false, &t);
        for (guint i = 0; i < t.evs->len; i++) {
                const Ev *e = EV(&t, i);

                if (e->kind != EV_SYS_ENTER)
                        continue;
                if (e->pid == (guint32) gettid_())
                        mine++;
                else
                        others++;
        }
        note("sys_enter of the test's thread %u, of others %u (child %d)\n", mine, others, (int) child);
        expect(mine >= 500, "only %u sys_enter of the traced thread", mine);
        expect(others == 0, "%u sys_enter of threads not in tids_to_trace", others);
        verdict();
}

/* Perfetto: "a mask that lets the user only trace on specified CPUs". */
static void test_tracing_cpumask(void) {
        g_auto(Rec) r = {};
        g_auto(Trace) t = {};
        g_autofree char *cfg = ftrace_config("", (const char *const[]) { "sched/sched_switch", NULL },
                                             "  tracing_cpumask: \"1\"\n");
        guint per_cpu[2] = {};
        GPid storm;

        expect(sysconf(_SC_NPROCESSORS_ONLN) >= 2, "this check needs two CPUs");
        rec_start(&r, "tbuser", "cpumask.pftrace", cfg);
        storm = storm_start(20000, true);
        storm_wait(storm);
        g_hash_table_unref(rec_stop(&r));
        trace_load(r.out, false, &t);
        for (guint i = 0; i < t.evs->len; i++) {
                const Ev *e = EV(&t, i);

                if (e->kind == EV_SCHED_SWITCH || e->kind == EV_COMPACT_SWITCH)
                        per_cpu[MIN(e->cpu, 1u)]++;
        }
        note("sched_switch on CPU 0: %u, on other CPUs: %u\n", per_cpu[0], per_cpu[1]);
        expect(per_cpu[0] > 100, "only %u switches on CPU 0", per_cpu[0]);
        expect(per_cpu[1] == 0, "%u switches on CPUs outside the mask", per_cpu[1]);
        verdict();
}

/* Perfetto: "As soon as a rule matches (the rules are processed in order), its `allow`
 * field will be used as the outcome ... If an event does not match any rule, it will be
 * allowed by default"; atrace_msg matches "<type>|pid|<prefix>...". */
static void test_print_filter(void) {
        g_auto(Rec) r = {};
        g_auto(Trace) t = {};
        g_autofree char *cfg = ftrace_config("", (const char *const[]) { "ftrace/print", NULL },
                "  print_filter {\n"
                "    rules { prefix: \"tbkeep\" allow: true }\n"
                "    rules { atrace_msg { type: \"B\" prefix: \"tbatrace\" } allow: true }\n"
                "    rules { prefix: \"tbdeny\" allow: false }\n"
                "    rules { atrace_msg { type: \"C\" prefix: \"\" } allow: false }\n"
                "  }\n");
        static const struct { const char *text; bool kept; } markers[] = {
                { "tbkeep-1", true }, { "B|123|tbatrace-x", true }, { "tbdeny-1", false },
                { "C|42|counter|7", false }, { "B|12x|tbatrace", true /* no rule matches: allowed */ },
                { "tbother", true },
        };
        bool seen[G_N_ELEMENTS(markers)] = {};
        int fd;

        rec_start(&r, "tbuser", "print.pftrace", cfg);
        fd = marker_open(&r);
        for (size_t i = 0; i < G_N_ELEMENTS(markers); i++)
                marker_write(fd, markers[i].text);
        close(fd);
        g_usleep(300 * 1000);
        g_hash_table_unref(rec_stop(&r));
        trace_load(r.out, false, &t);
        for (guint i = 0; i < t.evs->len; i++) {
                g_autofree char *buf = EV(&t, i)->kind == EV_PRINT ? ev_str(EV(&t, i), 2) : NULL;

                for (size_t m = 0; buf && m < G_N_ELEMENTS(markers); m++)
                        seen[m] = seen[m] || g_str_has_prefix(buf, markers[m].text);
        }
        for (size_t m = 0; m < G_N_ELEMENTS(markers); m++)
                expect(seen[m] == markers[m].kept, "marker \"%s\" %s", markers[m].text,
                       markers[m].kept ? "is missing" : "passed the filter");
        verdict();
}

static guint64 clock_ns(clockid_t id) {
        struct timespec ts;

        clock_gettime(id, &ts);
        return (guint64) ts.tv_sec * 1000000000ull + (guint64) ts.tv_nsec;
}

/* Perfetto: "overrides the default timestamp clock and uses a raw hardware based
 * monotonic clock"; trace_processor reads FtraceEventBundle.ftrace_clock MONO_RAW (4)
 * and converts through the ClockSnapshot's MONOTONIC_RAW. */
static void test_monotonic_raw(void) {
        g_auto(Rec) r = {};
        g_auto(Trace) t = {};
        g_autofree char *cfg = ftrace_config("", (const char *const[]) { "ftrace/print", NULL },
                                             "  use_monotonic_raw_clock: true\n");
        g_autofree char *clock = NULL;
        guint64 before, after, ts = 0;
        guint bundles = 0, mono_raw = 0;
        int fd;

        rec_start(&r, "tbuser", "monoraw.pftrace", cfg);
        clock = read_instance_file(&r, "trace_clock");
        expect(strstr(clock, "[mono_raw]") != NULL, "trace_clock is '%s'", clock);
        fd = marker_open(&r);
        before = clock_ns(CLOCK_MONOTONIC_RAW);
        marker_write(fd, "tb-monoraw");
        after = clock_ns(CLOCK_MONOTONIC_RAW);
        close(fd);
        g_usleep(300 * 1000);
        g_hash_table_unref(rec_stop(&r));
        trace_load(r.out, false, &t);
        for (guint i = 0; i < t.bundles->len; i++) {
                const Tracebus__FtraceEventBundle *b = BUNDLE(&t, i)->b;

                bundles++;
                mono_raw += b->has_ftrace_clock && b->ftrace_clock == TRACEBUS__FTRACE_CLOCK__FTRACE_CLOCK_MONO_RAW;
        }
        for (guint i = 0; i < t.evs->len; i++) {
                g_autofree char *buf = EV(&t, i)->kind == EV_PRINT ? ev_str(EV(&t, i), 2) : NULL;
                if (buf && g_str_has_prefix(buf, "tb-monoraw"))
                        ts = EV(&t, i)->ts;
        }
        note("%u of %u bundles MONO_RAW; marker at %" G_GUINT64_FORMAT " in [%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT
             "]\n", mono_raw, bundles, ts, before, after);
        expect(bundles > 0 && mono_raw == bundles, "%u of %u bundles say FTRACE_CLOCK_MONO_RAW", mono_raw, bundles);
        expect(ts >= before && ts <= after, "the marker's timestamp is not on CLOCK_MONOTONIC_RAW");
        verdict();
}

/* tracefs_options (Perfetto: "Options control the tracers or the trace output", e.g.
 * event-fork "to additionally trace events of children forked from" tids_to_trace), from
 * an allowlist: stacktrace would put raw kernel addresses in the records; it is warned
 * and left off. drain_buffer_percent (Perfetto: "read kernel ring buffers as soon as
 * they're filled past this percentage") is the instance's buffer_percent. */
static void test_instance_files(void) {
        g_auto(Rec) r = {};
        g_autofree char *cfg = ftrace_config("", (const char *const[]) { "sched/sched_switch", NULL },
                "  tracefs_options { name: \"event-fork\" state: STATE_ENABLED }\n"
                "  tracefs_options { name: \"overwrite\" state: STATE_DISABLED }\n"
                "  tracefs_options { name: \"record-cmd\" state: STATE_ENABLED }\n"
                "  tracefs_options { name: \"stacktrace\" state: STATE_ENABLED }\n"
                "  drain_buffer_percent: 30\n  buffer_size_lower_bound: true\n  buffer_size_kb: 512\n"
                "  preserve_ftrace_buffer: true\n  instance_name: \"hyp\"\n"
                "  initialize_ksyms_synchronously_for_testing: true\n  debug_ftrace_abi: true\n");
        static const struct { const char *file, *want; } files[] = {
                { "options/event-fork", "1" }, { "options/overwrite", "0" }, { "options/stacktrace", "0" },
                { "buffer_percent", "30" }, { "set_event_pid", "" },
        };
        g_autofree char *size = NULL;

        rec_start(&r, "tbuser", "files.pftrace", cfg);
        for (size_t i = 0; i < G_N_ELEMENTS(files); i++) {
                g_autofree char *v = read_instance_file(&r, files[i].file);
                expect(g_str_equal(v, files[i].want), "%s is '%s', not '%s'", files[i].file, v, files[i].want);
        }
        /* 512 KiB asked as a lower bound: the default 2 MiB (the kernel rounds up to pages). */
        size = read_instance_file(&r, "buffer_size_kb");
        expect(atoi(size) >= 2048 && atoi(size) < 2048 + 64, "buffer_size_kb is '%s', not 2048", size);
        g_hash_table_unref(rec_stop(&r));
        verdict();
}

/* disable_generic_events (Perfetto: "avoid enabling events that aren't statically known");
 * throttle_rss_stat (Perfetto: kmem/rss_stat_throttled "if present, and fall back to
 * kmem/rss_stat if not"). */
static void test_event_choices(void) {
        g_auto(Rec) r = {}, q = {};
        g_auto(Trace) t = {};
        g_autofree char *cfg = ftrace_config("", (const char *const[]) { "sched/sched_switch",
                                             "signal/signal_generate", NULL }, "  disable_generic_events: true\n");
        g_autofree char *rss = ftrace_config("", (const char *const[]) { "kmem/rss_stat", NULL },
                                             "  throttle_rss_stat: true\n");
        g_autofree char *sig = NULL, *sw = NULL, *rss_on = NULL, *throttled = NULL;
        g_auto(Trace) qt = {};
        guint generic = 0, rss_typed = 0, rss_generic = 0, rss_bad = 0;

        rec_start(&r, "tbuser", "nogeneric.pftrace", cfg);
        rec_start(&q, "tbuser", "rss.pftrace", rss);
        sig = read_instance_file(&r, "events/signal/signal_generate/enable");
        sw = read_instance_file(&r, "events/sched/sched_switch/enable");
        rss_on = read_instance_file(&q, "events/kmem/rss_stat/enable");
        throttled = g_build_filename(TRACEFS, "events/kmem/rss_stat_throttled", NULL);
        tb_sleep_scaled(300);   /* page faults: rss_stat events */
        g_hash_table_unref(rec_stop(&q));
        g_hash_table_unref(rec_stop(&r));
        trace_load(r.out, false, &t);
        /* rss_stat as Perfetto's RssStatFtraceEvent (313), what trace_processor turns into
         * mem.rss.* counters: a generic event never becomes one. */
        trace_load(q.out, false, &qt);
        for (guint i = 0; i < qt.evs->len; i++) {
                const Ev *e = EV(&qt, i);
                if (e->kind == EV_GENERIC && e->e->generic && g_str_equal(e->e->generic->event_name ?: "", "rss_stat"))
                        rss_generic++;
                if (!e->e || !e->e->rss_stat)
                        continue;
                rss_typed++;
                rss_bad += !e->e->rss_stat->has_member || e->e->rss_stat->member < 0 || e->e->rss_stat->member > 5 ||
                           !e->e->rss_stat->has_size || e->e->rss_stat->size < 0 || !e->e->rss_stat->has_mm_id;
        }
        note("rss_stat: %u typed, %u generic, %u malformed\n", rss_typed, rss_generic, rss_bad);
        expect(g_file_test(throttled, G_FILE_TEST_EXISTS) || (rss_typed > 0 && rss_generic == 0),
               "rss_stat: %u typed, %u generic events", rss_typed, rss_generic);
        expect(rss_bad == 0, "%u rss_stat events without member, size or mm_id", rss_bad);
        for (guint i = 0; i < t.evs->len; i++)
                generic += EV(&t, i)->kind == EV_GENERIC;
        expect(g_str_equal(sig, "0"), "signal_generate (generic) is enabled: '%s'", sig);
        expect(g_str_equal(sw, "1"), "sched_switch is not enabled: '%s'", sw);
        expect(generic == 0, "%u generic events in the trace", generic);
        /* Without rss_stat_throttled in this kernel, rss_stat itself (with a warning). */
        expect(g_file_test(throttled, G_FILE_TEST_EXISTS) || g_str_equal(rss_on, "1"),
               "kmem/rss_stat is not enabled: '%s'", rss_on);
        verdict();
}

/* Bad values: InvalidConfig, the field named in the message. */
static void test_bad_values(void) {
        static const struct { const char *extra, *field; } bad[] = {
                { "  tracing_cpumask: \"xyz\"\n", "tracing_cpumask" },
                { "  tracing_cpumask: \"0\"\n", "tracing_cpumask" },
                { "  tracing_cpumask: \"ffffffffffffffffffff\"\n", "tracing_cpumask" },
                { "  tids_to_trace: 0\n", "tids_to_trace" },
                { "  tracefs_options { name: \"event-fork\" }\n", "tracefs_options[0].state" },
                { "  tracefs_options { state: STATE_ENABLED }\n", "tracefs_options[0].name" },
                { "  drain_buffer_percent: 101\n", "drain_buffer_percent" },
                { "  print_filter { rules { allow: true } }\n", "print_filter.rules[0]" },
        };

        for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
                g_autofree char *cfg = ftrace_config("", (const char *const[]) { "sched/sched_switch", NULL },
                                                     bad[i].extra);
                g_autofree char *out = NULL, *full = NULL, *name = NULL;
                ClientSpec spec = { .user = "tbuser", .op = OP_START, .config = cfg, .output_fd = -1 };

                name = client_run_full(&spec, &out, &full);
                note("%s-> %s\n", bad[i].extra, full ? full : "(success)");
                expect(name && g_str_equal(name, TB_ERROR_INVALID_CONFIG), "%s: not InvalidConfig but %s",
                       bad[i].extra, full ? full : "success");
                expect(full && strstr(full, bad[i].field), "%s: the error does not name %s", bad[i].extra,
                       bad[i].field);
                if (!name && out)
                        root_stop(out);
        }
        verdict();
}

/* drain_buffer_percent (Perfetto: "read kernel ring buffers as soon as they're filled
 * past this percentage of occupancy"): two sessions at once, both with a small kernel
 * buffer and a 5 s drain period, through the same storm; the one with a 20% watermark
 * is woken by the kernel and must lose far less than the one that waits its period. */
static void test_drain_watermark(void) {
        g_auto(Rec) slow = {}, wm = {};
        const char *const events[] = { "sched/sched_switch", "sched/sched_waking", NULL };
        const char *common = "  buffer_size_kb: 256\n  drain_period_ms: 5000\n";
        g_autofree char *extra = g_strconcat(common, "  drain_buffer_percent: 20\n", NULL);
        g_autofree char *slow_cfg = ftrace_config("buffers { size_kb: 65536 }\n", events, common);
        g_autofree char *wm_cfg = ftrace_config("buffers { size_kb: 65536 }\n", events, extra);
        g_autoptr(GHashTable) st_slow = NULL, st_wm = NULL;
        guint64 lost_slow, lost_wm, ev_slow, ev_wm;
        GPid storm;

        rec_start(&slow, "tbuser", "slow.pftrace", slow_cfg);
        rec_start(&wm, "tbuser", "watermark.pftrace", wm_cfg);
        storm = storm_start(200000, true);
        storm_wait(storm);
        st_wm = rec_stop(&wm);
        st_slow = rec_stop(&slow);
        lost_slow = stat_u64(st_slow, "KernelEventsLost");
        lost_wm = stat_u64(st_wm, "KernelEventsLost");
        ev_slow = stat_u64(st_slow, "Events");
        ev_wm = stat_u64(st_wm, "Events");
        note("period only: %" G_GUINT64_FORMAT " events, %" G_GUINT64_FORMAT " lost; watermark: %" G_GUINT64_FORMAT
             " events, %" G_GUINT64_FORMAT " lost\n", ev_slow, lost_slow, ev_wm, lost_wm);
        expect(lost_slow > 0, "the storm did not overrun the 5 s drain period: no comparison");
        expect(lost_wm * 4 < lost_slow, "the watermark session lost %" G_GUINT64_FORMAT " events, the other %"
               G_GUINT64_FORMAT ": not a quarter", lost_wm, lost_slow);
        verdict();
}

RECORDER_WRAP(test_syscall_events)
RECORDER_WRAP(test_tids_to_trace)
RECORDER_WRAP(test_tracing_cpumask)
RECORDER_WRAP(test_print_filter)
RECORDER_WRAP(test_monotonic_raw)
RECORDER_WRAP(test_instance_files)
RECORDER_WRAP(test_event_choices)
RECORDER_WRAP(test_bad_values)
RECORDER_WRAP(test_drain_watermark)

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();
        RECORDER_CASE("ftrace-options/syscall-events", test_syscall_events);
        RECORDER_CASE("ftrace-options/tids-to-trace", test_tids_to_trace);
        RECORDER_CASE("ftrace-options/tracing-cpumask", test_tracing_cpumask);
        RECORDER_CASE("ftrace-options/print-filter", test_print_filter);
        RECORDER_CASE("ftrace-options/monotonic-raw", test_monotonic_raw);
        RECORDER_CASE("ftrace-options/instance-files", test_instance_files);
        RECORDER_CASE("ftrace-options/event-choices", test_event_choices);
        RECORDER_CASE("ftrace-options/bad-values", test_bad_values);
        RECORDER_CASE("ftrace-options/drain-watermark", test_drain_watermark);
        return tb_test_run(TB_START_SERVICE);
}
