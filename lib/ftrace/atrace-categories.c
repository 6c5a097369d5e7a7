/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <string.h>

#include "atrace-categories.h"
#include "macro.h"

/* Perfetto v58's predefined tracepoints table, written as lists of our own: which kernel events each atrace category stands for. Groups that Perfetto takes
 * whole are "group/ *"; the single events it names in those groups are then implied. */

#define EVENTS(...) ((const char *const[]) { __VA_ARGS__, NULL })

static const struct {
        const char *name;
        const char *const *events;
} categories[] = {
        { "binder_driver", EVENTS("binder/binder_transaction", "binder/binder_transaction_received",
                                  "binder/binder_transaction_alloc_buf", "binder/binder_set_priority") },
        { "binder_lock", EVENTS("binder/binder_lock", "binder/binder_locked", "binder/binder_unlock") },
        { "camera", EVENTS("lwis/*") },
        { "disk", EVENTS("f2fs/f2fs_sync_file_enter", "f2fs/f2fs_sync_file_exit", "f2fs/f2fs_write_begin",
                         "f2fs/f2fs_write_end", "f2fs/f2fs_iostat", "f2fs/f2fs_iostat_latency",
                         "ext4/ext4_da_write_begin", "ext4/ext4_da_write_end", "ext4/ext4_sync_file_enter",
                         "ext4/ext4_sync_file_exit", "block/block_bio_queue", "block/block_bio_complete",
                         "ufs/ufshcd_command") },
        { "freq", EVENTS("power/cpu_frequency", "power/gpu_frequency", "power/clock_set_rate",
                         "power/clock_disable", "power/clock_enable", "clk/clk_set_rate", "clk/clk_disable",
                         "clk/clk_enable", "power/cpu_frequency_limits", "power/suspend_resume",
                         "cpuhp/cpuhp_enter", "cpuhp/cpuhp_exit", "cpuhp/cpuhp_pause", "msm_bus/*") },
        { "gfx", EVENTS("mdss/*", "mali/*", "sde/*", "dpu/*", "g2d/*", "panel/panel_write_generic") },
        { "i2c", EVENTS("i2c/*") },
        { "idle", EVENTS("power/cpu_idle") },
        { "ion", EVENTS("kmem/ion_alloc_buffer_start") },
        { "irq", EVENTS("irq/*", "ipi/*") },
        { "irqoff", EVENTS("preemptirq/irq_enable", "preemptirq/irq_disable") },
        { "load", EVENTS("cpufreq_interactive/*") },
        { "membus", EVENTS("memory_bus/*") },
        /* Perfetto takes synthetic/rss_stat_throttled where the kernel can make it: that
         * is FtraceConfig.throttle_rss_stat's business; the category takes the plain one. */
        { "memory", EVENTS("kmem/rss_stat", "kmem/ion_heap_grow", "kmem/ion_heap_shrink", "ion/ion_stat",
                           "mm_event/mm_event_record", "dmabuf_heap/dma_heap_stat", "gpu_mem/gpu_mem_total") },
        { "memreclaim", EVENTS("vmscan/mm_vmscan_direct_reclaim_begin", "vmscan/mm_vmscan_direct_reclaim_end",
                               "vmscan/mm_vmscan_kswapd_wake", "vmscan/mm_vmscan_kswapd_sleep",
                               "lowmemorykiller/*") },
        { "mmc", EVENTS("mmc/*") },
        { "pagecache", EVENTS("filemap/*") },
        { "preemptoff", EVENTS("preemptirq/preempt_enable", "preemptirq/preempt_disable") },
        { "regulators", EVENTS("regulator/*") },
        /* sched_wakeup is left out on purpose, as Perfetto does: sched_waking says the same. */
        { "sched", EVENTS("sched/sched_switch", "sched/sched_waking", "sched/sched_blocked_reason",
                          "sched/sched_cpu_hotplug", "sched/sched_pi_setprio", "sched/sched_process_exit",
                          "cgroup/*", "oom/oom_score_adj_update", "task/task_rename", "task/task_newtask",
                          "systrace/*", "scm/*") },
        /* The kernel's sync events had three names over its versions. */
        { "sync", EVENTS("sync/*", "fence/*", "dma_fence/*") },
        { "thermal", EVENTS("thermal/thermal_temperature", "thermal/cdev_update") },
        { "workq", EVENTS("workqueue/*") },
};

const char *const *atrace_category_events(const char *name) {
        if (!name)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(categories); i++)
                if (strcmp(categories[i].name, name) == 0)
                        return categories[i].events;
        return NULL;
}

const char *atrace_category_name(size_t i) {
        return i < ELEMENTSOF(categories) ? categories[i].name : NULL;
}
