/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * More events written as their typed Perfetto messages rather than GenericFtraceEvent
 * (ftrace-event-info.c holds the first table). Each number is checked against Perfetto's
 * sources: the FtraceEvent field is the event's line in src/tools/ftrace_proto_gen/
 * event_list plus 2 (as print is 3, funcgraph_entry 437 and sched_migrate_task 491),
 * the message's fields are those of its protos/perfetto/trace/ftrace/<group>.proto.
 */
#include "ftrace-parser-local.h"

/* vmscan/mm_shrink_slab_start (FtraceEvent 443), MmShrinkSlabStartFtraceEvent of
 * vmscan.proto. trace_processor names the shrinker's `shrink` function with
 * symbolize_ksyms. lru_pgs and pgs_scanned are gone from modern kernels: a field the
 * kernel lacks is left out. */
static const TypedField mm_shrink_slab_start_fields[] = {
        { "cache_items", 1, PT_VARINT }, { "delta", 2, PT_VARINT }, { "gfp_flags", 3, PT_VARINT },
        { "lru_pgs", 4, PT_VARINT }, { "nr_objects_to_shrink", 5, PT_VARINT },
        { "pgs_scanned", 6, PT_VARINT }, { "shr", 7, PT_VARINT }, { "shrink", 8, PT_VARINT },
        { "total_scan", 9, PT_VARINT }, { "nid", 10, PT_VARINT }, { "priority", 11, PT_VARINT }, {},
};

static const TypedEvent more_typed_events[] = {
        { "vmscan", "mm_shrink_slab_start", 443, mm_shrink_slab_start_fields },
};

const TypedEvent *ftrace_typed_event_more(const char *group, const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(more_typed_events); i++)
                if (strcmp(more_typed_events[i].group, group) == 0 && strcmp(more_typed_events[i].name, name) == 0)
                        return &more_typed_events[i];
        return NULL;
}
