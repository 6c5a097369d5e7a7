/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * perfetto_cmd's options around TraceConfig's own fields: --notify-fd, the
 * cmd_trace_start_delay it applies itself, the lines --query adds
 * per session, and the Android-only options it refuses with one line.
 */
#include <fcntl.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "strv.h"

int cli_refuse_android_only(const char *option) {
        static const struct { const char *prefix, *why; } reasons[] = {
                { "clone-for-bugreport", "saves a session into an Android bugreport" },
                { "upload",   "uploads the trace through Android's incidentd or framework" },
                { "dropbox",  "uploads the trace through Android's incidentd or framework" },
                { "save",     "saves a session into an Android bugreport" },
                { "alert-id", "is statsd metadata, set by Android's statsd" },
                { "config-",  "is statsd metadata, set by Android's statsd" },
                { "subscription-id", "is statsd metadata, set by Android's statsd" },
                { "no-guard", "concerns Android's upload guardrails; tracebus's limits are tracebusd.conf's" },
                { "reset-guard", "concerns Android's upload guardrails; tracebus's limits are tracebusd.conf's" },
                { "app",      "names an Android app for atrace (for apps built with the Perfetto SDK: "
                              "--track-event CATEGORY)" },
        };
        const char *why = "is an Android option";

        for (size_t i = 0; i < ELEMENTSOF(reasons); i++)
                if (strncmp(option, reasons[i].prefix, strlen(reasons[i].prefix)) == 0) {
                        why = reasons[i].why;
                        break;
                }
        cli_log("--%s %s: not supported off Android", option, why);
        return -EOPNOTSUPP;
}

int cli_parse_notify_fd(Args *a, const char *arg) {
        char *end = NULL;
        long fd;

        errno = 0;
        fd = strtol(arg, &end, 10);
        if (errno != 0 || !end || *end || end == arg || fd < 0 || fd > INT32_MAX)
                return cli_refuse("--notify-fd argument is invalid: '%s' (a file descriptor number)", arg);
        /* Written once recording started: a descriptor that is not open would be found
         * out only then, after the session began. */
        if (fd <= STDERR_FILENO || fcntl((int) fd, F_GETFD) < 0)
                return cli_refuse("--notify-fd %ld is not an open file descriptor above 2", fd);
        a->notify_fd = (int) fd;
        return 0;
}

void cli_notify(const Args *a, bool started) {
        /* perfetto's BgProcessStatus: 0 all started, 1 an error (2, a timeout, never
         * happens here: Start returns once the session records). */
        uint8_t status = started ? 0 : 1;

        if (a->notify_fd < 0)
                return;
        if (write(a->notify_fd, &status, 1) != 1)
                cli_log("cannot write into --notify-fd %d: %m", a->notify_fd);
        (void) close(a->notify_fd);
}

int cli_start_delay(const Tracebus__TraceConfig *tc) {
        const Tracebus__TraceConfig__CmdTraceStartDelay *d = tc ? tc->cmd_trace_start_delay : NULL;
        uint32_t min, max, pick = 0, span;
        struct timespec ts;

        if (!d)
                return 0;
        min = d->min_delay_ms;
        max = d->has_max_delay_ms ? d->max_delay_ms : min;
        if (max < min)
                return cli_refuse("cmd_trace_start_delay: max_delay_ms %u is below min_delay_ms %u", max, min);
        span = max - min;
        if (span > 0 && getrandom(&pick, sizeof(pick), 0) != sizeof(pick))
                pick = (uint32_t) getpid();
        pick = min + (span > 0 ? pick % (span + 1) : 0);
        ts.tv_sec = pick / 1000;
        ts.tv_nsec = (long) (pick % 1000) * 1000000L;
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
        return 0;
}

void cli_print_session_extras(const SessionInfo *i) {
        if (!isempty_str(i->unique_session_name))
                printf("    name:    %s\n", i->unique_session_name);
        /* The data sources the service runs; linux.ftrace's events are listed by --long. */
        fputs("    sources:", stdout);
        STRV_FOREACH(d, i->data_sources) {
                printf("%s %s", d == i->data_sources ? "" : ",", *d);
                if (strcmp(*d, "linux.ftrace") == 0)
                        printf(" (%zu events)", strv_length(i->events));
        }
        fputs(i->data_sources ? "\n" : " none\n", stdout);
        STRV_FOREACH(w, i->warnings)
                printf("    warning: %s\n", *w);
}

void cli_print_session_extras_json(const SessionInfo *i) {
        fputs(", \"unique_session_name\": ", stdout);
        if (isempty_str(i->unique_session_name))
                fputs("null", stdout);
        else
                cli_json_string(stdout, i->unique_session_name);
        fputs(", \"data_sources\": [", stdout);
        STRV_FOREACH(d, i->data_sources) {
                if (d != i->data_sources)
                        fputs(", ", stdout);
                cli_json_string(stdout, *d);
        }
        fputs("], \"warnings\": [", stdout);
        STRV_FOREACH(w, i->warnings) {
                if (w != i->warnings)
                        fputs(", ", stdout);
                cli_json_string(stdout, *w);
        }
        fputc(']', stdout);
}

static int add_attribute(Tracebus__TraceAttributes *ta, const char *arg) {
        const char *eq = strchr(arg, '=');
        Tracebus__TraceAttributes__Attribute *at, **n;

        if (eq == arg || !*arg)
                return cli_refuse("--add-attribute '%s': the key is empty (KEY or KEY=VALUE)", arg);
        n = realloc(ta->attribute, (ta->n_attribute + 1) * sizeof(*n));
        if (!n)
                return -ENOMEM;
        ta->attribute = n;
        at = malloc(sizeof(*at));
        if (!at)
                return -ENOMEM;
        tracebus__trace_attributes__attribute__init(at);
        at->key = eq ? strndup(arg, (size_t) (eq - arg)) : strdup(arg);
        at->string_value = strdup(eq ? eq + 1 : "");
        at->value_case = TRACEBUS__TRACE_ATTRIBUTES__ATTRIBUTE__VALUE_STRING_VALUE;
        ta->attribute[ta->n_attribute++] = at;
        /* Owned by the message from here: protobuf_c_message_free_unpacked() frees them. */
        return at->key && at->string_value ? 0 : -ENOMEM;
}

int cli_apply_attributes(const Args *a, CliConfig *c) {
        Tracebus__TraceConfig *tc = c->parsed;
        size_t len;
        int r;

        if (!a->attributes)
                return 0;
        if (!tc->trace_attributes) {
                tc->trace_attributes = malloc(sizeof(*tc->trace_attributes));
                if (!tc->trace_attributes)
                        return -ENOMEM;
                tracebus__trace_attributes__init(tc->trace_attributes);
        }
        STRV_FOREACH(s, a->attributes) {
                r = add_attribute(tc->trace_attributes, *s);
                if (r < 0)
                        return r;
        }
        /* The text format cannot take a second trace_attributes: the config, checked here
         * already, goes as a binary one. */
        len = tracebus__trace_config__get_packed_size(tc);
        free(c->binary);
        c->binary = malloc(MAX(len, 1u));
        if (!c->binary)
                return -ENOMEM;
        c->binary_size = tracebus__trace_config__pack(tc, c->binary);
        c->text = mfree(c->text);
        return 0;
}
