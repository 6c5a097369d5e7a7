/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * parse-bench --columns: where a deflated bundle's bytes go. Each CompactSched field of a
 * packed bundle is deflated in a stream of its own, the way deflate_spans() treats it in
 * the bundle (the timestamp columns stored, the others coded), and with deflate_coded()
 * whatever the bundle does; an empty stream's 8 bytes of framing are taken off each.
 */
#include <stdio.h>
#include <stdlib.h>

#include "deflate.h"
#include "parse-bench-columns.h"
#include "pb-wire.h"

#define BUNDLE_COMPACT_SCHED 4
#define STREAM_FRAMING 8        /* zlib header 2, empty last block 2, Adler-32 4 */

static int64_t deflated_size(const uint8_t *p, size_t len, bool coded) {
        uint8_t *out = malloc(deflate_bound(len, 1));
        DeflateStream s;
        size_t n;

        if (!out)
                return -1;
        deflate_begin(&s, out);
        (coded ? deflate_coded : deflate_stored)(&s, p, len);
        n = deflate_end(&s);
        free(out);
        return (int64_t) n - STREAM_FRAMING;
}

/* Timestamps are the columns the bundle stores (ftrace-compact.c). */
static bool sent_coded(uint64_t field) {
        return field != 1 && field != 7;
}

static int add_compact(ColumnTotals *t, const uint8_t *p, const uint8_t *end) {
        while (p < end) {
                const uint8_t *start = p;
                uint64_t key, len;
                int64_t sent, coded;

                if (!pb_varint_decode(&p, end, &key) || (key & 7) != 2 || !pb_varint_decode(&p, end, &len) ||
                    len > (uint64_t) (end - p) || (key >> 3) >= COLUMN_FIELDS)
                        return -1;
                p += len;
                sent = deflated_size(start, (size_t) (p - start), sent_coded(key >> 3));
                coded = deflated_size(start, (size_t) (p - start), true);
                if (sent < 0 || coded < 0)
                        return -1;
                t->raw[key >> 3] += (uint64_t) (p - start);
                t->as_sent[key >> 3] += (uint64_t) sent;
                t->coded[key >> 3] += (uint64_t) coded;
        }
        return 0;
}

int column_totals_add(ColumnTotals *t, const uint8_t *bundle, size_t len) {
        const uint8_t *p = bundle, *end = bundle + len;

        while (p < end) {
                const uint8_t *start = p;
                uint64_t key, v;

                if (!pb_varint_decode(&p, end, &key))
                        return -1;
                if ((key & 7) == 0) {
                        if (!pb_varint_decode(&p, end, &v))
                                return -1;
                        t->other += (uint64_t) (p - start);
                        continue;
                }
                if ((key & 7) != 2 || !pb_varint_decode(&p, end, &v) || v > (uint64_t) (end - p))
                        return -1;
                if (key >> 3 == BUNDLE_COMPACT_SCHED) {
                        t->other += (uint64_t) (p - start);
                        if (add_compact(t, p, p + v) < 0)
                                return -1;
                } else
                        t->other += (uint64_t) (p - start) + v;
                p += v;
        }
        return 0;
}

void column_totals_print(const ColumnTotals *t, uint64_t events, uint64_t z_bytes) {
        static const char *const names[COLUMN_FIELDS] = {
                [1] = "switch_timestamp", [2] = "switch_prev_state", [3] = "switch_next_pid",
                [4] = "switch_next_prio", [5] = "intern_table", [6] = "switch_next_comm_index",
                [7] = "waking_timestamp", [8] = "waking_pid", [9] = "waking_target_cpu",
                [10] = "waking_prio", [11] = "waking_comm_index", [12] = "waking_common_flags",
        };
        double ev = (double) (events ? events : 1);

        printf("| field | B/ev packed | B/ev deflated as sent | share of the file | B/ev deflate_coded() |\n");
        for (unsigned f = 1; f < COLUMN_FIELDS; f++)
                if (t->raw[f] > 0)
                        printf("| %s | %.3f | %.3f | %.1f%% | %.3f |\n", names[f], (double) t->raw[f] / ev,
                               (double) t->as_sent[f] / ev, 100.0 * (double) t->as_sent[f] / (double) z_bytes,
                               (double) t->coded[f] / ev);
        printf("| the rest of the bundles (stored) | %.3f | | | |\n", (double) t->other / ev);
}
