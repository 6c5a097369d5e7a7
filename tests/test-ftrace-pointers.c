/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Kernel addresses in traces of callers without org.tracebus.manage: the parser writes
 * them as a keyed hash (ftrace_parser_hash_addresses()). On the real pages of
 * tests/fixtures/ftrace (ftrace/print's ip is the kernel's own code address) and on
 * synthetic records of an event with every kind of address field: equal addresses hash
 * equal, NULL stays 0, no value is a kernel address, the hash is SipHash-2-4, and
 * nothing but the addresses changes.
 */
#include <glib.h>
#include <stdint.h>
#include <string.h>

#include "ftrace-fixture.h"
#include "ftrace-parser.h"
#include "trace.pb-c.h"

static const uint8_t key_a[FTRACE_ADDRESS_KEY_SIZE] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
static const uint8_t key_b[FTRACE_ADDRESS_KEY_SIZE] = { 42, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };

/* Top 16 bits all set: where x86-64 (and arm64) keep the kernel. */
static bool is_kernel_address(uint64_t v) {
        return (v >> 48) == 0xffff;
}

/* The ip of every ftrace/print on the fixture's CPU 1, in order; @key NULL: raw. */
static GArray *print_ips(const uint8_t *key, Tracebus__FtraceEventBundle **ret) {
        FtraceParser *p = parser_new_from_fixtures(NULL);
        GArray *ips = g_array_new(FALSE, FALSE, sizeof(uint64_t));
        Tracebus__FtraceEventBundle *m;

        /* After the events were added: the parser converts the ones it has. */
        if (key)
                g_assert_cmpint(ftrace_parser_hash_addresses(p, key), ==, 0);
        m = decode_cpu(p, 1, false, NULL);
        for (size_t i = 0; i < m->n_event; i++)
                if (m->event[i]->print) {
                        g_assert_true(m->event[i]->print->has_ip);
                        g_array_append_val(ips, m->event[i]->print->ip);
                }
        ftrace_parser_free(p);
        *ret = m;
        return ips;
}

/* The same events, field for field, but for print's ip. */
static void assert_same_but_ips(Tracebus__FtraceEventBundle *raw, Tracebus__FtraceEventBundle *hashed) {
        g_assert_cmpuint(raw->n_event, ==, hashed->n_event);
        for (size_t i = 0; i < raw->n_event; i++) {
                Tracebus__FtraceEvent *a = raw->event[i], *b = hashed->event[i];
                uint8_t *pa, *pb;
                size_t na, nb;

                if (a->print) {
                        g_assert_cmpstr(a->print->buf, ==, b->print->buf);
                        b->print->ip = a->print->ip;
                }
                na = tracebus__ftrace_event__get_packed_size(a);
                nb = tracebus__ftrace_event__get_packed_size(b);
                g_assert_cmpuint(na, ==, nb);
                pa = g_malloc(na);
                pb = g_malloc(nb);
                tracebus__ftrace_event__pack(a, pa);
                tracebus__ftrace_event__pack(b, pb);
                g_assert_cmpmem(pa, na, pb, nb);
                g_free(pa);
                g_free(pb);
        }
}

static void test_fixture_print_ip(void) {
        Tracebus__FtraceEventBundle *m_raw, *m_a, *m_b;
        g_autoptr(GArray) raw = print_ips(NULL, &m_raw);
        g_autoptr(GArray) a = print_ips(key_a, &m_a);
        g_autoptr(GArray) b = print_ips(key_b, &m_b);
        g_autoptr(GHashTable) seen = g_hash_table_new(g_int64_hash, g_int64_equal);

        g_assert_cmpuint(raw->len, >=, 2);
        g_assert_cmpuint(a->len, ==, raw->len);
        g_assert_cmpuint(b->len, ==, raw->len);
        for (guint i = 0; i < raw->len; i++) {
                uint64_t r = g_array_index(raw, uint64_t, i), ha = g_array_index(a, uint64_t, i);
                uint64_t *old;

                /* Without hashing, the kernel's address itself: what must not leak. */
                g_assert_true(is_kernel_address(r));
                g_assert_cmpuint(ha, !=, r);
                g_assert_cmpuint(ha, !=, 0);
                g_assert_cmpuint(ha >> 48, ==, 0);
                /* Another key, another value. */
                g_assert_cmpuint(g_array_index(b, uint64_t, i), !=, ha);
                /* Within a trace, one address, one value, both ways. */
                old = g_hash_table_lookup(seen, &g_array_index(raw, uint64_t, i));
                if (old)
                        g_assert_cmpuint(*old, ==, ha);
                g_hash_table_insert(seen, &g_array_index(raw, uint64_t, i), &g_array_index(a, uint64_t, i));
        }
        for (guint i = 0; i < raw->len; i++)
                for (guint j = 0; j < raw->len; j++)
                        g_assert_true((g_array_index(raw, uint64_t, i) == g_array_index(raw, uint64_t, j)) ==
                                      (g_array_index(a, uint64_t, i) == g_array_index(a, uint64_t, j)));
        assert_same_but_ips(m_raw, m_a);
        tracebus__ftrace_event_bundle__free_unpacked(m_raw, NULL);
        tracebus__ftrace_event_bundle__free_unpacked(m_a, NULL);
        tracebus__ftrace_event_bundle__free_unpacked(m_b, NULL);
}

/* An event with each kind of field the parser must judge: a pointer, a long named for a
 * code address, a long the print fmt prints with %pS, a plain long, and an int "func"
 * (a PCI function number, say), which stays a number. */
static const char ptr_format[] =
        "name: tb_ptrs\n"
        "ID: 901\n"
        "format:\n"
        "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
        "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
        "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
        "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
        "\n"
        "\tfield:const void * ptr;\toffset:8;\tsize:8;\tsigned:0;\n"
        "\tfield:unsigned long call_site;\toffset:16;\tsize:8;\tsigned:0;\n"
        "\tfield:unsigned long where;\toffset:24;\tsize:8;\tsigned:0;\n"
        "\tfield:unsigned long count;\toffset:32;\tsize:8;\tsigned:0;\n"
        "\tfield:int func;\toffset:40;\tsize:4;\tsigned:1;\n"
        "\n"
        "print fmt: \"ptr=%p call_site=%pS where=%pS count=%lu func=%d\", REC->ptr, "
        "(void *)REC->call_site, (void *)REC->where, REC->count, REC->func\n";

typedef struct PtrRecord {
        uint64_t ptr, call_site, where, count;
        int32_t func;
} PtrRecord;

static Tracebus__FtraceEventBundle *decode_ptr_records(const uint8_t *key, const PtrRecord *v, size_t n) {
        FtraceParser *p = parser_new_from_fixtures("none");
        Tracebus__FtraceEventBundle *m;
        PageWriter w = { .off = 16 };
        FtraceBundle *b = NULL;
        int id;

        /* Before the event is added: the parser converts it as it comes. */
        if (key)
                g_assert_cmpint(ftrace_parser_hash_addresses(p, key), ==, 0);
        id = ftrace_parser_add_event(p, "tb_test", ptr_format, strlen(ptr_format));
        g_assert_cmpint(id, ==, 901);
        for (size_t i = 0; i < n; i++) {
                uint8_t rec[48] = {};
                int32_t pid = 700;

                memcpy(rec, &(uint16_t) { (uint16_t) id }, 2);
                memcpy(rec + 4, &pid, 4);
                memcpy(rec + 8, &v[i].ptr, 8);
                memcpy(rec + 16, &v[i].call_site, 8);
                memcpy(rec + 24, &v[i].where, 8);
                memcpy(rec + 32, &v[i].count, 8);
                memcpy(rec + 40, &v[i].func, 4);
                pw_word(&w, (uint32_t) (sizeof(rec) / 4) | 100 << 5);
                pw_bytes(&w, rec, sizeof(rec));
        }
        pw_finish(&w, 1000000);
        g_assert_cmpint(ftrace_bundle_new(0, false, &b), ==, 0);
        g_assert_cmpint(ftrace_parser_parse_page(p, w.page, sizeof(w.page), b), ==, (int) n);
        m = bundle_pack_unpack(b, NULL);
        g_assert_cmpuint(m->n_event, ==, n);
        ftrace_bundle_free(b);
        ftrace_parser_free(p);
        return m;
}

static uint64_t field_u(const Tracebus__FtraceEvent *e, const char *name) {
        const Tracebus__GenericFtraceEvent__Field *f = generic_field(e->generic, name);

        g_assert_nonnull(f);
        if (f->has_int_value)
                return (uint64_t) f->int_value;
        g_assert_true(f->has_uint_value);
        return f->uint_value;
}

static void test_synthetic_fields(void) {
        const uint64_t k1 = 0xffffffff81a2b3c4ULL, k2 = 0xffff888004d2e000ULL;
        /* SipHash-2-4's published vector: key 00..0f, message 00..07. */
        const uint64_t vector_msg = 0x0706050403020100ULL, vector_hash = 0x93f5f5799a932462ULL;
        const PtrRecord v[] = {
                { .ptr = 0, .call_site = k1, .where = k2, .count = 5, .func = 3 },
                { .ptr = k2, .call_site = k1, .where = 0, .count = k1, .func = -1 },
                { .ptr = vector_msg, .call_site = k2, .where = k2, .count = 0, .func = 0 },
        };
        Tracebus__FtraceEventBundle *raw = decode_ptr_records(NULL, v, G_N_ELEMENTS(v));
        Tracebus__FtraceEventBundle *h = decode_ptr_records(key_a, v, G_N_ELEMENTS(v));
        uint64_t hk1 = field_u(h->event[0], "call_site"), hk2 = field_u(h->event[0], "where");

        for (size_t i = 0; i < G_N_ELEMENTS(v); i++) {
                /* Without hashing, every value as the kernel wrote it. */
                g_assert_cmpuint(field_u(raw->event[i], "ptr"), ==, v[i].ptr);
                g_assert_cmpuint(field_u(raw->event[i], "call_site"), ==, v[i].call_site);
                g_assert_cmpuint(field_u(raw->event[i], "where"), ==, v[i].where);
                /* Numbers stay numbers, even one that looks like an address. */
                g_assert_cmpuint(field_u(h->event[i], "count"), ==, v[i].count);
                g_assert_cmpint((int64_t) field_u(h->event[i], "func"), ==, v[i].func);
                g_assert_cmpuint(h->event[i]->pid, ==, 700);
        }
        g_assert_cmpuint(hk1, !=, hk2);
        g_assert_false(is_kernel_address(hk1) || is_kernel_address(hk2));
        /* NULL stays NULL; equal addresses hash equal, whichever field holds them. */
        g_assert_cmpuint(field_u(h->event[0], "ptr"), ==, 0);
        g_assert_cmpuint(field_u(h->event[1], "where"), ==, 0);
        g_assert_cmpuint(field_u(h->event[1], "ptr"), ==, hk2);
        g_assert_cmpuint(field_u(h->event[1], "call_site"), ==, hk1);
        g_assert_cmpuint(field_u(h->event[2], "call_site"), ==, hk2);
        g_assert_cmpuint(field_u(h->event[2], "where"), ==, hk2);
        /* The top 48 bits of SipHash-2-4 under the key. */
        g_assert_cmpuint(field_u(h->event[2], "ptr"), ==, vector_hash >> 16);
        tracebus__ftrace_event_bundle__free_unpacked(raw, NULL);
        tracebus__ftrace_event_bundle__free_unpacked(h, NULL);
}

/* An event of the numbers no name or type marks as addresses: a page frame number and a
 * u64 (opaque, so hashed), a count (plain by name), an int the kernel keeps in 8 bytes
 * as the syscall events do (read at its width), an array of longs and a __data_loc
 * one (opaque: each word hashed), and an array of longs of a plain name. */
static const char words_format[] =
        "name: tb_words\n"
        "ID: 902\n"
        "format:\n"
        FORMAT_COMMON_FIELDS
        "\n"
        "\tfield:unsigned long pfn;\toffset:8;\tsize:8;\tsigned:0;\n"
        "\tfield:unsigned long nr_pages;\toffset:16;\tsize:8;\tsigned:0;\n"
        "\tfield:int dfd;\toffset:24;\tsize:8;\tsigned:0;\n"
        "\tfield:unsigned long words[2];\toffset:32;\tsize:16;\tsigned:0;\n"
        "\tfield:unsigned long mem_allowed[1];\toffset:48;\tsize:8;\tsigned:0;\n"
        "\tfield:__data_loc unsigned long[] stack;\toffset:56;\tsize:4;\tsigned:0;\n"
        "\tfield:u64 vstart;\toffset:64;\tsize:8;\tsigned:0;\n"
        "\n"
        "print fmt: \"pfn=%lu nr_pages=%lu dfd=%d vstart=%llu\", REC->pfn, REC->nr_pages, REC->dfd, "
        "REC->vstart\n";

#define WORDS_RECORD 88

static Tracebus__FtraceEventBundle *decode_words_record(const uint8_t *key, const uint64_t v[9]) {
        FtraceParser *p = parser_new_from_fixtures("none");
        Tracebus__FtraceEventBundle *m;
        uint8_t rec[WORDS_RECORD] = {};
        uint32_t stack = (16u << 16) | 72u;
        int id;

        if (key)
                g_assert_cmpint(ftrace_parser_hash_addresses(p, key), ==, 0);
        id = ftrace_parser_add_event(p, "tb_test", words_format, strlen(words_format));
        g_assert_cmpint(id, ==, 902);
        memcpy(rec, &(uint16_t) { (uint16_t) id }, 2);
        memcpy(rec + 4, &(int32_t) { 700 }, 4);
        /* pfn, nr_pages, dfd, words[0..1], mem_allowed, then stack's two words at 72 and vstart. */
        for (size_t i = 0; i < 6; i++)
                memcpy(rec + 8 + 8 * i, &v[i], 8);
        memcpy(rec + 56, &stack, 4);
        memcpy(rec + 64, &v[8], 8);
        memcpy(rec + 72, &v[6], 8);
        memcpy(rec + 80, &v[7], 8);
        m = decode_one_record(p, rec, sizeof(rec));
        ftrace_parser_free(p);
        return m;
}

/* Word @i of a field written as hex bytes in memory order. */
static uint64_t hex_word(const Tracebus__FtraceEvent *e, const char *name, size_t i) {
        const Tracebus__GenericFtraceEvent__Field *f = generic_field(e->generic, name);
        uint8_t bytes[8];

        g_assert_nonnull(f);
        g_assert_nonnull(f->str_value);
        g_assert_cmpuint(strlen(f->str_value), >=, 16 * (i + 1));
        for (size_t k = 0; k < 8; k++) {
                char digits[3] = { f->str_value[16 * i + 2 * k], f->str_value[16 * i + 2 * k + 1], 0 };

                bytes[k] = (uint8_t) strtoul(digits, NULL, 16);
        }
        return *(uint64_t *) memcpy(&(uint64_t) { 0 }, bytes, 8);
}

static void test_opaque_numbers(void) {
        const uint64_t pfn = 0x1234567ULL, vmalloc = 0xffffc90000a5c000ULL;
        /* pfn, nr_pages, dfd (-100 as the kernel keeps it), words[2], mem_allowed, stack[2], vstart */
        const uint64_t v[9] = { pfn, 35660, (uint64_t) -100, vmalloc, pfn, 0xf, pfn, vmalloc, vmalloc };
        Tracebus__FtraceEventBundle *raw = decode_words_record(NULL, v), *h = decode_words_record(key_a, v);
        const Tracebus__FtraceEvent *r = raw->event[0], *e = h->event[0];
        uint64_t h_pfn = field_u(e, "pfn"), h_vmalloc = field_u(e, "vstart");

        /* For a caller who may see addresses, every number as the kernel wrote it. */
        g_assert_cmpuint(field_u(r, "pfn"), ==, pfn);
        g_assert_cmpuint(field_u(r, "vstart"), ==, vmalloc);
        g_assert_cmpuint(hex_word(r, "words", 0), ==, vmalloc);
        g_assert_cmpuint(hex_word(r, "stack", 1), ==, vmalloc);
        /* An int is read as the int it is, for everyone, with the format's sign: -100 is
         * 0xffffff9c, never 0xffffffffffffff9c, in the kernel's half of the address space. */
        g_assert_cmpuint(field_u(r, "dfd"), ==, 0xffffff9cu);
        g_assert_cmpuint(field_u(e, "dfd"), ==, 0xffffff9cu);
        /* Otherwise the page frame and the vmalloc address are hashed, as an address is... */
        g_assert_cmpuint(h_pfn, !=, pfn);
        g_assert_cmpuint(h_vmalloc, !=, vmalloc);
        g_assert_cmpuint(h_pfn, !=, 0);
        g_assert_false(is_kernel_address(h_vmalloc));
        /* ...each word of an array of them too, equal values equal within the trace... */
        g_assert_cmpuint(hex_word(e, "words", 0), ==, h_vmalloc);
        g_assert_cmpuint(hex_word(e, "words", 1), ==, h_pfn);
        g_assert_cmpuint(hex_word(e, "stack", 0), ==, h_pfn);
        g_assert_cmpuint(hex_word(e, "stack", 1), ==, h_vmalloc);
        /* ...and the plain ones are left as they are. */
        g_assert_cmpuint(field_u(e, "nr_pages"), ==, 35660);
        g_assert_cmpuint(hex_word(e, "mem_allowed", 0), ==, 0xf);
        g_assert_cmpuint(e->pid, ==, 700);
        tracebus__ftrace_event_bundle__free_unpacked(raw, NULL);
        tracebus__ftrace_event_bundle__free_unpacked(h, NULL);
}

int main(int argc, char **argv) {
        int r;

        g_test_init(&argc, &argv, NULL);
        fixture_load();
        g_test_add_func("/ftrace-pointers/fixture-print-ip", test_fixture_print_ip);
        g_test_add_func("/ftrace-pointers/synthetic-fields", test_synthetic_fields);
        g_test_add_func("/ftrace-pointers/opaque-numbers", test_opaque_numbers);
        r = g_test_run();
        fixture_unload();
        return r;
}
