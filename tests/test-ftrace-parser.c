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

#define PAGE_SIZE_4K 4096
#define RB_COMMIT_MASK ((1u << 27) - 1)
#define N_CPUS 2

typedef struct TextEvent {
        uint64_t ts_us;
        int pid;
        char *name;
} TextEvent;

typedef struct Fixture {
        GBytes *pages[N_CPUS];
        GArray *text[N_CPUS];           /* TextEvent */
        GKeyFile *expected;
        int worker_pid, child_pid;
} Fixture;

static Fixture fx;

/* ---- fixture loading ------------------------------------------------------------- */

static char *fixture_path(const char *name) {
        const char *src = g_getenv("TRACEBUS_SOURCE_DIR");

        g_assert_nonnull(src);
        return g_build_filename(src, "tests", "fixtures", "ftrace", name, NULL);
}

static GBytes *fixture_read(const char *name) {
        g_autofree char *path = fixture_path(name), *data = NULL;
        g_autoptr(GError) error = NULL;
        gsize len;

        g_assert_true(g_file_get_contents(path, &data, &len, &error));
        g_assert_no_error(error);
        return g_bytes_new_take(g_steal_pointer(&data), len);
}

static void text_event_clear(gpointer p) {
        g_free(((TextEvent *) p)->name);
}

/* Lines look like "  tb-worker-5571  [001] d..2.   525.872196: sched_switch: ...". */
static GArray *parse_trace_text(GBytes *text) {
        g_autoptr(GRegex) re = g_regex_new("^\\s*.+-(\\d+)\\s+\\[\\d+\\]\\s+\\S+\\s+(\\d+)\\.(\\d{6}): (\\w+): ",
                                           0, 0, NULL);
        g_autofree char *s = g_strndup(g_bytes_get_data(text, NULL), g_bytes_get_size(text));
        g_auto(GStrv) lines = g_strsplit(s, "\n", -1);
        GArray *a = g_array_new(false, true, sizeof(TextEvent));

        g_array_set_clear_func(a, text_event_clear);
        for (char **l = lines; *l; l++) {
                g_autoptr(GMatchInfo) m = NULL;
                g_autofree char *pid = NULL, *secs = NULL, *usecs = NULL;
                TextEvent e;

                if (**l == '#' || **l == '\0')
                        continue;
                g_assert_false(strstr(*l, "LOST"));
                g_assert_true(g_regex_match(re, *l, 0, &m));
                pid = g_match_info_fetch(m, 1);
                secs = g_match_info_fetch(m, 2);
                usecs = g_match_info_fetch(m, 3);
                e.pid = (int) g_ascii_strtoll(pid, NULL, 10);
                e.ts_us = g_ascii_strtoull(secs, NULL, 10) * 1000000 + g_ascii_strtoull(usecs, NULL, 10);
                e.name = g_match_info_fetch(m, 4);
                g_array_append_val(a, e);
        }
        return a;
}

static void fixture_load(void) {
        g_autofree char *ini = fixture_path("expected.ini");
        g_autoptr(GError) error = NULL;

        for (int cpu = 0; cpu < N_CPUS; cpu++) {
                g_autofree char *raw = g_strdup_printf("cpu%d.raw", cpu);
                g_autofree char *txt = g_strdup_printf("cpu%d.trace", cpu);
                g_autoptr(GBytes) text = fixture_read(txt);

                fx.pages[cpu] = fixture_read(raw);
                g_assert_cmpuint(g_bytes_get_size(fx.pages[cpu]) % PAGE_SIZE_4K, ==, 0);
                fx.text[cpu] = parse_trace_text(text);
        }
        fx.expected = g_key_file_new();
        g_assert_true(g_key_file_load_from_file(fx.expected, ini, 0, &error));
        fx.worker_pid = g_key_file_get_integer(fx.expected, "capture", "worker_pid", &error);
        g_assert_no_error(error);
        fx.child_pid = g_key_file_get_integer(fx.expected, "capture", "child_pid", &error);
        g_assert_no_error(error);
}

static void fixture_unload(void) {
        for (int cpu = 0; cpu < N_CPUS; cpu++) {
                g_bytes_unref(fx.pages[cpu]);
                g_array_unref(fx.text[cpu]);
        }
        g_key_file_free(fx.expected);
}

static char *expected_string(const char *key) {
        g_autoptr(GError) error = NULL;
        char *v = g_key_file_get_string(fx.expected, "capture", key, &error);

        g_assert_no_error(error);
        return v;
}

/* Adds every format under events/ (or only @only, "group/name"), under its own group or
 * @as_group. Returns the parser. */
/* @s with its one occurrence of @from replaced by @to. */
static char *replace_once(const char *s, const char *from, const char *to) {
        const char *at = strstr(s, from);

        g_assert_nonnull(at);
        return g_strdup_printf("%.*s%s%s", (int) (at - s), s, to, at + strlen(from));
}

static FtraceParser *parser_new_from_fixtures_as(const char *only, const char *as_group) {
        g_autofree char *events = fixture_path("events");
        g_autoptr(GBytes) header = fixture_read("header_page");
        g_autoptr(GDir) groups = g_dir_open(events, 0, NULL);
        FtraceParser *p = NULL;
        const char *group;

        g_assert_cmpint(ftrace_parser_new(&p), ==, 0);
        g_assert_cmpint(ftrace_parser_load_header_page(p, g_bytes_get_data(header, NULL),
                                                       g_bytes_get_size(header)), ==, 0);
        g_assert_nonnull(groups);
        while ((group = g_dir_read_name(groups))) {
                g_autofree char *gdir = g_build_filename(events, group, NULL);
                g_autoptr(GDir) names = g_dir_open(gdir, 0, NULL);
                const char *name;

                while (names && (name = g_dir_read_name(names))) {
                        g_autofree char *rel = g_build_filename("events", group, name, "format", NULL);
                        g_autofree char *id = g_strdup_printf("%s/%s", group, name);
                        g_autoptr(GBytes) fmt = NULL;

                        if (only && !g_str_equal(only, id))
                                continue;
                        fmt = fixture_read(rel);
                        g_assert_cmpint(ftrace_parser_add_event(p, as_group ?: group, g_bytes_get_data(fmt, NULL),
                                                                g_bytes_get_size(fmt)), >, 0);
                }
        }
        return p;
}

static FtraceParser *parser_new_from_fixtures(const char *only) {
        return parser_new_from_fixtures_as(only, NULL);
}

static const uint8_t *cpu_page(int cpu, size_t i) {
        return (const uint8_t *) g_bytes_get_data(fx.pages[cpu], NULL) + i * PAGE_SIZE_4K;
}

static size_t cpu_n_pages(int cpu) {
        return g_bytes_get_size(fx.pages[cpu]) / PAGE_SIZE_4K;
}

static Tracebus__FtraceEventBundle *bundle_pack_unpack(FtraceBundle *b, GBytes **ret_raw) {
        Tracebus__FtraceEventBundle *m;
        const uint8_t *buf = NULL;
        size_t len = 0;

        g_assert_cmpint(ftrace_bundle_pack(b, &buf, &len), ==, 0);
        g_assert_nonnull(buf);
        m = tracebus__ftrace_event_bundle__unpack(NULL, len, buf);
        g_assert_nonnull(m);
        if (ret_raw)
                *ret_raw = g_bytes_new(buf, len);
        return m;
}

/* Parses all pages of @cpu into one bundle. */
static Tracebus__FtraceEventBundle *decode_cpu(FtraceParser *p, int cpu, bool compact, GBytes **ret_raw) {
        g_autoptr(GBytes) raw = NULL;
        FtraceBundle *b = NULL;
        Tracebus__FtraceEventBundle *m;
        size_t total = 0;

        g_assert_cmpint(ftrace_bundle_new((uint32_t) cpu, compact, &b), ==, 0);
        for (size_t i = 0; i < cpu_n_pages(cpu); i++) {
                int r = ftrace_parser_parse_page(p, cpu_page(cpu, i), PAGE_SIZE_4K, b);

                g_assert_cmpint(r, >=, 0);
                total += (size_t) r;
        }
        g_assert_cmpuint(ftrace_bundle_n_events(b), ==, total);
        g_assert_cmpuint(ftrace_bundle_n_errors(b), ==, 0);
        m = bundle_pack_unpack(b, ret_raw);
        ftrace_bundle_free(b);
        return m;
}

static const char *event_name(const Tracebus__FtraceEvent *e) {
        if (e->print)
                return "tracing_mark_write";    /* how the text renders ftrace/print */
        if (e->sched_switch)
                return "sched_switch";
        if (e->sched_waking)
                return "sched_waking";
        if (e->sched_wakeup)
                return "sched_wakeup";
        if (e->sched_wakeup_new)
                return "sched_wakeup_new";
        if (e->sched_process_exit)
                return "sched_process_exit";
        if (e->sched_process_free)
                return "sched_process_free";
        if (e->sched_process_fork)
                return "sched_process_fork";
        if (e->sched_process_exec)
                return "sched_process_exec";
        if (e->task_newtask)
                return "task_newtask";
        if (e->task_rename)
                return "task_rename";
        if (e->cpu_frequency)
                return "cpu_frequency";
        if (e->cpu_idle)
                return "cpu_idle";
        if (e->sys_enter)
                return "sys_enter";
        if (e->sys_exit)
                return "sys_exit";
        if (e->irq_handler_entry)
                return "irq_handler_entry";
        if (e->irq_handler_exit)
                return "irq_handler_exit";
        if (e->softirq_entry)
                return "softirq_entry";
        if (e->softirq_exit)
                return "softirq_exit";
        if (e->generic)
                return e->generic->event_name;
        return NULL;
}

static const Tracebus__GenericFtraceEvent__Field *generic_field(const Tracebus__GenericFtraceEvent *g,
                                                                 const char *name) {
        for (size_t i = 0; i < g->n_field; i++)
                if (g_str_equal(g->field[i]->name, name))
                        return g->field[i];
        g_assert_not_reached();
}

/* ---- a minimal independent record walker, to find records to edit ----------------- */

static uint32_t rd32(const uint8_t *s) {
        uint32_t v;

        memcpy(&v, s, sizeof(v));
        return v;
}

static uint64_t rd64(const uint8_t *s) {
        uint64_t v;

        memcpy(&v, s, sizeof(v));
        return v;
}

typedef struct Record {
        size_t offset;          /* in the page */
        unsigned type_len;
        uint64_t ts_before;     /* running time before this record */
} Record;

/* The records of @page, in order. */
static GArray *page_records(const uint8_t *page) {
        GArray *a = g_array_new(false, true, sizeof(Record));
        uint64_t ts = rd64(page);
        size_t off = 16, end = 16 + (rd64(page + 8) & RB_COMMIT_MASK);

        while (off + 8 <= end) {
                uint32_t h = rd32(page + off), type = h & 31, delta = h >> 5;
                Record r = { off, type, ts };

                g_array_append_val(a, r);
                if (type == 30 || type == 31) {
                        uint64_t v = ((uint64_t) rd32(page + off + 4) << 27) | delta;
                        ts = type == 30 ? ts + v : v;
                        off += 8;
                } else if (type == 29) {
                        ts += delta != 1 ? delta : 0;
                        off += 4 + rd32(page + off + 4);
                } else {
                        ts += delta;
                        off += type == 0 ? 4 + rd32(page + off + 4) : 4 + 4 * (size_t) type;
                }
        }
        g_assert_cmpuint(off, ==, end);
        return a;
}

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

typedef struct PageWriter {
        uint8_t page[PAGE_SIZE_4K];
        size_t off;
} PageWriter;

static void pw_word(PageWriter *w, uint32_t v) {
        g_assert_cmpuint(w->off + 4, <=, sizeof(w->page));
        memcpy(w->page + w->off, &v, 4);
        w->off += 4;
}

static void pw_bytes(PageWriter *w, const void *s, size_t n) {
        g_assert_cmpuint(w->off + n, <=, sizeof(w->page));
        memcpy(w->page + w->off, s, n);
        w->off += n;
}

static void pw_finish(PageWriter *w, uint64_t ts) {
        uint64_t commit = w->off - 16;

        memcpy(w->page, &ts, 8);
        memcpy(w->page + 8, &commit, 8);
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

/* A page of sched_switch records to pid 777, whose next_comm is @comms[i] (@lens[i]
 * bytes of it, so that bytes after a NUL can differ). */
static void page_of_comms(PageWriter *w, int id, const char *const *comms, const size_t *lens, size_t n) {
        uint8_t rec[64];

        *w = (PageWriter) { .off = 16 };
        for (size_t i = 0; i < n; i++) {
                make_switch(rec, id, 4242);
                memset(rec + 40, 0, 16);
                memcpy(rec + 40, comms[i], lens[i]);                     /* next_comm */
                memcpy(rec + 56, &(int32_t) { 777 }, 4);                 /* next_pid */
                pw_word(w, 16 | 10 << 5);
                pw_bytes(w, rec, 64);
        }
        pw_finish(w, 1000);
}

static void assert_compact_comms(FtraceBundle *b, const char *const *table, size_t n_table,
                                 const uint32_t *index, size_t n) {
        Tracebus__FtraceEventBundle *m = bundle_pack_unpack(b, NULL);

        g_assert_nonnull(m->compact_sched);
        g_assert_cmpuint(m->compact_sched->n_intern_table, ==, n_table);
        for (size_t i = 0; i < n_table; i++)
                g_assert_cmpstr(m->compact_sched->intern_table[i], ==, table[i]);
        g_assert_cmpuint(m->compact_sched->n_switch_next_comm_index, ==, n);
        for (size_t i = 0; i < n; i++) {
                g_assert_cmpint(m->compact_sched->switch_next_pid[i], ==, 777);
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
        FtraceParser *p = parser_new_from_fixtures(NULL);
        g_autoptr(GBytes) fmt = fixture_read("events/sched/sched_switch/format");
        FtraceBundle *b = NULL;
        PageWriter w;
        int id;

        id = ftrace_parser_add_event(p, "sched", g_bytes_get_data(fmt, NULL), g_bytes_get_size(fmt));
        g_assert_cmpint(id, >, 0);
        g_assert_cmpint(ftrace_bundle_new(0, true, &b), ==, 0);
        page_of_comms(&w, id, comms1, lens1, G_N_ELEMENTS(comms1));
        g_assert_cmpint(ftrace_parser_parse_page(p, w.page, sizeof(w.page), b), ==, G_N_ELEMENTS(comms1));
        assert_compact_comms(b, table1, G_N_ELEMENTS(table1), index1, G_N_ELEMENTS(index1));
        page_of_comms(&w, id, comms2, lens2, G_N_ELEMENTS(comms2));
        g_assert_cmpint(ftrace_parser_parse_page(p, w.page, sizeof(w.page), b), ==, G_N_ELEMENTS(comms2));
        assert_compact_comms(b, table2, G_N_ELEMENTS(table2), index2, G_N_ELEMENTS(index2));
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

/* The spans a compressor codes: in compact bundles exactly the columns other than the
 * timestamps, each a whole field; in full ones the events. Deflated with them, the
 * bundles inflate back, bit for bit, with zlib. (These pages are a light workload: what
 * coding saves on a storm, test-recorder and bench/run measure.) */
static void check_coded_spans(FtraceParser *p, int cpu, bool compact) {
        g_autoptr(GBytes) back = NULL;
        g_autofree guint8 *z = NULL;
        FtraceBundle *b = NULL;
        const DeflateSpan *spans;
        const uint8_t *buf;
        size_t len, n, zlen;
        DeflateStream s;
        guint seen = 0;

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

                /* A length-delimited CompactSched column, not a timestamp one, whole. */
                g_assert_cmpuint(spans[i].end, <=, len);
                g_assert_cmpint(trace_field_next(&q, buf + len, &f), ==, 1);
                g_assert_cmpint(f.wire_type, ==, TRACE_WIRE_LEN);
                g_assert_true(f.number != 1 && f.number != 5 && f.number != 7 && f.number <= 12);
                g_assert_false(seen & (1u << f.number));
                seen |= 1u << f.number;
                g_assert_cmpuint(spans[i].end, ==, spans[i].start + f.framed_len);
                if (i > 0)
                        g_assert_cmpuint(spans[i].start, >=, spans[i - 1].end);
        }
        if (compact)
                g_assert_cmpuint(n, >=, 4);     /* switches: prev_state, next_pid, prio, comm */

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
        g_test_add_func("/ftrace-parser/record-types", test_record_types);
        g_test_add_func("/ftrace-parser/compact-comm-cache", test_compact_comm_cache);
        g_test_add_func("/ftrace-parser/lost-events", test_lost_events);
        g_test_add_func("/ftrace-parser/pack-into", test_pack_into);
        g_test_add_func("/ftrace-parser/malformed-pages", test_malformed_pages);
        g_test_add_func("/ftrace-parser/bad-data-loc", test_bad_data_loc);
        g_test_add_func("/ftrace-parser/garbage-pages", test_garbage_pages);
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
