/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * symbolize_ksyms: a code address in an event (workqueue_execute_start's function,
 * funcgraph_entry's func, ...) is written as a small number, the iid of the function
 * holding it, and the function's name once per trace in InternedData.kernel_symbols, as
 * traced_probes does. The trace then names kernel functions without holding a single
 * kernel address: KASLR stays hidden from callers who may not see addresses.
 */
#include <assert.h>
#include <string.h>

#include "array-util.h"
#include "ftrace-parser-local.h"

static int fresh_push(Symbolizer *s, uint32_t symbol) {
        if (s->n_fresh == s->fresh_allocated) {
                uint32_t *f = array_grow(s->fresh, &s->fresh_allocated, sizeof(uint32_t), 64);

                if (!f)
                        return -ENOMEM;
                s->fresh = f;
        }
        if (s->n_fresh == 0)
                s->first_fresh_iid = s->next_iid;
        s->fresh[s->n_fresh++] = symbol;
        return 0;
}

static uint32_t lookup_iid(Symbolizer *s, uint64_t address) {
        ssize_t i = ksyms_lookup(s->ksyms, address);

        if (i < 0)
                return 0;
        if (s->iids[i] == 0) {
                /* Out of memory for the list of names to write: better no name than an
                 * iid the trace never names. */
                if (fresh_push(s, (uint32_t) i) < 0)
                        return 0;
                s->iids[i] = s->next_iid++;
        }
        return s->iids[i];
}

uint32_t ftrace_symbolize(Symbolizer *s, uint64_t address) {
        size_t slot = (size_t) ((address * 0x9e3779b97f4a7c15ULL) >> 56) % ADDRESS_CACHE_SIZE;
        uint32_t iid;

        if (s->cache[slot].address == address)
                return s->cache[slot].iid;
        iid = lookup_iid(s, address);
        s->cache[slot].address = address;
        s->cache[slot].iid = iid;
        return iid;
}

static Symbolizer *symbolizer_free(Symbolizer *s) {
        if (!s)
                return NULL;
        ksyms_unref(s->ksyms);
        free(s->iids);
        free(s->fresh);
        return mfree(s);
}

void ftrace_parser_free_symbolizer(FtraceParser *p) {
        p->symbolizer = symbolizer_free(p->symbolizer);
}

int ftrace_parser_symbolize(FtraceParser *p, Ksyms *ksyms) {
        Symbolizer *s;

        assert(p);
        assert(ksyms);

        if (p->symbolizer)
                return -EBUSY;
        s = calloc(1, sizeof(Symbolizer));
        if (!s)
                return -ENOMEM;
        s->iids = calloc(MAX(ksyms_count(ksyms), (size_t) 1), sizeof(uint32_t));
        if (!s->iids) {
                free(s);
                return -ENOMEM;
        }
        s->ksyms = ksyms_ref(ksyms);
        s->next_iid = 1;
        p->symbolizer = s;
        for (size_t i = 0; i < p->n_by_id; i++)
                if (p->by_id[i])
                        ftrace_event_info_symbolize(p->by_id[i], s);
        return 0;
}

size_t ftrace_parser_take_new_symbols(FtraceParser *p, const uint32_t **ret_symbols, uint32_t *ret_first_iid) {
        Symbolizer *s;
        size_t n;

        assert(p);
        assert(ret_symbols);
        assert(ret_first_iid);

        s = p->symbolizer;
        if (!s || s->n_fresh == 0)
                return 0;
        n = s->n_fresh;
        *ret_symbols = s->fresh;
        *ret_first_iid = s->first_fresh_iid;
        s->n_fresh = 0;
        return n;
}

void ftrace_parser_forget_symbols(FtraceParser *p) {
        Symbolizer *s = p->symbolizer;

        if (!s)
                return;
        memset(s->iids, 0, MAX(ksyms_count(s->ksyms), (size_t) 1) * sizeof(uint32_t));
        memset(s->cache, 0, sizeof(s->cache));
        s->n_fresh = 0;
        s->next_iid = 1;
}
