/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What the textproto unit tests (tests/test-textproto-*.c) share: hand-written
 * protobuf-c descriptors of tests/fixtures/textproto/{all_types,proto3_types}.proto
 * (the structs as protoc-c would make them), a text with every type once, and
 * helpers that parse (or must fail to) and compare with `protoc --encode`.
 */

#include <glib.h>
#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stddef.h>

#define FIXTURES "tests/fixtures/textproto"

typedef struct AllTypes AllTypes;

typedef struct Nested {
        ProtobufCMessage base;
        int32_t id;
        AllTypes *child;
} Nested;

enum {
        CHOICE_NOT_SET = 0,
        CHOICE_U32 = 26,
        CHOICE_S = 27,
        CHOICE_MSG = 28,
};

struct AllTypes {
        ProtobufCMessage base;
        protobuf_c_boolean has_i32;
        int32_t i32;
        protobuf_c_boolean has_i64;
        int64_t i64;
        protobuf_c_boolean has_u32;
        uint32_t u32;
        protobuf_c_boolean has_u64;
        uint64_t u64;
        protobuf_c_boolean has_s32;
        int32_t s32;
        protobuf_c_boolean has_s64;
        int64_t s64;
        protobuf_c_boolean has_f32;
        uint32_t f32;
        protobuf_c_boolean has_f64;
        uint64_t f64;
        protobuf_c_boolean has_sf32;
        int32_t sf32;
        protobuf_c_boolean has_sf64;
        int64_t sf64;
        protobuf_c_boolean has_fl;
        float fl;
        protobuf_c_boolean has_db;
        double db;
        protobuf_c_boolean has_b;
        protobuf_c_boolean b;
        char *s;
        protobuf_c_boolean has_by;
        ProtobufCBinaryData by;
        protobuf_c_boolean has_color;
        int color;
        Nested *nested;
        size_t n_r_i32;
        int32_t *r_i32;
        size_t n_r_s;
        char **r_s;
        size_t n_r_nested;
        Nested **r_nested;
        size_t n_r_color;
        int *r_color;
        size_t n_r_db;
        double *r_db;
        size_t n_r_by;
        ProtobufCBinaryData *r_by;
        size_t n_r_b;
        protobuf_c_boolean *r_b;
        char *s_def;
        uint32_t choice_case;
        union {
                uint32_t choice_u32;
                char *choice_s;
                Nested *choice_msg;
        };
};

typedef struct Proto3Types {
        ProtobufCMessage base;
        int32_t a;
        char *s;
        protobuf_c_boolean b;
        size_t n_r;
        int32_t *r;
        ProtobufCBinaryData by;
} Proto3Types;

extern const ProtobufCMessageDescriptor all_types_descriptor;
extern const ProtobufCMessageDescriptor nested_descriptor;
extern const ProtobufCMessageDescriptor proto3_types_descriptor;
/* The default of AllTypes.s_def: parsing must not touch (or free) it. */
extern const char s_def_default[];
/* Every type once, and the repeated ones in both spellings. */
extern const char all_types_text[];

/* Fills the by-name index of all_types_descriptor: call first, in main(). */
void all_types_index_names(void);

void message_free(ProtobufCMessage *m);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ProtobufCMessage, message_free)

/* Parses text, which must succeed; the message. */
ProtobufCMessage *parse_len_ok(const ProtobufCMessageDescriptor *desc, const char *text, size_t len);
ProtobufCMessage *parse_ok(const ProtobufCMessageDescriptor *desc, const char *text);
/* Parsing text must fail with -EINVAL and exactly the message expected. */
void assert_error_len(const ProtobufCMessageDescriptor *desc, const char *text, size_t len, const char *expected);
void assert_error(const ProtobufCMessageDescriptor *desc, const char *text, const char *expected);
/* $TRACEBUS_SOURCE_DIR, which meson sets (fails the test without it). */
const char *source_dir(void);
/* FIXTURES/name in the source tree. */
char *fixture_path(const char *name);
/* The message packed by protobuf-c. */
GBytes *pack(const ProtobufCMessage *m);
/* protoc --encode=type on text. */
GBytes *protoc_encode(const char *proto_dir, const char *proto, const char *type, const char *text, size_t len);
/* Our parse packed and protoc's encoding are the same bytes; returns the length. */
size_t assert_same_as_protoc(const ProtobufCMessageDescriptor *desc, const char *proto_dir, const char *proto,
                             const char *type, const char *text, size_t len);
/* The same, with the all-types protos of FIXTURES. */
size_t assert_all_types_same_as_protoc(const ProtobufCMessageDescriptor *desc, const char *type, const char *proto,
                                       const char *text);
