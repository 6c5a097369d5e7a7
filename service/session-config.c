/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "session-config.h"
#include "strv.h"
#include "textproto.h"

#define MAX_CONFIG_TEXT (1024u * 1024u)

DEFINE_TRIVIAL_CLEANUP_FUNC_VOID(DIR *, closedir);

void session_config_done(SessionConfig *c) {
        c->events = strv_free(c->events);
        c->trace_config = mfree(c->trace_config);
}

int session_config_parse_text(const char *text, Tracebus__TraceConfig **ret, char **ret_error) {
        ProtobufCMessage *m = NULL;
        size_t len = strlen(text);
        int r;

        if (len > MAX_CONFIG_TEXT) {
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

        if (size > MAX_CONFIG_TEXT) {
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

static bool event_name_valid(const char *s, size_t len) {
        if (len == 0 || len > 128)
                return false;
        for (size_t i = 0; i < len; i++)
                if (!(s[i] == '_' || s[i] == '-' || (s[i] >= '0' && s[i] <= '9') ||
                      (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')))
                        return false;
        return true;
}

static bool event_exists(const char *root, const char *group, const char *name) {
        _cleanup_free_ char *path = NULL;
        struct stat st;

        if (asprintf(&path, "%s/events/%s/%s/format", root, group, name) < 0)
                return false;
        return stat(path, &st) >= 0 && S_ISREG(st.st_mode);
}

static int add_event(char ***events, const char *group, const char *name) {
        _cleanup_free_ char *e = NULL;

        if (asprintf(&e, "%s/%s", group, name) < 0)
                return -ENOMEM;
        return strv_extend_unique(events, e);
}

/* Calls add_event() for every entry of events/@group (or of every group, with @group NULL)
 * that is an event matching @name (every event, with @name NULL). */
static int scan_events(const char *root, const char *group, const char *name, char ***events) {
        _cleanup_(closedirp) DIR *d = NULL;
        _cleanup_free_ char *path = NULL;
        int found = 0, r;

        if (asprintf(&path, "%s/events%s%s", root, group ? "/" : "", strempty(group)) < 0)
                return -ENOMEM;
        d = opendir(path);
        if (!d)
                return errno == ENOENT ? 0 : -errno;

        for (struct dirent *de; (de = readdir(d));) {
                if (de->d_name[0] == '.' || de->d_type != DT_DIR)
                        continue;
                if (!group) {
                        r = scan_events(root, de->d_name, name, events);
                } else if (!name || (strcmp(name, de->d_name) == 0 && event_exists(root, group, de->d_name))) {
                        /* Every directory in a group is an event: a listing needs no stat() of
                         * each format, which costs tens of microseconds apiece on tracefs. */
                        r = add_event(events, group, de->d_name);
                        r = r < 0 ? r : 1;
                } else
                        continue;
                if (r < 0)
                        return r;
                found += r;
        }
        return found;
}

int session_config_resolve_event(const char *root, const char *pattern, char ***events) {
        const char *slash = strchr(pattern, '/');
        _cleanup_free_ char *group = NULL;
        const char *name;
        int r;

        if (!slash) {
                if (!event_name_valid(pattern, strlen(pattern)))
                        return -EINVAL;
                return scan_events(root, NULL, pattern, events);
        }

        group = strndup(pattern, slash - pattern);
        if (!group)
                return -ENOMEM;
        name = slash + 1;
        if (!event_name_valid(group, strlen(group)))
                return -EINVAL;
        if (strcmp(name, "*") == 0)
                return scan_events(root, group, NULL, events);
        if (!event_name_valid(name, strlen(name)))
                return -EINVAL;
        if (!event_exists(root, group, name))
                return 0;
        r = add_event(events, group, name);
        return r < 0 ? r : 1;
}

static int set_error(char **ret_error, const char *fmt, ...) _printf_(2, 3);
static int set_error(char **ret_error, const char *fmt, ...) {
        va_list ap;

        if (!ret_error)
                return -EINVAL;
        va_start(ap, fmt);
        if (vasprintf(ret_error, fmt, ap) < 0)
                *ret_error = NULL;
        va_end(ap);
        return -EINVAL;
}

/* Takes the ftrace data sources' settings: events are the union, sizes the largest. */
static int load_ftrace_config(const Tracebus__FtraceConfig *fc, const char *root, SessionConfig *c,
                              char ***unknown, char **ret_error) {
        int r;

        if (fc->has_buffer_size_kb && fc->buffer_size_kb > SESSION_MAX_BUFFER_SIZE_KB)
                return set_error(ret_error, "buffer_size_kb %u is above the limit of %u KiB per CPU",
                                 fc->buffer_size_kb, SESSION_MAX_BUFFER_SIZE_KB);
        if (fc->has_buffer_size_kb && fc->buffer_size_kb > 0)
                c->buffer_size_kb = MAX(c->buffer_size_kb, fc->buffer_size_kb);
        if (fc->has_drain_period_ms && (fc->drain_period_ms < 1 || fc->drain_period_ms > 60000))
                return set_error(ret_error, "drain_period_ms %u is outside 1..60000", fc->drain_period_ms);
        if (fc->has_drain_period_ms)
                c->drain_period_ms = MIN(c->drain_period_ms, fc->drain_period_ms);
        /* Perfetto enables compact_sched when the field is unset. */
        if (fc->compact_sched && fc->compact_sched->has_enabled && !fc->compact_sched->enabled)
                c->compact_sched = false;

        if (fc->n_ftrace_events > SESSION_MAX_EVENTS)
                return set_error(ret_error, "%zu events requested, at most %u are allowed",
                                 fc->n_ftrace_events, SESSION_MAX_EVENTS);
        for (size_t i = 0; i < fc->n_ftrace_events; i++) {
                const char *e = fc->ftrace_events[i];

                r = session_config_resolve_event(root, e, &c->events);
                if (r == -EINVAL)
                        return set_error(ret_error, "'%.128s' is not an event name (expected group/name, group/* or name)", e);
                if (r < 0)
                        return r;
                if (r == 0 && strv_extend_unique(unknown, e) < 0)
                        return -ENOMEM;
                if (strv_length(c->events) > SESSION_MAX_EVENTS)
                        return set_error(ret_error, "the events requested expand to more than %u events",
                                         SESSION_MAX_EVENTS);
        }
        return 0;
}

/* How long, and how the trace reaches its file: periods, size, compression. */
static int load_duration_and_output(const Tracebus__TraceConfig *tc, SessionConfig *c, char **ret_error) {
        if (tc->has_duration_ms && tc->duration_ms > SESSION_MAX_DURATION_MS)
                return set_error(ret_error, "duration_ms %u is longer than the limit of 7 days", tc->duration_ms);
        c->duration_ms = tc->duration_ms;
        c->write_into_file = tc->write_into_file;
        c->file_write_period_ms = tc->file_write_period_ms ?: SESSION_DEFAULT_WRITE_PERIOD_MS;
        c->file_write_period_ms = MAX(c->file_write_period_ms, SESSION_MIN_WRITE_PERIOD_MS);
        c->max_file_size_bytes = tc->max_file_size_bytes;
        if (tc->has_compression_type &&
            tc->compression_type != TRACEBUS__TRACE_CONFIG__COMPRESSION_TYPE__COMPRESSION_TYPE_UNSPECIFIED &&
            tc->compression_type != TRACEBUS__TRACE_CONFIG__COMPRESSION_TYPE__COMPRESSION_TYPE_DEFLATE)
                return set_error(ret_error, "compression_type %d is not supported (expected COMPRESSION_TYPE_DEFLATE)",
                                 (int) tc->compression_type);
        c->compress = tc->compression_type == TRACEBUS__TRACE_CONFIG__COMPRESSION_TYPE__COMPRESSION_TYPE_DEFLATE;
        return 0;
}

/* The buffers: the service keeps one, as large as all of them together. */
static int load_trace_buffer(const Tracebus__TraceConfig *tc, SessionConfig *c, char **ret_error) {
        uint64_t total = 0;

        for (size_t i = 0; i < tc->n_buffers; i++)
                total += tc->buffers[i]->size_kb;
        if (total > SESSION_MAX_TRACE_BUFFER_KB)
                return set_error(ret_error, "the buffers add up to %" PRIu64 " KiB, above the limit of %u KiB",
                                 total, SESSION_MAX_TRACE_BUFFER_KB);
        c->trace_buffer_kb = total > 0 ? (uint32_t) total : SESSION_DEFAULT_TRACE_BUFFER_KB;
        c->discard_when_full = tc->n_buffers > 0 && tc->buffers[0]->has_fill_policy &&
                tc->buffers[0]->fill_policy == TRACEBUS__TRACE_CONFIG__BUFFER_CONFIG__FILL_POLICY__DISCARD;
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

int session_config_load(const Tracebus__TraceConfig *tc, const char *root, SessionConfig *ret, char **ret_error) {
        _cleanup_strv_free_ char **unknown = NULL;
        _cleanup_(session_config_done) SessionConfig c = {
                .drain_period_ms = SESSION_DEFAULT_DRAIN_PERIOD_MS,
                .compact_sched = true,
        };
        int r;

        assert(tc);
        assert(root);

        r = load_duration_and_output(tc, &c, ret_error);
        if (r < 0)
                return r;
        r = load_trace_buffer(tc, &c, ret_error);
        if (r < 0)
                return r;
        if (tc->output_path)
                return set_error(ret_error, "output_path is not supported: the service never opens a path a caller "
                                 "names; pass a file descriptor as the Output option instead");

        for (size_t i = 0; i < tc->n_data_sources; i++) {
                const Tracebus__DataSourceConfig *ds = tc->data_sources[i]->config;

                if (!ds || !ds->name || strcmp(ds->name, "linux.ftrace") != 0 || !ds->ftrace_config)
                        continue;
                r = load_ftrace_config(ds->ftrace_config, root, &c, &unknown, ret_error);
                if (r < 0)
                        return r;
        }

        if (unknown) {
                _cleanup_free_ char *list = strv_join(unknown, ", ");
                if (!list)
                        return -ENOMEM;
                if (ret_error && asprintf(ret_error, "%s", list) < 0)
                        *ret_error = NULL;
                return -ENOENT;
        }
        if (!c.events)
                return set_error(ret_error, "no ftrace events to record: add a linux.ftrace data source with "
                                 "ftrace_events, or pass the Events option");
        if (c.buffer_size_kb == 0)
                c.buffer_size_kb = SESSION_DEFAULT_BUFFER_SIZE_KB;

        r = pack_config(tc, &c);
        if (r < 0)
                return r;
        *ret = c;
        c = (SessionConfig) {};
        return 0;
}

static int compare_strings(const void *a, const void *b) {
        return strcmp(*(char * const *) a, *(char * const *) b);
}

/* ListEvents needs no authorization, and a scan of tracefs (a stat() of every
 * event's format, thousands) takes milliseconds of the event loop: a client
 * calling it in a loop would delay everyone's calls by seconds. So the list is
 * scanned at most once per EVENT_CACHE_USEC; events that a module adds show up
 * that much later. */
#define EVENT_CACHE_USEC (2 * 1000000ULL)

static struct {
        char *root;
        char **all;
        uint64_t scanned_usec;
} event_cache;

static uint64_t now_usec(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000ULL;
}

static int all_events(const char *root, char ***ret) {
        _cleanup_strv_free_ char **all = NULL;
        _cleanup_free_ char *copy = NULL;
        uint64_t now = now_usec();
        int r;

        if (event_cache.root && strcmp(event_cache.root, root) == 0 &&
            now - event_cache.scanned_usec < EVENT_CACHE_USEC) {
                *ret = event_cache.all;
                return 0;
        }
        r = scan_events(root, NULL, NULL, &all);
        if (r < 0)
                return r;
        copy = strdup(root);
        if (!copy)
                return -ENOMEM;
        free(event_cache.root);
        strv_free(event_cache.all);
        event_cache.root = TAKE_PTR(copy);
        event_cache.all = TAKE_PTR(all);
        event_cache.scanned_usec = now;
        *ret = event_cache.all;
        return 0;
}

int session_config_list_events(const char *root, const char *glob, char ***ret) {
        _cleanup_strv_free_ char **matching = NULL;
        char **all = NULL;
        int r;

        r = all_events(root, &all);
        if (r < 0)
                return r;
        STRV_FOREACH(e, all)
                if (fnmatch(glob, *e, 0) == 0 || fnmatch(glob, strchr(*e, '/') + 1, 0) == 0) {
                        r = strv_extend(&matching, *e);
                        if (r < 0)
                                return r;
                }
        if (matching)
                qsort(matching, strv_length(matching), sizeof(char *), compare_strings);
        *ret = TAKE_PTR(matching);
        return 0;
}
