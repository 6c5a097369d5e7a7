/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Error messages of the text-format parser: "SOURCE:LINE:COLUMN: what", naming
 * the field and its type, with a "did you mean" for a mistyped field name and
 * the declared values for an unknown enum value.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "textproto-local.h"

/* Enums longer than this are listed in part in "expected one of" hints. */
#define ENUM_HINT_MAX 16U
/* Names longer than this get no "did you mean" (bounds the edit distance cost). */
#define SUGGEST_MAX_LEN 128U

const char *tp_type_name(ProtobufCType type) {
        static const char *const names[] = {
                [PROTOBUF_C_TYPE_INT32] = "int32",      [PROTOBUF_C_TYPE_SINT32] = "sint32",
                [PROTOBUF_C_TYPE_SFIXED32] = "sfixed32", [PROTOBUF_C_TYPE_INT64] = "int64",
                [PROTOBUF_C_TYPE_SINT64] = "sint64",    [PROTOBUF_C_TYPE_SFIXED64] = "sfixed64",
                [PROTOBUF_C_TYPE_UINT32] = "uint32",    [PROTOBUF_C_TYPE_FIXED32] = "fixed32",
                [PROTOBUF_C_TYPE_UINT64] = "uint64",    [PROTOBUF_C_TYPE_FIXED64] = "fixed64",
                [PROTOBUF_C_TYPE_FLOAT] = "float",      [PROTOBUF_C_TYPE_DOUBLE] = "double",
                [PROTOBUF_C_TYPE_BOOL] = "bool",        [PROTOBUF_C_TYPE_ENUM] = "enum",
                [PROTOBUF_C_TYPE_STRING] = "string",    [PROTOBUF_C_TYPE_BYTES] = "bytes",
                [PROTOBUF_C_TYPE_MESSAGE] = "message",
        };

        if ((size_t) type >= ELEMENTSOF(names) || !names[type])
                return "unknown";
        return names[type];
}

/* Error messages. The first error wins: later ones come from unwinding. */

_printf_(4, 0)
static int parser_verror_at(Parser *p, unsigned line, unsigned column, const char *format, va_list ap) {
        _cleanup_free_ char *what = NULL;

        if (p->error)
                return -EINVAL;
        if (vasprintf(&what, format, ap) < 0) {
                what = NULL;
                return -ENOMEM;
        }
        if (asprintf(&p->error, "%s:%u:%u: %s", p->source, line, column, what) < 0) {
                p->error = NULL;
                return -ENOMEM;
        }
        return -EINVAL;
}

_printf_(4, 5)
int tp_parser_error_at(Parser *p, unsigned line, unsigned column, const char *format, ...) {
        va_list ap;
        int r;

        va_start(ap, format);
        r = parser_verror_at(p, line, column, format, ap);
        va_end(ap);
        return r;
}

_printf_(3, 4)
int tp_parser_error(Parser *p, const Token *at, const char *format, ...) {
        va_list ap;
        int r;

        va_start(ap, format);
        r = parser_verror_at(p, at->line, at->column, format, ap);
        va_end(ap);
        return r;
}

/* Optimal string alignment distance: insertions, deletions, substitutions and
 * swaps of neighbours cost 1 each. Swaps are the commonest typo ("fill_polciy"). */
static unsigned edit_distance(const char *a, size_t la, const char *b, size_t lb) {
        unsigned rows[3][SUGGEST_MAX_LEN + 1];
        unsigned *prev2 = rows[0], *prev = rows[1], *cur = rows[2];

        assert(lb <= SUGGEST_MAX_LEN);

        for (size_t j = 0; j <= lb; j++)
                prev[j] = j;
        for (size_t i = 1; i <= la; i++) {
                cur[0] = i;
                for (size_t j = 1; j <= lb; j++) {
                        unsigned cost = a[i - 1] != b[j - 1];

                        cur[j] = MIN(MIN(prev[j] + 1, cur[j - 1] + 1), prev[j - 1] + cost);
                        if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                                cur[j] = MIN(cur[j], prev2[j - 2] + 1);
                }
                unsigned *t = prev2;
                prev2 = prev;
                prev = cur;
                cur = t;
        }
        return prev[lb];
}

/* Close enough to suggest: at most a third of the longer name differs, or one is
 * a prefix of the other ("size" for "size_kb"). */
static bool name_is_close(const Token *name, const char *candidate, unsigned distance) {
        size_t lc = strlen(candidate), shorter = MIN(name->len, lc);

        if (distance * 3 <= MAX(name->len, lc))
                return true;
        return shorter >= 3 && strncmp(name->start, candidate, shorter) == 0;
}

static const char *field_suggest(const ProtobufCMessageDescriptor *desc, const Token *name) {
        const char *best = NULL;
        unsigned best_distance = UINT32_MAX;

        if (name->len > SUGGEST_MAX_LEN)
                return NULL;
        for (unsigned i = 0; i < desc->n_fields; i++) {
                const char *candidate = desc->fields[i].name;
                size_t lc = strlen(candidate);
                unsigned d;

                if (lc > SUGGEST_MAX_LEN)
                        continue;
                d = edit_distance(candidate, lc, name->start, name->len);
                if (d < best_distance && name_is_close(name, candidate, d)) {
                        best = candidate;
                        best_distance = d;
                }
        }
        return best;
}

int tp_error_unknown_field(Parser *p, const ProtobufCMessageDescriptor *desc, const Token *name) {
        const char *suggestion = field_suggest(desc, name);
        char shown[SHOW_SIZE];

        if (suggestion)
                return tp_parser_error(p, name, "unknown field %s in %s; did you mean '%s'?",
                                    tp_token_show(name, true, shown), desc->short_name, suggestion);
        return tp_parser_error(p, name, "unknown field %s in %s", tp_token_show(name, true, shown), desc->short_name);
}

int tp_error_invalid_value(Parser *p, const ProtobufCFieldDescriptor *fd, const Token *value) {
        char shown[SHOW_SIZE];

        return tp_parser_error(p, value, "invalid value %s for %s field '%s'",
                            tp_token_show(value, true, shown), tp_type_name(fd->type), fd->name);
}

int tp_error_out_of_range(Parser *p, const ProtobufCFieldDescriptor *fd, const Token *value) {
        char shown[SHOW_SIZE];

        return tp_parser_error(p, value, "value %s out of range for %s field '%s'",
                            tp_token_show(value, false, shown), tp_type_name(fd->type), fd->name);
}

/* "A, B, C", shortened for long enums so the message stays readable. */
static char *enum_hint(const ProtobufCEnumDescriptor *ed) {
        unsigned shown = MIN(ed->n_values, ENUM_HINT_MAX);
        size_t size = 32;
        char *s, *q;

        for (unsigned i = 0; i < shown; i++)
                size += strlen(ed->values[i].name) + 2;
        s = q = malloc(size);
        if (!s)
                return NULL;
        *q = '\0';
        for (unsigned i = 0; i < shown; i++)
                q = stpcpy(stpcpy(q, i > 0 ? ", " : ""), ed->values[i].name);
        if (ed->n_values > shown)
                (void) snprintf(q, size - (q - s), ", ... (%u more)", ed->n_values - shown);
        return s;
}

int tp_error_unknown_enum_value(Parser *p, const ProtobufCFieldDescriptor *fd, const Token *t, bool quote) {
        _cleanup_free_ char *hint = enum_hint(fd->descriptor);
        char shown[SHOW_SIZE];

        if (!hint)
                return -ENOMEM;
        return tp_parser_error(p, t, "unknown value %s for enum field '%s' (expected one of %s)",
                            tp_token_show(t, quote, shown), fd->name, hint);
}
