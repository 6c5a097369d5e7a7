/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * More events written as their typed Perfetto messages rather than GenericFtraceEvent
 * (ftrace-event-info.c holds the first table). Here the memory events Perfetto's
 * memory-counters configs ask for, as v58's protos/perfetto/trace/ftrace/kmem.proto and
 * oom.proto declare them: trace_processor turns kmem/rss_stat into the process counters
 * mem.rss.file/anon/swap/shmem and oom/oom_score_adj_update into the oom_score_adj
 * counter, which it never does for a GenericFtraceEvent.
 */
#include "ftrace-parser-local.h"

/* kmem/rss_stat (FtraceEvent 313), RssStatFtraceEvent of kmem.proto. */
static const TypedField rss_stat_fields[] = {
        { "member", 1, PT_VARINT }, { "size", 2, PT_VARINT }, { "curr", 3, PT_VARINT },
        { "mm_id", 4, PT_VARINT }, {},
};

/* oom/oom_score_adj_update (FtraceEvent 326), OomScoreAdjUpdateFtraceEvent of oom.proto. */
static const TypedField oom_score_adj_update_fields[] = {
        { "comm", 1, PT_STRING }, { "oom_score_adj", 2, PT_VARINT }, { "pid", 3, PT_VARINT }, {},
};

static const TypedEvent more_typed_events[] = {
        { "kmem", "rss_stat", 313, rss_stat_fields },
        { "oom", "oom_score_adj_update", 326, oom_score_adj_update_fields },
};

const TypedEvent *ftrace_typed_event_more(const char *group, const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(more_typed_events); i++)
                if (strcmp(more_typed_events[i].group, group) == 0 && strcmp(more_typed_events[i].name, name) == 0)
                        return &more_typed_events[i];
        return NULL;
}
