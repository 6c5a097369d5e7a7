/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Sizes and durations in the CLI's units (read by lib/basic/parse-util.c, written for people), a JSON
 * string writer, and the "tracebus: ..." lines on stderr. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>

#include "cli.h"
#include "parse-util.h"

/* TraceConfig.duration_ms is a uint32. */
int cli_parse_duration_ms(const char *s, uint64_t *ret) {
        uint64_t usec, ms;
        int r;

        r = parse_timespan(s, &usec);
        if (r < 0)
                return r;
        ms = usec / 1000 + (usec % 1000 >= 500);
        if (usec == UINT64_MAX || ms > UINT32_MAX)
                return -ERANGE;
        *ret = ms;
        return 0;
}

/* A bare number is KiB, as the kernel's buffer_size_kb counts. */
int cli_parse_size_bytes(const char *s, uint64_t *ret) {
        return parse_size(s, 1024, ret);
}

const char *cli_format_bytes(char *buf, size_t size, uint64_t bytes) {
        static const char *const units[] = { "KiB", "MiB", "GiB", "TiB" };
        double v = (double) bytes;
        size_t i = 0;

        if (bytes < 1024) {
                snprintf(buf, size, "%" PRIu64 " B", bytes);
                return buf;
        }
        v /= 1024.0;
        while (v >= 1024.0 && i + 1 < ELEMENTSOF(units)) {
                v /= 1024.0;
                i++;
        }
        snprintf(buf, size, v < 10.0 ? "%.1f %s" : "%.0f %s", v, units[i]);
        return buf;
}

const char *cli_format_duration(char *buf, size_t size, uint64_t ms) {
        uint64_t s = ms / 1000;

        if (ms < 60000)
                snprintf(buf, size, "%" PRIu64 ".%" PRIu64 "s", s, (ms % 1000) / 100);
        else if (s < 3600)
                snprintf(buf, size, "%" PRIu64 "m %02" PRIu64 "s", s / 60, s % 60);
        else if (s < 86400)
                snprintf(buf, size, "%" PRIu64 "h %02" PRIu64 "m", s / 3600, (s / 60) % 60);
        else
                snprintf(buf, size, "%" PRIu64 "d %02" PRIu64 "h", s / 86400, (s / 3600) % 24);
        return buf;
}

void cli_json_string(FILE *f, const char *s) {
        fputc('"', f);
        for (const unsigned char *p = (const unsigned char *) strempty(s); *p; p++) {
                if (*p == '"' || *p == '\\')
                        fprintf(f, "\\%c", *p);
                else if (*p == '\n')
                        fputs("\\n", f);
                else if (*p == '\t')
                        fputs("\\t", f);
                else if (*p < 0x20 || *p == 0x7f)
                        fprintf(f, "\\u%04x", *p);
                else
                        fputc(*p, f);
        }
        fputc('"', f);
}

_printf_(1, 0) static void log_line(const char *fmt, va_list ap) {
        fprintf(stderr, "%s: ", program_invocation_short_name);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
}

void cli_log(const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        log_line(fmt, ap);
        va_end(ap);
}

int cli_refuse(const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        log_line(fmt, ap);
        va_end(ap);
        return -EINVAL;
}
