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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strv.h"
#include "textproto-local.h"

static void message_freep(ProtobufCMessage **m) {
        if (*m)
                protobuf_c_message_free_unpacked(*m, NULL);
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
size_t tp_type_size(ProtobufCType type) {
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

/* Field lookup (the "did you mean" for a name not found is in textproto-errors.c) */

static const ProtobufCFieldDescriptor *field_find(const ProtobufCMessageDescriptor *desc, const Token *name) {
        for (unsigned i = 0; i < desc->n_fields; i++)
                if (strlen(desc->fields[i].name) == name->len &&
                    memcmp(desc->fields[i].name, name->start, name->len) == 0)
                        return &desc->fields[i];
        return NULL;
}

/* Messages and fields */

static int parse_fields(Parser *p, const ProtobufCMessageDescriptor *desc, ProtobufCMessage *m, char close);

static int parse_message_value(Parser *p, const ProtobufCFieldDescriptor *fd, Value *ret) {
        _cleanup_(message_freep) ProtobufCMessage *m = NULL;
        Token open = p->token;
        char close;
        int r;

        if (!tp_token_is(&open, '{') && !tp_token_is(&open, '<'))
                return tp_parser_error(p, &open, "expected '{' to open message field '%s'", fd->name);
        close = tp_token_is(&open, '{') ? '}' : '>';
        /* Bounds the recursion: the input comes from unprivileged clients. */
        if (p->depth >= TEXTPROTO_MAX_DEPTH)
                return tp_parser_error(p, &open, "messages nested deeper than %u levels", TEXTPROTO_MAX_DEPTH);

        m = message_new(fd->descriptor);
        if (!m)
                return -ENOMEM;
        r = tp_parser_next(p);
        if (r < 0)
                return r;
        p->depth++;
        r = parse_fields(p, fd->descriptor, m, close);
        p->depth--;
        if (r < 0)
                return r;
        r = tp_parser_next(p);             /* the closing brace */
        if (r < 0)
                return r;
        ret->m = TAKE_PTR(m);
        return 0;
}

static int parse_value(Parser *p, const ProtobufCFieldDescriptor *fd, Value *ret) {
        if (p->token.type == TOKEN_END)
                return tp_parser_error(p, &p->token, "expected a value for field '%s', got end of input", fd->name);

        switch (fd->type) {
        case PROTOBUF_C_TYPE_FLOAT:
        case PROTOBUF_C_TYPE_DOUBLE:
                return tp_parse_float(p, fd, ret);
        case PROTOBUF_C_TYPE_BOOL:
                return tp_parse_bool(p, fd, ret);
        case PROTOBUF_C_TYPE_ENUM:
                return tp_parse_enum(p, fd, ret);
        case PROTOBUF_C_TYPE_STRING:
        case PROTOBUF_C_TYPE_BYTES:
                return tp_parse_string(p, fd, ret);
        case PROTOBUF_C_TYPE_MESSAGE:
                return parse_message_value(p, fd, ret);
        default: {
                Token unused;

                return tp_parse_integer(p, fd, ret, &unused);
        }
        }
}

/* Appends to a repeated field or sets a singular one; takes ownership of @v. */
static int field_store(ProtobufCMessage *m, const ProtobufCFieldDescriptor *fd, Value *v) {
        uint8_t *base = (uint8_t *) m;
        size_t size = tp_type_size(fd->type);

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
        if (r > 0)              /* lossy: the value was dropped with a warning */
                return 0;
        return field_store(m, fd, &v);
}

static int parse_list(Parser *p, const ProtobufCFieldDescriptor *fd, ProtobufCMessage *m) {
        char shown[SHOW_SIZE];
        int r;

        if (fd->label != PROTOBUF_C_LABEL_REPEATED)
                return tp_parser_error(p, &p->token, "list syntax used for non-repeated field '%s'", fd->name);
        r = tp_parser_next(p);
        if (r < 0)
                return r;
        if (tp_token_is(&p->token, ']'))
                return tp_parser_next(p);

        for (;;) {
                r = parse_and_store(p, fd, m);
                if (r < 0)
                        return r;
                if (tp_token_is(&p->token, ']'))
                        return tp_parser_next(p);
                if (!tp_token_is(&p->token, ','))
                        return tp_parser_error(p, &p->token, "expected ',' or ']' in list of field '%s', got %s",
                                            fd->name, tp_token_show(&p->token, true, shown));
                r = tp_parser_next(p);
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
                return tp_parser_error(p, name, "non-repeated field '%s' is set more than once", fd->name);
        if (fd->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
                uint32_t set = *(const uint32_t *) ((const uint8_t *) m + fd->quantifier_offset);
                const ProtobufCFieldDescriptor *other = set != 0 ? field_by_id(desc, set) : NULL;

                if (other && other != fd)
                        return tp_parser_error(p, name, "field '%s' conflicts with field '%s' of the same oneof",
                                            fd->name, other->name);
        }
        seen[i] = true;
        return 0;
}

/* After the name of a message field: an optional ':', then '{', '<' or a list. */
static int parse_message_separator(Parser *p, const Token *name) {
        char shown[SHOW_SIZE];
        int r;

        r = tp_parser_accept(p, ':');
        if (r < 0)
                return r;
        if (r > 0)      /* parse_message_value() insists on the brace */
                return 0;
        if (tp_token_is(&p->token, '{') || tp_token_is(&p->token, '<') || tp_token_is(&p->token, '['))
                return 0;
        return tp_parser_error(p, &p->token, "expected ':' or '{' after %s", tp_token_show(name, true, shown));
}

/* Lossy parsing: passes over the value of a field the schema lacks, whatever its shape
 * (scalar, strings, list, message), counting brackets instead of recursing. */
static int skip_value(Parser *p) {
        unsigned depth = 0;
        int r;

        r = tp_parser_accept(p, ':');
        if (r < 0)
                return r;
        if (tp_token_is(&p->token, '-')) {
                r = tp_parser_next(p);
                if (r < 0)
                        return r;
        }
        do {
                if (p->token.type == TOKEN_END)
                        return tp_parser_error(p, &p->token, "unexpected end of input in a dropped field");
                if (tp_token_is(&p->token, '{') || tp_token_is(&p->token, '<') || tp_token_is(&p->token, '['))
                        depth++;
                else if (tp_token_is(&p->token, '}') || tp_token_is(&p->token, '>') || tp_token_is(&p->token, ']')) {
                        if (depth == 0)
                                return tp_parser_error(p, &p->token, "unbalanced '%c' in a dropped field",
                                                       *p->token.start);
                        depth--;
                }
                r = tp_parser_next(p);
                if (r < 0)
                        return r;
        } while (depth > 0);
        /* Adjacent string literals are one value. */
        while (p->token.type == TOKEN_STRING)
                if ((r = tp_parser_next(p)) < 0)
                        return r;
        return 0;
}

static int drop_unknown_field(Parser *p, const ProtobufCMessageDescriptor *desc, const Token *name) {
        int r;

        r = tp_warn_unknown_field(p, desc, name);
        if (r < 0)
                return r;
        r = tp_parser_next(p);
        if (r < 0)
                return r;
        return skip_value(p);
}

static int parse_field(Parser *p, const ProtobufCMessageDescriptor *desc, ProtobufCMessage *m, bool *seen) {
        const ProtobufCFieldDescriptor *fd;
        Token name = p->token;
        char shown[SHOW_SIZE];
        int r;

        if (tp_token_is(&name, '['))
                return tp_parser_error(p, &name, "extension and Any fields ('[...]') are not supported");
        if (name.type != TOKEN_IDENTIFIER)
                return tp_parser_error(p, &name, "expected a field name, got %s", tp_token_show(&name, true, shown));
        fd = field_find(desc, &name);
        if (!fd && p->lossy)
                return drop_unknown_field(p, desc, &name);
        if (!fd)
                return tp_error_unknown_field(p, desc, &name);
        r = field_claim(p, desc, m, fd, seen, &name);
        if (r < 0)
                return r;
        r = tp_parser_next(p);
        if (r < 0)
                return r;

        if (fd->type == PROTOBUF_C_TYPE_MESSAGE)
                r = parse_message_separator(p, &name);
        else if ((r = tp_parser_accept(p, ':')) == 0)
                r = tp_parser_error(p, &p->token, "expected ':' after %s", tp_token_show(&name, true, shown));
        if (r < 0)
                return r;

        if (tp_token_is(&p->token, '['))
                return parse_list(p, fd, m);
        return parse_and_store(p, fd, m);
}

static int check_required(Parser *p, const ProtobufCMessageDescriptor *desc, const bool *seen) {
        for (unsigned i = 0; i < desc->n_fields; i++)
                if (desc->fields[i].label == PROTOBUF_C_LABEL_REQUIRED && !seen[i])
                        return tp_parser_error(p, &p->token, "missing required field '%s' in %s",
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
                if (close == '\0' ? p->token.type == TOKEN_END : tp_token_is(&p->token, close))
                        break;
                if (p->token.type == TOKEN_END)
                        return tp_parser_error(p, &p->token, "unexpected end of input, expected '%c'", close);
                r = parse_field(p, desc, m, seen);
                if (r < 0)
                        return r;
                r = tp_parser_accept(p, ',');
                if (r == 0)
                        r = tp_parser_accept(p, ';');
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
                return tp_parser_error_at(p, 1, 1, "input of %zu bytes is larger than the limit of %u bytes",
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
        return tp_parser_error_at(p, line, column, "NUL byte in input");
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
        r = tp_parser_next(p);
        if (r < 0)
                return r;
        r = parse_fields(p, desc, m, '\0');
        if (r < 0)
                return r;
        *ret = TAKE_PTR(m);
        return 0;
}

/* The warnings of a lossy parse, with the count of those left out as a last one. */
static int take_warnings(Parser *p, char ***ret_warnings) {
        _cleanup_free_ char *more = NULL;

        if (p->n_warnings_dropped > 0) {
                if (asprintf(&more, "%zu more warnings left out", p->n_warnings_dropped) < 0)
                        return -ENOMEM;
                if (strv_extend(&p->warnings, more) < 0)
                        return -ENOMEM;
        }
        if (ret_warnings)
                *ret_warnings = TAKE_PTR(p->warnings);
        return 0;
}

int textproto_parse_flags(const ProtobufCMessageDescriptor *desc,
                          const char *text, size_t len,
                          const char *source_name,
                          TextprotoFlags flags,
                          ProtobufCMessage **ret,
                          char **ret_error,
                          char ***ret_warnings) {

        _cleanup_(message_freep) ProtobufCMessage *m = NULL;
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
                .lossy = flags & TEXTPROTO_LOSSY,
        };
        r = parse_document(&p, desc, &m);
        if (r >= 0)
                r = take_warnings(&p, ret_warnings);
        if (r < 0 && ret_error && p.error)
                *ret_error = TAKE_PTR(p.error);
        free(p.error);
        strv_free(p.warnings);
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
        return textproto_parse_flags(desc, text, len, source_name, 0, ret, ret_error, NULL);
}
