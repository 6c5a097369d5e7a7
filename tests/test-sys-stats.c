/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit suite: linux.sys_stats, linux.sysfs_power and linux.system_info readers against
 * the fixture files of tests/fixtures/sysstats (the readers' directory is a parameter
 * for the tests; the service passes fixed /proc and /sys paths), and the config's
 * warnings: a period under 10 ms raised, a counter tracebus does not read, no battery. */
#include <stdlib.h>
#include <string.h>

/* Before glib.h, which redefines MIN and MAX over macro.h's. */
#include "session-config.h"
#include "sys-stats.h"

#include <glib.h>

static char *fixture(const char *name) {
        return g_build_filename(g_getenv("TRACEBUS_SOURCE_DIR"), "tests", "fixtures", "sysstats", name, NULL);
}

static char *fixture_text(const char *name) {
        g_autofree char *path = fixture(name);
        char *text = NULL;

        g_assert_cmpint(sys_stats_read_file(path, &text, NULL), ==, 0);
        return text;
}

static Tracebus__SysStats *new_sample(void) {
        Tracebus__SysStats *s = g_malloc0(sizeof(*s));

        tracebus__sys_stats__init(s);
        return s;
}

static void test_meminfo(void) {
        g_autofree char *text = fixture_text("meminfo");
        Tracebus__SysStats *s = new_sample();

        g_assert_cmpint(sys_stats_parse_meminfo(text, s), ==, 0);
        /* Known keys only, in file order, in KiB as the kernel writes them. */
        g_assert_cmpuint(s->n_meminfo, ==, 5);
        g_assert_cmpint(s->meminfo[0]->key, ==, TRACEBUS__MEMINFO_COUNTERS__MEMINFO_MEM_TOTAL);
        g_assert_cmpuint(s->meminfo[0]->value, ==, 8000000);
        g_assert_cmpint(s->meminfo[1]->key, ==, TRACEBUS__MEMINFO_COUNTERS__MEMINFO_MEM_FREE);
        g_assert_cmpuint(s->meminfo[1]->value, ==, 1234567);
        g_assert_cmpint(s->meminfo[3]->key, ==, TRACEBUS__MEMINFO_COUNTERS__MEMINFO_ACTIVE_ANON);
        g_assert_cmpuint(s->meminfo[3]->value, ==, 11111);
        g_assert_cmpint(s->meminfo[4]->key, ==, TRACEBUS__MEMINFO_COUNTERS__MEMINFO_COMMITED_AS);
        g_assert_true(s->meminfo[4]->has_key && s->meminfo[4]->has_value);
        tracebus__sys_stats__free_unpacked(s, NULL);
}

static void test_vmstat(void) {
        g_autofree char *text = fixture_text("vmstat");
        Tracebus__SysStats *s = new_sample();
        bool free_pages = false, pgfault = false;

        g_assert_cmpint(sys_stats_parse_vmstat(text, s), ==, 0);
        for (size_t i = 0; i < s->n_vmstat; i++) {
                g_assert_cmpint(s->vmstat[i]->key, >, 0);
                if (s->vmstat[i]->key == TRACEBUS__VMSTAT_COUNTERS__VMSTAT_NR_FREE_PAGES)
                        free_pages = s->vmstat[i]->value == 308641;
                if ((int) s->vmstat[i]->key == 49)          /* VMSTAT_PGFAULT */
                        pgfault = s->vmstat[i]->value == 99999;
        }
        g_assert_true(free_pages);
        /* Once config.proto declares all of v58's VmstatCounters. */
        g_assert_true(pgfault || !sys_stats_vmstat_key_known(49));
        /* not_a_counter is no key; the others depend on how many keys config.proto has. */
        g_assert_cmpuint(s->n_vmstat, >=, 1);
        g_assert_cmpuint(s->n_vmstat, <=, 4);
        tracebus__sys_stats__free_unpacked(s, NULL);
}

static void test_stat(void) {
        g_autofree char *text = fixture_text("stat");
        Tracebus__SysStats *s = new_sample();

        /* 100 ticks a second: 10 ms, 10,000,000 ns a tick. */
        g_assert_cmpint(sys_stats_parse_stat(text, 10000000, s), ==, 0);
        g_assert_cmpuint(s->n_cpu_stat, ==, 2);          /* not the "cpu" sum */
        g_assert_cmpuint(s->cpu_stat[0]->cpu_id, ==, 0);
        g_assert_cmpuint(s->cpu_stat[0]->user_ns, ==, 600000000ull);
        g_assert_cmpuint(s->cpu_stat[0]->user_nice_ns, ==, 10000000ull);
        g_assert_cmpuint(s->cpu_stat[0]->system_mode_ns, ==, 200000000ull);
        g_assert_cmpuint(s->cpu_stat[0]->idle_ns, ==, 20000000000ull);
        g_assert_cmpuint(s->cpu_stat[0]->io_wait_ns, ==, 30000000ull);
        g_assert_cmpuint(s->cpu_stat[0]->irq_ns, ==, 40000000ull);
        g_assert_cmpuint(s->cpu_stat[0]->softirq_ns, ==, 50000000ull);
        g_assert_cmpuint(s->cpu_stat[0]->steal_ns, ==, 60000000ull);
        g_assert_cmpuint(s->cpu_stat[1]->cpu_id, ==, 1);
        /* IRQs that fired (1 and 3), as Perfetto; every softirq. */
        g_assert_cmpuint(s->num_irq_total, ==, 1000);
        g_assert_cmpuint(s->n_num_irq, ==, 2);
        g_assert_cmpint(s->num_irq[0]->irq, ==, 1);
        g_assert_cmpuint(s->num_irq[0]->count, ==, 900);
        g_assert_cmpint(s->num_irq[1]->irq, ==, 3);
        g_assert_cmpuint(s->num_softirq_total, ==, 77);
        g_assert_cmpuint(s->n_num_softirq, ==, 3);
        g_assert_cmpuint(s->num_softirq[2]->count, ==, 7);
        g_assert_true(s->has_num_forks);
        g_assert_cmpuint(s->num_forks, ==, 4242);
        tracebus__sys_stats__free_unpacked(s, NULL);
}

static void test_proc_others(void) {
        g_autofree char *buddy = fixture_text("buddyinfo"), *disk = fixture_text("diskstats");
        g_autofree char *psi = fixture_text("pressure-memory"), *slab = fixture_text("slabinfo");
        Tracebus__SysStats *s = new_sample();

        g_assert_cmpint(sys_stats_parse_buddyinfo(buddy, s), ==, 0);
        g_assert_cmpuint(s->n_buddy_info, ==, 2);
        g_assert_cmpstr(s->buddy_info[0]->node, ==, "0");
        g_assert_cmpstr(s->buddy_info[0]->zone, ==, "DMA");
        g_assert_cmpuint(s->buddy_info[0]->n_order_pages, ==, 3);
        g_assert_cmpuint(s->buddy_info[1]->order_pages[1], ==, 50);

        g_assert_cmpint(sys_stats_parse_diskstats(disk, s), ==, 0);
        g_assert_cmpuint(s->n_disk_stat, ==, 2);
        g_assert_cmpstr(s->disk_stat[0]->device_name, ==, "sda");
        g_assert_cmpuint(s->disk_stat[0]->read_sectors, ==, 800);
        g_assert_cmpuint(s->disk_stat[0]->read_time_ms, ==, 30);
        g_assert_cmpuint(s->disk_stat[0]->write_sectors, ==, 1600);
        g_assert_cmpuint(s->disk_stat[0]->write_time_ms, ==, 40);
        g_assert_cmpuint(s->disk_stat[0]->discard_sectors, ==, 64);
        g_assert_cmpuint(s->disk_stat[0]->discard_time_ms, ==, 9);
        g_assert_cmpuint(s->disk_stat[0]->flush_count, ==, 7);
        g_assert_cmpuint(s->disk_stat[0]->flush_time_ms, ==, 11);
        g_assert_false(s->disk_stat[1]->has_discard_sectors);   /* an older kernel's line */

        g_assert_cmpint(sys_stats_parse_psi(psi, "memory", s), ==, 0);
        g_assert_cmpuint(s->n_psi, ==, 2);
        g_assert_cmpint(s->psi[0]->resource, ==, TRACEBUS__SYS_STATS__PSI_SAMPLE__PSI_RESOURCE__PSI_RESOURCE_MEMORY_SOME);
        g_assert_cmpuint(s->psi[0]->total_ns, ==, 1500000);
        g_assert_cmpint(s->psi[1]->resource, ==, TRACEBUS__SYS_STATS__PSI_SAMPLE__PSI_RESOURCE__PSI_RESOURCE_MEMORY_FULL);

        g_assert_cmpint(sys_stats_parse_slabinfo(slab, s), ==, 0);
        g_assert_cmpuint(s->n_slab_info, ==, 2);
        g_assert_cmpstr(s->slab_info[1]->name, ==, "task_struct");
        g_assert_cmpuint(s->slab_info[1]->pages_per_slab, ==, 8);
        g_assert_cmpuint(s->slab_info[1]->num_slabs, ==, 64);
        tracebus__sys_stats__free_unpacked(s, NULL);
}

static void test_sysfs(void) {
        g_autofree char *cpu = fixture("cpu"), *thermal = fixture("thermal"), *devfreq = fixture("devfreq");
        Tracebus__SysStats *s = new_sample();

        /* The governor's frequency (scaling_cur_freq), as traced_probes; cpu0's
         * cpuinfo_cur_freq, which only root may read, is not; cpu2: none, 0. */
        g_assert_cmpint(sys_stats_read_cpufreq(cpu, s), ==, 0);
        g_assert_cmpuint(s->n_cpufreq_khz, ==, 3);
        g_assert_cmpuint(s->cpufreq_khz[0], ==, 1700000);
        g_assert_cmpuint(s->cpufreq_khz[1], ==, 1200000);
        g_assert_cmpuint(s->cpufreq_khz[2], ==, 0);

        g_assert_cmpint(sys_stats_read_cpuidle(cpu, s), ==, 0);
        g_assert_cmpuint(s->n_cpuidle_state, ==, 3);
        g_assert_cmpuint(s->cpuidle_state[0]->n_cpuidle_state_entry, ==, 2);
        g_assert_cmpstr(s->cpuidle_state[0]->cpuidle_state_entry[1]->state, ==, "C1");
        g_assert_cmpuint(s->cpuidle_state[0]->cpuidle_state_entry[1]->duration_us, ==, 987654);
        g_assert_cmpuint(s->cpuidle_state[1]->n_cpuidle_state_entry, ==, 0);

        g_assert_cmpint(sys_stats_read_thermal(thermal, s), ==, 0);
        g_assert_cmpuint(s->n_thermal_zone, ==, 1);              /* not the cooling device */
        g_assert_cmpstr(s->thermal_zone[0]->name, ==, "thermal_zone0");
        g_assert_cmpstr(s->thermal_zone[0]->type, ==, "x86_pkg_temp");
        g_assert_cmpuint(s->thermal_zone[0]->temp, ==, 45);      /* degrees, from millidegrees */

        g_assert_cmpint(sys_stats_read_devfreq(devfreq, s), ==, 0);
        g_assert_cmpuint(s->n_devfreq, ==, 1);
        g_assert_cmpstr(s->devfreq[0]->key, ==, "gpu0");
        g_assert_cmpuint(s->devfreq[0]->value, ==, 500000000);
        tracebus__sys_stats__free_unpacked(s, NULL);
}

static void test_power(void) {
        g_autofree char *root = fixture("power_supply");
        Tracebus__BatteryCounters **b = NULL;
        size_t n = 0;

        /* BAT0 only: AC is mains, BAT1 is not present. */
        g_assert_cmpint(power_count_batteries(root), ==, 1);
        g_assert_cmpint(power_read_batteries(root, &b, &n), ==, 0);
        g_assert_cmpuint(n, ==, 1);
        g_assert_null(b[0]->name);                               /* named only among several */
        g_assert_true(b[0]->has_charge_counter_uah);
        g_assert_cmpint(b[0]->charge_counter_uah, ==, 3000000);
        g_assert_cmpfloat(b[0]->capacity_percent, ==, 87.0);
        g_assert_cmpint(b[0]->current_ua, ==, -250000);
        g_assert_false(b[0]->has_current_avg_ua);
        g_assert_cmpint(b[0]->voltage_uv, ==, 12000000);
        g_assert_cmpint(b[0]->energy_counter_uwh, ==, 40000000);
        power_batteries_free(b, n);

        g_autofree char *missing = fixture("no-such-dir");
        g_assert_cmpint(power_count_batteries(missing), ==, 0);
}

/* /proc/interrupts as traced_probes reads it (x86 IO-APIC and MSI lines,
 * ARM GIC lines, a name of several words); lines without a trigger or a number skipped. */
static void test_interrupts(void) {
        static const struct { int32_t id; const char *name; } want[] = {
                { 1, "i8042" }, { 9, "acpi" }, { 24, "ACPI:Ged" }, { 28, "virtio0-config" },
                { 11, "arch_timer" }, { 12, "cs40l26 IRQ1 Controller" },
        };
        g_autofree char *path = fixture("interrupts"), *missing = fixture("no-such-file");
        Tracebus__InterruptInfo *info = NULL;
        uint8_t *buf;
        size_t len;

        g_assert_cmpint(system_info_read_interrupts(path, &info), ==, 0);
        g_assert_cmpuint(info->n_irq_mapping, ==, G_N_ELEMENTS(want));
        for (size_t i = 0; i < G_N_ELEMENTS(want); i++) {
                g_assert_true(info->irq_mapping[i]->has_irq_id);
                g_assert_cmpint(info->irq_mapping[i]->irq_id, ==, want[i].id);
                g_assert_cmpstr(info->irq_mapping[i]->name, ==, want[i].name);
        }
        /* On the wire: InterruptInfo.irq_mapping = 1 { irq_id = 1 (varint), name = 2 }. */
        len = tracebus__interrupt_info__get_packed_size(info);
        buf = g_malloc(len);
        tracebus__interrupt_info__pack(info, buf);
        g_assert_cmpuint(len, >, 6);
        g_assert_cmpuint(buf[0], ==, (1 << 3) | 2);
        g_assert_cmpuint(buf[2], ==, (1 << 3) | 0);
        g_assert_cmpuint(buf[3], ==, 1);
        g_assert_cmpuint(buf[4], ==, (2 << 3) | 2);
        g_assert_cmpmem(buf + 6, buf[5], "i8042", 5);
        g_free(buf);
        tracebus__interrupt_info__free_unpacked(info, NULL);
        g_assert_cmpint(system_info_read_interrupts(missing, &info), <, 0);
}

static void test_system_info(void) {
        g_autofree char *cpuinfo = fixture("cpuinfo"), *cpu = fixture("cpu");
        Tracebus__CpuInfo *info = NULL;

        g_assert_cmpint(system_info_read_cpus(cpuinfo, cpu, &info), ==, 0);
        g_assert_cmpuint(info->n_cpus, ==, 3);
        g_assert_cmpstr(info->cpus[0]->processor, ==, "Test CPU Big");
        g_assert_cmpstr(info->cpus[1]->processor, ==, "Test CPU Little");
        g_assert_cmpuint(info->cpus[0]->capacity, ==, 1024);
        g_assert_cmpuint(info->cpus[2]->capacity, ==, 512);
        /* scaling_available_frequencies first, then the time_in_state ladder. */
        g_assert_cmpuint(info->cpus[0]->n_frequencies, ==, 3);
        g_assert_cmpuint(info->cpus[0]->frequencies[2], ==, 1800000);
        g_assert_cmpuint(info->cpus[1]->n_frequencies, ==, 3);
        g_assert_cmpuint(info->cpus[1]->frequencies[0], ==, 600000);
        g_assert_cmpuint(info->cpus[2]->n_frequencies, ==, 0);
        tracebus__cpu_info__free_unpacked(info, NULL);
}

static bool has_warning(const SessionConfig *c, const char *part) {
        for (char **w = c->warnings; w && *w; w++)
                if (strstr(*w, part))
                        return true;
        return false;
}

static void test_config(void) {
        const char *text =
                "data_sources { config { name: \"linux.sys_stats\" sys_stats_config {"
                " meminfo_period_ms: 5 meminfo_counters: MEMINFO_MEM_FREE stat_period_ms: 100"
                " stat_counters: STAT_FORK_COUNT gpufreq_period_ms: 100 } } }"
                "data_sources { config { name: \"linux.sysfs_power\" } }"
                "data_sources { config { name: \"linux.system_info\" } }";
        Tracebus__TraceConfig *tc = NULL;
        g_autofree char *error = NULL;
        SysStatsSelection sel = {};
        SessionConfig c = {};

        g_assert_cmpint(session_config_parse_text(text, &tc, &error), ==, 0);
        g_assert_cmpint(sys_stats_load_selection(tc, &c, &sel), ==, 0);
        g_assert_cmpuint(sel.period_ms[SYS_STATS_MEMINFO], ==, 10);
        g_assert_true(has_warning(&c, "meminfo_period_ms 5 is under the minimum of 10 ms"));
        g_assert_true(has_warning(&c, "gpufreq_period_ms is not supported"));
        g_assert_true(sys_stats_keys_test(&sel.meminfo, 2));
        g_assert_false(sys_stats_keys_test(&sel.meminfo, 1));
        /* No vmstat_counters: all of them, as Perfetto. */
        g_assert_true(sys_stats_keys_test(&sel.vmstat, 1));
        g_assert_cmpuint(sel.stat_fields, ==, 1u << 4);
        g_assert_true(sel.system_info);
        /* This machine's batteries decide: none, a warning and no poller. */
        if (power_count_batteries("/sys/class/power_supply") == 0) {
                g_assert_true(has_warning(&c, "no battery: linux.sysfs_power skipped"));
                g_assert_cmpuint(sel.period_ms[SYS_STATS_POWER], ==, 0);
        } else
                g_assert_cmpuint(sel.period_ms[SYS_STATS_POWER], ==, SYS_STATS_POWER_PERIOD_MS);
        session_config_done(&c);
        tracebus__trace_config__free_unpacked(tc, NULL);
}

/* A binary config may carry enum values no version of Perfetto names: each is a
 * warning naming it, and the rest is kept. */
static void test_config_unknown_counters(void) {
        Tracebus__SysStatsConfig sc = TRACEBUS__SYS_STATS_CONFIG__INIT;
        Tracebus__DataSourceConfig ds = TRACEBUS__DATA_SOURCE_CONFIG__INIT;
        Tracebus__TraceConfig__DataSource src = TRACEBUS__TRACE_CONFIG__DATA_SOURCE__INIT;
        Tracebus__TraceConfig__DataSource *srcs[] = { &src };
        Tracebus__TraceConfig tc = TRACEBUS__TRACE_CONFIG__INIT;
        int meminfo[] = { 2, 99, 35 }, vmstat[] = { 1, 4000 };
        Tracebus__SysStatsConfig__StatCounters stat[] = { 1, 77 };
        SysStatsSelection sel = {};
        SessionConfig c = {};

        sc.has_meminfo_period_ms = sc.has_vmstat_period_ms = sc.has_stat_period_ms = true;
        sc.meminfo_period_ms = sc.vmstat_period_ms = sc.stat_period_ms = 250;
        sc.n_meminfo_counters = 3;
        sc.meminfo_counters = (Tracebus__MeminfoCounters *) meminfo;
        sc.n_vmstat_counters = 2;
        sc.vmstat_counters = (Tracebus__VmstatCounters *) vmstat;
        sc.n_stat_counters = 2;
        sc.stat_counters = stat;
        ds.name = (char *) "linux.sys_stats";
        ds.sys_stats_config = &sc;
        src.config = &ds;
        tc.n_data_sources = 1;
        tc.data_sources = srcs;

        g_assert_cmpint(sys_stats_load_selection(&tc, &c, &sel), ==, 0);
        g_assert_true(has_warning(&c, "meminfo counter 99 is not one tracebus reads"));
        /* v58's MEMINFO_ZRAM (35): named by Perfetto, no /proc/meminfo line tracebus reads. */
        g_assert_true(has_warning(&c, "meminfo counter MEMINFO_ZRAM (35) is not one tracebus reads"));
        g_assert_false(sys_stats_keys_test(&sel.meminfo, 35));
        g_assert_true(has_warning(&c, "vmstat counter 4000 is not one tracebus reads"));
        g_assert_true(has_warning(&c, "stat counter 77 is not one tracebus reads"));
        g_assert_true(sys_stats_keys_test(&sel.meminfo, 2));
        g_assert_true(sys_stats_keys_test(&sel.vmstat, 1));
        g_assert_cmpuint(sel.stat_fields, ==, 1u << 1);
        g_assert_cmpuint(sel.period_ms[SYS_STATS_STAT], ==, 250);
        session_config_done(&c);
}

/* Perfetto's own sys_stats.cfg asks for counters modern kernels dropped (nr_alloc_batch):
 * each one this kernel's /proc/vmstat lacks is named in one warning, the rest read. */
static void test_config_absent_counters(void) {
        const char *text =
                "data_sources { config { name: \"linux.sys_stats\" sys_stats_config {"
                " vmstat_period_ms: 100 vmstat_counters: VMSTAT_NR_FREE_PAGES"
                " vmstat_counters: VMSTAT_NR_ALLOC_BATCH vmstat_counters: VMSTAT_NR_OVERHEAD } } }";
        g_autofree char *vmstat = NULL, *error = NULL;
        Tracebus__TraceConfig *tc = NULL;
        bool has_batch, has_overhead;
        SysStatsSelection sel = {};
        SessionConfig c = {};

        g_assert_true(g_file_get_contents("/proc/vmstat", &vmstat, NULL, NULL));
        has_batch = g_str_has_prefix(vmstat, "nr_alloc_batch ") || strstr(vmstat, "\nnr_alloc_batch ");
        has_overhead = g_str_has_prefix(vmstat, "nr_overhead ") || strstr(vmstat, "\nnr_overhead ");
        g_assert_cmpint(session_config_parse_text(text, &tc, &error), ==, 0);
        g_assert_cmpint(sys_stats_load_selection(tc, &c, &sel), ==, 0);
        g_assert_true(sys_stats_keys_test(&sel.vmstat, TRACEBUS__VMSTAT_COUNTERS__VMSTAT_NR_FREE_PAGES));
        g_assert_false(has_warning(&c, "VMSTAT_NR_FREE_PAGES"));
        g_assert_true(has_warning(&c, "this kernel's /proc/vmstat has no") == (!has_batch || !has_overhead));
        g_assert_true(has_warning(&c, "VMSTAT_NR_ALLOC_BATCH") == !has_batch);
        g_assert_true(has_warning(&c, "VMSTAT_NR_OVERHEAD") == !has_overhead);
        g_test_message("%s", c.warnings ? c.warnings[0] : "(no warning)");
        session_config_done(&c);
        tracebus__trace_config__free_unpacked(tc, NULL);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/sys-stats/meminfo", test_meminfo);
        g_test_add_func("/sys-stats/vmstat", test_vmstat);
        g_test_add_func("/sys-stats/stat", test_stat);
        g_test_add_func("/sys-stats/proc-others", test_proc_others);
        g_test_add_func("/sys-stats/sysfs", test_sysfs);
        g_test_add_func("/sys-stats/power", test_power);
        g_test_add_func("/sys-stats/system-info", test_system_info);
        g_test_add_func("/sys-stats/interrupts", test_interrupts);
        g_test_add_func("/sys-stats/config", test_config);
        g_test_add_func("/sys-stats/config-unknown-counters", test_config_unknown_counters);
        g_test_add_func("/sys-stats/config-absent-counters", test_config_absent_counters);
        return g_test_run();
}
