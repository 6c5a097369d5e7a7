/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * More events written as their typed Perfetto messages rather than GenericFtraceEvent
 * (ftrace-event-info.c holds the first table). Each number is checked against Perfetto's
 * sources: the FtraceEvent field is the event's line in src/tools/ftrace_proto_gen/
 * event_list plus 2 (as print is 3, funcgraph_entry 437 and sched_migrate_task 491),
 * the message's fields are those of its protos/perfetto/trace/ftrace/<group>.proto.
 * Among them the memory events Perfetto's memory-counters configs ask for (kmem.proto,
 * oom.proto): trace_processor turns kmem/rss_stat into the process counters
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
        { "kmem", "rss_stat", 313, rss_stat_fields },
        { "oom", "oom_score_adj_update", 326, oom_score_adj_update_fields },
        { "vmscan", "mm_shrink_slab_start", 443, mm_shrink_slab_start_fields },
};

const TypedEvent *ftrace_typed_event_more(const char *group, const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(more_typed_events); i++)
                if (strcmp(more_typed_events[i].group, group) == 0 && strcmp(more_typed_events[i].name, name) == 0)
                        return &more_typed_events[i];
        return NULL;
}

/* A session's kprobes (service/sources/ftrace/kprobes.c names their groups tbk<kind>_<pid>_<session>) as
 * FtraceEvent.kprobe_event = 542, KprobeEvent { name 1: the probed function, type 2 }, the
 * way traced_probes writes them: a KPROBE or a KRETPROBE alone is KPROBE_TYPE_INSTANT (3),
 * KPROBE_TYPE_BOTH is the kprobe as KPROBE_TYPE_BEGIN (1) and the kretprobe as
 * KPROBE_TYPE_END (2); trace_processor makes slices of these on the thread's track.
 * Numbers from zimuzostanley/perfetto's protos/perfetto/trace/perfetto_trace.proto at
 * 79e1cba8c3d3f049ee13657e27abf2784948f92e (sections ftrace/generic.proto and
 * ftrace/ftrace_event.proto); the mapping from traced_probes' ftrace_config_muxer.cc
 * (GetFtraceKprobeEvents). The event has no per-record field: its bytes are all fixed. */
int ftrace_event_info_kprobe(EventInfo *e, const struct tep_event *ev) {
        static const struct { const char *prefix; uint8_t type; } kinds[] = {
                { "tbkp_", 3 }, { "tbkr_", 3 }, { "tbkb_", 1 }, { "tbke_", 2 },
        };
        const char *group = strempty(ev->system), *name = strempty(ev->name);
        size_t n = MIN(strlen(name), (size_t) 200);
        PbKey k = pb_key_make(KPROBE_EVENT_NAME, PB_WIRE_LEN);
        uint8_t *p;

        for (size_t i = 0; i < ELEMENTSOF(kinds); i++) {
                if (strncmp(group, kinds[i].prefix, strlen(kinds[i].prefix)) != 0)
                        continue;
                e->name_pb = malloc(sizeof(k.bytes) + 2 + n + 2);
                if (!e->name_pb)
                        return -ENOMEM;
                p = pb_put_key(e->name_pb, &k);
                p = pb_put_bytes(p, name, n);
                *p++ = (KPROBE_EVENT_TYPE << 3) | PB_WIRE_VARINT;
                *p++ = kinds[i].type;
                e->name_pb_len = (size_t) (p - e->name_pb);
                e->generic = true;   /* written as the generic encoder does: fixed bytes, no field */
                e->key = pb_key_make(EVENT_KPROBE, PB_WIRE_LEN);
                e->out_fixed += e->name_pb_len;
                return 1;
        }
        return 0;
}
