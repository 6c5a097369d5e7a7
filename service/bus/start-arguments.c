/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <string.h>

#include "bus-dict.h"
#include "bus-errors.h"
#include "start-arguments.h"
#include "strv.h"

void start_options_done(StartOptions *o) {
        o->events = strv_free(o->events);
}

char *printable_copy(const char *s) {
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
        static const char *const names[] = { "Output", "Events", "DurationMs", "BinaryConfig", "DetachKey", "BufferSizeKb",
                                            "RotateEveryMs", "RotateBytes", "RotateKeep" };
        bool *seen[] = { &o->has_output, &o->has_events, &o->has_duration, &o->has_binary, &o->has_key, &o->has_buffer,
                         &o->rotation.has_every, &o->rotation.has_bytes, &o->rotation.has_keep };

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

/* RequestTooLarge, naming the cap and its value. */
static int request_too_large(sd_bus_error *error, const char *what, size_t value, unsigned cap, const char *unit) {
        return sd_bus_error_setf(error, TB_ERROR_REQUEST_TOO_LARGE,
                                 "%s: %zu %s, above the cap of %u %s; nothing was started.",
                                 what, value, unit, cap, unit);
}

/* Appends @s to o->events, doubling the room: strv_extend() counts the list each time. */
static int append_event(StartOptions *o, size_t n, const char *s) {
        if ((n & (n - 1)) == 0 && n >= 8) {
                char **p = reallocarray(o->events, 2 * n + 1, sizeof(char *));

                if (!p)
                        return -ENOMEM;
                o->events = p;
        } else if (!o->events) {
                o->events = calloc(9, sizeof(char *));
                if (!o->events)
                        return -ENOMEM;
        }
        o->events[n] = strdup(s);
        if (!o->events[n])
                return -ENOMEM;
        o->events[n + 1] = NULL;
        return 0;
}

/* The Events option, its caps checked name by name: a huge array is refused at the first
 * name over a cap, never read whole. */
static int read_events_option(sd_bus_message *m, StartOptions *o, sd_bus_error *error) {
        size_t n = 0, bytes = 0;
        const char *e;
        int r;

        r = sd_bus_message_enter_container(m, 'v', "as");
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(m, 'a', "s");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read_basic(m, 's', &e)) > 0) {
                bytes += strlen(e);
                if (++n > SESSION_MAX_OPTION_EVENTS)
                        return request_too_large(error, "The Events option has more names than allowed", n,
                                                 SESSION_MAX_OPTION_EVENTS, "names");
                if (bytes > SESSION_MAX_OPTION_EVENTS_BYTES)
                        return request_too_large(error, "The Events option's names are too long together", bytes,
                                                 SESSION_MAX_OPTION_EVENTS_BYTES, "bytes");
                if (append_event(o, n - 1, e) < 0)
                        return -ENOMEM;
        }
        if (r < 0)
                return r;
        r = sd_bus_message_exit_container(m);
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

static int read_binary_config_option(sd_bus_message *m, StartOptions *o, sd_bus_error *error) {
        int r;

        r = sd_bus_message_enter_container(m, 'v', "ay");
        if (r < 0)
                return r;
        r = sd_bus_message_read_array(m, 'y', &o->binary_config, &o->binary_config_size);
        if (r < 0)
                return r;
        if (o->binary_config_size > SESSION_MAX_CONFIG_BYTES)
                return request_too_large(error, "The BinaryConfig option is too large", o->binary_config_size,
                                         SESSION_MAX_CONFIG_BYTES, "bytes");
        return sd_bus_message_exit_container(m);
}

typedef struct OptionsReader {
        StartOptions *options;
        sd_bus_error *error;
} OptionsReader;

/* The value of option @key, read into its field by its type. */
static int read_option_value(sd_bus_message *m, const char *key, StartOptions *o, sd_bus_error *error) {
        if (strcmp(key, "Output") == 0)
                return sd_bus_message_read(m, "v", "h", &o->output_fd);
        if (strcmp(key, "Events") == 0)
                return read_events_option(m, o, error);
        if (strcmp(key, "DurationMs") == 0)
                return sd_bus_message_read(m, "v", "u", &o->duration_ms);
        if (strcmp(key, "BinaryConfig") == 0)
                return read_binary_config_option(m, o, error);
        if (strcmp(key, "DetachKey") == 0)
                return sd_bus_message_read(m, "v", "s", &o->detach_key);
        if (strcmp(key, "BufferSizeKb") == 0)
                return sd_bus_message_read(m, "v", "u", &o->buffer_size_kb);
        if (strcmp(key, "RotateEveryMs") == 0)
                return sd_bus_message_read(m, "v", "t", &o->rotation.every_ms);
        if (strcmp(key, "RotateBytes") == 0)
                return sd_bus_message_read(m, "v", "t", &o->rotation.bytes);
        if (strcmp(key, "RotateKeep") == 0)
                return sd_bus_message_read(m, "v", "u", &o->rotation.keep);

        _cleanup_free_ char *shown = printable_copy(key);
        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                 "Unknown option '%.64s'; known: Output, DetachKey, BinaryConfig, Events, DurationMs, "
                                 "BufferSizeKb, RotateEveryMs, RotateBytes, RotateKeep.",
                                 strempty(shown));
}

static int read_start_option(sd_bus_message *m, const char *key, void *userdata) {
        OptionsReader *reader = userdata;
        int r;

        /* Each option at most once; its has_ flag is set here. */
        r = check_option_once(reader->options, key, reader->error);
        if (r < 0)
                return r;
        r = read_option_value(m, key, reader->options, reader->error);
        if (r < 0 && !sd_bus_error_is_set(reader->error))
                return sd_bus_error_setf(reader->error, SD_BUS_ERROR_INVALID_ARGS,
                                         "Option '%s' has the wrong type.", key);
        return r;
}

static int read_start_options(sd_bus_message *m, StartOptions *o, sd_bus_error *error) {
        OptionsReader reader = { .options = o, .error = error };

        return bus_message_read_dict(m, read_start_option, &reader);
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

static int parse_config(const StartOptions *o, Tracebus__TraceConfig **ret, sd_bus_error *error) {
        _cleanup_free_ char *msg = NULL;
        int ways = !isempty_str(o->text) + !!o->binary_config + (o->has_events || o->has_duration || o->has_buffer);
        int r;

        if (ways > 1)
                return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS,
                                        "Pass one of a text config, the BinaryConfig option, or the Events, "
                                        "DurationMs and BufferSizeKb options.");
        if (o->has_buffer && o->buffer_size_kb == 0)
                return sd_bus_error_set(error, TB_ERROR_INVALID_CONFIG,
                                        "Invalid trace config: BufferSizeKb must be at least 1 (leave it out for the default).");
        if (!isempty_str(o->text))
                r = session_config_parse_text(o->text, ret, &msg);
        else if (o->binary_config)
                r = session_config_parse_binary(o->binary_config, o->binary_config_size, ret, &msg);
        else
                r = session_config_from_options(o->events, o->duration_ms, o->buffer_size_kb, ret);
        return r < 0 ? config_error(r, msg, error) : 0;
}

SessionConfigFlags start_config_flags(const StartOptions *o) {
        /* The Events option is names a user typed: none existing is a typo (UnknownEvent).
         * A TraceConfig is Perfetto's, run as Perfetto runs it: what is missing is warned. */
        return o->has_events ? SESSION_CONFIG_STRICT_EVENTS : 0;
}

static int load_parsed_config(Manager *m, const Tracebus__TraceConfig *tc, SessionConfigFlags flags,
                              SessionConfig *ret, sd_bus_error *error) {
        _cleanup_free_ char *msg = NULL;
        int r;

        r = manager_load_session_config(m, tc, flags, ret, &msg);
        if (r == -ENOMEDIUM)
                return sd_bus_error_set(error, TB_ERROR_TRACING_UNAVAILABLE,
                                        "tracefs is not mounted at /sys/kernel/tracing.");
        return r < 0 ? config_error(r, msg, error) : 0;
}

static int load_rotation(const StartOptions *o, SessionConfig *c, sd_bus_error *error) {
        _cleanup_free_ char *msg = NULL;
        int r;

        r = session_config_load_rotation(c, &o->rotation, &msg);
        if (r == -EINVAL)
                return sd_bus_error_setf(error, TB_ERROR_INVALID_ROTATION, "Invalid rotation: %s", msg);
        if (r < 0)
                return sd_bus_error_set_errnof(error, r, "Failed to load the rotation options: %m");
        if (c->rotate_keep == 0 || !o->has_output)
                return 0;
        r = session_config_warn(c, "RotateKeep: the chunks go into your Output fds, files the service cannot "
                                "delete: it deletes none");
        return r < 0 ? sd_bus_error_set_errnof(error, r, "Failed to note a warning: %m") : 0;
}

/* CLONE_SNAPSHOT triggers write FILE.N into the trace directory only. */
static int check_trigger_output(const StartOptions *o, SessionConfig *c, sd_bus_error *error) {
        _cleanup_free_ char *why = NULL;
        int r = session_config_check_trigger_output(c, o->has_output, &why);

        if (r < 0 && why)
                return sd_bus_error_set(error, TB_ERROR_INVALID_CONFIG, why);
        return r < 0 ? sd_bus_error_set_errnof(error, r, "Failed to check the triggers' output: %m") : 0;
}

int start_read_arguments(sd_bus_message *m, StartOptions *o, sd_bus_error *error) {
        int r;

        r = sd_bus_message_read(m, "s", &o->text);
        if (r < 0)
                return r;
        /* sd-bus has checked the string already: its length costs no more than that. */
        if (strlen(o->text) > SESSION_MAX_CONFIG_BYTES)
                return request_too_large(error, "The config text is too large", strlen(o->text),
                                               SESSION_MAX_CONFIG_BYTES, "bytes");
        return read_start_options(m, o, error);
}

int start_load_config(Manager *m, const StartOptions *o, Tracebus__TraceConfig **ret_tc, SessionConfig *ret,
                      sd_bus_error *error) {
        int r;

        r = parse_config(o, ret_tc, error);
        if (r < 0)
                return r;
        r = load_parsed_config(m, *ret_tc, start_config_flags(o), ret, error);
        if (r < 0)
                return r;
        r = load_rotation(o, ret, error);
        if (r < 0)
                return r;
        return check_trigger_output(o, ret, error);
}

int start_recheck_events(Manager *m, const Tracebus__TraceConfig *tc, SessionConfigFlags flags, sd_bus_error *error) {
        _cleanup_(session_config_done) SessionConfig config = {};
        int r;

        if (!m->tracefs_root)
                return 0;
        r = session_config_reread_events(m->tracefs_root);
        if (r < 0)
                return r;
        r = load_parsed_config(m, tc, flags, &config, error);
        return r < 0 && sd_bus_error_is_set(error) ? r : 0;
}
