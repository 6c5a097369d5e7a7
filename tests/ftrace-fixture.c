/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The ftrace parser tests' fixtures and helpers (ftrace-fixture.h). */
#include <errno.h>
#include <glib.h>
#include <stdint.h>
#include <string.h>

#include "ftrace-parser.h"
#include "trace-file.h"
#include "trace-reader.h"
#include "trace.pb-c.h"
#include "ftrace-fixture.h"

Fixture fx;

/* ---- fixture loading ------------------------------------------------------------- */

static char *fixture_path(const char *name) {
        const char *src = g_getenv("TRACEBUS_SOURCE_DIR");

        g_assert_nonnull(src);
        return g_build_filename(src, "tests", "fixtures", "ftrace", name, NULL);
}

GBytes *fixture_read(const char *name) {
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

void fixture_load(void) {
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

void fixture_unload(void) {
        for (int cpu = 0; cpu < N_CPUS; cpu++) {
                g_bytes_unref(fx.pages[cpu]);
                g_array_unref(fx.text[cpu]);
        }
        g_key_file_free(fx.expected);
}

char *expected_string(const char *key) {
        g_autoptr(GError) error = NULL;
        char *v = g_key_file_get_string(fx.expected, "capture", key, &error);

        g_assert_no_error(error);
        return v;
}

/* @s with its one occurrence of @from replaced by @to. */
char *replace_once(const char *s, const char *from, const char *to) {
        const char *at = strstr(s, from);

        g_assert_nonnull(at);
        return g_strdup_printf("%.*s%s%s", (int) (at - s), s, to, at + strlen(from));
}

/* Adds every format under events/ (or only @only, "group/name"), under its own group or
 * @as_group. Returns the parser. */
FtraceParser *parser_new_from_fixtures_as(const char *only, const char *as_group) {
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

FtraceParser *parser_new_from_fixtures(const char *only) {
        return parser_new_from_fixtures_as(only, NULL);
}

const uint8_t *cpu_page(int cpu, size_t i) {
        return (const uint8_t *) g_bytes_get_data(fx.pages[cpu], NULL) + i * PAGE_SIZE_4K;
}

size_t cpu_n_pages(int cpu) {
        return g_bytes_get_size(fx.pages[cpu]) / PAGE_SIZE_4K;
}

Tracebus__FtraceEventBundle *bundle_pack_unpack(FtraceBundle *b, GBytes **ret_raw) {
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
Tracebus__FtraceEventBundle *decode_cpu(FtraceParser *p, int cpu, bool compact, GBytes **ret_raw) {
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

const char *event_name(const Tracebus__FtraceEvent *e) {
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

const Tracebus__GenericFtraceEvent__Field *generic_field(const Tracebus__GenericFtraceEvent *g,
                                                                 const char *name) {
        for (size_t i = 0; i < g->n_field; i++)
                if (g_str_equal(g->field[i]->name, name))
                        return g->field[i];
        g_assert_not_reached();
}

/* ---- a minimal independent record walker, to find records to edit ----------------- */

uint32_t rd32(const uint8_t *s) {
        uint32_t v;

        memcpy(&v, s, sizeof(v));
        return v;
}

uint64_t rd64(const uint8_t *s) {
        uint64_t v;

        memcpy(&v, s, sizeof(v));
        return v;
}

/* The records of @page, in order. */
GArray *page_records(const uint8_t *page) {
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

void pw_word(PageWriter *w, uint32_t v) {
        g_assert_cmpuint(w->off + 4, <=, sizeof(w->page));
        memcpy(w->page + w->off, &v, 4);
        w->off += 4;
}

void pw_bytes(PageWriter *w, const void *s, size_t n) {
        g_assert_cmpuint(w->off + n, <=, sizeof(w->page));
        memcpy(w->page + w->off, s, n);
        w->off += n;
}

void pw_finish(PageWriter *w, uint64_t ts) {
        uint64_t commit = w->off - 16;

        memcpy(w->page, &ts, 8);
        memcpy(w->page + 8, &commit, 8);
}

Tracebus__FtraceEventBundle *decode_one_record(FtraceParser *p, const void *rec, size_t len) {
        PageWriter w = { .off = 16 };
        Tracebus__FtraceEventBundle *m;
        FtraceBundle *b = NULL;

        pw_word(&w, (uint32_t) (len / 4) | 100 << 5);
        pw_bytes(&w, rec, len);
        pw_finish(&w, 1000000);
        g_assert_cmpint(ftrace_bundle_new(0, false, &b), ==, 0);
        g_assert_cmpint(ftrace_parser_parse_page(p, w.page, sizeof(w.page), b), ==, 1);
        m = bundle_pack_unpack(b, NULL);
        g_assert_cmpuint(m->n_event, ==, 1);
        ftrace_bundle_free(b);
        return m;
}
