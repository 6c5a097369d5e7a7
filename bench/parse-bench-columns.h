/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* CompactSched's fields are 1-12; 5 is the intern table. */
#define COLUMN_FIELDS 13

/* parse-bench --columns: per CompactSched field, over all bundles. */
typedef struct ColumnTotals {
        uint64_t raw[COLUMN_FIELDS];      /* the field as packed: key, length, bytes */
        uint64_t as_sent[COLUMN_FIELDS];  /* deflated as deflate_spans() treats it */
        uint64_t coded[COLUMN_FIELDS];    /* deflate_coded() of it alone */
        uint64_t other;                   /* the bundle's bytes outside CompactSched */
} ColumnTotals;

int column_totals_add(ColumnTotals *t, const uint8_t *bundle, size_t len);
void column_totals_print(const ColumnTotals *t, uint64_t events, uint64_t z_bytes);
