/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdlib.h>
#include <string.h>

#include "strv.h"

char **strv_free(char **l) {
        STRV_FOREACH(s, l)
                free(*s);
        free(l);
        return NULL;
}

size_t strv_length(char * const *l) {
        size_t n = 0;

        STRV_FOREACH(s, l)
                n++;
        return n;
}

bool strv_contains(char * const *l, const char *s) {
        STRV_FOREACH(i, l)
                if (strcmp(*i, s) == 0)
                        return true;
        return false;
}

int strv_extend(char ***l, const char *s) {
        size_t n = strv_length(*l);
        char **t;
        char *c;

        c = strdup(s);
        if (!c)
                return -ENOMEM;
        t = realloc(*l, sizeof(char *) * (n + 2));
        if (!t) {
                free(c);
                return -ENOMEM;
        }
        t[n] = c;
        t[n + 1] = NULL;
        *l = t;
        return 0;
}

int strv_extend_unique(char ***l, const char *s) {
        int r;

        if (strv_contains(*l, s))
                return 0;
        r = strv_extend(l, s);
        return r < 0 ? r : 1;
}

char *strv_join(char * const *l, const char *sep) {
        size_t len = 1, seplen = strlen(sep);
        char *r, *p;

        STRV_FOREACH(s, l)
                len += strlen(*s) + seplen;
        r = p = malloc(len);
        if (!r)
                return NULL;
        *p = 0;
        STRV_FOREACH(s, l) {
                if (s != l)
                        p = stpcpy(p, sep);
                p = stpcpy(p, *s);
        }
        return r;
}

bool string_is_printable_name(const char *s, size_t max) {
        size_t n = s ? strnlen(s, max) : 0;

        if (n == 0 || n == max)
                return false;
        for (const char *c = s; *c; c++)
                if (*c < 0x20 || *c > 0x7e)
                        return false;
        return true;
}
