/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target: the text-format TraceConfig a caller passes to Start, through
 * the same two steps as the service (session_config_parse_text(), then
 * session_config_load() against the captured tracefs tree in
 * tests/fixtures/ftrace, so that event names are resolved as on a machine).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz-common.h"
#include "session-config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        Tracebus__TraceConfig *tc = NULL;
        SessionConfig c = { 0 };
        char *text, *msg = NULL;

        /* Start's argument is a D-Bus string: NUL-terminated, no NUL inside. */
        text = strndup((const char *) data, size);
        if (!text)
                return 0;
        if (session_config_parse_text(text, &tc, &msg) >= 0) {
                free(msg);
                msg = NULL;
                if (session_config_load(tc, fuzz_tracefs_root(), &c, &msg) >= 0)
                        session_config_done(&c);
                tracebus__trace_config__free_unpacked(tc, NULL);
        }
        free(msg);
        free(text);
        return 0;
}
