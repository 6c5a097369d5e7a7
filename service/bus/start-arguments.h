/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <systemd/sd-bus.h>

#include "core/manager.h"

/*
 * Manager.Start's arguments, in two steps around polkit. Before it, only what costs the
 * same whatever a caller sends: the sizes and counts the message carries, against the
 * caps in session-config.h (RequestTooLarge). After it, the config parsed once and
 * checked against the limits and the kernel's events. A caller polkit refuses never
 * makes the service parse or resolve anything.
 */

typedef struct StartOptions {
        const char *text;           /* the config argument, borrowed from the message */
        int output_fd;              /* borrowed from the message */
        char **events;
        uint32_t duration_ms;
        uint32_t buffer_size_kb;
        const char *detach_key;     /* borrowed from the message */
        const void *binary_config;  /* a binary TraceConfig, borrowed from the message */
        size_t binary_config_size;
        bool has_events, has_duration, has_buffer, has_output, has_binary, has_key;
        /* RotateEveryMs (t), RotateBytes (t), RotateKeep (u). */
        SessionRotation rotation;
} StartOptions;

void start_options_done(StartOptions *o);

/* A copy of @s in printable ASCII (other bytes as '?'), for error messages that echo
 * what a caller sent: an error text must be valid UTF-8, or sd-bus cannot send the
 * reply at all and the caller waits for its timeout. */
char *printable_copy(const char *s);

/* Reads Start's arguments (s config, a{sv} options) from @m, checking each option's type
 * and the caps on its size while reading (an Events array over a cap is left unread).
 * Nothing is parsed. */
int start_read_arguments(sd_bus_message *m, StartOptions *o, sd_bus_error *error);

/* After polkit: parses the config @o carries (text, BinaryConfig, or Events, DurationMs
 * and BufferSizeKb) into *ret_tc, which the caller keeps, and loads it into @ret with the
 * rotation options: InvalidArgs, InvalidConfig, UnknownEvent, InvalidRotation or
 * TracingUnavailable when it cannot. */
int start_load_config(Manager *m, const StartOptions *o, Tracebus__TraceConfig **ret_tc, SessionConfig *ret,
                      sd_bus_error *error);

/* How the config of @o is loaded: strictly for the Events option's names. */
SessionConfigFlags start_config_flags(const StartOptions *o);

/* When tracefs refused an event of the config that was loaded (-ENOENT: a probe removed
 * since the kernel's events were read): reads them again and loads the parsed config
 * @tc anew. Negative with @error set (UnknownEvent, naming the events gone) if it no
 * longer loads, else 0. */
int start_recheck_events(Manager *m, const Tracebus__TraceConfig *tc, SessionConfigFlags flags, sd_bus_error *error);
