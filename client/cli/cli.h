/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The tracebus command line: what its parts share. Messages for people go to
 * stderr, one line per error; stdout carries only what a script reads (a pid,
 * --query, --list-events, or the trace itself with -o -).
 */

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>

#include "config.pb-c.h"
#include "macro.h"
#include "tracebus-bus.h"

#define SESSION_PATH_PREFIX TB_SESSION_PATH_PREFIX "/"

/* perfetto's exit codes: 0 yes/success, 1 error, 2 "no such detached session". */
#define EXIT_NO_SESSION 2
/* An option of perfetto's that has no meaning off Android (--upload, --dropbox,
 * --clone-for-bugreport, ...). */
#define EXIT_NOT_SUPPORTED 3

/* Long enough for a person to answer a polkit authentication prompt. */
#define CLI_CALL_TIMEOUT_USEC (5ull * 60 * 1000 * 1000)
/* Stop returns once the trace is complete: writing a large buffer takes a while. */
#define CLI_STOP_TIMEOUT_USEC (10ull * 60 * 1000 * 1000)

typedef enum Mode {
        MODE_RECORD,
        MODE_ATTACH,
        MODE_IS_DETACHED,
        MODE_QUERY,
        MODE_LIST_EVENTS,
        MODE_STOP_ALL,
        MODE_STOP_SESSION,
        MODE_HELP,
        MODE_VERSION,
        MODE_TRIGGER,                /* --trigger */
        MODE_CLONE,                  /* --clone, --clone-by-name, --clone-key */
} Mode;

typedef struct Args {
        Mode mode;

        /* The config: -c FILE [--txt], or the light config. */
        const char *config_path;
        bool txt;
        bool txt_lossy;              /* --txt-lossy: names v58 lacks dropped with a warning */
        bool has_time, has_buffer, has_size;
        uint64_t duration_ms;
        uint64_t buffer_kb;
        uint64_t max_file_size_bytes;
        char **events;

        const char *output;          /* -o; "-" is stdout */
        bool no_clobber;

        const char *detach_key;
        const char *attach_key;
        const char *is_detached_key;
        bool stop;
        bool background;             /* -d */
        bool background_wait;        /* -D */

        bool long_output;            /* --long */
        bool json;
        const char *glob;            /* --list-events */
        const char *stop_session;    /* --stop-session */
        bool ask_password;           /* unless --no-ask-password */

        /* --txt and the config checks (cli-tracecfg.c) */
        int notify_fd;               /* --notify-fd; -1: none */
        char **attributes;           /* --add-attribute key[=value], in order */
        bool query_raw;              /* --query-raw */

        /* Rotation (cli-rotate.c): chunks FILE.0, FILE.1, ... */
        uint64_t rotate_every_ms;    /* --rotate-every; 0: none */
        uint64_t rotate_bytes;       /* --rotate-size; 0: none */
        uint32_t rotate_keep;        /* --keep; 0: every chunk */
        /* --trigger (cli-trigger.c) */
        char **triggers;             /* --trigger=NAME[,NAME], in order */
        /* Snapshots (cli-clone.c): the session to snapshot, one of them */
        const char *clone_id;        /* --clone=ID (a number or an object path) */
        const char *clone_name;      /* --clone-by-name=NAME: the config's unique_session_name */
        const char *clone_key;       /* --clone-key=KEY: a detached session's key */
        /* CPU profiles (cli-profile.c): --profile[=HZ], --pid, --cmdline */
        bool profile;
        uint32_t profile_hz;
        char **profile_pids;         /* validated decimal pids, in order */
        char **profile_cmdlines;
        /* Perfetto SDK apps (cli-track-event.c): --track-event CATEGORY */
        char **track_event_categories;
} Args;

/* cli-args.c */
/* Returns 1 to go on, 0 to exit successfully (--help, --version), < 0 on a
 * usage error (already printed). */
int cli_parse_argv(int argc, char *argv[], Args *ret);
void cli_args_done(Args *a);
void cli_help(FILE *f);

/* cli-units.c */
/* "10s", "500ms", "1.5m", "2h", "1d", or a bare number of seconds (parse_timespan()),
 * into ms rounded to the nearest; -ERANGE past TraceConfig.duration_ms's 32 bits. */
int cli_parse_duration_ms(const char *s, uint64_t *ret);
/* "32mb", "4096k", "1GiB", "512b", or a bare number of KiB (parse_size()), into bytes. */
int cli_parse_size_bytes(const char *s, uint64_t *ret);
/* "1.2 MiB", "312 B" into buf. */
const char *cli_format_bytes(char *buf, size_t size, uint64_t bytes);
/* "2m 05s", "1h 02m", "4.2s" into buf. */
const char *cli_format_duration(char *buf, size_t size, uint64_t ms);
void cli_json_string(FILE *f, const char *s);

/* Prints "tracebus: ...". */
void cli_log(const char *fmt, ...) _printf_(1, 2);
/* cli_log(), then returns -EINVAL: for refusals. */
int cli_refuse(const char *fmt, ...) _printf_(1, 2);

/* cli-config.c */
typedef struct CliConfig {
        char *text;                  /* sent as Start's config, or NULL */
        void *binary;                /* sent as the BinaryConfig option, or NULL */
        size_t binary_size;
        Tracebus__TraceConfig *parsed;
} CliConfig;

/* Reads and checks the config locally (errors say FILE:LINE:COLUMN). */
/* @s as a text-format string literal, quotes and backslashes escaped. */
void cli_append_quoted(FILE *f, const char *s);
int cli_config_load(const Args *a, CliConfig *ret);
void cli_config_done(CliConfig *c);

/* cli-bus.c */
int cli_connect(sd_bus **ret);
/* Whether calls may ask for a password: stdin is a TTY, we are not root, no
 * --no-ask-password. Set once from main(). */
void cli_set_ask_password(bool ask);
/* A synchronous method call that may need polkit: runs the text agent around
 * it and allows interactive authorization when cli_set_ask_password(true). */
int cli_call_authorized(sd_bus *bus, sd_bus_message *m, uint64_t usec, sd_bus_error *error,
                        sd_bus_message **ret_reply);
/* One line (plus a polkit hint when authorization is the problem). @action is
 * the polkit action the call needs, or NULL. */
void cli_print_bus_error(const char *what, const sd_bus_error *e, int r, const char *action);

typedef struct SessionInfo {
        char *path;
        uint64_t id;
        char *state;
        uid_t owner_uid;
        char *output_path;
        bool detached;
        char **events;
        char **data_sources;         /* the DataSources property, when the service has it */
        uint32_t duration_ms;
        uint64_t started_at_usec;
        uint64_t bytes_written;
        uint64_t events_recorded;
        uint64_t events_lost;
        char *unique_session_name;   /* "" or NULL: none */
        char **warnings;             /* the Warnings property, when the service has it */
} SessionInfo;

void session_info_done(SessionInfo *i);
/* Properties.GetAll of one session. */
int session_info_get(sd_bus *bus, const char *path, SessionInfo *ret, sd_bus_error *error);
/* Applies an a{sv} of session properties (GetAll's reply, PropertiesChanged). */
int session_info_update(SessionInfo *i, sd_bus_message *m);
/* Manager.ListSessions. */
int cli_list_sessions(sd_bus *bus, char ***ret, sd_bus_error *error);

typedef struct StopStats {
        uint64_t events, bytes, lost;
        char *reason;
        char *output_path;
        char **warnings;          /* all of the session's, the last ones included */
} StopStats;

void stop_stats_done(StopStats *s);
int stop_stats_read(sd_bus_message *m, StopStats *ret);

/* cli-agent.c: pkttyagent for one call, the way systemctl runs it. */
int polkit_agent_open(void);
void polkit_agent_close(void);

/* cli-record.c */
int run_record(const Args *a);
int run_attach(const Args *a);

/* cli-tracecfg.c: perfetto's options around TraceConfig's own fields. */
/* An option perfetto has only on Android (@option without its dashes):
 * prints why, returns -EOPNOTSUPP, which tracebus exits with as EXIT_NOT_SUPPORTED. */
int cli_refuse_android_only(const char *option);
/* --notify-fd FD: FD must be open. */
int cli_parse_notify_fd(Args *a, const char *arg);
/* Writes perfetto's status byte (0 started, 1 failed) into --notify-fd and closes it. */
void cli_notify(const Args *a, bool started);
/* cmd_trace_start_delay: sleeps a uniformly random delay in [min, max] ms before Start,
 * as perfetto_cmd does. -EINVAL (printed) when max < min. */
int cli_start_delay(const Tracebus__TraceConfig *tc);
/* --add-attribute: puts them into @c's TraceConfig.trace_attributes (string values), which
 * then goes to the service as a binary config. -EINVAL (printed) on an empty key. */
int cli_apply_attributes(const Args *a, CliConfig *c);
/* --query: the lines that follow a session's row (name, data sources, warnings). */
void cli_print_session_extras(const SessionInfo *i);
/* --query --json: the same as members ", \"unique_session_name\": ..., \"warnings\": [...]". */
void cli_print_session_extras_json(const SessionInfo *i);

/* cli-producers.c: --query's apps connected to the producer socket (Manager.ListProducers). */
typedef struct ProducerSourceInfo {
        char *name;
        char **categories;           /* track_event's; NULL for other data sources */
} ProducerSourceInfo;

typedef struct ProducerInfo {
        uint64_t id;
        char *name;                  /* what the app calls itself (its argv[0]) */
        uid_t uid;
        pid_t pid;
        ProducerSourceInfo *sources;
        size_t n_sources;
} ProducerInfo;

typedef struct ProducerList {
        ProducerInfo *items;
        size_t n;
} ProducerList;

void producer_list_done(ProducerList *l);
/* The producers this caller may see: its own, everyone's for an admin. Prints why not. */
int cli_load_producers(sd_bus *bus, ProducerList *ret);
/* The tables perfetto --query prints: producers, then their data sources. */
void cli_print_producers(const ProducerList *l);
/* The same as one member, "\"producers\": [...]". */
void cli_print_producers_json(const ProducerList *l);

/* cli-profile.c: --profile[=HZ] [--pid PID] [--cmdline NAME], a linux.perf CPU profile. */
/* Perfetto's CPU-profiling docs sample at 100 Hz. */
#define CLI_PROFILE_DEFAULT_HZ 100u
/* The rings, sized for DWARF's stack copies (cli-profile.c): read every 50 ms, a sample
 * taken as 8.5 KiB, four reads' worth, 128 to 1024 pages a CPU (the service's cap). */
#define CLI_PROFILE_READ_PERIOD_MS 50u
#define CLI_PROFILE_SAMPLE_BYTES 8704u
#define CLI_PROFILE_MIN_RING_PAGES 128u
#define CLI_PROFILE_MAX_RING_PAGES 1024u
int cli_parse_profile(Args *a, const char *arg);
int cli_parse_profile_pid(Args *a, const char *arg);
int cli_parse_profile_cmdline(Args *a, const char *arg);
/* The refused combinations (printed): --pid/--cmdline without --profile, --profile with -c. */
int cli_check_profile(const Args *a);
/* The linux.perf data source of the light config, in text format. */
void cli_profile_append_sources(FILE *f, const Args *a);

/* cli-query-raw.c: --query-raw, the caller's sessions and the apps in @apps as a
 * TracingServiceState message on stdout. */
int cli_print_query_raw(const SessionInfo *items, size_t n, const ProducerList *apps);

/* cli-track-event.c: --track-event CATEGORY, the track_event data source of apps built
 * with the Perfetto SDK ('*': every category). */
int cli_parse_track_event(Args *a, const char *arg);
/* The refused combination (printed): --track-event with -c. */
int cli_check_track_event(const Args *a);
/* The track_event data source of the light config, in text format; nothing without the option. */
void cli_track_event_append_sources(FILE *f, const Args *a);

/* cli-query.c */
int run_is_detached(const Args *a);
int run_query(const Args *a);
int run_list_events(const Args *a);
/* Refuses (-ENOENT, said on stderr) command-line event words of which none exists here. */
int cli_check_event_args(const Args *a);
int run_stop_all(const Args *a);
int run_stop_session(const Args *a);

/* cli-warnings.c: prints to stderr each warning of @l not in *@printed yet, once, and
 * adds it there. Returns how many, or -ENOMEM. */
int cli_print_new_warnings(char ***printed, char **l);
bool cli_has_new_warnings(char **printed, char **l);
/* Start's (or Attach's) reply: the session's path, and Start's warnings. */
int cli_read_start_reply(sd_bus_message *reply, const char **ret_path, char ***ret_warnings);

/* cli-rotate.c: --rotate-every, --rotate-size, --keep. */
/* @option: the long option's name. */
int cli_parse_rotate_option(Args *a, const char *option, const char *arg);
int cli_check_rotation(const Args *a);
static inline bool cli_rotates(const Args *a) {
        return a->rotate_every_ms > 0 || a->rotate_bytes > 0;
}
/* cli-trigger.c: --trigger, Manager.ActivateTriggers. */
int cli_parse_triggers(Args *a, const char *arg);
int run_trigger(const Args *a);
/* -o FILE (or stdout) opened by the caller, or FILE.0 with rotation; -EBADF without -o (the
 * service's trace directory). Remembers @a for the calls below. */
int cli_open_output(const Args *a);
/* Where the trace goes, for messages ("FILE.0, FILE.1, ..." with rotation). */
char *cli_output_label(const Args *a);
/* Start's RotateEveryMs and RotateBytes, in the open a{sv} (--keep is tracebus's own). */
int cli_append_rotate_options(sd_bus_message *m);
/* After Start: hands over chunk 1's output and follows Session.Rotated, handing over each
 * next chunk's and deleting the oldest beyond --keep. */
int cli_rotation_start(sd_bus *bus, const char *session, const char *service);
/* At the end: removes the chunk handed over but never begun. */
void cli_rotation_end(void);
/* cli-clone.c: snapshots of a running session */
/* cli-query.c: "7", or a session's object path, as its object path; NULL if neither. */
char *cli_session_path(const char *arg);
/* cli-clone.c: --clone, --clone-by-name, --clone-key. */
int run_clone(const Args *a);
