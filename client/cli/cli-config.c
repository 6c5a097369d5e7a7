/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The TraceConfig: read and checked here, with the parser the service uses, so
 * that a mistake is reported as FILE:LINE:COLUMN with the real file name before
 * anything is sent. Text configs go to the service as text (it parses them
 * again); binary ones, and text read with --txt-lossy, as the BinaryConfig option.
 */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "atrace-categories.h"
#include "cli.h"
#include "strv.h"
#include "textproto.h"

/* The service takes configs of at most 1 MiB. */
#define MAX_CONFIG_SIZE (1024u * 1024u)

/* perfetto's light config defaults (perfetto_cmd/config.cc). */
#define LIGHT_DURATION_MS 10000u
#define LIGHT_BUFFER_KB (32u * 1024u)
#define LIGHT_FLUSH_PERIOD_MS 30000u

void cli_config_done(CliConfig *c) {
        c->text = mfree(c->text);
        c->binary = mfree(c->binary);
        if (c->parsed)
                protobuf_c_message_free_unpacked(&c->parsed->base, NULL);
        c->parsed = NULL;
}

static int read_fd(int fd, char **ret, size_t *ret_len) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;

        buf = malloc(MAX_CONFIG_SIZE + 1);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                ssize_t n = read(fd, buf + size, MAX_CONFIG_SIZE + 1 - size);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        break;
                size += (size_t) n;
                if (size > MAX_CONFIG_SIZE)
                        return -EFBIG;
        }
        buf[size] = 0;
        *ret_len = size;
        *ret = TAKE_PTR(buf);
        return 0;
}

static int read_config_file(const char *path, char **ret, size_t *ret_len) {
        _cleanup_close_ int fd = -EBADF;
        int r;

        if (strcmp(path, "-") == 0)
                return read_fd(STDIN_FILENO, ret, ret_len);
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        r = read_fd(fd, ret, ret_len);
        return r;
}

void cli_append_quoted(FILE *f, const char *s) {
        fputc('"', f);
        for (; *s; s++) {
                if (*s == '"' || *s == '\\')
                        fputc('\\', f);
                fputc(*s, f);
        }
        fputc('"', f);
}

/* Perfetto's CLI takes a bare word as an atrace category, which enables the kernel
 * events of its predefined table (the service resolves them); "group/name" is an event.
 * A bare word that is no category stays an event name in any group, as tracebus always
 * took it ("sched_switch"). "disk" also polls the disks' counters, as perfetto's does. */
static void append_events(FILE *f, char *const *events) {
        STRV_FOREACH(e, events) {
                fputs(!strchr(*e, '/') && atrace_category_events(*e) ? "  atrace_categories: " : "  ftrace_events: ", f);
                cli_append_quoted(f, *e);
                fputc('\n', f);
        }
}

static void append_category_sources(FILE *f, char *const *events) {
        STRV_FOREACH(e, events)
                if (strcmp(*e, "disk") == 0)
                        fputs("data_sources { config { name: \"linux.sys_stats\" sys_stats_config { diskstat_period_ms: 1000 } } }\n", f);
}

/* The config perfetto builds from -t, -b, -s and events (CreateConfigFromOptions). */
static int build_light_config(const Args *a, char *const *events, uint32_t duration_ms, char **ret) {
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);

        if (!f)
                return -ENOMEM;
        append_category_sources(f, events);
        fprintf(f, "duration_ms: %" PRIu32 "\n", duration_ms);
        if (a->has_size && a->max_file_size_bytes > 0)
                fprintf(f, "write_into_file: true\nmax_file_size_bytes: %" PRIu64 "\n", a->max_file_size_bytes);
        else if (cli_rotates(a))
                fputs("write_into_file: true\n", f);   /* rotation cuts chunks as it goes */
        fprintf(f, "flush_period_ms: %u\n", LIGHT_FLUSH_PERIOD_MS);
        fprintf(f, "buffers { size_kb: %" PRIu64 " }\n", a->has_buffer ? a->buffer_kb : LIGHT_BUFFER_KB);
        if (events) {
                fputs("data_sources { config { name: \"linux.ftrace\" ftrace_config {\n", f);
                append_events(f, events);
                fputs("  symbolize_ksyms: true\n} } }\n", f);
        }
        if (a->profile)
                cli_profile_append_sources(f, a);
        cli_track_event_append_sources(f, a);
        /* A profile's processes appear in no ftrace event: scan /proc once at the start. */
        fprintf(f, "data_sources { config { name: \"linux.process_stats\" target_buffer: 0%s } }\n",
                a->profile ? " process_stats_config { scan_all_processes_on_start: true }" : "");
        fputs("data_sources { config { name: \"linux.system_info\" target_buffer: 0 } }\n", f);
        if (fclose(f) != 0)
                return -ENOMEM;
        *ret = TAKE_PTR(text);
        return 0;
}

/* --txt-lossy: what the parser dropped goes to stderr, and the config to the service as
 * BinaryConfig, so that the service (strict) never sees the names v58 lacks. */
static int lossy_to_binary(CliConfig *c, char **warnings) {
        size_t size = tracebus__trace_config__get_packed_size(c->parsed);

        STRV_FOREACH(w, warnings)
                cli_log("warning: %s", *w);
        c->binary = malloc(MAX(size, 1u));
        if (!c->binary)
                return -ENOMEM;
        c->binary_size = tracebus__trace_config__pack(c->parsed, (uint8_t *) c->binary);
        c->text = mfree(c->text);
        return 0;
}

static int parse_text(CliConfig *c, const char *source, size_t len, bool lossy) {
        _cleanup_free_ char *error = NULL;
        _cleanup_strv_free_ char **warnings = NULL;
        ProtobufCMessage *m = NULL;
        int r;

        r = textproto_parse_flags(&tracebus__trace_config__descriptor, c->text, len, source,
                                  lossy ? TEXTPROTO_LOSSY : 0, &m, &error, &warnings);
        if (r == -EINVAL) {
                cli_log("%s", error ?: "the config is not a valid TraceConfig");
                return r;
        }
        if (r < 0) {
                cli_log("cannot parse %s: %s", source, strerror(-r));
                return r;
        }
        c->parsed = (Tracebus__TraceConfig *) m;
        return lossy ? lossy_to_binary(c, warnings) : 0;
}

static int load_light(const Args *a, CliConfig *c) {
        static char *const test_events[] = {
                (char *) "sched/sched_switch", (char *) "power/cpu_idle", (char *) "power/cpu_frequency", NULL,
        };
        bool test = a->config_path && strcmp(a->config_path, ":test") == 0;
        uint32_t duration = test ? 2000 : a->has_time ? (uint32_t) a->duration_ms : LIGHT_DURATION_MS;
        int r;

        /* perfetto's -c :test: a built-in 2 s config of scheduling and power events. */
        r = build_light_config(a, test ? test_events : a->events, duration, &c->text);
        if (r < 0)
                return r;
        return parse_text(c, "<command line>", strlen(c->text), false);
}

static int load_binary(CliConfig *c, const char *source, char *data, size_t len) {
        c->parsed = tracebus__trace_config__unpack(NULL, len, (const uint8_t *) data);
        if (!c->parsed) {
                cli_log("%s is not a binary TraceConfig%s", source,
                        len > 0 && data[0] != '\n' ? " (a text config needs --txt)" : "");
                free(data);
                return -EINVAL;
        }
        c->binary = data;
        c->binary_size = len;
        return 0;
}

static int load_file(const Args *a, CliConfig *c) {
        const char *source = strcmp(a->config_path, "-") == 0 ? "<stdin>" : a->config_path;
        char *data = NULL;
        size_t len = 0;
        int r;

        r = read_config_file(a->config_path, &data, &len);
        if (r == -EFBIG) {
                cli_log("%s: the config is larger than 1 MiB", source);
                return r;
        }
        if (r < 0) {
                cli_log("Could not open %s: %s", source, strerror(-r));
                return r;
        }
        if (len == 0) {
                free(data);
                cli_log("The TraceConfig is empty (%s)", source);
                return -EINVAL;
        }
        if (!a->txt)
                return load_binary(c, source, data, len);
        c->text = data;
        return parse_text(c, source, len, a->txt_lossy);
}

int cli_config_load(const Args *a, CliConfig *ret) {
        _cleanup_(cli_config_done) CliConfig c = {};
        int r;

        if (!a->config_path || strcmp(a->config_path, ":test") == 0)
                r = load_light(a, &c);
        else
                r = load_file(a, &c);
        if (r < 0)
                return r;

        if (c.parsed->output_path) {
                cli_log("output_path in the config is not supported: the service never opens a path you name; "
                        "remove it and pass -o FILE");
                return -EINVAL;
        }
        *ret = c;
        c = (CliConfig) {};
        return 0;
}
