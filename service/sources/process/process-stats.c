/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * linux.process_stats: ProcessStats packets every proc_stats_poll_ms, as traced_probes
 * writes them: a process's value only when it changed since the last one written, all of
 * them again every proc_stats_cache_ttl_ms, so that a ring trace still holds each one.
 * What a poll reads is bounded: at most the session's MaxProcessEntries processes.
 * trace_processor names the tracks from the fields (mem.virt, mem.rss, mem.rss.anon,
 * mem.rss.file, mem.rss.shmem, mem.swap, mem.locked, mem.rss.watermark, oom_score_adj,
 * mem.smaps.*, runtime.user_ns / kernel_ns).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fd-util.h"
#include "log.h"
#include "macro.h"
#include "kernel/process-scan.h"
#include "kernel/process-view.h"
#include "process-stats.h"
#include "sources/poller-feeds.h"
#include "time-util.h"
#include "trace-writer.h"

enum {
        PS_VM_SIZE, PS_VM_RSS, PS_RSS_ANON, PS_RSS_FILE, PS_RSS_SHMEM, PS_VM_SWAP, PS_VM_LOCKED, PS_VM_HWM,
        PS_OOM_SCORE_ADJ,
        PS_SMR_RSS, PS_SMR_PSS, PS_SMR_PSS_ANON, PS_SMR_PSS_FILE, PS_SMR_PSS_SHMEM, PS_SMR_SWAP_PSS,
        PS_RUNTIME_USER, PS_RUNTIME_KERNEL,
        _PS_MAX,
};

DEFINE_TRIVIAL_CLEANUP_FUNC_VOID(DIR *, closedir);

#define PS_NONE INT64_MIN   /* not read (a kernel thread's memory, smaps_rollup of another user) */

typedef struct ProcValues {
        int32_t pid;
        int64_t v[_PS_MAX];
} ProcValues;

/* "Key:" lines of /proc/PID/status and smaps_rollup, in kB. */
static const struct { const char *key; unsigned idx; } kb_keys[] = {
        { "VmSize", PS_VM_SIZE }, { "VmRSS", PS_VM_RSS }, { "RssAnon", PS_RSS_ANON },
        { "RssFile", PS_RSS_FILE }, { "RssShmem", PS_RSS_SHMEM }, { "VmSwap", PS_VM_SWAP },
        { "VmLck", PS_VM_LOCKED }, { "VmHWM", PS_VM_HWM },
        { "Rss", PS_SMR_RSS }, { "Pss", PS_SMR_PSS }, { "Pss_Anon", PS_SMR_PSS_ANON },
        { "Pss_File", PS_SMR_PSS_FILE }, { "Pss_Shmem", PS_SMR_PSS_SHMEM }, { "SwapPss", PS_SMR_SWAP_PSS },
};

/* One process as the shared walk read it, for every subscriber. */
typedef struct ProcRead {
        ProcValues v;
        long owner;                    /* process_status_owner(): -1 if not one user's */
        bool smaps_denied;             /* smaps_rollup was asked for and the kernel refused it */
} ProcRead;

/* What one walk of /proc read: the processes in readdir order. */
typedef struct Walk {
        ProcRead *reads;
        size_t n, allocated;
} Walk;

struct ProcessStatsSource {
        struct Feed *feed;
        Recorder *rec;
        ProcessView view;              /* what of each process the session's owner may see */
        bool smaps, runtime;
        uint32_t ttl_ticks, ticks;     /* ttl_ticks 0: values are written only when they change */
        uint32_t target_buffer;
        size_t max_entries;
        ProcValues *last, *now;        /* sorted by pid: the values last written, this poll's */
        size_t n_last, n_now, allocated;
        Tracebus__ProcessStats__Process *out;
        Tracebus__ProcessStats__Process **outp;
        uint8_t *packed;
        size_t packed_allocated;
        uint64_t over_limit;           /* processes left out of polls past max_entries */
        bool smaps_denied_warned;
};

/*
 * The shared walks, as sys-stats.c's reads: one Feed per (poller, period), one poller
 * entry that walks /proc once a period for all its subscribers, reading what the union
 * of them asks (run times, smaps_rollup of the processes some subscriber may read), and
 * hands each session only its own: the processes its owner may see (kernel/process-view.h),
 * its counters, smaps_rollup of its own processes unless it sees all, its own change-only
 * state and cache ttl. The feed's lock (poller-feeds.h)
 * guards its subscribers and is held through a walk, so that after process_stats_stop()
 * nothing goes to that session's recorder.
 */
typedef struct Feed {
        PollerFeed base;
        ProcessStatsSource **subs;
        size_t n_subs, allocated;
        Walk walk;
} Feed;
static _Atomic uint64_t walks;

uint64_t process_stats_walks(void) {
        return atomic_load(&walks);
}

/* /proc/PID/@file into @buf (NUL-terminated); the length, or negative errno. */
static ssize_t read_pid_file(int proc_fd, int32_t pid, const char *file, char *buf, size_t size) {
        _cleanup_close_ int fd = -EBADF;
        char path[64];
        ssize_t n;

        snprintf(path, sizeof(path), "%d/%s", (int) pid, file);
        fd = openat(proc_fd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        n = read(fd, buf, size - 1);
        if (n < 0)
                return -errno;
        buf[n] = 0;
        return n;
}

/* The kB values of @text's "Key: N kB" lines we know; whether VmSize was one. */
static bool parse_kb_lines(const char *text, ProcValues *v) {
        bool mem = false;

        for (const char *line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
                size_t klen = strcspn(line, ":\n");

                if (line[klen] != ':')
                        continue;
                for (size_t i = 0; i < ELEMENTSOF(kb_keys); i++)
                        if (strlen(kb_keys[i].key) == klen && strncmp(line, kb_keys[i].key, klen) == 0) {
                                v->v[kb_keys[i].idx] = strtoll(line + klen + 1, NULL, 10);
                                mem = mem || kb_keys[i].idx == PS_VM_SIZE;
                        }
        }
        return mem;
}

/* utime and stime (fields 14 and 15 of a /proc/PID/stat text, after the comm in parentheses). */
static void parse_runtime(const char *stat, ProcValues *v) {
        static uint64_t ns_per_tick;
        unsigned long long utime, stime;
        const char *p = strrchr(stat, ')');

        if (ns_per_tick == 0) {
                long hz = sysconf(_SC_CLK_TCK);
                ns_per_tick = hz > 0 ? 1000000000ull / (uint64_t) hz : 10000000ull;
        }
        if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) != 2)
                return;
        v->v[PS_RUNTIME_USER] = (int64_t) (utime * ns_per_tick);
        v->v[PS_RUNTIME_KERNEL] = (int64_t) (stime * ns_per_tick);
}

static void read_runtime(int proc_fd, ProcValues *v) {
        char buf[1024];

        if (read_pid_file(proc_fd, v->pid, "stat", buf, sizeof(buf)) >= 0)
                parse_runtime(buf, v);
}

bool process_stats_parse_texts(const char *status, const char *smaps_rollup, const char *stat, long *ret_owner) {
        ProcValues v = {};
        bool mem;

        *ret_owner = process_status_owner(status);
        mem = parse_kb_lines(status, &v);
        if (smaps_rollup)
                (void) parse_kb_lines(smaps_rollup, &v);
        if (stat)
                parse_runtime(stat, &v);
        return mem;
}

/* Whether @s may have smaps_rollup of a process of @owner: its own, as for ptrace, or
 * every one for root and the holders of org.tracebus.manage. */
static bool smaps_allowed(ProcessStatsSource *s, long owner) {
        return s->smaps && process_view_sight(&s->view, owner) == PROCESS_SIGHT_WHOLE;
}

/* What the walk reads for @subs: run times if one asks, smaps_rollup of a process if
 * one may have it. */
typedef struct WalkWants {
        ProcessStatsSource *const *subs;
        size_t n_subs;
        bool runtime;
} WalkWants;

static bool wants_smaps(const WalkWants *w, long owner) {
        for (size_t i = 0; i < w->n_subs; i++)
                if (smaps_allowed(w->subs[i], owner))
                        return true;
        return false;
}

/* Reads process @pid; false when there is nothing to write of it (gone, or a kernel
 * thread without memory counters and no run times asked). */
static bool read_process(const WalkWants *w, int proc_fd, int32_t pid, ProcRead *r) {
        ProcValues *v = &r->v;
        char buf[4096];
        bool mem;

        v->pid = pid;
        r->smaps_denied = false;
        for (unsigned i = 0; i < _PS_MAX; i++)
                v->v[i] = PS_NONE;
        if (read_pid_file(proc_fd, pid, "status", buf, sizeof(buf)) < 0)
                return false;
        r->owner = process_status_owner(buf);
        mem = parse_kb_lines(buf, v);
        if (!mem)
                v->v[PS_VM_SIZE] = PS_NONE;   /* a kernel thread: Perfetto writes no memory */
        if (mem && wants_smaps(w, r->owner)) {
                ssize_t n = read_pid_file(proc_fd, pid, "smaps_rollup", buf, sizeof(buf));

                if (n > 0)
                        (void) parse_kb_lines(buf, v);
                /* ptrace's check: the service lacks CAP_SYS_PTRACE under its unit. */
                r->smaps_denied = n == -EACCES || n == -EPERM;
        }
        if (mem && read_pid_file(proc_fd, pid, "oom_score_adj", buf, sizeof(buf)) > 0)
                v->v[PS_OOM_SCORE_ADJ] = strtoll(buf, NULL, 10);
        if (w->runtime)
                read_runtime(proc_fd, v);
        return mem || w->runtime;
}

static int values_cmp(const void *a, const void *b) {
        int32_t x = ((const ProcValues *) a)->pid, y = ((const ProcValues *) b)->pid;

        return x < y ? -1 : x > y;
}

/* Sets the field of counter @i in @p to @value. */
static void set_field(Tracebus__ProcessStats__Process *p, unsigned i, int64_t value) {
        uint64_t u = (uint64_t) value;

        switch (i) {
#define KB(idx, f) case idx: p->has_##f = true; p->f = u; break
        KB(PS_VM_SIZE, vm_size_kb); KB(PS_VM_RSS, vm_rss_kb); KB(PS_RSS_ANON, rss_anon_kb);
        KB(PS_RSS_FILE, rss_file_kb); KB(PS_RSS_SHMEM, rss_shmem_kb); KB(PS_VM_SWAP, vm_swap_kb);
        KB(PS_VM_LOCKED, vm_locked_kb); KB(PS_VM_HWM, vm_hwm_kb);
        KB(PS_SMR_RSS, smr_rss_kb); KB(PS_SMR_PSS, smr_pss_kb); KB(PS_SMR_PSS_ANON, smr_pss_anon_kb);
        KB(PS_SMR_PSS_FILE, smr_pss_file_kb); KB(PS_SMR_PSS_SHMEM, smr_pss_shmem_kb);
        KB(PS_SMR_SWAP_PSS, smr_swap_pss_kb);
        KB(PS_RUNTIME_USER, runtime_user_mode); KB(PS_RUNTIME_KERNEL, runtime_kernel_mode);
#undef KB
        case PS_OOM_SCORE_ADJ:
                p->has_oom_score_adj = true;
                p->oom_score_adj = value;
                break;
        }
}

/* The message for @now: the values that differ from @last (NULL: all). Whether any. */
static bool fill_process(Tracebus__ProcessStats__Process *p, const ProcValues *now, const ProcValues *last) {
        bool any = false;

        tracebus__process_stats__process__init(p);
        p->has_pid = true;
        p->pid = now->pid;
        for (unsigned i = 0; i < _PS_MAX; i++) {
                if (now->v[i] == PS_NONE || (last && last->v[i] == now->v[i]))
                        continue;
                set_field(p, i, now->v[i]);
                any = true;
        }
        return any;
}

static int grow(void **array, size_t n, size_t size) {
        void *p = reallocarray(*array, n, size);

        if (!p)
                return -ENOMEM;
        *array = p;
        return 0;
}

/* Room for @n processes (at most max_entries) in every per-process array of @s. */
static int reserve(ProcessStatsSource *s, size_t n) {
        size_t a = MIN(MAX(MAX(s->allocated * 2, (size_t) 256), n), s->max_entries);

        if (n <= s->allocated)
                return 0;
        if (grow((void **) &s->last, a, sizeof(ProcValues)) < 0 || grow((void **) &s->now, a, sizeof(ProcValues)) < 0 ||
            grow((void **) &s->out, a, sizeof(*s->out)) < 0 || grow((void **) &s->outp, a, sizeof(*s->outp)) < 0)
                return -ENOMEM;
        s->allocated = a;
        return 0;
}

/* One walk of /proc for @w's subscribers, at most @max processes kept. */
static void walk_proc(Walk *walk, const WalkWants *w, size_t max) {
        _cleanup_(closedirp) DIR *d = opendir("/proc");

        walk->n = 0;
        if (!d)
                return;
        atomic_fetch_add(&walks, 1);
        for (struct dirent *de; (de = readdir(d));) {
                char *end;
                long pid = strtol(de->d_name, &end, 10);

                if (de->d_name[0] < '1' || de->d_name[0] > '9' || *end || pid > INT32_MAX)
                        continue;
                if (walk->n >= max)
                        break;   /* each subscriber counts and warns about its own */
                if (walk->n >= walk->allocated) {
                        size_t a = MIN(MAX(walk->allocated * 2, (size_t) 256), max);

                        if (grow((void **) &walk->reads, a, sizeof(ProcRead)) < 0)
                                break;
                        walk->allocated = a;
                }
                if (read_process(w, dirfd(d), (int32_t) pid, &walk->reads[walk->n]))
                        walk->n++;
        }
}

/* @r as @s may have it: its counters, smaps_rollup only of its own processes; nothing of
 * a process /proc hides from the session's owner. */
static bool view_process(ProcessStatsSource *s, const ProcRead *r, ProcValues *v) {
        static const unsigned smaps[] = { PS_SMR_RSS, PS_SMR_PSS, PS_SMR_PSS_ANON, PS_SMR_PSS_FILE,
                                          PS_SMR_PSS_SHMEM, PS_SMR_SWAP_PSS };

        if (r->v.v[PS_VM_SIZE] == PS_NONE && !s->runtime)
                return false;
        if (process_view_sight(&s->view, r->owner) == PROCESS_SIGHT_NONE)
                return false;
        *v = r->v;
        if (r->smaps_denied && smaps_allowed(s, r->owner) && !s->smaps_denied_warned) {
                /* Never silent: the fields are missing because the kernel said no. */
                s->smaps_denied_warned = true;
                (void) recorder_warn(s->rec, "linux.process_stats scan_smaps_rollup: the kernel refuses the service "
                                     "/proc/PID/smaps_rollup (a ptrace check; tracebusd runs without "
                                     "CAP_SYS_PTRACE): the smaps fields are left out");
        }
        if (!smaps_allowed(s, r->owner))
                for (size_t i = 0; i < ELEMENTSOF(smaps); i++)
                        v->v[smaps[i]] = PS_NONE;
        if (!s->runtime)
                v->v[PS_RUNTIME_USER] = v->v[PS_RUNTIME_KERNEL] = PS_NONE;
        return true;
}

/* The walk compared with what @s wrote last; the messages in s->outp. Returns how many. */
static size_t diff(ProcessStatsSource *s, const Walk *walk) {
        size_t n_out = 0;

        /* Every ttl, everything is written again (traced_probes clears its cache). */
        if (s->ttl_ticks > 0 && ++s->ticks >= s->ttl_ticks) {
                s->ticks = 0;
                s->n_last = 0;
        }
        s->n_now = 0;
        for (size_t i = 0; i < walk->n; i++) {
                ProcValues *v, *last;

                if (s->n_now >= s->max_entries || reserve(s, s->n_now + 1) < 0) {
                        if (s->over_limit++ == 0)
                                (void) recorder_warn(s->rec, "linux.process_stats: more than %zu processes: the "
                                                     "rest are left out of ProcessStats", s->max_entries);
                        continue;
                }
                v = &s->now[s->n_now];
                if (!view_process(s, &walk->reads[i], v))
                        continue;
                s->n_now++;
                last = s->n_last > 0 ? bsearch(v, s->last, s->n_last, sizeof(ProcValues), values_cmp) : NULL;
                if (fill_process(&s->out[n_out], v, last)) {
                        s->outp[n_out] = &s->out[n_out];
                        n_out++;
                }
        }
        return n_out;
}

static void submit(ProcessStatsSource *s, uint64_t start_ns, uint64_t end_ns, size_t n_out) {
        Tracebus__TracePacket packet = TRACEBUS__TRACE_PACKET__INIT;
        Tracebus__ProcessStats stats = TRACEBUS__PROCESS_STATS__INIT;
        size_t len;

        stats.n_processes = n_out;
        stats.processes = s->outp;
        stats.has_collection_end_timestamp = true;
        stats.collection_end_timestamp = end_ns;
        packet.has_timestamp = true;
        packet.timestamp = start_ns;
        packet.process_stats = &stats;
        len = tracebus__trace_packet__get_packed_size(&packet);
        if (len > s->packed_allocated) {
                if (grow((void **) &s->packed, len, 1) < 0)
                        return;
                s->packed_allocated = len;
        }
        len = tracebus__trace_packet__pack(&packet, s->packed);
        (void) recorder_submit_packet(s->rec, TRACE_SEQUENCE_PROCESS_STATS, s->target_buffer, /* meta= */ false,
                                      s->packed, len);
}

/* One session's packet from a walk: its changes since its last one. */
static void emit(ProcessStatsSource *s, const Walk *walk, uint64_t start_ns, uint64_t end_ns) {
        ProcValues *t;
        size_t n_out = diff(s, walk);

        /* readdir gives /proc in pid order, but a pid may come back out of it. */
        qsort(s->now, s->n_now, sizeof(ProcValues), values_cmp);
        t = s->last;
        s->last = s->now;
        s->now = t;
        s->n_last = s->n_now;
        if (n_out > 0)
                submit(s, start_ns, end_ns, n_out);
}

/* One walk for @subs, each handed its own packet. */
static void walk_and_emit(Walk *walk, ProcessStatsSource *const *subs, size_t n_subs, uint64_t start_ns) {
        WalkWants w = { .subs = subs, .n_subs = n_subs };
        size_t max = 0;
        uint64_t end_ns;

        for (size_t i = 0; i < n_subs; i++) {
                w.runtime = w.runtime || subs[i]->runtime;
                max = MAX(max, subs[i]->max_entries + 1);   /* + 1: one past the limit is noticed */
        }
        walk_proc(walk, &w, max);
        end_ns = now_ns(CLOCK_BOOTTIME);
        for (size_t i = 0; i < n_subs; i++)
                emit(subs[i], walk, start_ns, end_ns);
}

/* On the pollers' thread. */
static void feed_poll(uint64_t now, void *userdata) {
        Feed *f = userdata;

        (void) pthread_mutex_lock(&f->base.lock);
        if (f->n_subs > 0)
                walk_and_emit(&f->walk, f->subs, f->n_subs, now);
        (void) pthread_mutex_unlock(&f->base.lock);
}

/* A walk that outlasts its period, again and again: every subscriber is told. */
static void feed_slow(uint64_t took_ns, uint64_t period_ns, void *userdata) {
        Feed *f = userdata;

        (void) pthread_mutex_lock(&f->base.lock);
        for (size_t i = 0; i < f->n_subs; i++)
                (void) recorder_warn(f->subs[i]->rec, "linux.process_stats: reading /proc took %" PRIu64 " ms, more "
                                     "than the %" PRIu64 " ms period, %u times in a row: samples come late",
                                     took_ns / 1000000, period_ns / 1000000, POLLER_SLOW_RUNS);
        (void) pthread_mutex_unlock(&f->base.lock);
}

static void feed_done(PollerFeed *base) {
        Feed *f = (Feed *) base;

        free(f->subs);
        free(f->walk.reads);
}

static PollerFeeds feeds = POLLER_FEEDS_INIT(Feed, feed_poll, feed_slow, feed_done);

/* Under the feed's lock. */
static int add_subscriber(PollerFeed *base, void *userdata) {
        Feed *f = (Feed *) base;
        int r;

        if (f->n_subs >= f->allocated) {
                r = grow((void **) &f->subs, f->allocated * 2 + 4, sizeof(*f->subs));
                if (r < 0)
                        return r;
                f->allocated = f->allocated * 2 + 4;
        }
        f->subs[f->n_subs++] = userdata;
        return 0;
}

static void remove_subscriber(PollerFeed *base, void *userdata) {
        Feed *f = (Feed *) base;

        for (size_t i = 0; i < f->n_subs; i++)
                if (f->subs[i] == userdata) {
                        f->subs[i] = f->subs[--f->n_subs];
                        break;
                }
}

static int subscribe(ProcessStatsSource *s, Poller *p, uint32_t period_ms) {
        PollerFeed *f;
        int r;

        r = poller_feed_join(&feeds, p, 0, period_ms, add_subscriber, s, &f);
        if (r >= 0)
                s->feed = (Feed *) f;
        return r;
}

int process_stats_start(const DataSourceContext *ctx, void *data, void **ret) {
        const ProcessStatsSection *section = data;
        uint32_t max_entries = ctx->config->max_process_entries;
        ProcessStatsSource *s;
        int r;

        *ret = NULL;
        if (section->poll_ms == 0)
                return 0;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        *s = (ProcessStatsSource) {
                .rec = ctx->recorder,
                .view = process_view_make(ctx->owner_uid, ctx->config->process_tree.owner_sees_all),
                .smaps = section->smaps,
                .runtime = section->runtime,
                .ttl_ticks = section->cache_ttl_ms / section->poll_ms,
                .target_buffer = section->target_buffer,
                .max_entries = max_entries ?: PROCESS_TREE_DEFAULT_MAX_ENTRIES,
        };
        if (section->cache_ttl_ms > 0)
                s->ttl_ticks = MAX(s->ttl_ticks, 1u);
        /* As poller_add() would: periods under the minimum are one. */
        r = subscribe(s, ctx->poller, MAX(section->poll_ms, POLLER_MIN_PERIOD_MS));
        if (r < 0) {
                free(s);
                return r;
        }
        *ret = s;
        return 0;
}

void process_stats_stop(void *state) {
        ProcessStatsSource *s = state;

        if (!s)
                return;
        poller_feed_leave(&feeds, &s->feed->base, remove_subscriber, s);
        if (s->over_limit > 0)
                log_info("linux.process_stats: %" PRIu64 " polls left processes out, past the limit of %zu.",
                         s->over_limit, s->max_entries);
        free(s->last);
        free(s->now);
        free(s->out);
        free(s->outp);
        free(s->packed);
        free(s);
}

/* At Stop: a walk of its own for this session (the feed's others keep their period). */
static void final_walk(uint64_t now, void *userdata) {
        ProcessStatsSource *s = userdata;
        Walk walk = {};

        walk_and_emit(&walk, &s, 1, now);
        free(walk.reads);
}

int process_stats_queue_final(void *state, const void *owner) {
        ProcessStatsSource *s = state;

        return s ? poller_call(s->feed->base.poller, final_walk, s, owner) : 0;
}
