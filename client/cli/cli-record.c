/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Recording and attaching: Start (or Attach), then an event loop until the
 * session ends. Ctrl-C and SIGTERM stop it gracefully; the loop ends when the
 * service says the trace is complete (Stop's reply or SessionEnded).
 */
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-event.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "bus-errors.h"
#include "strv.h"
#include "time-util.h"

#define PROGRESS_INTERVAL_USEC (1000ull * 1000ull)

typedef struct Client {
        sd_event *event;
        sd_bus *bus;
        char *session;
        char *service;            /* the service's unique name: signals only from it count */
        char *output_label;       /* where the trace goes, for messages */
        bool stopping;
        bool progress;            /* a progress line on stderr (a TTY) */
        bool progress_drawn;
        int exit_code;
        SessionInfo info;
        sd_event_source *progress_timer;
        sd_bus_slot *progress_call;   /* a GetAll in flight */
        char **warned;            /* the service's warnings printed so far */
} Client;

static void client_done(Client *c) {
        c->progress_timer = sd_event_source_disable_unref(c->progress_timer);
        c->progress_call = sd_bus_slot_unref(c->progress_call);
        c->session = mfree(c->session);
        c->service = mfree(c->service);
        c->output_label = mfree(c->output_label);
        session_info_done(&c->info);
        c->warned = strv_free(c->warned);
        c->bus = sd_bus_flush_close_unref(c->bus);
        c->event = sd_event_unref(c->event);
}

/* ---- the progress line ---- */

static void progress_clear(Client *c) {
        if (!c->progress_drawn)
                return;
        fputs("\r\033[K", stderr);
        fflush(stderr);
        c->progress_drawn = false;
}

static void progress_draw(Client *c) {
        char elapsed[32], total[32], bytes[32];
        uint64_t now = now_usec(CLOCK_REALTIME), ms = 0;

        if (!c->progress || c->stopping)
                return;
        if (c->info.started_at_usec > 0 && now > c->info.started_at_usec)
                ms = (now - c->info.started_at_usec) / 1000;
        /* The end takes a moment after the duration: do not show "3.1s of 3.0s". */
        if (c->info.duration_ms > 0)
                ms = MIN(ms, (uint64_t) c->info.duration_ms);
        cli_format_duration(elapsed, sizeof(elapsed), ms);
        if (c->info.duration_ms > 0)
                cli_format_duration(total, sizeof(total), c->info.duration_ms);
        fprintf(stderr, "\r\033[KRecording %s%s%s: %" PRIu64 " events, %s, %" PRIu64 " lost", elapsed,
                c->info.duration_ms > 0 ? " of " : "", c->info.duration_ms > 0 ? total : "",
                c->info.events_recorded, cli_format_bytes(bytes, sizeof(bytes), c->info.bytes_written),
                c->info.events_lost);
        fflush(stderr);
        c->progress_drawn = true;
}

static void print_warnings(Client *c, char **l) {
        if (cli_has_new_warnings(c->warned, l))
                progress_clear(c);
        (void) cli_print_new_warnings(&c->warned, l);
}

static void info_changed(Client *c) {
        print_warnings(c, c->info.warnings);
        progress_draw(c);
}

static int on_progress_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        Client *c = ASSERT_PTR(userdata);

        c->progress_call = sd_bus_slot_unref(c->progress_call);
        if (!sd_bus_message_is_method_error(reply, NULL) && session_info_update(&c->info, reply) >= 0)
                info_changed(c);
        return 0;
}

/* Redraws every second (the elapsed time moves on) and polls the counters, so the
 * line does not depend on PropertiesChanged alone. */
static int on_progress_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Client *c = ASSERT_PTR(userdata);
        int r;

        progress_draw(c);
        if (!c->progress_call && !c->stopping)
                (void) sd_bus_call_method_async(c->bus, &c->progress_call, TB_BUS_NAME, c->session,
                                                "org.freedesktop.DBus.Properties", "GetAll", on_progress_reply, c,
                                                "s", TB_SESSION_INTERFACE);
        r = sd_event_source_set_time_relative(s, PROGRESS_INTERVAL_USEC);
        if (r < 0)
                return r;
        return sd_event_source_set_enabled(s, SD_EVENT_ON);
}

static bool from_service(Client *c, sd_bus_message *m) {
        const char *sender = sd_bus_message_get_sender(m);
        return !c->service || (sender && strcmp(sender, c->service) == 0);
}

static int on_properties_changed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Client *c = ASSERT_PTR(userdata);
        const char *interface;

        if (!from_service(c, m) || sd_bus_message_read(m, "s", &interface) < 0 ||
            strcmp(interface, TB_SESSION_INTERFACE) != 0)
                return 0;
        (void) session_info_update(&c->info, m);
        info_changed(c);
        return 0;
}

/* The warnings of the running session reach every client, on a terminal or not. */
static int watch_session(Client *c) {
        return sd_bus_match_signal(c->bus, NULL, NULL, c->session, "org.freedesktop.DBus.Properties",
                                   "PropertiesChanged", on_properties_changed, c);
}

/* Only on a terminal: in a pipe or a log, the line would be noise. */
static int progress_setup(Client *c, bool background) {
        int r;

        if (background || !isatty(STDERR_FILENO))
                return 0;
        c->progress = true;
        r = sd_event_add_time_relative(c->event, &c->progress_timer, CLOCK_MONOTONIC, PROGRESS_INTERVAL_USEC, 0,
                                       on_progress_timer, c);
        if (r < 0)
                return r;
        progress_draw(c);
        return 0;
}

/* ---- the end ---- */

static void print_stats(Client *c, const StopStats *st) {
        progress_clear(c);
        fprintf(stderr, "Trace written into %s: %" PRIu64 " events, %" PRIu64 " bytes, %" PRIu64 " events lost.\n",
                st->output_path ?: c->output_label ?: "the output file", st->events, st->bytes, st->lost);
}

static int finish(Client *c, sd_bus_message *m, const char *reason) {
        _cleanup_(stop_stats_done) StopStats st = {};

        progress_clear(c);
        if (reason && strcmp(reason, "output-error") == 0) {
                cli_log("the trace could not be written completely (output error).");
                c->exit_code = EXIT_FAILURE;
        } else if (reason && strcmp(reason, "service-shutdown") == 0) {
                cli_log("the tracebus service shut down; the trace is complete up to then.");
                c->exit_code = EXIT_FAILURE;
        } else if (reason && strcmp(reason, "size-reached") == 0)
                fprintf(stderr, "The trace reached its size limit.\n");
        else if (reason && strcmp(reason, "quota") == 0) {
                cli_log("your traces reached the service's quota; the trace is complete up to then.");
                c->exit_code = EXIT_FAILURE;
        } else if (reason && strcmp(reason, "output-stalled") == 0) {
                cli_log("the output took nothing for too long (output stalled); the trace ends there.");
                c->exit_code = EXIT_FAILURE;
        }
        if (stop_stats_read(m, &st) >= 0) {
                print_warnings(c, st.warnings);
                print_stats(c, &st);
        }
        return sd_event_exit(c->event, 0);
}

static int on_stop_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        Client *c = ASSERT_PTR(userdata);
        const sd_bus_error *e = sd_bus_message_get_error(reply);

        if (!e)
                return finish(c, reply, NULL);
        /* A slow end: SessionEnded will still say when the trace is complete. */
        if (sd_bus_error_has_names(e, SD_BUS_ERROR_NO_REPLY, SD_BUS_ERROR_TIMEOUT))
                return 0;
        progress_clear(c);
        if (sd_bus_error_has_name(e, TB_ERROR_NO_SUCH_SESSION))
                cli_log("the session ended before it could be stopped.");
        else {
                cli_print_bus_error("failed to stop", e, -EIO, NULL);
                c->exit_code = EXIT_FAILURE;
        }
        return sd_event_exit(c->event, 0);
}

static int request_stop(Client *c) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r;

        progress_clear(c);
        if (c->stopping) {
                fprintf(stderr, "Still finishing the trace; it will be complete in a moment.\n");
                return 0;
        }
        c->stopping = true;
        fprintf(stderr, "Stopping; writing what the kernel has buffered...\n");
        r = sd_bus_message_new_method_call(c->bus, &m, TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_INTERFACE, "Stop");
        if (r >= 0)
                r = sd_bus_message_append(m, "o", c->session);
        if (r < 0) {
                cli_log("cannot stop the session: cannot build the request: %s", strerror(-r));
                c->exit_code = EXIT_FAILURE;
                return sd_event_exit(c->event, 0);
        }
        r = sd_bus_call_async(c->bus, NULL, m, on_stop_reply, c, CLI_STOP_TIMEOUT_USEC);
        if (r < 0) {
                cli_log("cannot stop the session: cannot send the request: %s", strerror(-r));
                c->exit_code = EXIT_FAILURE;
                return sd_event_exit(c->event, 0);
        }
        return 0;
}

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        return request_stop(ASSERT_PTR(userdata));
}

static int on_session_ended(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Client *c = ASSERT_PTR(userdata);
        const char *path, *reason;

        if (!from_service(c, m) || sd_bus_message_read(m, "os", &path, &reason) < 0 || !c->session ||
            strcmp(path, c->session) != 0)
                return 0;
        return finish(c, m, reason);
}

static int on_service_gone(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Client *c = ASSERT_PTR(userdata);
        const char *name, *old_owner, *new_owner;

        if (sd_bus_message_read(m, "sss", &name, &old_owner, &new_owner) < 0 || strcmp(name, TB_BUS_NAME) != 0 ||
            !isempty_str(new_owner) || !c->session)
                return 0;
        progress_clear(c);
        cli_log("the tracebus service went away while recording.");
        c->exit_code = EXIT_FAILURE;
        return sd_event_exit(c->event, 0);
}

static int setup_signals(Client *c) {
        sigset_t mask;
        int r;

        sigemptyset(&mask);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return -errno;
        r = sd_event_add_signal(c->event, NULL, SIGINT, on_signal, c);
        if (r < 0)
                return r;
        return sd_event_add_signal(c->event, NULL, SIGTERM, on_signal, c);
}

static int setup_client(Client *c) {
        int r;

        r = sd_event_new(&c->event);
        if (r < 0)
                return r;
        /* Signals first: a Ctrl-C during Start then stops the session right after. */
        r = setup_signals(c);
        if (r < 0)
                return r;
        r = cli_connect(&c->bus);
        if (r < 0)
                return r;
        r = sd_bus_attach_event(c->bus, c->event, 0);
        if (r < 0)
                return r;
        /* Before Start, so that an end that comes quickly is not missed. */
        r = sd_bus_match_signal(c->bus, NULL, NULL, TB_MANAGER_PATH, TB_MANAGER_INTERFACE, "SessionEnded",
                                on_session_ended, c);
        if (r < 0)
                return r;
        return sd_bus_add_match(c->bus, NULL,
                                "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',"
                                "interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='" TB_BUS_NAME "'",
                                on_service_gone, c);
}

/* The session of Start's (or Attach's) reply; Start's warnings go to stderr at once. */
static int take_session(Client *c, sd_bus_message *reply) {
        const char *path, *sender = sd_bus_message_get_sender(reply);
        _cleanup_strv_free_ char **warnings = NULL;
        int r;

        r = cli_read_start_reply(reply, &path, &warnings);
        if (r < 0)
                return r;
        c->session = strdup(path);
        if (!c->session || (sender && !(c->service = strdup(sender))))
                return -ENOMEM;
        print_warnings(c, warnings);
        /* Before load_info(): what comes between is in GetAll's answer. */
        return watch_session(c);
}

/* The session's properties, for messages and the progress line; not fatal. */
static void load_info(Client *c) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;

        session_info_done(&c->info);
        if (session_info_get(c->bus, c->session, &c->info, &error) >= 0)
                print_warnings(c, c->info.warnings);
}

static int wait_for_end(Client *c) {
        int r = sd_event_loop(c->event);

        progress_clear(c);
        if (r < 0) {
                cli_log("the event loop failed: %s", strerror(-r));
                return EXIT_FAILURE;
        }
        return c->exit_code;
}

/* ---- recording ---- */

static int append_options(sd_bus_message *m, const CliConfig *cfg, int fd, const char *detach_key) {
        int r;

        r = sd_bus_message_open_container(m, 'a', "{sv}");
        if (r >= 0 && fd >= 0)
                r = sd_bus_message_append(m, "{sv}", "Output", "h", fd);
        if (r >= 0 && detach_key)
                r = sd_bus_message_append(m, "{sv}", "DetachKey", "s", detach_key);
        if (r >= 0)
                r = cli_append_rotate_options(m);
        if (r >= 0 && cfg->binary) {
                r = sd_bus_message_open_container(m, 'e', "sv");
                if (r >= 0)
                        r = sd_bus_message_append(m, "s", "BinaryConfig");
                if (r >= 0)
                        r = sd_bus_message_open_container(m, 'v', "ay");
                if (r >= 0)
                        r = sd_bus_message_append_array(m, 'y', cfg->binary, cfg->binary_size);
                if (r >= 0)
                        r = sd_bus_message_close_container(m);
                if (r >= 0)
                        r = sd_bus_message_close_container(m);
        }
        if (r < 0)
                return r;
        return sd_bus_message_close_container(m);
}

static int call_start(Client *c, const CliConfig *cfg, int fd, const char *detach_key) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        r = sd_bus_message_new_method_call(c->bus, &m, TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_INTERFACE, "Start");
        if (r >= 0)
                r = sd_bus_message_append(m, "s", cfg->text ?: "");
        if (r >= 0)
                r = append_options(m, cfg, fd, detach_key);
        if (r < 0) {
                cli_log("cannot build the request: %s", strerror(-r));
                return r;
        }
        r = cli_call_authorized(c->bus, m, CLI_CALL_TIMEOUT_USEC, &error, &reply);
        if (r < 0) {
                cli_print_bus_error("cannot start tracing", &error, r, TB_ACTION_RECORD);
                return r;
        }
        r = take_session(c, reply);
        if (r < 0)
                cli_log("cannot read the service's reply: %s", strerror(-r));
        return r;
}

/*
 * -d/-D: fork; the child starts the session while it still has the terminal (so that
 * a password prompt and errors reach the user), then leaves it and tells the parent,
 * which prints the child's pid. Returns -1 in the child, else the parent's exit code.
 */
static int background_fork(int *ret_notify_fd) {
        int fds[2];
        char status = 0;
        pid_t pid;

        if (pipe2(fds, O_CLOEXEC) < 0) {
                cli_log("cannot go to the background: %m");
                return EXIT_FAILURE;
        }
        fflush(NULL);
        pid = fork();
        if (pid < 0) {
                cli_log("cannot go to the background: %m");
                return EXIT_FAILURE;
        }
        if (pid == 0) {
                safe_close(fds[0]);
                *ret_notify_fd = fds[1];
                return -1;
        }
        safe_close(fds[1]);
        while (read(fds[0], &status, 1) < 0 && errno == EINTR)
                ;
        safe_close(fds[0]);
        if (status != '0')
                return EXIT_FAILURE; /* the child said why */
        printf("%d\n", (int) pid);
        return fflush(stdout) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

static int leave_terminal(int notify_fd) {
        int null;

        if (setsid() < 0 || chdir("/") < 0)
                return -errno;
        null = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null < 0)
                return -errno;
        if (dup2(null, STDIN_FILENO) < 0 || dup2(null, STDOUT_FILENO) < 0 || dup2(null, STDERR_FILENO) < 0)
                return -errno;
        safe_close(null);
        if (write(notify_fd, "0", 1) != 1)
                return -errno;
        safe_close(notify_fd);
        return 0;
}

/* Returns the exit code when tracebus is done (--detach), else -1. */
static int announce(Client *c, const Args *a) {
        char d[32];

        if (a->detach_key) {
                const char *where = c->output_label ?: !isempty_str(c->info.output_path) ? c->info.output_path :
                                    "the service's trace directory";
                fprintf(stderr, "Recording into %s, detached as '%s'. 'tracebus --attach=%s --stop' ends it.\n",
                        where, a->detach_key, a->detach_key);
                return EXIT_SUCCESS;
        }
        if (a->background)
                return -1;
        if (c->info.duration_ms > 0)
                fprintf(stderr, "Recording into %s for %s; press Ctrl-C to stop early.\n", c->output_label,
                        cli_format_duration(d, sizeof(d), c->info.duration_ms));
        else
                fprintf(stderr, "Recording into %s; press Ctrl-C to stop.\n", c->output_label);
        return -1;
}

/* After Start: the background child checks that the session records, then leaves the terminal. */
static int go_background(Client *c, const Args *a, int notify_fd) {
        int r;

        if (a->background_wait && !(c->info.state && strcmp(c->info.state, "recording") == 0)) {
                cli_log("the session is %s, not recording.", c->info.state ?: "gone");
                return -EIO;
        }
        r = leave_terminal(notify_fd);
        if (r < 0)
                cli_log("cannot go to the background: %s", strerror(-r));
        return r;
}

int run_record(const Args *a) {
        _cleanup_(client_done) Client c = { .exit_code = EXIT_SUCCESS };
        _cleanup_(cli_config_done) CliConfig cfg = {};
        _cleanup_close_ int fd = -EBADF, notify_fd = -EBADF;
        int r;

        if (cli_config_load(a, &cfg) < 0 || cli_apply_attributes(a, &cfg) < 0)
                return EXIT_FAILURE;
        if (cli_check_event_args(a) < 0) {
                cli_notify(a, /* started= */ false);
                return EXIT_FAILURE;
        }
        fd = cli_open_output(a);
        if (fd < 0 && a->output)
                return EXIT_FAILURE;
        if (a->background) {
                r = background_fork(&notify_fd);
                if (r >= 0)
                        return r;
        }
        c.output_label = cli_output_label(a);
        if (cli_start_delay(cfg.parsed) < 0 || setup_client(&c) < 0 || call_start(&c, &cfg, fd, a->detach_key) < 0) {
                cli_notify(a, /* started= */ false);
                return EXIT_FAILURE;
        }
        fd = safe_close(fd);
        (void) cli_rotation_start(c.bus, c.session, c.service);
        load_info(&c);
        cli_notify(a, c.info.state && strcmp(c.info.state, "recording") == 0);

        r = announce(&c, a);
        if (r >= 0)
                return r;
        if (a->background && go_background(&c, a, TAKE_FD(notify_fd)) < 0) {
                (void) request_stop(&c);
                (void) wait_for_end(&c);
                return EXIT_FAILURE;
        }
        if (progress_setup(&c, a->background) < 0)
                cli_log("no progress line, going on.");
        r = wait_for_end(&c);
        cli_rotation_end();
        return r;
}

/* ---- attaching ---- */

static int call_attach(Client *c, const char *key) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        r = sd_bus_call_method(c->bus, TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_INTERFACE, "Attach", &error, &reply, "s", key);
        if (r < 0) {
                if (sd_bus_error_has_name(&error, TB_ERROR_NO_SUCH_SESSION))
                        return 0;
                cli_print_bus_error("Session re-attach failed", &error, r, NULL);
                return r;
        }
        r = take_session(c, reply);
        return r < 0 ? r : 1;
}

int run_attach(const Args *a) {
        _cleanup_(client_done) Client c = { .exit_code = EXIT_SUCCESS };
        int r;

        if (setup_client(&c) < 0)
                return EXIT_FAILURE;
        r = call_attach(&c, a->attach_key);
        if (r < 0)
                return EXIT_FAILURE;
        if (r == 0) {
                cli_log("Session re-attach failed: you have no session detached under '%s'.", a->attach_key);
                return EXIT_NO_SESSION;
        }
        load_info(&c);
        if (!isempty_str(c.info.output_path))
                c.output_label = strdup(c.info.output_path);

        if (a->stop)
                (void) request_stop(&c);
        else {
                fprintf(stderr, "Attached to session %" PRIu64 "; press Ctrl-C to stop it.\n", c.info.id);
                if (progress_setup(&c, false) < 0)
                        cli_log("no progress line, going on.");
        }
        return wait_for_end(&c);
}
