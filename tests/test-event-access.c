/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit test of service/config/session-config-access.c: which kernel events a caller
 * without org.tracebus.manage may record. The decision by name, then configs loaded
 * against a made-up tracefs (available_events and dynamic_events only): an event the
 * config names and such a caller may not record refuses the start, naming it; one that
 * only a group's glob or an atrace category chose is left out with a warning; a probe
 * someone defined in an allowed group is refused as well; and a caller with the right
 * keeps everything.
 */
#include "session-config.h"
#include "strv.h"

#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>

static void test_decision(void) {
        static const char *const allowed[] = {
                "sched/sched_switch", "sched/sched_stat_runtime", "task/task_newtask", "irq/softirq_entry",
                "ipi/ipi_send_cpu", "timer/hrtimer_start", "workqueue/workqueue_execute_start",
                "power/cpu_frequency", "power/cpu_idle", "block/block_rq_issue", "writeback/writeback_start",
                "filemap/mm_filemap_add_to_page_cache", "raw_syscalls/sys_enter", "syscalls/sys_enter_openat",
                "signal/signal_generate", "oom/mark_victim", "regulator/regulator_enable", "clk/clk_set_rate",
                "thermal/thermal_temperature", "net/net_dev_xmit", "napi/napi_poll", "skb/kfree_skb",
                "kmem/mm_page_alloc", "kmem/rss_stat", "vmscan/mm_vmscan_kswapd_wake", "cgroup/cgroup_mkdir",
                "compaction/mm_compaction_begin", "sock/inet_sock_set_state", "ftrace/print",
                "ftrace/funcgraph_entry",
        };
        static const struct {
                const char *event, *reason_has;
        } refused[] = {
                { "printk/console", "dmesg_restrict" },
                { "kvm/kvm_pio", "virtual machines" },
                { "kvmmmu/kvm_mmu_get_page", "virtual machines" },
                { "i2c/i2c_write", "I2C" },
                { "smbus/smbus_read", "SMBus" },
                { "tcp/tcp_probe", "sequence numbers" },
                { "sock/sock_rcvqueue_full", "socket" },
                { "kprobes/myprobe", "probes" },
                { "uprobes/p_bash_0x4242", "other users' programs" },
                { "synthetic/wakeup_latency", "whole machine" },
                { "ftrace/bprint", "trace_printk" },
                { "vmalloc/alloc_vmap_area", "not reviewed" },
                { "iommu/map", "not reviewed" },
                { "xfs/xfs_read_agf", "not reviewed" },
        };
        const char *reason = NULL;

        for (size_t i = 0; i < G_N_ELEMENTS(allowed); i++) {
                reason = NULL;
                if (!session_config_event_allowed(allowed[i], &reason))
                        g_error("%s refused: %s", allowed[i], reason);
                g_assert_nonnull(reason);
        }
        for (size_t i = 0; i < G_N_ELEMENTS(refused); i++) {
                reason = NULL;
                g_assert_false(session_config_event_allowed(refused[i].event, &reason));
                g_assert_nonnull(reason);
                if (!strstr(reason, refused[i].reason_has))
                        g_error("%s refused for \"%s\", expected a reason about %s", refused[i].event, reason,
                                refused[i].reason_has);
        }
        /* A group's prefix is no group: "schedx" is not "sched". */
        g_assert_false(session_config_event_allowed("schedx/sched_switch", NULL));
        g_assert_false(session_config_event_allowed("sched", NULL));
}

static char *tracefs_root;

static void make_tracefs(void) {
        static const char available[] =
                "sched:sched_switch\nsched:sched_waking\nsched:tb_probe\n"
                "kvm:kvm_exit\nkvm:kvm_entry\nkvm:kvm_pio\n"
                "printk:console\nxfs:xfs_read_agf\nkprobes:rootprobe\nirq:irq_handler_entry\ni2c:i2c_write\n";
        static const char dynamic[] = "p:sched/tb_probe do_sys_openat2\np:kprobes/rootprobe vfs_read\n";
        g_autoptr(GError) error = NULL;
        g_autofree char *a = NULL, *d = NULL;

        tracefs_root = g_dir_make_tmp("tb-event-access-XXXXXX", &error);
        g_assert_no_error(error);
        a = g_build_filename(tracefs_root, "available_events", NULL);
        d = g_build_filename(tracefs_root, "dynamic_events", NULL);
        g_assert_true(g_file_set_contents(a, available, -1, NULL));
        g_assert_true(g_file_set_contents(d, dynamic, -1, NULL));
}

static void remove_tracefs(void) {
        g_autofree char *a = g_build_filename(tracefs_root, "available_events", NULL);
        g_autofree char *d = g_build_filename(tracefs_root, "dynamic_events", NULL);

        (void) g_unlink(a);
        (void) g_unlink(d);
        (void) g_rmdir(tracefs_root);
        g_free(tracefs_root);
}

/* Loads a config of @events (and @extra in its FtraceConfig). */
static void load(const char *events, const char *extra, SessionConfig *c) {
        _cleanup_(trace_config_freep) Tracebus__TraceConfig *tc = NULL;
        _cleanup_free_ char *error = NULL;
        g_autofree char *text = g_strdup_printf("data_sources { config { name: \"linux.ftrace\" ftrace_config { "
                                                "%s %s } } }\nduration_ms: 1000\n", events, extra ?: "");

        g_assert_cmpint(session_config_parse_text(text, &tc, &error), ==, 0);
        if (session_config_load(tc, tracefs_root, c, &error) < 0)
                g_error("loading %s: %s", text, error);
}

static bool has_warning(const SessionConfig *c, const char *what) {
        for (char **w = c->warnings; w && *w; w++)
                if (strstr(*w, what))
                        return true;
        return false;
}

static void test_named_refused(void) {
        _cleanup_(session_config_done) SessionConfig c = {};
        _cleanup_free_ char *text = NULL;

        load("ftrace_events: \"sched/sched_switch\" ftrace_events: \"printk/console\" ftrace_events: \"kvm_pio\"",
             NULL, &c);
        g_assert_cmpint(session_config_restrict_to_record_only(&c), ==, -EKEYREJECTED);
        text = session_config_refusal_text(&c);
        g_assert_nonnull(text);
        g_test_message("%s", text);
        /* Both named ones, the bare name by its group, and the first one's reason. */
        g_assert_nonnull(strstr(text, "printk/console"));
        g_assert_nonnull(strstr(text, "kvm/kvm_pio"));
        g_assert_nonnull(strstr(text, "dmesg_restrict"));
        g_assert_nonnull(strstr(text, "org.tracebus.manage"));
        g_assert_null(strstr(text, "sched_switch"));
}

static void test_glob_skipped(void) {
        _cleanup_(session_config_done) SessionConfig c = {};

        load("ftrace_events: \"sched/*\" ftrace_events: \"kvm/*\" ftrace_events: \"irq/irq_handler_entry\"", NULL, &c);
        g_assert_cmpuint(strv_length(c.events), ==, 7);
        g_assert_cmpint(session_config_restrict_to_record_only(&c), ==, 0);
        /* What a record-only caller records: sched and irq, but not the probe someone put in sched. */
        g_assert_cmpuint(strv_length(c.events), ==, 3);
        g_assert_true(strv_contains(c.events, "sched/sched_switch"));
        g_assert_true(strv_contains(c.events, "sched/sched_waking"));
        g_assert_true(strv_contains(c.events, "irq/irq_handler_entry"));
        /* One warning per group, naming what it skipped and why. */
        g_assert_true(has_warning(&c, "3 ftrace events of group 'kvm'"));
        g_assert_true(has_warning(&c, "kvm/kvm_exit"));
        g_assert_true(has_warning(&c, "virtual machines"));
        g_assert_true(has_warning(&c, "1 ftrace event of group 'sched'"));
        g_assert_true(has_warning(&c, "sched/tb_probe"));
        g_assert_true(has_warning(&c, "defined for the whole machine"));
        g_assert_cmpuint(strv_length(c.warnings), ==, 2);
        /* And FtraceStats lists them, as events that could not be enabled. */
        g_assert_true(strv_contains(c.failed_ftrace_events, "kvm/kvm_pio"));
        g_assert_true(strv_contains(c.failed_ftrace_events, "sched/tb_probe"));
}

static void test_named_probe(void) {
        _cleanup_(session_config_done) SessionConfig c = {};
        _cleanup_free_ char *text = NULL;

        /* Named, a probe in an allowed group is refused, for what it is. */
        load("ftrace_events: \"sched/tb_probe\" ftrace_events: \"sched/sched_switch\"", NULL, &c);
        g_assert_cmpint(session_config_restrict_to_record_only(&c), ==, -EKEYREJECTED);
        text = session_config_refusal_text(&c);
        g_assert_nonnull(strstr(text, "sched/tb_probe"));
        g_assert_nonnull(strstr(text, "defined for the whole machine"));
}

static void test_nothing_left(void) {
        _cleanup_(session_config_done) SessionConfig c = {};
        _cleanup_free_ char *text = NULL;

        /* Only globs, all refused: nothing would be recorded, so refused, naming them. */
        load("ftrace_events: \"kvm/*\" ftrace_events: \"xfs/*\"", NULL, &c);
        g_assert_cmpint(session_config_restrict_to_record_only(&c), ==, -EKEYREJECTED);
        text = session_config_refusal_text(&c);
        g_assert_nonnull(strstr(text, "kvm/kvm_exit"));
        g_assert_nonnull(strstr(text, "xfs/xfs_read_agf"));
}

static void test_atrace_skipped(void) {
        _cleanup_(session_config_done) SessionConfig c = {};

        /* An atrace category names no event: "i2c" chooses i2c/ *, left out with a
         * warning; "sched" chooses sched_switch and sched_waking, which stay. */
        load("atrace_categories: \"sched\" atrace_categories: \"i2c\"", NULL, &c);
        g_assert_true(strv_contains(c.events, "i2c/i2c_write"));
        g_assert_cmpint(session_config_restrict_to_record_only(&c), ==, 0);
        g_assert_true(strv_contains(c.events, "sched/sched_switch"));
        g_assert_false(strv_contains(c.events, "i2c/i2c_write"));
        g_assert_true(has_warning(&c, "1 ftrace event of group 'i2c' that a glob or an atrace category chose"));
}

static void test_manage_keeps_all(void) {
        _cleanup_(session_config_done) SessionConfig c = {};

        load("ftrace_events: \"printk/console\" ftrace_events: \"kvm/*\" ftrace_events: \"sched/tb_probe\"", NULL, &c);
        session_config_forget_refused(&c);
        g_assert_cmpuint(strv_length(c.events), ==, 5);
        g_assert_null(c.refused_named);
        g_assert_null(c.warnings);
}

int main(int argc, char **argv) {
        int r;

        g_test_init(&argc, &argv, NULL);
        make_tracefs();
        g_test_add_func("/event-access/decision", test_decision);
        g_test_add_func("/event-access/named-refused", test_named_refused);
        g_test_add_func("/event-access/glob-skipped", test_glob_skipped);
        g_test_add_func("/event-access/named-probe", test_named_probe);
        g_test_add_func("/event-access/nothing-left", test_nothing_left);
        g_test_add_func("/event-access/atrace-skipped", test_atrace_skipped);
        g_test_add_func("/event-access/manage-keeps-all", test_manage_keeps_all);
        r = g_test_run();
        remove_tracefs();
        return r;
}
