/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The cost of naming a perf sample's user frames, per sample: the kernel's
 * frame-pointer callchain named with perf_symbolize(), and the copied user stack
 * unwound with perf_unwind_dwarf() (libdw), on samples of this program's own known
 * call chain (tests/perf-chain.c, built with and without frame pointers). Cold: the
 * first pass of a new PerfProcess (files opened, symbols and CFI read); warm: later
 * passes. Thread CPU time, so that other load on the machine does not count.
 *
 *   perf-unwind-bench [--seconds S] [--stack BYTES] [--repeat N]
 *
 * Prints one JSON object; bench/run takes it as it is. Needs perf_event_open on
 * itself (perf_event_paranoid <= 2 is enough).
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "perf-chain.h"
#include "perf-self-sample.h"
#include "perf-unwind.h"

typedef struct Pass {
        double cold_ns, warm_ns;        /* per sample */
        double frames, named;           /* per sample, in the warm passes */
        size_t samples;
} Pass;

static uint64_t thread_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (uint64_t) ts.tv_sec * 1000000000u + ts.tv_nsec;
}

/* Runs @chain_a for @seconds of CPU, emptying the ring every 50 ms. */
static int sample(PerfSelfSampler *s, uint64_t (*chain_a)(uint64_t), double seconds, uint32_t stack) {
        int r = perf_self_open(s, 1000000, stack);
        if (r < 0)
                return r;
        uint64_t end = thread_ns() + (uint64_t) (seconds * 1e9);
        while (thread_ns() < end) {
                uint64_t chunk = thread_ns() + 50000000;
                perf_self_enable(s, 1);
                while (thread_ns() < chunk)
                        chain_a(20000);
                perf_self_enable(s, 0);
                r = perf_self_read(s);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* One pass over the samples; returns the frames named, adds all frames to *frames. */
static size_t unwind_all(PerfProcess *p, const PerfSelfSampler *s, bool dwarf, size_t *frames) {
        static PerfFrame out[128];
        size_t named = 0;

        for (size_t i = 0; i < s->n_samples; i++) {
                const PerfSelfSample *x = &s->samples[i];
                size_t n = 0;

                if (dwarf)
                        (void) perf_unwind_dwarf(p, x->regs, perf_self_regs_mask(), x->stack,
                                                 x->stack_len, out, 128, &n);
                else
                        for (; n < x->n_chain && n < 128; n++)
                                (void) perf_symbolize(p, x->chain[n], n > 0, &out[n]);
                *frames += n;
                for (size_t k = 0; k < n; k++)
                        named += out[k].function != NULL;
        }
        return named;
}

static int measure(const PerfSelfSampler *s, bool dwarf, unsigned repeat, Pass *ret) {
        PerfUnwinder *u = NULL;
        PerfProcess *p = NULL;
        size_t frames = 0, named = 0;
        int r;

        r = perf_unwinder_new(0, &u);
        if (r >= 0)
                r = perf_process_new(u, getpid(), &p);
        if (r < 0)
                return r;
        *ret = (Pass) { .samples = s->n_samples };
        uint64_t t0 = thread_ns();
        unwind_all(p, s, dwarf, &frames);
        uint64_t t1 = thread_ns();
        frames = 0;
        for (unsigned i = 0; i < repeat; i++)
                named += unwind_all(p, s, dwarf, &frames);
        uint64_t t2 = thread_ns();
        size_t n = s->n_samples ?: 1;
        ret->cold_ns = (double) (t1 - t0) / n;
        ret->warm_ns = (double) (t2 - t1) / (n * (double) repeat);
        ret->frames = (double) frames / (n * (double) repeat);
        ret->named = (double) named / (n * (double) repeat);
        perf_process_free(p);
        perf_unwinder_free(u);
        return 0;
}

static void print_pass(const char *name, const Pass *p, const char *sep) {
        printf("\"%s\": {\"samples\": %zu, \"cold_ns_per_sample\": %.0f, \"warm_ns_per_sample\": %.0f, "
               "\"frames_per_sample\": %.2f, \"named_frames_per_sample\": %.2f}%s",
               name, p->samples, p->cold_ns, p->warm_ns, p->frames, p->named, sep);
}

int main(int argc, char **argv) {
        static const struct option options[] = {
                { "seconds", required_argument, NULL, 's' },
                { "stack", required_argument, NULL, 'k' },
                { "repeat", required_argument, NULL, 'r' },
                {}
        };
        double seconds = 1.0;
        uint32_t stack = 8192;
        unsigned repeat = 5;
        PerfSelfSampler fp, dw;
        Pass fp_pass, dw_pass;
        int c, r;

        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0)
                switch (c) {
                case 's': seconds = atof(optarg); break;
                case 'k': stack = strtoul(optarg, NULL, 0); break;
                case 'r': repeat = strtoul(optarg, NULL, 0) ?: 1; break;
                default: return 2;
                }
        r = sample(&fp, fp_chain_a, seconds, stack);
        if (r >= 0)
                r = sample(&dw, dw_chain_a, seconds, stack);
        if (r >= 0)
                r = measure(&fp, false, repeat, &fp_pass);
        if (r >= 0)
                r = measure(&dw, true, repeat, &dw_pass);
        if (r < 0) {
                fprintf(stderr, "perf-unwind-bench: %s\n", strerror(-r));
                return 1;
        }
        printf("{\"stack_bytes\": %" PRIu32 ", \"lost\": %zu, ", stack, fp.lost + dw.lost);
        print_pass("frame_pointers", &fp_pass, ", ");
        print_pass("dwarf", &dw_pass, "}\n");
        perf_self_close(&fp);
        perf_self_close(&dw);
        return 0;
}
