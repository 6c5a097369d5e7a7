/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A known call chain for the unwinding tests and bench, built twice: with frame
 * pointers (CHAIN(x) = fp_x) and without (dw_x, unwound with DWARF). Each caller does
 * work after its call so that no call becomes a jump (the chain stays four deep).
 */
#include <stdint.h>

#include "perf-chain.h"

#define PASTE2(a, b) a##b
#define PASTE(a, b) PASTE2(a, b)
#define CHAIN(x) PASTE(CHAIN_PREFIX, x)
#define NOINLINE __attribute__((noinline, noclone, used))

extern volatile uint64_t CHAIN(sink);
volatile uint64_t CHAIN(sink);
uint64_t CHAIN(chain_d)(uint64_t spins);
uint64_t CHAIN(chain_c)(uint64_t spins);
uint64_t CHAIN(chain_b)(uint64_t spins);
uint64_t CHAIN(chain_a)(uint64_t spins);

NOINLINE uint64_t CHAIN(chain_d)(uint64_t spins) {
        for (uint64_t i = 0; i < spins; i++)
                CHAIN(sink) += i;
        /* Never taken: a call, so that GCC 12 gives this function a frame pointer (it
         * drops it in leaf functions despite -mno-omit-leaf-frame-pointer); with
         * -fno-shrink-wrap, on the loop's path too. */
        if (spins == UINT64_MAX)
                return CHAIN(chain_a)(0);
        return CHAIN(sink);
}

NOINLINE uint64_t CHAIN(chain_c)(uint64_t spins) {
        uint64_t r = CHAIN(chain_d)(spins);
        CHAIN(sink) ^= r;
        return r + 1;
}

NOINLINE uint64_t CHAIN(chain_b)(uint64_t spins) {
        uint64_t r = CHAIN(chain_c)(spins);
        CHAIN(sink) ^= r;
        return r + 1;
}

NOINLINE uint64_t CHAIN(chain_a)(uint64_t spins) {
        uint64_t r = CHAIN(chain_b)(spins);
        CHAIN(sink) ^= r;
        return r + 1;
}
