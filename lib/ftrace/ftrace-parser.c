/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Ring-buffer pages -> FtraceEventBundle bytes: the parser object.
 *
 * libtraceevent parses the text of events/header_page and of each event's format
 * file; everything an event needs at decode time (field offsets, sizes, kinds, the
 * protobuf keys it is written under) is resolved once, when the event is added, into
 * an EventInfo indexed by event id (ftrace-event-info.c). The hot path (ftrace-page.c)
 * then reads fields at fixed offsets and writes protobuf straight into one growable
 * buffer per bundle: no allocation per event, no lookup by name.
 */
#include <assert.h>

#include "ftrace-parser-local.h"

int ftrace_parser_new(FtraceParser **ret) {
        FtraceParser *p;

        assert(ret);

        p = calloc(1, sizeof(FtraceParser));
        if (!p)
                return -ENOMEM;
        p->tep = tep_alloc();
        if (!p->tep) {
                free(p);
                return -ENOMEM;
        }
        p->compact_min_record = SIZE_MAX;
        for (size_t i = 0; i < _COMPACT_ROLE_MAX; i++)
                p->signature[i] = NO_SIGNATURE;
        *ret = p;
        return 0;
}

FtraceParser *ftrace_parser_free(FtraceParser *p) {
        if (!p)
                return NULL;
        for (size_t i = 0; i < p->n_by_id; i++)
                ftrace_event_info_free(p->by_id[i]);
        free(p->by_id);
        free(p->hasher);
        ftrace_parser_free_print_filter(p);
        ftrace_parser_free_symbolizer(p);
        tep_free(p->tep);
        return mfree(p);
}

int ftrace_parser_load_header_page(FtraceParser *p, const char *text, size_t len) {
        _cleanup_free_ char *copy = NULL;
        int ts_size, commit_size;

        assert(p);
        assert(text || len == 0);

        if (len == 0)
                return -EINVAL;
        copy = strndup(text, len);
        if (!copy)
                return -ENOMEM;
        if (tep_parse_header_page(p->tep, copy, strlen(copy), (int) sizeof(long)) < 0)
                return -EBADMSG;

        ts_size = tep_get_header_timestamp_size(p->tep);
        commit_size = tep_get_header_page_size(p->tep);
        if (ts_size != 8 || (commit_size != 4 && commit_size != 8))
                return -EBADMSG;
        p->commit_size = (unsigned) commit_size;
        p->data_offset = (size_t) ts_size + (size_t) commit_size;
        p->header_loaded = true;
        return 0;
}


static const EventInfo *standard_layout(CompactRole role) {
        return role == COMPACT_SWITCH ? &standard_switch : &standard_waking;
}

/* What the compact encoders read of @e is what they read of @std. */
static bool compact_layout_is(const EventInfo *e, const EventInfo *std) {
        return e->compact_role == std->compact_role && e->min_len == std->min_len &&
                memcmp(e->compact_offset, std->compact_offset, sizeof(e->compact_offset)) == 0 &&
                memcmp(e->compact_size, std->compact_size, sizeof(e->compact_size)) == 0 &&
                /* Only wakings write common_flags. */
                (e->compact_role != COMPACT_WAKING || (e->has_common_flags == std->has_common_flags &&
                                                       e->common_flags_offset == std->common_flags_offset));
}

/* The first 8 bytes of a record of event @id in the standard layout, which holds exactly
 * its fields (the kernel rounds a record up to 4 bytes): type_len in the header's low 5
 * bits and the event id in the record's first 16 bits, under SIGNATURE_MASK. One compare
 * then stands for the header kind, length and bounds checks and the lookup by id of every
 * such record. Other layouts have none and take the general path. */
static uint64_t record_signature(unsigned id, const EventInfo *e) {
        if (__BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__ || !compact_layout_is(e, standard_layout(e->compact_role)))
                return NO_SIGNATURE;
        return (uint64_t) id << 32 | (e->min_len + 3u) / 4u;
}

static int parser_set_event(FtraceParser *p, unsigned id, EventInfo *e) {
        if (id >= p->n_by_id) {
                size_t n = MAX((size_t) id + 1, p->n_by_id * 2);
                EventInfo **a = realloc(p->by_id, n * sizeof(EventInfo *));

                if (!a)
                        return -ENOMEM;
                memset(a + p->n_by_id, 0, (n - p->n_by_id) * sizeof(EventInfo *));
                p->by_id = a;
                p->n_by_id = n;
        }
        p->by_id[id] = e;
        if (e->compact_role != COMPACT_NONE) {
                p->compact_min_record = MIN(p->compact_min_record, (size_t) 4 + e->min_len);
                p->signature[e->compact_role] = record_signature(id, e);
        }
        return 0;
}

/* The "ID: N" line, so a format already added is recognised before libtraceevent
 * would add a second copy of it. */
static int format_event_id(const char *text) {
        const char *l = strstr(text, "\nID:");
        char *end;
        unsigned long id;

        if (!l)
                return -EBADMSG;
        errno = 0;
        id = strtoul(l + 4, &end, 10);
        if (errno != 0 || end == l + 4 || id > UINT16_MAX)
                return -EBADMSG;
        return (int) id;
}

int ftrace_parser_add_event(FtraceParser *p, const char *group, const char *text, size_t len) {
        _cleanup_free_ char *copy = NULL;
        _cleanup_(ftrace_event_info_freep) EventInfo *e = NULL;
        struct tep_event *ev;
        int id, r;

        assert(p);
        assert(group);
        assert(text || len == 0);

        copy = strndup(text ?: "", len);
        if (!copy)
                return -ENOMEM;
        id = format_event_id(copy);
        if (id < 0)
                return id;
        if ((size_t) id < p->n_by_id && p->by_id[id])
                return id;

        /* A print fmt libtraceevent cannot parse still leaves the event and its fields,
         * which is all we need; so judge by the lookup, not by the return value. */
        r = tep_parse_event(p->tep, copy, strlen(copy), group);
        ev = tep_find_event(p->tep, id);
        if (!ev)
                return r == TEP_ERRNO__MEM_ALLOC_FAILED ? -ENOMEM : -EBADMSG;

        r = ftrace_event_info_new(ev, copy, &e);
        if (r < 0)
                return r;
        if (p->symbolizer)
                ftrace_event_info_symbolize(e, p->symbolizer);
        if (p->hasher)
                ftrace_event_info_hash_addresses(e, p->hasher);
        ftrace_event_info_setup_print(e, ev);
        r = parser_set_event(p, (unsigned) id, e);
        if (r < 0)
                return r;
        TAKE_PTR(e);
        return id;
}

int ftrace_parser_hash_addresses(FtraceParser *p, const uint8_t key[FTRACE_ADDRESS_KEY_SIZE]) {
        assert(p);
        assert(key);

        if (!p->hasher) {
                p->hasher = calloc(1, sizeof(AddressHasher));
                if (!p->hasher)
                        return -ENOMEM;
        }
        /* A new key makes the cached hashes wrong. */
        memset(p->hasher->cache, 0, sizeof(p->hasher->cache));
        memcpy(p->hasher->key, key, sizeof(p->hasher->key));
        for (size_t i = 0; i < p->n_by_id; i++)
                if (p->by_id[i])
                        ftrace_event_info_hash_addresses(p->by_id[i], p->hasher);
        return 0;
}

void ftrace_parser_get_stats(const FtraceParser *p, FtraceParserStats *ret) {
        assert(p);
        assert(ret);
        *ret = p->stats;
}
