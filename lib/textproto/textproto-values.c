/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Scalar values of the text format, checked against the field's type: integers
 * (decimal, hex, octal; range-checked), floats, bools, enums by name or number,
 * and strings or bytes with C escapes.
 */
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "parse-util.h"
#include "textproto-local.h"

static void locale_freep(locale_t *l) {
        if (*l != (locale_t) 0)
                freelocale(*l);
}

/* Integers */

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
                int d = hex_digit_value(*s);

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
        bool wide = tp_type_size(type) == 8;

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

        r = tp_parser_accept(p, '-');
        if (r < 0)
                return r;
        *ret_negative = r > 0;
        *ret_token = tp_token_span(&first, &p->token);
        r = integer_from_token(&p->token, ret_magnitude);
        if (r < 0)
                return r;
        return tp_parser_next(p);
}

/* Also stores in @ret_token the value as written, for the caller's messages. */
int tp_parse_integer(Parser *p, const ProtobufCFieldDescriptor *fd, Value *ret, Token *ret_token) {
        uint64_t magnitude = 0;
        bool negative = false;
        Token t;
        int r;

        r = parse_signed_number(p, &negative, &magnitude, &t);
        *ret_token = t;
        if (r == -ERANGE)
                return tp_error_out_of_range(p, fd, &t);
        /* -EINVAL without a message is a token that is no integer; with one, the tokenizer failed. */
        if (r == -EINVAL && !p->error)
                return tp_error_invalid_value(p, fd, &t);
        if (r < 0)
                return r;
        if (!integer_fits(fd->type, negative, magnitude))
                return tp_error_out_of_range(p, fd, &t);
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

int tp_parse_float(Parser *p, const ProtobufCFieldDescriptor *fd, Value *ret) {
        Token first = p->token, t;
        bool negative;
        double d;
        int r;

        r = tp_parser_accept(p, '-');
        if (r < 0)
                return r;
        negative = r > 0;
        t = tp_token_span(&first, &p->token);
        if (tp_token_equals_nocase(&p->token, "inf") || tp_token_equals_nocase(&p->token, "infinity"))
                d = HUGE_VAL;
        else if (tp_token_equals_nocase(&p->token, "nan"))
                d = NAN;
        else {
                r = float_from_token(&p->token, &d);
                if (r == -EINVAL)
                        return tp_error_invalid_value(p, fd, &t);
                if (r < 0)
                        return r;
        }
        if (negative)
                d = -d;
        if (fd->type == PROTOBUF_C_TYPE_FLOAT)
                ret->f = (float) d;
        else
                ret->d = d;
        return tp_parser_next(p);
}

/* Booleans and enums */

int tp_parse_bool(Parser *p, const ProtobufCFieldDescriptor *fd, Value *ret) {
        const Token *t = &p->token;
        uint64_t v;

        if (tp_token_equals(t, "true") || tp_token_equals(t, "True") || tp_token_equals(t, "t"))
                ret->b = true;
        else if (tp_token_equals(t, "false") || tp_token_equals(t, "False") || tp_token_equals(t, "f"))
                ret->b = false;
        else if (integer_from_token(t, &v) >= 0 && v <= 1)
                ret->b = v;
        else
                return tp_error_invalid_value(p, fd, t);
        return tp_parser_next(p);
}

static const ProtobufCEnumValue *enum_find(const ProtobufCEnumDescriptor *ed, const Token *name) {
        for (unsigned i = 0; i < ed->n_values; i++)
                if (strlen(ed->values[i].name) == name->len &&
                    memcmp(ed->values[i].name, name->start, name->len) == 0)
                        return &ed->values[i];
        return NULL;
}

/* A name the enum lacks: an error, or in lossy mode a warning and 1 (value dropped). */
static int enum_value_unknown(Parser *p, const ProtobufCFieldDescriptor *fd, const Token *t, bool quote) {
        int r;

        if (!p->lossy)
                return tp_error_unknown_enum_value(p, fd, t, quote);
        r = tp_warn_unknown_enum_value(p, fd, t, quote);
        if (r < 0)
                return r;
        r = tp_parser_next(p);
        return r < 0 ? r : 1;
}

int tp_parse_enum(Parser *p, const ProtobufCFieldDescriptor *fd, Value *ret) {
        const ProtobufCEnumDescriptor *ed = fd->descriptor;
        const ProtobufCEnumValue *ev;
        Token t = p->token;

        assert(ed->magic == PROTOBUF_C__ENUM_DESCRIPTOR_MAGIC);

        if (t.type == TOKEN_IDENTIFIER) {
                ev = enum_find(ed, &t);
                if (!ev)
                        return enum_value_unknown(p, fd, &t, true);
                ret->e = ev->value;
                return tp_parser_next(p);
        }

        /* By number: it must still be one of the declared values (proto2 enums are closed). */
        int r = tp_parse_integer(p, fd, ret, &t);
        if (r < 0)
                return r;
        if (!protobuf_c_enum_descriptor_get_value(ed, ret->e)) {
                r = p->lossy ? tp_warn_unknown_enum_value(p, fd, &t, false) : tp_error_unknown_enum_value(p, fd, &t, false);
                return r < 0 ? r : 1;
        }
        return 0;
}

/* Strings and bytes */

static int hex_digits(const char *s, const char *e, unsigned min, unsigned max, uint32_t *ret) {
        unsigned n = 0;
        uint32_t v = 0;

        for (; n < max && s + n < e && hex_digit_value(s[n]) >= 0; n++)
                v = v * 16 + hex_digit_value(s[n]);
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
                        return tp_parser_error_at(p, t->line, t->column + (unsigned) (escape - t->start),
                                               "invalid escape %s in string", tp_token_show(&bad, true, shown));
                }
                *len += n;
        }
        return 0;
}

/* One or more adjacent literals, concatenated as in C: "a" 'b' is "ab". */
int tp_parse_string(Parser *p, const ProtobufCFieldDescriptor *fd, Value *ret) {
        _cleanup_free_ char *buf = NULL;
        Token first = p->token;
        size_t len = 0;
        char shown[SHOW_SIZE];
        int r;

        if (first.type != TOKEN_STRING)
                return tp_parser_error(p, &first, "expected a quoted string for %s field '%s', got %s",
                                    tp_type_name(fd->type), fd->name, tp_token_show(&first, true, shown));
        while (p->token.type == TOKEN_STRING) {
                char *n = realloc(buf, len + p->token.len + 1);

                if (!n)
                        return -ENOMEM;
                buf = n;
                r = string_decode(p, &p->token, buf, &len);
                if (r < 0)
                        return r;
                r = tp_parser_next(p);
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
                return tp_parser_error(p, &first, "string field '%s' cannot contain a NUL character", fd->name);
        ret->s = TAKE_PTR(buf);
        return 0;
}
