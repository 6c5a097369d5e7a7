/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Placeholder until the generic parser lands. */
#include <errno.h>
#include "textproto.h"

int textproto_parse(const ProtobufCMessageDescriptor *desc, const char *text, size_t len,
                    const char *source_name, ProtobufCMessage **ret, char **ret_error) {
        return -EOPNOTSUPP;
}
