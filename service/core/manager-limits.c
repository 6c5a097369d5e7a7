/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The limits that come from the machine rather than the configuration alone: descriptors
 * (RLIMIT_NOFILE) and the memory the kernel's ring buffers take (MemTotal). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/sysinfo.h>

#include "fd-util.h"
#include "log.h"
#include "manager.h"

/* Descriptors the service needs besides its sessions and waiting calls: the bus, the event
 * loop, the log, a trace config's tracefs files, /proc files of a process scan. */
#define FDS_RESERVED 256u
/* A session's descriptors besides its two per CPU: output, instance lock, two eventfds,
 * the drain's splice() pipe (two ends), and two for the files a recorder or process scan
 * opens for a moment. */
#define SESSION_FIXED_FDS 8u

unsigned manager_session_fd_cost(const Manager *m) {
        return 2 * m->n_cpus + SESSION_FIXED_FDS;
}

void manager_count_session_fds(Manager *m, uid_t uid, unsigned *ret_uid, unsigned *ret_all) {
        unsigned cost = manager_session_fd_cost(m), of_uid = 0;

        for (Session *s = m->sessions; s; s = s->next)
                if (s->owner_uid == uid)
                        of_uid += cost;
        *ret_uid = of_uid;
        *ret_all = m->n_sessions * cost;
}

uint64_t manager_buffer_bytes(const Manager *m, const SessionConfig *config) {
        return (uint64_t) config->buffer_size_kb * 1024u * m->n_cpus;
}

uint64_t manager_buffer_memory_in_use(Manager *m) {
        uint64_t total = 0;

        /* A session holds its instance, and so its buffers, until it has ended. */
        for (Session *s = m->sessions; s; s = s->next)
                total += manager_buffer_bytes(m, &s->config);
        return total;
}

int manager_check_resources(Manager *m, const StartRequest *req, StartFailure *ret_failure) {
        unsigned cost = manager_session_fd_cost(m), fds_uid, fds_all;

        if (m->exiting) {
                *ret_failure = START_FAILURE_SHUTTING_DOWN;
                return -ESHUTDOWN;
        }
        manager_count_session_fds(m, req->uid, &fds_uid, &fds_all);
        if (fds_uid + req->held_fds_uid + cost > m->limits.max_files_per_uid) {
                *ret_failure = START_FAILURE_USER_FILES;
                return -EMFILE;
        }
        if (fds_all + req->held_fds_all + cost > m->max_files) {
                *ret_failure = START_FAILURE_SERVICE_FILES;
                return -EMFILE;
        }
        if (manager_buffer_memory_in_use(m) + manager_buffer_bytes(m, &req->config) >
            m->limits.max_buffer_memory_bytes) {
                *ret_failure = START_FAILURE_BUFFER_MEMORY;
                return -ENOBUFS;
        }
        return 0;
}

/* MemTotal from /proc/meminfo, in bytes. */
static int read_mem_total(uint64_t *ret) {
        _cleanup_free_ char *text = NULL;
        unsigned long long kb;
        const char *line;
        int r;

        r = read_full_file("/proc/meminfo", 64 * 1024, &text, NULL);
        if (r < 0)
                return r;
        line = strstr(text, "MemTotal:");
        if (!line || sscanf(line, "MemTotal: %llu kB", &kb) != 1 || kb == 0)
                return -EBADMSG;
        *ret = (uint64_t) kb * 1024u;
        return 0;
}

static void setup_buffer_memory(Manager *m) {
        uint64_t mem_total;
        int r;

        if (m->limits.max_buffer_memory_bytes > 0)
                return;
        r = read_mem_total(&mem_total);
        if (r < 0) {
                /* Without it, one session's largest buffer on every CPU: nothing more. */
                log_warning_errno(r, "Failed to read MemTotal from /proc/meminfo, allowing the kernel buffers "
                                  "of one large session only: %m");
                mem_total = (uint64_t) SESSION_MAX_BUFFER_SIZE_KB * 1024u * m->n_cpus * DAEMON_DEFAULT_BUFFER_MEMORY_DIVISOR;
        }
        m->limits.max_buffer_memory_bytes = mem_total / DAEMON_DEFAULT_BUFFER_MEMORY_DIVISOR;
}

/* The soft limit up to the hard one (the unit's LimitNOFILE= sets both); the limit in effect. */
static rlim_t raise_nofile(void) {
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
                return 1024;
        if (rl.rlim_cur < rl.rlim_max) {
                struct rlimit raised = { .rlim_cur = rl.rlim_max, .rlim_max = rl.rlim_max };

                if (setrlimit(RLIMIT_NOFILE, &raised) >= 0)
                        rl.rlim_cur = rl.rlim_max;
                else
                        log_debug_errno(-errno, "Failed to raise RLIMIT_NOFILE to %llu, keeping %llu: %m",
                                        (unsigned long long) rl.rlim_max, (unsigned long long) rl.rlim_cur);
        }
        return rl.rlim_cur;
}

static void setup_files(Manager *m) {
        rlim_t nofile = raise_nofile();
        unsigned cost = manager_session_fd_cost(m);

        nofile = MIN(nofile, (rlim_t) (1u << 30));
        m->max_files = nofile > 2 * FDS_RESERVED ? (unsigned) nofile - FDS_RESERVED : (unsigned) nofile / 2;
        /* Like the calls waiting for polkit: one user never takes more than half. */
        if (m->limits.max_files_per_uid > m->max_files / 2) {
                log_notice("MaxFilesPerUser=%u does not fit in half of the %u descriptors the service may use "
                           "(RLIMIT_NOFILE %llu); using %u.", m->limits.max_files_per_uid, m->max_files,
                           (unsigned long long) nofile, m->max_files / 2);
                m->limits.max_files_per_uid = m->max_files / 2;
        }
        if (m->limits.max_sessions * cost > m->max_files)
                log_notice("%u sessions of %u descriptors each do not fit in the %u the service may use: "
                           "Start refuses with ResourceLimit before MaxSessions=%u is reached.",
                           m->limits.max_sessions, cost, m->max_files, m->limits.max_sessions);
}

void manager_setup_limits(Manager *m) {
        int n = get_nprocs_conf();

        m->n_cpus = n > 0 ? (unsigned) n : 1;
        setup_buffer_memory(m);
        setup_files(m);
        log_info("Resources: %u descriptors for sessions and calls, %u per user, %u per session (%u CPUs); "
                 "%" PRIu64 " MiB of kernel buffers for all sessions; %u calls waiting for polkit, %u per user.",
                 m->max_files, m->limits.max_files_per_uid, manager_session_fd_cost(m), m->n_cpus,
                 m->limits.max_buffer_memory_bytes >> 20, m->limits.max_pending, m->limits.max_pending_per_uid);
}
