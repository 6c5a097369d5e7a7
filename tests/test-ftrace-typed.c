/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * protofacts: events written as their typed Perfetto messages from ftrace-event-typed.c,
 * checked field by field on synthetic records of the kernel's own format (6.x):
 * vmscan/mm_shrink_slab_start as FtraceEvent.mm_shrink_slab_start (443), each field at
 * its MmShrinkSlabStartFtraceEvent number, negative values signed, no GenericFtraceEvent.
 * protofacts2: a session's kprobes (groups tbk<kind>_<pid>_<session>) as
 * FtraceEvent.kprobe_event (542) { name, type } by the group's kind, another group's
 * probe still a GenericFtraceEvent.
 */
#include <glib.h>
#include <stdint.h>
#include <string.h>

#include "ftrace-fixture.h"
#include "ftrace-parser.h"
#include "trace.pb-c.h"

static const char shrink_format[] =
        "name: mm_shrink_slab_start\n"
        "ID: 631\n"
        "format:\n"
        "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
        "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
        "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
        "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
        "\n"
        "\tfield:struct shrinker * shr;\toffset:8;\tsize:8;\tsigned:0;\n"
        "\tfield:void * shrink;\toffset:16;\tsize:8;\tsigned:0;\n"
        "\tfield:int nid;\toffset:24;\tsize:4;\tsigned:1;\n"
        "\tfield:long nr_objects_to_shrink;\toffset:32;\tsize:8;\tsigned:1;\n"
        "\tfield:unsigned long gfp_flags;\toffset:40;\tsize:8;\tsigned:0;\n"
        "\tfield:unsigned long cache_items;\toffset:48;\tsize:8;\tsigned:0;\n"
        "\tfield:unsigned long long delta;\toffset:56;\tsize:8;\tsigned:0;\n"
        "\tfield:unsigned long total_scan;\toffset:64;\tsize:8;\tsigned:0;\n"
        "\tfield:int priority;\toffset:72;\tsize:4;\tsigned:1;\n"
        "\n"
        "print fmt: \"%pS %p: nid: %d objects to shrink %ld gfp_flags %lx cache items %ld delta %lld "
        "total_scan %ld priority %d\", REC->shrink, REC->shr, REC->nid, REC->nr_objects_to_shrink, "
        "REC->gfp_flags, REC->cache_items, REC->delta, REC->total_scan, REC->priority\n";

static void put(uint8_t *rec, size_t off, const void *v, size_t n) {
        memcpy(rec + off, v, n);
}

static void test_mm_shrink_slab_start(void) {
        const uint64_t shr = 0xffff888004d2e000ULL, shrink = 0xffffffff81a2b3c4ULL;
        const int32_t nid = 1, priority = 12, pid = 4242;
        const int64_t nr_objects = -3;
        const uint64_t gfp = 0xcc0, cache_items = 1234, delta = 56, total_scan = 789;
        FtraceParser *p = parser_new_from_fixtures("none");
        PageWriter w = { .off = 16 };
        Tracebus__FtraceEventBundle *m;
        const Tracebus__MmShrinkSlabStartFtraceEvent *e;
        FtraceBundle *b = NULL;
        uint8_t rec[80] = {};
        int id;

        g_assert_true(ftrace_event_is_typed("vmscan", "mm_shrink_slab_start"));
        id = ftrace_parser_add_event(p, "vmscan", shrink_format, strlen(shrink_format));
        g_assert_cmpint(id, ==, 631);
        put(rec, 0, &(uint16_t) { (uint16_t) id }, 2);
        put(rec, 4, &pid, 4);
        put(rec, 8, &shr, 8);
        put(rec, 16, &shrink, 8);
        put(rec, 24, &nid, 4);
        put(rec, 32, &nr_objects, 8);
        put(rec, 40, &gfp, 8);
        put(rec, 48, &cache_items, 8);
        put(rec, 56, &delta, 8);
        put(rec, 64, &total_scan, 8);
        put(rec, 72, &priority, 4);
        pw_word(&w, (uint32_t) (sizeof(rec) / 4) | 100 << 5);
        pw_bytes(&w, rec, sizeof(rec));
        pw_finish(&w, 1000000);
        g_assert_cmpint(ftrace_bundle_new(0, false, &b), ==, 0);
        g_assert_cmpint(ftrace_parser_parse_page(p, w.page, sizeof(w.page), b), ==, 1);
        m = bundle_pack_unpack(b, NULL);
        g_assert_cmpuint(m->n_event, ==, 1);
        g_assert_null(m->event[0]->generic);
        g_assert_cmpuint(m->event[0]->pid, ==, (guint) pid);
        e = m->event[0]->mm_shrink_slab_start;
        g_assert_nonnull(e);
        g_assert_cmpuint(e->shr, ==, shr);
        g_assert_cmpuint(e->shrink, ==, shrink);
        g_assert_cmpint(e->nid, ==, nid);
        g_assert_cmpint(e->nr_objects_to_shrink, ==, nr_objects);
        g_assert_cmpuint(e->gfp_flags, ==, gfp);
        g_assert_cmpuint(e->cache_items, ==, cache_items);
        g_assert_cmpuint(e->delta, ==, delta);
        g_assert_cmpuint(e->total_scan, ==, total_scan);
        g_assert_cmpint(e->priority, ==, priority);
        /* Fields this kernel lacks are left out, not written as 0. */
        g_assert_false(e->has_lru_pgs || e->has_pgs_scanned);
        tracebus__ftrace_event_bundle__free_unpacked(m, NULL);
        ftrace_bundle_free(b);
        ftrace_parser_free(p);
}

/* A kprobe's format as a 6.x kernel writes it (a kretprobe has other fields, unused). */
static char *probe_format(const char *name, int id) {
        return g_strdup_printf("name: %s\nID: %d\nformat:\n"
                               "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
                               "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
                               "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
                               "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
                               "\tfield:unsigned long __probe_ip;\toffset:8;\tsize:8;\tsigned:0;\n\n"
                               "print fmt: \"(%%lx)\", REC->__probe_ip\n", name, id);
}

static void test_kprobes(void) {
        static const struct { const char *group; int type; } probes[] = {
                { "tbkb_7_3", TRACEBUS__KPROBE_EVENT__KPROBE_TYPE__KPROBE_TYPE_BEGIN },
                { "tbke_7_3", TRACEBUS__KPROBE_EVENT__KPROBE_TYPE__KPROBE_TYPE_END },
                { "tbkp_7_3", TRACEBUS__KPROBE_EVENT__KPROBE_TYPE__KPROBE_TYPE_INSTANT },
                { "tbkr_7_3", TRACEBUS__KPROBE_EVENT__KPROBE_TYPE__KPROBE_TYPE_INSTANT },
                { "kprobes", -1 },   /* not a session's: generic */
        };
        FtraceParser *p = parser_new_from_fixtures("none");
        PageWriter w = { .off = 16 };
        Tracebus__FtraceEventBundle *m;
        FtraceBundle *b = NULL;

        for (size_t i = 0; i < G_N_ELEMENTS(probes); i++) {
                g_autofree char *fmt = probe_format("do_sys_openat2", 2001 + (int) i);
                uint8_t rec[16] = {};
                int32_t pid = 100 + (int32_t) i;
                uint64_t ip = 0xffffffff81234560ULL;

                g_assert_cmpint(ftrace_parser_add_event(p, probes[i].group, fmt, strlen(fmt)), ==, 2001 + (int) i);
                put(rec, 0, &(uint16_t) { (uint16_t) (2001 + i) }, 2);
                put(rec, 4, &pid, 4);
                put(rec, 8, &ip, 8);
                pw_word(&w, (uint32_t) (sizeof(rec) / 4) | 10 << 5);
                pw_bytes(&w, rec, sizeof(rec));
        }
        pw_finish(&w, 1000000);
        g_assert_cmpint(ftrace_bundle_new(0, false, &b), ==, 0);
        g_assert_cmpint(ftrace_parser_parse_page(p, w.page, sizeof(w.page), b), ==, (int) G_N_ELEMENTS(probes));
        m = bundle_pack_unpack(b, NULL);
        g_assert_cmpuint(m->n_event, ==, G_N_ELEMENTS(probes));
        for (size_t i = 0; i < G_N_ELEMENTS(probes); i++) {
                const Tracebus__FtraceEvent *e = m->event[i];

                g_assert_cmpuint(e->pid, ==, 100 + i);
                if (probes[i].type < 0) {
                        g_assert_null(e->kprobe_event);
                        g_assert_nonnull(e->generic);
                        g_assert_cmpstr(e->generic->event_name, ==, "do_sys_openat2");
                        continue;
                }
                g_assert_null(e->generic);
                g_assert_nonnull(e->kprobe_event);
                g_assert_cmpstr(e->kprobe_event->name, ==, "do_sys_openat2");
                g_assert_true(e->kprobe_event->has_type);
                g_assert_cmpint(e->kprobe_event->type, ==, probes[i].type);
        }
        tracebus__ftrace_event_bundle__free_unpacked(m, NULL);
        ftrace_bundle_free(b);
        ftrace_parser_free(p);
}

int main(int argc, char **argv) {
        int r;

        g_test_init(&argc, &argv, NULL);
        fixture_load();
        g_test_add_func("/ftrace-typed/mm-shrink-slab-start", test_mm_shrink_slab_start);
        g_test_add_func("/ftrace-typed/kprobes", test_kprobes);
        r = g_test_run();
        fixture_unload();
        return r;
}
