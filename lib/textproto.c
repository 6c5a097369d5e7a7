/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Protobuf text format ("pbtxt", what `perfetto --txt` and `protoc --encode`
 * read), driven by protobuf-c descriptors: nothing here knows a field of ours.
 *
 * The grammar is that of protobuf's TextFormat:
 *   message := (field [',' | ';'])*
 *   field   := NAME ':' value | NAME ':' '[' [value (',' value)*] ']'
 *            | NAME [':'] ('{' message '}' | '<' message '>' | '[' msgs ']')
 *   value   := ['-'] NUMBER | IDENTIFIER | STRING+
 * with '#' comments. The result is built the way protobuf_c_message_unpack()
 * with the default allocator would build it, so protobuf_c_message_free_unpacked()
 * releases it, partial or complete.
 */
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "macro.h"
#include "textproto.h"

/* How much of an offending token an error message quotes. */
#define SHOW_MAX 40U
#define SHOW_SIZE (SHOW_MAX * 4U + 8U)
/* Enums longer than this are listed in part in "expected one of" hints. */
#define ENUM_HINT_MAX 16U
/* Names longer than this get no "did you mean" (bounds the edit distance cost). */
#define SUGGEST_MAX_LEN 128U

typedef enum TokenType {
        TOKEN_END,
        TOKEN_IDENTIFIER,
        TOKEN_NUMBER,
        TOKEN_STRING,           /* one quoted literal, quotes included */
        TOKEN_SYMBOL,           /* any other single byte */
} TokenType;

typedef struct Token {
        TokenType type;
        const char *start;
        size_t len;
        unsigned line;          /* 1-based */
        unsigned column;        /* 1-based, in bytes */
} Token;

typedef struct Parser {
        const char *source;
        const char *pos;        /* next byte the tokenizer reads */
        const char *end;
        unsigned line;          /* position of pos */
        unsigned column;
        Token token;            /* the lookahead token */
        unsigned depth;         /* nesting below the top-level message */
        char *error;
} Parser;

/* Storage of one value, laid out as protobuf-c stores it: the member in use starts at offset 0. */
typedef union Value {
        int32_t i32;
        uint32_t u32;
        int64_t i64;
        uint64_t u64;
        float f;
        double d;
        protobuf_c_boolean b;
        int e;
        char *s;
        ProtobufCBinaryData bytes;
        ProtobufCMessage *m;
} Value;

static void message_freep(ProtobufCMessage **m) {
        if (*m)
                protobuf_c_message_free_unpacked(*m, NULL);
}

static void locale_freep(locale_t *l) {
        if (*l != (locale_t) 0)
                freelocale(*l);
}

static ProtobufCMessage *message_new(const ProtobufCMessageDescriptor *desc) {
        ProtobufCMessage *m;

        assert(desc->magic == PROTOBUF_C__MESSAGE_DESCRIPTOR_MAGIC);

        m = malloc(desc->sizeof_message);
        if (!m)
                return NULL;
        protobuf_c_message_init(desc, m);
        return m;
}

static void value_done(const ProtobufCFieldDescriptor *fd, Value *v) {
        if (fd->type == PROTOBUF_C_TYPE_STRING)
                v->s = mfree(v->s);
        else if (fd->type == PROTOBUF_C_TYPE_BYTES)
                v->bytes.data = mfree(v->bytes.data);
        else if (fd->type == PROTOBUF_C_TYPE_MESSAGE && v->m)
                v->m = (protobuf_c_message_free_unpacked(v->m, NULL), NULL);
}

/* The size of one element, as protobuf-c lays out singular members and repeated arrays. */
static size_t type_size(ProtobufCType type) {
        switch (type) {
        case PROTOBUF_C_TYPE_INT32:
        case PROTOBUF_C_TYPE_SINT32:
        case PROTOBUF_C_TYPE_SFIXED32:
        case PROTOBUF_C_TYPE_UINT32:
        case PROTOBUF_C_TYPE_FIXED32:
        case PROTOBUF_C_TYPE_FLOAT:
                return 4;
        case PROTOBUF_C_TYPE_INT64:
        case PROTOBUF_C_TYPE_SINT64:
        case PROTOBUF_C_TYPE_SFIXED64:
        case PROTOBUF_C_TYPE_UINT64:
        case PROTOBUF_C_TYPE_FIXED64:
        case PROTOBUF_C_TYPE_DOUBLE:
                return 8;
        case PROTOBUF_C_TYPE_BOOL:
                return sizeof(protobuf_c_boolean);
        case PROTOBUF_C_TYPE_ENUM:
                return sizeof(int);
        case PROTOBUF_C_TYPE_STRING:
                return sizeof(char *);
        case PROTOBUF_C_TYPE_BYTES:
                return sizeof(ProtobufCBinaryData);
        case PROTOBUF_C_TYPE_MESSAGE:
                return sizeof(ProtobufCMessage *);
        }
        assert(false);
        return 0;
}

static const char *type_name(ProtobufCType type) {
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
static int parser_error_at(Parser *p, unsigned line, unsigned column, const char *format, ...) {
        va_list ap;
        int r;

        va_start(ap, format);
        r = parser_verror_at(p, line, column, format, ap);
        va_end(ap);
        return r;
}

_printf_(3, 4)
static int parser_error(Parser *p, const Token *at, const char *format, ...) {
        va_list ap;
        int r;

        va_start(ap, format);
        r = parser_verror_at(p, at->line, at->column, format, ap);
        va_end(ap);
        return r;
}

/* Quotes (part of) a token for a message. Input bytes outside printable ASCII
 * are escaped, so that messages are valid UTF-8 for D-Bus and safe for terminals. */
static const char *token_show(const Token *t, bool quote, char buf[static SHOW_SIZE]) {
        size_t n = 0, len = MIN(t->len, (size_t) SHOW_MAX);

        if (t->type == TOKEN_END)
                return "end of input";
        if (quote)
                buf[n++] = '\'';
        for (size_t i = 0; i < len; i++) {
                unsigned char c = t->start[i];

                if (c >= 0x20 && c < 0x7f)
                        buf[n++] = c;
                else
                        n += snprintf(buf + n, SHOW_SIZE - n, "\\x%02x", c);
        }
        if (t->len > len) {
                memcpy(buf + n, "...", 3);
                n += 3;
        }
        if (quote)
                buf[n++] = '\'';
        buf[n] = '\0';
        return buf;
}

/* A token covering @first through @last, to quote "-1" as one value. A sign
 * before the end of input is quoted alone. */
static Token token_span(const Token *first, const Token *last) {
        Token t = *first;

        if (last->type == TOKEN_END)
                return t;
        t.type = last->type;
        t.len = last->start + last->len - first->start;
        return t;
}

/* Tokenizer */

static bool is_ident_start(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_digit(char c) {
        return c >= '0' && c <= '9';
}

static bool is_ident_char(char c) {
        return is_ident_start(c) || is_digit(c);
}

static bool is_space(char c) {
        return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static void parser_skip(Parser *p, size_t n) {
        for (; n > 0; n--, p->pos++) {
                if (*p->pos == '\n') {
                        p->line++;
                        p->column = 1;
                } else
                        p->column++;
        }
}

static void parser_skip_blanks(Parser *p) {
        while (p->pos < p->end) {
                if (*p->pos == '#') {
                        const char *nl = memchr(p->pos, '\n', p->end - p->pos);

                        parser_skip(p, (nl ?: p->end) - p->pos);
                } else if (is_space(*p->pos))
                        parser_skip(p, 1);
                else
                        break;
        }
}

/* Numbers are scanned greedily, as protobuf's tokenizer does: "10abc" is one bad
 * number rather than a number and a field name. A sign belongs to the number only
 * right after a decimal exponent. The value is validated when converted. */
static size_t scan_number(const char *s, const char *end) {
        bool hex = end - s >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
        const char *q = s;

        while (q < end) {
                if (is_ident_char(*q) || *q == '.')
                        q++;
                else if (!hex && q > s && (*q == '+' || *q == '-') && (q[-1] == 'e' || q[-1] == 'E'))
                        q++;
                else
                        break;
        }
        return q - s;
}

static int scan_string(Parser *p, size_t *ret_len) {
        char quote = *p->pos;

        /* Like protobuf, a literal may not span lines; an escaped newline ends it too. */
        for (const char *q = p->pos + 1; q < p->end && *q != '\n'; q++) {
                if (*q == quote) {
                        *ret_len = q + 1 - p->pos;
                        return 0;
                }
                if (*q == '\\' && q + 1 < p->end && q[1] != '\n')
                        q++;
        }
        return parser_error(p, &p->token, "unterminated string");
}

static int parser_next(Parser *p) {
        size_t len = 1;
        char c;
        int r;

        parser_skip_blanks(p);
        p->token = (Token) { .start = p->pos, .line = p->line, .column = p->column };
        if (p->pos >= p->end) {
                p->token.type = TOKEN_END;
                return 0;
        }

        c = *p->pos;
        if (is_ident_start(c)) {
                p->token.type = TOKEN_IDENTIFIER;
                while (p->pos + len < p->end && is_ident_char(p->pos[len]))
                        len++;
        } else if (is_digit(c) || (c == '.' && p->pos + 1 < p->end && is_digit(p->pos[1]))) {
                p->token.type = TOKEN_NUMBER;
                len = scan_number(p->pos, p->end);
        } else if (c == '"' || c == '\'') {
                p->token.type = TOKEN_STRING;
                r = scan_string(p, &len);
                if (r < 0)
                        return r;
        } else
                p->token.type = TOKEN_SYMBOL;

        p->token.len = len;
        parser_skip(p, len);
        return 0;
}

static bool token_is(const Token *t, char symbol) {
        return t->type == TOKEN_SYMBOL && t->start[0] == symbol;
}

static bool token_equals(const Token *t, const char *word) {
        return t->type == TOKEN_IDENTIFIER && strlen(word) == t->len && memcmp(t->start, word, t->len) == 0;
}

static bool token_equals_nocase(const Token *t, const char *word) {
        return t->type == TOKEN_IDENTIFIER && strlen(word) == t->len && strncasecmp(t->start, word, t->len) == 0;
}

/* Returns 1 and moves on if the lookahead is @symbol, 0 if it is not. */
static int parser_accept(Parser *p, char symbol) {
        int r;

        if (!token_is(&p->token, symbol))
                return 0;
        r = parser_next(p);
        if (r < 0)
                return r;
        return 1;
}

/* Field lookup, with a "did you mean" for typos */

static const ProtobufCFieldDescriptor *field_find(const ProtobufCMessageDescriptor *desc, const Token *name) {
        for (unsigned i = 0; i < desc->n_fields; i++)
                if (strlen(desc->fields[i].name) == name->len &&
                    memcmp(desc->fields[i].name, name->start, name->len) == 0)
                        return &desc->fields[i];
        return NULL;
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

static int error_unknown_field(Parser *p, const ProtobufCMessageDescriptor *desc, const Token *name) {
        const char *suggestion = field_suggest(desc, name);
        char shown[SHOW_SIZE];

        if (suggestion)
                return parser_error(p, name, "unknown field %s in %s; did you mean '%s'?",
                                    token_show(name, true, shown), desc->short_name, suggestion);
        return parser_error(p, name, "unknown field %s in %s", token_show(name, true, shown), desc->short_name);
}

static int error_invalid_value(Parser *p, const ProtobufCFieldDescriptor *fd, const Token *value) {
        char shown[SHOW_SIZE];

        return parser_error(p, value, "invalid value %s for %s field '%s'",
                            token_show(value, true, shown), type_name(fd->type), fd->name);
}

static int error_out_of_range(Parser *p, const ProtobufCFieldDescriptor *fd, const Token *value) {
        char shown[SHOW_SIZE];

        return parser_error(p, value, "value %s out of range for %s field '%s'",
                            token_show(value, false, shown), type_name(fd->type), fd->name);
}

/* Integers */

static int digit_value(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

/* Decimal, 0x hexadecimal or 0-prefixed octal, as in C and protobuf. Returns
 * -EINVAL if the token is no integer literal, -ERANGE if it exceeds 64 bits. */
static int integer_from_token(const Token *t, uint64_t *ret) {
        const char *s = t->start, *e = t->start + t->len;
        bool overflow = false;
        unsigned base = 10;
        uint64_t v = 0;

        if (t->type != TOKEN_NUMBER)
                return -EINVAL;
        if (e - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
                base = 16;
                s += 2;
        } else if (e - s > 1 && s[0] == '0') {
                base = 8;
                s++;
        }
        for (; s < e; s++) {
                int d = digit_value(*s);

                if (d < 0 || (unsigned) d >= base)
                        return -EINVAL;
                /* Keep scanning after an overflow: "99999999999999999999x" is invalid, not too big. */
                if (v > (UINT64_MAX - d) / base)
                        overflow = true;
                else
                        v = v * base + d;
        }
        if (overflow)
                return -ERANGE;
        *ret = v;
        return 0;
}

static bool integer_fits(ProtobufCType type, bool negative, uint64_t magnitude) {
        switch (type) {
        case PROTOBUF_C_TYPE_INT32:
        case PROTOBUF_C_TYPE_SINT32:
        case PROTOBUF_C_TYPE_SFIXED32:
        case PROTOBUF_C_TYPE_ENUM:
                return magnitude <= (uint64_t) INT32_MAX + negative;
        case PROTOBUF_C_TYPE_INT64:
        case PROTOBUF_C_TYPE_SINT64:
        case PROTOBUF_C_TYPE_SFIXED64:
                return magnitude <= (uint64_t) INT64_MAX + negative;
        case PROTOBUF_C_TYPE_UINT32:
        case PROTOBUF_C_TYPE_FIXED32:
                return !negative && magnitude <= UINT32_MAX;
        default:
                return !negative;
        }
}

static bool type_is_unsigned(ProtobufCType type) {
        return type == PROTOBUF_C_TYPE_UINT32 || type == PROTOBUF_C_TYPE_FIXED32 ||
               type == PROTOBUF_C_TYPE_UINT64 || type == PROTOBUF_C_TYPE_FIXED64;
}

/* Stores a value integer_fits() accepted for @type. */
static void integer_store(ProtobufCType type, bool negative, uint64_t magnitude, Value *ret) {
        /* Written so that INT64_MIN never passes through a signed overflow. */
        int64_t v = negative && magnitude > 0 ? -(int64_t) (magnitude - 1) - 1 : (int64_t) magnitude;
        bool wide = type_size(type) == 8;

        if (type_is_unsigned(type) && wide)
                ret->u64 = magnitude;
        else if (type_is_unsigned(type))
                ret->u32 = (uint32_t) magnitude;
        else if (wide)
                ret->i64 = v;
        else
                ret->i32 = (int32_t) v;
}

/* Parses ['-'] NUMBER into @ret_magnitude; @ret_token spans the sign too. */
static int parse_signed_number(Parser *p, bool *ret_negative, uint64_t *ret_magnitude, Token *ret_token) {
        Token first = p->token;
        int r;

        r = parser_accept(p, '-');
        if (r < 0)
                return r;
        *ret_negative = r > 0;
        *ret_token = token_span(&first, &p->token);
        r = integer_from_token(&p->token, ret_magnitude);
        if (r < 0)
                return r;
        return parser_next(p);
}

/* Also stores in @ret_token the value as written, for the caller's messages. */
static int parse_integer(Parser *p, const ProtobufCFieldDescriptor *fd, Value *ret, Token *ret_token) {
        uint64_t magnitude = 0;
        bool negative = false;
        Token t;
        int r;

        r = parse_signed_number(p, &negative, &magnitude, &t);
        *ret_token = t;
        if (r == -ERANGE)
                return error_out_of_range(p, fd, &t);
        /* -EINVAL without a message is a token that is no integer; with one, the tokenizer failed. */
        if (r == -EINVAL && !p->error)
                return error_invalid_value(p, fd, &t);
        if (r < 0)
                return r;
        if (!integer_fits(fd->type, negative, magnitude))
                return error_out_of_range(p, fd, &t);
        integer_store(fd->type, negative, magnitude, ret);
        return 0;
}

/* Floating point */

static int float_from_token(const Token *t, double *ret) {
        _cleanup_(locale_freep) locale_t c_locale = (locale_t) 0;
        _cleanup_free_ char *s = NULL;
        size_t len = t->len;
        char *end;

        if (t->type != TOKEN_NUMBER || (len > 1 && t->start[0] == '0' && (t->start[1] == 'x' || t->start[1] == 'X')))
                return -EINVAL;
        /* Perfetto and protobuf accept a C-style "1.5f". */
        if (t->start[len - 1] == 'f' || t->start[len - 1] == 'F')
                len--;
        s = strndup(t->start, len);
        if (!s)
                return -ENOMEM;
        /* The service may run under any locale; the text format's decimal point is '.'. */
        c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t) 0);
        if (c_locale == (locale_t) 0)
                return -ENOMEM;
        *ret = strtod_l(s, &end, c_locale);
        if (len == 0 || *end != '\0')
                return -EINVAL;
        return 0;
}

static int parse_float(Parser *p, const ProtobufCFieldDescriptor *fd, Value *ret) {
        Token first = p->token, t;
        bool negative;
        double d;
        int r;

        r = parser_accept(p, '-');
        if (r < 0)
                return r;
        negative = r > 0;
        t = token_span(&first, &p->token);
        if (token_equals_nocase(&p->token, "inf") || token_equals_nocase(&p->token, "infinity"))
                d = HUGE_VAL;
        else if (token_equals_nocase(&p->token, "nan"))
                d = NAN;
        else {
                r = float_from_token(&p->token, &d);
                if (r == -EINVAL)
                        return error_invalid_value(p, fd, &t);
                if (r < 0)
                        return r;
        }
        if (negative)
                d = -d;
        if (fd->type == PROTOBUF_C_TYPE_FLOAT)
                ret->f = (float) d;
        else
                ret->d = d;
        return parser_next(p);
}

/* Booleans and enums */

static int parse_bool(Parser *p, const ProtobufCFieldDescriptor *fd, Value *ret) {
        const Token *t = &p->token;
        uint64_t v;

        if (token_equals(t, "true") || token_equals(t, "True") || token_equals(t, "t"))
                ret->b = true;
        else if (token_equals(t, "false") || token_equals(t, "False") || token_equals(t, "f"))
                ret->b = false;
        else if (integer_from_token(t, &v) >= 0 && v <= 1)
                ret->b = v;
        else
                return error_invalid_value(p, fd, t);
        return parser_next(p);
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

static int error_unknown_enum_value(Parser *p, const ProtobufCFieldDescriptor *fd, const Token *t, bool quote) {
        _cleanup_free_ char *hint = enum_hint(fd->descriptor);
        char shown[SHOW_SIZE];

        if (!hint)
                return -ENOMEM;
        return parser_error(p, t, "unknown value %s for enum field '%s' (expected one of %s)",
                            token_show(t, quote, shown), fd->name, hint);
}

static const ProtobufCEnumValue *enum_find(const ProtobufCEnumDescriptor *ed, const Token *name) {
        for (unsigned i = 0; i < ed->n_values; i++)
                if (strlen(ed->values[i].name) == name->len &&
                    memcmp(ed->values[i].name, name->start, name->len) == 0)
                        return &ed->values[i];
        return NULL;
}

static int parse_enum(Parser *p, const ProtobufCFieldDescriptor *fd, Value *ret) {
        const ProtobufCEnumDescriptor *ed = fd->descriptor;
        const ProtobufCEnumValue *ev;
        Token t = p->token;

        assert(ed->magic == PROTOBUF_C__ENUM_DESCRIPTOR_MAGIC);

        if (t.type == TOKEN_IDENTIFIER) {
                ev = enum_find(ed, &t);
                if (!ev)
                        return error_unknown_enum_value(p, fd, &t, true);
                ret->e = ev->value;
                return parser_next(p);
        }

        /* By number: it must still be one of the declared values (proto2 enums are closed). */
        int r = parse_integer(p, fd, ret, &t);
        if (r < 0)
                return r;
        if (!protobuf_c_enum_descriptor_get_value(ed, ret->e))
                return error_unknown_enum_value(p, fd, &t, false);
        return 0;
}

/* Strings and bytes */

static int hex_digits(const char *s, const char *e, unsigned min, unsigned max, uint32_t *ret) {
        unsigned n = 0;
        uint32_t v = 0;

        for (; n < max && s + n < e && digit_value(s[n]) >= 0; n++)
                v = v * 16 + digit_value(s[n]);
        if (n < min)
                return -EINVAL;
        *ret = v;
        return n;
}

static size_t utf8_encode(uint32_t c, char *out) {
        if (c < 0x80) {
                out[0] = c;
                return 1;
        }
        if (c < 0x800) {
                out[0] = 0xc0 | (c >> 6);
                out[1] = 0x80 | (c & 0x3f);
                return 2;
        }
        if (c < 0x10000) {
                out[0] = 0xe0 | (c >> 12);
                out[1] = 0x80 | ((c >> 6) & 0x3f);
                out[2] = 0x80 | (c & 0x3f);
                return 3;
        }
        out[0] = 0xf0 | (c >> 18);
        out[1] = 0x80 | ((c >> 12) & 0x3f);
        out[2] = 0x80 | ((c >> 6) & 0x3f);
        out[3] = 0x80 | (c & 0x3f);
        return 4;
}

/* Decodes the escape after the backslash at *@s into @out. Returns the bytes
 * written and advances *@s, or -EINVAL. No escape expands: the output of a
 * literal always fits in its source length. */
static int decode_escape(const char **s, const char *e, char *out) {
        static const char simple[] = "a\ab\bf\fn\nr\rt\tv\v\\\\''\"\"??";
        const char *q = *s + 1;
        uint32_t v = 0;
        int n;

        for (size_t i = 0; i < sizeof(simple) - 1; i += 2)
                if (*q == simple[i]) {
                        *s = q + 1;
                        *out = simple[i + 1];
                        return 1;
                }
        if (*q >= '0' && *q <= '7') {
                for (n = 0; n < 3 && q + n < e && q[n] >= '0' && q[n] <= '7'; n++)
                        v = v * 8 + (q[n] - '0');
                if (v > 0xff)
                        return -EINVAL;
                *s = q + n;
                *out = (char) v;
                return 1;
        }
        if (*q == 'x' || *q == 'X') {
                n = hex_digits(q + 1, e, 1, 2, &v);
                if (n < 0)
                        return n;
                *s = q + 1 + n;
                *out = (char) v;
                return 1;
        }
        if (*q == 'u' || *q == 'U') {
                n = hex_digits(q + 1, e, *q == 'u' ? 4 : 8, *q == 'u' ? 4 : 8, &v);
                if (n < 0 || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
                        return -EINVAL;
                *s = q + 1 + n;
                return utf8_encode(v, out);
        }
        return -EINVAL;
}

/* Appends the decoded contents of literal @t to @buf at *@len. */
static int string_decode(Parser *p, const Token *t, char *buf, size_t *len) {
        const char *s = t->start + 1, *e = t->start + t->len - 1;

        while (s < e) {
                const char *escape = s;
                int n;

                if (*s != '\\') {
                        buf[(*len)++] = *s++;
                        continue;
                }
                n = decode_escape(&s, e, buf + *len);
                if (n < 0) {
                        Token bad = { .type = TOKEN_SYMBOL, .start = escape, .len = MIN((size_t) 2, (size_t) (e - escape)) };
                        char shown[SHOW_SIZE];

                        /* Literals never span lines, so the column is an offset from the quote. */
                        return parser_error_at(p, t->line, t->column + (unsigned) (escape - t->start),
                                               "invalid escape %s in string", token_show(&bad, true, shown));
                }
                *len += n;
        }
        return 0;
}

/* One or more adjacent literals, concatenated as in C: "a" 'b' is "ab". */
static int parse_string(Parser *p, const ProtobufCFieldDescriptor *fd, Value *ret) {
        _cleanup_free_ char *buf = NULL;
        Token first = p->token;
        size_t len = 0;
        char shown[SHOW_SIZE];
        int r;

        if (first.type != TOKEN_STRING)
                return parser_error(p, &first, "expected a quoted string for %s field '%s', got %s",
                                    type_name(fd->type), fd->name, token_show(&first, true, shown));
        while (p->token.type == TOKEN_STRING) {
                char *n = realloc(buf, len + p->token.len + 1);

                if (!n)
                        return -ENOMEM;
                buf = n;
                r = string_decode(p, &p->token, buf, &len);
                if (r < 0)
                        return r;
                r = parser_next(p);
                if (r < 0)
                        return r;
        }
        buf[len] = '\0';

        if (fd->type == PROTOBUF_C_TYPE_BYTES) {
                ret->bytes = (ProtobufCBinaryData) { .len = len, .data = (uint8_t *) TAKE_PTR(buf) };
                return 0;
        }
        /* A C string cannot hold it: protobuf-c would silently cut the value short. */
        if (memchr(buf, '\0', len))
                return parser_error(p, &first, "string field '%s' cannot contain a NUL character", fd->name);
        ret->s = TAKE_PTR(buf);
        return 0;
}

/* Messages and fields */

static int parse_fields(Parser *p, const ProtobufCMessageDescriptor *desc, ProtobufCMessage *m, char close);

static int parse_message_value(Parser *p, const ProtobufCFieldDescriptor *fd, Value *ret) {
        _cleanup_(message_freep) ProtobufCMessage *m = NULL;
        Token open = p->token;
        char close;
        int r;

        if (!token_is(&open, '{') && !token_is(&open, '<'))
                return parser_error(p, &open, "expected '{' to open message field '%s'", fd->name);
        close = token_is(&open, '{') ? '}' : '>';
        /* Bounds the recursion: the input comes from unprivileged clients. */
        if (p->depth >= TEXTPROTO_MAX_DEPTH)
                return parser_error(p, &open, "messages nested deeper than %u levels", TEXTPROTO_MAX_DEPTH);

        m = message_new(fd->descriptor);
        if (!m)
                return -ENOMEM;
        r = parser_next(p);
        if (r < 0)
                return r;
        p->depth++;
        r = parse_fields(p, fd->descriptor, m, close);
        p->depth--;
        if (r < 0)
                return r;
        r = parser_next(p);             /* the closing brace */
        if (r < 0)
                return r;
        ret->m = TAKE_PTR(m);
        return 0;
}

static int parse_value(Parser *p, const ProtobufCFieldDescriptor *fd, Value *ret) {
        if (p->token.type == TOKEN_END)
                return parser_error(p, &p->token, "expected a value for field '%s', got end of input", fd->name);

        switch (fd->type) {
        case PROTOBUF_C_TYPE_FLOAT:
        case PROTOBUF_C_TYPE_DOUBLE:
                return parse_float(p, fd, ret);
        case PROTOBUF_C_TYPE_BOOL:
                return parse_bool(p, fd, ret);
        case PROTOBUF_C_TYPE_ENUM:
                return parse_enum(p, fd, ret);
        case PROTOBUF_C_TYPE_STRING:
        case PROTOBUF_C_TYPE_BYTES:
                return parse_string(p, fd, ret);
        case PROTOBUF_C_TYPE_MESSAGE:
                return parse_message_value(p, fd, ret);
        default: {
                Token unused;

                return parse_integer(p, fd, ret, &unused);
        }
        }
}

/* Appends to a repeated field or sets a singular one; takes ownership of @v. */
static int field_store(ProtobufCMessage *m, const ProtobufCFieldDescriptor *fd, Value *v) {
        uint8_t *base = (uint8_t *) m;
        size_t size = type_size(fd->type);

        if (fd->label == PROTOBUF_C_LABEL_REPEATED) {
                size_t *n = (size_t *) (base + fd->quantifier_offset);
                uint8_t **array = (uint8_t **) (base + fd->offset);

                /* No room for a capacity in the struct: it is implied, the next power of two. */
                if ((*n & (*n - 1)) == 0) {
                        size_t capacity = *n == 0 ? 1 : *n * 2;
                        uint8_t *a = capacity <= SIZE_MAX / size ? realloc(*array, capacity * size) : NULL;

                        if (!a) {
                                value_done(fd, v);
                                return -ENOMEM;
                        }
                        *array = a;
                }
                memcpy(*array + *n * size, v, size);
                (*n)++;
                return 0;
        }

        /* A string's previous pointer may be a shared static default: replace it, never free it. */
        memcpy(base + fd->offset, v, size);
        if (fd->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
                *(uint32_t *) (base + fd->quantifier_offset) = fd->id;
        else if (fd->quantifier_offset != 0)    /* has_xxx, for optional scalars and bytes */
                *(protobuf_c_boolean *) (base + fd->quantifier_offset) = true;
        return 0;
}

static int parse_and_store(Parser *p, const ProtobufCFieldDescriptor *fd, ProtobufCMessage *m) {
        Value v = {};
        int r;

        r = parse_value(p, fd, &v);
        if (r < 0)
                return r;
        return field_store(m, fd, &v);
}

static int parse_list(Parser *p, const ProtobufCFieldDescriptor *fd, ProtobufCMessage *m) {
        char shown[SHOW_SIZE];
        int r;

        if (fd->label != PROTOBUF_C_LABEL_REPEATED)
                return parser_error(p, &p->token, "list syntax used for non-repeated field '%s'", fd->name);
        r = parser_next(p);
        if (r < 0)
                return r;
        if (token_is(&p->token, ']'))
                return parser_next(p);

        for (;;) {
                r = parse_and_store(p, fd, m);
                if (r < 0)
                        return r;
                if (token_is(&p->token, ']'))
                        return parser_next(p);
                if (!token_is(&p->token, ','))
                        return parser_error(p, &p->token, "expected ',' or ']' in list of field '%s', got %s",
                                            fd->name, token_show(&p->token, true, shown));
                r = parser_next(p);
                if (r < 0)
                        return r;
        }
}

static const ProtobufCFieldDescriptor *field_by_id(const ProtobufCMessageDescriptor *desc, uint32_t id) {
        for (unsigned i = 0; i < desc->n_fields; i++)
                if (desc->fields[i].id == id)
                        return &desc->fields[i];
        return NULL;
}

/* A singular field may be given once, and only one member of a oneof. */
static int field_claim(Parser *p, const ProtobufCMessageDescriptor *desc, const ProtobufCMessage *m,
                       const ProtobufCFieldDescriptor *fd, bool *seen, const Token *name) {
        size_t i = fd - desc->fields;

        if (fd->label != PROTOBUF_C_LABEL_REPEATED && seen[i])
                return parser_error(p, name, "non-repeated field '%s' is set more than once", fd->name);
        if (fd->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
                uint32_t set = *(const uint32_t *) ((const uint8_t *) m + fd->quantifier_offset);
                const ProtobufCFieldDescriptor *other = set != 0 ? field_by_id(desc, set) : NULL;

                if (other && other != fd)
                        return parser_error(p, name, "field '%s' conflicts with field '%s' of the same oneof",
                                            fd->name, other->name);
        }
        seen[i] = true;
        return 0;
}

/* After the name of a message field: an optional ':', then '{', '<' or a list. */
static int parse_message_separator(Parser *p, const Token *name) {
        char shown[SHOW_SIZE];
        int r;

        r = parser_accept(p, ':');
        if (r < 0)
                return r;
        if (r > 0)      /* parse_message_value() insists on the brace */
                return 0;
        if (token_is(&p->token, '{') || token_is(&p->token, '<') || token_is(&p->token, '['))
                return 0;
        return parser_error(p, &p->token, "expected ':' or '{' after %s", token_show(name, true, shown));
}

static int parse_field(Parser *p, const ProtobufCMessageDescriptor *desc, ProtobufCMessage *m, bool *seen) {
        const ProtobufCFieldDescriptor *fd;
        Token name = p->token;
        char shown[SHOW_SIZE];
        int r;

        if (token_is(&name, '['))
                return parser_error(p, &name, "extension and Any fields ('[...]') are not supported");
        if (name.type != TOKEN_IDENTIFIER)
                return parser_error(p, &name, "expected a field name, got %s", token_show(&name, true, shown));
        fd = field_find(desc, &name);
        if (!fd)
                return error_unknown_field(p, desc, &name);
        r = field_claim(p, desc, m, fd, seen, &name);
        if (r < 0)
                return r;
        r = parser_next(p);
        if (r < 0)
                return r;

        if (fd->type == PROTOBUF_C_TYPE_MESSAGE)
                r = parse_message_separator(p, &name);
        else if ((r = parser_accept(p, ':')) == 0)
                r = parser_error(p, &p->token, "expected ':' after %s", token_show(&name, true, shown));
        if (r < 0)
                return r;

        if (token_is(&p->token, '['))
                return parse_list(p, fd, m);
        return parse_and_store(p, fd, m);
}

static int check_required(Parser *p, const ProtobufCMessageDescriptor *desc, const bool *seen) {
        for (unsigned i = 0; i < desc->n_fields; i++)
                if (desc->fields[i].label == PROTOBUF_C_LABEL_REQUIRED && !seen[i])
                        return parser_error(p, &p->token, "missing required field '%s' in %s",
                                            desc->fields[i].name, desc->short_name);
        return 0;
}

/* Parses fields into @m up to the symbol @close (left as the lookahead), or up to
 * the end of input if @close is NUL. */
static int parse_fields(Parser *p, const ProtobufCMessageDescriptor *desc, ProtobufCMessage *m, char close) {
        _cleanup_free_ bool *seen = calloc(MAX(desc->n_fields, 1U), sizeof(bool));
        int r;

        if (!seen)
                return -ENOMEM;

        for (;;) {
                if (close == '\0' ? p->token.type == TOKEN_END : token_is(&p->token, close))
                        break;
                if (p->token.type == TOKEN_END)
                        return parser_error(p, &p->token, "unexpected end of input, expected '%c'", close);
                r = parse_field(p, desc, m, seen);
                if (r < 0)
                        return r;
                r = parser_accept(p, ',');
                if (r == 0)
                        r = parser_accept(p, ';');
                if (r < 0)
                        return r;
        }
        return check_required(p, desc, seen);
}

/* Rejects what the tokenizer should never see: oversized input and NUL bytes
 * (which C strings downstream would silently cut at). */
static int check_input(Parser *p, const char *text, size_t len) {
        const char *nul;
        unsigned line = 1, column = 1;

        if (len > TEXTPROTO_MAX_SIZE)
                return parser_error_at(p, 1, 1, "input of %zu bytes is larger than the limit of %u bytes",
                                       len, TEXTPROTO_MAX_SIZE);
        nul = memchr(text, '\0', len);
        if (!nul)
                return 0;
        for (const char *q = text; q < nul; q++) {
                if (*q == '\n') {
                        line++;
                        column = 1;
                } else
                        column++;
        }
        return parser_error_at(p, line, column, "NUL byte in input");
}

static int parse_document(Parser *p, const ProtobufCMessageDescriptor *desc, ProtobufCMessage **ret) {
        _cleanup_(message_freep) ProtobufCMessage *m = NULL;
        int r;

        r = check_input(p, p->pos, p->end - p->pos);
        if (r < 0)
                return r;
        m = message_new(desc);
        if (!m)
                return -ENOMEM;
        r = parser_next(p);
        if (r < 0)
                return r;
        r = parse_fields(p, desc, m, '\0');
        if (r < 0)
                return r;
        *ret = TAKE_PTR(m);
        return 0;
}

int textproto_parse(const ProtobufCMessageDescriptor *desc,
                    const char *text, size_t len,
                    const char *source_name,
                    ProtobufCMessage **ret,
                    char **ret_error) {

        Parser p;
        int r;

        assert(desc);
        assert(text || len == 0);
        assert(ret);

        text = text ?: "";
        p = (Parser) {
                .source = source_name ?: "<input>",
                .pos = text,
                .end = text + len,
                .line = 1,
                .column = 1,
        };
        r = parse_document(&p, desc, ret);
        if (r < 0 && ret_error && p.error)
                *ret_error = TAKE_PTR(p.error);
        free(p.error);
        return r;
}
