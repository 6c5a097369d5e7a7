/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <getopt.h>
#include <inttypes.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>

#include "bus/bus-context.h"
#include "config.h"
#include "core/daemon-config.h"
#include "bus/idle.h"
#include "sources/ftrace/kprobes.h"
#include "log.h"
#include "bus/manager-dbus.h"
#include "core/manager.h"
#include "producers/producers.h"
#include "strv.h"
#include "tracebus-bus.h"
#include "kernel/tracefs-instance.h"
#include "recorder/output-relay.h"

/* SIGTERM: the sessions finish, and the calls still waiting for polkit are answered
 * ShuttingDown now, not NoReply once the last session is done. */
static int on_exit_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        BusContext *bus = ASSERT_PTR(userdata);

        manager_shutdown(bus->manager);
        bus_context_cancel_requests(bus);
        return 0;
}

static const char *arg_idle_timeout = NULL;

static void help(void) {
        printf("%s [OPTIONS...]\n\n"
               "The tracebus kernel tracing service (org.tracebus.Tracebus1).\n"
               "It is started by D-Bus activation; see tracebusd(8).\n\n"
               "  -h --help               Show this help\n"
               "  -V --version            Show the version\n"
               "  -d --debug              Log debug messages\n"
               "     --idle-timeout=SPAN  Exit after SPAN without work (0: never);\n"
               "                          overrides $TRACEBUS_IDLE_TIMEOUT_SEC and IdleTimeoutSec=\n"
               "\nConfiguration: %s/tracebusd.conf and tracebusd.conf.d/*.conf\n"
               "($TRACEBUS_CONFIG_DIR instead of %s).\n",
               program_invocation_short_name, TRACEBUS_CONF_DIR, TRACEBUS_CONF_DIR);
}

static int parse_argv(int argc, char *argv[]) {
        enum { ARG_IDLE_TIMEOUT = 0x100 };
        static const struct option options[] = {
                { "help",         no_argument,       NULL, 'h' },
                { "version",      no_argument,       NULL, 'V' },
                { "debug",        no_argument,       NULL, 'd' },
                { "idle-timeout", required_argument, NULL, ARG_IDLE_TIMEOUT },
                {}
        };
        int c;

        while ((c = getopt_long(argc, argv, "hVd", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case 'V':
                        printf("tracebusd %s\n", PACKAGE_VERSION);
                        return 0;
                case 'd':
                        log_set_max_level(LOG_DEBUG);
                        break;
                case ARG_IDLE_TIMEOUT:
                        arg_idle_timeout = optarg;
                        break;
                default:
                        return -EINVAL;
                }
        if (optind < argc)
                return log_error_errno(-EINVAL, "%s takes no arguments.", program_invocation_short_name);
        return 1;
}

/* The option beats the environment (tests), which beats the configuration files. */
static int idle_timeout_override(uint64_t *timeout_usec) {
        const char *v = arg_idle_timeout ?: getenv("TRACEBUS_IDLE_TIMEOUT_SEC");
        uint64_t usec;
        int r;

        if (!v)
                return 0;
        r = parse_timespan(v, &usec);
        if (r < 0)
                return log_error_errno(r, "Invalid idle timeout '%s' (%s): %m", v,
                                       arg_idle_timeout ? "--idle-timeout" : "$TRACEBUS_IDLE_TIMEOUT_SEC");
        *timeout_usec = usec == UINT64_MAX ? 0 : usec;
        return 0;
}

static int load_configuration(DaemonConfig *c) {
        const char *dir = getenv("TRACEBUS_CONFIG_DIR") ?: TRACEBUS_CONF_DIR;
        int r;

        daemon_config_init(c);
        r = daemon_config_load(c, dir);
        if (r < 0)
                return log_error_errno(r, "Failed to read the configuration in %s: %m", dir);
        (void) daemon_config_check(c);
        r = idle_timeout_override(&c->idle_timeout_usec);
        if (r < 0)
                return r;
        log_info("Limits: %u sessions, %u per user, %" PRIu64 " MiB of traces per user, %u KiB of kernel buffer "
                 "per CPU; idle exit %s%" PRIu64 " ms (%d file(s) in %s).",
                 c->limits.max_sessions, c->limits.max_sessions_per_uid, c->limits.trace_dir_quota_bytes >> 20,
                 c->limits.max_buffer_size_kb, c->idle_timeout_usec ? "after " : "never: ",
                 c->idle_timeout_usec / 1000, r, dir);
        return 0;
}

/* Says once, at start, why recording cannot work here, rather than only with each Start's
 * error: a unit or drop-in that leaves tracefs read-only, or a container without it. */
static void check_tracefs(void) {
        int r = trace_instance_check_writable();

        if (r == -ENODEV)
                log_warning("tracefs is not mounted (no /sys/kernel/tracing); recording will fail until it is.");
        else if (r == -EROFS)
                log_error("tracefs is read-only in this sandbox: %s/instances is on a read-only mount "
                          "(ProtectKernelTunables=yes or ReadOnlyPaths= in the unit or a drop-in?); "
                          "every recording will fail.", trace_instance_tracefs_root());
        else if (r < 0)
                log_warning_errno(r, "Cannot check tracefs at %s: %m", trace_instance_tracefs_root());
        else {
                (void) trace_instance_remove_stale();
                (void) kprobes_remove_stale();
        }
}

/* Settings for the whole process: how malloc gives memory back, and how signals arrive. */
static int setup_process(void) {
        sigset_t mask;

        /* A fixed mmap threshold: by default glibc raises it (and the trim threshold, to
         * twice that) each time a large buffer is freed, and then keeps up to 64 MB of free
         * memory in each thread's arena, which malloc_trim() does not give back either. A
         * long trace's write buffer is such a buffer: a 64 MB ring recorded after it left
         * the service at 12 MB instead of 4. Buffers above this size are mapped and unmapped
         * on their own. */
        (void) mallopt(M_MMAP_THRESHOLD, 256 * 1024);

        /* A trace reader that goes away must give EPIPE on write, not kill the service. */
        (void) signal(SIGPIPE, SIG_IGN);
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return log_error_errno(-errno, "Failed to block SIGTERM and SIGINT: %m");
        /* perf samples are named from local files only: libdw would otherwise ask the
         * debuginfod servers named here for any build id a sampled process maps. */
        (void) unsetenv("DEBUGINFOD_URLS");
        return 0;
}

/* The producer socket: the one systemd passes (tracebus-producer.socket, named
 * "producer"), else the path in $PERFETTO_PRODUCER_SOCK_NAME bound here (the tests' private
 * buses), else none. */
static int producer_socket(int *ret_fd) {
        _cleanup_strv_free_ char **names = NULL;
        const char *path;
        int n, r;

        n = sd_listen_fds_with_names(true, &names);
        if (n < 0)
                return log_error_errno(n, "Failed to take the sockets systemd passed: %m");
        for (int i = 0; i < n; i++)
                if (names && names[i] && strcmp(names[i], "producer") == 0) {
                        *ret_fd = SD_LISTEN_FDS_START + i;
                        return 1;
                }
        path = getenv("PERFETTO_PRODUCER_SOCK_NAME");
        if (!path || !*path)
                return 0;
        r = producers_bind_path(path, ret_fd);
        if (r < 0)
                return log_error_errno(r, "Failed to listen on the producer socket %s: %m", path);
        return 1;
}

static int setup_producers(Manager *m) {
        int fd = -EBADF, r;

        r = producer_socket(&fd);
        if (r <= 0)
                return r;
        r = manager_listen_producers(m, fd);
        if (r < 0)
                return log_error_errno(r, "Failed to serve the producer socket: %m");
        return 0;
}

static int run(int argc, char *argv[]) {
        _cleanup_(manager_freep) Manager *m = NULL;
        /* Freed first: it answers the calls still waiting, then the sessions go. */
        _cleanup_(manager_dbus_freep) BusContext *bus = NULL;
        DaemonConfig config;
        int r;

        r = parse_argv(argc, argv);
        if (r <= 0)
                return r;
        r = load_configuration(&config);
        if (r < 0)
                return r;
        r = setup_process();
        if (r < 0)
                return r;

        r = manager_new(&m);   /* logs the step that failed */
        if (r < 0)
                return r;
        m->limits = config.limits;
        manager_setup_limits(m);

        check_tracefs();
        r = setup_producers(m);
        if (r < 0)
                return r;

        /* Under the unit's WatchdogSec=, the loop itself sends systemd WATCHDOG=1, between
         * half and three quarters of the period after the last one, from its own iterations:
         * a loop that stops turning, whatever holds it, stops the pings, and systemd kills
         * and restarts the service. Without $WATCHDOG_USEC it does nothing. */
        r = sd_event_set_watchdog(m->event, true);
        if (r < 0)
                log_warning_errno(r, "Failed to set up the watchdog's pings: %m");

        r = manager_dbus_connect(m, &bus);
        if (r < 0)
                return r;
        /* The signals stay blocked until here: one that came already is handled now. */
        r = sd_event_add_signal(m->event, NULL, SIGTERM, on_exit_signal, bus);
        if (r < 0)
                return log_error_errno(r, "Failed to watch for SIGTERM: %m");
        r = sd_event_add_signal(m->event, NULL, SIGINT, on_exit_signal, bus);
        if (r < 0)
                return log_error_errno(r, "Failed to watch for SIGINT: %m");

        (void) sd_notify(false, "READY=1\nSTATUS=Waiting for tracing requests.");
        log_info("tracebusd %s ready; traces go to %s/traces.", PACKAGE_VERSION, m->state_dir);

        r = idle_loop_run(m->event, bus->bus, TB_BUS_NAME, config.idle_timeout_usec, manager_dbus_check_idle, bus);
        (void) sd_notify(false, "STOPPING=1");
        if (r < 0)
                return log_error_errno(r, "Event loop failed: %m");
        return 0;
}

int main(int argc, char *argv[]) {
        int r;

        /* The relay of an output on FUSE or a network filesystem: this binary again, which
         * the service starts itself (recorder/output-relay.h). */
        if (argc == OUTPUT_RELAY_ARGC && strcmp(argv[1], OUTPUT_RELAY_ARG) == 0)
                return output_relay_main(argv);
        r = run(argc, argv);
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
