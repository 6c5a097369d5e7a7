/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <pthread.h>
#include <stdlib.h>

#include "log.h"
#include "recorder-local.h"

/* Stop's final drain. Tracing is off: each CPU's buffer holds what it holds and no more,
 * up to the whole ring (64 MB for a ring session that never drained). Reading it is one
 * read() per page, most of the time in the kernel copying pages out; the CPUs are
 * independent, so their pipes are read on several threads at once, each CPU into a
 * staging buffer of its own. Parsing and writing stay on the worker, CPU after CPU, as
 * in any drain: the parser and the writer are the worker's alone, every CPU's bundles
 * keep their order and the sequence rules hold. Whatever a stage could not take (more
 * than the CPU's buffer size, which the kernel's own pages cannot exceed by much) is
 * left in the pipe for the ordinary drain that follows. */

typedef struct CpuStage {
        uint8_t *pages;      /* page_size bytes per page */
        uint32_t *lens;      /* bytes read per page */
        size_t n, allocated;
        int error;
} CpuStage;

typedef struct DrainShare {
        Recorder *rec;
        CpuStage *stages;
        unsigned first, step;
        size_t max_pages;    /* per CPU */
        pthread_t thread;
} DrainShare;

static int stage_grow(CpuStage *s, size_t page_size, size_t max_pages) {
        size_t n = MIN(MAX(s->allocated * 2, (size_t) 64), max_pages);
        uint8_t *p;
        uint32_t *l;

        if (n <= s->allocated)
                return -ENOBUFS;
        p = realloc(s->pages, n * page_size);
        if (!p)
                return -ENOMEM;
        s->pages = p;
        l = realloc(s->lens, n * sizeof(uint32_t));
        if (!l)
                return -ENOMEM;
        s->lens = l;
        s->allocated = n;
        return 0;
}

static void stage_cpu(const DrainShare *d, unsigned cpu) {
        CpuStage *s = &d->stages[cpu];
        size_t page_size = d->rec->page_size;

        for (;;) {
                ssize_t n;

                if (s->n == s->allocated && stage_grow(s, page_size, d->max_pages) < 0)
                        return;  /* the rest stays in the pipe */
                n = read(d->rec->pipe_fds[cpu], s->pages + s->n * page_size, page_size);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno != EAGAIN)
                        s->error = -errno;
                if (n <= 0)
                        return;
                s->lens[s->n++] = (uint32_t) n;
        }
}

static void *share_main(void *userdata) {
        const DrainShare *d = userdata;

        for (unsigned cpu = d->first; cpu < d->rec->n_cpus; cpu += d->step)
                stage_cpu(d, cpu);
        return NULL;
}

/* The threads that could be started; the worker reads the first share itself. */
static unsigned start_shares(DrainShare *shares, unsigned n) {
        unsigned started = 1;

        for (unsigned i = 1; i < n; i++) {
                if (pthread_create(&shares[i].thread, NULL, share_main, &shares[i]) != 0)
                        break;
                started++;
        }
        return started;
}

static int parse_stages(Recorder *rec, CpuStage *stages) {
        int r = 0;

        for (unsigned cpu = 0; cpu < rec->n_cpus; cpu++) {
                CpuStage *s = &stages[cpu];

                for (size_t i = 0; r >= 0 && i < s->n; i++)
                        r = recorder_take_page(rec, cpu, s->pages + i * rec->page_size, s->lens[i]);
                if (r >= 0)
                        r = s->error;
                free(s->pages);
                free(s->lens);
        }
        return r;
}

int recorder_drain_parallel(Recorder *rec) {
        unsigned n = MIN(rec->stop_drain_threads, rec->n_cpus), started;
        _cleanup_free_ DrainShare *shares = NULL;
        _cleanup_free_ CpuStage *stages = NULL;

        if (n < 2)
                return 0;
        shares = calloc(n, sizeof(DrainShare));
        stages = calloc(rec->n_cpus, sizeof(CpuStage));
        if (!shares || !stages)
                return 0;  /* the ordinary drain reads it all */
        for (unsigned i = 0; i < n; i++)
                shares[i] = (DrainShare) {
                        .rec = rec, .stages = stages, .first = i, .step = n,
                        /* The ring's pages, and some the kernel adds (reader page, spares). */
                        .max_pages = (size_t) rec->buffer_size_kb * 1024u / rec->page_size + 16,
                };
        started = start_shares(shares, n);
        /* A share whose thread did not start is read here, after the worker's own. */
        for (unsigned i = 0; i < n; i++)
                if (i == 0 || i >= started)
                        (void) share_main(&shares[i]);
        for (unsigned i = 1; i < started; i++)
                (void) pthread_join(shares[i].thread, NULL);
        log_debug("Final drain: %u CPUs read on %u threads.", rec->n_cpus, started);
        return parse_stages(rec, stages);
}
