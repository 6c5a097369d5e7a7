/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The memory events Perfetto's memory-counters configs ask for, as Perfetto v58's typed
 * messages (protos/perfetto/trace/ftrace/kmem.proto, oom.proto): trace_processor turns
 * kmem/rss_stat into the process counters mem.rss.file/anon/swap/shmem and
 * oom/oom_score_adj_update into the oom_score_adj counter, which it never does for a
 * GenericFtraceEvent. Beside ftrace-event-info.c's table, which this extends.
 */
#include "ftrace-parser-local.h"

static const TypedField rss_stat_fields[] = {
        { "member", 1, PT_VARINT }, { "size", 2, PT_VARINT }, { "curr", 3, PT_VARINT },
        { "mm_id", 4, PT_VARINT }, {},
};

static const TypedField oom_score_adj_update_fields[] = {
        { "comm", 1, PT_STRING }, { "oom_score_adj", 2, PT_VARINT }, { "pid", 3, PT_VARINT }, {},
};

const TypedEvent ftrace_typed_memory_events[] = {
        { "kmem", "rss_stat", 313, rss_stat_fields },
        { "oom", "oom_score_adj_update", 326, oom_score_adj_update_fields },
        {},
};
