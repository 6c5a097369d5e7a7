/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The verbs that do not record: --is_detached, --query, --list-events, --stop-all, --stop-session. */
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "atrace-categories.h"
#include "bus-errors.h"
#include "strv.h"

typedef struct SessionList {
        SessionInfo *items;
        size_t n;
} SessionList;

static void session_list_done(SessionList *l) {
        for (size_t i = 0; i < l->n; i++)
                session_info_done(&l->items[i]);
        l->items = mfree(l->items);
        l->n = 0;
}

static int connect_or_fail(sd_bus **ret) {
        return cli_connect(ret) < 0 ? -EIO : 0;
}

int run_is_detached(const Args *a) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int detached, r;

        if (connect_or_fail(&bus) < 0)
                return EXIT_FAILURE;
        r = sd_bus_call_method(bus, TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_INTERFACE, "IsDetached", &error, &reply, "s",
                               a->is_detached_key);
        if (r < 0) {
                cli_print_bus_error("cannot ask the tracebus service", &error, r, NULL);
                return EXIT_FAILURE;
        }
        r = sd_bus_message_read(reply, "b", &detached);
        if (r < 0) {
                cli_log("cannot read the service's reply to IsDetached: %s", strerror(-r));
                return EXIT_FAILURE;
        }
        /* perfetto: 0 yes, 2 no, 1 error. */
        return detached ? EXIT_SUCCESS : EXIT_NO_SESSION;
}

/* ---- --list-events ---- */

int run_list_events(const Args *a) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_strv_free_ char **events = NULL;
        int r;

        if (connect_or_fail(&bus) < 0)
                return EXIT_FAILURE;
        r = sd_bus_call_method(bus, TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_INTERFACE, "ListEvents", &error, &reply, "s",
                               strempty(a->glob));
        if (r < 0) {
                cli_print_bus_error("cannot list the trace events", &error, r, NULL);
                return EXIT_FAILURE;
        }
        r = sd_bus_message_read_strv(reply, &events);
        if (r < 0) {
                cli_log("cannot read the service's list of trace events: %s", strerror(-r));
                return EXIT_FAILURE;
        }
        if (a->json) {
                fputc('[', stdout);
                STRV_FOREACH(e, events) {
                        if (e != events)
                                fputs(", ", stdout);
                        cli_json_string(stdout, *e);
                }
                fputs("]\n", stdout);
        } else {
                STRV_FOREACH(e, events)
                        printf("%s\n", *e);
                if (!events)
                        cli_log("no trace event matches '%s'.", strempty(a->glob));
        }
        return fflush(stdout) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* Whether @glob names an event of this kernel, as the service resolves it. */
static int event_exists(sd_bus *bus, const char *glob, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_strv_free_ char **events = NULL;
        int r;

        /* What systrace's text shows for ftrace/print: the service records ftrace/print. */
        if (strcmp(glob, "tracing_mark_write") == 0 || strcmp(glob, "ftrace/tracing_mark_write") == 0)
                glob = "ftrace/print";
        r = sd_bus_call_method(bus, TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_INTERFACE, "ListEvents", error, &reply, "s",
                               glob);
        if (r >= 0)
                r = sd_bus_message_read_strv(reply, &events);
        return r < 0 ? r : !!events;
}

/* The event words of the command line are typed by hand: when none of them exists (a
 * typo), say so and start nothing, as tracebus's Events option is refused. A TraceConfig
 * (-c) is Perfetto's and runs as Perfetto runs it, its missing events warnings. */
int cli_check_event_args(const Args *a) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *list = NULL;
        int r;

        if (a->config_path || !a->events)
                return 0;
        /* A category enables what this kernel has of it, a warning for the rest: not a typo. */
        STRV_FOREACH(e, a->events)
                if (!strchr(*e, '/') && atrace_category_events(*e))
                        return 0;
        /* A question this caller may not ask (polkit), or no service: Start says why. */
        if (cli_connect(&bus) < 0)
                return 0;
        STRV_FOREACH(e, a->events) {
                r = event_exists(bus, *e, &error);
                if (r != 0)
                        return 0;
        }
        list = strv_join(a->events, ", ");
        cli_log("this kernel has no such trace events: %s (tracebus --list-events lists them).", list ?: "");
        return -ENOENT;
}

/* ---- sessions ---- */

/* The caller's own sessions: ListSessions also returns other users' sessions to
 * managers, and those are never shown or stopped here. */
static int load_own_sessions(sd_bus *bus, SessionList *ret) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_strv_free_ char **paths = NULL;
        _cleanup_(session_list_done) SessionList l = {};
        int r;

        r = cli_list_sessions(bus, &paths, &error);
        if (r < 0) {
                cli_print_bus_error("cannot list the tracing sessions", &error, r, NULL);
                return r;
        }
        l.items = calloc(strv_length(paths) + 1, sizeof(SessionInfo));
        if (!l.items)
                return -ENOMEM;
        STRV_FOREACH(p, paths) {
                _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
                SessionInfo *i = &l.items[l.n];

                /* Gone meanwhile, or another user's (its properties are not ours to read). */
                if (session_info_get(bus, *p, i, &e) < 0)
                        continue;
                if (i->owner_uid != geteuid() || strcmp(strempty(i->state), "ended") == 0) {
                        session_info_done(i);
                        continue;
                }
                l.n++;
        }
        *ret = l;
        l = (SessionList) {};
        return 0;
}

static uint64_t elapsed_ms(const SessionInfo *i) {
        struct timespec ts;
        uint64_t now;

        (void) clock_gettime(CLOCK_REALTIME, &ts);
        now = (uint64_t) ts.tv_sec * 1000000ull + (uint64_t) ts.tv_nsec / 1000ull;
        return i->started_at_usec > 0 && now > i->started_at_usec ? (now - i->started_at_usec) / 1000 : 0;
}

static const char *output_of(const SessionInfo *i) {
        return !isempty_str(i->output_path) ? i->output_path : "(a file its client passed)";
}

static void print_long(const SessionInfo *i) {
        _cleanup_free_ char *events = strv_join(i->events, " ");
        char started[64] = "?", d[32];
        time_t t = (time_t) (i->started_at_usec / 1000000ull);
        struct tm tm;

        if (localtime_r(&t, &tm))
                strftime(started, sizeof(started), "%Y-%m-%d %H:%M:%S %Z", &tm);
        printf("    events:  %s\n", strempty(events));
        printf("    started: %s, %s\n", started,
               i->duration_ms > 0 ? cli_format_duration(d, sizeof(d), i->duration_ms) : "no time limit");
        printf("    path:    %s\n", i->path);
}

static void print_table(const SessionList *l, bool long_output) {
        if (l->n == 0) {
                printf("No tracing sessions of yours.\n");
                return;
        }
        printf("%-15s %-10s %-8s %-9s %10s %10s %6s  %s\n", "ID", "STATE", "DETACHED", "ELAPSED", "EVENTS", "SIZE",
               "LOST", "OUTPUT");
        for (size_t n = 0; n < l->n; n++) {
                const SessionInfo *i = &l->items[n];
                char elapsed[32], size[32];

                printf("%-15" PRIu64 " %-10s %-8s %-9s %10" PRIu64 " %10s %6" PRIu64 "  %s\n", i->id,
                       strempty(i->state), i->detached ? "yes" : "no",
                       cli_format_duration(elapsed, sizeof(elapsed), elapsed_ms(i)), i->events_recorded,
                       cli_format_bytes(size, sizeof(size), i->bytes_written), i->events_lost, output_of(i));
                if (long_output)
                        print_long(i);
                cli_print_session_extras(i);
        }
}

static void print_json_session(const SessionInfo *i) {
        printf("{\"id\": %" PRIu64 ", \"path\": ", i->id);
        cli_json_string(stdout, i->path);
        printf(", \"state\": ");
        cli_json_string(stdout, i->state);
        printf(", \"owner_uid\": %u, \"detached\": %s, \"events\": [", (unsigned) i->owner_uid,
               i->detached ? "true" : "false");
        STRV_FOREACH(e, i->events) {
                if (e != i->events)
                        fputs(", ", stdout);
                cli_json_string(stdout, *e);
        }
        printf("], \"duration_ms\": %" PRIu32 ", \"started_at_usec\": %" PRIu64 ", \"elapsed_ms\": %" PRIu64
               ", \"bytes_written\": %" PRIu64 ", \"events_recorded\": %" PRIu64 ", \"events_lost\": %" PRIu64
               ", \"output_path\": ",
               i->duration_ms, i->started_at_usec, elapsed_ms(i), i->bytes_written, i->events_recorded,
               i->events_lost);
        if (isempty_str(i->output_path))
                fputs("null", stdout);
        else
                cli_json_string(stdout, i->output_path);
        cli_print_session_extras_json(i);
        fputc('}', stdout);
}

static void print_json(const SessionList *l, const ProducerList *producers) {
        printf("{\"sessions\": [");
        for (size_t n = 0; n < l->n; n++) {
                if (n > 0)
                        fputs(", ", stdout);
                print_json_session(&l->items[n]);
        }
        fputs("], ", stdout);
        cli_print_producers_json(producers);
        printf("}\n");
}

int run_query(const Args *a) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(session_list_done) SessionList l = {};
        _cleanup_(producer_list_done) ProducerList producers = {};

        if (connect_or_fail(&bus) < 0 || load_own_sessions(bus, &l) < 0)
                return EXIT_FAILURE;
        /* The sessions are shown even when the apps cannot be (said on stderr). */
        (void) cli_load_producers(bus, &producers);
        if (a->query_raw)
                return cli_print_query_raw(l.items, l.n, &producers) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        if (a->json)
                print_json(&l, &producers);
        else {
                print_table(&l, a->long_output);
                cli_print_producers(&producers);
        }
        return fflush(stdout) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* ---- stopping ---- */

typedef struct StopCall {
        const SessionInfo *info;
        bool done;
        int exit_code;
} StopCall;

static void print_stopped(const SessionInfo *i, const StopStats *st) {
        fprintf(stderr, "Session %" PRIu64 ": trace written into %s: %" PRIu64 " events, %" PRIu64 " bytes, %" PRIu64
                " events lost.\n", i->id, st->output_path ?: output_of(i), st->events, st->bytes, st->lost);
}

static int on_stop_all_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        StopCall *call = ASSERT_PTR(userdata);
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        _cleanup_(stop_stats_done) StopStats st = {};

        call->done = true;
        if (e && sd_bus_error_has_name(e, TB_ERROR_NO_SUCH_SESSION)) {
                fprintf(stderr, "Session %" PRIu64 " had ended already.\n", call->info->id);
                return 0;
        }
        if (e) {
                char what[64];
                snprintf(what, sizeof(what), "cannot stop session %" PRIu64, call->info->id);
                cli_print_bus_error(what, e, -EIO, NULL);
                call->exit_code = EXIT_FAILURE;
                return 0;
        }
        if (stop_stats_read(reply, &st) >= 0)
                print_stopped(call->info, &st);
        return 0;
}

static int stop_calls_wait(sd_bus *bus, StopCall *calls, size_t n) {
        for (;;) {
                bool all = true;
                int r;

                for (size_t i = 0; i < n; i++)
                        all = all && calls[i].done;
                if (all)
                        return 0;
                r = sd_bus_process(bus, NULL);
                if (r < 0)
                        return r;
                if (r > 0)
                        continue;
                r = sd_bus_wait(bus, UINT64_MAX);
                if (r < 0 && r != -EINTR)
                        return r;
        }
}

/* Stops each in parallel: the replies come as each trace is complete. */
static int stop_sessions(sd_bus *bus, const SessionList *l) {
        _cleanup_free_ StopCall *calls = calloc(l->n + 1, sizeof(StopCall));
        int exit_code = EXIT_SUCCESS, r;

        if (!calls)
                return EXIT_FAILURE;
        for (size_t i = 0; i < l->n; i++) {
                _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;

                calls[i] = (StopCall) { .info = &l->items[i], .exit_code = EXIT_SUCCESS };
                r = sd_bus_message_new_method_call(bus, &m, TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_INTERFACE, "Stop");
                if (r >= 0)
                        r = sd_bus_message_append(m, "o", l->items[i].path);
                if (r >= 0)
                        r = sd_bus_call_async(bus, NULL, m, on_stop_all_reply, &calls[i], CLI_STOP_TIMEOUT_USEC);
                if (r < 0) {
                        cli_log("cannot stop session %" PRIu64 ": %s", l->items[i].id, strerror(-r));
                        calls[i] = (StopCall) { .done = true, .exit_code = EXIT_FAILURE };
                }
        }
        r = stop_calls_wait(bus, calls, l->n);
        if (r < 0) {
                cli_log("lost the connection to the service while stopping: %s", strerror(-r));
                return EXIT_FAILURE;
        }
        for (size_t i = 0; i < l->n; i++)
                if (calls[i].exit_code != EXIT_SUCCESS)
                        exit_code = calls[i].exit_code;
        return exit_code;
}

int run_stop_all(const Args *a) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(session_list_done) SessionList l = {};

        if (connect_or_fail(&bus) < 0 || load_own_sessions(bus, &l) < 0)
                return EXIT_FAILURE;
        if (l.n == 0) {
                fprintf(stderr, "No tracing sessions of yours to stop.\n");
                return EXIT_SUCCESS;
        }
        return stop_sessions(bus, &l);
}

/* "12" or "/org/tracebus/Tracebus1/session/12" into the path. */
char *cli_session_path(const char *arg) {
        char *p;

        if (strncmp(arg, SESSION_PATH_PREFIX, strlen(SESSION_PATH_PREFIX)) == 0)
                arg += strlen(SESSION_PATH_PREFIX);
        if (arg[0] < '1' || arg[0] > '9' || strspn(arg, "0123456789") != strlen(arg))
                return NULL;
        if (asprintf(&p, SESSION_PATH_PREFIX "%s", arg) < 0)
                return NULL;
        return p;
}

int run_stop_session(const Args *a) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(stop_stats_done) StopStats st = {};
        _cleanup_free_ char *path = cli_session_path(a->stop_session);
        int r;

        if (!path) {
                cli_log("--stop-session: '%s' is not a session number or path (see --query).", a->stop_session);
                return EXIT_FAILURE;
        }
        if (connect_or_fail(&bus) < 0)
                return EXIT_FAILURE;
        r = sd_bus_message_new_method_call(bus, &m, TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_INTERFACE, "Stop");
        if (r >= 0)
                r = sd_bus_message_append(m, "o", path);
        if (r >= 0)
                r = cli_call_authorized(bus, m, CLI_STOP_TIMEOUT_USEC, &error, &reply);
        if (r < 0) {
                cli_print_bus_error("cannot stop the session", &error, r, TB_ACTION_MANAGE);
                return sd_bus_error_has_name(&error, TB_ERROR_NO_SUCH_SESSION) ? EXIT_NO_SESSION : EXIT_FAILURE;
        }
        if (stop_stats_read(reply, &st) >= 0)
                fprintf(stderr, "Session %s: trace written into %s: %" PRIu64 " events, %" PRIu64 " bytes, %" PRIu64
                        " events lost.\n", path + strlen(SESSION_PATH_PREFIX),
                        st.output_path ?: "the file its client passed", st.events, st.bytes, st.lost);
        return EXIT_SUCCESS;
}
