/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "sources/poller-feeds.h"
#include "sys-stats.h"
#include "time-util.h"

/*
 * The shared reads. One Feed per (poller, period, kind): one poller entry reads, each
 * period, every counter group one of its subscribers wants at that period, into one
 * sample, and hands every subscribed session one SysStats packet of its own groups and
 * counters, as traced_probes writes one packet per tick. Sessions that ask for the same
 * group at the same period so share its read. Subscribing and unsubscribing happen on
 * the event loop; the reads run on the poller's thread. Each feed's lock (poller-feeds.h)
 * guards its subscribers, so that after sys_stats_unsubscribe() no packet goes to that
 * session's recorder. linux.sysfs_power's batteries are a feed of their own kind.
 */

typedef struct Subscriber {
        struct Subscriber *next;
        Recorder *rec;
        const SysStatsSelection *sel;
        uint32_t groups;                     /* 1 << SysStatsGroup, at this feed's period */
} Subscriber;

/* The kinds of feed. */
#define FEED_COUNTERS 0u
#define FEED_POWER 1u

typedef struct Feed {
        PollerFeed base;
        Subscriber *subscribers;
} Feed;

struct SysStatsSession {
        Poller *poller;
        Recorder *rec;
        SysStatsSelection sel;
        PollerEntry *system_info;            /* the one-off CpuInfo read */
        size_t n_feeds;                      /* one per distinct period, and the batteries' */
        Feed *feeds[_SYS_STATS_GROUP_MAX];
        Subscriber subs[_SYS_STATS_GROUP_MAX];
};

static _Atomic uint64_t group_reads[_SYS_STATS_GROUP_MAX];

uint64_t sys_stats_reads(SysStatsGroup group) {
        return group >= 0 && group < _SYS_STATS_GROUP_MAX ? atomic_load(&group_reads[group]) : 0;
}

static void sys_stats_freep(Tracebus__SysStats **s) {
        if (*s)
                tracebus__sys_stats__free_unpacked(*s, NULL);
}

static int read_proc(const char *path, int (*parse)(char *text, Tracebus__SysStats *out), Tracebus__SysStats *out) {
        _cleanup_free_ char *text = NULL;
        int r;

        r = sys_stats_read_file(path, &text, NULL);
        return r < 0 ? r : parse(text, out);
}

static int read_stat(Tracebus__SysStats *out) {
        _cleanup_free_ char *text = NULL;
        long hz = sysconf(_SC_CLK_TCK);
        int r;

        r = sys_stats_read_file("/proc/stat", &text, NULL);
        return r < 0 ? r : sys_stats_parse_stat(text, NSEC_PER_SEC / (uint64_t) (hz > 0 ? hz : 100), out);
}

static int read_psi(Tracebus__SysStats *out) {
        static const char *const resources[] = { "cpu", "io", "memory" };
        int r;

        for (size_t i = 0; i < ELEMENTSOF(resources); i++) {
                _cleanup_free_ char *text = NULL;
                char path[64];

                snprintf(path, sizeof(path), "/proc/pressure/%s", resources[i]);
                if (sys_stats_read_file(path, &text, NULL) < 0)
                        continue;
                r = sys_stats_parse_psi(text, resources[i], out);
                if (r < 0)
                        return r;
        }
        return 0;
}

int sys_stats_read_group(SysStatsGroup group, Tracebus__SysStats *out) {
        switch (group) {
        case SYS_STATS_MEMINFO:
                return read_proc("/proc/meminfo", sys_stats_parse_meminfo, out);
        case SYS_STATS_VMSTAT:
                return read_proc("/proc/vmstat", sys_stats_parse_vmstat, out);
        case SYS_STATS_STAT:
                return read_stat(out);
        case SYS_STATS_DEVFREQ:
                return sys_stats_read_devfreq("/sys/class/devfreq", out);
        case SYS_STATS_CPUFREQ:
                return sys_stats_read_cpufreq("/sys/devices/system/cpu", out);
        case SYS_STATS_BUDDYINFO:
                return read_proc("/proc/buddyinfo", sys_stats_parse_buddyinfo, out);
        case SYS_STATS_DISKSTAT:
                return read_proc("/proc/diskstats", sys_stats_parse_diskstats, out);
        case SYS_STATS_PSI:
                return read_psi(out);
        case SYS_STATS_THERMAL:
                return sys_stats_read_thermal("/sys/class/thermal", out);
        case SYS_STATS_CPUIDLE:
                return sys_stats_read_cpuidle("/sys/devices/system/cpu", out);
        case SYS_STATS_SLAB:
                return read_proc("/proc/slabinfo", sys_stats_parse_slabinfo, out);
        default:
                return -EINVAL;
        }
}

static int submit_packet(Recorder *rec, uint32_t sequence_id, uint32_t buffer, bool meta, const Tracebus__TracePacket *p) {
        size_t len = tracebus__trace_packet__get_packed_size(p);
        _cleanup_free_ uint8_t *buf = malloc(MAX(len, 1u));

        if (!buf)
                return -ENOMEM;
        (void) tracebus__trace_packet__pack(p, buf);
        return recorder_submit_packet(rec, sequence_id, buffer, meta, buf, len);
}

/* Keeps the entries of a key/value list whose key the session asked for. */
static void **filter_keys(void **items, size_t n, const SysStatsKeys *keys, size_t *ret_n) {
        void **kept = malloc(MAX(n, 1u) * sizeof(void *));
        size_t k = 0;

        if (!kept)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                /* MeminfoValue and VmstatValue share their layout (key first). */
                const Tracebus__SysStats__MeminfoValue *v = items[i];

                if (sys_stats_keys_test(keys, (uint32_t) v->key))
                        kept[k++] = items[i];
        }
        *ret_n = k;
        return kept;
}

/* Leaves out of @view the groups its subscriber did not ask for at this period. */
static void filter_groups(Tracebus__SysStats *view, uint32_t groups) {
#define KEEP(g) (groups & (1u << (g)))
        if (!KEEP(SYS_STATS_MEMINFO))
                view->n_meminfo = 0;
        if (!KEEP(SYS_STATS_VMSTAT))
                view->n_vmstat = 0;
        if (!KEEP(SYS_STATS_STAT)) {
                view->n_cpu_stat = view->n_num_irq = view->n_num_softirq = 0;
                view->has_num_irq_total = view->has_num_softirq_total = view->has_num_forks = false;
        }
        if (!KEEP(SYS_STATS_DEVFREQ))
                view->n_devfreq = 0;
        if (!KEEP(SYS_STATS_CPUFREQ))
                view->n_cpufreq_khz = 0;
        if (!KEEP(SYS_STATS_BUDDYINFO))
                view->n_buddy_info = 0;
        if (!KEEP(SYS_STATS_DISKSTAT))
                view->n_disk_stat = 0;
        if (!KEEP(SYS_STATS_PSI))
                view->n_psi = 0;
        if (!KEEP(SYS_STATS_THERMAL))
                view->n_thermal_zone = 0;
        if (!KEEP(SYS_STATS_CPUIDLE))
                view->n_cpuidle_state = 0;
        if (!KEEP(SYS_STATS_SLAB))
                view->n_slab_info = 0;
#undef KEEP
}

static void filter_stat(Tracebus__SysStats *view, uint32_t fields) {
        if (!(fields & (1u << TRACEBUS__SYS_STATS_CONFIG__STAT_COUNTERS__STAT_CPU_TIMES)))
                view->n_cpu_stat = 0;
        if (!(fields & (1u << TRACEBUS__SYS_STATS_CONFIG__STAT_COUNTERS__STAT_IRQ_COUNTS)))
                view->has_num_irq_total = false, view->n_num_irq = 0;
        if (!(fields & (1u << TRACEBUS__SYS_STATS_CONFIG__STAT_COUNTERS__STAT_SOFTIRQ_COUNTS)))
                view->has_num_softirq_total = false, view->n_num_softirq = 0;
        if (!(fields & (1u << TRACEBUS__SYS_STATS_CONFIG__STAT_COUNTERS__STAT_FORK_COUNT)))
                view->has_num_forks = false;
}

/* The sample as one subscriber asked for it: a shallow copy with its counters only. */
static int submit_sys_stats(const Subscriber *s, const Tracebus__SysStats *sample, uint64_t ts) {
        Tracebus__TracePacket p = TRACEBUS__TRACE_PACKET__INIT;
        Tracebus__SysStats view = *sample;
        _cleanup_free_ void **meminfo = NULL, **vmstat = NULL;

        if (sample->n_meminfo > 0) {
                meminfo = filter_keys((void **) sample->meminfo, sample->n_meminfo, &s->sel->meminfo, &view.n_meminfo);
                if (!meminfo)
                        return -ENOMEM;
                view.meminfo = (Tracebus__SysStats__MeminfoValue **) meminfo;
        }
        if (sample->n_vmstat > 0) {
                vmstat = filter_keys((void **) sample->vmstat, sample->n_vmstat, &s->sel->vmstat, &view.n_vmstat);
                if (!vmstat)
                        return -ENOMEM;
                view.vmstat = (Tracebus__SysStats__VmstatValue **) vmstat;
        }
        filter_stat(&view, s->sel->stat_fields);
        filter_groups(&view, s->groups);
        p.has_timestamp = true;
        p.timestamp = ts;
        p.sys_stats = &view;
        return submit_packet(s->rec, TRACE_SEQUENCE_SYS_STATS, s->sel->sys_stats_buffer, false, &p);
}

static uint32_t wanted_groups(Feed *f) {
        uint32_t groups = 0;

        (void) pthread_mutex_lock(&f->base.lock);
        for (Subscriber *s = f->subscribers; s; s = s->next)
                groups |= s->groups;
        (void) pthread_mutex_unlock(&f->base.lock);
        return groups;
}

/* @groups read into one sample, or NULL when out of memory. */
static Tracebus__SysStats *read_sample(uint32_t groups) {
        Tracebus__SysStats *sample = calloc(1, sizeof(*sample));
        int r;

        if (!sample)
                return NULL;
        tracebus__sys_stats__init(sample);
        for (SysStatsGroup g = 0; g < _SYS_STATS_GROUP_MAX; g++) {
                if (!(groups & (1u << g)))
                        continue;
                r = sys_stats_read_group(g, sample);
                if (r < 0)
                        log_debug_errno(r, "Reading the %s counters failed: %m", sys_stats_group_to_string(g));
                atomic_fetch_add(&group_reads[g], 1);
        }
        /* As Perfetto: the packet's time is when the read began, this when it ended. */
        sample->has_collection_end_timestamp = true;
        sample->collection_end_timestamp = now_ns(CLOCK_BOOTTIME);
        return sample;
}

/* Every group a subscriber wants at this period, read once into one sample. */
static void poll_sys_stats(Feed *f, uint64_t ts) {
        uint32_t groups = wanted_groups(f);
        _cleanup_(sys_stats_freep) Tracebus__SysStats *sample = read_sample(groups);

        if (!sample)
                return;
        (void) pthread_mutex_lock(&f->base.lock);
        for (Subscriber *s = f->subscribers; s; s = s->next)
                /* One that came while reading gets what was read of its groups next time. */
                if ((s->groups & groups) == s->groups)
                        (void) submit_sys_stats(s, sample, ts);
        (void) pthread_mutex_unlock(&f->base.lock);
}

static void submit_batteries(const Subscriber *s, Tracebus__BatteryCounters **b, size_t n, uint64_t ts) {
        for (size_t i = 0; i < n; i++) {
                Tracebus__TracePacket p = TRACEBUS__TRACE_PACKET__INIT;

                p.has_timestamp = true;
                p.timestamp = ts;
                p.battery = b[i];
                (void) submit_packet(s->rec, TRACE_SEQUENCE_POWER, s->sel->power_buffer, false, &p);
        }
}

/* The batteries for @only, or for every subscriber of @f. */
static void poll_power(Feed *f, const Subscriber *only, uint64_t ts) {
        Tracebus__BatteryCounters **b = NULL;
        size_t n = 0;

        if (power_read_batteries("/sys/class/power_supply", &b, &n) < 0)
                return;
        atomic_fetch_add(&group_reads[SYS_STATS_POWER], 1);
        if (only)
                submit_batteries(only, b, n, ts);
        else {
                (void) pthread_mutex_lock(&f->base.lock);
                for (Subscriber *s = f->subscribers; s; s = s->next)
                        submit_batteries(s, b, n, ts);
                (void) pthread_mutex_unlock(&f->base.lock);
        }
        power_batteries_free(b, n);
}

static void feed_poll(uint64_t now_ns, void *userdata) {
        Feed *f = userdata;

        if (f->base.kind == FEED_POWER)
                poll_power(f, NULL, now_ns);
        else
                poll_sys_stats(f, now_ns);
}

static PollerFeeds feeds = POLLER_FEEDS_INIT(Feed, feed_poll, NULL, NULL);

/* Under the feed's lock. */
static int add_subscriber(PollerFeed *base, void *userdata) {
        Feed *f = (Feed *) base;
        Subscriber *sub = userdata;

        sub->next = f->subscribers;
        f->subscribers = sub;
        return 0;
}

static void remove_subscriber(PollerFeed *base, void *userdata) {
        Feed *f = (Feed *) base;

        for (Subscriber **j = &f->subscribers; *j; j = &(*j)->next)
                if (*j == userdata) {
                        *j = (*j)->next;
                        break;
                }
}

/* Subscribes @s to the feed of @period_ms (of the batteries when @power) for @groups. */
static int subscribe_period(SysStatsSession *s, bool power, uint32_t period_ms, uint32_t groups) {
        size_t i = s->n_feeds;
        PollerFeed *f;
        int r;

        s->subs[i] = (Subscriber) { .rec = s->rec, .sel = &s->sel, .groups = groups };
        r = poller_feed_join(&feeds, s->poller, power ? FEED_POWER : FEED_COUNTERS, period_ms, add_subscriber,
                             &s->subs[i], &f);
        if (r < 0)
                return r;
        s->feeds[i] = (Feed *) f;
        s->n_feeds++;
        return 0;
}

static void unsubscribe_one(SysStatsSession *s, size_t i) {
        poller_feed_leave(&feeds, &s->feeds[i]->base, remove_subscriber, &s->subs[i]);
        s->feeds[i] = NULL;
}

/* One subscription per distinct period of the session's groups, and the batteries'. */
static int subscribe_all(SysStatsSession *s) {
        uint32_t done = 0;
        int r;

        for (SysStatsGroup g = 0; g < SYS_STATS_POWER; g++) {
                uint32_t period = s->sel.period_ms[g], groups = 0;

                if (period == 0 || (done & (1u << g)))
                        continue;
                for (SysStatsGroup h = g; h < SYS_STATS_POWER; h++)
                        if (s->sel.period_ms[h] == period)
                                groups |= 1u << h;
                done |= groups;
                r = subscribe_period(s, false, period, groups);
                if (r < 0)
                        return r;
        }
        if (s->sel.period_ms[SYS_STATS_POWER] > 0)
                return subscribe_period(s, true, s->sel.period_ms[SYS_STATS_POWER], 1u << SYS_STATS_POWER);
        return 0;
}

/* linux.system_info's IRQ names, after its CpuInfo, when
 * SystemInfoConfig.irq_names is true, as traced_probes writes them. */
static void poll_interrupts(uint64_t now_ns, SysStatsSession *s) {
        Tracebus__TracePacket p = TRACEBUS__TRACE_PACKET__INIT;
        Tracebus__InterruptInfo *irqs = NULL;
        int r;

        r = system_info_read_interrupts("/proc/interrupts", &irqs);
        if (r < 0) {
                log_debug_errno(r, "Reading /proc/interrupts failed: %m");
                return;
        }
        if (irqs->n_irq_mapping > 0) {
                p.has_timestamp = true;
                p.timestamp = now_ns;
                p.interrupt_info = irqs;
                (void) submit_packet(s->rec, TRACE_SEQUENCE_SYSTEM_INFO, 0, true, &p);
        }
        tracebus__interrupt_info__free_unpacked(irqs, NULL);
}

/* linux.system_info's one packet, read on the poller's thread like the rest. */
static void poll_system_info(uint64_t now_ns, void *userdata) {
        SysStatsSession *s = userdata;
        Tracebus__TracePacket p = TRACEBUS__TRACE_PACKET__INIT;
        Tracebus__CpuInfo *info = NULL;
        int r;

        r = system_info_read_cpus("/proc/cpuinfo", "/sys/devices/system/cpu", &info);
        if (r < 0) {
                log_debug_errno(r, "Reading the CPUs' description failed: %m");
                return;
        }
        p.has_timestamp = true;
        p.timestamp = now_ns;
        p.cpu_info = info;
        (void) submit_packet(s->rec, TRACE_SEQUENCE_SYSTEM_INFO, 0, true, &p);
        tracebus__cpu_info__free_unpacked(info, NULL);
        if (s->sel.irq_names)
                poll_interrupts(now_ns, s);
}

static bool selection_empty(const SysStatsSelection *sel) {
        for (SysStatsGroup g = 0; g < _SYS_STATS_GROUP_MAX; g++)
                if (sel->period_ms[g] > 0)
                        return false;
        return !sel->system_info;
}

int sys_stats_subscribe(const DataSourceContext *ctx, void *section, void **ret) {
        const SysStatsSelection *sel = section;
        Poller *poller = ctx->poller;
        SysStatsSession *s;
        int r = 0;

        *ret = NULL;
        if (selection_empty(sel))
                return 0;
        if (!poller)
                return -EINVAL;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        *s = (SysStatsSession) { .poller = poller, .rec = ctx->recorder, .sel = *sel };
        /* Once: the period only has to outlast any session. */
        if (sel->system_info)
                r = poller_add(poller, UINT32_MAX, poll_system_info, s, &s->system_info);
        if (r >= 0)
                r = subscribe_all(s);
        if (r < 0) {
                sys_stats_unsubscribe(s);
                return r;
        }
        *ret = s;
        return 0;
}

void sys_stats_unsubscribe(void *state) {
        SysStatsSession *s = state;

        if (!s)
                return;
        poller_remove(s->poller, s->system_info);
        for (size_t i = 0; i < s->n_feeds; i++)
                unsubscribe_one(s, i);
        free(s);
}

/* At Stop: each of the session's subscriptions read once more, for it alone (the
 * other subscribers keep their period). */
static void final_sample(uint64_t ts, void *userdata) {
        SysStatsSession *s = userdata;

        for (size_t i = 0; i < s->n_feeds; i++) {
                _cleanup_(sys_stats_freep) Tracebus__SysStats *sample = NULL;

                if (s->feeds[i]->base.kind == FEED_POWER) {
                        poll_power(s->feeds[i], &s->subs[i], ts);
                        continue;
                }
                sample = read_sample(s->subs[i].groups);
                if (sample)
                        (void) submit_sys_stats(&s->subs[i], sample, ts);
        }
}

int sys_stats_queue_final(void *state, const void *owner) {
        SysStatsSession *s = state;

        return s && s->n_feeds > 0 ? poller_call(s->poller, final_sample, s, owner) : 0;
}
