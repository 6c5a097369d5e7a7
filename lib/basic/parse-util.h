/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>

/*
 * Sizes and durations as people write them in configuration files and on command lines: a
 * decimal number, with a fraction if wanted ("1.5"), optional blanks, then a unit matched
 * without regard to case. Both return -EINVAL for anything else (empty, a sign, a unit
 * they do not know, text after the unit) and -ERANGE for a value that does not fit in 64
 * bits. A fraction is rounded to the nearest byte or microsecond, halves up.
 */

/* Sizes: b; k, kb, kib; m, mb, mib; g, gb, gib; t, tb, tib, all powers of 1024. A bare
 * number counts @bare_unit bytes each: 1 where bytes are meant, 1024 where KiB are. */
int parse_size(const char *s, uint64_t bare_unit, uint64_t *ret_bytes);

/* Time spans, as systemd's *Sec= settings write them: us, ms, s, sec, m, min, h, hr, d; a
 * bare number is seconds; several spans add up ("1min 30s"). "infinity" is UINT64_MAX,
 * which no sum reaches. */
int parse_timespan(const char *s, uint64_t *ret_usec);

/* The value of a hexadecimal digit, in either case (the decimal digits among them), or -1. */
int hex_digit_value(char c);
