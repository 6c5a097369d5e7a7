/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * linux.perf's interning, as Perfetto's InternedData: each callstack, frame, mapping,
 * path, build id and function name is written once per trace with an iid, and samples
 * name their callstack by iid. New entries of a read pass go out as one InternedData
 * packet in the trace's metadata (never overwritten by a ring buffer), before the pass's
 * samples. Kernel frames are named from kallsyms (ksyms-cache.c); user frames by
 * tracebus-unwind, which runs as the session owner (perf-helper.c), with their mapping,
 * rel_pc and build id, for trace_processor to symbolize the unnamed ones.
 */
#include <linux/perf_event.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/ksyms-cache.h"
#include "log.h"
#include "perf-local.h"
#include "perf-helper.h"

#define KERNEL_MAPPING_START UINT64_C(0xffff800000000000)
#define KERNEL_MAPPING_PATH "[kernel.kallsyms]"

uint64_t perf_hash(uint64_t h, const void *data, size_t n) {
        const uint8_t *p = data;

        if (h == 0)
                h = UINT64_C(0xcbf29ce484222325);
        for (size_t i = 0; i < n; i++)
                h = (h ^ p[i]) * UINT64_C(0x100000001b3);
        return h;
}

static size_t slot_of(const U64Map *m, uint64_t key) {
        size_t i = (size_t) ((key * UINT64_C(0x9e3779b97f4a7c15)) >> 20) & (m->allocated - 1);

        while (m->keys[i] != 0 && m->keys[i] != key + 1)
                i = (i + 1) & (m->allocated - 1);
        return i;
}

static int u64map_grow(U64Map *m) {
        U64Map bigger = { .allocated = MAX(m->allocated * 2, (size_t) 64) };

        bigger.keys = calloc(bigger.allocated, sizeof(uint64_t));
        bigger.values = calloc(bigger.allocated, sizeof(uint64_t));
        if (!bigger.keys || !bigger.values) {
                free(bigger.keys);
                free(bigger.values);
                return -ENOMEM;
        }
        for (size_t i = 0; i < m->allocated; i++)
                if (m->keys[i]) {
                        size_t j = slot_of(&bigger, m->keys[i] - 1);

                        bigger.keys[j] = m->keys[i];
                        bigger.values[j] = m->values[i];
                }
        bigger.n = m->n;
        u64map_done(m);
        *m = bigger;
        return 0;
}

int u64map_put(U64Map *m, uint64_t key, uint64_t value) {
        size_t i;

        if ((m->n + 1) * 2 > m->allocated) {
                int r = u64map_grow(m);
                if (r < 0)
                        return r;
        }
        i = slot_of(m, key);
        if (!m->keys[i])
                m->n++;
        m->keys[i] = key + 1;
        m->values[i] = value;
        return 0;
}

bool u64map_get(const U64Map *m, uint64_t key, uint64_t *ret) {
        size_t i;

        if (m->allocated == 0)
                return false;
        i = slot_of(m, key);
        if (!m->keys[i])
                return false;
        *ret = m->values[i];
        return true;
}

void u64map_done(U64Map *m) {
        free(m->keys);
        free(m->values);
        *m = (U64Map) {};
}

/* A new entry of @size bytes at the end of @list, zeroed; NULL without memory. */
static void *pending_add(PerfIntern *in, PerfPending *list, size_t size) {
        if (list->n == list->allocated) {
                size_t n = MAX(list->allocated * 2, (size_t) 16);
                void *items = reallocarray(list->items, n, size);

                if (!items)
                        return NULL;
                list->items = items;
                list->allocated = n;
                in->bytes += (n - list->n) * size;
        }
        return memset((uint8_t *) list->items + list->n++ * size, 0, size);
}

/* Whether the tables may grow: max_daemon_memory_kb, told once. */
static bool may_grow(PerfIntern *in, size_t more) {
        size_t tables = (in->names.allocated + in->mappings.allocated + in->frames.allocated + in->callstacks.allocated +
                         in->paths.allocated + in->build_ids.allocated) * 2 * sizeof(uint64_t);

        if (tables + in->bytes + more <= in->max_bytes)
                return true;
        in->full = true;
        return false;
}

static uint64_t intern_string(PerfIntern *in, U64Map *map, PerfPending *list, const void *data, size_t len) {
        uint64_t key = perf_hash(0, data, len), iid;
        Tracebus__InternedString *s;

        if (u64map_get(map, key, &iid))
                return iid;
        if (!may_grow(in, len + 64) || !(s = pending_add(in, list, sizeof(*s))))
                return 0;
        tracebus__interned_string__init(s);
        s->has_iid = s->has_str = true;
        s->iid = iid = ++in->next_iid;
        s->str.data = malloc(len ?: 1);
        if (!s->str.data || u64map_put(map, key, iid) < 0) {
                free(s->str.data);
                list->n--;
                return 0;
        }
        memcpy(s->str.data, data, len);
        s->str.len = len;
        in->bytes += len;
        return iid;
}

/* As traced_perf writes a build id: the raw bytes (trace_processor shows them in hex). */
static uint64_t intern_mapping_with(PerfIntern *in, const PerfMap *m, const uint8_t *build_id,
                                    size_t build_id_len, uint64_t load_bias) {
        uint64_t key = perf_hash(0, m, offsetof(PerfMap, path)), iid, path_iid;
        Tracebus__Mapping *mp;

        key = perf_hash(key, m->path, strlen(m->path));
        if (u64map_get(&in->mappings, key, &iid))
                return iid;
        path_iid = intern_string(in, &in->paths, &in->p_paths, m->path, strlen(m->path));
        if (path_iid == 0 || !(mp = pending_add(in, &in->p_mappings, sizeof(*mp))))
                return 0;
        tracebus__mapping__init(mp);
        mp->path_string_ids = malloc(sizeof(uint64_t));
        if (!mp->path_string_ids || u64map_put(&in->mappings, key, in->next_iid + 1) < 0) {
                free(mp->path_string_ids);
                in->p_mappings.n--;
                return 0;
        }
        mp->path_string_ids[0] = path_iid;
        mp->n_path_string_ids = 1;
        mp->has_iid = mp->has_start = mp->has_end = mp->has_start_offset = mp->has_exact_offset = true;
        mp->iid = iid = ++in->next_iid;
        mp->start = m->start;
        mp->end = m->end;
        mp->exact_offset = m->pgoff;
        mp->start_offset = m->start_offset;
        mp->build_id = build_id_len > 0 ? intern_string(in, &in->build_ids, &in->p_build_ids, build_id, build_id_len) : 0;
        mp->has_build_id = mp->build_id != 0;
        mp->load_bias = load_bias;
        mp->has_load_bias = load_bias != 0;
        return iid;
}

static uint64_t intern_mapping(PerfIntern *in, const PerfMap *m) {
        return intern_mapping_with(in, m, NULL, 0, 0);
}

static uint64_t intern_frame(PerfIntern *in, uint64_t mapping_iid, uint64_t rel_pc, uint64_t name_iid) {
        uint64_t key = perf_hash(perf_hash(0, &mapping_iid, 8), &rel_pc, 8), iid;
        Tracebus__Frame *f;

        if (u64map_get(&in->frames, key, &iid))
                return iid;
        if (!may_grow(in, 64) || !(f = pending_add(in, &in->p_frames, sizeof(*f))))
                return 0;
        tracebus__frame__init(f);
        f->has_iid = f->has_mapping_id = f->has_rel_pc = true;
        f->iid = iid = ++in->next_iid;
        f->mapping_id = mapping_iid;
        f->rel_pc = rel_pc;
        f->function_name_id = name_iid;
        f->has_function_name_id = name_iid != 0;
        if (u64map_put(&in->frames, key, iid) < 0) {
                in->p_frames.n--;
                return 0;
        }
        return iid;
}

/* A kernel address as a frame of the "[kernel.kallsyms]" mapping, named from kallsyms. */
static uint64_t kernel_frame(PerfIntern *in, uint64_t ip) {
        static const PerfMap kernel = { .start = KERNEL_MAPPING_START, .end = UINT64_MAX,
                                            .path = (char *) KERNEL_MAPPING_PATH };
        uint64_t mapping = intern_mapping(in, &kernel), name = 0;
        ssize_t sym = in->ksyms && ip >= KERNEL_MAPPING_START ? ksyms_lookup(in->ksyms, ip) : -1;

        if (mapping == 0 || ip < KERNEL_MAPPING_START)
                return 0;
        if (sym >= 0) {
                const char *n = ksyms_name(in->ksyms, sym);
                name = intern_string(in, &in->names, &in->p_names, n, strlen(n));
        }
        return intern_frame(in, mapping, ip - KERNEL_MAPPING_START, name);
}

void perf_intern_forget(PerfIntern *in, pid_t pid) {
        /* The helper reads its maps again with its next request. */
        (void) u64map_put(&in->exec_pids, (uint64_t) pid, 1);
}

/* A frame the helper named: its mapping (with the build id it read), the ELF's address
 * as rel_pc, the function. */
static uint64_t named_frame(PerfIntern *in, const UnwindFrame *f) {
        PerfMap m = { .start = f->start, .end = f->end, .pgoff = f->pgoff, .start_offset = f->pgoff,
                      .path = (char *) f->path };
        uint64_t mapping, name = 0;

        mapping = intern_mapping_with(in, &m, f->build_id, f->build_id_len, f->load_bias);
        if (mapping == 0)
                return 0;
        if (f->function)
                name = intern_string(in, &in->names, &in->p_names, f->function, strlen(f->function));
        return intern_frame(in, mapping, f->rel_pc, name);
}

static void note_reply_flags(PerfIntern *in, uint32_t flags) {
        in->helper_memory_cap = in->helper_memory_cap || (flags & UNWIND_REPLY_MEMORY_CAP);
        in->helper_files_denied = in->helper_files_denied || (flags & UNWIND_REPLY_FILES_DENIED);
}

/* The user frames of @st from the helper, leaf first, into @frames: how many, or
 * -EACCES (the owner may not ptrace the process), -ENOTCONN (no helper). */
static int user_frames(PerfIntern *in, PerfProc *p, const PerfStack *st, const uint64_t *ips, size_t n_ips,
                       uint64_t *frames, size_t max) {
        UnwindFrame named[UNWIND_MAX_FRAMES];
        UnwindReplyFixed reply;
        UnwindRequest req = {
                .pid = p->pid, .tid = st->tid, .ips = ips, .n_ips = n_ips,
                .regs = st->regs, .regs_mask = st->regs ? st->regs_mask : 0,
                .stack = st->regs ? st->stack : NULL, .stack_len = st->regs ? st->stack_len : 0,
        };
        uint64_t was_exec;
        size_t n = 0, n_frames = 0;
        int r;

        if (u64map_get(&in->exec_pids, (uint64_t) p->pid, &was_exec) && was_exec) {
                req.flags |= UNWIND_FLAG_EXEC;
                (void) u64map_put(&in->exec_pids, (uint64_t) p->pid, 0);
        }
        r = perf_helper_unwind(in->helper, &req, &reply, named, MIN(max, (size_t) UNWIND_MAX_FRAMES), &n);
        if (r < 0)
                return r == -E2BIG ? 0 : r;
        note_reply_flags(in, reply.flags);
        if (reply.status == UNWIND_STATUS_DENIED)
                return in->manage ? 0 : -EACCES;
        for (size_t i = 0; i < n; i++) {
                uint64_t f = named_frame(in, &named[i]);

                if (f != 0)
                        frames[n_frames++] = f;
        }
        return (int) n_frames;
}

/* The frames of @st, leaf first: the kernel's part of the callchain named from kallsyms,
 * the user's by the helper (from the callchain, or unwound with DWARF). */
static int collect_frames(PerfIntern *in, PerfProc *p, const PerfStack *st, uint64_t *frames) {
        uint64_t context = PERF_CONTEXT_USER, user_ips[PERF_MAX_FRAMES];
        size_t n_frames = 0, n_user = 0;
        int r;

        for (size_t i = 0; i < st->n_ips && n_frames + n_user < PERF_MAX_FRAMES; i++) {
                uint64_t f;

                if (st->ips[i] >= (uint64_t) PERF_CONTEXT_MAX) {
                        context = st->ips[i];
                        continue;
                }
                if (context == PERF_CONTEXT_KERNEL && (f = kernel_frame(in, st->ips[i])) != 0)
                        frames[n_frames++] = f;
                else if (context == PERF_CONTEXT_USER)
                        user_ips[n_user++] = st->ips[i];
        }
        if (!p || !in->helper || (n_user == 0 && !st->regs))
                return (int) n_frames;
        r = user_frames(in, p, st, user_ips, n_user, frames + n_frames, PERF_MAX_FRAMES - n_frames);
        return r < 0 ? r : (int) n_frames + r;
}

/* The iid of the callstack of @frames (leaf first; reversed in place); 0: none. */
static uint64_t intern_callstack(PerfIntern *in, uint64_t *frames, size_t n_frames) {
        uint64_t key, iid;
        Tracebus__Callstack *cs;

        /* Root first, as Callstack.frame_ids are. */
        if (n_frames == 0)
                return 0;
        for (size_t i = 0; i < n_frames / 2; i++) {
                uint64_t t = frames[i];
                frames[i] = frames[n_frames - 1 - i];
                frames[n_frames - 1 - i] = t;
        }
        key = perf_hash(0, frames, n_frames * sizeof(uint64_t));
        if (u64map_get(&in->callstacks, key, &iid))
                return iid;
        if (!may_grow(in, n_frames * 8 + 64) || !(cs = pending_add(in, &in->p_callstacks, sizeof(*cs))))
                return 0;
        tracebus__callstack__init(cs);
        cs->frame_ids = malloc(n_frames * sizeof(uint64_t));
        if (!cs->frame_ids || u64map_put(&in->callstacks, key, in->next_iid + 1) < 0) {
                free(cs->frame_ids);
                in->p_callstacks.n--;
                return 0;
        }
        memcpy(cs->frame_ids, frames, n_frames * sizeof(uint64_t));
        cs->n_frame_ids = n_frames;
        cs->has_iid = true;
        cs->iid = iid = ++in->next_iid;
        in->bytes += n_frames * sizeof(uint64_t);
        return iid;
}

int perf_intern_callstack(PerfIntern *in, PerfProc *p, const PerfStack *st, uint64_t *ret_iid) {
        uint64_t frames[PERF_MAX_FRAMES];
        int r;

        *ret_iid = 0;
        if (in->full)
                return 0;
        r = collect_frames(in, p, st, frames);
        if (r < 0)
                return r;
        *ret_iid = intern_callstack(in, frames, (size_t) r);
        return 0;
}

/* Pointers to the @n items of @size bytes at @items, as protobuf-c's repeated fields. */
static void **pointers(const PerfPending *list, size_t size) {
        void **v = calloc(list->n ?: 1, sizeof(void *));

        for (size_t i = 0; v && i < list->n; i++)
                v[i] = (uint8_t *) list->items + i * size;
        return v;
}

static void pending_clear(PerfIntern *in) {
        PerfPending *strings[] = { &in->p_names, &in->p_paths, &in->p_build_ids };

        for (size_t l = 0; l < ELEMENTSOF(strings); l++)
                for (size_t i = 0; i < strings[l]->n; i++) {
                        Tracebus__InternedString *s = (Tracebus__InternedString *) strings[l]->items + i;

                        in->bytes -= s->str.len;
                        free(s->str.data);
                }
        for (size_t i = 0; i < in->p_mappings.n; i++)
                free(((Tracebus__Mapping *) in->p_mappings.items)[i].path_string_ids);
        for (size_t i = 0; i < in->p_callstacks.n; i++) {
                Tracebus__Callstack *cs = (Tracebus__Callstack *) in->p_callstacks.items + i;

                in->bytes -= cs->n_frame_ids * sizeof(uint64_t);
                free(cs->frame_ids);
        }
        in->p_names.n = in->p_paths.n = in->p_build_ids.n = in->p_mappings.n = in->p_frames.n = in->p_callstacks.n = 0;
}

int perf_intern_flush(PerfIntern *in, Recorder *rec) {
        Tracebus__TracePacket packet = TRACEBUS__TRACE_PACKET__INIT;
        Tracebus__InternedData data = TRACEBUS__INTERNED_DATA__INIT;
        _cleanup_free_ void **names = NULL, **paths = NULL, **build_ids = NULL, **frames = NULL, **mappings = NULL,
                **callstacks = NULL;
        _cleanup_free_ uint8_t *buf = NULL;
        size_t len;
        int r;

        if (in->p_names.n + in->p_paths.n + in->p_build_ids.n + in->p_frames.n + in->p_mappings.n +
            in->p_callstacks.n == 0)
                return 0;
        names = pointers(&in->p_names, sizeof(Tracebus__InternedString));
        paths = pointers(&in->p_paths, sizeof(Tracebus__InternedString));
        build_ids = pointers(&in->p_build_ids, sizeof(Tracebus__InternedString));
        frames = pointers(&in->p_frames, sizeof(Tracebus__Frame));
        mappings = pointers(&in->p_mappings, sizeof(Tracebus__Mapping));
        callstacks = pointers(&in->p_callstacks, sizeof(Tracebus__Callstack));
        if (!names || !paths || !build_ids || !frames || !mappings || !callstacks)
                return -ENOMEM;
        data.n_function_names = in->p_names.n, data.function_names = (Tracebus__InternedString **) names;
        data.n_mapping_paths = in->p_paths.n, data.mapping_paths = (Tracebus__InternedString **) paths;
        data.n_build_ids = in->p_build_ids.n, data.build_ids = (Tracebus__InternedString **) build_ids;
        data.n_frames = in->p_frames.n, data.frames = (Tracebus__Frame **) frames;
        data.n_mappings = in->p_mappings.n, data.mappings = (Tracebus__Mapping **) mappings;
        data.n_callstacks = in->p_callstacks.n, data.callstacks = (Tracebus__Callstack **) callstacks;
        packet.interned_data = &data;
        packet.has_sequence_flags = true;
        packet.sequence_flags = PERF_SEQ_NEEDS_INCREMENTAL_STATE;
        len = tracebus__trace_packet__get_packed_size(&packet);
        buf = malloc(len);
        if (!buf)
                return -ENOMEM;
        tracebus__trace_packet__pack(&packet, buf);
        /* Metadata: a ring buffer that wraps must not lose the names its samples use. */
        r = recorder_submit_packet(rec, TRACE_SEQUENCE_PERF, 0, /* meta= */ true, buf, len);
        pending_clear(in);
        return r;
}

void perf_intern_done(PerfIntern *in) {
        pending_clear(in);
        free(in->p_names.items);
        free(in->p_paths.items);
        free(in->p_build_ids.items);
        free(in->p_frames.items);
        free(in->p_mappings.items);
        free(in->p_callstacks.items);
        u64map_done(&in->names);
        u64map_done(&in->mappings);
        u64map_done(&in->frames);
        u64map_done(&in->callstacks);
        u64map_done(&in->paths);
        u64map_done(&in->build_ids);
        if (in->ksyms)
                ksyms_cache_put(TAKE_PTR(in->ksyms));
        u64map_done(&in->exec_pids);
        *in = (PerfIntern) {};
}
