/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.pb-c.h"
#include "macro.h"

/*
 * What a session records, validated: the TraceConfig a caller sent (text format, or
 * built from Start's options), reduced to what the recorder needs, with every limit
 * applied. Nothing here touches tracefs except to read which events exist.
 */

#define SESSION_DEFAULT_BUFFER_SIZE_KB 2048u       /* per CPU, as Perfetto's default */
#define SESSION_MAX_BUFFER_SIZE_KB (64u * 1024u)   /* per CPU; bounds kernel memory per session */
#define SESSION_DEFAULT_DRAIN_PERIOD_MS 100u
#define SESSION_MAX_DURATION_MS (7u * 24u * 3600u * 1000u)
#define SESSION_MAX_EVENTS 4096u
/* The service's own buffer (TraceConfig.buffers): what it holds before writing. */
#define SESSION_DEFAULT_TRACE_BUFFER_KB (4u * 1024u)
#define SESSION_MAX_TRACE_BUFFER_KB (256u * 1024u)
/* Perfetto's kDefaultWriteIntoFilePeriodMs and kMinWriteIntoFilePeriodMs. */
#define SESSION_DEFAULT_WRITE_PERIOD_MS 5000u
#define SESSION_MIN_WRITE_PERIOD_MS 100u

/*
 * What one Start may carry. The first caps are checked from the message alone, before
 * polkit is asked, so that a caller polkit refuses costs the service a constant amount
 * of work (RequestTooLarge). The others bound the work after polkit (InvalidConfig).
 * Real Perfetto configs are a few KiB, with a handful of data sources and at most a few
 * hundred ftrace_events: every cap is far above what one needs.
 */
#define SESSION_MAX_CONFIG_BYTES (1024u * 1024u)         /* text config, BinaryConfig */
#define SESSION_MAX_OPTION_EVENTS SESSION_MAX_EVENTS     /* entries of the Events option */
/* All the Events option's names together: 4096 names of 64 bytes. A valid name
 * ("group/name") has at most 257. */
#define SESSION_MAX_OPTION_EVENTS_BYTES (256u * 1024u)
/* After polkit: data sources in a config (Perfetto's own configs use under 30), and
 * ftrace_events entries of all its linux.ftrace data sources together (twice the
 * events a session may record, so that a list repeated in a second data source fits).
 * The text format's nesting is capped by the parser (TEXTPROTO_MAX_DEPTH). */
#define SESSION_MAX_DATA_SOURCES 256u
#define SESSION_MAX_CONFIG_EVENT_NAMES (2u * SESSION_MAX_EVENTS)

typedef struct SessionConfig {
        char **events;                 /* "group/name", wildcards and bare names resolved */
        uint32_t buffer_size_kb;       /* kernel buffer per CPU */
        uint32_t drain_period_ms;
        uint32_t duration_ms;          /* 0: until stopped */
        bool compact_sched;
        uint32_t trace_buffer_kb;      /* what the service buffers before it must write */
        bool discard_when_full;        /* fill_policy DISCARD: keep the oldest, not the newest */
        bool write_into_file;
        uint32_t file_write_period_ms; /* with write_into_file, clamped to Perfetto's range */
        uint64_t max_file_size_bytes;  /* 0: unlimited */
        bool compress;                 /* compression_type DEFLATE: bundles as compressed_packets */
        uint8_t *trace_config;         /* the packed TraceConfig, echoed into the trace */
        size_t trace_config_len;
        /* Kernel addresses as the kernel wrote them: for root and holders of
         * org.tracebus.manage. Otherwise a keyed hash, as kptr_restrict would. */
        bool kernel_pointers_raw;
        uint32_t max_process_entries;  /* tracebusd.conf's MaxProcessEntries; 0: process-scan.h's default */
        /* What the service skips or changes of the config, one sentence each ("ftrace event
         * 'sched/sched_blocked_reason' does not exist on this kernel: skipped"): told in
         * the Start reply, the Session's Warnings property, the CLI's stderr and the trace.
         * At most SESSION_MAX_WARNINGS, the last saying how many more were left out. */
        char **warnings;
        size_t n_warnings_dropped;

        /* helper "tracecfg": TraceConfig's own fields (service/session-config-trace.c). */
        char *unique_session_name;     /* NULL: none; else one live session of it per user */
        bool disable_clock_snapshotting, disable_trace_config, disable_system_info, disable_service_events;
        uint32_t snapshot_interval_ms; /* clock snapshots and sync markers */
        bool has_trace_uuid;           /* trace_uuid_msb/lsb: the TraceUuid packet's, else random */
        int64_t trace_uuid_msb, trace_uuid_lsb;
        uint32_t flush_period_ms;      /* 0: none */
        uint32_t stop_timeout_ms;      /* data_source_stop_timeout_ms: bounds the final drain */
} SessionConfig;

#define SESSION_MAX_WARNINGS 64u

void session_config_done(SessionConfig *c);

/* Adds a warning to @c (printf format). Returns 0 or -ENOMEM. */
int session_config_warn(SessionConfig *c, const char *fmt, ...) _printf_(2, 3);

static inline void trace_config_freep(Tracebus__TraceConfig **tc) {
        if (*tc)
                tracebus__trace_config__free_unpacked(*tc, NULL);
}

/* Parses a text-format TraceConfig. -EINVAL with a message in *ret_error on bad input. */
int session_config_parse_text(const char *text, Tracebus__TraceConfig **ret, char **ret_error);

/* Unpacks a binary TraceConfig (what `perfetto -c FILE` without --txt reads). */
int session_config_parse_binary(const void *data, size_t size, Tracebus__TraceConfig **ret, char **ret_error);

/* Every event under @tracefs_root whose "group/name" or name matches the shell glob @glob,
 * sorted, from the event index (service/event-index.c), re-read if older than a second. */
int session_config_list_events(const char *tracefs_root, const char *glob, char ***ret);

/* Reads the kernel's events under @tracefs_root again now, whenever it was last read: for
 * when tracefs said an event of a loaded config is gone. */
int session_config_reread_events(const char *tracefs_root);

/* Builds the TraceConfig that Start's Events/DurationMs/BufferSizeKb options describe. */
int session_config_from_options(char **events, uint32_t duration_ms, uint32_t buffer_size_kb,
                                Tracebus__TraceConfig **ret);

/* Validates @tc against the limits and the kernel's events under @tracefs_root, which
 * the event index resolves ("group/name", "group/ *", a bare "name"): no tracefs walk per
 * name. -EINVAL: bad value (message in *ret_error); -ENOENT: unknown events (their
 * names, comma-separated, in *ret_error). */
int session_config_load(const Tracebus__TraceConfig *tc, const char *tracefs_root,
                        SessionConfig *ret, char **ret_error);

/* session-config-trace.c: TraceConfig's own fields (unique_session_name, builtin_data_sources,
 * trace_uuid, flush and stop periods, incremental state, compression, trace_filter, ...),
 * each honoured or told as a warning. -EINVAL with *ret_error on a bad value. */
#define SESSION_DEFAULT_SNAPSHOT_INTERVAL_MS 10000u   /* Perfetto's kDefaultSnapshotsIntervalMs */
#define SESSION_DEFAULT_STOP_TIMEOUT_MS 5000u         /* Perfetto's kDataSourceStopTimeoutMs */
#define SESSION_MAX_UNIQUE_NAME 256u
int session_config_load_trace(const Tracebus__TraceConfig *tc, SessionConfig *c, char **ret_error);
/* Adds to @c a warning for every field, data source and unknown field (binary configs)
 * of @tc that tracebus skips: the table of service/session-config-fields.c. Returns 0 or
 * -ENOMEM. */
int session_config_check_fields(const Tracebus__TraceConfig *tc, SessionConfig *c);
