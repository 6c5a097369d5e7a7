/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Decodes real ring-buffer pages captured on the target kernel
 * (tests/fixtures/ftrace, made by capture.sh), packs them, unpacks the bundles with
 * protobuf-c and checks them against the kernel's own text rendering of the same
 * buffer (cpuN.trace) and the workload's known values (expected.ini).
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

/* ---- tests ------------------------------------------------------------------------- */

/* Every event the kernel rendered, in the same order, with the same time (the text has
 * microseconds, rounded as ns2usecs() does), pid and event name. */
static void test_fixture_matches_kernel_text(void) {
        FtraceParser *p = parser_new_from_fixtures(NULL);

        for (int cpu = 0; cpu < N_CPUS; cpu++) {
                Tracebus__FtraceEventBundle *m = decode_cpu(p, cpu, false, NULL);
                GArray *text = fx.text[cpu];
                uint64_t prev = 0;
                size_t n_idle = 0;

                g_assert_true(m->has_cpu);
                g_assert_cmpuint(m->cpu, ==, (unsigned) cpu);
                g_assert_true(m->has_previous_bundle_end_timestamp);
                g_assert_cmpuint(m->previous_bundle_end_timestamp, ==, 0);
                g_assert_false(m->has_lost_events && m->lost_events);
                g_assert_cmpuint(m->n_error, ==, 0);
                g_assert_null(m->compact_sched);
                g_assert_cmpuint(m->n_event, ==, text->len);
                g_assert_cmpuint(m->n_event, >, 50);

                for (size_t i = 0; i < m->n_event; i++) {
                        const Tracebus__FtraceEvent *e = m->event[i];
                        const TextEvent *t = &g_array_index(text, TextEvent, i);

                        g_assert_true(e->has_timestamp && e->has_pid);
                        g_assert_cmpuint(e->timestamp, >=, prev);
                        prev = e->timestamp;
                        g_assert_cmpuint((e->timestamp + 500) / 1000, ==, t->ts_us);
                        g_assert_cmpint((int) e->pid, ==, t->pid);
                        g_assert_cmpstr(event_name(e), ==, t->name);
                        if (e->cpu_idle) {
                                /* Entering state 0.., or leaving: PWR_EVENT_EXIT, (u32) -1. */
                                g_assert_cmpuint(e->cpu_idle->cpu_id, ==, (unsigned) cpu);
                                g_assert_true(e->cpu_idle->state < 10 || e->cpu_idle->state == UINT32_MAX);
                                n_idle++;
                        }
                }
                if (cpu == 0)
                        g_assert_cmpuint(n_idle, >, 0);
                tracebus__ftrace_event_bundle__free_unpacked(m, NULL);
        }
        ftrace_parser_free(p);
}

/* FtraceEvent must be timestamp (1), pid (2), then the event message. */
static void test_field_order(void) {
        FtraceParser *p = parser_new_from_fixtures(NULL);
        g_autoptr(GBytes) raw = NULL;
        Tracebus__FtraceEventBundle *m = decode_cpu(p, 1, false, &raw);
        const uint8_t *s = g_bytes_get_data(raw, NULL), *end = s + g_bytes_get_size(raw);
        size_t n_events = 0;

        while (s < end) {
                uint64_t key = 0, v = 0;
                unsigned shift = 0;

                for (shift = 0; *s & 0x80; s++, shift += 7)
                        key |= (uint64_t) (*s & 0x7f) << shift;
                key |= (uint64_t) *s++ << shift;
                if ((key & 7) == 0) {
                        while (*s++ & 0x80)
                                ;
                        continue;
                }
                g_assert_cmpuint(key & 7, ==, 2);
                for (shift = 0; *s & 0x80; s++, shift += 7)
                        v |= (uint64_t) (*s & 0x7f) << shift;
                v |= (uint64_t) *s++ << shift;
                if (key >> 3 == 2) {
                        const uint8_t *e = s;

                        g_assert_cmpuint(e[0], ==, 0x08);        /* timestamp */
                        for (e++; *e & 0x80; e++)
                                ;
                        g_assert_cmpuint(e[1], ==, 0x10);        /* pid */
                        n_events++;
                }
                s += v;
        }
        g_assert_true(s == end);
        g_assert_cmpuint(n_events, ==, m->n_event);
        tracebus__ftrace_event_bundle__free_unpacked(m, NULL);
        ftrace_parser_free(p);
}

static const Tracebus__FtraceEvent *find_print(const Tracebus__FtraceEventBundle *m, const char *text) {
        g_autofree char *want = g_strconcat(text, "\n", NULL);

        for (size_t i = 0; i < m->n_event; i++)
                if (m->event[i]->print && g_str_equal(m->event[i]->print->buf, want))
                        return m->event[i];
        return NULL;
}

/* The workload's events carry exactly the values capture.sh knows. */
static void test_workload_values(void) {
        FtraceParser *p = parser_new_from_fixtures(NULL);
        Tracebus__FtraceEventBundle *m = decode_cpu(p, 1, false, NULL);
        g_autofree char *hello = expected_string("marker_hello");
        g_autofree char *cgroup = expected_string("cgroup_path");
        const int w = fx.worker_pid, c = fx.child_pid;
        unsigned seen = 0;

        g_assert_nonnull(find_print(m, hello));
        g_assert_cmpuint(find_print(m, hello)->pid, ==, (unsigned) w);
        g_assert_true(find_print(m, hello)->print->has_ip);

        for (size_t i = 0; i < m->n_event; i++) {
                const Tracebus__FtraceEvent *e = m->event[i];

                if (e->task_rename && e->task_rename->pid == w &&
                    g_str_equal(e->task_rename->newcomm, "tb-worker")) {
                        g_assert_cmpstr(e->task_rename->oldcomm, ==, "bash");
                        g_assert_true(e->task_rename->has_oom_score_adj);
                        g_assert_cmpuint(e->pid, ==, (unsigned) w);
                        seen |= 1 << 0;
                }
                if (e->sched_process_fork && e->sched_process_fork->child_pid == c) {
                        g_assert_cmpint(e->sched_process_fork->parent_pid, ==, w);
                        g_assert_cmpstr(e->sched_process_fork->parent_comm, ==, "tb-worker");
                        g_assert_cmpstr(e->sched_process_fork->child_comm, ==, "tb-worker");
                        seen |= 1 << 1;
                }
                if (e->task_newtask && e->task_newtask->pid == c) {
                        g_assert_cmpstr(e->task_newtask->comm, ==, "tb-worker");
                        /* CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID: fork(), a new process. */
                        g_assert_cmphex(e->task_newtask->clone_flags, ==, 0x1200000);
                        seen |= 1 << 2;
                }
                if (e->sched_process_exec && e->sched_process_exec->pid == c) {
                        g_assert_cmpstr(e->sched_process_exec->filename, ==, "/usr/bin/sleep");
                        g_assert_cmpint(e->sched_process_exec->old_pid, ==, c);
                        seen |= 1 << 3;
                }
                if (e->sched_process_exit && e->sched_process_exit->pid == c) {
                        g_assert_cmpstr(e->sched_process_exit->comm, ==, "sleep");
                        g_assert_cmpint(e->sched_process_exit->prio, ==, 120);
                        seen |= 1 << 4;
                }
                if (e->sched_wakeup_new && e->sched_wakeup_new->pid == c) {
                        g_assert_cmpstr(e->sched_wakeup_new->comm, ==, "tb-worker");
                        g_assert_cmpint(e->sched_wakeup_new->target_cpu, ==, 1);
                        seen |= 1 << 5;
                }
                if (e->sched_switch && e->sched_switch->prev_pid == c &&
                    g_str_equal(e->sched_switch->prev_comm, "sleep")) {
                        g_assert_cmpint(e->sched_switch->prev_prio, ==, 120);
                        seen |= 1 << 6;
                }
                if (e->sched_waking && e->sched_waking->pid == w) {
                        g_assert_cmpstr(e->sched_waking->comm, ==, "tb-worker");
                        g_assert_cmpint(e->sched_waking->target_cpu, ==, 1);
                        seen |= 1 << 7;
                }
                if (e->generic && g_str_equal(e->generic->event_name, "cgroup_mkdir")) {
                        const Tracebus__GenericFtraceEvent *g = e->generic;

                        g_assert_cmpuint(g->n_field, ==, 4);
                        g_assert_cmpstr(generic_field(g, "path")->str_value, ==, cgroup);
                        g_assert_true(generic_field(g, "level")->has_int_value);
                        g_assert_cmpint(generic_field(g, "level")->int_value, ==, 1);
                        g_assert_true(generic_field(g, "root")->has_int_value);
                        g_assert_true(generic_field(g, "id")->has_uint_value);   /* u64 */
                        g_assert_cmpuint(generic_field(g, "id")->uint_value, >, 0);
                        seen |= 1 << 8;
                }
                if (e->generic && g_str_equal(e->generic->event_name, "signal_generate") &&
                    e->pid == (unsigned) c) {
                        const Tracebus__GenericFtraceEvent *g = e->generic;

                        g_assert_cmpint(generic_field(g, "sig")->int_value, ==, 17);    /* SIGCHLD */
                        g_assert_cmpstr(generic_field(g, "comm")->str_value, ==, "tb-worker");
                        g_assert_cmpint(generic_field(g, "pid")->int_value, ==, w);
                        seen |= 1 << 9;
                }
                if (e->sys_enter) {
                        g_assert_cmpuint(e->pid, ==, (unsigned) w);
                        g_assert_true(e->sys_enter->has_id);
                        g_assert_cmpint(e->sys_enter->id, >=, 0);
                        seen |= 1 << 10;
                }
                if (e->sched_switch) {
                        g_assert_cmpstr(e->sched_switch->prev_comm, !=, "");
                        g_assert_cmpstr(e->sched_switch->next_comm, !=, "");
                        g_assert_cmpint(e->sched_switch->prev_pid, >=, 0);
                        g_assert_cmpint(e->sched_switch->next_pid, >=, 0);
                        g_assert_cmpint(e->sched_switch->prev_state, >=, 0);
                        g_assert_cmpint(e->sched_switch->prev_state, <, 0x200);
                        g_assert_cmpuint(e->pid, ==, (unsigned) e->sched_switch->prev_pid);
                }
        }
        g_assert_cmphex(seen, ==, (1 << 11) - 1);
        tracebus__ftrace_event_bundle__free_unpacked(m, NULL);
        ftrace_parser_free(p);
}

/* capture.sh stopped recording for 0.3 s: the kernel wrote a time extend before the
 * next event, and its time is exact (the text check above compares all of them). */
/* A non-char array in a generic event: sys_enter's args, read under a group the typed
 * table does not know, so that it takes the generic path. */
static void test_generic_array(void) {
        FtraceParser *p = parser_new_from_fixtures_as("raw_syscalls/sys_enter", "untyped");
        Tracebus__FtraceEventBundle *m = decode_cpu(p, 1, false, NULL);
        bool found = false;

        for (size_t i = 0; i < m->n_event; i++) {
                const Tracebus__FtraceEvent *e = m->event[i];
                const char *args;

                if (!e->generic || !g_str_equal(e->generic->event_name, "sys_enter"))
                        continue;
                g_assert_cmpuint(e->pid, ==, (unsigned) fx.worker_pid);
                g_assert_true(generic_field(e->generic, "id")->has_int_value);
                /* unsigned long args[6]: 48 bytes as hex. */
                args = generic_field(e->generic, "args")->str_value;
                g_assert_cmpuint(strlen(args), ==, 96);
                g_assert_cmpuint(strspn(args, "0123456789abcdef"), ==, 96);
                found = true;
        }
        g_assert_true(found);
        tracebus__ftrace_event_bundle__free_unpacked(m, NULL);
        ftrace_parser_free(p);
}

static void test_time_extend(void) {
        FtraceParser *p = parser_new_from_fixtures(NULL);
        Tracebus__FtraceEventBundle *m = decode_cpu(p, 1, false, NULL);
        g_autofree char *before = expected_string("marker_before_gap");
        g_autofree char *after = expected_string("marker_after_gap");
        const Tracebus__FtraceEvent *b = find_print(m, before), *a = find_print(m, after);
        FtraceParserStats stats;

        ftrace_parser_get_stats(p, &stats);
        g_assert_cmpuint(stats.time_extends, >=, 1);
        g_assert_nonnull(a);
        g_assert_nonnull(b);
        g_assert_cmpuint(a->timestamp - b->timestamp, >, 300000000);
        g_assert_cmpuint(a->timestamp - b->timestamp, <, 2000000000);
        tracebus__ftrace_event_bundle__free_unpacked(m, NULL);
        ftrace_parser_free(p);
}

/* The first time extend of a real page, rewritten as the absolute time-stamp record
 * (type 31) of the same instant, decodes to the same times. */
static void test_absolute_time_stamp(void) {
        FtraceParser *p = parser_new_from_fixtures(NULL);
        bool found = false;

        for (size_t i = 0; i < cpu_n_pages(1) && !found; i++) {
                g_autoptr(GArray) recs = page_records(cpu_page(1, i));
                uint8_t page[PAGE_SIZE_4K];

                memcpy(page, cpu_page(1, i), sizeof(page));
                for (size_t k = 0; k < recs->len; k++) {
                        const Record *r = &g_array_index(recs, Record, k);
                        uint32_t h = rd32(page + r->offset);
                        uint64_t abs;
                        FtraceBundle *b1 = NULL, *b2 = NULL;
                        Tracebus__FtraceEventBundle *m1, *m2;

                        if (r->type_len != 30)
                                continue;
                        abs = r->ts_before + (((uint64_t) rd32(page + r->offset + 4) << 27) | (h >> 5));
                        h = 31 | (uint32_t) ((abs & RB_COMMIT_MASK) << 5);
                        memcpy(page + r->offset, &h, 4);
                        h = (uint32_t) (abs >> 27);
                        memcpy(page + r->offset + 4, &h, 4);

                        g_assert_cmpint(ftrace_bundle_new(1, false, &b1), ==, 0);
                        g_assert_cmpint(ftrace_bundle_new(1, false, &b2), ==, 0);
                        g_assert_cmpint(ftrace_parser_parse_page(p, cpu_page(1, i), sizeof(page), b1), >, 0);
                        g_assert_cmpint(ftrace_parser_parse_page(p, page, sizeof(page), b2), >, 0);
                        m1 = bundle_pack_unpack(b1, NULL);
                        m2 = bundle_pack_unpack(b2, NULL);
                        g_assert_cmpuint(m1->n_event, ==, m2->n_event);
                        for (size_t j = 0; j < m1->n_event; j++)
                                g_assert_cmpuint(m1->event[j]->timestamp, ==, m2->event[j]->timestamp);
                        tracebus__ftrace_event_bundle__free_unpacked(m1, NULL);
                        tracebus__ftrace_event_bundle__free_unpacked(m2, NULL);
                        ftrace_bundle_free(b1);
                        ftrace_bundle_free(b2);
                        found = true;
                        break;
                }
        }
        g_assert_true(found);
        ftrace_parser_free(p);
}

/* Compact sched: the same sched_switch/sched_waking data as the full events, with
 * per-kind delta-encoded timestamps and interned comms; the rest stays full. */
static void test_compact_sched(void) {
        FtraceParser *p = parser_new_from_fixtures(NULL);

        for (int cpu = 0; cpu < N_CPUS; cpu++) {
                Tracebus__FtraceEventBundle *full = decode_cpu(p, cpu, false, NULL);
                Tracebus__FtraceEventBundle *cm = decode_cpu(p, cpu, true, NULL);
                const Tracebus__FtraceEventBundle__CompactSched *c = cm->compact_sched;
                size_t sw = 0, wk = 0, other = 0;
                uint64_t sw_ts = 0, wk_ts = 0;

                g_assert_nonnull(c);
                for (size_t i = 0; i < full->n_event; i++) {
                        const Tracebus__FtraceEvent *e = full->event[i];

                        if (e->sched_switch) {
                                g_assert_cmpuint(sw, <, c->n_switch_timestamp);
                                sw_ts += c->switch_timestamp[sw];
                                g_assert_cmpuint(sw_ts, ==, e->timestamp);
                                g_assert_cmpint(c->switch_next_pid[sw], ==, e->sched_switch->next_pid);
                                g_assert_cmpint(c->switch_next_prio[sw], ==, e->sched_switch->next_prio);
                                g_assert_cmpint(c->switch_prev_state[sw], ==, e->sched_switch->prev_state);
                                g_assert_cmpuint(c->switch_next_comm_index[sw], <, c->n_intern_table);
                                g_assert_cmpstr(c->intern_table[c->switch_next_comm_index[sw]], ==,
                                                e->sched_switch->next_comm);
                                sw++;
                        } else if (e->sched_waking) {
                                g_assert_cmpuint(wk, <, c->n_waking_timestamp);
                                wk_ts += c->waking_timestamp[wk];
                                g_assert_cmpuint(wk_ts, ==, e->timestamp);
                                g_assert_cmpint(c->waking_pid[wk], ==, e->sched_waking->pid);
                                g_assert_cmpint(c->waking_target_cpu[wk], ==, e->sched_waking->target_cpu);
                                g_assert_cmpint(c->waking_prio[wk], ==, e->sched_waking->prio);
                                g_assert_cmpstr(c->intern_table[c->waking_comm_index[wk]], ==,
                                                e->sched_waking->comm);
                                wk++;
                        } else {
                                g_assert_cmpuint(other, <, cm->n_event);
                                g_assert_cmpuint(cm->event[other]->timestamp, ==, e->timestamp);
                                g_assert_cmpstr(event_name(cm->event[other]), ==, event_name(e));
                                other++;
                        }
                }
                g_assert_cmpuint(sw, >, 0);
                g_assert_cmpuint(wk, >, 0);
                g_assert_cmpuint(sw, ==, c->n_switch_timestamp);
                g_assert_cmpuint(c->n_switch_prev_state, ==, sw);
                g_assert_cmpuint(c->n_switch_next_comm_index, ==, sw);
                g_assert_cmpuint(wk, ==, c->n_waking_timestamp);
                g_assert_cmpuint(c->n_waking_common_flags, ==, wk);
                g_assert_cmpuint(other, ==, cm->n_event);
                /* Interned once: no duplicates. */
                for (size_t i = 0; i < c->n_intern_table; i++)
                        for (size_t j = i + 1; j < c->n_intern_table; j++)
                                g_assert_cmpstr(c->intern_table[i], !=, c->intern_table[j]);
                tracebus__ftrace_event_bundle__free_unpacked(full, NULL);
                tracebus__ftrace_event_bundle__free_unpacked(cm, NULL);
        }
        ftrace_parser_free(p);
}

/* Events that were not added are skipped and counted; adding a format twice is a no-op. */
static void test_unknown_events(void) {
        FtraceParser *p = parser_new_from_fixtures("sched/sched_switch");
        g_autoptr(GBytes) fmt = fixture_read("events/sched/sched_switch/format");
        FtraceBundle *b = NULL;
        Tracebus__FtraceEventBundle *m;
        size_t n_switch = 0;
        int id;

        id = ftrace_parser_add_event(p, "sched", g_bytes_get_data(fmt, NULL), g_bytes_get_size(fmt));
        g_assert_cmpint(id, >, 0);
        g_assert_cmpint(ftrace_parser_add_event(p, "sched", g_bytes_get_data(fmt, NULL),
                                                g_bytes_get_size(fmt)), ==, id);
        g_assert_cmpint(ftrace_parser_add_event(p, "sched", "garbage", 7), <, 0);

        g_assert_cmpint(ftrace_bundle_new(1, false, &b), ==, 0);
        for (size_t i = 0; i < cpu_n_pages(1); i++)
                g_assert_cmpint(ftrace_parser_parse_page(p, cpu_page(1, i), PAGE_SIZE_4K, b), >=, 0);
        for (size_t i = 0; i < fx.text[1]->len; i++)
                n_switch += g_str_equal(g_array_index(fx.text[1], TextEvent, i).name, "sched_switch");
        g_assert_cmpuint(ftrace_bundle_n_events(b), ==, n_switch);
        g_assert_cmpuint(ftrace_bundle_n_skipped(b), ==, fx.text[1]->len - n_switch);
        m = bundle_pack_unpack(b, NULL);
        g_assert_cmpuint(m->n_event, ==, n_switch);
        tracebus__ftrace_event_bundle__free_unpacked(m, NULL);
        ftrace_bundle_free(b);
        ftrace_parser_free(p);
}

/* A sched_switch whose fields are not the sizes the compact encoder reads (here an
 * unsigned next_prio) is written as full events, also into a compact bundle. */
static void test_compact_other_layout(void) {
        g_autoptr(GBytes) fmt = fixture_read("events/sched/sched_switch/format");
        g_autofree char *text = g_strndup(g_bytes_get_data(fmt, NULL), g_bytes_get_size(fmt));
        g_autofree char *odd = NULL;
        FtraceParser *p = NULL;
        g_autoptr(GBytes) header = fixture_read("header_page");
        FtraceBundle *b = NULL;
        Tracebus__FtraceEventBundle *m;
        size_t n_switch = 0;

        odd = replace_once(text, "field:int next_prio;\toffset:60;\tsize:4;\tsigned:1;",
                              "field:unsigned int next_prio;\toffset:60;\tsize:4;\tsigned:0;");
        g_assert_cmpint(ftrace_parser_new(&p), ==, 0);
        g_assert_cmpint(ftrace_parser_load_header_page(p, g_bytes_get_data(header, NULL),
                                                       g_bytes_get_size(header)), ==, 0);
        g_assert_cmpint(ftrace_parser_add_event(p, "sched", odd, strlen(odd)), >, 0);

        g_assert_cmpint(ftrace_bundle_new(1, true, &b), ==, 0);
        for (size_t i = 0; i < cpu_n_pages(1); i++)
                g_assert_cmpint(ftrace_parser_parse_page(p, cpu_page(1, i), PAGE_SIZE_4K, b), >=, 0);
        for (size_t i = 0; i < fx.text[1]->len; i++)
                n_switch += g_str_equal(g_array_index(fx.text[1], TextEvent, i).name, "sched_switch");
        g_assert_cmpuint(n_switch, >, 0);
        m = bundle_pack_unpack(b, NULL);
        g_assert_cmpuint(m->n_event, ==, n_switch);
        for (size_t i = 0; i < m->n_event; i++) {
                g_assert_nonnull(m->event[i]->sched_switch);
                g_assert_cmpuint(m->event[i]->sched_switch->next_prio, <=, 140);
        }
        g_assert_true(!m->compact_sched || m->compact_sched->n_switch_timestamp == 0);
        tracebus__ftrace_event_bundle__free_unpacked(m, NULL);
        ftrace_bundle_free(b);
        ftrace_parser_free(p);
}

/* Wakings whose small columns are not one byte (a deadline task's prio -1, a CPU past
 * 127, common_flags with bit 7) among ordinary ones, in the sched_waking layout @format
 * (records of @rec_len bytes, target_cpu at @cpu_offset): every value comes back. */
static void check_compact_wakings(const char *format, size_t rec_len, size_t cpu_offset) {
        static const struct { int32_t prio, cpu; uint8_t flags; } v[] = {
                { 120, 1, 0x01 }, { -1, 1, 0x01 }, { 120, 200, 0x00 }, { 98, 3, 0x88 }, { 139, 0, 0x7f },
        };
        FtraceParser *p = parser_new_from_fixtures("none");
        const Tracebus__FtraceEventBundle__CompactSched *c;
        Tracebus__FtraceEventBundle *m;
        PageWriter w = { .off = 16 };
        FtraceBundle *b = NULL;
        int id;

        id = ftrace_parser_add_event(p, "sched", format, strlen(format));
        g_assert_cmpint(id, >, 0);
        for (size_t i = 0; i < G_N_ELEMENTS(v); i++) {
                uint8_t rec[64] = {};
                int32_t pid = 5000 + (int32_t) i;

                memcpy(rec, &(uint16_t) { (uint16_t) id }, 2);
                rec[2] = v[i].flags;
                memcpy(rec + 4, &pid, 4);
                memcpy(rec + 8, "waker", 5);
                memcpy(rec + 24, &pid, 4);
                memcpy(rec + 28, &v[i].prio, 4);
                memcpy(rec + cpu_offset, &v[i].cpu, 4);
                pw_word(&w, (uint32_t) (rec_len / 4) | 100 << 5);
                pw_bytes(&w, rec, rec_len);
        }
        pw_finish(&w, 1000000);

        g_assert_cmpint(ftrace_bundle_new(0, true, &b), ==, 0);
        g_assert_cmpint(ftrace_parser_parse_page(p, w.page, sizeof(w.page), b), ==, G_N_ELEMENTS(v));
        m = bundle_pack_unpack(b, NULL);
        c = m->compact_sched;
        g_assert_nonnull(c);
        g_assert_cmpuint(c->n_waking_pid, ==, G_N_ELEMENTS(v));
        g_assert_cmpuint(c->n_waking_common_flags, ==, G_N_ELEMENTS(v));
        for (size_t i = 0; i < G_N_ELEMENTS(v); i++) {
                g_assert_cmpint(c->waking_pid[i], ==, 5000 + (int32_t) i);
                g_assert_cmpint(c->waking_prio[i], ==, v[i].prio);
                g_assert_cmpint(c->waking_target_cpu[i], ==, v[i].cpu);
                g_assert_cmpuint(c->waking_common_flags[i], ==, v[i].flags);
                g_assert_cmpstr(c->intern_table[c->waking_comm_index[i]], ==, "waker");
                g_assert_cmpuint(c->waking_timestamp[i], ==, i == 0 ? 1000100 : 100);
        }
        tracebus__ftrace_event_bundle__free_unpacked(m, NULL);
        ftrace_bundle_free(b);
        ftrace_parser_free(p);
}

/* The layout of today's kernels (the encoder's fast path, constant offsets) and the one
 * before 4.x, with "success" before target_cpu (the general path, offsets from the
 * format). */
static void test_compact_waking_values(void) {
        g_autoptr(GBytes) fmt = fixture_read("events/sched/sched_waking/format");
        g_autofree char *text = g_strndup(g_bytes_get_data(fmt, NULL), g_bytes_get_size(fmt));
        g_autofree char *old = replace_once(text, "\tfield:int target_cpu;\toffset:32;\tsize:4;\tsigned:1;",
                                            "\tfield:int success;\toffset:32;\tsize:4;\tsigned:1;\n"
                                            "\tfield:int target_cpu;\toffset:36;\tsize:4;\tsigned:1;");

        check_compact_wakings(text, 36, 32);
        check_compact_wakings(old, 40, 36);
}

/* Whether a timestamp column's deltas average 2.5 bytes or more in its first 256 bytes:
 * the ones worth a code of their own (ftrace-compact.c). */
static bool long_deltas(const TraceField *f) {
        size_t n = MIN(f->len, (size_t) 256), ends = 0;

        for (size_t i = 0; i < n; i++)
                ends += f->data[i] < 0x80;
        return 2 * n >= 5 * ends;
}

/* The spans a compressor codes: in compact bundles exactly the columns other than the
 * timestamps, each a whole field, and the timestamp columns of long deltas as literals;
 * in full ones the events. Deflated with them, the bundles inflate back, bit for bit,
 * with zlib. (These pages are a light workload: what coding saves on a storm,
 * test-recorder and bench/run measure.) */
static void check_coded_spans(FtraceParser *p, int cpu, bool compact) {
        g_autoptr(GBytes) back = NULL;
        g_autofree guint8 *z = NULL;
        FtraceBundle *b = NULL;
        const DeflateSpan *spans;
        const uint8_t *buf;
        size_t len, n, zlen;
        DeflateStream s;
        guint seen = 0, timestamps = 0;

        g_assert_cmpint(ftrace_bundle_new((uint32_t) cpu, compact, &b), ==, 0);
        for (size_t i = 0; i < cpu_n_pages(cpu); i++)
                g_assert_cmpint(ftrace_parser_parse_page(p, cpu_page(cpu, i), PAGE_SIZE_4K, b), >=, 0);
        g_assert_cmpint(ftrace_bundle_pack(b, &buf, &len), ==, 0);
        n = ftrace_bundle_coded_spans(b, &spans);
        if (!compact) {
                g_assert_cmpuint(n, ==, 1);
                g_assert_cmpuint(spans[0].start, ==, 0);
                g_assert_cmpuint(spans[0].end, <, len);
        }
        for (size_t i = 0; compact && i < n; i++) {
                const uint8_t *q = buf + spans[i].start;
                TraceField f;

                /* A length-delimited CompactSched column, whole; a timestamp one only as
                 * literals, and only with long deltas. */
                g_assert_cmpuint(spans[i].end, <=, len);
                g_assert_cmpint(trace_field_next(&q, buf + len, &f), ==, 1);
                g_assert_cmpint(f.wire_type, ==, TRACE_WIRE_LEN);
                g_assert_true(f.number != 5 && f.number <= 12);
                g_assert_cmpint(spans[i].literals, ==, f.number == 1 || f.number == 7);
                if (spans[i].literals) {
                        g_assert_true(long_deltas(&f));
                        timestamps++;
                }
                g_assert_false(seen & (1u << f.number));
                seen |= 1u << f.number;
                g_assert_cmpuint(spans[i].end, ==, spans[i].start + f.framed_len);
                if (i > 0)
                        g_assert_cmpuint(spans[i].start, >=, spans[i - 1].end);
        }
        if (compact)
                g_assert_cmpuint(n - timestamps, >=, 4);     /* switches: prev_state, next_pid, prio, comm */
        g_test_message("cpu %d: %u timestamp columns coded", cpu, timestamps);

        z = g_malloc(deflate_bound(len, 2 * n + 1));
        deflate_begin(&s, z);
        deflate_spans(&s, buf, len, spans, n);
        zlen = deflate_end(&s);
        back = tb_zlib_inflate_or_fail(z, zlen);
        g_assert_cmpmem(g_bytes_get_data(back, NULL), g_bytes_get_size(back), buf, len);
        g_test_message("cpu %d, %s: %zu bytes deflated to %zu", cpu, compact ? "compact" : "full", len, zlen);
        g_assert_cmpuint(zlen, <=, deflate_bound(len, 2 * n + 1));
        if (!compact)
                g_assert_cmpuint(zlen, <, len * 7 / 8);
        ftrace_bundle_free(b);
}

static void test_coded_spans(void) {
        FtraceParser *p = parser_new_from_fixtures(NULL);

        for (int cpu = 0; cpu < N_CPUS; cpu++) {
                check_coded_spans(p, cpu, true);
                check_coded_spans(p, cpu, false);
        }
        ftrace_parser_free(p);
}

static void test_api_errors(void) {
        FtraceParser *p = NULL;
        FtraceBundle *b = NULL;
        uint8_t page[PAGE_SIZE_4K] = {};

        g_assert_cmpint(ftrace_parser_new(&p), ==, 0);
        g_assert_cmpint(ftrace_bundle_new(0, false, &b), ==, 0);
        /* No header page yet. */
        g_assert_cmpint(ftrace_parser_parse_page(p, page, sizeof(page), b), ==, -EINVAL);
        g_assert_cmpint(ftrace_parser_load_header_page(p, "", 0), ==, -EINVAL);
        g_assert_null(ftrace_bundle_free(b));
        g_assert_null(ftrace_parser_free(p));
        g_assert_null(ftrace_bundle_free(NULL));
        g_assert_null(ftrace_parser_free(NULL));
}

int main(int argc, char **argv) {
        int r;

        g_test_init(&argc, &argv, NULL);
        fixture_load();
        g_test_add_func("/ftrace-parser/fixture-matches-kernel-text", test_fixture_matches_kernel_text);
        g_test_add_func("/ftrace-parser/field-order", test_field_order);
        g_test_add_func("/ftrace-parser/workload-values", test_workload_values);
        g_test_add_func("/ftrace-parser/generic-array", test_generic_array);
        g_test_add_func("/ftrace-parser/time-extend", test_time_extend);
        g_test_add_func("/ftrace-parser/absolute-time-stamp", test_absolute_time_stamp);
        g_test_add_func("/ftrace-parser/compact-sched", test_compact_sched);
        g_test_add_func("/ftrace-parser/compact-other-layout", test_compact_other_layout);
        g_test_add_func("/ftrace-parser/compact-waking-values", test_compact_waking_values);
        g_test_add_func("/ftrace-parser/unknown-events", test_unknown_events);
        g_test_add_func("/ftrace-parser/coded-spans", test_coded_spans);
        g_test_add_func("/ftrace-parser/api-errors", test_api_errors);
        r = g_test_run();
        fixture_unload();
        return r;
}
