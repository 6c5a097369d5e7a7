/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The pids a trace already describes, in a table of bounded size: a hash of chained
 * entries for the lookup and a list from the least to the most recently seen for the
 * eviction, both in indices into one array, so that adding, touching and evicting cost
 * the same whatever the table holds. A pid evicted and seen again is described again:
 * trace_processor takes a second description of a live pid as an update of the same
 * process (SystemProbesParser::ParseProcessTree: GetOrCreateProcess, then the metadata
 * set again), so the trace stays right; only the memory is bounded.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "process-scan-local.h"

#define NONE 0u   /* indices are stored plus one: 0 is "no entry" */

static size_t bucket_of(const PidTable *t, int32_t pid) {
        return ((uint32_t) pid * 2654435761u) & (t->n_buckets - 1);
}

static PidEntry *at(PidTable *t, uint32_t index1) {
        return index1 == NONE ? NULL : &t->entries[index1 - 1];
}

static uint32_t index_of(const PidTable *t, const PidEntry *e) {
        return (uint32_t) (e - t->entries) + 1;
}

void pid_table_init(PidTable *t, size_t max_entries, size_t max_kept_bytes, bool threads) {
        *t = (PidTable) {
                .max_entries = MAX(max_entries, (size_t) 1),
                .max_kept_bytes = max_kept_bytes,
                .threads = threads,
        };
}

void pid_table_done(PidTable *t) {
        for (size_t i = 0; i < t->n; i++)
                process_description_free(t->entries[i].kept, t->threads);
        free(t->entries);
        free(t->buckets);
        *t = (PidTable) {};
}

PidEntry *pid_table_find(PidTable *t, int32_t pid) {
        if (t->n_buckets == 0)
                return NULL;
        for (PidEntry *e = at(t, t->buckets[bucket_of(t, pid)]); e; e = at(t, e->chain))
                if (e->pid == pid)
                        return e;
        return NULL;
}

static void lru_unlink(PidTable *t, PidEntry *e) {
        PidEntry *older = at(t, e->older), *newer = at(t, e->newer);

        if (older)
                older->newer = e->newer;
        else
                t->oldest = e->newer;
        if (newer)
                newer->older = e->older;
        else
                t->newest = e->older;
        e->older = e->newer = NONE;
}

static void lru_push_newest(PidTable *t, PidEntry *e) {
        uint32_t i = index_of(t, e);

        e->older = t->newest;
        e->newer = NONE;
        if (at(t, t->newest))
                at(t, t->newest)->newer = i;
        else
                t->oldest = i;
        t->newest = i;
}

void pid_table_touch(PidTable *t, PidEntry *e) {
        if (t->newest == index_of(t, e))
                return;
        lru_unlink(t, e);
        lru_push_newest(t, e);
}

/* Unlinks @e from its bucket's chain: the chains stay a few entries long, the buckets
 * being at least as many as the entries. */
static void chain_unlink(PidTable *t, PidEntry *e) {
        uint32_t *link = &t->buckets[bucket_of(t, e->pid)], i = index_of(t, e);

        while (*link != i)
                link = &at(t, *link)->chain;
        *link = e->chain;
}

static void chain_link(PidTable *t, PidEntry *e) {
        uint32_t *head = &t->buckets[bucket_of(t, e->pid)];

        e->chain = *head;
        *head = index_of(t, e);
}

/* Doubles the buckets when the entries would outnumber them: only while the table grows
 * towards its budget, never once it evicts. */
static int grow(PidTable *t) {
        size_t entries = MIN(MAX(t->allocated * 2, (size_t) 256), t->max_entries);
        size_t buckets = MAX(t->n_buckets, (size_t) 256);
        PidEntry *p;
        uint32_t *b;

        while (buckets < entries)
                buckets *= 2;
        p = reallocarray(t->entries, entries, sizeof(PidEntry));
        if (!p)
                return -ENOMEM;
        t->entries = p;
        t->allocated = entries;
        if (buckets == t->n_buckets)
                return 0;
        b = calloc(buckets, sizeof(uint32_t));
        if (!b)
                return -ENOMEM;
        free(t->buckets);
        t->buckets = b;
        t->n_buckets = buckets;
        for (size_t i = 0; i < t->n; i++)
                if (t->entries[i].pid != 0)
                        chain_link(t, &t->entries[i]);
        return 0;
}

/* Forgets the least recently seen pid and its kept description; the caller reuses the
 * entry or frees it. */
static PidEntry *evict_oldest(PidTable *t) {
        PidEntry *e = at(t, t->oldest);

        chain_unlink(t, e);
        lru_unlink(t, e);
        process_description_free(e->kept, t->threads);
        t->kept_bytes -= e->kept_bytes;
        *e = (PidEntry) {};
        t->n_live--;
        t->evicted++;
        return e;
}

/* An entry for a new pid: a freed one, else the array's next. */
static int take_entry(PidTable *t, PidEntry **ret) {
        int r;

        if (t->free_list != NONE) {
                *ret = at(t, t->free_list);
                t->free_list = (*ret)->chain;
                return 0;
        }
        if (t->n >= t->allocated) {
                r = grow(t);
                if (r < 0)
                        return r;
        }
        *ret = &t->entries[t->n++];
        return 0;
}

static void free_entry(PidTable *t, PidEntry *e) {
        e->chain = t->free_list;
        t->free_list = index_of(t, e);
}

bool pid_table_has_room(const PidTable *t) {
        return !t->refuse_when_full || t->n_live < t->max_entries;
}

int pid_table_add(PidTable *t, int32_t pid, PidEntry **ret) {
        PidEntry *e = pid_table_find(t, pid);
        int r;

        if (e) {
                pid_table_touch(t, e);
                if (ret)
                        *ret = e;
                return 0;
        }
        if (t->n_live >= t->max_entries) {
                if (t->refuse_when_full)
                        return -ENOSPC;
                e = evict_oldest(t);
        } else {
                r = take_entry(t, &e);
                if (r < 0)
                        return r;
        }
        *e = (PidEntry) { .pid = pid };
        t->n_live++;
        chain_link(t, e);
        lru_push_newest(t, e);
        if (ret)
                *ret = e;
        return 1;
}

void pid_table_keep(PidTable *t, PidEntry *e, void *description, size_t bytes, uint64_t collected_ns) {
        if (e->kept != description)
                process_description_free(e->kept, t->threads);
        t->kept_bytes = t->kept_bytes - e->kept_bytes + bytes;
        e->kept = description;
        e->kept_bytes = bytes;
        e->collected_ns = collected_ns;
        /* Past the byte budget the least recently seen give way, or, when the first ones
         * described are the ones to keep (DISCARD), this one is not kept. */
        while (t->kept_bytes > t->max_kept_bytes) {
                bool self = t->oldest == index_of(t, e);

                if (t->refuse_when_full) {
                        process_description_free(e->kept, t->threads);
                        t->kept_bytes -= e->kept_bytes;
                        e->kept = NULL;
                        e->kept_bytes = 0;
                        return;
                }
                /* Evicted itself when it is the least recently seen: described again
                 * when it shows up again, never left described without a description. */
                free_entry(t, evict_oldest(t));
                if (self)
                        return;
        }
}

static size_t description_bytes(const void *description, bool thread) {
        if (thread) {
                const Tracebus__ProcessTree__Thread *t = description;
                return sizeof(*t) + (t->name ? strlen(t->name) + 1 : 0);
        }
        const Tracebus__ProcessTree__Process *p = description;
        size_t n = sizeof(*p) + p->n_cmdline * sizeof(char *);
        for (size_t i = 0; i < p->n_cmdline; i++)
                n += strlen(p->cmdline[i]) + 1;
        return n;
}

/* Each description goes to its pid's entry; one whose pid was evicted meanwhile is
 * dropped (a later sighting describes it again). */
static void keep_all(PidTable *t, void **descriptions, size_t n, uint64_t collected_ns) {
        for (size_t i = 0; i < n; i++) {
                int32_t pid = t->threads ? ((Tracebus__ProcessTree__Thread *) descriptions[i])->tid :
                                           ((Tracebus__ProcessTree__Process *) descriptions[i])->pid;
                PidEntry *e = pid_table_find(t, pid);

                if (e)
                        pid_table_keep(t, e, descriptions[i], description_bytes(descriptions[i], t->threads),
                                       collected_ns);
                else
                        process_description_free(descriptions[i], t->threads);
        }
}

void process_tree_builder_keep(ProcessTreeBuilder *b, uint64_t collected_ns) {
        keep_all(&b->processes, (void **) b->procs, b->tree.n_processes, collected_ns);
        keep_all(&b->threads, (void **) b->thrs, b->tree.n_threads, collected_ns);
        b->tree.n_processes = b->tree.n_threads = 0;
}

typedef struct KeptItem {
        uint64_t collected_ns;
        bool thread;
        void *description;
} KeptItem;

static int kept_item_cmp(const void *a, const void *b) {
        const KeptItem *x = a, *y = b;

        if (x->collected_ns != y->collected_ns)
                return x->collected_ns < y->collected_ns ? -1 : 1;
        return (int) x->thread - (int) y->thread;
}

static size_t collect_kept(const PidTable *t, KeptItem *items, size_t n) {
        for (size_t i = 0; i < t->n; i++)
                if (t->entries[i].kept)
                        items[n++] = (KeptItem) { t->entries[i].collected_ns, t->threads, t->entries[i].kept };
        return n;
}

/* A tree at most this big: a packet stays well under trace_processor's limits. */
#define KEPT_PER_TREE 1024u

int process_tree_builder_write_kept(ProcessTreeBuilder *b,
                                    int (*write)(const Tracebus__ProcessTree *tree, void *userdata),
                                    void *userdata) {
        _cleanup_free_ KeptItem *items = NULL;
        _cleanup_free_ void **procs = NULL, **thrs = NULL;
        size_t n;

        items = calloc(b->processes.n + b->threads.n + 1, sizeof(KeptItem));
        procs = calloc(KEPT_PER_TREE, sizeof(void *));
        thrs = calloc(KEPT_PER_TREE, sizeof(void *));
        if (!items || !procs || !thrs)
                return -ENOMEM;
        n = collect_kept(&b->threads, items, collect_kept(&b->processes, items, 0));
        qsort(items, n, sizeof(KeptItem), kept_item_cmp);
        for (size_t i = 0; i < n;) {
                Tracebus__ProcessTree tree = TRACEBUS__PROCESS_TREE__INIT;
                int r;

                tree.processes = (Tracebus__ProcessTree__Process **) procs;
                tree.threads = (Tracebus__ProcessTree__Thread **) thrs;
                tree.has_collection_end_timestamp = true;
                tree.collection_end_timestamp = items[i].collected_ns;
                for (size_t j = i; i < n && i - j < KEPT_PER_TREE && items[i].collected_ns == items[j].collected_ns; i++)
                        if (items[i].thread)
                                thrs[tree.n_threads++] = items[i].description;
                        else
                                procs[tree.n_processes++] = items[i].description;
                r = write(&tree, userdata);
                if (r < 0)
                        return r;
        }
        return 0;
}
