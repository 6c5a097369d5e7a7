/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target: the binary TraceConfig of Start's BinaryConfig option, through
 * session_config_parse_binary(), session_config_load() and data_sources_load()
 * (against the captured tracefs tree in tests/fixtures/ftrace), as the service does.
 */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz-common.h"
#include "data-source.h"
#include "session-config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        Tracebus__TraceConfig *tc = NULL;
        SessionConfig c = { 0 };
        char *msg = NULL;

        if (session_config_parse_binary(data, size, &tc, &msg) >= 0) {
                free(msg);
                msg = NULL;
                if (session_config_load(tc, fuzz_tracefs_root(), &c, &msg) >= 0) {
                        (void) data_sources_load(tc, fuzz_tracefs_root(), &c, &msg);
                        session_config_done(&c);
                }
                tracebus__trace_config__free_unpacked(tc, NULL);
        }
        free(msg);
        return 0;
}
