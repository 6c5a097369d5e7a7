/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target: the binary TraceConfig of Start's BinaryConfig option, through
 * session_config_parse_binary(), session_config_load() and data_sources_load()
 * (against the captured tracefs tree in tests/fixtures/ftrace), as the service does.
 */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz-config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        Tracebus__TraceConfig *tc = NULL;
        char *msg = NULL;

        if (session_config_parse_binary(data, size, &tc, &msg) >= 0)
                fuzz_load_config(tc);
        free(msg);
        return 0;
}
