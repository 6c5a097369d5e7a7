/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The bus side of the CLI: connecting, calls that may need polkit, errors in words,
 * and reading sessions. */
#include <pwd.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "bus-dict.h"
#include "bus-errors.h"
#include "strv.h"

typedef enum AskPassword {
        ASK_YES,
        ASK_NO_TTY,        /* stdin is not a terminal */
        ASK_NO_OPTION,     /* --no-ask-password */
        ASK_NO_ROOT,       /* root needs no authorization */
} AskPassword;

static AskPassword ask_password = ASK_NO_TTY;

void cli_set_ask_password(bool ask) {
        if (!ask)
                ask_password = ASK_NO_OPTION;
        else if (geteuid() == 0)
                ask_password = ASK_NO_ROOT;
        else if (!isatty(STDIN_FILENO))
                ask_password = ASK_NO_TTY;
        else
                ask_password = ASK_YES;
}

int cli_connect(sd_bus **ret) {
        int r;

        r = sd_bus_open_system(ret);
        if (r < 0) {
                cli_log("cannot connect to the system bus: %s", strerror(-r));
                return r;
        }
        (void) sd_bus_error_add_map(tracebus_error_map);
        return 0;
}

int cli_call_authorized(sd_bus *bus, sd_bus_message *m, uint64_t usec, sd_bus_error *error,
                        sd_bus_message **ret_reply) {
        bool agent = ask_password == ASK_YES;
        int r;

        if (agent) {
                /* Like systemctl: the agent is up before the call, and the call may wait for it. */
                r = polkit_agent_open();
                if (r < 0)
                        cli_log("cannot start the authentication agent (pkttyagent), going on without: %s",
                                strerror(-r));
                (void) sd_bus_message_set_allow_interactive_authorization(m, r >= 0);
        }
        r = sd_bus_call(bus, m, usec, error, ret_reply);
        if (agent)
                polkit_agent_close();
        return r;
}

static const struct {
        const char *name;
        const char *text;
} explanations[] = {
        { SD_BUS_ERROR_ACCESS_DENIED,                     "not authorized" },
        { SD_BUS_ERROR_INTERACTIVE_AUTHORIZATION_REQUIRED, "authentication is required" },
        { SD_BUS_ERROR_SERVICE_UNKNOWN,                   "the tracebus service is not installed or could not be started" },
        { SD_BUS_ERROR_NAME_HAS_NO_OWNER,                 "the tracebus service is not running" },
        { SD_BUS_ERROR_NO_REPLY,                          "the tracebus service did not answer in time" },
        { SD_BUS_ERROR_TIMEOUT,                           "the tracebus service did not answer in time" },
        { SD_BUS_ERROR_UNKNOWN_METHOD,                    "the tracebus service does not know this request (too old?)" },
        { SD_BUS_ERROR_UNKNOWN_OBJECT,                    "there is no such tracing session" },
        { SD_BUS_ERROR_DISCONNECTED,                      "the connection to the system bus was lost" },
        { SD_BUS_ERROR_INVALID_ARGS,                      "the request was refused as invalid" },
};

/* The client's own words for the bus's errors; the service's named errors have their
 * sentences in libtracebus-bus, which the GTK app shows too. */
static const char *explain(const char *name) {
        for (size_t i = 0; name && i < ELEMENTSOF(explanations); i++)
                if (strcmp(explanations[i].name, name) == 0)
                        return explanations[i].text;
        return tracebus_error_explain(name);
}

static const char *user_name(void) {
        struct passwd *pw = getpwuid(geteuid());
        return pw ? pw->pw_name : "USER";
}

static void print_rules_example(const char *action) {
        fprintf(stderr,
                "An administrator can grant %s without authentication with a polkit rule, for example in\n"
                "/etc/polkit-1/rules.d/50-tracebus.rules:\n"
                "  polkit.addRule(function(action, subject) {\n"
                "      if (action.id == \"%s\" && subject.user == \"%s\")\n"
                "          return polkit.Result.YES;\n"
                "  });\n",
                action, action, user_name());
}

static void print_interactive_required(const char *what, const char *action) {
        const char *why = ask_password == ASK_NO_OPTION ? "--no-ask-password was given" :
                          ask_password == ASK_YES ? "no authentication agent took the request" :
                          "stdin is not a terminal";

        cli_log("%s: authentication is required for polkit action %s, but tracebus cannot ask for it (%s).",
                what, action, why);
        print_rules_example(action);
}

/* The polkit action the service's message names (a config with kprobes needs
 * org.tracebus.kprobes, not the action the call itself is under), else @fallback. */
static const char *action_named_in(const char *message, const char *fallback, char buf[static 64]) {
        const char *p = message ? strstr(message, "org.tracebus.") : NULL;
        size_t n;

        if (!p)
                return fallback;
        n = strspn(p, "abcdefghijklmnopqrstuvwxyz.");
        while (n > 0 && p[n - 1] == '.')
                n--;
        if (n == 0 || n >= 64)
                return fallback;
        memcpy(buf, p, n);
        buf[n] = 0;
        return buf;
}

void cli_print_bus_error(const char *what, const sd_bus_error *e, int r, const char *action) {
        const char *name = e && sd_bus_error_is_set(e) ? e->name : NULL;
        const char *message = name && !isempty_str(e->message) ? e->message : NULL;
        const char *text = explain(name);
        char named[64];

        action = action ? action_named_in(message, action, named) : NULL;

        if (name && action && strcmp(name, SD_BUS_ERROR_INTERACTIVE_AUTHORIZATION_REQUIRED) == 0)
                return print_interactive_required(what, action);
        if (name && action && strcmp(name, SD_BUS_ERROR_ACCESS_DENIED) == 0) {
                cli_log("%s: not authorized: polkit refuses action %s to user %s; an administrator can allow it "
                        "with a polkit rule (see AUTHORIZATION in tracebus(1)).", what, action, user_name());
                return;
        }
        /* Our own errors and InvalidArgs carry sentences written for people. */
        if (message && (!text || strncmp(name, TB_ERROR_PREFIX, strlen(TB_ERROR_PREFIX)) == 0 ||
                        strcmp(name, SD_BUS_ERROR_INVALID_ARGS) == 0))
                cli_log("%s: %s", what, message);
        else if (text && message)
                cli_log("%s: %s (%s)", what, text, message);
        else if (text)
                cli_log("%s: %s.", what, text);
        else if (name)
                cli_log("%s: %s", what, name);
        else
                cli_log("%s: %s", what, strerror(r < 0 ? -r : EIO));
}

void session_info_done(SessionInfo *i) {
        i->path = mfree(i->path);
        i->state = mfree(i->state);
        i->output_path = mfree(i->output_path);
        i->events = strv_free(i->events);
        i->data_sources = strv_free(i->data_sources);
        i->unique_session_name = mfree(i->unique_session_name);
        i->warnings = strv_free(i->warnings);
}

static int read_string(sd_bus_message *m, char **field) {
        const char *s;
        char *copy;
        int r;

        r = sd_bus_message_read(m, "v", "s", &s);
        if (r < 0)
                return r;
        copy = strdup(s);
        if (!copy)
                return -ENOMEM;
        free(*field);
        *field = copy;
        return 0;
}

static int read_strv(sd_bus_message *m, char ***field) {
        int r;

        r = sd_bus_message_enter_container(m, 'v', "as");
        if (r < 0)
                return r;
        *field = strv_free(*field);
        r = sd_bus_message_read_strv(m, field);
        return r < 0 ? r : sd_bus_message_exit_container(m);
}

static int read_property(sd_bus_message *m, const char *name, void *userdata) {
        SessionInfo *i = userdata;
        uint32_t u;
        int b, r;

        if (strcmp(name, "State") == 0)
                return read_string(m, &i->state);
        if (strcmp(name, "OutputPath") == 0)
                return read_string(m, &i->output_path);
        if (strcmp(name, "OwnerUid") == 0) {
                r = sd_bus_message_read(m, "v", "u", &u);
                i->owner_uid = (uid_t) u;
                return r;
        }
        if (strcmp(name, "Detached") == 0) {
                r = sd_bus_message_read(m, "v", "b", &b);
                i->detached = b;
                return r;
        }
        if (strcmp(name, "Events") == 0)
                return read_strv(m, &i->events);
        if (strcmp(name, "DataSources") == 0)
                return read_strv(m, &i->data_sources);
        if (strcmp(name, "Warnings") == 0)
                return read_strv(m, &i->warnings);
        if (strcmp(name, "DurationMs") == 0)
                return sd_bus_message_read(m, "v", "u", &i->duration_ms);
        if (strcmp(name, "StartedAt") == 0)
                return sd_bus_message_read(m, "v", "t", &i->started_at_usec);
        if (strcmp(name, "BytesWritten") == 0)
                return sd_bus_message_read(m, "v", "t", &i->bytes_written);
        if (strcmp(name, "EventsRecorded") == 0)
                return sd_bus_message_read(m, "v", "t", &i->events_recorded);
        if (strcmp(name, "EventsLost") == 0)
                return sd_bus_message_read(m, "v", "t", &i->events_lost);
        if (strcmp(name, "UniqueSessionName") == 0)
                return read_string(m, &i->unique_session_name);
        return sd_bus_message_skip(m, "v");
}

int session_info_update(SessionInfo *i, sd_bus_message *m) {
        return bus_message_read_dict(m, read_property, i);
}

static uint64_t session_id_from_path(const char *path) {
        if (strncmp(path, SESSION_PATH_PREFIX, strlen(SESSION_PATH_PREFIX)) != 0)
                return 0;
        return strtoull(path + strlen(SESSION_PATH_PREFIX), NULL, 10);
}

int session_info_get(sd_bus *bus, const char *path, SessionInfo *ret, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(session_info_done) SessionInfo i = {};
        int r;

        r = sd_bus_call_method(bus, TB_BUS_NAME, path, "org.freedesktop.DBus.Properties", "GetAll", error, &reply,
                               "s", TB_SESSION_INTERFACE);
        if (r < 0)
                return r;
        r = session_info_update(&i, reply);
        if (r < 0)
                return r;
        i.path = strdup(path);
        if (!i.path)
                return -ENOMEM;
        i.id = session_id_from_path(path);
        *ret = i;
        i = (SessionInfo) {};
        return 0;
}

int cli_list_sessions(sd_bus *bus, char ***ret, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        char **l = NULL;
        int r;

        r = sd_bus_message_new_method_call(bus, &m, TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_INTERFACE, "ListSessions");
        if (r < 0)
                return r;
        r = cli_call_authorized(bus, m, CLI_CALL_TIMEOUT_USEC, error, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_read_strv(reply, &l);
        if (r < 0)
                return r;
        *ret = l;
        return 0;
}

void stop_stats_done(StopStats *s) {
        s->reason = mfree(s->reason);
        s->output_path = mfree(s->output_path);
        s->warnings = strv_free(s->warnings);
}

static int stats_entry(sd_bus_message *m, const char *key, void *userdata) {
        StopStats *s = userdata;

        if (strcmp(key, "Events") == 0)
                return sd_bus_message_read(m, "v", "t", &s->events);
        if (strcmp(key, "Bytes") == 0)
                return sd_bus_message_read(m, "v", "t", &s->bytes);
        if (strcmp(key, "EventsLost") == 0)
                return sd_bus_message_read(m, "v", "t", &s->lost);
        if (strcmp(key, "Reason") == 0)
                return read_string(m, &s->reason);
        if (strcmp(key, "OutputPath") == 0)
                return read_string(m, &s->output_path);
        if (strcmp(key, "Warnings") == 0)
                return read_strv(m, &s->warnings);
        return sd_bus_message_skip(m, "v");
}

int stop_stats_read(sd_bus_message *m, StopStats *ret) {
        _cleanup_(stop_stats_done) StopStats s = {};
        int r;

        r = bus_message_read_dict(m, stats_entry, &s);
        if (r < 0)
                return r;
        *ret = s;
        s = (StopStats) {};
        return 0;
}
