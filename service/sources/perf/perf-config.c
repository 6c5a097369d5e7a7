/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * linux.perf (Perfetto v58's PerfEventConfig), checked into its section (PerfSection):
 * the timebase (a counter or a tracepoint, by frequency or period), the callstack
 * sampling scope, frames, ring buffer sizes and memory caps. Who may sample what is
 * decided later, once polkit answered (perf-scope.c): this only reads the config.
 */
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fd-util.h"
#include "perf-config.h"
#include "strv.h"

#define CLAMP(x, lo, hi) MIN(MAX((x), (lo)), (hi))

static void *memdup(const void *p, size_t n) {
        void *q = malloc(n);

        return q ? memcpy(q, p, n) : NULL;
}

#define PERF_SOURCE "linux.perf"

const char *const perf_source_names[] = { PERF_SOURCE, NULL };

/* Perfetto's counters, as perf_event_attr's type and config. */
typedef struct PerfCounter {
        Tracebus__PerfEvents__Counter counter;
        const char *name;
        uint32_t type;
        uint64_t config;
} PerfCounter;

static const PerfCounter counters[] = {
        { TRACEBUS__PERF_EVENTS__COUNTER__SW_CPU_CLOCK, "SW_CPU_CLOCK", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK },
        { TRACEBUS__PERF_EVENTS__COUNTER__SW_PAGE_FAULTS, "SW_PAGE_FAULTS", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS },
        { TRACEBUS__PERF_EVENTS__COUNTER__SW_TASK_CLOCK, "SW_TASK_CLOCK", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK },
        { TRACEBUS__PERF_EVENTS__COUNTER__SW_CONTEXT_SWITCHES, "SW_CONTEXT_SWITCHES", PERF_TYPE_SOFTWARE,
          PERF_COUNT_SW_CONTEXT_SWITCHES },
        { TRACEBUS__PERF_EVENTS__COUNTER__SW_CPU_MIGRATIONS, "SW_CPU_MIGRATIONS", PERF_TYPE_SOFTWARE,
          PERF_COUNT_SW_CPU_MIGRATIONS },
        { TRACEBUS__PERF_EVENTS__COUNTER__SW_PAGE_FAULTS_MIN, "SW_PAGE_FAULTS_MIN", PERF_TYPE_SOFTWARE,
          PERF_COUNT_SW_PAGE_FAULTS_MIN },
        { TRACEBUS__PERF_EVENTS__COUNTER__SW_PAGE_FAULTS_MAJ, "SW_PAGE_FAULTS_MAJ", PERF_TYPE_SOFTWARE,
          PERF_COUNT_SW_PAGE_FAULTS_MAJ },
        { TRACEBUS__PERF_EVENTS__COUNTER__SW_ALIGNMENT_FAULTS, "SW_ALIGNMENT_FAULTS", PERF_TYPE_SOFTWARE,
          PERF_COUNT_SW_ALIGNMENT_FAULTS },
        { TRACEBUS__PERF_EVENTS__COUNTER__SW_EMULATION_FAULTS, "SW_EMULATION_FAULTS", PERF_TYPE_SOFTWARE,
          PERF_COUNT_SW_EMULATION_FAULTS },
        { TRACEBUS__PERF_EVENTS__COUNTER__SW_DUMMY, "SW_DUMMY", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY },
        { TRACEBUS__PERF_EVENTS__COUNTER__HW_CPU_CYCLES, "HW_CPU_CYCLES", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
        { TRACEBUS__PERF_EVENTS__COUNTER__HW_INSTRUCTIONS, "HW_INSTRUCTIONS", PERF_TYPE_HARDWARE,
          PERF_COUNT_HW_INSTRUCTIONS },
        { TRACEBUS__PERF_EVENTS__COUNTER__HW_CACHE_REFERENCES, "HW_CACHE_REFERENCES", PERF_TYPE_HARDWARE,
          PERF_COUNT_HW_CACHE_REFERENCES },
        { TRACEBUS__PERF_EVENTS__COUNTER__HW_CACHE_MISSES, "HW_CACHE_MISSES", PERF_TYPE_HARDWARE,
          PERF_COUNT_HW_CACHE_MISSES },
        { TRACEBUS__PERF_EVENTS__COUNTER__HW_BRANCH_INSTRUCTIONS, "HW_BRANCH_INSTRUCTIONS", PERF_TYPE_HARDWARE,
          PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
        { TRACEBUS__PERF_EVENTS__COUNTER__HW_BRANCH_MISSES, "HW_BRANCH_MISSES", PERF_TYPE_HARDWARE,
          PERF_COUNT_HW_BRANCH_MISSES },
        { TRACEBUS__PERF_EVENTS__COUNTER__HW_BUS_CYCLES, "HW_BUS_CYCLES", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES },
        { TRACEBUS__PERF_EVENTS__COUNTER__HW_STALLED_CYCLES_FRONTEND, "HW_STALLED_CYCLES_FRONTEND", PERF_TYPE_HARDWARE,
          PERF_COUNT_HW_STALLED_CYCLES_FRONTEND },
        { TRACEBUS__PERF_EVENTS__COUNTER__HW_STALLED_CYCLES_BACKEND, "HW_STALLED_CYCLES_BACKEND", PERF_TYPE_HARDWARE,
          PERF_COUNT_HW_STALLED_CYCLES_BACKEND },
        { TRACEBUS__PERF_EVENTS__COUNTER__HW_REF_CPU_CYCLES, "HW_REF_CPU_CYCLES", PERF_TYPE_HARDWARE,
          PERF_COUNT_HW_REF_CPU_CYCLES },
};

static const PerfCounter *find_counter(Tracebus__PerfEvents__Counter counter) {
        for (size_t i = 0; i < ELEMENTSOF(counters); i++)
                if (counters[i].counter == counter)
                        return &counters[i];
        return NULL;
}

/* The kernel's cap on sampling frequencies (it lowers it itself when sampling takes too
 * long); 100000 is its default. */
static uint64_t max_sample_rate(void) {
        _cleanup_free_ char *text = NULL;
        unsigned long long v;

        if (read_full_file("/proc/sys/kernel/perf_event_max_sample_rate", 64, &text, NULL) < 0 ||
            sscanf(text, "%llu", &v) != 1 || v == 0)
                return 100000;
        return v;
}

int perf_event_open_fd(struct perf_event_attr *attr, pid_t pid, int cpu) {
        long fd = syscall(SYS_perf_event_open, attr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);

        return fd < 0 ? -errno : (int) fd;
}

/* Whether the kernel has a counter: a HW counter is missing in most VMs. */
static bool counter_available(const PerfCounter *pc) {
        struct perf_event_attr attr = { .size = sizeof(attr), .type = pc->type, .config = pc->config,
                                        .disabled = 1, .exclude_kernel = 1, .exclude_hv = 1 };
        int fd = perf_event_open_fd(&attr, 0, -1);

        if (fd < 0)
                return fd != -ENOENT && fd != -EOPNOTSUPP && fd != -ENODEV;
        safe_close(fd);
        return true;
}

/* The tracepoint as its id under tracefs @root. Perfetto takes "group/name" and
 * "group:name" (split at the first '/', else at the first ':'), and its docs use both. */
static int load_tracepoint(const Tracebus__PerfEvents__Tracepoint *tp, const char *root, PerfSection *perf, SessionConfig *c,
                           char **ret_error) {
        _cleanup_free_ char *group = NULL, *path = NULL, *text = NULL;
        _cleanup_strv_free_ char **found = NULL;
        const char *name = tp && tp->name ? tp->name : "";
        size_t split = name[strcspn(name, "/")] ? strcspn(name, "/") : strcspn(name, ":");
        const char *event = name[split] ? name + split + 1 : "";
        unsigned long long id;

        group = strndup(name, split);
        if (!group)
                return -ENOMEM;
        if (!*group || !*event || strlen(name) > 256 || strpbrk(group, "/:*?[. ") || strpbrk(event, "/:*?[. "))
                return session_config_error(ret_error, PERF_SOURCE ": timebase tracepoint '%s' is not \"group:name\" "
                                            "or \"group/name\"", name);
        if (asprintf(&path, "%s/%s", group, event) < 0)
                return -ENOMEM;
        /* Only a name the event index knows is looked up in tracefs: the index is tracefs's own list. */
        if (session_config_list_events(root, path, &found) < 0 || (!(found) || !(found)[0]))
                return session_config_error(ret_error, PERF_SOURCE ": timebase tracepoint '%s' does not exist on this kernel",
                                            tp->name);
        path = mfree(path);
        if (asprintf(&path, "%s/events/%s/%s/id", root, group, event) < 0)
                return -ENOMEM;
        if (read_full_file(path, 64, &text, NULL) < 0 || sscanf(text, "%llu", &id) != 1)
                return session_config_error(ret_error, PERF_SOURCE ": timebase tracepoint '%s' has no id", tp->name);
        perf->type = PERF_TYPE_TRACEPOINT;
        perf->event_config = id;
        perf->tracepoint = strdup(tp->name);
        if (!perf->tracepoint)
                return -ENOMEM;
        if (tp->filter && strlen(tp->filter) > PERF_MAX_FILTER_LEN)
                return session_config_error(ret_error, PERF_SOURCE ": the tracepoint filter is over %u bytes",
                                            PERF_MAX_FILTER_LEN);
        if (tp->filter && !(perf->tracepoint_filter = strdup(tp->filter)))
                return -ENOMEM;
        return 0;
}

static int load_counter(Tracebus__PerfEvents__Counter counter, PerfSection *perf, SessionConfig *c) {
        const PerfCounter *pc = find_counter(counter);
        const PerfCounter *fallback = find_counter(TRACEBUS__PERF_EVENTS__COUNTER__SW_CPU_CLOCK);

        if (!pc) {
                perf->counter = fallback->counter;
                return session_config_warn(c, PERF_SOURCE ": unknown timebase counter %d: SW_CPU_CLOCK used", (int) counter);
        }
        if (!counter_available(pc)) {
                perf->counter = fallback->counter;
                perf->type = fallback->type;
                perf->event_config = fallback->config;
                return session_config_warn(c, PERF_SOURCE ": counter %s is not available on this machine "
                                           "(a VM without a PMU?): SW_CPU_CLOCK used", pc->name);
        }
        perf->counter = pc->counter;
        perf->type = pc->type;
        perf->event_config = pc->config;
        return 0;
}

/* The frequency (Hz) or period (events): Perfetto's default is 10 Hz of SW_CPU_CLOCK. */
static int load_interval(const Tracebus__PerfEventConfig *pc, const Tracebus__PerfEvents__Timebase *tb,
                         PerfSection *perf, SessionConfig *c) {
        uint64_t max = max_sample_rate();

        perf->freq = true;
        perf->interval = PERF_DEFAULT_FREQUENCY;
        if (tb && tb->interval_case == TRACEBUS__PERF_EVENTS__TIMEBASE__INTERVAL_PERIOD && tb->period > 0) {
                perf->freq = false;
                perf->interval = tb->period;
                return 0;
        }
        if (tb && tb->interval_case == TRACEBUS__PERF_EVENTS__TIMEBASE__INTERVAL_FREQUENCY && tb->frequency > 0)
                perf->interval = tb->frequency;
        else if (tb && tb->interval_case == TRACEBUS__PERF_EVENTS__TIMEBASE__INTERVAL_POLL_PERIOD_MS) {
                int r = session_config_warn(c, PERF_SOURCE ": timebase poll_period_ms (counting without "
                                            "sampling) is not supported: %u Hz sampling used", PERF_DEFAULT_FREQUENCY);
                if (r < 0)
                        return r;
        } else if (pc->has_sampling_frequency && pc->sampling_frequency > 0)
                perf->interval = pc->sampling_frequency;
        if (perf->interval > max) {
                int r = session_config_warn(c, PERF_SOURCE ": frequency %" PRIu64 " Hz is over the kernel's "
                                            "perf_event_max_sample_rate (%" PRIu64 "): %" PRIu64 " Hz used",
                                            perf->interval, max, max);
                perf->interval = max;
                if (r < 0)
                        return r;
        }
        return 0;
}

static int load_timebase(const Tracebus__PerfEventConfig *pc, const char *root, PerfSection *perf, SessionConfig *c, char **ret_error) {
        const Tracebus__PerfEvents__Timebase *tb = pc->timebase;
        int r;

        r = load_interval(pc, tb, perf, c);
        if (r < 0)
                return r;
        if (tb && tb->event_case == TRACEBUS__PERF_EVENTS__TIMEBASE__EVENT_TRACEPOINT)
                return load_tracepoint(tb->tracepoint, root, perf, c, ret_error);
        if (tb && tb->event_case == TRACEBUS__PERF_EVENTS__TIMEBASE__EVENT_RAW_EVENT) {
                r = session_config_warn(c, PERF_SOURCE ": raw_event timebases are not supported: SW_CPU_CLOCK used");
                if (r < 0)
                        return r;
        }
        if (tb && tb->has_timestamp_clock && tb->timestamp_clock != TRACEBUS__PERF_EVENTS__PERF_CLOCK__PERF_CLOCK_BOOTTIME) {
                r = session_config_warn(c, PERF_SOURCE ": timestamp_clock other than PERF_CLOCK_BOOTTIME is not "
                                        "supported: samples are timed by BOOTTIME, the trace's clock");
                if (r < 0)
                        return r;
        }
        return load_counter(tb && tb->event_case == TRACEBUS__PERF_EVENTS__TIMEBASE__EVENT_COUNTER ? tb->counter
                            : TRACEBUS__PERF_EVENTS__COUNTER__SW_CPU_CLOCK, perf, c);
}

static int copy_pids(SessionConfig *c, const char *what, const int32_t *pids, size_t n, int32_t **ret, size_t *ret_n) {
        size_t keep = MIN(n, (size_t) PERF_MAX_SCOPE_ENTRIES);

        if (keep == 0)
                return 0;
        *ret = memdup(pids, keep * sizeof(*pids));
        if (!*ret)
                return -ENOMEM;
        *ret_n = keep;
        if (n > keep)
                return session_config_warn(c, PERF_SOURCE ": %s has %zu entries, past the limit of %u: the rest skipped",
                                           what, n, PERF_MAX_SCOPE_ENTRIES);
        return 0;
}

/* callstack_sampling.scope, or the fields it superseded (target_pid, ... of PerfEventConfig). */
static int load_scope(const Tracebus__PerfEventConfig *pc, PerfSection *perf, SessionConfig *c) {
        const Tracebus__PerfEventConfig__Scope *s = pc->callstack_sampling ? pc->callstack_sampling->scope : NULL;
        Tracebus__PerfEventConfig__Scope legacy = TRACEBUS__PERF_EVENT_CONFIG__SCOPE__INIT;
        int r;

        if (!s) {
                legacy.n_target_pid = pc->n_target_pid, legacy.target_pid = pc->target_pid;
                legacy.n_target_cmdline = pc->n_target_cmdline, legacy.target_cmdline = pc->target_cmdline;
                legacy.n_exclude_pid = pc->n_exclude_pid, legacy.exclude_pid = pc->exclude_pid;
                legacy.n_exclude_cmdline = pc->n_exclude_cmdline, legacy.exclude_cmdline = pc->exclude_cmdline;
                legacy.has_additional_cmdline_count = pc->has_additional_cmdline_count;
                legacy.additional_cmdline_count = pc->additional_cmdline_count;
                s = &legacy;
        }
        r = copy_pids(c, "target_pid", s->target_pid, s->n_target_pid, &perf->target_pids, &perf->n_target_pids);
        if (r >= 0)
                r = copy_pids(c, "exclude_pid", s->exclude_pid, s->n_exclude_pid, &perf->exclude_pids,
                              &perf->n_exclude_pids);
        if (r >= 0)
                r = session_config_copy_names(c, PERF_SOURCE, "target_cmdline", s->target_cmdline, s->n_target_cmdline,
                                              PERF_MAX_SCOPE_ENTRIES, PERF_MAX_CMDLINE_LEN, &perf->target_cmdlines);
        if (r >= 0)
                r = session_config_copy_names(c, PERF_SOURCE, "exclude_cmdline", s->exclude_cmdline, s->n_exclude_cmdline,
                                              PERF_MAX_SCOPE_ENTRIES, PERF_MAX_CMDLINE_LEN, &perf->exclude_cmdlines);
        if (r < 0)
                return r;
        perf->additional_cmdline_count = MIN(s->additional_cmdline_count, (uint32_t) PERF_MAX_SCOPE_ENTRIES);
        perf->process_shard_count = s->process_shard_count;
        return 0;
}

/* kernel_frames and user_frames: the kernel's callchain (frame pointers) either way. */
static int load_frames(const Tracebus__PerfEventConfig *pc, PerfSection *perf, SessionConfig *c) {
        const Tracebus__PerfEventConfig__CallstackSampling *cs = pc->callstack_sampling;

        /* Without callstack_sampling (and its legacy fields), Perfetto records counts only. */
        perf->callstacks = cs || pc->n_target_pid || pc->n_target_cmdline || pc->has_kernel_frames ||
                pc->all_cpus;
        perf->kernel_frames = cs ? cs->kernel_frames : pc->kernel_frames;
        perf->user_frames = perf->callstacks &&
                (!cs || !cs->has_user_frames || cs->user_frames != TRACEBUS__PERF_EVENT_CONFIG__UNWIND_MODE__UNWIND_SKIP);
        perf->unwind_dwarf = perf->user_frames && (!cs || !cs->has_user_frames ||
                cs->user_frames == TRACEBUS__PERF_EVENT_CONFIG__UNWIND_MODE__UNWIND_DWARF ||
                cs->user_frames == TRACEBUS__PERF_EVENT_CONFIG__UNWIND_MODE__UNWIND_UNKNOWN);
#if !defined(__x86_64__)
        if (perf->unwind_dwarf)
                return session_config_warn(c, PERF_SOURCE ": user_frames UNWIND_DWARF is x86-64 only here: user "
                                           "frames come from the kernel's frame-pointer callchain");
#endif
        return 0;
}

static int load_sizes(const Tracebus__PerfEventConfig *pc, PerfSection *perf, SessionConfig *c) {
        uint32_t pages = pc->ring_buffer_pages ?: PERF_DEFAULT_RING_PAGES;
        int r = 0;

        /* The kernel maps 2^n data pages; Perfetto refuses others, tracebus rounds down. */
        if ((pages & (pages - 1)) != 0 || pages > PERF_MAX_RING_PAGES) {
                uint32_t p = 1;

                while (p * 2 <= MIN(pages, PERF_MAX_RING_PAGES))
                        p *= 2;
                if (pages > PERF_MAX_RING_PAGES)
                        r = session_config_warn(c, PERF_SOURCE ": ring_buffer_pages %u is over tracebus's cap of %u "
                                                "pages per CPU: %u used", pages, PERF_MAX_RING_PAGES, p);
                else
                        r = session_config_warn(c, PERF_SOURCE ": ring_buffer_pages %u is not a power of two: %u used",
                                                pages, p);
                pages = p;
        }
        perf->ring_pages = pages;
        perf->read_period_ms = pc->ring_buffer_read_period_ms ?: PERF_DEFAULT_READ_PERIOD_MS;
        perf->read_period_ms = CLAMP(perf->read_period_ms, 1u, 10000u);
        perf->max_enqueued_kb = pc->max_enqueued_footprint_kb ?: PERF_DEFAULT_MAX_ENQUEUED_KB;
        perf->max_enqueued_kb = MIN(perf->max_enqueued_kb, (uint64_t) PERF_DEFAULT_MAX_ENQUEUED_KB);
        perf->max_memory_kb = pc->max_daemon_memory_kb ?: PERF_DEFAULT_MAX_MEMORY_KB;
        perf->max_memory_kb = MIN(perf->max_memory_kb, PERF_DEFAULT_MAX_MEMORY_KB);
        return r;
}

/* What tracebus does not do of a PerfEventConfig: one warning each. */
static int warn_skipped(const Tracebus__PerfEventConfig *pc, SessionConfig *c) {
        int r = 0;

        if (pc->n_followers > 0)
                r = session_config_warn(c, PERF_SOURCE ": followers are not recorded yet: %zu skipped", pc->n_followers);
        if (r >= 0 && pc->n_target_cpu > 0)
                r = session_config_warn(c, PERF_SOURCE ": target_cpu is not supported: every CPU sampled");
        if (r >= 0 && pc->n_target_installed_by > 0)
                r = session_config_warn(c, PERF_SOURCE ": target_installed_by is Android's: skipped");
        return r;
}

static int load_one(const Tracebus__TraceConfig *tc, const Tracebus__DataSourceConfig *ds, const char *root,
                    PerfSection *perf, SessionConfig *c, char **ret_error) {
        static const Tracebus__PerfEventConfig defaults = TRACEBUS__PERF_EVENT_CONFIG__INIT;
        const Tracebus__PerfEventConfig *pc = ds->perf_event_config ?: &defaults;
        int r;

        r = session_config_target_buffer(tc, ds, &perf->target_buffer, ret_error);
        if (r < 0)
                return r;
        r = load_timebase(pc, root, perf, c, ret_error);
        if (r >= 0)
                r = load_scope(pc, perf, c);
        if (r >= 0)
                r = load_frames(pc, perf, c);
        if (r >= 0)
                r = load_sizes(pc, perf, c);
        if (r >= 0)
                r = warn_skipped(pc, c);
        if (r < 0)
                return r;
        if (pc->timebase && pc->timebase->name && !(perf->timebase_name = strdup(pc->timebase->name)))
                return -ENOMEM;
        return 0;
}

int perf_load(const Tracebus__TraceConfig *tc, const char *root, SessionConfig *c, void **ret, char **ret_error) {
        const Tracebus__DataSourceConfig *ds = data_source_first_config(perf_source_names, tc);
        _cleanup_(perf_section_freep) PerfSection *perf = NULL;
        int r;

        if (!ds)
                return 0;
        perf = calloc(1, sizeof(*perf));
        if (!perf)
                return -ENOMEM;
        r = load_one(tc, ds, root, perf, c, ret_error);
        if (r >= 0)
                r = data_source_warn_repeats(perf_source_names, tc, c, "linux.perf data source");
        if (r < 0)
                return r;
        *ret = TAKE_PTR(perf);
        return 0;
}

void perf_section_free(void *section) {
        PerfSection *perf = section;

        if (!perf)
                return;
        free(perf->tracepoint);
        free(perf->tracepoint_filter);
        free(perf->timebase_name);
        free(perf->target_pids);
        free(perf->exclude_pids);
        strv_free(perf->target_cmdlines);
        strv_free(perf->exclude_cmdlines);
        free(perf);
}
