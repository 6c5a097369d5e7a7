/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>
#include <protobuf-c/protobuf-c.h>

/*
 * Protobuf text format, parsed generically from protobuf-c descriptors, so every
 * message in protos/ can be written in the language Perfetto's configs use.
 *
 * textproto_parse - parse @text (@len bytes, need not be NUL-terminated) as a
 * message of type @desc. On success stores a message allocated with protobuf-c's
 * default allocator in *@ret (free with protobuf_c_message_free_unpacked(m, NULL))
 * and returns 0. On a syntax or value error returns -EINVAL and stores in
 * *@ret_error (if not NULL) a malloc'd one-line message of the form
 * "SOURCE:LINE:COLUMN: what is wrong", naming the field; @source_name is SOURCE.
 * Other negative errno values (-ENOMEM) are returned without a message.
 *
 * The input comes from unprivileged D-Bus clients, so it is bounded: at most
 * TEXTPROTO_MAX_SIZE bytes, no NUL bytes, and messages nested at most
 * TEXTPROTO_MAX_DEPTH deep below the top-level one. Anything beyond is -EINVAL
 * with a message. Apart from @source_name, the error text is printable ASCII
 * (other bytes of the input are shown as \xHH), so it can go into a D-Bus error
 * as is. A NULL @source_name reads "<input>".
 */
int textproto_parse(const ProtobufCMessageDescriptor *desc,
                    const char *text, size_t len,
                    const char *source_name,
                    ProtobufCMessage **ret,
                    char **ret_error);

typedef enum TextprotoFlags {
        /* As `perfetto --txt-lossy`: a field name the message lacks, or an enum value
         * name its enum lacks, is dropped (with its value, whatever its shape) and
         * reported as a warning "SOURCE:LINE:COLUMN: unknown field 'x' in M: dropped"
         * (with a "did you mean" when a name is close) instead of failing the parse.
         * Syntax errors still fail. */
        TEXTPROTO_LOSSY = 1 << 0,
} TextprotoFlags;

/*
 * textproto_parse_flags - textproto_parse() with @flags. On success, stores in
 * *@ret_warnings (if not NULL) a NULL-terminated, malloc'd array of the warnings
 * (NULL when there are none; free with strv_free()), at most
 * TEXTPROTO_MAX_WARNINGS of them and then one saying how many more were left out.
 */
int textproto_parse_flags(const ProtobufCMessageDescriptor *desc,
                          const char *text, size_t len,
                          const char *source_name,
                          TextprotoFlags flags,
                          ProtobufCMessage **ret,
                          char **ret_error,
                          char ***ret_warnings);

#define TEXTPROTO_MAX_WARNINGS 64U
#define TEXTPROTO_MAX_SIZE (4U * 1024U * 1024U)
#define TEXTPROTO_MAX_DEPTH 64U
