/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdlib.h>

#include "fuzz-common.h"
#include "data-source.h"
#include "session-config.h"

/* What the service does with a parsed TraceConfig before it starts a session:
 * session_config_load() and data_sources_load() against the captured tracefs tree, so
 * that event names are resolved as on a machine. Frees @tc. */
static inline void fuzz_load_config(Tracebus__TraceConfig *tc) {
        SessionConfig c = { 0 };
        char *msg = NULL;

        if (session_config_load(tc, fuzz_tracefs_root(), &c, &msg) >= 0) {
                (void) data_sources_load(tc, fuzz_tracefs_root(), &c, &msg);
                session_config_done(&c);
        }
        free(msg);
        tracebus__trace_config__free_unpacked(tc, NULL);
}
