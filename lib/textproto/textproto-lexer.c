/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The tokenizer of the text format: '#' comments and blanks are skipped; a token
 * is a name, a number (scanned greedily), one quoted literal or one other byte.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "textproto-local.h"

/* Quotes (part of) a token for a message. Input bytes outside printable ASCII
 * are escaped, so that messages are valid UTF-8 for D-Bus and safe for terminals. */
const char *tp_token_show(const Token *t, bool quote, char buf[static SHOW_SIZE]) {
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
Token tp_token_span(const Token *first, const Token *last) {
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
        return tp_parser_error(p, &p->token, "unterminated string");
}

int tp_parser_next(Parser *p) {
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

bool tp_token_is(const Token *t, char symbol) {
        return t->type == TOKEN_SYMBOL && t->start[0] == symbol;
}

bool tp_token_equals(const Token *t, const char *word) {
        return t->type == TOKEN_IDENTIFIER && strlen(word) == t->len && memcmp(t->start, word, t->len) == 0;
}

bool tp_token_equals_nocase(const Token *t, const char *word) {
        return t->type == TOKEN_IDENTIFIER && strlen(word) == t->len && strncasecmp(t->start, word, t->len) == 0;
}

/* Returns 1 and moves on if the lookahead is @symbol, 0 if it is not. */
int tp_parser_accept(Parser *p, char symbol) {
        int r;

        if (!tp_token_is(&p->token, symbol))
                return 0;
        r = tp_parser_next(p);
        if (r < 0)
                return r;
        return 1;
}
