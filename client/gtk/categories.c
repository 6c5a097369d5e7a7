/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <glib/gi18n.h>
#include <string.h>

#include "categories.h"

/* Close to what Perfetto's and Traceur's categories of the same name enable,
 * in tracefs terms. Events a kernel lacks are dropped at record time. */
static const char *const sched_events[] = {
        "sched/sched_switch", "sched/sched_waking", "sched/sched_wakeup_new",
        "sched/sched_process_fork", "sched/sched_process_exit", "sched/sched_process_free",
        "task/task_newtask", "task/task_rename", NULL,
};
static const char *const freq_events[] = {
        "power/cpu_frequency", "power/cpu_frequency_limits", "power/cpu_idle", NULL,
};
static const char *const irq_events[] = {
        "irq/irq_handler_entry", "irq/irq_handler_exit", "irq/softirq_entry", "irq/softirq_exit",
        "irq/softirq_raise", "ipi/*", NULL,
};
static const char *const disk_events[] = {
        "block/block_rq_insert", "block/block_rq_issue", "block/block_rq_complete",
        "block/block_bio_queue", "block/block_bio_complete", NULL,
};
static const char *const memory_events[] = {
        "kmem/rss_stat", "vmscan/mm_vmscan_direct_reclaim_begin", "vmscan/mm_vmscan_direct_reclaim_end",
        "vmscan/mm_vmscan_kswapd_wake", "vmscan/mm_vmscan_kswapd_sleep",
        "compaction/mm_compaction_begin", "compaction/mm_compaction_end", "oom/mark_victim", NULL,
};
static const char *const power_events[] = {
        "power/suspend_resume", "power/wakeup_source_activate", "power/wakeup_source_deactivate",
        "power/device_pm_callback_start", "power/device_pm_callback_end", NULL,
};
static const char *const marker_events[] = {
        "ftrace/print", NULL,
};

/* Samples, not events: the category records through linux.perf alone. */
static const char *const no_events[] = { NULL };

static const TbCategory categories[] = {
        { "sched", N_("Scheduling"), N_("Which task ran on which CPU, wakeups, forks and exits"),
          sched_events, TRUE },
        { "freq", N_("CPU frequency and idle"), N_("Clock speed changes and idle states of each CPU"),
          freq_events, TRUE, TB_COUNTERS_CPUFREQ },
        { "irq", N_("Interrupts"), N_("Hardware and software interrupt handlers"), irq_events, FALSE },
        { "disk", N_("Block I/O"), N_("Disk requests: queued, issued, completed"),
          disk_events, FALSE },
        { "memory", N_("Memory"), N_("Memory use of the system and of processes, reclaim and compaction"),
          memory_events, FALSE, TB_COUNTERS_MEMINFO | TB_COUNTERS_PROCESS_STATS },
        { "power", N_("Power and suspend"), N_("Suspend and resume, wakeup sources"), power_events, FALSE },
        { "markers", N_("Userspace markers"), N_("Text that programs write into trace_marker"),
          marker_events, FALSE },
        { "cpu_profile", N_("CPU profile"),
          N_("Call stacks sampled 100 times a second on every CPU: your own programs, or all of them for an administrator"),
          no_events, FALSE, TB_COUNTERS_CPU_PROFILE | TB_COUNTERS_PROCESS_STATS },
        { "apps", N_("Applications (Perfetto SDK)"),
          N_("Slices and counters of your apps built with the Perfetto SDK, in every category; "
             "every user's apps for an administrator"),
          no_events, FALSE, TB_COUNTERS_TRACK_EVENT },
};

const TbCategory *tb_categories_get(guint *ret_n) {
        *ret_n = G_N_ELEMENTS(categories);
        return categories;
}

const TbCategory *tb_category_lookup(const char *id) {
        for (guint i = 0; i < G_N_ELEMENTS(categories); i++)
                if (g_str_equal(categories[i].id, id))
                        return &categories[i];
        return NULL;
}

static gboolean is_group_wildcard(const char *e) {
        return g_str_has_suffix(e, "/*");
}

/* Adds e, or what it expands to, to set when the kernel offers it. */
static void add_event(GHashTable *set, const char *e, const char *const *available) {
        if (!available) {
                g_hash_table_add(set, g_strdup(e));
                return;
        }
        if (is_group_wildcard(e)) {
                gsize prefix = strlen(e) - 1; /* "group/" */
                for (const char *const *a = available; *a; a++)
                        if (strncmp(*a, e, prefix) == 0 && (*a)[prefix] != '\0')
                                g_hash_table_add(set, g_strdup(*a));
                return;
        }
        if (g_strv_contains(available, e))
                g_hash_table_add(set, g_strdup(e));
}

static gint cmp_strings(gconstpointer a, gconstpointer b) {
        return strcmp(*(const char *const *) a, *(const char *const *) b);
}

/* The set's strings as a sorted strv; the set is emptied. */
static char **set_steal_sorted(GHashTable *set) {
        guint n = 0;
        char **v = (char **) g_hash_table_get_keys_as_array(set, &n);

        g_hash_table_steal_all(set);
        qsort(v, n, sizeof *v, (int (*)(const void *, const void *)) cmp_strings);
        return v;
}

char **tb_category_available_events(const TbCategory *c, const char *const *available) {
        g_autoptr(GHashTable) set = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);

        g_return_val_if_fail(c, NULL);
        for (const char *const *e = c->events; *e; e++)
                add_event(set, *e, available);
        return set_steal_sorted(set);
}

char **tb_categories_resolve(const char *const *ids, const char *const *custom,
                             const char *const *available, char ***ret_missing) {
        g_autoptr(GHashTable) set = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        g_autoptr(GPtrArray) missing = g_ptr_array_new_null_terminated(0, g_free, TRUE);

        for (const char *const *id = ids; id && *id; id++) {
                const TbCategory *c = tb_category_lookup(*id);
                if (!c)
                        continue;
                for (const char *const *e = c->events; *e; e++)
                        add_event(set, *e, available);
        }
        for (const char *const *e = custom; e && *e; e++) {
                guint before = g_hash_table_size(set);
                gboolean had = g_hash_table_contains(set, *e);

                add_event(set, *e, available);
                if (!had && g_hash_table_size(set) == before)
                        g_ptr_array_add(missing, g_strdup(*e));
        }
        if (ret_missing)
                *ret_missing = (char **) g_ptr_array_steal(missing, NULL);
        return set_steal_sorted(set);
}

static void append_quoted(GString *s, const char *v);

guint tb_categories_counters(const char *const *ids) {
        guint counters = 0;

        for (const char *const *id = ids; id && *id; id++) {
                const TbCategory *c = tb_category_lookup(*id);
                if (c)
                        counters |= c->counters;
        }
        return counters;
}

/* The pollers' data sources, into buffer @target. */
static void append_counters(GString *s, guint counters, guint target) {
        if (counters & (TB_COUNTERS_MEMINFO | TB_COUNTERS_CPUFREQ)) {
                g_string_append_printf(s, "data_sources {\n  config {\n    name: \"linux.sys_stats\"\n"
                                          "    target_buffer: %u\n    sys_stats_config {\n", target);
                if (counters & TB_COUNTERS_MEMINFO)
                        g_string_append_printf(s, "      meminfo_period_ms: %u\n", TB_COUNTERS_PERIOD_MS);
                if (counters & TB_COUNTERS_CPUFREQ)
                        g_string_append_printf(s, "      cpufreq_period_ms: %u\n", TB_COUNTERS_PERIOD_MS);
                g_string_append(s, "    }\n  }\n}\n");
        }
        if (counters & TB_COUNTERS_PROCESS_STATS)
                g_string_append_printf(s, "data_sources {\n  config {\n    name: \"linux.process_stats\"\n"
                                          "    target_buffer: %u\n    process_stats_config {\n"
                                          "      scan_all_processes_on_start: true\n      proc_stats_poll_ms: %u\n"
                                          "    }\n  }\n}\n", target, TB_COUNTERS_PERIOD_MS);
}

/* No scope (the window offers none): the service samples the caller's own processes, or
 * every process and the kernel's frames for one with org.tracebus.manage. */
static void append_profile(GString *s, guint target) {
        g_string_append_printf(s, "data_sources {\n  config {\n    name: \"linux.perf\"\n    target_buffer: %u\n"
                                  "    perf_event_config {\n"
                                  "      timebase { counter: SW_CPU_CLOCK frequency: %u }\n"
                                  "      callstack_sampling { kernel_frames: true user_frames: UNWIND_DWARF }\n"
                                  "    }\n  }\n}\n", target, TB_PROFILE_HZ);
}

/* Every category (the SDK's own default leaves out those tagged slow or debug). */
static void append_track_event(GString *s, guint target) {
        g_string_append_printf(s, "data_sources {\n  config {\n    name: \"track_event\"\n    target_buffer: %u\n"
                                  "    track_event_config {\n      enabled_categories: \"*\"\n    }\n  }\n}\n",
                                  target);
}

static void append_ftrace(GString *s, const char *const *events, guint kb) {
        g_string_append(s, "data_sources {\n  config {\n    name: \"linux.ftrace\"\n    ftrace_config {\n");
        for (const char *const *e = events; e && *e; e++) {
                g_string_append(s, "      ftrace_events: ");
                append_quoted(s, *e);
                g_string_append_c(s, '\n');
        }
        g_string_append_printf(s, "      buffer_size_kb: %u\n", kb);
        g_string_append(s, "    }\n  }\n}\n");
}

/* Event names are plain identifiers, but the config is text: quote properly. */
static void append_quoted(GString *s, const char *v) {
        g_autofree char *esc = g_strescape(v, NULL);
        g_string_append_printf(s, "\"%s\"", esc);
}

/* The service's buffers, in order: the events (when there are any), the pollers' counters,
 * the CPU profile's samples, the apps' track events; each index, or -1 when absent. */
typedef struct {
        int events, counters, profile, track_event;
        guint n;
} BufferLayout;

static BufferLayout buffer_layout(const TbRecordSettings *st) {
        gboolean has_events = st->events && st->events[0];
        BufferLayout b = { -1, -1, -1, -1, 0 };

        if (has_events)
                b.events = (int) b.n++;
        if (st->counters & ~TB_COUNTERS_TRACK_EVENT)
                b.counters = (int) b.n++;
        if (st->counters & TB_COUNTERS_CPU_PROFILE)
                b.profile = (int) b.n++;
        if (st->counters & TB_COUNTERS_TRACK_EVENT)
                b.track_event = (int) b.n++;
        return b;
}

static void append_buffer(GString *s, guint64 kb) {
        g_string_append_printf(s, "buffers {\n  size_kb: %" G_GUINT64_FORMAT "\n  fill_policy: RING_BUFFER\n}\n", kb);
}

/* The service's own buffer holds what the kernel buffers hold, up to its limit (less what
 * the other buffers take); a long trace empties it into the file every few seconds, so
 * less will do. */
static guint64 events_buffer_kb(const TbRecordSettings *st, const BufferLayout *b, guint kb) {
        guint64 service_kb = (guint64) kb * MAX(st->n_cpus, 1u);
        guint64 others = (b->counters >= 0 ? TB_COUNTERS_BUFFER_KB : 0) + (b->profile >= 0 ? TB_PROFILE_BUFFER_KB : 0) +
                         (b->track_event >= 0 ? TB_TRACK_EVENT_BUFFER_KB : 0);

        if (st->mode == TB_BUFFER_LONG)
                service_kb = MIN(service_kb, 64u * 1024u);
        return MIN(service_kb, (guint64) TB_MAX_TRACE_BUFFER_KB - others);
}

static void append_file_options(GString *s, const TbRecordSettings *st) {
        if (st->duration_ms)
                g_string_append_printf(s, "duration_ms: %u\n", MIN(st->duration_ms, TB_MAX_DURATION_MS));
        if (st->mode != TB_BUFFER_LONG)
                return;
        g_string_append(s, "write_into_file: true\n");
        g_string_append_printf(s, "file_write_period_ms: %u\n", TB_LONG_TRACE_WRITE_PERIOD_MS);
        if (st->max_file_size_bytes)
                g_string_append_printf(s, "max_file_size_bytes: %" G_GUINT64_FORMAT "\n", st->max_file_size_bytes);
}

char *tb_record_settings_to_config(const TbRecordSettings *st) {
        GString *s = g_string_new(NULL);
        guint kb = st->buffer_size_kb ? MIN(st->buffer_size_kb, TB_MAX_BUFFER_SIZE_KB) : TB_DEFAULT_BUFFER_SIZE_KB;
        BufferLayout b = buffer_layout(st);

        append_file_options(s, st);
        if (b.events >= 0)
                append_buffer(s, events_buffer_kb(st, &b, kb));
        if (b.counters >= 0)
                append_buffer(s, TB_COUNTERS_BUFFER_KB);
        if (b.profile >= 0)
                append_buffer(s, TB_PROFILE_BUFFER_KB);
        if (b.track_event >= 0)
                append_buffer(s, TB_TRACK_EVENT_BUFFER_KB);
        if (b.events >= 0)
                append_ftrace(s, st->events, kb);
        if (b.counters >= 0)
                append_counters(s, st->counters, (guint) b.counters);
        if (b.profile >= 0)
                append_profile(s, (guint) b.profile);
        if (b.track_event >= 0)
                append_track_event(s, (guint) b.track_event);
        return g_string_free(s, FALSE);
}
