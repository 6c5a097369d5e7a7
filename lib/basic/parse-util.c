/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

#include "macro.h"
#include "parse-util.h"

typedef struct Unit {
        const char *name;
        uint64_t factor;
} Unit;

/* A number as written: its whole part, and up to 18 digits of its fraction (more could
 * not change a value counted in bytes or microseconds). */
typedef struct Decimal {
        uint64_t whole;
        uint64_t fraction;        /* the digits after the point, as an integer */
        uint64_t scale;           /* 10 to the number of those digits */
} Decimal;

#define FRACTION_DIGITS_MAX 18

static bool is_blank(char c) {
        return c == ' ' || c == '\t';
}

/* Digits, a point and more digits, at least one digit in all; nothing before them. */
static int parse_decimal(const char **p, Decimal *ret) {
        const char *s = *p;
        Decimal d = { .scale = 1 };
        unsigned n_fraction = 0;
        bool any = false;

        for (; isdigit((unsigned char) *s); s++, any = true) {
                unsigned digit = (unsigned) (*s - '0');

                if (d.whole > (UINT64_MAX - digit) / 10)
                        return -ERANGE;
                d.whole = d.whole * 10 + digit;
        }
        if (*s == '.')
                for (s++; isdigit((unsigned char) *s); s++, any = true)
                        if (n_fraction++ < FRACTION_DIGITS_MAX) {
                                d.fraction = d.fraction * 10 + (uint64_t) (*s - '0');
                                d.scale *= 10;
                        }
        if (!any)
                return -EINVAL;
        *p = s;
        *ret = d;
        return 0;
}

/* @d times @factor, the fraction's share rounded half up. */
static int decimal_times(const Decimal *d, uint64_t factor, uint64_t *ret) {
        unsigned __int128 part = ((unsigned __int128) d->fraction * factor + d->scale / 2) / d->scale;
        unsigned __int128 v = (unsigned __int128) d->whole * factor + part;

        if (v > UINT64_MAX)
                return -ERANGE;
        *ret = (uint64_t) v;
        return 0;
}

/* The unit after a number and its blanks: the letters up to the first non-letter. A
 * missing unit is the table's entry named "". */
static const Unit *parse_unit(const char **p, const Unit *units, size_t n_units) {
        const char *s = *p, *e;
        size_t len;

        while (is_blank(*s))
                s++;
        for (e = s; isalpha((unsigned char) *e); e++)
                ;
        len = (size_t) (e - s);
        for (size_t i = 0; i < n_units; i++)
                if (strlen(units[i].name) == len && strncasecmp(units[i].name, s, len) == 0) {
                        *p = e;
                        return &units[i];
                }
        return NULL;
}

/* One number and its unit at *@p, moving *@p past them. */
static int parse_quantity(const char **p, const Unit *units, size_t n_units, uint64_t *ret) {
        const Unit *unit;
        Decimal d;
        int r;

        r = parse_decimal(p, &d);
        if (r < 0)
                return r;
        unit = parse_unit(p, units, n_units);
        if (!unit)
                return -EINVAL;
        return decimal_times(&d, unit->factor, ret);
}

int parse_size(const char *s, uint64_t bare_unit, uint64_t *ret_bytes) {
        const Unit units[] = {
                { "", bare_unit },
                { "b", 1 },
                { "k", 1ull << 10 }, { "kb", 1ull << 10 }, { "kib", 1ull << 10 },
                { "m", 1ull << 20 }, { "mb", 1ull << 20 }, { "mib", 1ull << 20 },
                { "g", 1ull << 30 }, { "gb", 1ull << 30 }, { "gib", 1ull << 30 },
                { "t", 1ull << 40 }, { "tb", 1ull << 40 }, { "tib", 1ull << 40 },
        };
        const char *p = s;
        uint64_t v;
        int r;

        r = parse_quantity(&p, units, ELEMENTSOF(units), &v);
        if (r < 0)
                return r;
        if (*p)
                return -EINVAL;
        *ret_bytes = v;
        return 0;
}

int parse_timespan(const char *s, uint64_t *ret_usec) {
        static const Unit units[] = {
                { "", 1000000ull },
                { "us", 1ull }, { "ms", 1000ull },
                { "s", 1000000ull }, { "sec", 1000000ull },
                { "m", 60000000ull }, { "min", 60000000ull },
                { "h", 3600000000ull }, { "hr", 3600000000ull },
                { "d", 86400000000ull },
        };
        const char *p = s;
        uint64_t total = 0, v;
        int r;

        if (strcasecmp(s, "infinity") == 0) {
                *ret_usec = UINT64_MAX;
                return 0;
        }
        do {
                r = parse_quantity(&p, units, ELEMENTSOF(units), &v);
                if (r < 0)
                        return r;
                if (v > UINT64_MAX - 1 - total)
                        return -ERANGE;
                total += v;
                while (is_blank(*p))
                        p++;
        } while (*p);
        *ret_usec = total;
        return 0;
}

int hex_digit_value(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}
