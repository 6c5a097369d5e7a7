/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "sys-stats.h"
#include "time-util.h"

/*
 * The shared reads. One Feed per (poller, group, period): one poller entry reads the
 * group's files once per period and hands every subscribed session a packet filtered
 * to the counters it asked for. Subscribing and unsubscribing happen on the event
 * loop; the reads run on the poller's thread. @feeds_lock guards the list, each
 * feed's @lock its subscribers, so that after sys_stats_unsubscribe() no packet goes
 * to that session's recorder.
 */

typedef struct Subscriber {
        struct Subscriber *next;
        Recorder *rec;
        const SysStatsSelection *sel;
} Subscriber;

typedef struct Feed {
        struct Feed *next;
        Poller *poller;
        SysStatsGroup group;
        uint32_t period_ms;
        PollerEntry *entry;
        pthread_mutex_t lock;
        Subscriber *subscribers;
} Feed;

struct SysStatsSession {
        Poller *poller;
        Recorder *rec;
        SysStatsSelection sel;
        PollerEntry *system_info;            /* the one-off CpuInfo read */
        Feed *feeds[_SYS_STATS_GROUP_MAX];
        Subscriber subs[_SYS_STATS_GROUP_MAX];
};

static pthread_mutex_t feeds_lock = PTHREAD_MUTEX_INITIALIZER;
static Feed *feeds;
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
        p.has_timestamp = true;
        p.timestamp = ts;
        p.sys_stats = &view;
        return submit_packet(s->rec, TRACE_SEQUENCE_SYS_STATS, s->sel->sys_stats_buffer, false, &p);
}

static void poll_sys_stats(Feed *f, uint64_t ts) {
        _cleanup_(sys_stats_freep) Tracebus__SysStats *sample = calloc(1, sizeof(*sample));
        int r;

        if (!sample)
                return;
        tracebus__sys_stats__init(sample);
        r = sys_stats_read_group(f->group, sample);
        if (r < 0)
                log_debug_errno(r, "Reading the %s counters failed: %m", sys_stats_group_to_string(f->group));
        /* As Perfetto: the packet's time is when the read began, this when it ended. */
        sample->has_collection_end_timestamp = true;
        sample->collection_end_timestamp = now_ns(CLOCK_BOOTTIME);
        atomic_fetch_add(&group_reads[f->group], 1);

        (void) pthread_mutex_lock(&f->lock);
        for (Subscriber *s = f->subscribers; s; s = s->next)
                (void) submit_sys_stats(s, sample, ts);
        (void) pthread_mutex_unlock(&f->lock);
}

static void poll_power(Feed *f, uint64_t ts) {
        Tracebus__BatteryCounters **b = NULL;
        size_t n = 0;

        if (power_read_batteries("/sys/class/power_supply", &b, &n) < 0)
                return;
        atomic_fetch_add(&group_reads[f->group], 1);
        (void) pthread_mutex_lock(&f->lock);
        for (Subscriber *s = f->subscribers; s; s = s->next)
                for (size_t i = 0; i < n; i++) {
                        Tracebus__TracePacket p = TRACEBUS__TRACE_PACKET__INIT;

                        p.has_timestamp = true;
                        p.timestamp = ts;
                        p.battery = b[i];
                        (void) submit_packet(s->rec, TRACE_SEQUENCE_POWER, s->sel->power_buffer, false, &p);
                }
        (void) pthread_mutex_unlock(&f->lock);
        power_batteries_free(b, n);
}

static void feed_poll(uint64_t now_ns, void *userdata) {
        Feed *f = userdata;

        if (f->group == SYS_STATS_POWER)
                poll_power(f, now_ns);
        else
                poll_sys_stats(f, now_ns);
}

static Feed *feed_find(Poller *p, SysStatsGroup group, uint32_t period_ms) {
        for (Feed *f = feeds; f; f = f->next)
                if (f->poller == p && f->group == group && f->period_ms == period_ms)
                        return f;
        return NULL;
}

static Feed *feed_free(Feed *f) {
        (void) pthread_mutex_destroy(&f->lock);
        return mfree(f);
}

/* Called with @feeds_lock held. */
static int feed_get(Poller *p, SysStatsGroup group, uint32_t period_ms, Feed **ret) {
        Feed *f = feed_find(p, group, period_ms);
        int r;

        if (f) {
                *ret = f;
                return 0;
        }
        f = calloc(1, sizeof(*f));
        if (!f)
                return -ENOMEM;
        *f = (Feed) { .poller = p, .group = group, .period_ms = period_ms };
        (void) pthread_mutex_init(&f->lock, NULL);
        r = poller_add(p, period_ms, feed_poll, f, &f->entry);
        if (r < 0) {
                feed_free(f);
                return r;
        }
        f->next = feeds;
        feeds = f;
        *ret = f;
        return 0;
}

static int subscribe_group(SysStatsSession *s, SysStatsGroup g) {
        Feed *f;
        int r;

        (void) pthread_mutex_lock(&feeds_lock);
        r = feed_get(s->poller, g, s->sel.period_ms[g], &f);
        if (r >= 0) {
                s->subs[g] = (Subscriber) { .rec = s->rec, .sel = &s->sel };
                (void) pthread_mutex_lock(&f->lock);
                s->subs[g].next = f->subscribers;
                f->subscribers = &s->subs[g];
                (void) pthread_mutex_unlock(&f->lock);
                s->feeds[g] = f;
        }
        (void) pthread_mutex_unlock(&feeds_lock);
        return r;
}

static void unsubscribe_group(SysStatsSession *s, SysStatsGroup g) {
        Feed *f = s->feeds[g];
        bool last;

        (void) pthread_mutex_lock(&feeds_lock);
        (void) pthread_mutex_lock(&f->lock);
        for (Subscriber **i = &f->subscribers; *i; i = &(*i)->next)
                if (*i == &s->subs[g]) {
                        *i = s->subs[g].next;
                        break;
                }
        last = !f->subscribers;
        (void) pthread_mutex_unlock(&f->lock);
        if (last)
                for (Feed **i = &feeds; *i; i = &(*i)->next)
                        if (*i == f) {
                                *i = f->next;
                                break;
                        }
        (void) pthread_mutex_unlock(&feeds_lock);

        /* Unlinked: no one else finds it. Waits for a read in progress. */
        if (last) {
                poller_remove(s->poller, f->entry);
                feed_free(f);
        }
        s->feeds[g] = NULL;
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
}

static bool selection_empty(const SysStatsSelection *sel) {
        for (SysStatsGroup g = 0; g < _SYS_STATS_GROUP_MAX; g++)
                if (sel->period_ms[g] > 0)
                        return false;
        return !sel->system_info;
}

int sys_stats_subscribe(Poller *poller, const SysStatsSelection *sel, Recorder *rec, SysStatsSession **ret) {
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
        *s = (SysStatsSession) { .poller = poller, .rec = rec, .sel = *sel };
        /* Once: the period only has to outlast any session. */
        if (sel->system_info)
                r = poller_add(poller, UINT32_MAX, poll_system_info, s, &s->system_info);
        for (SysStatsGroup g = 0; r >= 0 && g < _SYS_STATS_GROUP_MAX; g++)
                if (sel->period_ms[g] > 0)
                        r = subscribe_group(s, g);
        if (r < 0) {
                sys_stats_unsubscribe(s);
                return r;
        }
        *ret = s;
        return 0;
}

SysStatsSession *sys_stats_unsubscribe(SysStatsSession *s) {
        if (!s)
                return NULL;
        poller_remove(s->poller, s->system_info);
        for (SysStatsGroup g = 0; g < _SYS_STATS_GROUP_MAX; g++)
                if (s->feeds[g])
                        unsubscribe_group(s, g);
        return mfree(s);
}
