/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Who linux.perf samples: the config's scope (target and exclude pids and cmdlines,
 * additional_cmdline_count, process_shard_count) and the owner's rights. A caller with
 * org.tracebus.record only is sampled processes whose real and effective uid are its
 * own and that it may ptrace (dumpable: the kernel shows their /proc files as its own),
 * read when the pid is first seen in a read pass; so a process that execs a setuid
 * binary, changes its uid or becomes non-dumpable is out of scope from the next pass on
 * (or at once: its exec record drops the cached verdict). The helper that names its
 * frames reads the process as the owner besides, so the kernel's own ptrace check
 * decides again (perf-helper.c).
 */
#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fd-util.h"
#include "perf-local.h"
#include "perf-sampler.h"
#include "strv.h"

#define PERF_MAX_PROCS_PER_PASS 4096u

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

/* Whether the kernel shows @pid's /proc files as the owner's: it shows those of a
 * process that is not dumpable (PR_SET_DUMPABLE 0, a uid change, a binary the owner
 * may not read) as root's, and the owner may not ptrace such a process. */
static bool proc_owned_by(pid_t pid, uid_t uid) {
        char path[32];
        struct stat st;

        snprintf(path, sizeof(path), "/proc/%d", (int) pid);
        return stat(path, &st) >= 0 && st.st_uid == uid;
}

/* Whether the owner may see @pid's samples; *ret_denied when it is the owner's by uid
 * but not for the owner to ptrace (counted and told apart from other processes). */
static bool owner_may_see(PerfScope *s, pid_t pid, bool *ret_denied) {
        uid_t real, effective;

        if (s->manage)
                return true;
        if (pid <= 0 || read_uids(pid, &real, &effective) < 0)
                return false;
        if (real != s->owner_uid || effective != s->owner_uid)
                return false;
        *ret_denied = !proc_owned_by(pid, s->owner_uid);
        return !*ret_denied;
}

static bool judge(PerfScope *s, pid_t pid, bool *ret_denied) {
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
        return owner_may_see(s, pid, ret_denied);
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
        *p = (PerfProc) { .pid = pid };
        p->in_scope = judge(s, pid, &p->denied);
        return p;
}

void perf_scope_forget(PerfScope *s, pid_t pid) {
        for (size_t i = 0; i < s->n_procs; i++)
                if (s->procs[i].pid == pid) {
                        s->procs[i] = s->procs[--s->n_procs];
                        return;
                }
}

void perf_scope_new_pass(PerfScope *s) {
        s->n_procs = 0;
}

void perf_scope_done(PerfScope *s) {
        perf_scope_new_pass(s);
        s->procs = mfree(s->procs);
        s->allocated = 0;
        s->additional = mfree(s->additional);
}
