/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <systemd/sd-bus.h>

#include "core/manager.h"

/*
 * Manager.Start's arguments, in two steps around polkit. Before it, only what costs the
 * same whatever a caller sends: the sizes and counts the message carries, against the
 * caps in session-config.h (RequestTooLarge). After it, the config parsed and checked
 * against the limits and the kernel's events. A caller polkit refuses never makes the
 * service parse or resolve anything.
 */

typedef struct StartOptions {
        const char *text;           /* the config argument, borrowed from the message */
        int output_fd;              /* borrowed from the message */
        bool collect_events;        /* read Events into events, not just check its caps */
        char **events;
        uint32_t duration_ms;
        uint32_t buffer_size_kb;
        const char *detach_key;     /* borrowed from the message */
        const void *binary_config;  /* a binary TraceConfig, borrowed from the message */
        size_t binary_config_size;
        bool has_events, has_duration, has_buffer, has_output, has_binary, has_key;
        /* helper "rotate": RotateEveryMs (t), RotateBytes (t), RotateKeep (u). */
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

/* After polkit: reads @m again and turns its config (text, BinaryConfig, or Events,
 * DurationMs and BufferSizeKb) into @ret: InvalidArgs, InvalidConfig, UnknownEvent or
 * TracingUnavailable when it cannot. */
int start_load_config(sd_bus_message *m, Manager *manager, SessionConfig *ret, sd_bus_error *error);

/* When tracefs refused an event of the config that was loaded (-ENOENT: a probe removed
 * since the kernel's events were read): reads them again and loads the config anew. Negative
 * with @error set (UnknownEvent, naming the events gone) if it no longer loads, else 0. */
int start_recheck_events(sd_bus_message *m, Manager *manager, sd_bus_error *error);
