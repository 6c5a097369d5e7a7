/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tracebus: record kernel traces through tracebusd, with perfetto's command line.
 *
 * The CLI opens the output file itself, as the calling user, and passes the file
 * descriptor to the service: the service never opens a path that a user names.
 */
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>
#include <unistd.h>

#include "config.h"
#include "errors.h"
#include "fd-util.h"
#include "macro.h"
#include "strv.h"

#define BUS_NAME "org.tracebus.Tracebus1"
#define OBJECT_PATH "/org/tracebus/Tracebus1"
#define MANAGER_INTERFACE "org.tracebus.Tracebus1.Manager"
/* Long enough for a person to answer a polkit authentication dialog. */
#define START_TIMEOUT_USEC (5ull * 60 * 1000 * 1000)
#define MAX_CONFIG_SIZE (1024 * 1024)

typedef struct Args {
        const char *config_path;
        bool txt;
        const char *output;
        bool no_clobber;
        uint64_t duration_ms;
        uint64_t buffer_kb;
        char **events;
        const char *detach_key;
        const char *attach_key;
        const char *is_detached_key;
        bool stop;
} Args;

/* perfetto's exit codes for --attach and --is_detached: 2 means "no such session". */
#define EXIT_NO_SESSION 2

typedef struct Client {
        sd_event *event;
        sd_bus *bus;
        char *session;
        const char *output;
        bool stopping;
        int exit_code;
} Client;

static void args_done(Args *a) {
        a->events = strv_free(a->events);
}

static void help(void) {
        printf("%s [OPTIONS] [EVENT...]\n\n"
               "Record a kernel trace in Perfetto's format through the tracebus service.\n\n"
               "  -o, --out FILE        Write the trace into FILE (opened by you, mode 0600)\n"
               "      --no-clobber      Refuse to overwrite an existing FILE\n"
               "  -c, --config FILE     Read a TraceConfig from FILE ('-' for stdin)\n"
               "      --txt             The config is in protobuf text format\n"
               "  -t, --time DURATION   Record for DURATION (10s by default): 500ms, 2s, 5m, 1h\n"
               "  -b, --buffer SIZE     Trace buffer size (32mb by default): 4096kb, 16mb, 1gb\n"
               "      --detach=KEY      Start, then leave the session recording without this client\n"
               "      --attach=KEY      Attach to your session detached under KEY and wait for its end\n"
               "      --stop            With --attach: stop the session and wait for the trace\n"
               "      --is_detached=KEY Exit 0 if you have a session detached under KEY, 2 if not, 1 on error\n"
               "  -h, --help            Show this help\n"
               "      --version         Show the version\n\n"
               "EVENT is a tracefs event, as group/name (sched/sched_switch), group/* or name.\n"
               "Ctrl-C stops recording early; the trace is complete either way.\n",
               program_invocation_short_name);
}

/* "10", "10s", "500ms", "5m", "1h" into milliseconds; a bare number means seconds. */
static int parse_duration_ms(const char *s, uint64_t *ret) {
        static const struct { const char *suffix; uint64_t ms; } units[] = {
                { "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "min", 60000 }, { "h", 3600000 }, { "", 1000 },
        };
        char *end;
        unsigned long long v;

        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno != 0 || end == s || *s == '-')
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(units); i++)
                if (strcmp(end, units[i].suffix) == 0) {
                        if (v > UINT32_MAX / units[i].ms)
                                return -ERANGE;
                        *ret = v * units[i].ms;
                        return 0;
                }
        return -EINVAL;
}

/* "4096", "4096k", "4096kb", "16m", "16mb", "1g", "1gb" into KiB; a bare number means KiB. */
static int parse_size_kb(const char *s, uint64_t *ret) {
        static const struct { const char *suffix; uint64_t kb; } units[] = {
                { "", 1 }, { "k", 1 }, { "kb", 1 }, { "m", 1024 }, { "mb", 1024 }, { "g", 1024 * 1024 }, { "gb", 1024 * 1024 },
        };
        char *end;
        unsigned long long v;

        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno != 0 || end == s || *s == '-')
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(units); i++)
                if (strcasecmp(end, units[i].suffix) == 0) {
                        if (v > UINT32_MAX / units[i].kb)
                                return -ERANGE;
                        *ret = v * units[i].kb;
                        return 0;
                }
        return -EINVAL;
}

static int fail(const char *reason) {
        fprintf(stderr, "%s: %s.\n", program_invocation_short_name, reason);
        return -EINVAL;
}

static int check_combinations(const Args *a, bool light);

static int parse_argv(int argc, char *argv[], Args *a) {
        enum { ARG_TXT = 0x100, ARG_NO_CLOBBER, ARG_VERSION, ARG_DETACH, ARG_ATTACH, ARG_STOP, ARG_IS_DETACHED };
        static const struct option options[] = {
                { "out",        required_argument, NULL, 'o' },
                { "config",     required_argument, NULL, 'c' },
                { "txt",        no_argument,       NULL, ARG_TXT },
                { "no-clobber", no_argument,       NULL, ARG_NO_CLOBBER },
                { "time",       required_argument, NULL, 't' },
                { "buffer",     required_argument, NULL, 'b' },
                { "help",       no_argument,       NULL, 'h' },
                { "version",    no_argument,       NULL, ARG_VERSION },
                { "detach",     required_argument, NULL, ARG_DETACH },
                { "attach",     required_argument, NULL, ARG_ATTACH },
                { "stop",       no_argument,       NULL, ARG_STOP },
                { "is_detached", required_argument, NULL, ARG_IS_DETACHED },
                {}
        };
        bool light = false;
        int c;

        while ((c = getopt_long(argc, argv, "o:c:t:b:h", options, NULL)) >= 0)
                switch (c) {
                case 'o':
                        a->output = optarg;
                        break;
                case 'c':
                        a->config_path = optarg;
                        break;
                case ARG_TXT:
                        a->txt = true;
                        break;
                case ARG_NO_CLOBBER:
                        a->no_clobber = true;
                        break;
                case 't':
                        if (parse_duration_ms(optarg, &a->duration_ms) < 0)
                                return fprintf(stderr, "%s: invalid duration '%s' (try 10s, 500ms, 5m).\n",
                                               program_invocation_short_name, optarg), -EINVAL;
                        light = true;
                        break;
                case 'b':
                        if (parse_size_kb(optarg, &a->buffer_kb) < 0)
                                return fprintf(stderr, "%s: invalid size '%s' (try 32mb, 4096kb).\n",
                                               program_invocation_short_name, optarg), -EINVAL;
                        light = true;
                        break;
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("tracebus %s\n", PACKAGE_VERSION);
                        return 0;
                case ARG_DETACH:
                        a->detach_key = optarg;
                        break;
                case ARG_ATTACH:
                        a->attach_key = optarg;
                        break;
                case ARG_STOP:
                        a->stop = true;
                        break;
                case ARG_IS_DETACHED:
                        a->is_detached_key = optarg;
                        break;
                default:
                        return -EINVAL;
                }

        for (int i = optind; i < argc; i++)
                if (strv_extend(&a->events, argv[i]) < 0)
                        return -ENOMEM;

        return check_combinations(a, light);
}

/* The combinations perfetto refuses, refused with its reasons. */
static int check_combinations(const Args *a, bool light) {
        bool config = a->config_path || light || a->events;

        if (a->stop && !a->attach_key)
                return fail("--stop is supported only in combination with --attach");
        if (a->detach_key && a->attach_key)
                return fail("--detach and --attach are mutually exclusive");
        if (a->attach_key || a->is_detached_key) {
                if (config)
                        return fail("Cannot specify a trace config with this option");
                if (a->output)
                        return fail("Can't pass an --out file with this option");
                return 1;
        }
        if (!a->output)
                return fail("an output file is required (-o FILE)");
        if (a->config_path && (light || a->events))
                return fail("a config file (-c) cannot be combined with -t, -b or events");
        if (!a->config_path && !a->events)
                return fail("name the events to record (e.g. sched/sched_switch), or pass -c FILE");
        if (a->config_path && !a->txt)
                return fail("binary configs are not supported yet; pass a text config with --txt");
        return 1;
}

static int append_quoted(FILE *f, const char *s) {
        fputc('"', f);
        for (; *s; s++) {
                if (*s == '"' || *s == '\\')
                        fputc('\\', f);
                fputc(*s, f);
        }
        fputc('"', f);
        return 0;
}

/* The config perfetto builds from -t, -b and events (facts: CreateConfigFromOptions). */
static int build_light_config(const Args *a, char **ret) {
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);

        if (!f)
                return -ENOMEM;
        fprintf(f, "duration_ms: %" PRIu64 "\n", a->duration_ms ?: 10000);
        fprintf(f, "buffers { size_kb: %" PRIu64 " }\n", a->buffer_kb ?: 32 * 1024);
        fputs("data_sources { config { name: \"linux.ftrace\" ftrace_config {\n", f);
        STRV_FOREACH(e, a->events) {
                fputs("  ftrace_events: ", f);
                append_quoted(f, *e);
                fputc('\n', f);
        }
        fputs("} } }\n", f);
        if (fclose(f) != 0)
                return -ENOMEM;
        *ret = TAKE_PTR(text);
        return 0;
}

static int read_config(const Args *a, char **ret) {
        if (strcmp(a->config_path, "-") == 0)
                return read_full_file("/dev/stdin", MAX_CONFIG_SIZE, ret, NULL);
        return read_full_file(a->config_path, MAX_CONFIG_SIZE, ret, NULL);
}

static int open_output(const Args *a) {
        int fd;

        fd = open(a->output, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOCTTY | (a->no_clobber ? O_EXCL : O_TRUNC), 0600);
        if (fd < 0)
                return fprintf(stderr, "%s: cannot open %s: %m\n", program_invocation_short_name, a->output), -errno;
        return fd;
}

static void print_bus_error(const char *what, const sd_bus_error *e, int r) {
        const char *explained = tracebus_error_explain(e ? e->name : NULL);

        if (e && e->message)
                fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, what, e->message);
        else if (explained)
                fprintf(stderr, "%s: %s: %s.\n", program_invocation_short_name, what, explained);
        else
                fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, what, strerror(r < 0 ? -r : EIO));
}

static int print_stats(sd_bus_message *m, const char *output) {
        uint64_t events = 0, bytes = 0, lost = 0;
        const char *key, *path = NULL;
        int r;

        r = sd_bus_message_enter_container(m, 'a', "{sv}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
                if ((r = sd_bus_message_read(m, "s", &key)) < 0)
                        return r;
                if (strcmp(key, "Events") == 0)
                        r = sd_bus_message_read(m, "v", "t", &events);
                else if (strcmp(key, "Bytes") == 0)
                        r = sd_bus_message_read(m, "v", "t", &bytes);
                else if (strcmp(key, "EventsLost") == 0)
                        r = sd_bus_message_read(m, "v", "t", &lost);
                else if (strcmp(key, "OutputPath") == 0)
                        r = sd_bus_message_read(m, "v", "s", &path);
                else
                        r = sd_bus_message_skip(m, "v");
                if (r < 0)
                        return r;
                if ((r = sd_bus_message_exit_container(m)) < 0)
                        return r;
        }
        fprintf(stderr, "Trace written into %s: %" PRIu64 " events, %" PRIu64 " bytes, %" PRIu64 " events lost.\n",
                path ?: output, events, bytes, lost);
        return 0;
}

static int on_stop_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        Client *c = ASSERT_PTR(userdata);
        const sd_bus_error *e = sd_bus_message_get_error(reply);

        if (e) {
                /* The session may have ended by itself meanwhile; SessionEnded says how. */
                if (sd_bus_error_has_name(e, TB_ERROR_NO_SUCH_SESSION))
                        return 0;
                print_bus_error("failed to stop", e, -EIO);
                c->exit_code = EXIT_FAILURE;
        } else
                (void) print_stats(reply, c->output);
        return sd_event_exit(c->event, 0);
}

static int request_stop(Client *c) {
        if (c->stopping) {
                fprintf(stderr, "Still finishing the trace; it will be complete in a moment.\n");
                return 0;
        }
        c->stopping = true;
        fprintf(stderr, "Stopping; writing what the kernel has buffered...\n");
        return sd_bus_call_method_async(c->bus, NULL, BUS_NAME, OBJECT_PATH, MANAGER_INTERFACE, "Stop",
                                        on_stop_reply, c, "o", c->session);
}

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        return request_stop(ASSERT_PTR(userdata));
}

static int on_session_ended(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Client *c = ASSERT_PTR(userdata);
        const char *path, *reason;
        int r;

        r = sd_bus_message_read(m, "os", &path, &reason);
        if (r < 0 || !c->session || strcmp(path, c->session) != 0)
                return 0;
        if (strcmp(reason, "output-error") == 0) {
                fprintf(stderr, "%s: the trace could not be written completely (output error).\n",
                        program_invocation_short_name);
                c->exit_code = EXIT_FAILURE;
        }
        (void) print_stats(m, c->output);
        return sd_event_exit(c->event, 0);
}

static int on_service_gone(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Client *c = ASSERT_PTR(userdata);
        const char *name, *old_owner, *new_owner;

        if (sd_bus_message_read(m, "sss", &name, &old_owner, &new_owner) < 0 || !isempty_str(new_owner))
                return 0;
        fprintf(stderr, "%s: the tracebus service went away while recording.\n", program_invocation_short_name);
        c->exit_code = EXIT_FAILURE;
        return sd_event_exit(c->event, 0);
}

static int call_start(Client *c, const char *config, int fd, const char *detach_key) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL, *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        const char *path;
        int r;

        r = sd_bus_message_new_method_call(c->bus, &call, BUS_NAME, OBJECT_PATH, MANAGER_INTERFACE, "Start");
        if (r < 0)
                return r;
        r = sd_bus_message_append(call, "s", config);
        if (r >= 0 && detach_key)
                r = sd_bus_message_append(call, "a{sv}", 2, "Output", "h", fd, "DetachKey", "s", detach_key);
        else if (r >= 0)
                r = sd_bus_message_append(call, "a{sv}", 1, "Output", "h", fd);
        if (r < 0)
                return r;
        r = sd_bus_call(c->bus, call, START_TIMEOUT_USEC, &error, &reply);
        if (r < 0) {
                print_bus_error("cannot start tracing", &error, r);
                return r;
        }
        r = sd_bus_message_read(reply, "o", &path);
        if (r < 0)
                return r;
        c->session = strdup(path);
        return c->session ? 0 : -ENOMEM;
}

/* Returns 1 and the session path, 0 if there is no session under @key. */
static int call_attach(Client *c, const char *key) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        const char *path;
        int r;

        r = sd_bus_call_method(c->bus, BUS_NAME, OBJECT_PATH, MANAGER_INTERFACE, "Attach", &error, &reply, "s", key);
        if (r < 0) {
                if (sd_bus_error_has_name(&error, TB_ERROR_NO_SUCH_SESSION))
                        return 0;
                print_bus_error("cannot attach", &error, r);
                return r;
        }
        r = sd_bus_message_read(reply, "o", &path);
        if (r < 0)
                return r;
        c->session = strdup(path);
        return c->session ? 1 : -ENOMEM;
}

static int run_is_detached(const char *key) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int detached, r;

        r = sd_bus_open_system(&bus);
        if (r >= 0)
                r = sd_bus_call_method(bus, BUS_NAME, OBJECT_PATH, MANAGER_INTERFACE, "IsDetached",
                                       &error, &reply, "s", key);
        if (r >= 0)
                r = sd_bus_message_read(reply, "b", &detached);
        if (r < 0) {
                print_bus_error("cannot ask the service", &error, r);
                return EXIT_FAILURE;
        }
        return detached ? EXIT_SUCCESS : EXIT_NO_SESSION;
}

static int setup_client(Client *c) {
        int r;

        r = sd_event_default(&c->event);
        if (r < 0)
                return r;
        r = sd_bus_open_system(&c->bus);
        if (r < 0) {
                fprintf(stderr, "%s: cannot connect to the system bus: %s\n", program_invocation_short_name, strerror(-r));
                return r;
        }
        r = sd_bus_attach_event(c->bus, c->event, 0);
        if (r < 0)
                return r;
        /* Before Start, so that an end that comes quickly is not missed. */
        r = sd_bus_match_signal(c->bus, NULL, NULL, OBJECT_PATH, MANAGER_INTERFACE, "SessionEnded",
                                on_session_ended, c);
        if (r < 0)
                return r;
        r = sd_bus_match_signal(c->bus, NULL, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                "org.freedesktop.DBus", "NameOwnerChanged", on_service_gone, c);
        if (r < 0)
                return r;
        (void) sigprocmask(SIG_BLOCK, &(sigset_t) {}, NULL);
        sigset_t mask;
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

static void client_done(Client *c) {
        c->session = mfree(c->session);
        c->bus = sd_bus_flush_close_unref(c->bus);
        c->event = sd_event_unref(c->event);
}

/* Waits for the session to end (Ctrl-C stops it), then reports. */
static int wait_for_end(Client *c) {
        int r = sd_event_loop(c->event);
        return r < 0 ? EXIT_FAILURE : c->exit_code;
}

static int run_attach(const Args *a) {
        _cleanup_(client_done) Client c = { .exit_code = EXIT_SUCCESS, .output = "the output file" };
        int r;

        r = setup_client(&c);
        if (r < 0)
                return EXIT_FAILURE;
        r = call_attach(&c, a->attach_key);
        if (r < 0)
                return EXIT_FAILURE;
        if (r == 0) {
                fprintf(stderr, "%s: Session re-attach failed: you have no session detached under '%s'.\n",
                        program_invocation_short_name, a->attach_key);
                return EXIT_NO_SESSION;
        }
        if (a->stop)
                (void) request_stop(&c);
        else
                fprintf(stderr, "Attached to %s; press Ctrl-C to stop it.\n", c.session);
        return wait_for_end(&c);
}

static int run_record(const Args *a) {
        _cleanup_(client_done) Client c = { .exit_code = EXIT_SUCCESS, .output = a->output };
        _cleanup_free_ char *config = NULL;
        _cleanup_close_ int fd = -EBADF;
        int r;

        r = a->config_path ? read_config(a, &config) : build_light_config(a, &config);
        if (r < 0) {
                fprintf(stderr, "%s: cannot read the config %s: %s\n", program_invocation_short_name,
                        strempty(a->config_path), strerror(-r));
                return EXIT_FAILURE;
        }
        r = setup_client(&c);
        if (r < 0)
                return EXIT_FAILURE;
        fd = open_output(a);
        if (fd < 0)
                return EXIT_FAILURE;
        r = call_start(&c, config, fd, a->detach_key);
        if (r < 0)
                return EXIT_FAILURE;
        fd = safe_close(fd);

        if (a->detach_key) {
                fprintf(stderr, "Recording into %s, detached as '%s'. 'tracebus --attach=%s --stop' ends it.\n",
                        a->output, a->detach_key, a->detach_key);
                return EXIT_SUCCESS;
        }
        fprintf(stderr, "Recording into %s; press Ctrl-C to stop.\n", a->output);
        return wait_for_end(&c);
}

static int run(int argc, char *argv[]) {
        _cleanup_(args_done) Args a = {};
        int r;

        r = parse_argv(argc, argv, &a);
        if (r <= 0)
                return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        if (a.is_detached_key)
                return run_is_detached(a.is_detached_key);
        if (a.attach_key)
                return run_attach(&a);
        return run_record(&a);
}

int main(int argc, char *argv[]) {
        return run(argc, argv);
}
