/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <string.h>

#include "bus-errors.h"
#include "manager-start-dbus.h"
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
        if (r >= 0)
                r = sd_bus_message_enter_container(m, 'a', "s");
        while (r >= 0 && (r = sd_bus_message_read_basic(m, 's', &e)) > 0) {
                bytes += strlen(e);
                if (++n > SESSION_MAX_OPTION_EVENTS)
                        return request_too_large(error, "The Events option has more names than allowed", n,
                                                 SESSION_MAX_OPTION_EVENTS, "names");
                if (bytes > SESSION_MAX_OPTION_EVENTS_BYTES)
                        return request_too_large(error, "The Events option's names are too long together", bytes,
                                                 SESSION_MAX_OPTION_EVENTS_BYTES, "bytes");
                if (o->collect_events && append_event(o, n - 1, e) < 0)
                        return -ENOMEM;
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        return r;
}

static int read_binary_config_option(sd_bus_message *m, StartOptions *o, sd_bus_error *error) {
        int r;

        r = sd_bus_message_enter_container(m, 'v', "ay");
        if (r >= 0)
                r = sd_bus_message_read_array(m, 'y', &o->binary_config, &o->binary_config_size);
        if (r >= 0 && o->binary_config_size > SESSION_MAX_CONFIG_BYTES)
                return request_too_large(error, "The BinaryConfig option is too large", o->binary_config_size,
                                         SESSION_MAX_CONFIG_BYTES, "bytes");
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        return r;
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
                else if (strcmp(key, "Events") == 0)
                        r = read_events_option(m, o, error);
                else if (strcmp(key, "DurationMs") == 0) {
                        r = sd_bus_message_read(m, "v", "u", &o->duration_ms);
                        o->has_duration = true;
                } else if (strcmp(key, "BinaryConfig") == 0)
                        r = read_binary_config_option(m, o, error);
                else if (strcmp(key, "DetachKey") == 0) {
                        r = sd_bus_message_read(m, "v", "s", &o->detach_key);
                } else if (strcmp(key, "BufferSizeKb") == 0) {
                        r = sd_bus_message_read(m, "v", "u", &o->buffer_size_kb);
                        o->has_buffer = true;
                } else if (strcmp(key, "RotateEveryMs") == 0) {
                        r = sd_bus_message_read(m, "v", "t", &o->rotation.every_ms);
                        o->rotation.has_every = true;
                } else if (strcmp(key, "RotateBytes") == 0) {
                        r = sd_bus_message_read(m, "v", "t", &o->rotation.bytes);
                        o->rotation.has_bytes = true;
                } else if (strcmp(key, "RotateKeep") == 0) {
                        r = sd_bus_message_read(m, "v", "u", &o->rotation.keep);
                        o->rotation.has_keep = true;
                } else {
                        _cleanup_free_ char *shown = printable_copy(key);
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                 "Unknown option '%.64s'; known: Output, DetachKey, BinaryConfig, Events, DurationMs, BufferSizeKb, "
                                                 "RotateEveryMs, RotateBytes, RotateKeep.",
                                                 strempty(shown));
                }
                if (r < 0 && sd_bus_error_is_set(error))
                        return r;
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

        /* The Events option is names a user typed: none existing is a typo (UnknownEvent).
         * A TraceConfig is Perfetto's, run as Perfetto runs it: what is missing is warned. */
        r = manager_load_session_config(m, tc, o->has_events ? SESSION_CONFIG_STRICT_EVENTS : 0, ret, &msg);
        if (r == -ENOMEDIUM)
                return sd_bus_error_set(error, TB_ERROR_TRACING_UNAVAILABLE,
                                        "tracefs is not mounted at /sys/kernel/tracing.");
        if (r < 0)
                return config_error(r, msg, error);
        r = session_config_load_rotation(ret, &o->rotation, &msg);
        if (r == -EINVAL)
                return sd_bus_error_setf(error, TB_ERROR_INVALID_ROTATION, "Invalid rotation: %s", msg);
        if (r >= 0 && ret->rotate_keep > 0 && o->has_output)
                r = session_config_warn(ret, "RotateKeep: the chunks go into your Output fds, files the "
                                        "service cannot delete: it deletes none");
        return r;
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

int start_load_config(sd_bus_message *m, Manager *manager, SessionConfig *ret, sd_bus_error *error) {
        _cleanup_(start_options_done) StartOptions o = { .output_fd = -EBADF, .collect_events = true };
        int r;

        /* The message is read again rather than kept in a copy: it holds the text. */
        r = sd_bus_message_rewind(m, /* complete= */ true);
        if (r < 0)
                return r;
        r = start_read_arguments(m, &o, error);
        if (r < 0)
                return r;
        return load_config(manager, o.text, &o, ret, error);
}

int start_recheck_events(sd_bus_message *m, Manager *manager, sd_bus_error *error) {
        _cleanup_(session_config_done) SessionConfig config = {};
        int r;

        if (!manager->tracefs_root)
                return 0;
        r = session_config_reread_events(manager->tracefs_root);
        if (r < 0)
                return r;
        r = start_load_config(m, manager, &config, error);
        return r < 0 && sd_bus_error_is_set(error) ? r : 0;
}
