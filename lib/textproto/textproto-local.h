/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Internals of the text-format parser, shared by its parts:
 *   textproto-lexer.c   tokens: blanks, comments, names, numbers, quoted literals;
 *   textproto-errors.c  error messages, with "did you mean" for mistyped field names;
 *   textproto-values.c  scalar values: integers, floats, bools, enums, strings;
 *   textproto.c         messages and fields, and textproto_parse() itself.
 * Nothing here is part of libtracebus's public API (textproto.h).
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"
#include "textproto.h"

/* How much of an offending token an error message quotes. */
#define SHOW_MAX 40U
#define SHOW_SIZE (SHOW_MAX * 4U + 8U)

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
        bool lossy;             /* TEXTPROTO_LOSSY: drop unknown names with a warning each */
        char **warnings;
        size_t n_warnings_dropped;  /* beyond TEXTPROTO_MAX_WARNINGS */
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

/* textproto-lexer.c: moves the lookahead token; errors only for an unterminated literal. */
int tp_parser_next(Parser *p);
int tp_parser_accept(Parser *p, char symbol);
bool tp_token_is(const Token *t, char symbol);
bool tp_token_equals(const Token *t, const char *word);
bool tp_token_equals_nocase(const Token *t, const char *word);
Token tp_token_span(const Token *first, const Token *last);
const char *tp_token_show(const Token *t, bool quote, char buf[static SHOW_SIZE]);

/* textproto-errors.c: each stores the first error in p->error and returns -EINVAL (or -ENOMEM). */
_printf_(4, 5)
int tp_parser_error_at(Parser *p, unsigned line, unsigned column, const char *format, ...);
_printf_(3, 4)
int tp_parser_error(Parser *p, const Token *at, const char *format, ...);
int tp_error_unknown_field(Parser *p, const ProtobufCMessageDescriptor *desc, const Token *name);
int tp_error_invalid_value(Parser *p, const ProtobufCFieldDescriptor *fd, const Token *value);
int tp_error_out_of_range(Parser *p, const ProtobufCFieldDescriptor *fd, const Token *value);
int tp_error_unknown_enum_value(Parser *p, const ProtobufCFieldDescriptor *fd, const Token *t, bool quote);
/* ... and the warnings of lossy parsing: each returns 0 or -ENOMEM. */
_printf_(3, 4)
int tp_parser_warn(Parser *p, const Token *at, const char *format, ...);
int tp_warn_unknown_field(Parser *p, const ProtobufCMessageDescriptor *desc, const Token *name);
int tp_warn_unknown_enum_value(Parser *p, const ProtobufCFieldDescriptor *fd, const Token *t, bool quote);
const char *tp_type_name(ProtobufCType type);

/* textproto-values.c: parse the lookahead as a value of field @fd into @ret. tp_parse_enum()
 * returns 1 when lossy parsing dropped the value (nothing to store). */
int tp_parse_integer(Parser *p, const ProtobufCFieldDescriptor *fd, Value *ret, Token *ret_token);
int tp_parse_float(Parser *p, const ProtobufCFieldDescriptor *fd, Value *ret);
int tp_parse_bool(Parser *p, const ProtobufCFieldDescriptor *fd, Value *ret);
int tp_parse_enum(Parser *p, const ProtobufCFieldDescriptor *fd, Value *ret);
int tp_parse_string(Parser *p, const ProtobufCFieldDescriptor *fd, Value *ret);

/* textproto.c */
size_t tp_type_size(ProtobufCType type);
