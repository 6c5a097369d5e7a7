/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Starting tracebus-unwind as the session owner and asking it for frames. The service
 * parses no ELF or DWARF itself: the helper does, with the owner's uid, gid and groups,
 * no capabilities and no_new_privs, so the kernel's ptrace check on /proc/PID/maps and
 * /proc/PID/root and its file permissions decide what it reads.
 *
 * A root caller's helper runs as root with CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH only:
 * root may read every process, and no more.
 *
 * Two ways to start it: a service that may change its uid (CAP_SETUID and CAP_SETGID,
 * as plain root) forks and drops everything before exec; one that may not (the systemd
 * unit grants neither) asks systemd for a transient service with systemd-run --pipe,
 * which hands the unit its stdin and stdout, our socket.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/capability.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "fd-util.h"
#include "log.h"
#include "macro.h"
#include "perf-helper.h"
#include "time-util.h"

#define PERF_HELPER_MAX_GROUPS 256
/* How long an ended helper may take to exit on its own before it is killed. */
#define PERF_HELPER_EXIT_MS 200
/* The socket's buffers: one request, and room for a reply to be written whole. */
#define PERF_HELPER_SNDBUF (128 * 1024)

/* The identity the helper runs with, looked up before fork (NSS is not for a child). */
typedef struct HelperIdentity {
        uid_t uid;
        gid_t gid;
        gid_t groups[PERF_HELPER_MAX_GROUPS];
        int n_groups;
} HelperIdentity;

void perf_helper_init(PerfHelper *h, uid_t uid, uint64_t max_memory_kb) {
        *h = (PerfHelper) { .uid = uid, .max_memory_kb = max_memory_kb, .pid = 0, .pidfd = -EBADF, .fd = -EBADF };
}

static const char *helper_path(void) {
        /* The test harness runs the helper from the build tree. */
        return getenv("TRACEBUS_UNWIND_HELPER") ?: LIBEXECDIR "/tracebus-unwind";
}

static int lookup_identity(uid_t uid, HelperIdentity *id) {
        struct passwd pw, *found = NULL;
        char buf[4096];

        *id = (HelperIdentity) { .uid = uid, .gid = (gid_t) uid };
        if (getpwuid_r(uid, &pw, buf, sizeof(buf), &found) != 0 || !found)
                return 0;       /* a uid without an entry: its own gid, no groups */
        id->gid = pw.pw_gid;
        id->n_groups = PERF_HELPER_MAX_GROUPS;
        if (getgrouplist(pw.pw_name, pw.pw_gid, id->groups, &id->n_groups) < 0)
                return -E2BIG;
        return 0;
}

/* Whether this process may take another uid itself: CAP_SETUID and CAP_SETGID effective. */
static bool may_setuid(void) {
        struct __user_cap_header_struct header = { .version = _LINUX_CAPABILITY_VERSION_3 };
        struct __user_cap_data_struct data[2] = {};

        if (syscall(SYS_capget, &header, data) < 0)
                return false;
        return (data[0].effective & (1u << CAP_SETUID)) && (data[0].effective & (1u << CAP_SETGID));
}

/* The capabilities a root caller's helper keeps: root may read every process and file. */
static uint32_t root_caller_caps(uid_t uid) {
        return uid == 0 ? (1u << CAP_SYS_PTRACE) | (1u << CAP_DAC_READ_SEARCH) : 0;
}

/* In the child, after fork: only system calls. Never returns. */
static _Noreturn void exec_as_owner(const HelperIdentity *id, char *const argv[]) {
        struct __user_cap_header_struct header = { .version = _LINUX_CAPABILITY_VERSION_3 };
        uint32_t keep = root_caller_caps(id->uid);
        struct __user_cap_data_struct caps[2] = { { .effective = keep, .permitted = keep } };
        char *const envp[] = { NULL };

        if (syscall(SYS_setgroups, id->n_groups, id->groups) < 0 ||
            syscall(SYS_setresgid, id->gid, id->gid, id->gid) < 0)
                _exit(126);
        for (int cap = 0; cap <= CAP_LAST_CAP; cap++)
                if (!(cap < 32 && (keep & (1u << cap))) && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
                        _exit(126);
        if (syscall(SYS_setresuid, id->uid, id->uid, id->uid) < 0 || syscall(SYS_capset, &header, caps) < 0 ||
            prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
                _exit(126);
        execve(argv[0], argv, envp);
        _exit(127);
}

/* systemd-run: a transient service as the owner, sandboxed by systemd, our socket its
 * stdin and stdout. Only system calls here too. */
static _Noreturn void exec_systemd_run(char *const argv[]) {
        char *const envp[] = { NULL };

        (void) prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
        execve("/usr/bin/systemd-run", argv, envp);
        execve("/bin/systemd-run", argv, envp);
        _exit(127);
}

static int build_argv(const PerfHelper *h, bool systemd, char **storage, size_t n_storage, char **argv) {
        size_t n = 0;
        int k = 0;

#define ARG(...) do {                                                                   \
                if ((size_t) k >= n_storage || asprintf(&storage[k], __VA_ARGS__) < 0)  \
                        return -ENOMEM;                                                 \
                argv[n++] = storage[k++];                                               \
        } while (0)
        if (systemd) {
                ARG("systemd-run");
                ARG("--quiet");
                ARG("--pipe");
                ARG("--collect");
                ARG("--uid=%u", (unsigned) h->uid);
                ARG("--description=tracebus unwinding helper for uid %u", (unsigned) h->uid);
                ARG("--property=NoNewPrivileges=yes");
                if (h->uid == 0) {
                        ARG("--property=CapabilityBoundingSet=CAP_SYS_PTRACE CAP_DAC_READ_SEARCH");
                        ARG("--property=AmbientCapabilities=CAP_SYS_PTRACE CAP_DAC_READ_SEARCH");
                } else
                        ARG("--property=CapabilityBoundingSet=");
                ARG("--property=PrivateNetwork=yes");
                ARG("--property=MemoryMax=%" PRIu64 "K",
                    (h->max_memory_kb ? h->max_memory_kb : UINT64_C(1) << 20) + (UINT64_C(512) << 10));
                ARG("--property=TasksMax=4");
                ARG("--property=LimitCORE=0");
                ARG("--property=SystemCallFilter=@system-service");
                ARG("--property=SystemCallArchitectures=native");
        }
        ARG("%s", helper_path());
        ARG("--max-memory-kb=%" PRIu64, h->max_memory_kb);
#undef ARG
        argv[n] = NULL;
        return 0;
}

static void free_strings(char **strings, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(strings[i]);
}

static int spawn(PerfHelper *h, int child_end) {
        char *storage[24] = {}, *argv[ELEMENTSOF(storage) + 1];
        bool systemd = !may_setuid();
        HelperIdentity id;
        pid_t pid;
        int r;

        r = lookup_identity(h->uid, &id);
        if (r >= 0)
                r = build_argv(h, systemd, storage, ELEMENTSOF(storage), argv);
        if (r < 0) {
                free_strings(storage, ELEMENTSOF(storage));
                return r;
        }
        pid = fork();
        if (pid == 0) {
                if (dup2(child_end, STDIN_FILENO) < 0 || dup2(child_end, STDOUT_FILENO) < 0 ||
                    syscall(SYS_close_range, 3, ~0u, 0) < 0)
                        _exit(126);
                if (systemd)
                        exec_systemd_run(argv);
                exec_as_owner(&id, argv);
        }
        r = pid < 0 ? -errno : 0;
        free_strings(storage, ELEMENTSOF(storage));
        if (r < 0)
                return r;
        h->pid = pid;
        h->pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
        return 0;
}

/* Ends the child: its socket closed (a helper exits at EOF), then killed if it is
 * still there after PERF_HELPER_EXIT_MS (at once with @now), and reaped. */
static void end_child(PerfHelper *h, bool now) {
        h->fd = safe_close(h->fd);
        if (h->pid > 0) {
                struct pollfd pfd = { .fd = h->pidfd, .events = POLLIN };

                if (now || h->pidfd < 0 || poll(&pfd, 1, PERF_HELPER_EXIT_MS) <= 0)
                        (void) kill(h->pid, SIGKILL);
                (void) waitpid(h->pid, NULL, 0);
                h->pid = 0;
        }
        h->pidfd = safe_close(h->pidfd);
}

/* The helper is lost for the rest of the session: killed, and why kept for the warning. */
static int helper_fail(PerfHelper *h, const char *why, int error) {
        if (!h->failed) {
                h->failed = true;
                if (asprintf(&h->failure, "%s: %s", why, strerror(-error)) < 0)
                        h->failure = NULL;
        }
        end_child(h, /* now= */ true);
        return -ENOTCONN;
}

static int helper_start(PerfHelper *h) {
        int pair[2], r, size = PERF_HELPER_SNDBUF;

        h->started = true;
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0)
                return -errno;
        h->fd = pair[0];
        (void) setsockopt(h->fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
        r = fcntl(h->fd, F_SETFL, O_NONBLOCK) < 0 ? -errno : 0;
        if (r >= 0)
                r = spawn(h, pair[1]);
        safe_close(pair[1]);
        return r;
}

int perf_helper_unwind(PerfHelper *h, const UnwindRequest *req, UnwindReplyFixed *ret, UnwindFrame *frames,
                       size_t max, size_t *ret_n) {
        ssize_t n;
        int r;

        *ret_n = 0;
        if (h->failed)
                return -ENOTCONN;
        if (!h->started && (r = helper_start(h)) < 0)
                return helper_fail(h, "starting tracebus-unwind failed", r);
        r = unwind_request_encode(req, &h->request);
        if (r < 0)
                return r;       /* this sample only */
        /* One request at a time: the socket is empty, a request fits whole. */
        n = send(h->fd, h->request.data, h->request.len, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n != (ssize_t) h->request.len)
                return helper_fail(h, "tracebus-unwind took no request", n < 0 ? -errno : -EAGAIN);
        r = unwind_read_message(h->fd, UNWIND_MAGIC_REPLY, UNWIND_MAX_REPLY,
                                now_usec(CLOCK_MONOTONIC) + PERF_HELPER_DEADLINE_MS * 1000ull, &h->reply);
        if (r == -ETIMEDOUT)
                return helper_fail(h, "tracebus-unwind did not answer within a second", r);
        if (r == -EPIPE || r == -ECONNRESET)
                return helper_fail(h, "tracebus-unwind exited", r);
        if (r >= 0)
                r = unwind_reply_decode(h->reply.data, h->reply.len, ret, frames, max, ret_n);
        if (r < 0)
                return helper_fail(h, "tracebus-unwind's reply was refused", r);
        return 0;
}

void perf_helper_done(PerfHelper *h) {
        end_child(h, /* now= */ false);
        unwind_buffer_done(&h->request);
        unwind_buffer_done(&h->reply);
        h->failure = mfree(h->failure);
}
