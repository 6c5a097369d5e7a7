/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <systemd/sd-daemon.h>

#include "config.h"
#include "log.h"
#include "manager-bus.h"
#include "manager.h"
#include "tracefs-instance.h"

static int on_exit_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        manager_shutdown(ASSERT_PTR(userdata));
        return 0;
}

static int parse_argv(int argc, char *argv[]) {
        static const struct option options[] = {
                { "help",    no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'V' },
                { "debug",   no_argument, NULL, 'd' },
                {}
        };
        int c;

        while ((c = getopt_long(argc, argv, "hVd", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        printf("%s [--debug]\n\nThe tracebus kernel tracing service (org.tracebus.Tracebus1).\n"
                               "It is started by D-Bus activation.\n", program_invocation_short_name);
                        return 0;
                case 'V':
                        printf("tracebusd %s\n", PACKAGE_VERSION);
                        return 0;
                case 'd':
                        log_set_max_level(LOG_DEBUG);
                        break;
                default:
                        return -EINVAL;
                }
        if (optind < argc)
                return log_error_errno(-EINVAL, "%s takes no arguments.", program_invocation_short_name);
        return 1;
}

static int run(int argc, char *argv[]) {
        _cleanup_(manager_freep) Manager *m = NULL;
        int r;

        r = parse_argv(argc, argv);
        if (r <= 0)
                return r;

        /* A trace reader that goes away must give EPIPE on write, not kill the service. */
        (void) signal(SIGPIPE, SIG_IGN);
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return -errno;

        r = manager_new(&m);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the service: %m");
        r = sd_event_add_signal(m->event, NULL, SIGTERM, on_exit_signal, m);
        if (r >= 0)
                r = sd_event_add_signal(m->event, NULL, SIGINT, on_exit_signal, m);
        if (r < 0)
                return log_error_errno(r, "Failed to watch for signals: %m");

        if (!trace_instance_tracefs_root())
                log_warning("tracefs is not mounted; recording will fail until it is.");
        else
                (void) trace_instance_remove_stale();

        r = manager_connect_bus(m);
        if (r < 0)
                return r;

        (void) sd_notify(false, "READY=1\nSTATUS=Waiting for tracing requests.");
        log_info("tracebusd %s ready; traces go to %s/traces.", PACKAGE_VERSION, m->state_dir);

        r = sd_event_loop(m->event);
        (void) sd_notify(false, "STOPPING=1");
        if (r < 0)
                return log_error_errno(r, "Event loop failed: %m");
        return 0;
}

int main(int argc, char *argv[]) {
        int r = run(argc, argv);
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
