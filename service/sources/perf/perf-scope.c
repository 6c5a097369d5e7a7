/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Who linux.perf samples: the config's scope (target and exclude pids and cmdlines,
 * additional_cmdline_count, process_shard_count) and the owner's rights. A caller with
 * org.tracebus.record only is sampled processes whose real and effective uid are its
 * own, read from /proc/PID/status when the pid is first seen in a read pass; so a
 * process that execs a setuid binary or changes its uid is out of scope from the next
 * pass on (or at once: its exec record drops the cached verdict).
 */
#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fd-util.h"
#include "perf-local.h"
#include "perf-sampler.h"
#include "strv.h"

#define PERF_MAX_PROCS_PER_PASS 4096u
#define PERF_MAX_MAPS 4096u

/* The real and effective uids of @pid; -ESRCH once it is gone. */
static int read_uids(pid_t pid, uid_t *ret_real, uid_t *ret_effective) {
        _cleanup_free_ char *text = NULL;
        char path[64];
        unsigned real, effective;
        const char *line;

        snprintf(path, sizeof(path), "/proc/%d/status", (int) pid);
        if (read_full_file(path, 16384, &text, NULL) < 0)
                return -ESRCH;
        line = strstr(text, "\nUid:");
        if (!line || sscanf(line + 5, "%u %u", &real, &effective) != 2)
                return -EIO;
        *ret_real = real;
        *ret_effective = effective;
        return 0;
}

int perf_scope_authorize(SessionConfig *c, uid_t caller, bool manage, pid_t *ret_pid) {
        PerfSection *perf = data_source_section(c, &perf_data_source);

        if (!perf)
                return 0;
        perf->manage = manage || caller == 0;
        if (!perf->manage && perf->kernel_frames) {
                perf->kernel_frames = false;
                int r = session_config_warn(c, "linux.perf: kernel_frames need org.tracebus.manage: user frames only");
                if (r < 0)
                        return r;
        }
        if (perf->manage)
                return 0;
        for (size_t i = 0; i < perf->n_target_pids; i++) {
                uid_t real, effective;

                if (read_uids(perf->target_pids[i], &real, &effective) < 0)
                        continue;   /* gone: nothing of it can be sampled */
                if (real != caller || effective != caller) {
                        *ret_pid = perf->target_pids[i];
                        return -EPERM;
                }
        }
        return 0;
}

/* argv[0] of @pid and its base name, matched as Perfetto matches target_cmdline (a glob). */
static bool cmdline_matches(pid_t pid, char **patterns) {
        _cleanup_free_ char *text = NULL;
        char path[64];
        const char *base;

        if ((!(patterns) || !(patterns)[0]))
                return false;
        snprintf(path, sizeof(path), "/proc/%d/cmdline", (int) pid);
        if (read_full_file(path, 4096, &text, NULL) < 0 || !text[0])
                return false;
        base = strrchr(text, '/') ? strrchr(text, '/') + 1 : text;
        STRV_FOREACH(p, patterns)
                if (fnmatch(*p, text, 0) == 0 || fnmatch(*p, base, 0) == 0)
                        return true;
        return false;
}

static bool pid_listed(const int32_t *pids, size_t n, pid_t pid) {
        for (size_t i = 0; i < n; i++)
                if (pids[i] == pid)
                        return true;
        return false;
}

/* additional_cmdline_count: the first N other processes seen are sampled too. */
static bool admit_additional(PerfScope *s, pid_t pid) {
        const PerfSection *c = s->config;

        if (pid_listed(s->additional, s->n_additional, pid))
                return true;
        if (s->n_additional >= c->additional_cmdline_count)
                return false;
        s->additional[s->n_additional++] = pid;
        return true;
}

static bool owner_may_see(PerfScope *s, pid_t pid) {
        uid_t real, effective;

        if (s->manage)
                return true;
        if (pid <= 0 || read_uids(pid, &real, &effective) < 0)
                return false;
        return real == s->owner_uid && effective == s->owner_uid;
}

static bool judge(PerfScope *s, pid_t pid) {
        const PerfSection *c = s->config;
        bool targeted = c->n_target_pids > 0 || !(!(c->target_cmdlines) || !(c->target_cmdlines)[0]);

        if (pid_listed(c->exclude_pids, c->n_exclude_pids, pid) ||
            (pid > 0 && cmdline_matches(pid, c->exclude_cmdlines)))
                return false;
        if (c->process_shard_count > 0 && (uint32_t) pid % c->process_shard_count != s->chosen_shard)
                return false;
        if (targeted && !pid_listed(c->target_pids, c->n_target_pids, pid) &&
            !(pid > 0 && cmdline_matches(pid, c->target_cmdlines)) && !admit_additional(s, pid))
                return false;
        return owner_may_see(s, pid);
}

PerfProc *perf_scope_lookup(PerfScope *s, pid_t pid) {
        PerfProc *p;

        for (size_t i = 0; i < s->n_procs; i++)
                if (s->procs[i].pid == pid)
                        return &s->procs[i];
        if (s->n_procs >= PERF_MAX_PROCS_PER_PASS)
                return NULL;
        if (s->n_procs == s->allocated) {
                size_t n = MAX(s->allocated * 2, (size_t) 16);
                PerfProc *q = reallocarray(s->procs, n, sizeof(*q));

                if (!q)
                        return NULL;
                s->procs = q;
                s->allocated = n;
        }
        p = &s->procs[s->n_procs++];
        *p = (PerfProc) { .pid = pid, .in_scope = judge(s, pid) };
        return p;
}

void perf_maps_free(PerfProc *p) {
        for (size_t i = 0; i < p->n_maps; i++)
                free(p->maps[i].path);
        p->maps = mfree(p->maps);
        p->n_maps = 0;
}

/* One line of /proc/PID/maps, if executable: "start-end perms offset maj:min inode path". */
static int parse_map_line(const char *line, PerfMap *ret) {
        unsigned long long start, end, off, inode;
        unsigned maj, min;
        char perms[8];
        int n = 0;

        if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &off, &maj, &min, &inode, &n) < 7 ||
            perms[2] != 'x')
                return 0;
        *ret = (PerfMap) { .start = start, .end = end, .pgoff = off, .dev = ((uint64_t) maj << 32) | min,
                               .inode = inode };
        ret->path = strdup(n > 0 && line[n] ? line + n : "");
        return ret->path ? 1 : -ENOMEM;
}

/* The file of a mapping: its device and inode. */
static int compare_file(uint64_t dev_a, uint64_t inode_a, uint64_t dev_b, uint64_t inode_b) {
        if (dev_a != dev_b)
                return dev_a < dev_b ? -1 : 1;
        return inode_a < inode_b ? -1 : inode_a > inode_b;
}

static int compare_maps_by_file(const void *a, const void *b) {
        const PerfMap *x = a, *y = b;

        return compare_file(x->dev, x->inode, y->dev, y->inode);
}

/* The first of @p's mappings (sorted by file) of the file @dev, @inode; n_maps if none. */
static size_t first_of_file(const PerfProc *p, uint64_t dev, uint64_t inode) {
        size_t lo = 0, hi = p->n_maps;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (compare_file(p->maps[mid].dev, p->maps[mid].inode, dev, inode) < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

/* start_offset of each mapping of a file: the offset of the file's first mapping in
 * @text, of any permission. One pass over the lines, each file looked up among the
 * mappings sorted by file: a maps of many mappings costs no more than it is long. */
static void set_start_offsets(PerfProc *p, const char *text) {
        qsort(p->maps, p->n_maps, sizeof(*p->maps), compare_maps_by_file);
        for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
                unsigned long long off, inode;
                unsigned maj, min;
                uint64_t dev;

                if (sscanf(l, "%*x-%*x %*s %llx %x:%x %llu", &off, &maj, &min, &inode) != 4 || inode == 0)
                        continue;
                dev = ((uint64_t) maj << 32) | min;
                for (size_t i = first_of_file(p, dev, inode);
                     i < p->n_maps && p->maps[i].dev == dev && p->maps[i].inode == inode && !p->maps[i].has_start_offset;
                     i++) {
                        p->maps[i].start_offset = off;
                        p->maps[i].has_start_offset = true;
                }
        }
}

void perf_maps_parse(PerfProc *p, const char *text) {
        for (const char *l = text; l && *l && p->n_maps < PERF_MAX_MAPS; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
                _cleanup_free_ char *line = strndup(l, strcspn(l, "\n"));
                PerfMap m, *q;

                if (!line || parse_map_line(line, &m) <= 0)
                        continue;
                m.start_offset = m.pgoff;
                q = reallocarray(p->maps, p->n_maps + 1, sizeof(*q));
                if (!q) {
                        free(m.path);
                        break;
                }
                p->maps = q;
                p->maps[p->n_maps++] = m;
        }
        set_start_offsets(p, text);
}

static void read_maps(PerfProc *p) {
        _cleanup_free_ char *text = NULL;
        char path[64];

        p->maps_read = true;
        snprintf(path, sizeof(path), "/proc/%d/maps", (int) p->pid);
        if (read_full_file(path, 4u * 1024u * 1024u, &text, NULL) < 0)
                return;
        perf_maps_parse(p, text);
}

const PerfMap *perf_scope_mapping(PerfScope *s, PerfProc *p, uint64_t ip) {
        if (!p->maps_read)
                read_maps(p);
        for (size_t i = 0; i < p->n_maps; i++)
                if (ip >= p->maps[i].start && ip < p->maps[i].end)
                        return &p->maps[i];
        return NULL;
}

void perf_scope_forget(PerfScope *s, pid_t pid) {
        for (size_t i = 0; i < s->n_procs; i++)
                if (s->procs[i].pid == pid) {
                        perf_maps_free(&s->procs[i]);
                        s->procs[i] = s->procs[--s->n_procs];
                        return;
                }
}

void perf_scope_new_pass(PerfScope *s) {
        for (size_t i = 0; i < s->n_procs; i++)
                perf_maps_free(&s->procs[i]);
        s->n_procs = 0;
}

void perf_scope_done(PerfScope *s) {
        perf_scope_new_pass(s);
        s->procs = mfree(s->procs);
        s->allocated = 0;
        s->additional = mfree(s->additional);
}
