/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite, the recorder (tests/recorder.h says what every piece checks), part 08:
 * linux.sys_stats, linux.system_info and linux.sysfs_power recorded on this machine,
 * read back by the project's reader and checked field by field against what the
 * kernel says and what trace_processor's ParseSysStats / ParseCpuInfo need (meminfo
 * keys in KiB, vmstat keys, cpu_stat per CPU in ns, one cpufreq_khz per CPU by index,
 * CpuInfo once); the CPU-frequency config of Perfetto's docs; two sessions that ask
 * for the same counters at the same period share one read (the same sample times),
 * each filtered to its own counters, each with a final sample of its own at Stop. What
 * this machine lacks (a battery, cpufreq, thermal zones...) is a named warning both in
 * the session's Warnings property and in the trace (an instant on the service's track);
 * so are the slab counters of /proc/slabinfo, root's, for a caller without
 * org.tracebus.manage.
 *
 * Some configs carry a tiny ftrace source (sched/sched_process_exit) beside the pollers;
 * Perfetto's memory-counters config runs as its page writes it, without one.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "system-bus.h"
#include "tb-client.h"
#include "trace-file.h"
#include "trace-reader.h"
#include "trace.pb-c.h"
#include "recorder.h"
#include "session-util.h"

#define TINY_FTRACE "data_sources { config { name: \"linux.ftrace\" ftrace_config { ftrace_events: \"sched/sched_process_exit\" } } }\n"

#define SEQ_SYS_STATS 5u
#define SEQ_SYSTEM_INFO 7u
#define SEQ_POWER 8u

static bool exists(const char *path) {
        return access(path, R_OK) == 0;
}

/* A /proc/meminfo value in KiB, or 0. */
static guint64 meminfo_kib(const char *key) {
        g_autofree char *text = NULL;
        g_auto(GStrv) lines = NULL;
        size_t n = strlen(key);

        g_assert_true(g_file_get_contents("/proc/meminfo", &text, NULL, NULL));
        lines = g_strsplit(text, "\n", -1);
        for (guint i = 0; lines[i]; i++)
                if (strncmp(lines[i], key, n) == 0 && lines[i][n] == ':')
                        return g_ascii_strtoull(lines[i] + n + 1, NULL, 10);
        return 0;
}

static guint count_stat_cpus(void) {
        g_autofree char *text = NULL;
        g_auto(GStrv) lines = NULL;
        guint n = 0;

        g_assert_true(g_file_get_contents("/proc/stat", &text, NULL, NULL));
        lines = g_strsplit(text, "\n", -1);
        for (guint i = 0; lines[i]; i++)
                if (g_str_has_prefix(lines[i], "cpu") && g_ascii_isdigit(lines[i][3]))
                        n++;
        return n;
}

/* Whether the trace has the service's warning instant ("warning: ...") containing @needle. */
static bool trace_has_warning(const Trace *t, const char *needle) {
        for (guint i = 0; i < t->pkts->len; i++) {
                const Tracebus__TrackEvent *e = PKT(t, i)->p->track_event;

                if (e && e->type == TRACEBUS__TRACK_EVENT__TYPE__TYPE_INSTANT && e->name &&
                    g_str_has_prefix(e->name, "warning: ") && strstr(e->name, needle))
                        return true;
        }
        return false;
}

/* A source or group this machine lacks is said in both places, never silently dropped:
 * @warnings is the session's Warnings property, read while it recorded. */
static void expect_warning(const char *warnings, const Trace *t, const char *needle) {
        expect(warnings && strstr(warnings, needle), "Warnings do not say '%s': %s", needle, warnings ?: "(none)");
        expect(trace_has_warning(t, needle), "the trace has no warning instant saying '%s'", needle);
}

typedef struct {
        guint n_packets, n_cpu_info, n_battery, n_interrupt_info;
        guint meminfo, vmstat, cpu_stat, forks, irq, softirq, cpufreq, buddy, disk, psi, thermal, cpuidle, slab, devfreq;
        guint64 mem_total;
        guint n_mem_keys_max;         /* most meminfo entries in one packet */
        bool bad_seq, bad_ts, bad_cpu_stat, bad_key;
        GArray *times;                /* guint64: sys_stats packet timestamps */
        const Tracebus__CpuInfo *cpu_info;
        const Tracebus__InterruptInfo *interrupt_info;
} SysSummary;

static void sys_summary_clear(SysSummary *s) {
        if (s->times)
                g_array_unref(s->times);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(SysSummary, sys_summary_clear)

static void count_sys_stats(SysSummary *s, const Tracebus__TracePacket *p) {
        const Tracebus__SysStats *ss = p->sys_stats;
        guint64 tick = 1000000000ull / (guint64) sysconf(_SC_CLK_TCK);

        s->n_packets++;
        s->bad_seq |= p->trusted_packet_sequence_id != SEQ_SYS_STATS;
        s->bad_ts |= !p->has_timestamp || !ss->has_collection_end_timestamp || ss->collection_end_timestamp < p->timestamp;
        g_array_append_val(s->times, p->timestamp);
        s->meminfo += ss->n_meminfo > 0;
        s->n_mem_keys_max = MAX(s->n_mem_keys_max, (guint) ss->n_meminfo);
        for (size_t i = 0; i < ss->n_meminfo; i++) {
                s->bad_key |= ss->meminfo[i]->key < 1 || ss->meminfo[i]->key > 33;
                if (ss->meminfo[i]->key == TRACEBUS__MEMINFO_COUNTERS__MEMINFO_MEM_TOTAL)
                        s->mem_total = ss->meminfo[i]->value;
        }
        s->vmstat += ss->n_vmstat > 0;
        for (size_t i = 0; i < ss->n_vmstat; i++)
                s->bad_key |= ss->vmstat[i]->key < 1 || ss->vmstat[i]->key > 188;
        if (ss->n_cpu_stat > 0) {
                s->cpu_stat++;
                s->bad_cpu_stat |= ss->n_cpu_stat != count_stat_cpus();
                for (size_t i = 0; i < ss->n_cpu_stat; i++)
                        s->bad_cpu_stat |= !ss->cpu_stat[i]->has_cpu_id || ss->cpu_stat[i]->idle_ns % tick != 0 ||
                                ss->cpu_stat[i]->idle_ns == 0;
        }
        s->forks += ss->has_num_forks;
        s->irq += ss->has_num_irq_total && ss->n_num_irq > 0;
        s->softirq += ss->has_num_softirq_total && ss->n_num_softirq > 0;
        s->cpufreq += ss->n_cpufreq_khz > 0;
        s->buddy += ss->n_buddy_info > 0;
        s->disk += ss->n_disk_stat > 0;
        s->psi += ss->n_psi > 0;
        s->thermal += ss->n_thermal_zone > 0;
        s->cpuidle += ss->n_cpuidle_state > 0;
        s->slab += ss->n_slab_info > 0;
        s->devfreq += ss->n_devfreq > 0;
}

static void summarize(const Trace *t, SysSummary *s) {
        memset(s, 0, sizeof(*s));
        s->times = g_array_new(FALSE, FALSE, sizeof(guint64));
        for (guint i = 0; i < t->pkts->len; i++) {
                const Tracebus__TracePacket *p = PKT(t, i)->p;

                if (p->sys_stats)
                        count_sys_stats(s, p);
                if (p->cpu_info) {
                        s->n_cpu_info++;
                        s->cpu_info = p->cpu_info;
                        s->bad_seq |= p->trusted_packet_sequence_id != SEQ_SYSTEM_INFO;
                }
                if (p->interrupt_info) {
                        s->n_interrupt_info++;
                        s->interrupt_info = p->interrupt_info;
                        s->bad_seq |= p->trusted_packet_sequence_id != SEQ_SYSTEM_INFO;
                }
                if (p->battery) {
                        s->n_battery++;
                        s->bad_seq |= p->trusted_packet_sequence_id != SEQ_POWER;
                }
        }
}

/* Every group at 100 ms, CpuInfo, the batteries: what this machine has is recorded,
 * what it lacks is not (the config's warnings say so: tests/test-sys-stats.c). */
static void test_every_group(void) {
        const char *cfg = "buffers { size_kb: 16384 }\n" TINY_FTRACE
                "data_sources { config { name: \"linux.sys_stats\" sys_stats_config {\n"
                "  meminfo_period_ms: 100 vmstat_period_ms: 100 stat_period_ms: 100\n"
                "  devfreq_period_ms: 100 cpufreq_period_ms: 100 buddyinfo_period_ms: 100\n"
                "  diskstat_period_ms: 100 psi_period_ms: 100 thermal_period_ms: 100\n"
                "  cpuidle_period_ms: 100 slab_period_ms: 100 } } }\n"
                "data_sources { config { name: \"linux.system_info\" system_info_config { irq_names: true } } }\n"
                "data_sources { config { name: \"linux.sysfs_power\" } }\n";
        g_autoptr(GHashTable) st = NULL;
        g_auto(Trace) t = { 0 };
        g_auto(Rec) r = { 0 };
        g_auto(SysSummary) s = { 0 };
        g_autoptr(GError) error = NULL;
        g_autofree char *text = NULL, *warnings = NULL;
        guint64 mem_total = meminfo_kib("MemTotal");

        rec_start(&r, "root", "sys-stats-all.pftrace", cfg);
        g_usleep(1500 * 1000);
        warnings = rec_get(&r, "Warnings");
        st = rec_stop(&r);
        trace_load(r.out, false, &t);
        check_trace(&t, &(CheckOpts) { .closed = true });
        summarize(&t, &s);
        note("sys_stats packets %u: meminfo %u vmstat %u cpu_stat %u forks %u irq %u softirq %u cpufreq %u buddy %u "
             "disk %u psi %u thermal %u cpuidle %u slab %u devfreq %u; cpu_info %u battery %u\n", s.n_packets,
             s.meminfo, s.vmstat, s.cpu_stat, s.forks, s.irq, s.softirq, s.cpufreq, s.buddy, s.disk, s.psi, s.thermal,
             s.cpuidle, s.slab, s.devfreq, s.n_cpu_info, s.n_battery);

        expect(!s.bad_seq, "a sys_stats/cpu_info/battery packet is on the wrong sequence");
        expect(!s.bad_ts, "a sys_stats packet lacks its timestamp or collection_end_timestamp");
        expect(!s.bad_key, "a meminfo or vmstat key is outside v58's enums");
        /* 1.5 s at 100 ms: about 15 reads of each group. */
        expect(s.meminfo >= 8, "%u meminfo samples in 1.5 s at 100 ms", s.meminfo);
        expect(s.mem_total == mem_total, "MemTotal %" G_GUINT64_FORMAT " KiB, /proc/meminfo says %" G_GUINT64_FORMAT,
               s.mem_total, mem_total);
        expect(s.n_mem_keys_max >= 20, "only %u meminfo keys in a sample", s.n_mem_keys_max);
        expect(s.vmstat >= 8 && s.cpu_stat >= 8 && s.forks >= 8 && s.irq >= 8 && s.softirq >= 8,
               "stat/vmstat groups missing");
        expect(!s.bad_cpu_stat, "cpu_stat: not one entry per CPU of /proc/stat, or times not in ns of ticks");
        expect(s.buddy >= 8 && s.disk >= 8, "buddyinfo/diskstats missing");
        expect((s.psi >= 8) == exists("/proc/pressure/cpu"), "psi %u, /proc/pressure %s", s.psi,
               exists("/proc/pressure/cpu") ? "exists" : "missing");
        expect((s.slab >= 8) == exists("/proc/slabinfo"), "slab %u", s.slab);
        expect((s.cpufreq > 0) == exists("/sys/devices/system/cpu/cpu0/cpufreq"), "cpufreq %u", s.cpufreq);
        expect((s.cpuidle > 0) == exists("/sys/devices/system/cpu/cpu0/cpuidle/state0"), "cpuidle %u", s.cpuidle);
        expect((s.thermal > 0) == exists("/sys/class/thermal/thermal_zone0"), "thermal %u", s.thermal);
        expect(s.devfreq == 0 || exists("/sys/class/devfreq"), "devfreq without /sys/class/devfreq");
        expect(s.n_battery == 0 || exists("/sys/class/power_supply"), "battery counters without power_supply");
        /* What is missing here is named (the probe paths of service/sources/sysstats/sys-stats-config.c). */
        if (s.n_battery == 0)
                expect_warning(warnings, &t, "no battery: linux.sysfs_power skipped");
        if (!exists("/sys/devices/system/cpu/cpu0/cpufreq"))
                expect_warning(warnings, &t, "linux.sys_stats cpufreq: this kernel has no");
        if (!exists("/sys/devices/system/cpu/cpu0/cpuidle/state0"))
                expect_warning(warnings, &t, "linux.sys_stats cpuidle: this kernel has no");
        if (!exists("/sys/class/thermal/thermal_zone0"))
                expect_warning(warnings, &t, "linux.sys_stats thermal: this kernel has no");
        if (s.devfreq == 0)
                expect_warning(warnings, &t, "linux.sys_stats devfreq: this kernel has no");

        expect(s.n_cpu_info == 1, "%u CpuInfo packets, expected 1", s.n_cpu_info);
        /* With irq_names, the IRQ names of /proc/interrupts, once (TracePacket.interrupt_info). */
        expect(s.n_interrupt_info == 1, "%u InterruptInfo packets, expected 1", s.n_interrupt_info);
        if (s.interrupt_info)
                expect(s.interrupt_info->n_irq_mapping > 0 && s.interrupt_info->irq_mapping[0]->has_irq_id &&
                       s.interrupt_info->irq_mapping[0]->name && *s.interrupt_info->irq_mapping[0]->name,
                       "InterruptInfo without a named IRQ");
        if (s.cpu_info) {
                g_autofree char *cap = NULL;

                expect(s.cpu_info->n_cpus == (size_t) sysconf(_SC_NPROCESSORS_CONF), "CpuInfo has %zu CPUs",
                       s.cpu_info->n_cpus);
                expect(s.cpu_info->n_cpus > 0 && s.cpu_info->cpus[0]->processor && *s.cpu_info->cpus[0]->processor,
                       "CpuInfo without a processor name");
                if (g_file_get_contents("/sys/devices/system/cpu/cpu0/cpu_capacity", &cap, NULL, NULL))
                        expect(s.cpu_info->n_cpus > 0 && s.cpu_info->cpus[0]->has_capacity &&
                               s.cpu_info->cpus[0]->capacity == g_ascii_strtoull(cap, NULL, 10),
                               "cpu0's capacity is not cpu_capacity's");
        }

        /* protoc agrees, by name. */
        g_assert_true(tb_trace_protoc_decode(tb_bus()->source_dir, r.out, &text, &error));
        expect(strstr(text, "sys_stats {") && strstr(text, "key: MEMINFO_MEM_TOTAL") &&
               strstr(text, "key: VMSTAT_NR_FREE_PAGES") && strstr(text, "cpu_stat {") &&
               strstr(text, "collection_end_timestamp:") && strstr(text, "cpu_info {"),
               "protoc --decode does not show the sys_stats and cpu_info fields by name");
        verdict();
}

/* Perfetto's CPU-frequency config (docs/data-sources/cpu-freq.md, as
 * tests/fixtures/textproto/cpu-freq.pbtxt has it): the ftrace events, cpufreq polling
 * every 500 ms and linux.system_info. A machine without cpufreq records no cpufreq_khz
 * (and warns: tests/test-sys-stats.c); one with it, one value per CPU. */
static void test_cpufreq_doc_config(void) {
        g_autofree char *cfg = fixture_config("cpu-freq.pbtxt");
        g_auto(Trace) t = { 0 };
        g_auto(Rec) r = { 0 };
        g_auto(SysSummary) s = { 0 };
        g_autoptr(GHashTable) st = NULL;
        bool has_cpufreq = exists("/sys/devices/system/cpu/cpu0/cpufreq");
        g_autofree char *warnings = NULL;

        rec_start(&r, "tbuser", "sys-stats-cpufreq.pftrace", cfg);
        g_usleep(1300 * 1000);
        warnings = rec_get(&r, "Warnings");
        st = rec_stop(&r);
        trace_load(r.out, false, &t);
        check_trace(&t, &(CheckOpts) { .closed = true });
        summarize(&t, &s);
        note("cpufreq: this machine %s cpufreq; %u sys_stats packets, %u with cpufreq_khz; %u CpuInfo\n",
             has_cpufreq ? "has" : "has no", s.n_packets, s.cpufreq, s.n_cpu_info);
        if (has_cpufreq)
                expect(s.cpufreq >= 2, "cpufreq exists but only %u samples in 1.3 s at 500 ms", s.cpufreq);
        else {
                expect(s.n_packets == 0, "no cpufreq here, yet %u sys_stats packets", s.n_packets);
                expect_warning(warnings, &t, "linux.sys_stats cpufreq: this kernel has no");
        }
        expect(s.n_cpu_info == 1, "%u CpuInfo packets for linux.system_info", s.n_cpu_info);
        /* No irq_names in this config, so no InterruptInfo (as traced_probes). */
        expect(s.n_interrupt_info == 0, "%u InterruptInfo packets without irq_names", s.n_interrupt_info);
        verdict();
}

/* Whether this kernel's /proc/vmstat has @key. */
static bool vmstat_has(const char *key) {
        g_autofree char *text = NULL, *line = g_strconcat("\n", key, " ", NULL);

        g_assert_true(g_file_get_contents("/proc/vmstat", &text, NULL, NULL));
        return g_str_has_prefix(text, line + 1) || strstr(text, line);
}

/* Perfetto's memory-counters config (tests/fixtures/textproto/memory-sys-stats.pbtxt)
 * as the page writes it, linux.sys_stats alone, at 1 s: one packet a second with exactly
 * the counters it names, cpu times and forks but no interrupts; NR_ALLOC_BATCH, gone from
 * modern kernels, is a named warning. */
static void test_memory_doc_config(void) {
        g_autofree char *cfg = fixture_config("memory-sys-stats.pbtxt"), *warnings = NULL;
        g_auto(Trace) t = { 0 };
        g_auto(Rec) r = { 0 };
        g_autoptr(GHashTable) st = NULL;
        guint n = 0, bad = 0;

        rec_start(&r, "tbuser", "sys-stats-memory.pftrace", cfg);
        g_usleep(1500 * 1000);
        warnings = rec_get(&r, "Warnings");
        st = rec_stop(&r);
        /* No check_trace(): a trace without the ftrace data source has no FtraceStats, as
         * Perfetto's has none (test-recorder-buffers' 05-no-ftrace checks such a trace). */
        trace_load(r.out, false, &t);
        if (!vmstat_has("nr_alloc_batch"))
                expect_warning(warnings, &t, "VMSTAT_NR_ALLOC_BATCH");
        for (guint i = 0; i < t.pkts->len; i++) {
                const Tracebus__SysStats *ss = PKT(&t, i)->p->sys_stats;

                if (!ss)
                        continue;
                /* One packet a tick with every group due, as traced_probes writes them. */
                n++;
                bad += ss->n_meminfo != 3 || ss->n_vmstat < 3 || ss->n_vmstat > 4 || ss->n_cpu_stat == 0 ||
                        !ss->has_num_forks || ss->has_num_irq_total || ss->n_num_softirq > 0;
                for (size_t k = 0; k < ss->n_vmstat; k++)
                        bad += ss->vmstat[k]->key > TRACEBUS__VMSTAT_COUNTERS__VMSTAT_NR_ACTIVE_ANON;
        }
        note("memory config: %u sys_stats packets, %u not as asked\n", n, bad);
        expect(n >= 2, "%u samples in 1.5 s at 1 s", n);
        expect(bad == 0, "%u samples carry other counters than the config names", bad);
        verdict();
}

/* Two sessions, same group and period: one read, so the very same sample times; each
 * gets its own counters (MemFree only, or everything). A third at another period
 * reads on its own. */
static void test_shared_read(void) {
        const char *all = TINY_FTRACE
                "data_sources { config { name: \"linux.sys_stats\" sys_stats_config { meminfo_period_ms: 50 } } }\n";
        const char *one = TINY_FTRACE
                "data_sources { config { name: \"linux.sys_stats\" sys_stats_config { meminfo_period_ms: 50\n"
                "  meminfo_counters: MEMINFO_MEM_FREE } } }\n";
        const char *other = TINY_FTRACE
                "data_sources { config { name: \"linux.sys_stats\" sys_stats_config { meminfo_period_ms: 70 } } }\n";
        g_auto(Trace) ta = { 0 }, tb = { 0 }, tc = { 0 };
        g_auto(Rec) ra = { 0 }, rb = { 0 }, rc = { 0 };
        g_auto(SysSummary) sa = { 0 }, sb = { 0 }, sc = { 0 };
        g_autoptr(GHashTable) st1 = NULL, st2 = NULL, st3 = NULL;
        g_autoptr(GHashTable) times_a = g_hash_table_new(g_int64_hash, g_int64_equal);
        guint shared = 0, with_other = 0;

        rec_start(&ra, "root", "sys-stats-shared-a.pftrace", all);
        rec_start(&rb, "tbuser", "sys-stats-shared-b.pftrace", one);
        rec_start(&rc, "tbuser", "sys-stats-shared-c.pftrace", other);
        g_usleep(1000 * 1000);
        st3 = rec_stop(&rc);
        st2 = rec_stop(&rb);
        st1 = rec_stop(&ra);
        trace_load(ra.out, false, &ta);
        trace_load(rb.out, false, &tb);
        trace_load(rc.out, false, &tc);
        summarize(&ta, &sa);
        summarize(&tb, &sb);
        summarize(&tc, &sc);
        for (guint i = 0; i < sa.times->len; i++)
                g_hash_table_add(times_a, &g_array_index(sa.times, guint64, i));
        for (guint i = 0; i < sb.times->len; i++)
                shared += g_hash_table_contains(times_a, &g_array_index(sb.times, guint64, i));
        for (guint i = 0; i < sc.times->len; i++)
                with_other += g_hash_table_contains(times_a, &g_array_index(sc.times, guint64, i));
        note("shared read: A %u samples, B %u, %u of B's at A's very times; C (70 ms) %u, %u at A's times\n",
             sa.times->len, sb.times->len, shared, sc.times->len, with_other);
        expect(sb.times->len >= 10, "B has only %u samples in 1 s at 50 ms", sb.times->len);
        /* While both recorded, every sample of B is one of A's, but the last: B's own
         * final sample at its Stop. */
        expect(shared + 1 == sb.times->len, "%u of B's %u samples are not A's reads (1 expected: its final one)",
               sb.times->len - shared, sb.times->len);
        expect(with_other == 0, "C at another period shares %u sample times with A", with_other);
        expect(sb.n_mem_keys_max == 1, "B asked for MemFree only, got up to %u keys", sb.n_mem_keys_max);
        expect(sa.n_mem_keys_max >= 20, "A asked for every key, got up to %u", sa.n_mem_keys_max);
        verdict();
}

/* /proc/slabinfo is root's alone: a caller with org.tracebus.record only (tbuser) gets no
 * slab counters, and a warning saying why, while the rest of its sys_stats records; one
 * with org.tracebus.manage (tbadmin) gets them, without that warning. */
static void test_slab_rights(void) {
        const char *cfg = TINY_FTRACE
                "data_sources { config { name: \"linux.sys_stats\" sys_stats_config { meminfo_period_ms: 100\n"
                "  slab_period_ms: 100 } } }\n";
        const char *why = "slab_period_ms: /proc/slabinfo is readable by root only";
        g_auto(Trace) tu = { 0 }, ta = { 0 };
        g_auto(Rec) ru = { 0 }, ra = { 0 };
        g_auto(SysSummary) su = { 0 }, sa = { 0 };
        g_autoptr(GHashTable) st1 = NULL, st2 = NULL;
        g_autofree char *wu = NULL, *wa = NULL;

        g_assert_true(exists("/proc/slabinfo"));   /* the test runs as root, who reads it */
        rec_start(&ru, "tbuser", "sys-stats-slab-user.pftrace", cfg);
        rec_start(&ra, "tbadmin", "sys-stats-slab-admin.pftrace", cfg);
        g_usleep(1000 * 1000);
        wu = rec_get(&ru, "Warnings");
        wa = rec_get(&ra, "Warnings");
        st1 = rec_stop(&ru);
        st2 = rec_stop(&ra);
        trace_load(ru.out, false, &tu);
        trace_load(ra.out, false, &ta);
        check_trace(&tu, &(CheckOpts) { .closed = true });
        check_trace(&ta, &(CheckOpts) { .closed = true });
        summarize(&tu, &su);
        summarize(&ta, &sa);
        note("slab rights: tbuser %u slab samples of %u packets, tbadmin %u of %u\n", su.slab, su.n_packets, sa.slab,
             sa.n_packets);
        expect(su.slab == 0, "tbuser (record only) got %u samples of root's /proc/slabinfo", su.slab);
        expect(su.meminfo >= 5, "tbuser's meminfo stopped with the slab counters: %u samples", su.meminfo);
        expect_warning(wu, &tu, why);
        expect(sa.slab >= 5, "tbadmin (org.tracebus.manage) got only %u slab samples", sa.slab);
        expect(!wa || !strstr(wa, why), "tbadmin is told the slab counters are skipped: %s", wa);
        verdict();
}

RECORDER_WRAP(test_every_group)
RECORDER_WRAP(test_cpufreq_doc_config)
RECORDER_WRAP(test_memory_doc_config)
RECORDER_WRAP(test_shared_read)
RECORDER_WRAP(test_slab_rights)

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();
        RECORDER_CASE("08-sys-stats-every-group", test_every_group);
        RECORDER_CASE("08-sys-stats-cpufreq-doc-config", test_cpufreq_doc_config);
        RECORDER_CASE("08-sys-stats-memory-doc-config", test_memory_doc_config);
        RECORDER_CASE("08-sys-stats-shared-read", test_shared_read);
        RECORDER_CASE("08-sys-stats-slab-rights", test_slab_rights);
        return tb_test_run(TB_START_SERVICE);
}
