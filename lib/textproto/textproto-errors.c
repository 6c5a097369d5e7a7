/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Error messages of the text-format parser: "SOURCE:LINE:COLUMN: what", naming
 * the field and its type, with a "did you mean" for a mistyped field name or enum
 * value (else the declared values); and the warnings of lossy parsing, in the same
 * form, for what it drops.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strv.h"
#include "textproto-local.h"

/* Enums longer than this are listed in part in "expected one of" hints. */
#define ENUM_HINT_MAX 16U
/* An enum value this many edits from a declared one is suggested. */
#define ENUM_SUGGEST_MAX_EDITS 2U
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

/* The name among @n candidates closest to @name, if close enough; @name_at(ctx, i)
 * gives the candidates (field names, enum value names). Enum values share long
 * prefixes ("VMSTAT_"), which makes any two look alike: for them (@typo_only) only a
 * typo of at most ENUM_SUGGEST_MAX_EDITS counts. */
static const char *suggest(const Token *name, const char *(*name_at)(const void *ctx, unsigned i),
                           const void *ctx, unsigned n, bool typo_only) {
        const char *best = NULL;
        unsigned best_distance = UINT32_MAX;

        if (name->len > SUGGEST_MAX_LEN)
                return NULL;
        for (unsigned i = 0; i < n; i++) {
                const char *candidate = name_at(ctx, i);
                size_t lc = strlen(candidate);
                unsigned d;

                if (lc > SUGGEST_MAX_LEN)
                        continue;
                d = edit_distance(candidate, lc, name->start, name->len);
                if (d < best_distance && (typo_only ? d <= ENUM_SUGGEST_MAX_EDITS : name_is_close(name, candidate, d))) {
                        best = candidate;
                        best_distance = d;
                }
        }
        return best;
}

static const char *field_name_at(const void *ctx, unsigned i) {
        return ((const ProtobufCMessageDescriptor *) ctx)->fields[i].name;
}

static const char *enum_name_at(const void *ctx, unsigned i) {
        return ((const ProtobufCEnumDescriptor *) ctx)->values[i].name;
}

/* "unknown field 'x' in Msg", and "; did you mean 'y'?" when a field is close. */
static char *unknown_field_text(const ProtobufCMessageDescriptor *desc, const Token *name) {
        const char *suggestion = suggest(name, field_name_at, desc, desc->n_fields, false);
        char shown[SHOW_SIZE];
        char *text;

        if (asprintf(&text, "unknown field %s in %s%s%s%s", tp_token_show(name, true, shown), desc->short_name,
                     suggestion ? "; did you mean '" : "", suggestion ?: "", suggestion ? "'?" : "") < 0)
                return NULL;
        return text;
}

int tp_error_unknown_field(Parser *p, const ProtobufCMessageDescriptor *desc, const Token *name) {
        _cleanup_free_ char *text = unknown_field_text(desc, name);

        if (!text)
                return -ENOMEM;
        return tp_parser_error(p, name, "%s", text);
}

int tp_warn_unknown_field(Parser *p, const ProtobufCMessageDescriptor *desc, const Token *name) {
        _cleanup_free_ char *text = unknown_field_text(desc, name);

        if (!text)
                return -ENOMEM;
        return tp_parser_warn(p, name, "%s: dropped", text);
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

/* "unknown value X for enum field 'f'", then the closest value or the list of them. */
static char *unknown_enum_text(const ProtobufCFieldDescriptor *fd, const Token *t, bool quote) {
        const ProtobufCEnumDescriptor *ed = fd->descriptor;
        const char *suggestion = t->type == TOKEN_IDENTIFIER ? suggest(t, enum_name_at, ed, ed->n_values, true) : NULL;
        _cleanup_free_ char *hint = NULL;
        char shown[SHOW_SIZE];
        char *text;
        int r;

        if (suggestion)
                r = asprintf(&text, "unknown value %s for enum field '%s'; did you mean '%s'?",
                             tp_token_show(t, quote, shown), fd->name, suggestion);
        else {
                hint = enum_hint(ed);
                if (!hint)
                        return NULL;
                r = asprintf(&text, "unknown value %s for enum field '%s' (expected one of %s)",
                             tp_token_show(t, quote, shown), fd->name, hint);
        }
        return r < 0 ? NULL : text;
}

int tp_error_unknown_enum_value(Parser *p, const ProtobufCFieldDescriptor *fd, const Token *t, bool quote) {
        _cleanup_free_ char *text = unknown_enum_text(fd, t, quote);

        if (!text)
                return -ENOMEM;
        return tp_parser_error(p, t, "%s", text);
}

int tp_warn_unknown_enum_value(Parser *p, const ProtobufCFieldDescriptor *fd, const Token *t, bool quote) {
        _cleanup_free_ char *text = unknown_enum_text(fd, t, quote);

        if (!text)
                return -ENOMEM;
        return tp_parser_warn(p, t, "%s: dropped", text);
}

/* Warnings (lossy parsing): "SOURCE:LINE:COLUMN: what", kept in order, at most
 * TEXTPROTO_MAX_WARNINGS; the rest are only counted. */
_printf_(3, 4)
int tp_parser_warn(Parser *p, const Token *at, const char *format, ...) {
        _cleanup_free_ char *what = NULL, *text = NULL;
        va_list ap;
        int r;

        if (strv_length(p->warnings) >= TEXTPROTO_MAX_WARNINGS) {
                p->n_warnings_dropped++;
                return 0;
        }
        va_start(ap, format);
        r = vasprintf(&what, format, ap);
        va_end(ap);
        if (r < 0) {
                what = NULL;
                return -ENOMEM;
        }
        if (asprintf(&text, "%s:%u:%u: %s", p->source, at->line, at->column, what) < 0) {
                text = NULL;
                return -ENOMEM;
        }
        return strv_extend(&p->warnings, text);
}
