/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>

/* chain_a calls chain_b calls chain_c calls chain_d, which spins @spins times. */
uint64_t fp_chain_a(uint64_t spins);    /* -fno-omit-frame-pointer */
uint64_t dw_chain_a(uint64_t spins);    /* -fomit-frame-pointer: DWARF unwinding */
