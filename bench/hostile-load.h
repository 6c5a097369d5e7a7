/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What a hostile Start costs other users. A user whom polkit refuses sends Starts built
 * to cost the service as much as a message can, one after the other, while another
 * user's IsDetached is timed; the result is that latency compared with the same calls
 * before the flood, measured in the same run. Shared by the bus test
 * tests/test-hostile-start.c and by `tb-bench hostile` (bench/run). Plain sd-bus and
 * libc; the caller runs as root, on the bus $DBUS_SYSTEM_BUS_ADDRESS names, and forks one
 * process per user.
 */

#include <stdbool.h>
#include <systemd/sd-bus.h>

typedef enum HostileKind {
        HOSTILE_BARE_NAMES,     /* Events: 4,096 bare event names (no group) */
        HOSTILE_DATA_SOURCES,   /* BinaryConfig: 80 linux.ftrace data sources naming many events */
        HOSTILE_NESTING,        /* a text config nested far deeper than the parser allows */
        HOSTILE_MAX_TEXT,       /* a text config of the largest size accepted, all event names */
        _HOSTILE_KIND_MAX,
} HostileKind;

#define HOSTILE_NAMES 4096u
#define HOSTILE_DATA_SOURCE_COUNT 80u
#define HOSTILE_NESTING_DEPTH 30000u
#define HOSTILE_MAX_CONFIG_BYTES (1024u * 1024u)   /* the service's cap on a config */

/* The bare names (no group) of the kernel's events under @tracefs, read as root; NULL
 * terminated, freed with free() on each and on the array. */
char **hostile_kernel_names(const char *tracefs);
void hostile_names_free(char **names);

/* Start calls to the tracebus Manager: with the Events option (@count names from @names,
 * in turn), with the BinaryConfig option, or with a text config. */
int hostile_start_with_events(sd_bus *bus, char *const *names, size_t count, sd_bus_message **ret);
int hostile_start_with_binary(sd_bus *bus, const void *config, size_t size, sd_bus_message **ret);
int hostile_start_with_text(sd_bus *bus, const char *text, sd_bus_message **ret);

/* A binary TraceConfig of @n_sources linux.ftrace data sources, each naming events from
 * @names in turn: @per_source of them, or fewer once a source's names fill @source_bytes.
 * Freed with free(). */
void *hostile_binary_config(char *const *names, unsigned n_sources, size_t per_source, size_t source_bytes,
                            size_t *ret_size);

/* A Start call of @kind to the tracebus Manager, cycling through @names. */
int hostile_start_message(sd_bus *bus, HostileKind kind, char *const *names, sd_bus_message **ret);

typedef struct HostileResult {
        double quiet_us;            /* the victim's IsDetached, median, before the flood */
        double loaded_us;           /* the same during the flood */
        unsigned answered;          /* hostile Starts answered while the victim was timed */
        unsigned accepted;          /* of which succeeded: must be none */
        char first_error[256];      /* the first answer's error name */
} HostileResult;

/* Times @probes IsDetached calls of @victim, quiet, then while @attacker floods the service
 * with hostile Starts of every kind in turn. Negative errno when a process could not be
 * started or talked to. */
int hostile_measure(const char *victim, const char *attacker, char *const *names, unsigned probes,
                    HostileResult *ret);
