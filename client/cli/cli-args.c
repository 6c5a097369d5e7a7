/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * perfetto's command line, with its meanings and its refusals (perfetto_cmd.cc,
 * ParseCmdlineAndMaybeDaemonize), plus tracebus's own verbs.
 */
#include <getopt.h>
#include <string.h>

#include "cli.h"
#include "config.h"
#include "strv.h"

/* Detach keys, as the service takes them: 1 to 64 printable ASCII characters. */
#define DETACH_KEY_MAX 64

void cli_args_done(Args *a) {
        a->events = strv_free(a->events);
        a->attributes = strv_free(a->attributes);
        a->triggers = strv_free(a->triggers);
        a->profile_pids = strv_free(a->profile_pids);
        a->profile_cmdlines = strv_free(a->profile_cmdlines);
        a->track_event_categories = strv_free(a->track_event_categories);
}

void cli_help(FILE *f) {
        fprintf(f,
                "Usage: %1$s [OPTIONS] [EVENT...]\n"
                "Record the kernel's trace events, and the track events of apps built with the Perfetto SDK,\n"
                "into a Perfetto trace through the tracebus service.\n"
                "\n"
                "  -c, --config FILE      TraceConfig from FILE ('-' for stdin), binary unless --txt\n"
                "      --txt              The config is in protobuf text format\n"
                "      --txt-lossy        Like --txt, but drop (with a warning) names Perfetto v58 lacks\n"
                "  -o, --out FILE         Write the trace into FILE ('-' for stdout); opened by you\n"
                "      --no-clobber       Refuse to overwrite an existing FILE\n"
                "  -d, --background       Go to the background; prints the pid (kill -TERM it to stop)\n"
                "  -D, --background-wait  Like -d, but only once recording has started\n"
                "\n"
                "Light configuration (without -c):\n"
                "  -t, --time DURATION    Record for DURATION (default 10s): 500ms, 30s, 5m, 1h; 0 = until stopped\n"
                "  -b, --buffer SIZE      Trace buffer (default 32mb): 4096kb, 64mb, 1gb\n"
                "  -s, --size SIZE        Stop when the file reaches SIZE; the trace is written as it goes\n"
                "  EVENT                  group/name (sched/sched_switch), group/*, an atrace category\n"
                "                         (sched, freq, idle, irq, disk, workq, memory, ...) or a bare name\n"
                "      --profile[=HZ]     Sample call stacks on the CPUs, HZ a second (default 100): linux.perf\n"
                "      --pid PID          With --profile: sample only process PID (repeatable)\n"
                "      --cmdline NAME     With --profile: sample only the processes named NAME (repeatable)\n"
                "      --track-event CATEGORY  Record the track events of your apps built with the Perfetto SDK\n"
                "                         in CATEGORY (repeatable; '*' for all): track_event\n"
                "\n"
                "Detached sessions:\n"
                "      --detach=KEY       Start, then leave the session recording without this client\n"
                "      --attach=KEY       Attach to your session detached under KEY; wait for its end\n"
                "      --stop             With --attach: stop the session now, wait for the trace\n"
                "      --is_detached=KEY  Exit code: 0 a session of yours is detached under KEY, 2 not, 1 error\n"
                "\n"
                "Sessions and events:\n"
                "      --query            Your sessions and their state, and your apps connected\n"
                "                         (--long: more, --json: for scripts)\n"
                "      --list-events [GLOB]  The trace events this kernel offers (--json: as an array)\n"
                "      --stop-all         Stop all your sessions, waiting for each complete trace\n"
                "      --stop-session=ID  Stop one session (another user's needs org.tracebus.manage)\n"
                "      --trigger=NAME[,NAME]  Send triggers to your sessions whose trigger_config waits for them\n"
                "\n"
                "Snapshots of a running session (it goes on recording):\n"
                "      --clone=ID         Write session ID's data so far into -o FILE (or the service's trace directory)\n"
                "      --clone-by-name=NAME  The same for your session whose config's unique_session_name is NAME\n"
                "      --clone-key=KEY    The same for your session detached under KEY\n"
                "\n"
                "      --add-attribute KEY[=VALUE]  Put KEY=VALUE into the trace's attributes (repeatable)\n"
                "      --notify-fd FD     Write one byte into FD once recording started (0), or failed (1)\n"
                "      --query-raw        Your sessions as a TracingServiceState protobuf (see tracebus(1))\n"
                "      --rotate-every DURATION  Write FILE.0, FILE.1, ...: a new chunk every DURATION (1s at least)\n"
                "      --rotate-size SIZE  ... or once a chunk holds SIZE (1mb at least); each chunk loads alone\n"
                "      --keep N           With rotation: keep the newest N chunks, delete the older ones\n"
                "      --no-ask-password  Do not ask for a password to authorize (polkit)\n"
                "  -h, --help             Show this help\n"
                "      --version          Show the version\n"
                "\n"
                "Ctrl-C or SIGTERM stops recording early; the trace is complete either way.\n"
                "See tracebus(1).\n",
                program_invocation_short_name);
}

static bool detach_key_valid(const char *key) {
        size_t n = strlen(key);

        if (n == 0 || n > DETACH_KEY_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if (key[i] < 0x20 || key[i] > 0x7e)
                        return false;
        return true;
}

static int check_key(const char *option, const char *key) {
        if (key && !detach_key_valid(key))
                return cli_refuse("%s: a detach key is 1 to %d printable ASCII characters", option, DETACH_KEY_MAX);
        return 0;
}

static bool light_config(const Args *a) {
        return a->has_time || a->has_buffer || a->has_size || a->events || a->profile || a->track_event_categories;
}

/* --query, --list-events, --stop-all and --stop-session stand alone. */
static int check_standalone(const Args *a, const char *name) {
        bool others = a->config_path || light_config(a) || a->output || a->detach_key || a->attach_key ||
                      a->is_detached_key || a->stop || a->background || a->no_clobber;

        if (others)
                return cli_refuse("%s cannot be combined with any other argument", name);
        return 0;
}

static int check_attach(const Args *a) {
        if (a->attach_key && a->is_detached_key)
                return cli_refuse("--attach and --is_detached are mutually exclusive");
        if (a->config_path || light_config(a))
                return cli_refuse("Cannot specify a trace config with this option");
        if (a->output)
                return cli_refuse("Can't pass an --out file with this option");
        if (a->background)
                return cli_refuse("--attach and --background are mutually exclusive");
        return 0;
}

static int check_record(const Args *a) {
        if (a->config_path && light_config(a))
                return cli_refuse("Cannot specify both -c/--config and any of --time, --size, --buffer, FTRACE_EVENT");
        if (!a->config_path && !light_config(a))
                return cli_refuse("The TraceConfig is empty: name the events to record (e.g. sched/sched_switch), "
                                  "or pass -c FILE");
        if (!a->config_path && !a->events && !a->profile && !a->track_event_categories)
                return cli_refuse("No events to record: name them (e.g. sched/sched_switch, or --track-event "
                                  "CATEGORY for your Perfetto SDK apps), or pass -c FILE");
        if (!a->output && !a->detach_key)
                return cli_refuse("--out is required: -o FILE, or -o - for stdout");
        if (a->output && strcmp(a->output, "-") == 0) {
                /* The client leaves at once: stdout would go with it. */
                if (a->detach_key)
                        return cli_refuse("Cannot write the trace to stdout (-o -) with --detach: "
                                          "the session outlives tracebus; pass -o FILE");
                if (a->background)
                        return cli_refuse("Cannot write the trace to stdout (-o -) with --background: pass -o FILE");
        }
        return 0;
}

/* --clone, --clone-by-name, --clone-key: one of them, with -o (or without: the service's
 * trace directory) and --no-clobber only. */
static int check_clone(const Args *a) {
        bool others = a->config_path || light_config(a) || a->detach_key || a->attach_key || a->is_detached_key ||
                      a->stop || a->background;

        if (others)
                return cli_refuse("--clone, --clone-by-name and --clone-key take only -o FILE and --no-clobber");
        if (!!a->clone_id + !!a->clone_name + !!a->clone_key != 1)
                return cli_refuse("--clone, --clone-by-name and --clone-key are mutually exclusive");
        if (a->clone_key && check_key("--clone-key", a->clone_key) < 0)
                return -EINVAL;
        return 1;
}

/* The combinations perfetto refuses, refused with its reasons; then our own. */
static int check_combinations(Args *a) {
        int r = cli_check_rotation(a);

        if (r < 0)
                return r;
        if ((r = cli_check_profile(a)) < 0 || (r = cli_check_track_event(a)) < 0)
                return r;
        if (a->mode == MODE_QUERY || a->mode == MODE_LIST_EVENTS || a->mode == MODE_STOP_ALL ||
            a->mode == MODE_STOP_SESSION || a->mode == MODE_TRIGGER) {
                static const char *const names[] = {
                        [MODE_QUERY] = "--query", [MODE_LIST_EVENTS] = "--list-events",
                        [MODE_STOP_ALL] = "--stop-all", [MODE_STOP_SESSION] = "--stop-session",
                        [MODE_TRIGGER] = "--trigger",
                };
                r = check_standalone(a, names[a->mode]);
                if (r < 0)
                        return r;
        }
        if (a->long_output && a->mode != MODE_QUERY)
                return cli_refuse("--long is supported only with --query");
        if (a->json && a->mode != MODE_QUERY && a->mode != MODE_LIST_EVENTS)
                return cli_refuse("--json is supported only with --query and --list-events");
        if (a->query_raw && (a->json || a->long_output))
                return cli_refuse("--query-raw cannot be combined with --json or --long");
        if (a->attributes && (a->mode != MODE_RECORD || a->attach_key || a->is_detached_key))
                return cli_refuse("--add-attribute is supported only when recording");
        if (a->notify_fd >= 0 && (a->mode != MODE_RECORD || a->attach_key || a->is_detached_key))
                return cli_refuse("--notify-fd is supported only when recording");
        if (a->mode == MODE_CLONE)
                return check_clone(a);
        if (a->mode != MODE_RECORD && a->mode != MODE_ATTACH && a->mode != MODE_IS_DETACHED)
                return 1;

        if (a->detach_key && (a->attach_key || a->is_detached_key))
                return cli_refuse("--attach and --detach are mutually exclusive");
        if (a->detach_key && a->background)
                return cli_refuse("--detach and --background are mutually exclusive");
        if (a->stop && !a->attach_key)
                return cli_refuse("--stop is supported only in combination with --attach");
        if ((r = check_key("--detach", a->detach_key)) < 0 || (r = check_key("--attach", a->attach_key)) < 0 ||
            (r = check_key("--is_detached", a->is_detached_key)) < 0)
                return r;
        if (a->attach_key || a->is_detached_key) {
                r = check_attach(a);
                return r < 0 ? r : 1;
        }
        r = check_record(a);
        return r < 0 ? r : 1;
}

static int set_mode(Args *a, Mode mode) {
        if (a->mode != MODE_RECORD && a->mode != mode)
                return cli_refuse("--query, --list-events, --stop-all, --stop-session and --trigger are mutually exclusive");
        a->mode = mode;
        return 0;
}

static int parse_time(Args *a, const char *arg) {
        if (cli_parse_duration_ms(arg, &a->duration_ms) < 0)
                return cli_refuse("--time argument is invalid: '%s' (try 10s, 500ms, 5m, 1h, or 0 for no limit)", arg);
        a->has_time = true;
        return 0;
}

static int parse_buffer(Args *a, const char *arg) {
        uint64_t bytes;

        if (cli_parse_size_bytes(arg, &bytes) < 0 || (bytes + 1023) / 1024 > UINT32_MAX)
                return cli_refuse("--buffer argument is invalid: '%s' (try 32mb, 4096kb, 1gb)", arg);
        a->buffer_kb = (bytes + 1023) / 1024;
        a->has_buffer = true;
        return 0;
}

static int parse_size(Args *a, const char *arg) {
        if (cli_parse_size_bytes(arg, &a->max_file_size_bytes) < 0)
                return cli_refuse("--size argument is invalid: '%s' (try 100mb, 2gb)", arg);
        a->has_size = true;
        return 0;
}

enum {
        ARG_TXT = 0x100, ARG_NO_CLOBBER, ARG_VERSION, ARG_DETACH, ARG_ATTACH, ARG_STOP, ARG_IS_DETACHED,
        ARG_QUERY, ARG_QUERY_RAW, ARG_LONG, ARG_JSON, ARG_LIST_EVENTS, ARG_STOP_ALL, ARG_STOP_SESSION,
        ARG_NO_ASK_PASSWORD, ARG_NOTIFY_FD, ARG_ANDROID_ONLY, ARG_TXT_LOSSY, ARG_ADD_ATTRIBUTE,
        ARG_ROTATE,
        ARG_TRIGGER,
        ARG_CLONE, ARG_CLONE_BY_NAME, ARG_CLONE_KEY,
        ARG_PROFILE, ARG_PID, ARG_CMDLINE,
        ARG_TRACK_EVENT,
};

static const struct option options[] = {
        { "help",            no_argument,       NULL, 'h' },
        { "config",          required_argument, NULL, 'c' },
        { "out",             required_argument, NULL, 'o' },
        { "background",      no_argument,       NULL, 'd' },
        { "background-wait", no_argument,       NULL, 'D' },
        { "time",            required_argument, NULL, 't' },
        { "buffer",          required_argument, NULL, 'b' },
        { "size",            required_argument, NULL, 's' },
        { "app",             required_argument, NULL, 'a' },
        { "txt",             no_argument,       NULL, ARG_TXT },
        { "no-clobber",      no_argument,       NULL, ARG_NO_CLOBBER },
        { "detach",          required_argument, NULL, ARG_DETACH },
        { "attach",          required_argument, NULL, ARG_ATTACH },
        { "is_detached",     required_argument, NULL, ARG_IS_DETACHED },
        { "stop",            no_argument,       NULL, ARG_STOP },
        { "query",           no_argument,       NULL, ARG_QUERY },
        { "query-raw",       no_argument,       NULL, ARG_QUERY_RAW },
        { "long",            no_argument,       NULL, ARG_LONG },
        { "json",            no_argument,       NULL, ARG_JSON },
        { "list-events",     optional_argument, NULL, ARG_LIST_EVENTS },
        { "stop-all",        no_argument,       NULL, ARG_STOP_ALL },
        { "stop-session",    required_argument, NULL, ARG_STOP_SESSION },
        { "no-ask-password", no_argument,       NULL, ARG_NO_ASK_PASSWORD },
        { "version",         no_argument,       NULL, ARG_VERSION },
        { "notify-fd",       required_argument, NULL, ARG_NOTIFY_FD },
        { "add-attribute",   required_argument, NULL, ARG_ADD_ATTRIBUTE },
        /* perfetto's Android-only options: refused with one line, EXIT_NOT_SUPPORTED. */
        { "upload",          no_argument,       NULL, ARG_ANDROID_ONLY },
        { "dropbox",         required_argument, NULL, ARG_ANDROID_ONLY },
        { "save-for-bugreport", no_argument,    NULL, ARG_ANDROID_ONLY },
        { "save-all-for-bugreport", no_argument, NULL, ARG_ANDROID_ONLY },
        { "alert-id",        required_argument, NULL, ARG_ANDROID_ONLY },
        { "config-id",       required_argument, NULL, ARG_ANDROID_ONLY },
        { "config-uid",      required_argument, NULL, ARG_ANDROID_ONLY },
        { "subscription-id", required_argument, NULL, ARG_ANDROID_ONLY },
        { "no-guardrails",   no_argument,       NULL, ARG_ANDROID_ONLY },
        { "reset-guardrails", no_argument,      NULL, ARG_ANDROID_ONLY },
        /* A bugreport is Android's; the same one line and status. */
        { "clone-for-bugreport", no_argument,   NULL, ARG_ANDROID_ONLY },
        { "txt-lossy",       no_argument,       NULL, ARG_TXT_LOSSY },
        /* Rotation (cli-rotate.c), told apart by their names. */
        { "rotate-every",    required_argument, NULL, ARG_ROTATE },
        { "rotate-size",     required_argument, NULL, ARG_ROTATE },
        { "keep",            required_argument, NULL, ARG_ROTATE },
        { "trigger",         required_argument, NULL, ARG_TRIGGER },
        /* Snapshots of a running session (cli-clone.c). */
        { "clone",           required_argument, NULL, ARG_CLONE },
        { "clone-by-name",   required_argument, NULL, ARG_CLONE_BY_NAME },
        { "clone-key",       required_argument, NULL, ARG_CLONE_KEY },
        { "profile",         optional_argument, NULL, ARG_PROFILE },
        { "pid",             required_argument, NULL, ARG_PID },
        { "cmdline",         required_argument, NULL, ARG_CMDLINE },
        { "track-event",     required_argument, NULL, ARG_TRACK_EVENT },
        {}
};

/* The options that only switch something on (or off): true if @c is one. */
static bool parse_flag_option(Args *a, int c) {
        switch (c) {
        case 'd':
                a->background = true;
                return true;
        case 'D':
                a->background = a->background_wait = true;
                return true;
        case ARG_TXT:
                a->txt = true;
                return true;
        case ARG_TXT_LOSSY:
                a->txt = a->txt_lossy = true;
                return true;
        case ARG_NO_CLOBBER:
                a->no_clobber = true;
                return true;
        case ARG_STOP:
                a->stop = true;
                return true;
        case ARG_LONG:
                a->long_output = true;
                return true;
        case ARG_JSON:
                a->json = true;
                return true;
        case ARG_NO_ASK_PASSWORD:
                a->ask_password = false;
                return true;
        default:
                return false;
        }
}

static const char *current_option;

/* --trigger=NAME[,NAME] (cli-trigger.c), a verb of its own; and the
 * options getopt did not know. */
static int parse_other_option(Args *a, int c, const char *arg) {
        if (c == ARG_TRIGGER)
                return cli_parse_triggers(a, arg) ?: set_mode(a, MODE_TRIGGER) ?: 1;
        fprintf(stderr, "Try '%s --help' for more information.\n", program_invocation_short_name);
        return -EINVAL;
}

/* --clone, --clone-by-name, --clone-key: which session to snapshot. */
static int parse_clone_option(Args *a, int c, const char *arg) {
        if (c == ARG_CLONE)
                a->clone_id = arg;
        else if (c == ARG_CLONE_BY_NAME)
                a->clone_name = arg;
        else
                a->clone_key = arg;
        return set_mode(a, MODE_CLONE) ?: 1;
}

/* The light config's data sources beyond ftrace: --profile and its scope, --track-event. */
static int parse_source_option(Args *a, int c, const char *arg) {
        int r = c == ARG_PROFILE ? cli_parse_profile(a, arg) :
                c == ARG_PID     ? cli_parse_profile_pid(a, arg) :
                c == ARG_CMDLINE ? cli_parse_profile_cmdline(a, arg) :
                                   cli_parse_track_event(a, arg);
        return r ?: 1;
}

/* Returns 1 to go on, 0 when the option ends parsing successfully, < 0 on error. */
static int parse_option(Args *a, int c, const char *arg) {
        if (parse_flag_option(a, c))
                return 1;
        if (c == ARG_PROFILE || c == ARG_PID || c == ARG_CMDLINE || c == ARG_TRACK_EVENT)
                return parse_source_option(a, c, arg);
        switch (c) {
        case 'h':
                a->mode = MODE_HELP;
                return 0;
        case ARG_VERSION:
                a->mode = MODE_VERSION;
                return 0;
        case 'c':
                a->config_path = arg;
                return 1;
        case 'o':
                a->output = arg;
                return 1;
        case 't':
                return parse_time(a, arg) ?: 1;
        case 'b':
                return parse_buffer(a, arg) ?: 1;
        case 's':
                return parse_size(a, arg) ?: 1;
        case 'a':
                return cli_refuse_android_only("app");
        case ARG_ANDROID_ONLY:
                return cli_refuse_android_only(strempty(current_option));
        case ARG_NOTIFY_FD:
                return cli_parse_notify_fd(a, arg) ?: 1;
        case ARG_ADD_ATTRIBUTE:
                return strv_extend(&a->attributes, arg) < 0 ? -ENOMEM : 1;
        case ARG_DETACH:
                a->detach_key = arg;
                return 1;
        case ARG_ATTACH:
                a->attach_key = arg;
                return 1;
        case ARG_IS_DETACHED:
                a->is_detached_key = arg;
                return 1;
        case ARG_QUERY:
                return set_mode(a, MODE_QUERY) ?: 1;
        case ARG_QUERY_RAW:
                a->query_raw = true;
                return set_mode(a, MODE_QUERY) ?: 1;
        case ARG_LIST_EVENTS:
                a->glob = arg;
                return set_mode(a, MODE_LIST_EVENTS) ?: 1;
        case ARG_STOP_ALL:
                return set_mode(a, MODE_STOP_ALL) ?: 1;
        case ARG_STOP_SESSION:
                a->stop_session = arg;
                return set_mode(a, MODE_STOP_SESSION) ?: 1;
        case ARG_CLONE:
        case ARG_CLONE_BY_NAME:
        case ARG_CLONE_KEY:
                return parse_clone_option(a, c, arg);
        default:
                return parse_other_option(a, c, arg);
        }
}

/* --attach and --is_detached select their mode unless a standalone verb was given,
 * which then refuses them (check_standalone()). */
static void pick_mode(Args *a) {
        if (a->mode != MODE_RECORD)
                return;
        if (a->attach_key)
                a->mode = MODE_ATTACH;
        else if (a->is_detached_key)
                a->mode = MODE_IS_DETACHED;
}

int cli_parse_argv(int argc, char *argv[], Args *a) {
        int c, r, index = -1;

        a->ask_password = true;
        a->notify_fd = -1;
        if (argc <= 1) {
                /* perfetto: usage and exit status 1. */
                cli_help(stderr);
                return -EINVAL;
        }
        opterr = 1;
        while ((c = getopt_long(argc, argv, "hc:o:dDt:b:s:a:", options, &index)) >= 0) {
                /* The Android-only options share one case: it names the one given. */
                current_option = index >= 0 ? options[index].name : NULL;
                index = -1;
                r = c == ARG_ROTATE ? cli_parse_rotate_option(a, current_option, optarg) ?: 1 : parse_option(a, c, optarg);
                if (r <= 0)
                        return r;
        }
        pick_mode(a);

        for (int i = optind; i < argc; i++) {
                /* --list-events takes its glob as a word, too. */
                if (a->mode == MODE_LIST_EVENTS && !a->glob && i == argc - 1) {
                        a->glob = argv[i];
                        break;
                }
                if (strv_extend(&a->events, argv[i]) < 0)
                        return -ENOMEM;
        }
        if (a->mode == MODE_LIST_EVENTS && a->events)
                return cli_refuse("--list-events takes one pattern, e.g. --list-events 'sched/*'");
        return check_combinations(a);
}
