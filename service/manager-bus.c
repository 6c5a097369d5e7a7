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
#define ACTION_MANAGE "org.tracebus.manage"

/* A call waiting for polkit. What happens once polkit has answered depends on the method. */
struct BusRequest {
        Manager *manager;
        BusRequest *next, *prev;
        sd_bus_message *message;
        uid_t uid;
        PolkitQuery *query;
        void (*on_result)(BusRequest *req, int result);

        /* Start */
        SessionConfig config;
        int output_fd;              /* -EBADF: the service creates the file */
        char *detach_key;           /* start detached */
        /* Stop of a session that is not the caller's */
        char *session_path;
};

static BusRequest *bus_request_free(BusRequest *req) {
        if (!req)
                return NULL;
        if (req->manager) {
                if (req->prev)
                        req->prev->next = req->next;
                else if (req->manager->requests == req)
                        req->manager->requests = req->next;
                if (req->next)
                        req->next->prev = req->prev;
        }
        polkit_query_free(req->query);
        sd_bus_message_unref(req->message);
        session_config_done(&req->config);
        safe_close(req->output_fd);
        free(req->detach_key);
        free(req->session_path);
        return mfree(req);
}
DEFINE_TRIVIAL_CLEANUP_FUNC(BusRequest *, bus_request_free);

static int bus_request_new(sd_bus_message *message, BusRequest **ret) {
        _cleanup_(bus_request_freep) BusRequest *req = NULL;
        int r;

        req = calloc(1, sizeof(*req));
        if (!req)
                return -ENOMEM;
        req->output_fd = -EBADF;
        req->message = sd_bus_message_ref(message);
        r = bus_sender_euid(message, &req->uid);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(req);
        return 0;
}

static void on_polkit_result(int result, void *userdata) {
        _cleanup_(bus_request_freep) BusRequest *req = userdata;

        req->query = polkit_query_free(req->query);
        req->on_result(req, result);
}

/* Hands the request to polkit; the manager keeps it until polkit answers. Returns 1:
 * the handler's reply comes later. */
static int bus_request_authorize(Manager *m, BusRequest **reqp, const char *action, bool interactive,
                                 void (*on_result)(BusRequest *req, int result)) {
        BusRequest *req = *reqp;
        int r;

        req->on_result = on_result;
        r = polkit_check_async(req->message, action, interactive, on_polkit_result, req, &req->query);
        if (r < 0)
                return r;
        req->manager = m;
        req->next = m->requests;
        if (m->requests)
                m->requests->prev = req;
        m->requests = TAKE_PTR(*reqp);
        return 1;
}

static void reply_polkit_refusal(BusRequest *req, int result, const char *action, const char *what) {
        if (result == -EBADR)
                (void) sd_bus_reply_method_errorf(req->message, SD_BUS_ERROR_INTERACTIVE_AUTHORIZATION_REQUIRED,
                                                  "%s needs authentication (polkit action %s), but the call "
                                                  "did not allow interactive authorization.", what, action);
        else if (result == -EACCES)
                (void) sd_bus_reply_method_errorf(req->message, SD_BUS_ERROR_ACCESS_DENIED,
                                                  "Not authorized: %s needs polkit action %s.", what, action);
        else if (result == -EHOSTDOWN)
                (void) sd_bus_reply_method_errorf(req->message, TB_ERROR_AUTHORIZATION_UNAVAILABLE,
                                                  "%s was refused: authorization could not be checked, polkit "
                                                  "(org.freedesktop.PolicyKit1) gave no answer. Try again once "
                                                  "polkitd runs.", what);
        else
                (void) sd_bus_reply_method_errnof(req->message, result, "Failed to check authorization: %m");
}

typedef struct StartOptions {
        int output_fd;              /* borrowed from the message */
        char **events;
        uint32_t duration_ms;
        uint32_t buffer_size_kb;
        const char *detach_key;     /* borrowed from the message */
        const void *binary_config;  /* a binary TraceConfig, borrowed from the message */
        size_t binary_config_size;
        bool has_events, has_duration, has_buffer, has_output, has_binary, has_key;
} StartOptions;

static void start_options_done(StartOptions *o) {
        o->events = strv_free(o->events);
}

/* A copy of @s in printable ASCII (other bytes as '?'), for error messages that echo
 * what a caller sent: an error text must be valid UTF-8, or sd-bus cannot send the
 * reply at all and the caller waits for its timeout. */
static char *printable_copy(const char *s) {
        char *copy = strdup(strempty(s));

        if (!copy)
                return NULL;
        for (char *p = copy; *p; p++)
                if (*p < 0x20 || *p > 0x7e)
                        *p = '?';
        return copy;
}

/* Each option at most once: a second Events would silently replace the first. */
static int check_option_once(StartOptions *o, const char *key, sd_bus_error *error) {
        static const char *const names[] = { "Output", "Events", "DurationMs", "BinaryConfig", "DetachKey", "BufferSizeKb" };
        bool *seen[] = { &o->has_output, &o->has_events, &o->has_duration, &o->has_binary, &o->has_key, &o->has_buffer };

        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                if (strcmp(key, names[i]) != 0)
                        continue;
                if (*seen[i])
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "Option '%s' is given twice.", key);
                *seen[i] = true;
                return 0;
        }
        return 0;
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
                r = check_option_once(o, key, error);
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
                } else if (strcmp(key, "BinaryConfig") == 0) {
                        r = sd_bus_message_enter_container(m, 'v', "ay");
                        if (r >= 0)
                                r = sd_bus_message_read_array(m, 'y', &o->binary_config, &o->binary_config_size);
                        if (r >= 0)
                                r = sd_bus_message_exit_container(m);
                } else if (strcmp(key, "DetachKey") == 0) {
                        r = sd_bus_message_read(m, "v", "s", &o->detach_key);
                } else if (strcmp(key, "BufferSizeKb") == 0) {
                        r = sd_bus_message_read(m, "v", "u", &o->buffer_size_kb);
                        o->has_buffer = true;
                } else {
                        _cleanup_free_ char *shown = printable_copy(key);
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                 "Unknown option '%.64s'; known: Output, DetachKey, BinaryConfig, Events, DurationMs, BufferSizeKb.",
                                                 strempty(shown));
                }
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

static int config_error(int r, const char *raw_msg, sd_bus_error *error) {
        _cleanup_free_ char *msg = raw_msg ? printable_copy(raw_msg) : NULL;

        if (raw_msg && !msg)
                return -ENOMEM;
        if (r == -ENOENT)
                return sd_bus_error_setf(error, TB_ERROR_UNKNOWN_EVENT,
                                         "This kernel has no such trace events: %s (the kernel lists its events in available_events under tracefs).",
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

        int ways = !isempty_str(text) + !!o->binary_config + (o->has_events || o->has_duration || o->has_buffer);

        if (ways > 1)
                return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS,
                                        "Pass one of a text config, the BinaryConfig option, or the Events, "
                                        "DurationMs and BufferSizeKb options.");
        if (o->has_buffer && o->buffer_size_kb == 0)
                return sd_bus_error_set(error, TB_ERROR_INVALID_CONFIG,
                                        "Invalid trace config: BufferSizeKb must be at least 1 (leave it out for the default).");
        if (!isempty_str(text))
                r = session_config_parse_text(text, &tc, &msg);
        else if (o->binary_config)
                r = session_config_parse_binary(o->binary_config, o->binary_config_size, &tc, &msg);
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
        /* session_config_load() holds the hard limit; tracebusd.conf may set a lower one,
         * which also applies to the default size: reduce rather than refuse. */
        if (ret->buffer_size_kb > m->limits.max_buffer_size_kb) {
                log_info("Reducing a kernel buffer of %u KiB per CPU to the configured MaxBufferSizeKB=%u.",
                         ret->buffer_size_kb, m->limits.max_buffer_size_kb);
                ret->buffer_size_kb = m->limits.max_buffer_size_kb;
        }
        return 0;
}

static int reply_with_session(sd_bus_message *m, Session *s) {
        _cleanup_free_ char *path = session_bus_path(s);

        if (!path)
                return -ENOMEM;
        return sd_bus_reply_method_return(m, "o", path);
}

static int create_output(Manager *m, BusRequest *req, uint64_t id, char **ret_path, sd_bus_error *error) {
        char hint[32];
        int r;

        snprintf(hint, sizeof(hint), "%" PRIu64, id);
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

static int check_key(const char *key, sd_bus_error *error) {
        if (!session_detach_key_valid(key))
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "A detach key is 1 to %u printable ASCII characters.", SESSION_DETACH_KEY_MAX);
        return 0;
}

static int check_key_free(Manager *m, uid_t uid, const char *key, sd_bus_error *error) {
        if (manager_find_detached(m, uid, key))
                return sd_bus_error_setf(error, TB_ERROR_KEY_IN_USE,
                                         "Another of your sessions is detached under the key '%s'; "
                                         "attach to it, or pick another key.", key);
        return 0;
}

static int start_session(BusRequest *req, sd_bus_error *error) {
        Manager *m = req->manager;
        _cleanup_free_ char *path = NULL;
        bool per_uid, output_passed;
        Session *s = NULL;
        uint64_t id;
        int r;

        if (manager_check_limits(m, req->uid, &per_uid) < 0)
                return sd_bus_error_setf(error, TB_ERROR_TOO_MANY_SESSIONS,
                                         per_uid ? "You have %u tracing sessions already; stop one first."
                                                 : "The service runs its limit of %u sessions; try again later.",
                                         per_uid ? m->limits.max_sessions_per_uid : m->limits.max_sessions);
        /* Checked again: another session may have taken the key while polkit thought. */
        if (req->detach_key) {
                r = check_key_free(m, req->uid, req->detach_key, error);
                if (r < 0)
                        return r;
        }

        r = manager_new_session_id(m, &id);
        if (r < 0)
                return sd_bus_error_set_errnof(error, r, "Failed to pick a session id: %m");
        output_passed = req->output_fd >= 0;
        if (!output_passed) {
                r = create_output(m, req, id, &path, error);
                if (r < 0)
                        return r;
        }

        r = session_new(m, id, req->uid, &req->config, TAKE_FD(req->output_fd), path, &s);
        if (r < 0) {
                if (path)
                        (void) unlink(path);
                return sd_bus_error_set_errnof(error, r, "Failed to start tracing: %m");
        }
        manager_add_session(m, s);

        /* Started detached, the session is never bound: no window in which a vanishing
         * client would stop it. Without Output, the caller cannot hold a connection
         * (busctl): the session is detached, keyless, and stopped by its path. */
        if (req->detach_key || !output_passed)
                session_set_detached(s, true, TAKE_PTR(req->detach_key));
        else {
                r = session_bus_bind(s, req->message);
                if (r < 0) {
                        (void) session_stop(s, SESSION_END_CLIENT_VANISHED);
                        return sd_bus_error_set_errnof(error, r, "Failed to track the caller: %m");
                }
        }
        return reply_with_session(req->message, s);
}

static void on_start_result(BusRequest *req, int result) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        /* polkit.c has logged the refusal, in words. */
        if (result < 0)
                return reply_polkit_refusal(req, result, ACTION_RECORD, "Recording kernel traces");
        r = start_session(req, &error);
        if (r < 0 && sd_bus_error_is_set(&error))
                (void) sd_bus_reply_method_error(req->message, &error);
        else if (r < 0)
                (void) sd_bus_reply_method_errnof(req->message, r, "Failed to start tracing: %m");
}

static int method_start(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        Manager *m = ASSERT_PTR(userdata);
        _cleanup_(start_options_done) StartOptions o = { .output_fd = -EBADF };
        _cleanup_(bus_request_freep) BusRequest *req = NULL;
        const char *text;
        int r;

        /* Validate everything first: nothing is created before polkit says yes. */
        r = sd_bus_message_read(message, "s", &text);
        if (r < 0)
                return r;
        r = read_start_options(message, &o, error);
        if (r < 0)
                return r;
        r = bus_request_new(message, &req);
        if (r < 0)
                return r;
        if (o.detach_key) {
                r = check_key(o.detach_key, error);
                if (r < 0)
                        return r;
                r = check_key_free(m, req->uid, o.detach_key, error);
                if (r < 0)
                        return r;
                req->detach_key = strdup(o.detach_key);
                if (!req->detach_key)
                        return -ENOMEM;
        }
        if (o.output_fd >= 0) {
                r = take_output_fd(o.output_fd, &req->output_fd, error);
                if (r < 0)
                        return r;
        }
        r = load_config(m, text, &o, &req->config, error);
        if (r < 0)
                return r;

        return bus_request_authorize(m, &req, ACTION_RECORD, /* interactive= */ true, on_start_result);
}

/* The one answer for a session the caller may not see. Another user's session and no
 * session at all get the same error, word for word, so that no one learns whether
 * someone else is recording. */
static int no_such_session(sd_bus_error *error) {
        return sd_bus_error_set(error, TB_ERROR_NO_SUCH_SESSION, "You have no such tracing session.");
}

/* The caller's own session at @path, still recording or stopping; NULL otherwise. */
static Session *find_own_session(Manager *m, const char *path, uid_t uid) {
        Session *s = session_from_path(m, path);

        return s && s->owner_uid == uid && s->state != SESSION_ENDED ? s : NULL;
}

static int stop_session(Session *s, sd_bus_message *message) {
        int r;

        r = session_bus_queue_stop(s, message);
        if (r < 0)
                return r;
        (void) session_stop(s, SESSION_END_STOPPED);
        /* Answered from session_bus_ended(), once the trace is complete. */
        return 1;
}

static void on_stop_result(BusRequest *req, int result) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        Session *s;
        int r;

        /* Only the interactive-authorization answer differs from "no such session", and
         * it is the same whether the session exists or not. */
        if (result == -EBADR)
                return reply_polkit_refusal(req, result, ACTION_MANAGE, "Stopping another user's session");
        /* The session may have ended while polkit thought. */
        s = session_from_path(req->manager, req->session_path);
        if (result < 0 || !s || s->state == SESSION_ENDED) {
                (void) no_such_session(&error);
                (void) sd_bus_reply_method_error(req->message, &error);
                return;
        }
        r = stop_session(s, req->message);
        if (r < 0)
                (void) sd_bus_reply_method_errnof(req->message, r, "Failed to stop the session: %m");
}

int manager_bus_stop(Manager *m, const char *path, sd_bus_message *message, sd_bus_error *error) {
        _cleanup_(bus_request_freep) BusRequest *req = NULL;
        Session *s;
        int r;

        r = bus_request_new(message, &req);
        if (r < 0)
                return r;
        s = find_own_session(m, path, req->uid);
        if (s)
                return stop_session(s, message);

        /* Anything else, another user's session or none at all, takes the same way:
         * holders of org.tracebus.manage may stop it, everyone else learns nothing, not
         * even from how long the answer took. */
        req->session_path = strdup(path);
        if (!req->session_path)
                return -ENOMEM;
        return bus_request_authorize(m, &req, ACTION_MANAGE, /* interactive= */ true, on_stop_result);
}

static int method_stop(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        Manager *m = ASSERT_PTR(userdata);
        const char *path;
        int r;

        r = sd_bus_message_read(message, "o", &path);
        if (r < 0)
                return r;
        return manager_bus_stop(m, path, message, error);
}

int manager_bus_detach(Manager *m, const char *path, const char *key, sd_bus_message *message,
                       sd_bus_error *error) {
        _cleanup_free_ char *copy = NULL;
        Session *s;
        uid_t uid;
        int r;

        r = check_key(key, error);
        if (r < 0)
                return r;
        r = bus_sender_euid(message, &uid);
        if (r < 0)
                return r;
        /* Only the owner may detach, root included: keys are per UID. */
        s = find_own_session(m, path, uid);
        if (!s)
                return no_such_session(error);
        if (s->state != SESSION_RECORDING)
                return sd_bus_error_set(error, TB_ERROR_NO_SUCH_SESSION, "The tracing session is ending.");
        if (s->detach_key)
                return sd_bus_error_setf(error, TB_ERROR_KEY_IN_USE, "The session is already detached under a key.");
        r = check_key_free(m, uid, key, error);
        if (r < 0)
                return r;

        copy = strdup(key);
        if (!copy)
                return -ENOMEM;
        session_bus_unbind(s);
        session_set_detached(s, true, TAKE_PTR(copy));
        session_bus_emit_state(s);
        return sd_bus_reply_method_return(message, NULL);
}

static int method_detach(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        Manager *m = ASSERT_PTR(userdata);
        const char *path, *key;
        int r;

        r = sd_bus_message_read(message, "os", &path, &key);
        if (r < 0)
                return r;
        return manager_bus_detach(m, path, key, message, error);
}

/* Reads a key argument and finds the caller's recording session detached under it.
 * Strictly per UID, root included: another user's key is indistinguishable from none. */
static int read_key_find_detached(Manager *m, sd_bus_message *message, const char **ret_key,
                                  Session **ret, sd_bus_error *error) {
        Session *s;
        uid_t uid;
        int r;

        r = sd_bus_message_read(message, "s", ret_key);
        if (r < 0)
                return r;
        r = check_key(*ret_key, error);
        if (r < 0)
                return r;
        r = bus_sender_euid(message, &uid);
        if (r < 0)
                return r;
        s = manager_find_detached(m, uid, *ret_key);
        *ret = s && s->state == SESSION_RECORDING ? s : NULL;
        return 0;
}

static int method_attach(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        Manager *m = ASSERT_PTR(userdata);
        const char *key;
        Session *s;
        int r;

        r = read_key_find_detached(m, message, &key, &s, error);
        if (r < 0)
                return r;
        if (!s)
                return sd_bus_error_setf(error, TB_ERROR_NO_SUCH_SESSION,
                                         "You have no session detached under the key '%s'.", key);

        r = session_bus_bind(s, message);
        if (r < 0)
                return r;
        session_set_detached(s, false, NULL);
        session_bus_emit_state(s);
        return reply_with_session(message, s);
}

static int method_is_detached(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        Manager *m = ASSERT_PTR(userdata);
        const char *key;
        Session *s;
        int r;

        r = read_key_find_detached(m, message, &key, &s, error);
        if (r < 0)
                return r;
        return sd_bus_reply_method_return(message, "b", s != NULL);
}

static int reply_session_list(Manager *m, sd_bus_message *message, uid_t uid, bool all) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r;

        r = sd_bus_message_new_method_return(message, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', "o");
        if (r < 0)
                return r;
        for (Session *s = m->sessions; s; s = s->next) {
                _cleanup_free_ char *path = NULL;

                if (!all && s->owner_uid != uid)
                        continue;
                path = session_bus_path(s);
                if (!path)
                        return -ENOMEM;
                r = sd_bus_message_append(reply, "o", path);
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static void on_list_result(BusRequest *req, int result) {
        int r;

        /* Not a manager: the caller's own sessions, which need no authorization. */
        r = reply_session_list(req->manager, req->message, req->uid, result > 0);
        if (r < 0)
                (void) sd_bus_reply_method_errnof(req->message, r, "Failed to list sessions: %m");
}

static int method_list_sessions(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        Manager *m = ASSERT_PTR(userdata);
        _cleanup_(bus_request_freep) BusRequest *req = NULL;
        int r;

        r = bus_request_new(message, &req);
        if (r < 0)
                return r;
        /* Whoever has no session of another user to see needs no polkit round trip. */
        bool others = false;
        for (Session *s = m->sessions; s; s = s->next)
                others = others || s->owner_uid != req->uid;
        if (!others)
                return reply_session_list(m, message, req->uid, false);
        /* Listing never pops up an authentication dialog: without it, one's own sessions. */
        return bus_request_authorize(m, &req, ACTION_MANAGE, /* interactive= */ false, on_list_result);
}

static int reply_strv(sd_bus_message *message, char **l) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r;

        r = sd_bus_message_new_method_return(message, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_append_strv(reply, l);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static int method_list_events(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        _cleanup_strv_free_ char **events = NULL;
        const char *glob;
        int r;

        r = sd_bus_message_read(message, "s", &glob);
        if (r < 0)
                return r;
        if (!trace_instance_tracefs_root())
                return sd_bus_error_set(error, TB_ERROR_TRACING_UNAVAILABLE,
                                        "tracefs is not mounted at /sys/kernel/tracing.");
        /* Which events the kernel offers is no secret: tracefs is just root-only. */
        r = session_config_list_events(trace_instance_tracefs_root(), isempty_str(glob) ? "*" : glob, &events);
        if (r < 0)
                return r;
        return reply_strv(message, events);
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
        SD_BUS_METHOD_WITH_ARGS("Detach",
                                SD_BUS_ARGS("o", session, "s", key),
                                SD_BUS_NO_RESULT,
                                method_detach, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Attach",
                                SD_BUS_ARGS("s", key),
                                SD_BUS_RESULT("o", session),
                                method_attach, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("IsDetached",
                                SD_BUS_ARGS("s", key),
                                SD_BUS_RESULT("b", detached),
                                method_is_detached, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListEvents",
                                SD_BUS_ARGS("s", glob),
                                SD_BUS_RESULT("as", events),
                                method_list_events, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListSessions",
                                SD_BUS_NO_ARGS,
                                SD_BUS_RESULT("ao", sessions),
                                method_list_sessions, SD_BUS_VTABLE_UNPRIVILEGED),
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
        r = sd_bus_add_fallback_vtable(m->bus, NULL, SESSION_PATH_PREFIX, SESSION_INTERFACE,
                                       session_vtable, session_object_find, m);
        if (r < 0)
                return log_error_errno(r, "Failed to export sessions: %m");
        r = sd_bus_add_node_enumerator(m->bus, NULL, SESSION_PATH_PREFIX, session_node_enumerator, m);
        if (r < 0)
                return log_error_errno(r, "Failed to add the session enumerator: %m");
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
        while (m->requests) {
                BusRequest *req = m->requests;

                (void) sd_bus_reply_method_errorf(req->message, SD_BUS_ERROR_NO_REPLY,
                                                  "The service is shutting down.");
                bus_request_free(req);
        }
}
