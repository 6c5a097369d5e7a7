/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The ftrace parser on pages edited or written here: every record type, the compact
 * comm cache, lost events, packing into a reserved buffer, and malformed, garbage and
 * bad data_loc pages, which must give a clean error and a bundle that still unpacks.
 */
#include <errno.h>
#include <glib.h>
#include <stdint.h>
#include <string.h>

#include "ftrace-parser.h"
#include "trace-file.h"
#include "trace-reader.h"
#include "trace.pb-c.h"
#include "ftrace-fixture.h"

/* The events @m holds, full or compact. */
static size_t bundle_events(const Tracebus__FtraceEventBundle *m) {
        size_t n = m->n_event;

        if (m->compact_sched)
                n += m->compact_sched->n_switch_timestamp + m->compact_sched->n_waking_timestamp;
        return n;
}

/* Both encoders (the compact one has a fast path of its own for the usual switch and
 * waking records) keep the same events and report the same error. */
static void expect_bad_page(FtraceParser *p, const uint8_t *page, size_t size, unsigned status,
                            size_t events_kept) {
        for (int compact = 0; compact <= 1; compact++) {
                FtraceBundle *b = NULL;
                Tracebus__FtraceEventBundle *m;

                g_assert_cmpint(ftrace_bundle_new(0, compact, &b), ==, 0);
                g_assert_cmpint(ftrace_parser_parse_page(p, page, size, b), ==, -EBADMSG);
                g_assert_cmpuint(ftrace_bundle_n_events(b), ==, events_kept);
                g_assert_cmpuint(ftrace_bundle_n_errors(b), ==, 1);
                m = bundle_pack_unpack(b, NULL);
                g_assert_cmpuint(bundle_events(m), ==, events_kept);
                g_assert_cmpuint(m->n_error, ==, 1);
                g_assert_cmpuint(m->error[0]->status, ==, status);
                if (size >= 16)
                        g_assert_cmpuint(m->error[0]->timestamp, ==, rd64(page));
                tracebus__ftrace_event_bundle__free_unpacked(m, NULL);
                ftrace_bundle_free(b);
        }
}

/* A sched_switch record as the kernel lays it out (sched/sched_switch/format). */
static void make_switch(uint8_t rec[64], int id, int pid) {
        memset(rec, 0, 64);
        memcpy(rec, &(uint16_t) { (uint16_t) id }, 2);
        memcpy(rec + 4, &pid, 4);
        memcpy(rec + 8, "synthetic", 9);
        memcpy(rec + 24, &pid, 4);
        memcpy(rec + 40, "0123456789abcdef", 16);       /* a full comm: no NUL */
}

/* Every record type in one page: padding (delta 1, the kernel's "no delta" marker,
 * and a real delta), time extend, absolute time stamp, the long length form. */
static void test_record_types(void) {
        FtraceParser *p = parser_new_from_fixtures(NULL);
        g_autoptr(GBytes) fmt = fixture_read("events/sched/sched_switch/format");
        const uint64_t t0 = 1000000000, abs = 5000000000ULL;
        const uint64_t expect[] = {
                t0 + 10, t0 + 30, t0 + 40, t0 + 40 + (2ULL << 27) + 5, abs + 1, abs + 3,
        };
        FtraceParserStats before, after;
        PageWriter w = { .off = 16 };
        uint8_t rec[64];
        FtraceBundle *b = NULL;
        Tracebus__FtraceEventBundle *m;
        int id;

        id = ftrace_parser_add_event(p, "sched", g_bytes_get_data(fmt, NULL), g_bytes_get_size(fmt));
        g_assert_cmpint(id, >, 0);
        make_switch(rec, id, 4242);

        pw_word(&w, 16 | 10 << 5);              /* data, 16 words, delta 10 */
        pw_bytes(&w, rec, 64);
        pw_word(&w, 29 | 1 << 5);               /* padding, delta 1: not a delta */
        pw_word(&w, 12);
        pw_word(&w, 0);
        pw_word(&w, 0);
        pw_word(&w, 16 | 20 << 5);
        pw_bytes(&w, rec, 64);
        pw_word(&w, 29 | 7 << 5);               /* padding with a real delta */
        pw_word(&w, 4);
        pw_word(&w, 16 | 3 << 5);
        pw_bytes(&w, rec, 64);
        pw_word(&w, 30 | 5 << 5);               /* time extend: 2 << 27 | 5 */
        pw_word(&w, 2);
        pw_word(&w, 16);
        pw_bytes(&w, rec, 64);
        pw_word(&w, 31 | (uint32_t) ((abs & RB_COMMIT_MASK) << 5));     /* absolute */
        pw_word(&w, (uint32_t) (abs >> 27));
        pw_word(&w, 16 | 1 << 5);
        pw_bytes(&w, rec, 64);
        pw_word(&w, 0 | 2 << 5);                /* type_len 0: length word (counts itself) */
        pw_word(&w, 64 + 4);
        pw_bytes(&w, rec, 64);
        pw_finish(&w, t0);

        ftrace_parser_get_stats(p, &before);
        g_assert_cmpint(ftrace_bundle_new(0, false, &b), ==, 0);
        g_assert_cmpint(ftrace_parser_parse_page(p, w.page, sizeof(w.page), b), ==, G_N_ELEMENTS(expect));
        ftrace_parser_get_stats(p, &after);
        g_assert_cmpuint(after.paddings - before.paddings, ==, 2);
        g_assert_cmpuint(after.time_extends - before.time_extends, ==, 1);
        g_assert_cmpuint(after.time_stamps - before.time_stamps, ==, 1);
        g_assert_cmpuint(ftrace_bundle_last_timestamp(b), ==, abs + 3);

        m = bundle_pack_unpack(b, NULL);
        g_assert_cmpuint(m->n_event, ==, G_N_ELEMENTS(expect));
        for (size_t i = 0; i < m->n_event; i++) {
                g_assert_cmpuint(m->event[i]->timestamp, ==, expect[i]);
                g_assert_cmpuint(m->event[i]->pid, ==, 4242);
                g_assert_cmpstr(m->event[i]->sched_switch->prev_comm, ==, "synthetic");
                g_assert_cmpstr(m->event[i]->sched_switch->next_comm, ==, "0123456789abcdef");
        }
        tracebus__ftrace_event_bundle__free_unpacked(m, NULL);
        ftrace_bundle_free(b);

        /* The same page, compact: absolute first timestamp, then deltas. */
        g_assert_cmpint(ftrace_bundle_new(0, true, &b), ==, 0);
        g_assert_cmpint(ftrace_parser_parse_page(p, w.page, sizeof(w.page), b), ==, G_N_ELEMENTS(expect));
        m = bundle_pack_unpack(b, NULL);
        g_assert_cmpuint(m->n_event, ==, 0);
        g_assert_nonnull(m->compact_sched);
        g_assert_cmpuint(m->compact_sched->n_intern_table, ==, 1);
        g_assert_cmpstr(m->compact_sched->intern_table[0], ==, "0123456789abcdef");
        g_assert_cmpuint(m->compact_sched->n_switch_timestamp, ==, G_N_ELEMENTS(expect));
        for (size_t i = 0; i < G_N_ELEMENTS(expect); i++) {
                g_assert_cmpuint(m->compact_sched->switch_timestamp[i], ==, expect[i] - (i ? expect[i - 1] : 0));
                g_assert_cmpint(m->compact_sched->switch_next_pid[i], ==, 0);
                g_assert_cmpuint(m->compact_sched->switch_next_comm_index[i], ==, 0);
        }
        tracebus__ftrace_event_bundle__free_unpacked(m, NULL);
        ftrace_bundle_free(b);

        /* A switch of the usual length cut by the commit after its header and id: the
         * compact encoder's fast path must not take it either. */
        w.off = 16;
        pw_word(&w, 16 | 10 << 5);
        pw_bytes(&w, rec, 64);
        pw_word(&w, 16 | 10 << 5);
        pw_bytes(&w, rec, 8);
        pw_finish(&w, t0);
        expect_bad_page(p, w.page, sizeof(w.page), FTRACE_STATUS_ABI_END_OVERFLOW, 1);
        ftrace_parser_free(p);
}

/* A parser that knows sched_switch (the fixture's format); its event id in *@ret_id. */
static FtraceParser *switch_parser(int *ret_id) {
        FtraceParser *p = parser_new_from_fixtures(NULL);
        g_autoptr(GBytes) fmt = fixture_read("events/sched/sched_switch/format");

        *ret_id = ftrace_parser_add_event(p, "sched", g_bytes_get_data(fmt, NULL), g_bytes_get_size(fmt));
        g_assert_cmpint(*ret_id, >, 0);
        return p;
}

/* A page of switches to @comms (@lens bytes each, the rest of the 16 zero, so that bytes
 * after a NUL can differ); next_pid is @pids[i], or 777 for every record when @pids is NULL. */
static void page_of_comms(PageWriter *w, int id, const char *const *comms, const size_t *lens, const int32_t *pids,
                          size_t n) {
        uint8_t rec[64];

        *w = (PageWriter) { .off = 16 };
        for (size_t i = 0; i < n; i++) {
                make_switch(rec, id, 4242);
                memset(rec + 40, 0, 16);
                memcpy(rec + 40, comms[i], lens[i]);                     /* next_comm */
                memcpy(rec + 56, pids ? &pids[i] : &(int32_t) { 777 }, 4);  /* next_pid */
                pw_word(w, 16 | 10 << 5);
                pw_bytes(w, rec, 64);
        }
        pw_finish(w, 1000);
}

static void assert_compact_comms(FtraceBundle *b, const char *const *table, size_t n_table,
                                 const uint32_t *index, const int32_t *pids, size_t n) {
        Tracebus__FtraceEventBundle *m = bundle_pack_unpack(b, NULL);

        g_assert_nonnull(m->compact_sched);
        g_assert_cmpuint(m->compact_sched->n_intern_table, ==, n_table);
        for (size_t i = 0; i < n_table; i++)
                g_assert_cmpstr(m->compact_sched->intern_table[i], ==, table[i]);
        g_assert_cmpuint(m->compact_sched->n_switch_next_comm_index, ==, n);
        for (size_t i = 0; i < n; i++) {
                g_assert_cmpint(m->compact_sched->switch_next_pid[i], ==, pids ? pids[i] : 777);
                g_assert_cmpuint(m->compact_sched->switch_next_comm_index[i], ==, index[i]);
        }
        tracebus__ftrace_event_bundle__free_unpacked(m, NULL);
}

/* Compact comms: one pid whose next_comm changes (a rename) and changes back, and the
 * same string with other bytes after its NUL, each get the right intern index. The
 * next bundle starts its own table: the comm the last one cached for the pid is not
 * taken for an index into it. */
static void test_compact_comm_cache(void) {
        static const char *const comms1[] = { "first", "second", "first", "first\0junk", "second" };
        static const size_t lens1[] = { 5, 6, 5, 10, 6 };
        static const char *const table1[] = { "first", "second" };
        static const uint32_t index1[] = { 0, 1, 0, 0, 1 };
        static const char *const comms2[] = { "second", "first" };
        static const size_t lens2[] = { 6, 5 };
        static const char *const table2[] = { "second", "first" };
        static const uint32_t index2[] = { 0, 1 };
        int id;
        FtraceParser *p = switch_parser(&id);
        FtraceBundle *b = NULL;
        PageWriter w;

        g_assert_cmpint(ftrace_bundle_new(0, true, &b), ==, 0);
        page_of_comms(&w, id, comms1, lens1, NULL, G_N_ELEMENTS(comms1));
        g_assert_cmpint(ftrace_parser_parse_page(p, w.page, sizeof(w.page), b), ==, G_N_ELEMENTS(comms1));
        assert_compact_comms(b, table1, G_N_ELEMENTS(table1), index1, NULL, G_N_ELEMENTS(index1));
        page_of_comms(&w, id, comms2, lens2, NULL, G_N_ELEMENTS(comms2));
        g_assert_cmpint(ftrace_parser_parse_page(p, w.page, sizeof(w.page), b), ==, G_N_ELEMENTS(comms2));
        assert_compact_comms(b, table2, G_N_ELEMENTS(table2), index2, NULL, G_N_ELEMENTS(index2));
        ftrace_bundle_free(b);
        ftrace_parser_free(p);
}

/* Records that look like an empty comm-cache entry: pid -1 with a comm of 16 0xff bytes
 * (what the cache's memset(0xff) empties held, and so once got index UINT32_MAX), and
 * pids 0 and 1 with an all-zero comm (a zeroed entry's bytes). Each gets a real index. */
static void test_compact_comm_cache_empty(void) {
        static const char ff16[] = "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff";
        static const int32_t pids[] = { -1, 0, 1, -1 };
        static const char *const comms[] = { ff16, "", "", ff16 };
        static const size_t lens[] = { 16, 0, 0, 16 };
        static const char *const table[] = { ff16, "" };
        static const uint32_t index[] = { 0, 1, 1, 0 };
        int id;
        FtraceParser *p = switch_parser(&id);
        FtraceBundle *b = NULL;
        PageWriter w;

        page_of_comms(&w, id, comms, lens, pids, G_N_ELEMENTS(comms));
        g_assert_cmpint(ftrace_bundle_new(0, true, &b), ==, 0);
        g_assert_cmpint(ftrace_parser_parse_page(p, w.page, sizeof(w.page), b), ==, G_N_ELEMENTS(pids));
        assert_compact_comms(b, table, G_N_ELEMENTS(table), index, pids, G_N_ELEMENTS(pids));
        ftrace_bundle_free(b);
        ftrace_parser_free(p);
}

static gint cmp_int32(gconstpointer a, gconstpointer b) {
        int32_t x = *(const int32_t *) a, y = *(const int32_t *) b;

        return x < y ? -1 : x > y;
}

/* The pids noted in @b since the last take, sorted: @n of them, @want's. */
static void assert_taken_pids(FtraceBundle *b, const int32_t *want, size_t n) {
        g_autoptr(GArray) got = g_array_new(false, false, sizeof(int32_t));
        const int32_t *pids;
        size_t k = ftrace_bundle_take_pids(b, &pids);

        g_array_append_vals(got, pids, (guint) k);
        g_array_sort(got, cmp_int32);
        g_assert_cmpuint(got->len, ==, n);
        for (size_t i = 0; i < n; i++)
                g_assert_cmpint(g_array_index(got, int32_t, i), ==, want[i]);
}

/* A pid is noted once, not again in the next pass; after ftrace_bundle_forget_pids()
 * (a new chunk of a rotated trace) every pid the events name is noted again. */
static void test_forget_pids(void) {
        static const char *const comms[] = { "a", "b", "a" };
        static const size_t lens[] = { 1, 1, 1 };
        static const int32_t next[] = { 777, 778, 777 };
        static const int32_t all[] = { 777, 778 };   /* compact: switches note next_pid only */
        int id;
        FtraceParser *p = switch_parser(&id);
        FtraceBundle *b = NULL;
        PageWriter w;

        page_of_comms(&w, id, comms, lens, next, G_N_ELEMENTS(comms));
        g_assert_cmpint(ftrace_bundle_new(0, true, &b), ==, 0);
        g_assert_cmpint(ftrace_parser_parse_page(p, w.page, sizeof(w.page), b), ==, G_N_ELEMENTS(comms));
        assert_taken_pids(b, all, G_N_ELEMENTS(all));
        g_assert_cmpint(ftrace_parser_parse_page(p, w.page, sizeof(w.page), b), ==, G_N_ELEMENTS(comms));
        assert_taken_pids(b, NULL, 0);
        ftrace_bundle_forget_pids(b);
        g_assert_cmpint(ftrace_parser_parse_page(p, w.page, sizeof(w.page), b), ==, G_N_ELEMENTS(comms));
        assert_taken_pids(b, all, G_N_ELEMENTS(all));
        ftrace_bundle_free(b);
        ftrace_parser_free(p);
}

/* Bit 31 of a real page's commit word (RB_MISSED_EVENTS) -> lost_events; the next
 * bundle starts clean and chains previous_bundle_end_timestamp. */
static void test_lost_events(void) {
        FtraceParser *p = parser_new_from_fixtures(NULL);
        uint8_t page[PAGE_SIZE_4K];
        uint64_t commit, last;
        FtraceBundle *b = NULL;
        Tracebus__FtraceEventBundle *m;
        int n;

        memcpy(page, cpu_page(1, 0), sizeof(page));
        g_assert_cmpint(ftrace_parser_page_lost_events(p, page, sizeof(page)), ==, 0);
        memcpy(&commit, page + 8, 8);
        commit |= 1u << 31;
        memcpy(page + 8, &commit, 8);
        g_assert_cmpint(ftrace_parser_page_lost_events(p, page, sizeof(page)), ==, 1);

        g_assert_cmpint(ftrace_bundle_new(1, false, &b), ==, 0);
        n = ftrace_parser_parse_page(p, page, sizeof(page), b);
        g_assert_cmpint(n, >, 0);
        g_assert_true(ftrace_bundle_lost_events(b));
        last = ftrace_bundle_last_timestamp(b);
        m = bundle_pack_unpack(b, NULL);
        g_assert_true(m->has_lost_events && m->lost_events);
        g_assert_cmpuint(m->n_event, ==, (size_t) n);
        g_assert_cmpuint(m->event[m->n_event - 1]->timestamp, ==, last);
        tracebus__ftrace_event_bundle__free_unpacked(m, NULL);

        g_assert_false(ftrace_bundle_lost_events(b));
        g_assert_cmpuint(ftrace_bundle_n_events(b), ==, 0);
        g_assert_cmpint(ftrace_parser_parse_page(p, cpu_page(1, 1), PAGE_SIZE_4K, b), >, 0);
        m = bundle_pack_unpack(b, NULL);
        g_assert_false(m->has_lost_events && m->lost_events);
        g_assert_cmpuint(m->previous_bundle_end_timestamp, ==, last);
        g_assert_cmpuint(m->event[0]->timestamp, >=, last);
        tracebus__ftrace_event_bundle__free_unpacked(m, NULL);

        /* An empty bundle still says where the previous one ended. */
        last = ftrace_bundle_last_timestamp(b);
        m = bundle_pack_unpack(b, NULL);
        g_assert_cmpuint(m->n_event, ==, 0);
        g_assert_cmpuint(m->previous_bundle_end_timestamp, ==, last);
        tracebus__ftrace_event_bundle__free_unpacked(m, NULL);
        ftrace_bundle_free(b);
        ftrace_parser_free(p);
}

/* Packs @b1 with ftrace_bundle_pack() (the bundle's own buffer) and @b2, parsed alike,
 * with packed_size + pack_into() where the caller wants it, as the service does: into an
 * allocation of exactly the announced size, which the sanitizer build checks. Both must
 * give the same bytes. */
static void assert_pack_into_same(FtraceBundle *b1, FtraceBundle *b2) {
        const uint8_t *buf;
        size_t len1, len2;
        g_autofree uint8_t *dst = NULL;

        g_assert_cmpint(ftrace_bundle_packed_size(b2, &len2), ==, 0);
        dst = g_malloc(len2);
        ftrace_bundle_pack_into(b2, dst);
        g_assert_cmpint(ftrace_bundle_pack(b1, &buf, &len1), ==, 0);
        g_assert_cmpmem(dst, len2, buf, len1);
        g_assert_cmpuint(ftrace_bundle_n_events(b2), ==, 0);
}

static void test_pack_into(void) {
        FtraceParser *p = parser_new_from_fixtures(NULL);
        uint8_t lost[PAGE_SIZE_4K], bad[PAGE_SIZE_4K];
        uint64_t commit;

        /* A page after lost events, and a page whose commit ends inside a record. */
        memcpy(lost, cpu_page(1, 0), sizeof(lost));
        memcpy(&commit, lost + 8, 8);
        commit |= 1u << 31;
        memcpy(lost + 8, &commit, 8);
        memcpy(bad, cpu_page(1, 1), sizeof(bad));
        commit = 101;
        memcpy(bad + 8, &commit, 8);

        for (int compact = 0; compact <= 1; compact++)
                for (int cpu = 0; cpu < N_CPUS; cpu++) {
                        FtraceBundle *b[2] = {};
                        Tracebus__FtraceEventBundle *m;
                        uint64_t last;

                        for (int k = 0; k < 2; k++) {
                                g_assert_cmpint(ftrace_bundle_new((uint32_t) cpu, compact, &b[k]), ==, 0);
                                g_assert_cmpint(ftrace_parser_parse_page(p, lost, sizeof(lost), b[k]), >, 0);
                                for (size_t i = 0; i < cpu_n_pages(cpu); i++)
                                        (void) ftrace_parser_parse_page(p, cpu_page(cpu, i), PAGE_SIZE_4K, b[k]);
                                g_assert_cmpint(ftrace_parser_parse_page(p, bad, sizeof(bad), b[k]), ==, -EBADMSG);
                        }
                        g_assert_cmpuint(ftrace_bundle_n_errors(b[1]), ==, 1);
                        assert_pack_into_same(b[0], b[1]);

                        /* The next bundles (empty) still agree, on where the last one ended. */
                        assert_pack_into_same(b[0], b[1]);

                        /* A bundle dropped (no room in the writer) still ends where it ended. */
                        g_assert_cmpint(ftrace_parser_parse_page(p, cpu_page(cpu, 0), PAGE_SIZE_4K, b[1]), >, 0);
                        last = ftrace_bundle_last_timestamp(b[1]);
                        g_assert_cmpint(ftrace_bundle_packed_size(b[1], &(size_t) { 0 }), ==, 0);
                        ftrace_bundle_pack_into(b[1], NULL);
                        g_assert_cmpuint(ftrace_bundle_n_events(b[1]), ==, 0);
                        m = bundle_pack_unpack(b[1], NULL);
                        g_assert_cmpuint(m->previous_bundle_end_timestamp, ==, last);
                        tracebus__ftrace_event_bundle__free_unpacked(m, NULL);
                        ftrace_bundle_free(b[0]);
                        ftrace_bundle_free(b[1]);
                }
        ftrace_parser_free(p);
}

/* The data record @n (from 0) of @recs. */
static const Record *nth_data_record(GArray *recs, size_t n) {
        for (size_t k = 0; k < recs->len; k++) {
                const Record *r = &g_array_index(recs, Record, k);

                if (r->type_len <= 28 && n-- == 0)
                        return r;
        }
        g_assert_not_reached();
}

static void test_malformed_pages(void) {
        FtraceParser *p = parser_new_from_fixtures(NULL);
        g_autoptr(GArray) recs = page_records(cpu_page(1, 0));
        const Record *fifth = nth_data_record(recs, 4);
        uint8_t page[PAGE_SIZE_4K];
        uint64_t commit;
        uint32_t w;

        /* Shorter than the header. */
        expect_bad_page(p, cpu_page(1, 0), 8, FTRACE_STATUS_ABI_INVALID_PAGE_HEADER, 0);
        /* A real page cut in half: the commit says more than was read. */
        expect_bad_page(p, cpu_page(1, 0), 2048, FTRACE_STATUS_ABI_INVALID_PAGE_HEADER, 0);
        /* A commit beyond the page. */
        memcpy(page, cpu_page(1, 0), sizeof(page));
        commit = 5000;
        memcpy(page + 8, &commit, 8);
        expect_bad_page(p, page, sizeof(page), FTRACE_STATUS_ABI_INVALID_PAGE_HEADER, 0);

        /* The commit ends inside the fifth data record: four events are kept. */
        memcpy(page, cpu_page(1, 0), sizeof(page));
        commit = fifth->offset + 6 - 16;
        memcpy(page + 8, &commit, 8);
        expect_bad_page(p, page, sizeof(page), FTRACE_STATUS_ABI_END_OVERFLOW, 4);

        /* The fifth record claims to be longer than the page. */
        memcpy(page, cpu_page(1, 0), sizeof(page));
        w = 0;
        memcpy(page + fifth->offset, &w, 4);
        w = 100000;
        memcpy(page + fifth->offset + 4, &w, 4);
        expect_bad_page(p, page, sizeof(page), FTRACE_STATUS_ABI_END_OVERFLOW, 4);

        /* Null padding (delta 0) inside the commit. */
        memcpy(page, cpu_page(1, 0), sizeof(page));
        w = 29;
        memcpy(page + fifth->offset, &w, 4);
        expect_bad_page(p, page, sizeof(page), FTRACE_STATUS_ABI_NULL_PADDING, 4);

        /* A zero length word. */
        memcpy(page, cpu_page(1, 0), sizeof(page));
        w = 0;
        memcpy(page + fifth->offset, &w, 4);
        memcpy(page + fifth->offset + 4, &w, 4);
        expect_bad_page(p, page, sizeof(page), FTRACE_STATUS_ABI_ZERO_DATA_LENGTH, 4);

        /* A record shorter than its event's format (sched_switch in 4 bytes). */
        memcpy(page, cpu_page(1, 0), sizeof(page));
        w = 1 | 8 << 5;
        memcpy(page + fifth->offset, &w, 4);
        expect_bad_page(p, page, sizeof(page), FTRACE_STATUS_INVALID_EVENT, 4);

        ftrace_parser_free(p);
}

/* A __data_loc pointing outside its record is an invalid event, not a read past it. */
static void test_bad_data_loc(void) {
        FtraceParser *p = parser_new_from_fixtures(NULL);
        g_autoptr(GBytes) fmt = fixture_read("events/cgroup/cgroup_mkdir/format");
        int id = ftrace_parser_add_event(p, "cgroup", g_bytes_get_data(fmt, NULL), g_bytes_get_size(fmt));
        PageWriter w = { .off = 16 };
        uint8_t rec[40] = {};
        uint32_t loc = 28 | 200u << 16;          /* offset 28, length 200 > record */
        FtraceBundle *b = NULL;

        g_assert_cmpint(id, >, 0);
        memcpy(rec, &(uint16_t) { (uint16_t) id }, 2);
        memcpy(rec + 24, &loc, 4);
        memcpy(rec + 28, "/x", 3);
        pw_word(&w, 10 | 1 << 5);
        pw_bytes(&w, rec, sizeof(rec));
        pw_finish(&w, 1);
        expect_bad_page(p, w.page, sizeof(w.page), FTRACE_STATUS_INVALID_EVENT, 0);

        /* Fixed, it decodes. */
        loc = 28 | 3u << 16;
        memcpy(w.page + 16 + 4 + 24, &loc, 4);
        g_assert_cmpint(ftrace_bundle_new(0, false, &b), ==, 0);
        g_assert_cmpint(ftrace_parser_parse_page(p, w.page, sizeof(w.page), b), ==, 1);
        ftrace_bundle_free(b);
        ftrace_parser_free(p);
}

/* Random pages and randomly damaged real pages: never a crash (run it under ASan),
 * always 0+ or -EBADMSG, and the bundle always unpacks. */
static void test_garbage_pages(void) {
        FtraceParser *p = parser_new_from_fixtures(NULL);
        FtraceBundle *b = NULL;
        uint8_t page[PAGE_SIZE_4K];

        g_assert_cmpint(ftrace_bundle_new(0, false, &b), ==, 0);
        for (unsigned i = 0; i < 20000; i++) {
                size_t size = sizeof(page);
                int r;

                if (i % 2 == 0) {
                        for (size_t k = 0; k < sizeof(page); k += 4)
                                memcpy(page + k, &(uint32_t) { g_test_rand_int() }, 4);
                        if (i % 4 == 0) {       /* plausible commit */
                                uint64_t c = (uint64_t) g_test_rand_int_range(0, 4081) |
                                        (g_test_rand_bit() ? 1u << 31 : 0);
                                memcpy(page + 8, &c, 8);
                        }
                } else {
                        int cpu = (int) (i / 2 % N_CPUS);

                        memcpy(page, cpu_page(cpu, i / 4 % cpu_n_pages(cpu)), sizeof(page));
                        for (int k = g_test_rand_int_range(1, 9); k > 0; k--)
                                page[g_test_rand_int_range(8, 4096)] = (uint8_t) g_test_rand_int();
                }
                if (i % 7 == 0)
                        size = (size_t) g_test_rand_int_range(0, 4097);
                r = ftrace_parser_parse_page(p, page, size, b);
                g_assert_true(r >= 0 || r == -EBADMSG);
                if (i % 64 == 63) {
                        Tracebus__FtraceEventBundle *m = bundle_pack_unpack(b, NULL);
                        tracebus__ftrace_event_bundle__free_unpacked(m, NULL);
                }
        }
        ftrace_bundle_free(b);
        ftrace_parser_free(p);
}

int main(int argc, char **argv) {
        int r;

        g_test_init(&argc, &argv, NULL);
        fixture_load();
        g_test_add_func("/ftrace-parser/record-types", test_record_types);
        g_test_add_func("/ftrace-parser/compact-comm-cache", test_compact_comm_cache);
        g_test_add_func("/ftrace-parser/compact-comm-cache-empty", test_compact_comm_cache_empty);
        g_test_add_func("/ftrace-parser/forget-pids", test_forget_pids);
        g_test_add_func("/ftrace-parser/lost-events", test_lost_events);
        g_test_add_func("/ftrace-parser/pack-into", test_pack_into);
        g_test_add_func("/ftrace-parser/malformed-pages", test_malformed_pages);
        g_test_add_func("/ftrace-parser/bad-data-loc", test_bad_data_loc);
        g_test_add_func("/ftrace-parser/garbage-pages", test_garbage_pages);
        r = g_test_run();
        fixture_unload();
        return r;
}
