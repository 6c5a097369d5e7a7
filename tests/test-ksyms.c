/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * symbolize_ksyms without the kernel: /proc/kallsyms text parsed into a table
 * (lib/ftrace/ksyms.c), code addresses of synthetic workqueue_execute_start records written as
 * iids of the functions holding them (lib/ftrace/ftrace-symbols.c), and the packet of
 * InternedData.kernel_symbols that names them (service/kernel/ksyms-cache.c), read back.
 */
#include <glib.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ftrace-fixture.h"
#include "ftrace-parser.h"
#include "ksyms-cache.h"
#include "ksyms.h"
#include "trace-writer.h"
#include "trace.pb-c.h"

/* Out of order as modules are; a data symbol after the text; one module symbol last. */
static const char kallsyms_text[] =
        "0000000000000000 A fixed_percpu_data\n"
        "ffffffff81000000 T _stext\n"
        "ffffffff81000100 t vmstat_update\n"
        "ffffffff81000300 T process_one_work\n"
        "ffffffff81000200 W weak_helper\n"
        "ffffffff81000400 T _etext\n"
        "ffffffff82000000 D __start_rodata\n"
        "ffffffffc0001000 t mod_work_fn\t[some_module]\n"
        "ffffffffc0002000 t mod_last\t[some_module]\n";

static void ksyms_unref_cleanup(Ksyms **k) {
        ksyms_unref(*k);
}
#define _auto_ksyms_ __attribute__((cleanup(ksyms_unref_cleanup)))

static Ksyms *parse_fixture(void) {
        Ksyms *k = NULL;

        g_assert_cmpint(ksyms_parse(kallsyms_text, strlen(kallsyms_text), &k), ==, 0);
        return k;
}

static const char *name_at(const Ksyms *k, uint64_t address) {
        ssize_t i = ksyms_lookup(k, address);

        return i < 0 ? NULL : ksyms_name(k, (size_t) i);
}

static void test_parse_lookup(void) {
        _auto_ksyms_ Ksyms *k = parse_fixture();

        g_assert_cmpuint(ksyms_count(k), ==, 9);
        g_assert_cmpuint(ksyms_mem_bytes(k), >, 9 * 12);
        g_assert_cmpstr(name_at(k, 0xffffffff81000100), ==, "vmstat_update");
        g_assert_cmpstr(name_at(k, 0xffffffff810001ff), ==, "vmstat_update");
        g_assert_cmpstr(name_at(k, 0xffffffff81000200), ==, "weak_helper");
        g_assert_cmpstr(name_at(k, 0xffffffff81000321), ==, "process_one_work");
        /* The module's name is not part of the symbol's. */
        g_assert_cmpstr(name_at(k, 0xffffffffc0001010), ==, "mod_work_fn");
        /* Below the kernel (a heap object), in the rodata after the text, past the last
         * symbol, and a per-CPU offset: no function. */
        g_assert_null(name_at(k, 0xffff888012345678));
        g_assert_null(name_at(k, 0xffffffff82000040));
        g_assert_null(name_at(k, 0xffffffffc0002010));
        g_assert_null(name_at(k, 0x10));
        g_assert_cmpuint(ksyms_address(k, (size_t) ksyms_lookup(k, 0xffffffff81000150)), ==, 0xffffffff81000100);
}

static void test_parse_refusals(void) {
        static const char hidden[] = "0000000000000000 T _stext\n0000000000000000 t vmstat_update\n";
        static const char *const bad[] = {
                "ffffffff81000000T _stext\n",
                "zzzz T _stext\n",
                "ffffffff81000000 T \n",
                "11112222333344445 T too_long\n",
        };
        Ksyms *k = NULL;

        /* kptr_restrict: every address zero. */
        g_assert_cmpint(ksyms_parse(hidden, strlen(hidden), &k), ==, -EPERM);
        for (size_t i = 0; i < G_N_ELEMENTS(bad); i++)
                g_assert_cmpint(ksyms_parse(bad[i], strlen(bad[i]), &k), ==, -EBADMSG);
        /* No trailing newline is still a line. */
        g_assert_cmpint(ksyms_parse("ffffffff81000000 T a\nffffffff81000010 T b", 42, &k), ==, 0);
        g_assert_cmpstr(name_at(k, 0xffffffff81000004), ==, "a");
        ksyms_unref(k);
}

static const char wq_format[] =
        "name: workqueue_execute_start\n"
        "ID: 335\n"
        "format:\n"
        "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
        "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
        "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
        "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
        "\n"
        "\tfield:void * work;\toffset:8;\tsize:8;\tsigned:0;\n"
        "\tfield:void * function;\toffset:16;\tsize:8;\tsigned:0;\n"
        "\n"
        "print fmt: \"work struct %p: function %ps\", REC->work, REC->function\n";

static const uint64_t wq_functions[] = {
        0xffffffff81000100, /* vmstat_update */
        0xffffffff81000300, /* process_one_work */
        0xffffffff81000104, /* vmstat_update again, inside it */
        0xffffffffc0001000, /* mod_work_fn */
        0xffff888000001000, /* no function */
        0,
};
#define WQ_WORK 0xffff888000abc000ull

static Tracebus__FtraceEventBundle *decode_wq(FtraceParser *p) {
        Tracebus__FtraceEventBundle *m;
        PageWriter w = { .off = 16 };
        FtraceBundle *b = NULL;

        for (size_t i = 0; i < G_N_ELEMENTS(wq_functions); i++) {
                uint8_t rec[24] = {};
                int32_t pid = 700;
                uint64_t work = WQ_WORK;

                memcpy(rec, &(uint16_t) { 335 }, 2);
                memcpy(rec + 4, &pid, 4);
                memcpy(rec + 8, &work, 8);
                memcpy(rec + 16, &wq_functions[i], 8);
                pw_word(&w, (uint32_t) (sizeof(rec) / 4) | 100 << 5);
                pw_bytes(&w, rec, sizeof(rec));
        }
        pw_finish(&w, 1000000);
        g_assert_cmpint(ftrace_bundle_new(0, false, &b), ==, 0);
        g_assert_cmpint(ftrace_parser_parse_page(p, w.page, sizeof(w.page), b), ==, (int) G_N_ELEMENTS(wq_functions));
        m = bundle_pack_unpack(b, NULL);
        ftrace_bundle_free(b);
        return m;
}

static FtraceParser *wq_parser(const Ksyms *k, bool hashed) {
        static const uint8_t key[FTRACE_ADDRESS_KEY_SIZE] = { 1, 2, 3 };
        FtraceParser *p = parser_new_from_fixtures("none");

        /* Symbolized before the event is added, hashed after: either order holds. */
        g_assert_cmpint(ftrace_parser_symbolize(p, (Ksyms *) k), ==, 0);
        g_assert_cmpint(ftrace_parser_symbolize(p, (Ksyms *) k), ==, -EBUSY);
        g_assert_cmpint(ftrace_parser_add_event(p, "workqueue", wq_format, strlen(wq_format)), ==, 335);
        if (hashed)
                g_assert_cmpint(ftrace_parser_hash_addresses(p, key), ==, 0);
        return p;
}

static void test_symbolized_events(void) {
        _auto_ksyms_ Ksyms *k = parse_fixture();
        static const char *const names[] = { "vmstat_update", "process_one_work", "mod_work_fn" };
        const uint64_t want[] = { 1, 2, 1, 3 };

        for (int hashed = 0; hashed <= 1; hashed++) {
                FtraceParser *p = wq_parser(k, hashed);
                Tracebus__FtraceEventBundle *m = decode_wq(p);
                const uint32_t *symbols;
                uint32_t first;
                size_t n;

                for (size_t i = 0; i < m->n_event; i++) {
                        const Tracebus__WorkqueueWorkFtraceEvent *e = m->event[i]->workqueue_execute_start;

                        g_assert_nonnull(e);
                        g_assert_true(e->has_function);
                        if (i < G_N_ELEMENTS(want))
                                g_assert_cmpuint(e->function, ==, want[i]);
                        /* No function: as without symbolize_ksyms, hashed or as it is. */
                        if (i == 4)
                                g_assert_true(hashed ? e->function != wq_functions[4] && e->function >> 48 == 0 :
                                              e->function == wq_functions[4]);
                        if (i == 5)
                                g_assert_cmpuint(e->function, ==, 0);
                        /* The work item is a heap object: never an iid. */
                        g_assert_true(hashed ? e->work >> 48 == 0 && e->work > 3 : e->work == WQ_WORK);
                }
                n = ftrace_parser_take_new_symbols(p, &symbols, &first);
                g_assert_cmpuint(n, ==, 3);
                g_assert_cmpuint(first, ==, 1);
                for (size_t i = 0; i < n; i++)
                        g_assert_cmpstr(ksyms_name(k, symbols[i]), ==, names[i]);
                /* Taken: the next bundle names only new ones. */
                g_assert_cmpuint(ftrace_parser_take_new_symbols(p, &symbols, &first), ==, 0);
                tracebus__ftrace_event_bundle__free_unpacked(m, NULL);
                m = decode_wq(p);
                g_assert_cmpuint(m->event[1]->workqueue_execute_start->function, ==, 2);
                g_assert_cmpuint(ftrace_parser_take_new_symbols(p, &symbols, &first), ==, 0);
                tracebus__ftrace_event_bundle__free_unpacked(m, NULL);
                ftrace_parser_free(p);
        }
}

static const char fg_format[] =
        "name: funcgraph_entry\n"
        "ID: 11\n"
        "format:\n"
        "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
        "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
        "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
        "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
        "\n"
        "\tfield:unsigned long func;\toffset:8;\tsize:8;\tsigned:0;\n"
        "\tfield:unsigned int depth;\toffset:16;\tsize:4;\tsigned:0;\n"
        "\tfield:unsigned long args[];\toffset:24;\tsize:0;\tsigned:0;\n"
        "\n"
        "print fmt: \"--> %ps (%u)\", (void *)REC->func, REC->depth\n";

/* function_graph's entries as Perfetto's FuncgraphEntryFtraceEvent (437): depth 1, func 2,
 * the function an iid, as trace_processor reads them for its slices. */
static void test_funcgraph_entry(void) {
        _auto_ksyms_ Ksyms *k = parse_fixture();
        FtraceParser *p = parser_new_from_fixtures("none");
        Tracebus__FtraceEventBundle *m;
        PageWriter w = { .off = 16 };
        FtraceBundle *b = NULL;
        uint8_t rec[24] = {};
        uint64_t func = 0xffffffff81000304;
        uint32_t depth = 3;
        int32_t pid = 700;

        g_assert_cmpint(ftrace_parser_add_event(p, "ftrace", fg_format, strlen(fg_format)), ==, 11);
        g_assert_cmpint(ftrace_parser_symbolize(p, k), ==, 0);
        memcpy(rec, &(uint16_t) { 11 }, 2);
        memcpy(rec + 4, &pid, 4);
        memcpy(rec + 8, &func, 8);
        memcpy(rec + 16, &depth, 4);
        pw_word(&w, (uint32_t) (sizeof(rec) / 4) | 100 << 5);
        pw_bytes(&w, rec, sizeof(rec));
        pw_finish(&w, 1000000);
        g_assert_cmpint(ftrace_bundle_new(0, false, &b), ==, 0);
        g_assert_cmpint(ftrace_parser_parse_page(p, w.page, sizeof(w.page), b), ==, 1);
        m = bundle_pack_unpack(b, NULL);
        g_assert_nonnull(m->event[0]->funcgraph_entry);
        g_assert_cmpint(m->event[0]->funcgraph_entry->depth, ==, 3);
        g_assert_cmpuint(m->event[0]->funcgraph_entry->func, ==, 1);
        tracebus__ftrace_event_bundle__free_unpacked(m, NULL);
        ftrace_bundle_free(b);
        ftrace_parser_free(p);
}

/* The packet naming the functions, as the recorder writes it: on the ftrace sequence,
 * first of it (so clearing its incremental state), in the metadata. */
static void test_symbol_packet(void) {
        _auto_ksyms_ Ksyms *k = parse_fixture();
        FtraceParser *p = wq_parser(k, true);
        Tracebus__FtraceEventBundle *m = decode_wq(p);
        Tracebus__Trace *t;
        TraceWriter w;
        uint8_t buf[4096];
        ssize_t len;
        int fd = memfd_create("ksyms", MFD_CLOEXEC);

        g_assert_cmpint(fd, >=, 0);
        trace_writer_init(&w, fd, TRACE_WRITER_STREAM, 1 << 20, 0);
        g_assert_cmpint(ksyms_append_new_symbols(p, k, &w), ==, 0);
        /* Nothing new: no packet. */
        g_assert_cmpint(ksyms_append_new_symbols(p, k, &w), ==, 0);
        g_assert_cmpint(trace_writer_flush(&w), ==, 0);
        len = pread(fd, buf, sizeof(buf), 0);
        g_assert_cmpint(len, >, 0);
        t = tracebus__trace__unpack(NULL, (size_t) len, buf);
        g_assert_nonnull(t);
        g_assert_cmpuint(t->n_packet, ==, 1);
        g_assert_cmpuint(t->packet[0]->trusted_packet_sequence_id, ==, TRACE_SEQUENCE_FTRACE);
        g_assert_cmpuint(t->packet[0]->sequence_flags & 1u, ==, 1u);
        g_assert_nonnull(t->packet[0]->interned_data);
        g_assert_cmpuint(t->packet[0]->interned_data->n_kernel_symbols, ==, 3);
        for (size_t i = 0; i < 3; i++) {
                const Tracebus__InternedString *s = t->packet[0]->interned_data->kernel_symbols[i];
                const char *want = i == 0 ? "vmstat_update" : i == 1 ? "process_one_work" : "mod_work_fn";

                g_assert_cmpuint(s->iid, ==, i + 1);
                g_assert_cmpmem(s->str.data, s->str.len, want, strlen(want));
        }
        tracebus__trace__free_unpacked(t, NULL);
        tracebus__ftrace_event_bundle__free_unpacked(m, NULL);
        trace_writer_done(&w);
        ftrace_parser_free(p);
        close(fd);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        fixture_load();
        g_test_add_func("/ksyms/parse-lookup", test_parse_lookup);
        g_test_add_func("/ksyms/parse-refusals", test_parse_refusals);
        g_test_add_func("/ksyms/symbolized-events", test_symbolized_events);
        g_test_add_func("/ksyms/symbol-packet", test_symbol_packet);
        g_test_add_func("/ksyms/funcgraph-entry", test_funcgraph_entry);
        return g_test_run();
}
