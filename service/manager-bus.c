/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>

#include "errors.h"
#include "log.h"
#include "manager-bus.h"
#include "polkit.h"
#include "session-bus.h"
#include "strv.h"
#include "trace-dir.h"

#define ACTION_RECORD "org.tracebus.record"

/* A Start call between validation and polkit's answer. */
struct StartRequest {
        Manager *manager;
        StartRequest *next, *prev;
        sd_bus_message *message;
        uid_t uid;
        SessionConfig config;
        int output_fd;              /* -EBADF: the service creates the file */
        PolkitQuery *query;
};

static StartRequest *start_request_free(StartRequest *req) {
        if (!req)
                return NULL;
        if (req->manager) {
                if (req->prev)
                        req->prev->next = req->next;
                else if (req->manager->start_requests == req)
                        req->manager->start_requests = req->next;
                if (req->next)
                        req->next->prev = req->prev;
        }
        polkit_query_free(req->query);
        sd_bus_message_unref(req->message);
        session_config_done(&req->config);
        safe_close(req->output_fd);
        return mfree(req);
}
DEFINE_TRIVIAL_CLEANUP_FUNC(StartRequest *, start_request_free);

typedef struct StartOptions {
        int output_fd;              /* borrowed from the message */
        char **events;
        uint32_t duration_ms;
        uint32_t buffer_size_kb;
        bool has_events, has_duration, has_buffer;
} StartOptions;

static void start_options_done(StartOptions *o) {
        o->events = strv_free(o->events);
}

static int read_start_options(sd_bus_message *m, StartOptions *o, sd_bus_error *error) {
        const char *key;
        int r;

        r = sd_bus_message_enter_container(m, 'a', "{sv}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
                r = sd_bus_message_read(m, "s", &key);
                if (r < 0)
                        return r;
                if (strcmp(key, "Output") == 0)
                        r = sd_bus_message_read(m, "v", "h", &o->output_fd);
                else if (strcmp(key, "Events") == 0) {
                        r = sd_bus_message_enter_container(m, 'v', "as");
                        if (r >= 0)
                                r = sd_bus_message_read_strv(m, &o->events);
                        if (r >= 0)
                                r = sd_bus_message_exit_container(m);
                        o->has_events = true;
                } else if (strcmp(key, "DurationMs") == 0) {
                        r = sd_bus_message_read(m, "v", "u", &o->duration_ms);
                        o->has_duration = true;
                } else if (strcmp(key, "BufferSizeKb") == 0) {
                        r = sd_bus_message_read(m, "v", "u", &o->buffer_size_kb);
                        o->has_buffer = true;
                } else
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                 "Unknown option '%.64s'; known: Output, Events, DurationMs, BufferSizeKb.", key);
                if (r < 0)
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                 "Option '%s' has the wrong type.", key);
                r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

/* The Output fd must be something we can write a trace into. */
static int take_output_fd(int fd, int *ret, sd_bus_error *error) {
        struct stat st;
        int flags, copy;

        flags = fcntl(fd, F_GETFL);
        if (flags < 0 || fstat(fd, &st) < 0)
                return sd_bus_error_set_errnof(error, errno, "Cannot use the Output file descriptor: %m");
        if ((flags & O_ACCMODE) != O_WRONLY && (flags & O_ACCMODE) != O_RDWR)
                return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS,
                                        "The Output file descriptor is not open for writing.");
        if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode) && !S_ISSOCK(st.st_mode))
                return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS,
                                        "The Output file descriptor must be a regular file, a pipe or a socket.");
        copy = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (copy < 0)
                return -errno;
        *ret = copy;
        return 0;
}

static int config_error(int r, const char *msg, sd_bus_error *error) {
        if (r == -ENOENT)
                return sd_bus_error_setf(error, TB_ERROR_UNKNOWN_EVENT,
                                         "This kernel has no such trace events: %s. 'tracebus --list-events' shows them.",
                                         strempty(msg));
        if (r == -EINVAL)
                return sd_bus_error_setf(error, TB_ERROR_INVALID_CONFIG, "Invalid trace config: %s",
                                         msg ?: "bad value");
        return r;
}

static int load_config(Manager *m, const char *text, const StartOptions *o, SessionConfig *ret, sd_bus_error *error) {
        _cleanup_(trace_config_freep) Tracebus__TraceConfig *tc = NULL;
        _cleanup_free_ char *msg = NULL;
        int r;

        if (!isempty_str(text) && (o->has_events || o->has_duration || o->has_buffer))
                return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS,
                                        "Pass either a config or the Events, DurationMs and BufferSizeKb options, not both.");
        if (!isempty_str(text))
                r = session_config_parse_text(text, &tc, &msg);
        else
                r = session_config_from_options(o->events, o->duration_ms, o->buffer_size_kb, &tc);
        if (r < 0)
                return config_error(r, msg, error);

        m->tracefs_root = trace_instance_tracefs_root();
        if (!m->tracefs_root)
                return sd_bus_error_set(error, TB_ERROR_TRACING_UNAVAILABLE,
                                        "tracefs is not mounted at /sys/kernel/tracing.");
        r = session_config_load(tc, m->tracefs_root, ret, &msg);
        if (r < 0)
                return config_error(r, msg, error);
        return 0;
}

static int reply_with_session(sd_bus_message *m, Session *s) {
        _cleanup_free_ char *path = session_bus_path(s);

        if (!path)
                return -ENOMEM;
        return sd_bus_reply_method_return(m, "o", path);
}

static int create_output(Manager *m, StartRequest *req, char **ret_path, sd_bus_error *error) {
        char hint[32];
        int r;

        snprintf(hint, sizeof(hint), "%" PRIu64, m->last_session_id + 1);
        r = trace_dir_create_file(m->state_dir, req->uid, hint, m->limits.trace_dir_quota_bytes,
                                  ret_path, &req->output_fd, NULL);
        if (r == -EDQUOT)
                return sd_bus_error_setf(error, TB_ERROR_QUOTA_EXCEEDED,
                                         "Your traces in %s/traces/%u use up the quota of %" PRIu64 " MiB; delete some.",
                                         m->state_dir, (unsigned) req->uid, m->limits.trace_dir_quota_bytes >> 20);
        if (r < 0)
                return sd_bus_error_set_errnof(error, r, "Failed to create a trace file in %s: %m", m->state_dir);
        return 0;
}

static int start_session(StartRequest *req, sd_bus_error *error) {
        Manager *m = req->manager;
        _cleanup_free_ char *path = NULL;
        bool per_uid;
        Session *s;
        int r;

        if (manager_check_limits(m, req->uid, &per_uid) < 0)
                return sd_bus_error_setf(error, TB_ERROR_TOO_MANY_SESSIONS,
                                         per_uid ? "You have %u tracing sessions already; stop one first."
                                                 : "The service runs its limit of %u sessions; try again later.",
                                         per_uid ? m->limits.max_sessions_per_uid : m->limits.max_sessions);

        if (req->output_fd < 0) {
                r = create_output(m, req, &path, error);
                if (r < 0)
                        return r;
        }

        r = session_new(m, req->uid, &req->config, TAKE_FD(req->output_fd), path, &s);
        if (r < 0) {
                if (path)
                        (void) unlink(path);
                return sd_bus_error_set_errnof(error, r, "Failed to start tracing: %m");
        }
        manager_add_session(m, s);

        r = session_bus_bind(s, req->message);
        if (r < 0) {
                (void) session_stop(s, SESSION_END_CLIENT_VANISHED);
                return sd_bus_error_set_errnof(error, r, "Failed to track the caller: %m");
        }
        return reply_with_session(req->message, s);
}

static void reply_error(sd_bus_message *m, int r, sd_bus_error *error) {
        if (sd_bus_error_is_set(error))
                (void) sd_bus_reply_method_error(m, error);
        else
                (void) sd_bus_reply_method_errnof(m, r, "Failed to start tracing: %m");
}

static void on_start_authorized(int result, void *userdata) {
        _cleanup_(start_request_freep) StartRequest *req = userdata;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        req->query = NULL;  /* it is done; the polkit module frees nothing after calling us */
        if (result == -EACCES) {
                log_info("UID %u is not authorized to record.", (unsigned) req->uid);
                (void) sd_bus_reply_method_errorf(req->message, SD_BUS_ERROR_ACCESS_DENIED,
                                                  "Not authorized to record kernel traces (polkit action %s).",
                                                  ACTION_RECORD);
                return;
        }
        if (result == -EBADR) {
                (void) sd_bus_reply_method_errorf(req->message, SD_BUS_ERROR_INTERACTIVE_AUTHORIZATION_REQUIRED,
                                                  "Recording needs authentication (polkit action %s), "
                                                  "but the call did not allow interactive authorization.",
                                                  ACTION_RECORD);
                return;
        }
        if (result < 0) {
                (void) sd_bus_reply_method_errnof(req->message, result, "Failed to check authorization: %m");
                return;
        }

        r = start_session(req, &error);
        if (r < 0)
                reply_error(req->message, r, &error);
}

static int method_start(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        Manager *m = ASSERT_PTR(userdata);
        _cleanup_(start_options_done) StartOptions o = { .output_fd = -EBADF };
        _cleanup_(start_request_freep) StartRequest *req = NULL;
        const char *text;
        int r;

        /* Validate everything first: nothing is created before polkit says yes. */
        r = sd_bus_message_read(message, "s", &text);
        if (r < 0)
                return r;
        r = read_start_options(message, &o, error);
        if (r < 0)
                return r;

        req = calloc(1, sizeof(*req));
        if (!req)
                return -ENOMEM;
        req->output_fd = -EBADF;
        req->message = sd_bus_message_ref(message);
        r = bus_sender_euid(message, &req->uid);
        if (r < 0)
                return r;
        if (o.output_fd >= 0) {
                r = take_output_fd(o.output_fd, &req->output_fd, error);
                if (r < 0)
                        return r;
        }
        r = load_config(m, text, &o, &req->config, error);
        if (r < 0)
                return r;

        r = polkit_check_async(message, ACTION_RECORD, on_start_authorized, req, &req->query);
        if (r < 0)
                return r;

        req->manager = m;
        req->next = m->start_requests;
        if (m->start_requests)
                m->start_requests->prev = req;
        m->start_requests = TAKE_PTR(req);
        return 1;
}

static int method_stop(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        Manager *m = ASSERT_PTR(userdata);
        const char *path;
        Session *s;
        uid_t uid;
        int r;

        r = sd_bus_message_read(message, "o", &path);
        if (r < 0)
                return r;
        r = bus_sender_euid(message, &uid);
        if (r < 0)
                return r;

        s = session_from_path(m, path);
        if (!s)
                return sd_bus_error_setf(error, TB_ERROR_NO_SUCH_SESSION, "There is no tracing session %s.", path);
        return session_bus_method_stop(s, message, error);
}

static const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD_WITH_ARGS("Start",
                                SD_BUS_ARGS("s", config, "a{sv}", options),
                                SD_BUS_RESULT("o", session),
                                method_start, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Stop",
                                SD_BUS_ARGS("o", session),
                                SD_BUS_RESULT("a{sv}", stats),
                                method_stop, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_SIGNAL_WITH_ARGS("SessionEnded",
                                SD_BUS_ARGS("o", session, "s", reason, "a{sv}", stats), 0),
        SD_BUS_VTABLE_END
};

int manager_connect_bus(Manager *m) {
        int r;

        r = sd_bus_open_system(&m->bus);
        if (r < 0)
                return log_error_errno(r, "Failed to connect to the system bus: %m");
        r = sd_bus_add_object_vtable(m->bus, NULL, TRACEBUS_OBJECT_PATH, TRACEBUS_MANAGER_INTERFACE,
                                     manager_vtable, m);
        if (r < 0)
                return log_error_errno(r, "Failed to export the manager: %m");
        r = sd_bus_add_fallback_vtable(m->bus, NULL, SESSION_PATH_PREFIX, "org.tracebus.Tracebus1.Session",
                                       session_vtable, session_object_find, m);
        if (r < 0)
                return log_error_errno(r, "Failed to export sessions: %m");
        r = sd_bus_add_node_enumerator(m->bus, NULL, SESSION_PATH_PREFIX, session_node_enumerator, m);
        if (r < 0)
                return log_error_errno(r, "Failed to add the session enumerator: %m");
        r = sd_bus_add_object_manager(m->bus, NULL, TRACEBUS_OBJECT_PATH);
        if (r < 0)
                return log_error_errno(r, "Failed to add the object manager: %m");
        r = sd_bus_error_add_map(tracebus_error_map);
        if (r < 0)
                return r;
        r = sd_bus_attach_event(m->bus, m->event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                return log_error_errno(r, "Failed to attach the bus to the event loop: %m");
        r = sd_bus_request_name(m->bus, TRACEBUS_BUS_NAME, 0);
        if (r < 0)
                return log_error_errno(r, "Failed to own %s: %m", TRACEBUS_BUS_NAME);
        return 0;
}

void manager_bus_done(Manager *m) {
        while (m->start_requests) {
                StartRequest *req = m->start_requests;

                (void) sd_bus_reply_method_errorf(req->message, SD_BUS_ERROR_NO_REPLY,
                                                  "The service is shutting down.");
                start_request_free(req);
        }
}
