/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * TraceConfig's own fields, as Perfetto v58's tracing service (tracing_service_impl.cc)
 * and perfetto_cmd read them. What tracebus honours lands in SessionConfig; what it
 * cannot do here is a warning (session_config_warn()), never a refusal.
 */
#include <stdio.h>
#include <string.h>

#include "session-config.h"

/* A name a user picks and sees again in --query: printable, bounded. */
static bool unique_name_valid(const char *name) {
        size_t n = strlen(name);

        if (n == 0 || n > SESSION_MAX_UNIQUE_NAME)
                return false;
        for (size_t i = 0; i < n; i++)
                if ((unsigned char) name[i] < 0x20 || name[i] == 0x7f)
                        return false;
        return true;
}

static int load_unique_name(const Tracebus__TraceConfig *tc, SessionConfig *c, char **ret_error) {
        if (!tc->unique_session_name)
                return 0;
        if (!unique_name_valid(tc->unique_session_name))
                return session_config_error(ret_error, "unique_session_name: 1 to 256 characters, none of them control characters");
        c->unique_session_name = strdup(tc->unique_session_name);
        return c->unique_session_name ? 0 : -ENOMEM;
}

/* builtin_data_sources: the service's own packets (recorder-packets.c). */
static int load_builtin(const Tracebus__TraceConfig__BuiltinDataSource *b, SessionConfig *c) {
        int r = 0;

        c->snapshot_interval_ms = SESSION_DEFAULT_SNAPSHOT_INTERVAL_MS;
        if (!b)
                return 0;
        c->disable_clock_snapshotting = b->disable_clock_snapshotting;
        c->disable_trace_config = b->disable_trace_config;
        c->disable_system_info = b->disable_system_info;
        c->disable_service_events = b->disable_service_events;
        if (b->snapshot_interval_ms > 0)
                c->snapshot_interval_ms = b->snapshot_interval_ms;
        /* Every packet tracebus writes is timestamped in BOOTTIME without a clock id, which
         * trace_processor reads in the primary trace clock: another one would shift them. */
        if (b->has_primary_trace_clock && b->primary_trace_clock != TRACEBUS__BUILTIN_CLOCK__BUILTIN_CLOCK_UNKNOWN &&
            b->primary_trace_clock != TRACEBUS__BUILTIN_CLOCK__BUILTIN_CLOCK_BOOTTIME)
                r = session_config_warn(c, "builtin_data_sources.primary_trace_clock %d: tracebus timestamps its "
                                        "packets in BOOTTIME, which stays the trace clock", (int) b->primary_trace_clock);
        if (r >= 0 && b->enable_concurrent_session_events)
                r = session_config_warn(c, "builtin_data_sources.enable_concurrent_session_events: not written "
                                        "(tracebus sessions are separate kernel instances)");
        return r;
}

/* compression_type and v58's compression {}: tracebus deflates (lib/deflate*.c). */
static int load_compression(const Tracebus__TraceConfig *tc, SessionConfig *c) {
        const Tracebus__TraceConfig__CompressionConfig *z = tc->compression;

        if (!z)
                return 0;
        if (z->deflate)
                c->compress = true;
        if (z->zstd) {
                /* zstd_compressed_packets needs libzstd on the write path; deflate gives the
                 * same saving of the trace's size to the same readers. */
                c->compress = true;
                return session_config_warn(c, "compression.zstd: not supported, the trace is deflated instead");
        }
        return 0;
}

/* As traced: a requested UUID (either half non-zero) is the trace's. The fields are
 * deprecated in v58, and still honoured by Perfetto. */
static void load_trace_uuid(const Tracebus__TraceConfig *tc, SessionConfig *c) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
        c->has_trace_uuid = tc->trace_uuid_msb != 0 || tc->trace_uuid_lsb != 0;
        c->trace_uuid_msb = tc->trace_uuid_msb;
        c->trace_uuid_lsb = tc->trace_uuid_lsb;
#pragma GCC diagnostic pop
}

int session_config_load_trace(const Tracebus__TraceConfig *tc, SessionConfig *c, char **ret_error) {
        int r;

        r = load_unique_name(tc, c, ret_error);
        if (r < 0)
                return r;
        r = load_builtin(tc->builtin_data_sources, c);
        if (r < 0)
                return r;
        r = load_compression(tc, c);
        if (r < 0)
                return r;
        load_trace_uuid(tc, c);
        c->flush_period_ms = tc->flush_period_ms;
        /* Unset: the final drain empties the kernel's buffers, which bounds it already. Perfetto's
         * 5 s default would cut a full 64 MiB ring on a slow machine, silently in effect. */
        c->stop_timeout_ms = tc->data_source_stop_timeout_ms;
        /* incremental_state_config asks nothing of the service's own packets: the writer
         * keeps every packet later ones refer to (process trees, track descriptors, clock
         * snapshots) in its metadata, which a ring never overwrites, and each ftrace bundle
         * carries its own intern table. The apps' interned names live in their sequences,
         * which a ring overwrites: they are told to clear them every period, so that a
         * wrapped ring keeps names for what it holds (session-producers.c). */
        if (tc->incremental_state_config && tc->incremental_state_config->has_clear_period_ms &&
            tc->incremental_state_config->clear_period_ms > 0)
                c->incremental_clear_period_ms = MAX(tc->incremental_state_config->clear_period_ms,
                                                     (uint32_t) SESSION_MIN_WRITE_PERIOD_MS);
        /* deferred_start and flush_timeout_ms are warned by the field table
         * (session-config-fields.c); trace_filter is session-config-filter.c's. */
        return 0;
}
