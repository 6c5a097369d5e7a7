/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "macro.h"

char **strv_free(char **l);
DEFINE_TRIVIAL_CLEANUP_FUNC(char **, strv_free);
#define _cleanup_strv_free_ _cleanup_(strv_freep)

size_t strv_length(char * const *l);
bool strv_contains(char * const *l, const char *s);
/* Appends a copy of @s. Returns 0 or -ENOMEM. */
int strv_extend(char ***l, const char *s);
/* Appends a copy of @s unless it is already there. Returns 1 if added, 0 if present. */
int strv_extend_unique(char ***l, const char *s);
/* Joins with @sep into a malloc'd string, or NULL on OOM. */
char *strv_join(char * const *l, const char *sep);

/* Whether @s is a name one may show: 1 to @max - 1 bytes, printable ASCII only. */
bool string_is_printable_name(const char *s, size_t max);

#define STRV_FOREACH(s, l) for (char * const *s = (l); s && *s; s++)
