/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * GLib conveniences over libtracebus's trace reader (lib/include/trace-reader.h) for
 * the tests: a summary of what the bus tests assert on (every packet unpacked,
 * compressed_packets inflated in their place, as trace_processor does), zlib
 * inflation as GBytes, and protoc --decode. Torn or invalid files are an error
 * (G_IO_ERROR_INVALID_DATA), never a crash.
 */

#include <glib.h>
#include <stdbool.h>

#include "trace-reader.h"

typedef struct {
        guint n_packets;         /* not counting those that hold compressed_packets */
        guint n_compressed_packets;  /* packets of compressed_packets, each inflated */
        gsize n_inflated_bytes;      /* what they inflated to */
        guint n_ftrace_bundles;
        guint n_ftrace_events;   /* FtraceEvent entries of any kind */
        guint n_sched_switch;    /* full sched_switch events */
        guint n_compact_switch;  /* compact_sched switch entries */
        guint n_sched_waking;    /* full sched_waking events + compact waking entries */
        guint n_lost_bundles;    /* bundles with lost_events */
        bool has_clock_snapshot;
        bool clock_is_boottime;  /* a clock_snapshot with primary_trace_clock BOOTTIME */
        bool has_system_info;
        bool has_utsname;        /* system_info.utsname.sysname set */
        bool has_tracing_started;
        bool has_trace_config;
        bool all_have_sequence_id;   /* every packet: trusted_packet_sequence_id != 0 */
        bool first_packets_flagged;  /* first packet of every sequence: first_packet_on_sequence
                                      * and sequence_flags has SEQ_INCREMENTAL_STATE_CLEARED (1) */
        guint n_sequences;
        char *first_problem;     /* the first sequence/flag problem, for messages */
        GHashTable *switch_pids; /* "pid comm" strings from sched_switch prev/next and compact next */
        GHashTable *seen_sequences;
} TbTraceSummary;

/* Inflates a zlib stream (RFC 1950) with zlib (trace_zlib_inflate()), as trace_processor
 * inflates compressed_packets: NULL and an error when it is not one whole stream, nothing after. */
GBytes *tb_zlib_inflate(const guint8 *data, gsize len, GError **error);
/* The same, for unit tests: a stream that does not inflate fails the test. */
GBytes *tb_zlib_inflate_or_fail(const guint8 *data, gsize len);

/* Calls fn on every packet of the trace, unpacked, compressed_packets inflated in their
 * place. False with G_IO_ERROR_INVALID_DATA at the first packet that is torn, does not
 * unpack or does not inflate; ret_whole_len (may be NULL) is where the whole outer
 * packets read end. */
typedef void (*TbPacketFunc)(const Tracebus__TracePacket *p, const TraceRawPacket *raw, guint index,
                             gpointer userdata);
bool tb_trace_foreach_packet(const guint8 *data, gsize len, TbPacketFunc fn, gpointer userdata,
                             gsize *ret_whole_len, GError **error);

bool tb_trace_parse(const guint8 *data, gsize len, TbTraceSummary *ret, GError **error);
bool tb_trace_file_read(const char *path, TbTraceSummary *ret, GError **error);
void tb_trace_summary_clear(TbTraceSummary *s);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(TbTraceSummary, tb_trace_summary_clear)

/* True when a sched_switch (full: prev or next; compact: next) had this pid
 * with this comm; comm NULL matches any comm. */
bool tb_trace_summary_has_switch(const TbTraceSummary *s, int pid, const char *comm);
/* One line for test logs. */
char *tb_trace_summary_describe(const TbTraceSummary *s);

/* Runs `protoc --proto_path=SOURCE/protos --decode=tracebus.Trace trace.proto`
 * on the file. True when protoc exits 0; its stdout in ret_text. */
bool tb_trace_protoc_decode(const char *source_dir, const char *path, char **ret_text, GError **error);
