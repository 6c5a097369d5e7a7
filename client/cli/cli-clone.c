/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * --clone=ID, --clone-by-name=NAME, --clone-key=KEY: a snapshot of a
 * running session, which goes on recording, written into -o FILE (opened here, as the
 * caller) or, without -o, into a new file of the service's trace directory.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bus-dict.h"
#include "cli.h"
#include "fd-util.h"
#include "strv.h"

/* --clone-by-name: the caller's live session whose config has unique_session_name NAME
 * (one per user at a time, the service sees to that). */
static int find_by_name(sd_bus *bus, const char *name, char **ret) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_strv_free_ char **paths = NULL;
        int r;

        r = cli_list_sessions(bus, &paths, &error);
        if (r < 0) {
                cli_print_bus_error("cannot list the tracing sessions", &error, r, NULL);
                return r;
        }
        STRV_FOREACH(p, paths) {
                _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
                _cleanup_(session_info_done) SessionInfo i = {};
                bool match;

                if (session_info_get(bus, *p, &i, &e) < 0)
                        continue;
                match = i.owner_uid == geteuid() && strcmp(strempty(i.unique_session_name), name) == 0 &&
                        strcmp(strempty(i.state), "recording") == 0;
                if (match) {
                        *ret = strdup(*p);
                        return *ret ? 0 : -ENOMEM;
                }
        }
        cli_log("No session of yours is recording under the unique_session_name '%s' (see --query).", name);
        return -ENOENT;
}

static int new_clone_call(sd_bus *bus, const Args *a, sd_bus_message **ret) {
        _cleanup_free_ char *path = NULL;
        int r;

        if (a->clone_key) {
                r = sd_bus_message_new_method_call(bus, ret, TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_INTERFACE,
                                                   "CloneDetached");
                return r < 0 ? r : sd_bus_message_append(*ret, "s", a->clone_key);
        }
        if (a->clone_name) {
                r = find_by_name(bus, a->clone_name, &path);
                if (r < 0)
                        return r;
        } else if (!(path = cli_session_path(a->clone_id))) {
                cli_log("--clone: '%s' is not a session number or path (see --query).", a->clone_id);
                return -ENOENT;
        }
        /* The Manager's: another user's session object is not ours to see. */
        r = sd_bus_message_new_method_call(bus, ret, TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_INTERFACE, "Clone");
        return r < 0 ? r : sd_bus_message_append(*ret, "o", path);
}

static int append_options(sd_bus_message *m, int fd) {
        if (fd < 0)
                return sd_bus_message_append(m, "a{sv}", 0);
        return sd_bus_message_append(m, "a{sv}", 1, "Output", "h", fd);
}

typedef struct CloneResult {
        uint64_t bytes, events, copy_usec;
        const char *path;          /* in the reply */
        char **warnings;
} CloneResult;

static int read_result_entry(sd_bus_message *m, const char *key, void *userdata) {
        CloneResult *res = userdata;
        int r;

        if (!strcmp(key, "Bytes"))
                return sd_bus_message_read(m, "v", "t", &res->bytes);
        if (!strcmp(key, "Events"))
                return sd_bus_message_read(m, "v", "t", &res->events);
        if (!strcmp(key, "CopyUsec"))
                return sd_bus_message_read(m, "v", "t", &res->copy_usec);
        if (!strcmp(key, "OutputPath"))
                return sd_bus_message_read(m, "v", "s", &res->path);
        if (!strcmp(key, "Warnings")) {
                r = sd_bus_message_enter_container(m, 'v', "as");
                if (r < 0)
                        return r;
                r = sd_bus_message_read_strv(m, &res->warnings);
                if (r < 0)
                        return r;
                return sd_bus_message_exit_container(m);
        }
        return sd_bus_message_skip(m, "v");
}

/* The reply: where, how much, and the warnings. */
static int print_result(sd_bus_message *reply, const Args *a) {
        _cleanup_strv_free_ char **warnings = NULL;
        CloneResult res = {};
        char size[32];
        int r;

        r = bus_message_read_dict(reply, read_result_entry, &res);
        warnings = res.warnings;
        if (r < 0)
                return r;
        STRV_FOREACH(w, warnings)
                cli_log("warning: %s", *w);
        fprintf(stderr, "Snapshot written into %s: %" PRIu64 " events, %s (copied in %" PRIu64 " ms); "
                "the session goes on recording.\n", !isempty_str(res.path) ? res.path : a->output ?: "?",
                res.events, cli_format_bytes(size, sizeof(size), res.bytes), res.copy_usec / 1000);
        return 0;
}

int run_clone(const Args *a) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_close_ int fd = -EBADF;
        int r;

        if (cli_connect(&bus) < 0)
                return EXIT_FAILURE;
        r = new_clone_call(bus, a, &m);
        if (r == -ENOENT)
                return EXIT_NO_SESSION;
        if (r < 0)
                return EXIT_FAILURE;
        fd = cli_open_output(a);
        if (fd < 0 && fd != -EBADF)
                return EXIT_FAILURE;
        r = append_options(m, fd);
        if (r < 0) {
                cli_log("cannot clone the session: cannot build the request: %s", strerror(-r));
                return EXIT_FAILURE;
        }
        r = cli_call_authorized(bus, m, CLI_STOP_TIMEOUT_USEC, &error, &reply);
        if (r < 0) {
                cli_print_bus_error("cannot clone the session", &error, r, TB_ACTION_MANAGE);
                return sd_bus_error_has_name(&error, TB_ERROR_NO_SUCH_SESSION) ? EXIT_NO_SESSION : EXIT_FAILURE;
        }
        r = print_result(reply, a);
        if (r < 0) {
                cli_log("the session was cloned, but its reply cannot be read: %s", strerror(-r));
                return EXIT_FAILURE;
        }
        return EXIT_SUCCESS;
}
