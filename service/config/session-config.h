/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.pb-c.h"
#include "ftrace-parser.h"
#include "macro.h"
#include "trace-filter.h"
#include "whole-regex.h"

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

/* How the recorder describes processes (ProcessTree), in every session: the service
 * describes them as if linux.process_stats with scan_all_processes_on_start and
 * record_thread_names were always there. That data source's options change it, and its
 * loader sets these. */
typedef struct SessionProcessTree {
        bool age;                      /* record_process_age: each process's start time */
        bool skip_main_thread;         /* skip_main_thread_message */
        bool initial_dump_off;         /* quirk DISABLE_INITIAL_DUMP: no scan at start */
        bool on_demand_off;            /* quirk DISABLE_ON_DEMAND: no scan of new pids */
        /* Whose trace it is, set once polkit answered (sources/process/): its owner's
         * processes are described whole, and so are the others' for root and the holders
         * of org.tracebus.manage (owner_sees_all); else by pid, parent and comm, and not
         * at all past /proc's hidepid= (kernel/process-view.h). */
        uid_t owner_uid;
        bool owner_sees_all;
} SessionProcessTree;

/* One data source's validated section (sources/data-source.h; linux.ftrace has none): the
 * config owns it and frees it with @free, but never reads it; the source that loaded it does. */
/* A data source that apps built with the Perfetto SDK record (session-config-producers.c):
 * every connected producer that registered @name, passes the name filters and may be set
 * up by the session's owner gets @config, its DataSourceConfig as the config wrote it. */
typedef struct SessionProducerSource {
        char *name;
        uint8_t *config;               /* packed DataSourceConfig, at most SESSION_MAX_PRODUCER_CONFIG_BYTES */
        size_t config_len;
        uint32_t buffer;               /* the index in buffers of its target */
        char **name_filter;            /* producer_name_filter: exact names; NULL: any */
        WholeRegex **name_regexes;     /* producer_name_regex_filter, compiled */
        size_t n_name_regexes;
} SessionProducerSource;

#define SESSION_MAX_PRODUCER_SOURCES 32u        /* the SDK registers at most 32 per app */
#define SESSION_MAX_PRODUCER_CONFIG_BYTES (32u * 1024u)  /* one command frame must hold it */
#define SESSION_MAX_PRODUCER_FILTERS 16u        /* names, and regexes, per data source */
#define SESSION_MAX_PRODUCER_NAME 256u          /* a data source's or a producer's name, NUL included */

typedef struct SessionSection {
        void *data;
        void (*free)(void *data);
} SessionSection;

/* How many data sources the registry may hold (sources/data-sources.c checks it). */
#define SESSION_MAX_SECTIONS 8u

typedef struct SessionConfig {
        /*
         * linux.ftrace's part: its section, kept in these fields of the config rather than a
         * struct of its own because the recorder and the bus objects read them as they are.
         * Loaded by config/ itself before every other section (the buffers and the other
         * sources refer to its events); sources/ftrace/ftrace-source.c, linux.ftrace in the
         * registry, sets up the session's instance from them.
         */
        char **events;                 /* "group/name", wildcards and bare names resolved */
        uint32_t buffer_size_kb;       /* kernel buffer per CPU */
        bool compact_sched;
        /* FtraceConfig's remaining options, checked by session-config-ftrace.c and applied
         * to the session's instance by sources/ftrace/ftrace-options.c. */
        char *syscall_filter;          /* "id == 0 || id == 1", for raw_syscalls; NULL: all */
        uint32_t *tids_to_trace;       /* written to set_event_pid */
        size_t n_tids_to_trace;
        char *tracing_cpumask;         /* hex digits and commas; NULL: every CPU */
        char **tracefs_options;        /* "name" then "0" or "1", pairs, names allowlisted */
        bool mono_raw_clock;           /* trace_clock mono_raw, FtraceClock MONO_RAW in bundles */
        uint32_t drain_buffer_percent; /* the instance's buffer_percent, the pipes polled; 0: off */
        FtracePrintRule *print_rules;  /* ftrace/print filter, strings owned */
        size_t n_print_rules;
        /* Kernel symbols, the function_graph tracer, kprobes (session-config-ftgraph.c). */
        bool symbolize_ksyms;          /* code addresses as iids of InternedData.kernel_symbols */
        bool ksyms_retain;             /* ksyms_mem_policy KSYMS_RETAIN: the table outlives the session */
        bool function_graph;           /* current_tracer function_graph in the instance */
        char **function_filters;       /* set_ftrace_filter; NULL: every function */
        char **function_graph_roots;   /* set_graph_function; NULL: every function */
        uint32_t function_graph_max_depth; /* 0: the kernel's default, UINT32_MAX: unlimited */
        char **kprobes;                /* "p:SYMBOL" (kprobe) and "r:SYMBOL" (kretprobe) */
        bool needs_kprobes_action;     /* kprobes or function tracing: org.tracebus.kprobes */
        /* The ftrace setup errors, written into the FtraceStats at the start of the trace
         * (unknown_ftrace_events, failed_ftrace_events, atrace_errors), which
         * trace_processor counts in its ftrace_setup_errors stat. Each is also a warning. */
        char **unknown_ftrace_events;  /* "group/name" asked for, not on this kernel */
        char **failed_ftrace_events;   /* on this kernel, but enabling it failed */
        char **atrace_errors;          /* atrace categories and apps that enable nothing here */
        bool strict_events;            /* SESSION_CONFIG_STRICT_EVENTS: no event of the list exists: refused */

        /* The session's own: its periods, the service's buffers, its output, who reads it. */
        uint32_t drain_period_ms;
        uint32_t duration_ms;          /* 0: until stopped */
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
        /* The apps of every user are set up for the session, not only its owner's: for
         * root and holders of org.tracebus.manage at Start (core/session-producers.c). */
        bool producers_any_uid;
        /* The events a caller without org.tracebus.manage may not record, noted when the
         * events were resolved (session-config-access.c): every one, sorted, and the first
         * few the config named (with how many it named), which refuse such a caller's Start. */
        char **refused_events;
        size_t n_refused_events;
        char **refused_named;
        size_t n_refused_named;
        uint32_t max_process_entries;  /* tracebusd.conf's MaxProcessEntries; 0: process-scan.h's default */
        /* What the service skips or changes of the config, one sentence each ("ftrace event
         * 'sched/sched_blocked_reason' does not exist on this kernel: skipped"): told in
         * the Start reply, the Session's Warnings property, the CLI's stderr and the trace.
         * At most SESSION_MAX_WARNINGS, the last saying how many more were left out. */
        char **warnings;
        size_t n_warnings_dropped;
        /* TraceConfig.buffers as configured (session-config-buffers.c), each with its own
         * size and fill policy; their sizes add up to at most SESSION_MAX_TRACE_BUFFER_KB.
         * ftrace_buffer is the one the linux.ftrace data source writes to. */
        SessionBuffer *buffers;
        size_t n_buffers;
        uint32_t ftrace_buffer;

        /* The data sources' sections, in the registry's order (sources/data-sources.c): a
         * NULL data where the config has none of that source's data sources, and always for
         * linux.ftrace, whose part is the fields above. */
        SessionSection sections[SESSION_MAX_SECTIONS];
        SessionProcessTree process_tree;
        char **data_sources;           /* the config's data sources tracebus runs (DataSources property) */
        SessionProducerSource *producer_sources; /* recorded by apps: track_event, gpu.*, custom names */
        size_t n_producer_sources;

        /* TraceConfig's own fields (session-config-trace.c). */
        char *unique_session_name;     /* NULL: none; else one live session of it per user */
        bool disable_clock_snapshotting, disable_trace_config, disable_system_info, disable_service_events;
        uint32_t snapshot_interval_ms; /* clock snapshots and sync markers */
        bool has_trace_uuid;           /* trace_uuid_msb/lsb: the TraceUuid packet's, else random */
        int64_t trace_uuid_msb, trace_uuid_lsb;
        uint32_t flush_period_ms;      /* 0: none */
        uint32_t incremental_clear_period_ms; /* the apps clear their interned state; 0: never */
        uint32_t stop_timeout_ms;      /* data_source_stop_timeout_ms: bounds the final drain */

        /* TraceConfig.trace_filter (session-config-filter.c). */
        TraceFilter *trace_filter;     /* NULL: none; the recorder's writer applies it */

        /* Start's RotateEveryMs, RotateBytes and RotateKeep (session-config-rotate.c); all
         * 0: one file, no rotation. */
        uint64_t rotate_every_ms;      /* a new chunk this often */
        uint64_t rotate_bytes;         /* a new chunk once this much went into the current one */
        uint32_t rotate_keep;          /* 0: every chunk kept; else the newest N */
        /* TraceConfig.trigger_config (session-config-triggers.c). */
        int trigger_mode;              /* a SessionTriggerMode; SESSION_TRIGGER_NONE: no triggers */
        uint32_t trigger_timeout_ms;   /* START: armed at most this; STOP, CLONE: the end without one */
        bool trigger_clone_if_available; /* use_clone_snapshot_if_available: CLONE, else STOP */
        struct SessionTrigger *triggers;
        size_t n_triggers;
        /* The recorder wakes every drain_period_ms only when the config asked for it
         * (drain_period_ms, flush_period_ms); else on the buffers' watermark. Stop's final
         * drain reads this many CPUs at once (tracebusd.conf StopDrainThreads=). */
        bool drain_period_set;
        uint32_t stop_drain_threads;   /* 0 or 1: one CPU after another */
} SessionConfig;

#define SESSION_MAX_WARNINGS 64u

void session_config_done(SessionConfig *c);

/* session-config-ftrace.c: the FtraceConfig options beyond events and sizes, from every
 * linux.ftrace data source of @tc, checked (-EINVAL, the field named in *ret_error) or
 * turned into warnings; after the events were resolved, as it adds and drops some. */
int session_config_load_ftrace_options(const Tracebus__TraceConfig *tc, const char *tracefs_root,
                                       SessionConfig *c, char **ret_error);
void session_config_ftrace_done(SessionConfig *c);

/* session-config-access.c: whether a caller without org.tracebus.manage may record the
 * kernel event "group/name" @event, by the event's group and name alone (a dynamic event
 * is refused whatever its name); *@ret_reason, when not NULL, says why in a few words. */
bool session_config_event_allowed(const char *event, const char **ret_reason);
/* Notes which events of @sel such a caller may not record, into c->refused_*. */
struct EventSelection;
int session_config_note_refused_events(SessionConfig *c, const struct EventSelection *sel);
/* For such a caller: -EKEYREJECTED when the config named a refused event, or when none of
 * its events is left (c->refused_named lists them then); otherwise the refused events are
 * taken out of c->events, each group of them a warning and listed in failed_ftrace_events. */
int session_config_restrict_to_record_only(SessionConfig *c);
/* For a caller who may record every event: the notes dropped. */
void session_config_forget_refused(SessionConfig *c);
/* The sentence that refuses the start of session_config_restrict_to_record_only(), naming
 * the events and the first one's reason; NULL when none was refused (or out of memory). */
char *session_config_refusal_text(const SessionConfig *c);

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

/* session-config-atrace.c: what loading skipped, as warnings and setup errors. @unknown
 * holds the first of the @n_unknown event names that resolved to nothing; the atrace categories and apps of @tc are checked against c->events. */
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
 * names, comma-separated, in *ret_error). This is the TraceConfig's own part and
 * linux.ftrace's: the other data sources' sections are loaded after it, by the
 * registry of sources/data-sources.c (data_sources_load()). */
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

/* session-config-ftgraph.c: caps on what a config may ask of the kernel's function
 * tracing and probes. */
#define FTGRAPH_MAX_NAME 128u          /* a function name or glob */
#define FTGRAPH_MAX_FUNCTIONS 256u     /* function_filters, and function_graph_roots */
#define FTGRAPH_MAX_KPROBES 64u        /* kprobes and kretprobes together */

/* symbolize_ksyms, ksyms_mem_policy, enable_function_graph and its lists, kprobe_events
 * of every linux.ftrace data source of @tc into @c (SessionConfig's kernel symbols and function tracing fields);
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
/* The index in tc->buffers that data source @ds writes to: its target_buffer_name if set,
 * else its target_buffer. -EINVAL with a message naming @ds when there is no such buffer. */
int session_config_target_buffer(const Tracebus__TraceConfig *tc, const Tracebus__DataSourceConfig *ds,
                                 uint32_t *ret, char **ret_error);

/* session-config-rotate.c: Start's rotation options, checked against
 * the limits below and the loaded config (write_into_file only), into @c. -EINVAL with
 * the option named in *ret_error. */
/* The config's data sources that apps record (session-config-producers.c). */
bool session_config_is_producer_source(const char *name);
int session_config_load_producers(const Tracebus__TraceConfig *tc, SessionConfig *c, char **ret_error);
void session_config_producers_done(SessionConfig *c);
/* Whether a producer named @producer_name passes @s's name filters (none: every producer). */
bool session_producer_source_accepts(const SessionProducerSource *s, const char *producer_name);

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
/* session-config-triggers.c: TraceConfig.trigger_config, as Perfetto v58's service
 * checks it (tracing_service_impl.cc EnableTracing) and acts on it (ActivateTriggers). */
typedef enum SessionTriggerMode {
        SESSION_TRIGGER_NONE = 0,
        SESSION_TRIGGER_START = 1,     /* START_TRACING: armed, records from the first trigger */
        SESSION_TRIGGER_STOP = 2,      /* STOP_TRACING: ends stop_delay_ms after the first trigger */
        SESSION_TRIGGER_CLONE = 4,     /* CLONE_SNAPSHOT: a snapshot stop_delay_ms after each trigger */
} SessionTriggerMode;

#define SESSION_TRIGGER_NAME_MAX 64u        /* bytes of a trigger's name */
#define SESSION_MAX_TRIGGERS 64u            /* triggers in one config */
#define SESSION_TRIGGER_REGEX_MAX WHOLE_REGEX_MAX_PATTERN /* bytes of a producer_name_regex */
#define SESSION_TRIGGER_MAX_PER_24H 1000u   /* max_per_24_h kept: the history is per session */

typedef struct SessionTrigger {
        char *name;
        WholeRegex *producer_regex;    /* NULL: any caller; else compiled at load, matched whole */
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
