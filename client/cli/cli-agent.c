/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A text polkit agent for one call, as systemctl runs it (systemd's
 * spawn-polkit-agent.c): `pkttyagent --notify-fd N --fallback`, then wait until
 * it closes N, which it does once it is registered for our process (its parent).
 * Only used when stdin is a terminal (cli_set_ask_password()).
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <systemd/sd-login.h>
#include <unistd.h>

#include "cli.h"

#define POLKIT_AGENT_BINARY_PATH "/usr/bin/pkttyagent"
/* The agent registers within a moment; do not hang if it never closes the fd. */
#define AGENT_READY_TIMEOUT_MS 10000

static pid_t agent_pid;

static const char *agent_path(void) {
        /* For the test suite, which checks when an agent is spawned. */
        const char *p = getenv("TRACEBUS_POLKIT_AGENT");
        return !isempty_str(p) ? p : POLKIT_AGENT_BINARY_PATH;
}

static _Noreturn void agent_exec(int notify_fd, bool fallback) {
        char fd_arg[16];
        sigset_t none;
        int fd;

        /* Our signal mask (SIGINT/SIGTERM blocked for sd-event) must not stay with it. */
        sigemptyset(&none);
        (void) sigprocmask(SIG_SETMASK, &none, NULL);
        (void) prctl(PR_SET_PDEATHSIG, SIGTERM);
        fd = fcntl(notify_fd, F_DUPFD, 3);
        if (fd < 0)
                _exit(EXIT_FAILURE);
        snprintf(fd_arg, sizeof(fd_arg), "%d", fd);
        execl(agent_path(), agent_path(), "--notify-fd", fd_arg, fallback ? "--fallback" : NULL, (char *) NULL);
        _exit(EXIT_FAILURE);
}

/*
 * --fallback lets an agent of the login session (a graphical one) win, as with
 * systemctl. Outside a login session (su, runuser, a container) polkitd never
 * uses a fallback agent: it looks for the session's agent, finds no session,
 * and gives up (get_authentication_agent_for_subject() in polkit 122). There
 * is no session agent to prefer then, so the agent is registered plainly.
 */
static bool in_login_session(void) {
        _cleanup_free_ char *session = NULL;
        return sd_pid_get_session(0, &session) >= 0;
}

int polkit_agent_open(void) {
        bool fallback = in_login_session();
        int fds[2];
        pid_t pid;

        if (agent_pid > 0)
                return 0;
        if (pipe2(fds, O_CLOEXEC) < 0)
                return -errno;
        fflush(NULL);
        pid = fork();
        if (pid < 0) {
                safe_close(fds[0]);
                safe_close(fds[1]);
                return -errno;
        }
        if (pid == 0) {
                safe_close(fds[0]);
                agent_exec(fds[1], fallback);
        }
        agent_pid = pid;
        safe_close(fds[1]);

        /* Wait until the agent closes its end: registered, or gone. */
        struct pollfd p = { .fd = fds[0], .events = POLLIN };
        for (;;) {
                int r = poll(&p, 1, AGENT_READY_TIMEOUT_MS);
                if (r < 0 && errno == EINTR)
                        continue;
                break;
        }
        safe_close(fds[0]);
        return 0;
}

void polkit_agent_close(void) {
        if (agent_pid <= 0)
                return;
        (void) kill(agent_pid, SIGTERM);
        (void) kill(agent_pid, SIGCONT);
        while (waitpid(agent_pid, NULL, 0) < 0 && errno == EINTR)
                ;
        agent_pid = 0;
}
