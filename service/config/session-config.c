/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "kernel/event-index.h"
#include "session-config.h"
#include "strv.h"
#include "textproto.h"

/* An error lists this many unknown names at most: a caller may send thousands. */
#define UNKNOWN_EVENTS_SHOWN 32u
/* Missing "group/name"s checked in tracefs itself (one stat() each) per config: enough for
 * a probe defined a moment ago, too few to make a walk of tracefs of a list of names. */
#define MISSING_EVENTS_CHECKED 8u

/* Where the events a config names are resolved, and the names that resolved to none. */
typedef struct EventResolution {
        EventIndex *index;
        EventSelection selection;
        char **unknown;          /* the first UNKNOWN_EVENTS_SHOWN */
        size_t n_unknown;
        unsigned n_checked;      /* missing names looked up in tracefs */
        bool index_stale;        /* one of them exists: the index is older than the kernel's list */
        bool mark_renamed;       /* "tracing_mark_write" was asked for: ftrace/print recorded */
} EventResolution;

static void event_resolution_reset(EventResolution *res) {
        event_selection_done(&res->selection);
        res->unknown = strv_free(res->unknown);
        res->n_unknown = 0;
        res->n_checked = 0;
        res->index_stale = false;
        res->mark_renamed = false;
}

static void check_missing_event(EventResolution *res, const char *e) {
        if (res->index_stale || res->n_checked >= MISSING_EVENTS_CHECKED || !strchr(e, '/') || strchr(e, '*'))
                return;
        res->n_checked++;
        res->index_stale = event_index_is_stale_for(res->index, e);
}

void session_config_done(SessionConfig *c) {
        c->events = strv_free(c->events);
        c->trace_config = mfree(c->trace_config);
        c->warnings = strv_free(c->warnings);
        c->n_warnings_dropped = 0;
        session_config_ftrace_done(c);
        c->buffers = mfree(c->buffers);
        c->n_buffers = 0;
        c->unknown_ftrace_events = strv_free(c->unknown_ftrace_events);
        c->data_sources = strv_free(c->data_sources);
        session_config_producers_done(c);
        c->failed_ftrace_events = strv_free(c->failed_ftrace_events);
        c->atrace_errors = strv_free(c->atrace_errors);
        session_config_forget_refused(c);
        session_config_ftgraph_done(c);
        c->unique_session_name = mfree(c->unique_session_name);
        c->trace_filter = trace_filter_free(c->trace_filter);
        for (size_t i = 0; i < SESSION_MAX_SECTIONS; i++) {
                if (c->sections[i].data && c->sections[i].free)
                        c->sections[i].free(c->sections[i].data);
                c->sections[i] = (SessionSection) {};
        }
        session_config_triggers_done(c);
}

int session_config_warn(SessionConfig *c, const char *fmt, ...) {
        _cleanup_free_ char *text = NULL;
        size_t n = strv_length(c->warnings);
        va_list ap;
        int r;

        /* A config of thousands of missing events must not make thousands of warnings:
         * the last slot counts the rest. */
        if (n + 1 >= SESSION_MAX_WARNINGS) {
                c->n_warnings_dropped++;
                if (n + 1 > SESSION_MAX_WARNINGS)
                        free(c->warnings[--n]), c->warnings[n] = NULL;
                if (asprintf(&text, "%zu more warnings left out", c->n_warnings_dropped) < 0)
                        return -ENOMEM;
                return strv_extend(&c->warnings, text);
        }
        va_start(ap, fmt);
        r = vasprintf(&text, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        return strv_extend(&c->warnings, text);
}

int session_config_copy_names(SessionConfig *c, const char *source, const char *what, char **names, size_t n,
                              size_t max_names, size_t max_len, char ***ret) {
        for (size_t i = 0; i < n; i++) {
                int r;

                if (i >= max_names || strlen(names[i]) > max_len)
                        r = session_config_warn(c, "%s: %s entry %zu is past the limit of %zu names of %zu bytes: skipped",
                                                source, what, i, max_names, max_len);
                else
                        r = strv_extend(ret, names[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

int session_config_parse_text(const char *text, Tracebus__TraceConfig **ret, char **ret_error) {
        ProtobufCMessage *m = NULL;
        size_t len = strlen(text);
        int r;

        if (len > SESSION_MAX_CONFIG_BYTES) {
                if (ret_error)
                        *ret_error = strdup("config: the configuration is larger than 1 MiB");
                return -EINVAL;
        }
        r = textproto_parse(&tracebus__trace_config__descriptor, text, len, "config", &m, ret_error);
        if (r < 0)
                return r;
        *ret = (Tracebus__TraceConfig *) m;
        return 0;
}

int session_config_parse_binary(const void *data, size_t size, Tracebus__TraceConfig **ret, char **ret_error) {
        Tracebus__TraceConfig *tc;

        if (size > SESSION_MAX_CONFIG_BYTES) {
                if (ret_error)
                        *ret_error = strdup("the binary configuration is larger than 1 MiB");
                return -EINVAL;
        }
        tc = tracebus__trace_config__unpack(NULL, size, data);
        if (!tc) {
                if (ret_error)
                        *ret_error = strdup("the binary configuration is not a valid TraceConfig message");
                return -EINVAL;
        }
        *ret = tc;
        return 0;
}

int session_config_from_options(char **events, uint32_t duration_ms, uint32_t buffer_size_kb,
                                Tracebus__TraceConfig **ret) {
        /* Built as a text config, so that both ways into a session go through one parser. */
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        FILE *f;

        f = open_memstream(&text, &size);
        if (!f)
                return -ENOMEM;
        if (duration_ms > 0)
                fprintf(f, "duration_ms: %u\n", duration_ms);
        fputs("data_sources { config { name: \"linux.ftrace\" ftrace_config {\n", f);
        if (buffer_size_kb > 0)
                fprintf(f, "  buffer_size_kb: %u\n", buffer_size_kb);
        STRV_FOREACH(e, events) {
                fputs("  ftrace_events: \"", f);
                /* Quote-safe: anything but plain names is refused later anyway. */
                for (const char *p = *e; *p; p++)
                        if (*p != '"' && *p != '\\' && (unsigned char) *p >= 0x20)
                                fputc(*p, f);
                fputs("\"\n", f);
        }
        fputs("} } }\n", f);
        if (fclose(f) != 0)
                return -ENOMEM;

        return session_config_parse_text(text, ret, NULL);
}

int session_config_error(char **ret_error, const char *fmt, ...) {
        va_list ap;

        if (!ret_error)
                return -EINVAL;
        va_start(ap, fmt);
        if (vasprintf(ret_error, fmt, ap) < 0)
                *ret_error = NULL;
        va_end(ap);
        return -EINVAL;
}

static int resolve_events(const Tracebus__FtraceConfig *fc, EventResolution *res, char **ret_error) {
        int r;

        for (size_t i = 0; i < fc->n_ftrace_events; i++) {
                const char *e = fc->ftrace_events[i];

                /* What systrace's text shows for ftrace/print: not a kernel event name. */
                if (strcmp(e, "tracing_mark_write") == 0 || strcmp(e, "ftrace/tracing_mark_write") == 0) {
                        e = "ftrace/print";
                        res->mark_renamed = true;
                }
                r = event_index_select(res->index, e, /* named= */ true, &res->selection);
                if (r == -EINVAL)
                        return session_config_error(ret_error, "'%.128s' is not an event name (expected group/name, group/* or name)", e);
                if (r < 0)
                        return r;
                if (r == 0)
                        check_missing_event(res, e);
                /* A name asked for twice is listed once: the shown ones are few. */
                if (r == 0 && res->n_unknown < UNKNOWN_EVENTS_SHOWN) {
                        r = strv_extend_unique(&res->unknown, e);
                        if (r < 0)
                                return r;
                        res->n_unknown += r;
                } else if (r == 0)
                        res->n_unknown++;
                if (res->selection.n_order > SESSION_MAX_EVENTS)
                        return session_config_error(ret_error, "the events requested expand to more than %u events",
                                         SESSION_MAX_EVENTS);
        }
        return 0;
}

/* An event an atrace category stands for: the ones this kernel lacks are left out. */
static int select_quietly(const char *pattern, void *userdata) {
        EventResolution *res = userdata;
        int r = event_index_select(res->index, pattern, /* named= */ false, &res->selection);

        return r == -EINVAL ? 0 : r;
}

/* Takes the ftrace data sources' settings: events are the union, sizes the largest. */
static int load_ftrace_config(const Tracebus__FtraceConfig *fc, SessionConfig *c, EventResolution *res,
                              char **ret_error) {
        int r;

        if (fc->has_buffer_size_kb && fc->buffer_size_kb > SESSION_MAX_BUFFER_SIZE_KB)
                return session_config_error(ret_error, "buffer_size_kb %u is above the limit of %u KiB per CPU",
                                 fc->buffer_size_kb, SESSION_MAX_BUFFER_SIZE_KB);
        if (fc->has_buffer_size_kb && fc->buffer_size_kb > 0)
                c->buffer_size_kb = MAX(c->buffer_size_kb, fc->buffer_size_kb);
        if (fc->has_drain_period_ms && (fc->drain_period_ms < 1 || fc->drain_period_ms > 60000))
                return session_config_error(ret_error, "drain_period_ms %u is outside 1..60000", fc->drain_period_ms);
        if (fc->has_drain_period_ms) {
                c->drain_period_ms = MIN(c->drain_period_ms, fc->drain_period_ms);
                c->drain_period_set = true;
        }
        /* Perfetto enables compact_sched when the field is unset. */
        if (fc->compact_sched && fc->compact_sched->has_enabled && !fc->compact_sched->enabled)
                c->compact_sched = false;

        if (fc->n_ftrace_events > SESSION_MAX_EVENTS)
                return session_config_error(ret_error, "%zu events requested, at most %u are allowed",
                                 fc->n_ftrace_events, SESSION_MAX_EVENTS);
        r = resolve_events(fc, res, ret_error);
        if (r < 0)
                return r;
        r = session_config_atrace_patterns(fc, select_quietly, res);
        if (r < 0)
                return r;
        if (res->selection.n_order > SESSION_MAX_EVENTS)
                return session_config_error(ret_error, "the events requested expand to more than %u events", SESSION_MAX_EVENTS);
        return 0;
}

const Tracebus__DataSourceConfig *session_config_next_source(const Tracebus__TraceConfig *tc, const char *name,
                                                             size_t *i) {
        for (; *i < tc->n_data_sources; (*i)++) {
                const Tracebus__DataSourceConfig *ds = tc->data_sources[*i]->config;

                if (ds && ds->name && (!name || strcmp(ds->name, name) == 0))
                        return ds;
        }
        return NULL;
}

const Tracebus__FtraceConfig *session_config_next_ftrace(const Tracebus__TraceConfig *tc, size_t *i) {
        const Tracebus__DataSourceConfig *ds;

        for (; (ds = session_config_next_source(tc, "linux.ftrace", i)); (*i)++)
                if (ds->ftrace_config)
                        return ds->ftrace_config;
        return NULL;
}

/* The caps on the work a config asks for, checked before any of it is done. */
static int check_config_size(const Tracebus__TraceConfig *tc, char **ret_error) {
        const Tracebus__FtraceConfig *fc;
        size_t names = 0;

        if (tc->n_data_sources > SESSION_MAX_DATA_SOURCES)
                return session_config_error(ret_error, "%zu data sources, at most %u are allowed",
                                 tc->n_data_sources, SESSION_MAX_DATA_SOURCES);
        FOREACH_FTRACE_CONFIG(fc, tc)
                names += fc->n_ftrace_events + fc->n_atrace_categories;
        if (names > SESSION_MAX_CONFIG_EVENT_NAMES)
                return session_config_error(ret_error, "the linux.ftrace data sources name %zu events together, at most %u are allowed",
                                 names, SESSION_MAX_CONFIG_EVENT_NAMES);
        return 0;
}

static int load_data_sources(const Tracebus__TraceConfig *tc, SessionConfig *c, EventResolution *res,
                             char **ret_error) {
        const Tracebus__FtraceConfig *fc;
        int r;

        FOREACH_FTRACE_CONFIG(fc, tc) {
                r = load_ftrace_config(fc, c, res, ret_error);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Resolves the data sources' events against the index, re-read at most once a second
 * (before resolving when it is older, and when names are missing: a module loaded since),
 * and at once when a missing name exists in tracefs (a probe defined a moment ago). */
static int load_events(const Tracebus__TraceConfig *tc, const char *root, SessionConfig *c,
                       EventResolution *res, char **ret_error) {
        int r;

        r = event_index_get(root, &res->index);
        if (r < 0)
                return r;
        /* Events come and go with modules and probes: a list older than a second is read
         * again, whatever the names; and so on a miss (below). */
        (void) event_index_refresh(res->index, /* force= */ false);
        r = load_data_sources(tc, c, res, ret_error);
        if (r >= 0 && res->n_unknown > 0 && event_index_refresh(res->index, res->index_stale) > 0) {
                event_resolution_reset(res);
                r = load_data_sources(tc, c, res, ret_error);
        }
        if (r < 0)
                return r;
        r = event_selection_names(&res->selection, &c->events);
        if (r < 0)
                return r;
        return session_config_note_refused_events(c, &res->selection);
}

static int unknown_events_error(const EventResolution *res, char **ret_error) {
        _cleanup_free_ char *list = strv_join(res->unknown, ", ");

        if (!list)
                return -ENOMEM;
        if (!ret_error)
                return -ENOENT;
        if (res->n_unknown > UNKNOWN_EVENTS_SHOWN) {
                if (asprintf(ret_error, "%s and %zu more", list, res->n_unknown - UNKNOWN_EVENTS_SHOWN) < 0)
                        *ret_error = NULL;
        } else
                *ret_error = TAKE_PTR(list);
        return -ENOENT;
}

/* How long, and how the trace reaches its file: periods, size, compression. */
static int load_duration_and_output(const Tracebus__TraceConfig *tc, SessionConfig *c, char **ret_error) {
        if (tc->has_duration_ms && tc->duration_ms > SESSION_MAX_DURATION_MS)
                return session_config_error(ret_error, "duration_ms %u is longer than the limit of 7 days", tc->duration_ms);
        c->duration_ms = tc->duration_ms;
        c->write_into_file = tc->write_into_file;
        c->file_write_period_ms = tc->file_write_period_ms ?: SESSION_DEFAULT_WRITE_PERIOD_MS;
        c->file_write_period_ms = MAX(c->file_write_period_ms, SESSION_MIN_WRITE_PERIOD_MS);
        c->max_file_size_bytes = tc->max_file_size_bytes;
        if (tc->has_compression_type &&
            tc->compression_type != TRACEBUS__TRACE_CONFIG__COMPRESSION_TYPE__COMPRESSION_TYPE_UNSPECIFIED &&
            tc->compression_type != TRACEBUS__TRACE_CONFIG__COMPRESSION_TYPE__COMPRESSION_TYPE_DEFLATE)
                return session_config_error(ret_error, "compression_type %d is not supported (expected COMPRESSION_TYPE_DEFLATE)",
                                 (int) tc->compression_type);
        c->compress = tc->compression_type == TRACEBUS__TRACE_CONFIG__COMPRESSION_TYPE__COMPRESSION_TYPE_DEFLATE;
        return 0;
}

static int pack_config(const Tracebus__TraceConfig *tc, SessionConfig *c) {
        size_t len = tracebus__trace_config__get_packed_size(tc);

        c->trace_config = malloc(MAX(len, 1u));
        if (!c->trace_config)
                return -ENOMEM;
        c->trace_config_len = tracebus__trace_config__pack(tc, c->trace_config);
        return 0;
}

/* The linux.ftrace data sources: events resolved (the ones this kernel lacks skipped, as
 * Perfetto does, with a warning each), the remaining FtraceConfig options, the atrace
 * categories. Only a strict list (Start's Events option) with no event that exists is
 * refused (UnknownEvent), or one with no event at all. */
static int load_ftrace(const Tracebus__TraceConfig *tc, const char *root, SessionConfig *c,
                       EventResolution *res, char **ret_error) {
        int r;

        r = load_events(tc, root, c, res, ret_error);
        if (r < 0)
                return r;
        if (!c->events && res->n_unknown > 0 && c->strict_events)
                return unknown_events_error(res, ret_error);
        /* The Events option is the list of what to record: an empty one is a mistake. */
        if (!c->events && c->strict_events)
                return session_config_error(ret_error, "no ftrace events to record: the Events option names none");
        r = session_config_load_ftrace_options(tc, root, c, ret_error);
        if (r < 0)
                return r;
        r = session_config_load_ftgraph(tc, root, c, ret_error);
        if (r < 0)
                return r;
        r = session_config_note_unknown_events(c, res->unknown, res->n_unknown);
        if (r >= 0)
                r = session_config_load_atrace(tc, c);
        if (r >= 0 && res->mark_renamed)
                r = session_config_warn(c, "'tracing_mark_write' is what systrace shows for ftrace/print, "
                                        "which is not a kernel event name: recording ftrace/print");
        if (r < 0)
                return r;
        return 0;
}

int session_config_load(const Tracebus__TraceConfig *tc, const char *root, SessionConfig *ret, char **ret_error) {
        return session_config_load_flags(tc, root, 0, ret, ret_error);
}

int session_config_load_flags(const Tracebus__TraceConfig *tc, const char *root, SessionConfigFlags flags,
                              SessionConfig *ret, char **ret_error) {
        _cleanup_(event_resolution_reset) EventResolution res = {};
        _cleanup_(session_config_done) SessionConfig c = {
                .drain_period_ms = SESSION_DEFAULT_DRAIN_PERIOD_MS,
                .compact_sched = true,
                .strict_events = flags & SESSION_CONFIG_STRICT_EVENTS,
        };
        int r;

        assert(tc);
        assert(root);

        r = check_config_size(tc, ret_error);
        if (r < 0)
                return r;
        r = session_config_check_fields(tc, &c);
        if (r < 0)
                return r;
        r = load_duration_and_output(tc, &c, ret_error);
        if (r < 0)
                return r;
        r = session_config_load_buffers(tc, &c, ret_error);
        if (r < 0)
                return r;
        r = session_config_load_trace(tc, &c, ret_error);
        if (r < 0)
                return r;
        r = session_config_load_filter(tc, &c, ret_error);
        if (r < 0)
                return r;
        r = session_config_load_triggers(tc, &c, ret_error);
        if (r < 0)
                return r;
        if (tc->output_path)
                return session_config_error(ret_error, "output_path is not supported: the service never opens a path a caller "
                                 "names; pass a file descriptor as the Output option instead");

        r = load_ftrace(tc, root, &c, &res, ret_error);
        if (r < 0)
                return r;
        /* No ftrace events: no kernel buffer at all. */
        c.buffer_size_kb = !c.events ? 0 : c.buffer_size_kb ?: SESSION_DEFAULT_BUFFER_SIZE_KB;

        r = session_config_load_producers(tc, &c, ret_error);
        if (r >= 0)
                r = session_config_load_source_names(tc, &c);
        if (r >= 0)
                r = pack_config(tc, &c);
        if (r < 0)
                return r;
        *ret = c;
        c = (SessionConfig) {};
        return 0;
}

int session_config_list_events(const char *root, const char *glob, char ***ret) {
        EventIndex *idx;
        int r;

        r = event_index_get(root, &idx);
        if (r < 0)
                return r;
        /* The list a caller sees is at most a second old: a module loaded since shows up. */
        (void) event_index_refresh(idx, /* force= */ false);
        return event_index_list(idx, glob, ret);
}

int session_config_reread_events(const char *root) {
        EventIndex *idx;
        int r;

        r = event_index_get(root, &idx);
        if (r < 0)
                return r;
        return event_index_refresh(idx, /* force= */ true);
}
