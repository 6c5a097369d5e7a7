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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fd-util.h"
#include "log.h"
#include "macro.h"
#include "process-scan.h"
#include "process-stats.h"
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

struct ProcessStatsSource {
        Poller *poller;
        PollerEntry *entry;
        Recorder *rec;
        uid_t owner_uid;
        bool smaps, runtime;
        uint32_t ttl_ticks, ticks;     /* ttl_ticks 0: values are written only when they change */
        uint32_t target_buffer;
        size_t max_entries;
        uint64_t ns_per_tick;
        ProcValues *last, *now;        /* sorted by pid: the values last written, this poll's */
        size_t n_last, n_now, allocated;
        Tracebus__ProcessStats__Process *out;
        Tracebus__ProcessStats__Process **outp;
        uint8_t *packed;
        size_t packed_allocated;
        uint64_t over_limit;           /* processes left out of polls past max_entries */
};

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

/* The real uid of a status text, or -1. */
static long status_uid(const char *status) {
        const char *uid = strstr(status, "\nUid:");

        return uid ? strtol(uid + 5, NULL, 10) : -1;
}

/* utime and stime (fields 14 and 15 of /proc/PID/stat, after the comm in parentheses). */
static void read_runtime(ProcessStatsSource *s, int proc_fd, ProcValues *v) {
        char buf[1024];
        unsigned long long utime, stime;
        const char *p;

        if (read_pid_file(proc_fd, v->pid, "stat", buf, sizeof(buf)) < 0 || !(p = strrchr(buf, ')')))
                return;
        if (sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) != 2)
                return;
        v->v[PS_RUNTIME_USER] = (int64_t) (utime * s->ns_per_tick);
        v->v[PS_RUNTIME_KERNEL] = (int64_t) (stime * s->ns_per_tick);
}

/* Reads process @pid; false when there is nothing to write of it (gone, or a kernel
 * thread without memory counters and no run times asked). */
static bool read_process(ProcessStatsSource *s, int proc_fd, int32_t pid, ProcValues *v) {
        char buf[4096];
        bool mem;

        v->pid = pid;
        for (unsigned i = 0; i < _PS_MAX; i++)
                v->v[i] = PS_NONE;
        if (read_pid_file(proc_fd, pid, "status", buf, sizeof(buf)) < 0)
                return false;
        mem = parse_kb_lines(buf, v);
        if (!mem)
                v->v[PS_VM_SIZE] = PS_NONE;   /* a kernel thread: Perfetto writes no memory */
        /* smaps_rollup is the caller's to read only for its own processes, as for ptrace. */
        if (mem && s->smaps && (s->owner_uid == 0 || status_uid(buf) == (long) s->owner_uid) &&
            read_pid_file(proc_fd, pid, "smaps_rollup", buf, sizeof(buf)) > 0)
                (void) parse_kb_lines(buf, v);
        if (mem && read_pid_file(proc_fd, pid, "oom_score_adj", buf, sizeof(buf)) > 0)
                v->v[PS_OOM_SCORE_ADJ] = strtoll(buf, NULL, 10);
        if (s->runtime)
                read_runtime(s, proc_fd, v);
        return mem || s->runtime;
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

/* Room for @n processes (at most max_entries) in every per-process array. */
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

/* The numeric entries of /proc, read and compared with what was written last; the
 * messages in s->outp. Returns how many. */
static size_t scan(ProcessStatsSource *s, DIR *d) {
        size_t n_out = 0;

        s->n_now = 0;
        for (struct dirent *de; (de = readdir(d));) {
                char *end;
                long pid = strtol(de->d_name, &end, 10);
                ProcValues *v, *last;

                if (de->d_name[0] < '1' || de->d_name[0] > '9' || *end || pid > INT32_MAX)
                        continue;
                if (s->n_now >= s->max_entries || reserve(s, s->n_now + 1) < 0) {
                        if (s->over_limit++ == 0)
                                (void) recorder_warn(s->rec, "linux.process_stats: more than %zu processes: the "
                                                     "rest are left out of ProcessStats", s->max_entries);
                        continue;
                }
                v = &s->now[s->n_now];
                if (!read_process(s, dirfd(d), (int32_t) pid, v))
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

static void submit(ProcessStatsSource *s, uint64_t start_ns, size_t n_out) {
        Tracebus__TracePacket packet = TRACEBUS__TRACE_PACKET__INIT;
        Tracebus__ProcessStats stats = TRACEBUS__PROCESS_STATS__INIT;
        size_t len;

        stats.n_processes = n_out;
        stats.processes = s->outp;
        stats.has_collection_end_timestamp = true;
        stats.collection_end_timestamp = now_ns(CLOCK_BOOTTIME);
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

/* On the pollers' thread. */
static void poll_processes(uint64_t now, void *userdata) {
        ProcessStatsSource *s = userdata;
        _cleanup_(closedirp) DIR *d = NULL;
        ProcValues *t;
        size_t n_out;

        /* Every ttl, everything is written again (traced_probes clears its cache). */
        if (s->ttl_ticks > 0 && ++s->ticks >= s->ttl_ticks) {
                s->ticks = 0;
                s->n_last = 0;
        }
        d = opendir("/proc");
        if (!d)
                return;
        n_out = scan(s, d);
        /* readdir gives /proc in pid order, but a pid may come back out of it. */
        qsort(s->now, s->n_now, sizeof(ProcValues), values_cmp);
        t = s->last;
        s->last = s->now;
        s->now = t;
        s->n_last = s->n_now;
        if (n_out > 0)
                submit(s, now, n_out);
}

int process_stats_start(Poller *poller, Recorder *rec, const SessionConfig *config, uid_t owner_uid,
                        ProcessStatsSource **ret) {
        ProcessStatsSource *s;
        long hz = sysconf(_SC_CLK_TCK);
        int r;

        *ret = NULL;
        if (!config->process_stats || config->process_stats_poll_ms == 0)
                return 0;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        *s = (ProcessStatsSource) {
                .poller = poller,
                .rec = rec,
                .owner_uid = owner_uid,
                .smaps = config->process_stats_smaps,
                .runtime = config->process_stats_runtime,
                .ttl_ticks = config->process_stats_cache_ttl_ms / config->process_stats_poll_ms,
                .target_buffer = config->process_stats_target_buffer,
                .max_entries = config->max_process_entries ?: PROCESS_TREE_DEFAULT_MAX_ENTRIES,
                .ns_per_tick = hz > 0 ? 1000000000ull / (uint64_t) hz : 10000000ull,
        };
        if (config->process_stats_cache_ttl_ms > 0)
                s->ttl_ticks = MAX(s->ttl_ticks, 1u);
        r = poller_add(poller, config->process_stats_poll_ms, poll_processes, s, &s->entry);
        if (r < 0) {
                free(s);
                return r;
        }
        *ret = s;
        return 0;
}

ProcessStatsSource *process_stats_stop(ProcessStatsSource *s) {
        if (!s)
                return NULL;
        poller_remove(s->poller, s->entry);
        if (s->over_limit > 0)
                log_info("linux.process_stats: %" PRIu64 " processes left out of polls, past the limit of %zu.",
                         s->over_limit, s->max_entries);
        free(s->last);
        free(s->now);
        free(s->out);
        free(s->outp);
        free(s->packed);
        return mfree(s);
}

int process_stats_queue_final(ProcessStatsSource *s, const void *owner) {
        return s ? poller_call(s->poller, poll_processes, s, owner) : 0;
}
