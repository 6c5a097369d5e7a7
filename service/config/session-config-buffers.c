/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session-config.h"
#include "trace-writer.h"

/* TraceConfig.buffers as Perfetto's service takes them: each buffer its own size and
 * fill policy, each data source writing to the one its target_buffer (an index) or
 * target_buffer_name names. The service's memory for them is bounded per session: their
 * sizes together stay within SESSION_MAX_TRACE_BUFFER_KB, as the one buffer was before. */

static const char *source_name(const Tracebus__DataSourceConfig *ds) {
        return ds->name ?: "(unnamed)";
}

int session_config_target_buffer(const Tracebus__TraceConfig *tc, const Tracebus__DataSourceConfig *ds,
                                 uint32_t *ret, char **ret_error) {
        size_t n = tc->n_buffers > 0 ? tc->n_buffers : 1;   /* none: the service's default one */

        if (ds->target_buffer_name && ds->target_buffer_name[0]) {
                for (size_t i = 0; i < tc->n_buffers; i++)
                        if (tc->buffers[i]->name && strcmp(tc->buffers[i]->name, ds->target_buffer_name) == 0) {
                                *ret = (uint32_t) i;
                                return 0;
                        }
                return session_config_error(ret_error, "data source '%.64s': target_buffer_name '%.64s' names no buffer",
                                    source_name(ds), ds->target_buffer_name);
        }
        if (ds->target_buffer >= n)
                return session_config_error(ret_error, "data source '%.64s': target_buffer %u does not exist (the config has %zu buffers)",
                                    source_name(ds), ds->target_buffer, tc->n_buffers);
        *ret = ds->target_buffer;
        return 0;
}

/* Every data source's target exists; the first linux.ftrace one's is the ftrace buffer. */
static int load_targets(const Tracebus__TraceConfig *tc, SessionConfig *c, char **ret_error) {
        bool ftrace_seen = false;
        int r;

        for (size_t i = 0; i < tc->n_data_sources; i++) {
                const Tracebus__DataSourceConfig *ds = tc->data_sources[i]->config;
                uint32_t target;

                if (!ds)
                        continue;
                r = session_config_target_buffer(tc, ds, &target, ret_error);
                if (r < 0)
                        return r;
                if (!ds->name || strcmp(ds->name, "linux.ftrace") != 0)
                        continue;
                if (!ftrace_seen) {
                        c->ftrace_buffer = target;
                        ftrace_seen = true;
                } else if (target != c->ftrace_buffer) {
                        /* One kernel instance, one stream of bundles: one buffer for it. */
                        r = session_config_warn(c, "linux.ftrace data source %zu writes to buffer %u, not %u as the first "
                                                "one: all ftrace events go to buffer %u", i, target,
                                                c->ftrace_buffer, c->ftrace_buffer);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

static int load_sizes(const Tracebus__TraceConfig *tc, SessionConfig *c, char **ret_error) {
        uint64_t total = 0;
        int r;

        if (tc->n_buffers > TRACE_WRITER_MAX_BUFFERS)
                return session_config_error(ret_error, "%zu buffers, at most %u are allowed", tc->n_buffers,
                                    TRACE_WRITER_MAX_BUFFERS);
        c->n_buffers = MAX(tc->n_buffers, (size_t) 1);
        c->buffers = calloc(c->n_buffers, sizeof(SessionBuffer));
        if (!c->buffers)
                return -ENOMEM;
        c->buffers[0].size_kb = SESSION_DEFAULT_TRACE_BUFFER_KB;
        for (size_t i = 0; i < tc->n_buffers; i++) {
                const Tracebus__TraceConfig__BufferConfig *b = tc->buffers[i];

                c->buffers[i].size_kb = b->size_kb;
                if (b->size_kb == 0) {
                        /* Perfetto fails to allocate it; a default is what the author meant. */
                        c->buffers[i].size_kb = SESSION_DEFAULT_TRACE_BUFFER_KB;
                        r = session_config_warn(c, "buffers[%zu] has no size_kb: %u KiB used", i,
                                                SESSION_DEFAULT_TRACE_BUFFER_KB);
                        if (r < 0)
                                return r;
                }
                c->buffers[i].discard = b->has_fill_policy &&
                        b->fill_policy == TRACEBUS__TRACE_CONFIG__BUFFER_CONFIG__FILL_POLICY__DISCARD;
                total += c->buffers[i].size_kb;
        }
        if (total > SESSION_MAX_TRACE_BUFFER_KB)
                return session_config_error(ret_error, "the buffers add up to %" PRIu64 " KiB, above the limit of %u KiB",
                                    total, SESSION_MAX_TRACE_BUFFER_KB);
        return 0;
}

int session_config_load_buffers(const Tracebus__TraceConfig *tc, SessionConfig *c, char **ret_error) {
        int r;

        assert(tc);
        assert(c);

        r = load_sizes(tc, c, ret_error);
        if (r < 0)
                return r;
        r = load_targets(tc, c, ret_error);
        if (r < 0)
                return r;
        c->trace_buffer_kb = 0;
        for (size_t i = 0; i < c->n_buffers; i++)
                c->trace_buffer_kb += c->buffers[i].size_kb;
        c->discard_when_full = c->buffers[c->ftrace_buffer].discard;
        return 0;
}
