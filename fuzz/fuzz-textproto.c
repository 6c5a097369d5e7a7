/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target: the text-format TraceConfig a caller passes to Start, through
 * the same steps as the service (session_config_parse_text(), then
 * session_config_load() and data_sources_load() against the captured tracefs tree in
 * tests/fixtures/ftrace, so that event names are resolved as on a machine); and
 * the CLI's --txt-lossy parse, which skips the values of names it drops.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz-config.h"
#include "strv.h"
#include "textproto.h"

static void parse_lossy(const char *text, size_t size) {
        ProtobufCMessage *m = NULL;
        char **warnings = NULL, *msg = NULL;

        if (textproto_parse_flags(&tracebus__trace_config__descriptor, text, size, "fuzz", TEXTPROTO_LOSSY,
                                  &m, &msg, &warnings) >= 0)
                protobuf_c_message_free_unpacked(m, NULL);
        strv_free(warnings);
        free(msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        Tracebus__TraceConfig *tc = NULL;
        char *text, *msg = NULL;

        /* Start's argument is a D-Bus string: NUL-terminated, no NUL inside. */
        text = strndup((const char *) data, size);
        if (!text)
                return 0;
        if (session_config_parse_text(text, &tc, &msg) >= 0)
                fuzz_load_config(tc);
        free(msg);
        parse_lossy(text, strlen(text));
        free(text);
        return 0;
}
