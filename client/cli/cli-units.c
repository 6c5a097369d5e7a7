/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Sizes and durations with friendly suffixes, both ways, and a JSON string writer. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <strings.h>
#include <time.h>

#include "cli.h"

typedef struct Unit {
        const char *suffix;
        double factor;
} Unit;

/* A decimal number ("12", "1.5") and a unit from @units, matched without regard to case. */
static int parse_with_units(const char *s, const Unit *units, size_t n_units, double *ret) {
        char *end;
        double v;

        if (!s || *s == '\0' || *s == '-' || *s == '+' || *s == ' ')
                return -EINVAL;
        errno = 0;
        v = strtod(s, &end);
        if (errno != 0 || end == s || !isfinite(v) || v < 0)
                return -EINVAL;
        /* strtod() also reads "inf", "nan" and hex floats: digits only, please. */
        for (const char *p = s; p < end; p++)
                if (!((*p >= '0' && *p <= '9') || *p == '.'))
                        return -EINVAL;
        for (size_t i = 0; i < n_units; i++)
                if (strcasecmp(end, units[i].suffix) == 0) {
                        *ret = v * units[i].factor;
                        return 0;
                }
        return -EINVAL;
}

int cli_parse_duration_ms(const char *s, uint64_t *ret) {
        static const Unit units[] = {
                { "ms", 1 }, { "s", 1000 }, { "sec", 1000 }, { "m", 60000 }, { "min", 60000 },
                { "h", 3600000 }, { "d", 86400000 }, { "", 1000 },
        };
        double v;
        int r;

        r = parse_with_units(s, units, ELEMENTSOF(units), &v);
        if (r < 0)
                return r;
        /* TraceConfig.duration_ms is a uint32. */
        if (v > (double) UINT32_MAX)
                return -ERANGE;
        *ret = (uint64_t) llround(v);
        return 0;
}

int cli_parse_size_bytes(const char *s, uint64_t *ret) {
        static const Unit units[] = {
                { "b", 1 },
                { "k", 1024.0 }, { "kb", 1024.0 }, { "kib", 1024.0 },
                { "m", 1048576.0 }, { "mb", 1048576.0 }, { "mib", 1048576.0 },
                { "g", 1073741824.0 }, { "gb", 1073741824.0 }, { "gib", 1073741824.0 },
                { "", 1024.0 },
        };
        double v;
        int r;

        r = parse_with_units(s, units, ELEMENTSOF(units), &v);
        if (r < 0)
                return r;
        if (v >= 18446744073709551615.0)
                return -ERANGE;
        *ret = (uint64_t) llround(v);
        return 0;
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

void cli_log(const char *fmt, ...) {
        va_list ap;

        fprintf(stderr, "%s: ", program_invocation_short_name);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
}

int cli_refuse(const char *fmt, ...) {
        va_list ap;

        fprintf(stderr, "%s: ", program_invocation_short_name);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        return -EINVAL;
}

uint64_t cli_now_usec(clockid_t clock) {
        struct timespec ts;

        (void) clock_gettime(clock, &ts);
        return (uint64_t) ts.tv_sec * 1000000ull + (uint64_t) ts.tv_nsec / 1000ull;
}
