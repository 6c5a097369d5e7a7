/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.pb-c.h"
#include "ftrace-parser.h"
#include "macro.h"
#include "trace-filter.h"
#include "sys-stats-types.h"

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

/* One of TraceConfig.buffers. */
typedef struct SessionBuffer {
        uint32_t size_kb;
        bool discard;                  /* fill_policy DISCARD; else RING_BUFFER */
} SessionBuffer;

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
        /* ftfilter: FtraceConfig's remaining options, checked by session-config-ftrace.c and
         * applied to the session's instance by ftrace-options.c. */
        char *syscall_filter;          /* "id == 0 || id == 1", for raw_syscalls; NULL: all */
        uint32_t *tids_to_trace;       /* written to set_event_pid */
        size_t n_tids_to_trace;
        char *tracing_cpumask;         /* hex digits and commas; NULL: every CPU */
        char **tracefs_options;        /* "name" then "0" or "1", pairs, names allowlisted */
        bool mono_raw_clock;           /* trace_clock mono_raw, FtraceClock MONO_RAW in bundles */
        uint32_t drain_buffer_percent; /* the instance's buffer_percent, the pipes polled; 0: off */
        FtracePrintRule *print_rules;  /* ftrace/print filter, strings owned */
        size_t n_print_rules;
        /* Helper "buffers" (service/config/session-config-buffers.c): TraceConfig.buffers as
         * configured, each with its own size and fill policy; their sizes add up to at
         * most SESSION_MAX_TRACE_BUFFER_KB. The linux.ftrace data source's buffer. */
        SessionBuffer *buffers;
        size_t n_buffers;
        uint32_t ftrace_buffer;

        /* linux.sys_stats, linux.system_info, linux.sysfs_power (helper "sysstats"). */
        SysStatsSelection sys_stats;
        /* procstats: linux.process_stats (session-config-procstats.c, process-stats.c) */
        bool process_stats;                   /* the data source is in the config */
        uint32_t process_stats_poll_ms;       /* 0: no periodic ProcessStats */
        uint32_t process_stats_cache_ttl_ms;  /* 0: a value is written only when it changes */
        uint32_t process_stats_target_buffer;
        bool process_stats_smaps;             /* scan_smaps_rollup */
        bool process_stats_runtime;           /* record_process_runtime */
        bool process_age;                     /* record_process_age: ProcessTree's start times */
        bool process_skip_main_thread;        /* skip_main_thread_message */
        bool process_initial_dump_off;        /* quirk DISABLE_INITIAL_DUMP: no scan at start */
        bool process_on_demand_off;           /* quirk DISABLE_ON_DEMAND: no scan of new pids */
        /* procstats: linux.systemd_journald (session-config-journald.c, journald.c) */
        bool journald;                        /* the data source is in the config, and a journal here */
        uint32_t journald_min_prio;           /* entries of PRIORITY up to this (7: all) */
        char **journald_identifiers;          /* only these SYSLOG_IDENTIFIERs, when not NULL */
        char **journald_units;                /* only these _SYSTEMD_UNITs, when not NULL */
        uint32_t journald_target_buffer;
        /* Helper "warn": the ftrace setup errors, written into the FtraceStats at the start
         * of the trace (unknown_ftrace_events, failed_ftrace_events, atrace_errors), which
         * trace_processor counts in its ftrace_setup_errors stat. Each is also a warning. */
        char **unknown_ftrace_events;  /* "group/name" asked for, not on this kernel */
        char **failed_ftrace_events;   /* on this kernel, but enabling it failed */
        char **atrace_errors;          /* atrace categories and apps that enable nothing here */
        bool strict_events;            /* SESSION_CONFIG_STRICT_EVENTS: no event of the list exists: refused */
        char **data_sources;           /* the config's data sources tracebus runs (DataSources property) */
        /* ftgraph (issue 22, session-config-ftgraph.c): kernel symbols, the function_graph
         * tracer, kprobes. */
        bool symbolize_ksyms;          /* code addresses as iids of InternedData.kernel_symbols */
        bool ksyms_retain;             /* ksyms_mem_policy KSYMS_RETAIN: the table outlives the session */
        bool function_graph;           /* current_tracer function_graph in the instance */
        char **function_filters;       /* set_ftrace_filter; NULL: every function */
        char **function_graph_roots;   /* set_graph_function; NULL: every function */
        uint32_t function_graph_max_depth; /* 0: the kernel's default, UINT32_MAX: unlimited */
        char **kprobes;                /* "p:SYMBOL" (kprobe) and "r:SYMBOL" (kretprobe) */
        bool needs_kprobes_action;     /* kprobes or function tracing: org.tracebus.kprobes */

        /* helper "tracecfg": TraceConfig's own fields (service/config/session-config-trace.c). */
        char *unique_session_name;     /* NULL: none; else one live session of it per user */
        bool disable_clock_snapshotting, disable_trace_config, disable_system_info, disable_service_events;
        uint32_t snapshot_interval_ms; /* clock snapshots and sync markers */
        bool has_trace_uuid;           /* trace_uuid_msb/lsb: the TraceUuid packet's, else random */
        int64_t trace_uuid_msb, trace_uuid_lsb;
        uint32_t flush_period_ms;      /* 0: none */
        uint32_t stop_timeout_ms;      /* data_source_stop_timeout_ms: bounds the final drain */

        /* helper "tracefilter": TraceConfig.trace_filter (service/config/session-config-filter.c). */
        TraceFilter *trace_filter;     /* NULL: none; the recorder's writer applies it */

        /* helper "perf" (issue 24): linux.perf (service/sources/perf/session-config-perf.c, perf-*.c). */
        bool perf;                       /* the data source is in the config */
        uint32_t perf_target_buffer;
        uint32_t perf_counter;           /* PerfEvents.Counter of the timebase; 0 for a tracepoint */
        uint32_t perf_type;              /* perf_event_attr type and config */
        uint64_t perf_event_config;
        char *perf_tracepoint;           /* a tracepoint timebase's "group:name", NULL: a counter */
        char *perf_tracepoint_filter;    /* its filter, NULL: none */
        char *perf_timebase_name;        /* Timebase.name, NULL: none */
        bool perf_freq;                  /* perf_interval is a frequency (Hz), else a period */
        uint64_t perf_interval;
        bool perf_callstacks;            /* callstack_sampling: samples with their callchain */
        bool perf_kernel_frames;         /* asked for; kept only with org.tracebus.manage */
        bool perf_user_frames;
        bool perf_unwind_dwarf;          /* UNWIND_DWARF asked for (frame pointers used) */
        int32_t *perf_target_pids, *perf_exclude_pids;
        size_t perf_n_target_pids, perf_n_exclude_pids;
        char **perf_target_cmdlines, **perf_exclude_cmdlines;
        uint32_t perf_additional_cmdline_count;
        uint32_t perf_process_shard_count;
        uint32_t perf_ring_pages;        /* data pages per CPU, a power of two */
        uint32_t perf_read_period_ms;
        uint64_t perf_max_enqueued_kb;   /* samples read but not yet written */
        uint32_t perf_max_memory_kb;     /* the sampler's interning tables and caches */
        bool perf_manage;                /* the caller holds org.tracebus.manage (or is root) */
        /* helper "rotate": Start's RotateEveryMs, RotateBytes and RotateKeep
         * (service/config/session-config-rotate.c); all 0: one file, no rotation. */
        uint64_t rotate_every_ms;      /* a new chunk this often */
        uint64_t rotate_bytes;         /* a new chunk once this much went into the current one */
        uint32_t rotate_keep;          /* 0: every chunk kept; else the newest N */
        /* helper "triggers" (issue 23): TraceConfig.trigger_config (session-config-triggers.c). */
        int trigger_mode;              /* a SessionTriggerMode; SESSION_TRIGGER_NONE: no triggers */
        uint32_t trigger_timeout_ms;   /* START: armed at most this; STOP, CLONE: the end without one */
        bool trigger_clone_if_available; /* use_clone_snapshot_if_available: CLONE, else STOP */
        struct SessionTrigger *triggers;
        size_t n_triggers;
        /* helper "idle": the recorder wakes every drain_period_ms only when the config asked
         * for it (drain_period_ms, flush_period_ms); else on the buffers' watermark. Stop's
         * final drain reads this many CPUs at once (tracebusd.conf StopDrainThreads=). */
        bool drain_period_set;
        uint32_t stop_drain_threads;   /* 0 or 1: one CPU after another */
} SessionConfig;

/* perf (issue 24): linux.perf's defaults (Perfetto's) and caps. */
#define PERF_DEFAULT_FREQUENCY 10u
#define PERF_DEFAULT_RING_PAGES 128u
#define PERF_MAX_RING_PAGES 1024u
#define PERF_DEFAULT_READ_PERIOD_MS 100u
#define PERF_DEFAULT_MAX_ENQUEUED_KB (8u * 1024u)
#define PERF_DEFAULT_MAX_MEMORY_KB (64u * 1024u)
#define PERF_MAX_SCOPE_ENTRIES 64u
#define PERF_MAX_CMDLINE_LEN 256u
#define PERF_MAX_FILTER_LEN 1024u
/* service/sources/perf/session-config-perf.c: the linux.perf data source of @tc into @c; a tracepoint
 * timebase is looked up under the tracefs @root. -EINVAL with *ret_error on a bad value. */
int session_config_load_perf(const Tracebus__TraceConfig *tc, const char *root, SessionConfig *c, char **ret_error);
void session_config_perf_done(SessionConfig *c);

/* Perfetto's minimum proc_stats_poll_ms: a shorter one is raised, with a warning. */
#define PROCESS_STATS_MIN_POLL_MS 100u

/* session-config-procstats.c: the linux.process_stats data source, into @c. */
int session_config_load_process_stats(const Tracebus__TraceConfig *tc, SessionConfig *c);
/* session-config-journald.c: the linux.systemd_journald data source, into @c. */
int session_config_load_journald(const Tracebus__TraceConfig *tc, SessionConfig *c);
/* Both of the above. */
int session_config_load_process_sources(const Tracebus__TraceConfig *tc, SessionConfig *c);

#define SESSION_MAX_WARNINGS 64u

void session_config_done(SessionConfig *c);

/* session-config-ftrace.c: the FtraceConfig options beyond events and sizes, from every
 * linux.ftrace data source of @tc, checked (-EINVAL, the field named in *ret_error) or
 * turned into warnings; after the events were resolved, as it adds and drops some. */
int session_config_load_ftrace_options(const Tracebus__TraceConfig *tc, const char *tracefs_root,
                                       SessionConfig *c, char **ret_error);
void session_config_ftrace_done(SessionConfig *c);

/* session-config-filter.c: TraceConfig.trace_filter into c->trace_filter; -EINVAL with
 * *ret_error naming trace_filter for a bad bytecode or string rule. */
int session_config_load_filter(const Tracebus__TraceConfig *tc, SessionConfig *c, char **ret_error);

/* Sets *ret_error (when not NULL) to the message (printf format) and returns -EINVAL: how
 * every loader of the config refuses a value. */
int session_config_error(char **ret_error, const char *fmt, ...) _printf_(2, 3);

/* Adds a warning to @c (printf format). Returns 0 or -ENOMEM. */
int session_config_warn(SessionConfig *c, const char *fmt, ...) _printf_(2, 3);

/* Appends @names to *@ret, the first @max_names of at most @max_len bytes; each other one
 * is left out with a warning naming @source's field @what. Returns 0 or -ENOMEM. */
int session_config_copy_names(SessionConfig *c, const char *source, const char *what, char **names, size_t n,
                              size_t max_names, size_t max_len, char ***ret);

static inline void trace_config_freep(Tracebus__TraceConfig **tc) {
        if (*tc)
                tracebus__trace_config__free_unpacked(*tc, NULL);
}

/* session-config-atrace.c (helper "warn"): what loading skipped, as warnings and setup
 * errors. @unknown holds the first of the @n_unknown event names that resolved to
 * nothing; the atrace categories and apps of @tc are checked against c->events. */
int session_config_note_unknown_events(SessionConfig *c, char **unknown, size_t n_unknown);
int session_config_load_atrace(const Tracebus__TraceConfig *tc, SessionConfig *c);
/* What ftrace_events and atrace_categories of the linux.ftrace data sources add to the
 * events to resolve: the categories' kernel events, and ftrace/print for atrace. Calls
 * @select for each pattern; the events of a category this kernel lacks are no error. */
int session_config_atrace_patterns(const Tracebus__FtraceConfig *fc,
                                   int (*select)(const char *pattern, void *userdata), void *userdata);

/* The data sources of @tc, one after the other: the next one at or after index *@i whose
 * name is @name (NULL: any named one), *@i left on it; NULL when there is none. */
const Tracebus__DataSourceConfig *session_config_next_source(const Tracebus__TraceConfig *tc, const char *name,
                                                             size_t *i);
/* The next linux.ftrace data source that has an ftrace_config, as above: its FtraceConfig. */
const Tracebus__FtraceConfig *session_config_next_ftrace(const Tracebus__TraceConfig *tc, size_t *i);

/* Loops over @tc's data sources named @name (NULL: all named ones), in the config's order. */
#define FOREACH_CONFIG_SOURCE(ds, tc, name) \
        for (size_t ds##_index = 0; ((ds) = session_config_next_source((tc), (name), &ds##_index)); ds##_index++)
/* Loops over the FtraceConfig of every linux.ftrace data source of @tc that has one. */
#define FOREACH_FTRACE_CONFIG(fc, tc) \
        for (size_t fc##_index = 0; ((fc) = session_config_next_ftrace((tc), &fc##_index)); fc##_index++)

/* Parses a text-format TraceConfig. -EINVAL with a message in *ret_error on bad input. */
int session_config_parse_text(const char *text, Tracebus__TraceConfig **ret, char **ret_error);

/* Unpacks a binary TraceConfig (what `perfetto -c FILE` without --txt reads). */
int session_config_parse_binary(const void *data, size_t size, Tracebus__TraceConfig **ret, char **ret_error);

/* Every event under @tracefs_root whose "group/name" or name matches the shell glob @glob,
 * sorted, from the event index (service/kernel/event-index.c), re-read if older than a second. */
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

/* How a TraceConfig is treated. By default as Perfetto does: ftrace events and features
 * this kernel lacks are warnings, and a config left with nothing of its own to record still
 * starts (service packets, the setup errors in FtraceStats). STRICT_EVENTS is for the
 * names a user typed as tracebus's own list (Start's Events option): when none of them
 * exists, -ENOENT (UnknownEvent), as a typo should be. */
typedef enum SessionConfigFlags {
        SESSION_CONFIG_STRICT_EVENTS = 1 << 0,
} SessionConfigFlags;

/* The Session's DataSources: @tc's data sources tracebus runs, into c->data_sources
 * (service/config/session-config-fields.c, which holds the rules). */
int session_config_load_source_names(const Tracebus__TraceConfig *tc, SessionConfig *c);

int session_config_load_flags(const Tracebus__TraceConfig *tc, const char *tracefs_root, SessionConfigFlags flags,
                              SessionConfig *ret, char **ret_error);

/* ftgraph (issue 22): service/config/session-config-ftgraph.c. */
/* Caps on what a config may ask of the kernel's function tracing and probes. */
#define FTGRAPH_MAX_NAME 128u          /* a function name or glob */
#define FTGRAPH_MAX_FUNCTIONS 256u     /* function_filters, and function_graph_roots */
#define FTGRAPH_MAX_KPROBES 64u        /* kprobes and kretprobes together */

/* symbolize_ksyms, ksyms_mem_policy, enable_function_graph and its lists, kprobe_events
 * of every linux.ftrace data source of @tc into @c (SessionConfig's ftgraph block);
 * what this kernel lacks (under the tracefs @root) is a warning. -EINVAL with a message
 * in *ret_error for a name that is not a function's. */
int session_config_load_ftgraph(const Tracebus__TraceConfig *tc, const char *root, SessionConfig *c,
                                char **ret_error);
void session_config_ftgraph_done(SessionConfig *c);

/* session-config-trace.c: TraceConfig's own fields (unique_session_name, builtin_data_sources,
 * trace_uuid, flush and stop periods, incremental state, compression, trace_filter, ...),
 * each honoured or told as a warning. -EINVAL with *ret_error on a bad value. */
#define SESSION_DEFAULT_SNAPSHOT_INTERVAL_MS 10000u   /* Perfetto's kDefaultSnapshotsIntervalMs */
#define SESSION_MAX_UNIQUE_NAME 256u
int session_config_load_trace(const Tracebus__TraceConfig *tc, SessionConfig *c, char **ret_error);
/* Adds to @c a warning for every field, data source and unknown field (binary configs)
 * of @tc that tracebus skips: the table of service/config/session-config-fields.c. Returns 0 or
 * -ENOMEM. */
int session_config_check_fields(const Tracebus__TraceConfig *tc, SessionConfig *c);
/* session-config-buffers.c: the buffers and where each data source writes. Fills
 * c->buffers, c->n_buffers, c->ftrace_buffer and trace_buffer_kb (their sum); -EINVAL
 * (message in *ret_error) for a size over the limit or a target buffer that does not exist. */
int session_config_load_buffers(const Tracebus__TraceConfig *tc, SessionConfig *c, char **ret_error);
/* Whether @tc has a data source other than linux.ftrace: a config without ftrace events
 * still records something. */
bool session_config_has_other_sources(const Tracebus__TraceConfig *tc);
/* The index in tc->buffers that data source @ds writes to: its target_buffer_name if set,
 * else its target_buffer. -EINVAL with a message naming @ds when there is no such buffer. */
int session_config_target_buffer(const Tracebus__TraceConfig *tc, const Tracebus__DataSourceConfig *ds,
                                 uint32_t *ret, char **ret_error);
/* Reads the linux.sys_stats, linux.system_info and linux.sysfs_power data sources of @tc
 * into @c->sys_stats (service/sources/sysstats/session-config-sysstats.c). What this kernel lacks, a period
 * under 10 ms, a counter tracebus does not read: warnings, never errors. */
int session_config_load_sys_stats(const Tracebus__TraceConfig *tc, SessionConfig *c);

/* session-config-rotate.c (helper "rotate"): Start's rotation options, checked against
 * the limits below and the loaded config (write_into_file only), into @c. -EINVAL with
 * the option named in *ret_error. */
#define SESSION_MIN_ROTATE_EVERY_MS 1000u
#define SESSION_MAX_ROTATE_EVERY_MS (UINT64_C(366) * 24 * 3600 * 1000)
#define SESSION_MIN_ROTATE_BYTES (1024u * 1024u)
#define SESSION_MAX_ROTATE_KEEP 100000u

typedef struct SessionRotation {
        uint64_t every_ms, bytes;
        uint32_t keep;
        bool has_every, has_bytes, has_keep;
} SessionRotation;

int session_config_load_rotation(SessionConfig *c, const SessionRotation *r, char **ret_error);
/* helper "triggers" (issue 23): TraceConfig.trigger_config, as Perfetto v58's service
 * checks it (tracing_service_impl.cc EnableTracing) and acts on it (ActivateTriggers). */
typedef enum SessionTriggerMode {
        SESSION_TRIGGER_NONE = 0,
        SESSION_TRIGGER_START = 1,     /* START_TRACING: armed, records from the first trigger */
        SESSION_TRIGGER_STOP = 2,      /* STOP_TRACING: ends stop_delay_ms after the first trigger */
        SESSION_TRIGGER_CLONE = 4,     /* CLONE_SNAPSHOT: a snapshot stop_delay_ms after each trigger */
} SessionTriggerMode;

#define SESSION_TRIGGER_NAME_MAX 64u        /* bytes of a trigger's name */
#define SESSION_MAX_TRIGGERS 64u            /* triggers in one config */
#define SESSION_TRIGGER_REGEX_MAX 256u      /* bytes of a producer_name_regex */
#define SESSION_TRIGGER_MAX_PER_24H 1000u   /* max_per_24_h kept: the history is per session */

typedef struct SessionTrigger {
        char *name;
        char *producer_regex;          /* NULL: any caller; else a POSIX ERE matched whole */
        uint32_t stop_delay_ms;
        uint32_t max_per_24_h;         /* 0: no limit */
        double skip_probability;       /* 0: never skipped; >= 1: always */
} SessionTrigger;

int session_config_load_triggers(const Tracebus__TraceConfig *tc, SessionConfig *c, char **ret_error);
void session_config_triggers_done(SessionConfig *c);
/* CLONE_SNAPSHOT with the caller's Output fd (@caller_fd): -EINVAL and why in *ret_error;
 * when it came from use_clone_snapshot_if_available, STOP_TRACING instead, with a warning. */
int session_config_check_trigger_output(SessionConfig *c, bool caller_fd, char **ret_error);
/* Whether trigger names are well formed: 1 to 64 bytes, printable ASCII (ActivateTriggers). */
bool session_trigger_name_valid(const char *name);
