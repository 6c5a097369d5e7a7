/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite: FtraceConfig's symbolize_ksyms, enable_function_graph and kprobe_events,
 * against the real service, polkitd and tracefs.
 *
 *   ksyms      three sessions record the workqueue events at once: root without
 *              symbolize_ksyms (raw addresses: the truth, named here from
 *              /proc/kallsyms), tbuser with it (every function an iid named in
 *              InternedData.kernel_symbols, ahead of its use, no kernel address
 *              anywhere) and tbuser without it (hashed, no names). tbuser's names must be
 *              the functions root's addresses are in.
 *   kprobes    kprobe_events and enable_function_graph refused to tbuser (AccessDenied
 *              naming org.tracebus.kprobes); granted to tbadmin, whose session records
 *              (what the kernel lacks skipped), and leaves no probe behind. Where the
 *              kernel has them: FtraceEvent.kprobe_event begin and end (KPROBE_TYPE_BOTH)
 *              and function-graph entries named.
 *
 * Users (tests/polkit-rules): tbuser may record; tbadmin (tbadmins) may also manage
 * and use org.tracebus.kprobes; uid 0 always may.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ksyms.h"
#include "recorder.h"
#include "trace-file.h"

#define EV_WORKQUEUE_QUEUE_WORK 59
#define EV_WORKQUEUE_EXECUTE_START 58
#define EV_FUNCGRAPH_ENTRY 437

static const char *const wq_events[] = { "workqueue/workqueue_queue_work", "workqueue/workqueue_execute_start", NULL };

static bool is_kernel_address(guint64 v) {
        return (v >> 48) == 0xffff;
}

/* The code address field of a workqueue event, and its work item. */
static bool wq_fields(const Ev *e, guint64 *function, guint64 *work) {
        if (!e->e)
                return false;
        if (e->kind == EV_WORKQUEUE_EXECUTE_START && e->e->workqueue_execute_start) {
                *function = e->e->workqueue_execute_start->function;
                *work = e->e->workqueue_execute_start->work;
                return true;
        }
        if (e->kind == EV_WORKQUEUE_QUEUE_WORK && e->e->workqueue_queue_work) {
                *function = e->e->workqueue_queue_work->function;
                *work = e->e->workqueue_queue_work->work;
                return true;
        }
        return false;
}

/* iid -> name of every InternedData.kernel_symbols; the packet of each in *first_pkt. */
static GHashTable *collect_symbols(const Trace *t, GHashTable *pkt_of) {
        GHashTable *names = g_hash_table_new_full(NULL, NULL, NULL, g_free);

        for (guint i = 0; i < t->pkts->len; i++) {
                const Tracebus__TracePacket *p = PKT(t, i)->p;

                if (!p->interned_data)
                        continue;
                expect(p->trusted_packet_sequence_id == 2, "kernel_symbols on sequence %u, not the ftrace one (2)",
                       p->trusted_packet_sequence_id);
                for (size_t j = 0; j < p->interned_data->n_kernel_symbols; j++) {
                        const Tracebus__InternedString *s = p->interned_data->kernel_symbols[j];
                        gpointer key = GSIZE_TO_POINTER(s->iid);

                        expect(s->iid > 0 && !g_hash_table_contains(names, key), "kernel symbol iid %" G_GUINT64_FORMAT
                               " is 0 or interned twice", s->iid);
                        g_hash_table_insert(names, key, g_strndup((const char *) s->str.data, s->str.len));
                        g_hash_table_insert(pkt_of, key, GUINT_TO_POINTER(i));
                }
        }
        return names;
}

static Ksyms *read_kallsyms(void) {
        g_autofree char *text = NULL;
        gsize len;
        Ksyms *k = NULL;

        g_assert_true(g_file_get_contents("/proc/kallsyms", &text, &len, NULL));
        g_assert_cmpint(ksyms_parse(text, len, &k), ==, 0);
        return k;
}

static void busy_workqueues(void) {
        /* sync(2) queues writeback work; vmstat_update runs every second on its own. */
        for (int i = 0; i < 15; i++) {
                sync();
                g_usleep(100000);
        }
}

/* The functions of root's raw addresses: name -> events; *n_unresolved: events whose address
 * is in no function of /proc/kallsyms (a BPF program, say), which no session can name. */
static GHashTable *names_of_addresses(const Trace *t, Ksyms *k, guint *n_events, guint *n_unresolved) {
        GHashTable *set = g_hash_table_new(g_str_hash, g_str_equal);

        *n_events = *n_unresolved = 0;
        for (guint i = 0; i < t->evs->len; i++) {
                guint64 f, w;
                ssize_t s;

                if (!wq_fields(EV(t, i), &f, &w))
                        continue;
                (*n_events)++;
                s = ksyms_lookup(k, f);
                if (s >= 0) {
                        gpointer name = (gpointer) ksyms_name(k, (size_t) s);
                        g_hash_table_insert(set, name, GUINT_TO_POINTER(GPOINTER_TO_UINT(g_hash_table_lookup(set, name)) + 1));
                } else
                        (*n_unresolved)++;
        }
        return set;
}

static void check_symbolized(const Trace *t, GHashTable *truth, guint truth_events, guint truth_unresolved) {
        g_autoptr(GHashTable) pkt_of = g_hash_table_new(NULL, NULL);
        g_autoptr(GHashTable) names = collect_symbols(t, pkt_of);
        g_autoptr(GHashTable) counts = g_hash_table_new(g_str_hash, g_str_equal);
        guint n = 0, named = 0, early = 0, addresses = 0, unknown = 0, more = 0;
        GHashTableIter it;
        gpointer key, value;

        for (guint i = 0; i < t->evs->len; i++) {
                const Ev *e = EV(t, i);
                guint64 f, w;
                const char *name;

                if (!wq_fields(e, &f, &w))
                        continue;
                n++;
                addresses += is_kernel_address(f) || is_kernel_address(w);
                name = g_hash_table_lookup(names, GSIZE_TO_POINTER(f));
                if (!name)
                        continue;
                named++;
                early += GPOINTER_TO_UINT(g_hash_table_lookup(pkt_of, GSIZE_TO_POINTER(f))) > e->pkt;
                if (!g_hash_table_contains(truth, name) && unknown++ < 5)
                        note("named %s, which root's addresses never were\n", name);
                g_hash_table_insert(counts, (gpointer) name,
                                    GUINT_TO_POINTER(GPOINTER_TO_UINT(g_hash_table_lookup(counts, name)) + 1));
        }
        /* Root's session saw every event this one did: no function may have more here. */
        g_hash_table_iter_init(&it, counts);
        while (g_hash_table_iter_next(&it, &key, &value))
                if (GPOINTER_TO_UINT(value) > GPOINTER_TO_UINT(g_hash_table_lookup(truth, key)) && more++ < 5)
                        note("%s: %u events here, %u in root's session\n", (const char *) key, GPOINTER_TO_UINT(value),
                             GPOINTER_TO_UINT(g_hash_table_lookup(truth, key)));
        note("symbolized: %u workqueue events, %u named (%u names); root's session: %u events, %u functions\n", n, named,
             g_hash_table_size(names), truth_events, g_hash_table_size(truth));
        expect(n >= 10, "only %u workqueue events in 1.5 s of sync(2)", n);
        /* As many unnamed as root's addresses in no function, in proportion (+1%). */
        expect((double) (n - named) / MAX(n, 1u) <= (double) truth_unresolved / MAX(truth_events, 1u) + 0.01,
               "%u of %u workqueue functions have no name in kernel_symbols (root's: %u of %u in no function)",
               n - named, n, truth_unresolved, truth_events);
        expect(addresses == 0, "%u workqueue events of a caller without org.tracebus.manage hold a kernel address",
               addresses);
        expect(early == 0, "%u events come before the packet naming their function", early);
        expect(unknown == 0, "%u functions named that root's raw addresses do not fall in (wrong names)", unknown);
        expect(more == 0, "%u functions named for more events than root's raw addresses fall in (wrong names)", more);
        expect(n <= truth_events, "the symbolized session saw %u events, root's (longer) session %u", n, truth_events);
}

static void check_hashed(const Trace *t) {
        guint n = 0, addresses = 0, interned = 0;

        for (guint i = 0; i < t->pkts->len; i++)
                interned += PKT(t, i)->p->interned_data != NULL;
        for (guint i = 0; i < t->evs->len; i++) {
                guint64 f, w;

                if (!wq_fields(EV(t, i), &f, &w))
                        continue;
                n++;
                addresses += is_kernel_address(f) || is_kernel_address(w);
        }
        expect(n > 0 && addresses == 0, "without symbolize_ksyms: %u events, %u with a kernel address", n, addresses);
        expect(interned == 0, "without symbolize_ksyms: %u packets of kernel_symbols", interned);
}

static void test_ksyms(void) {
        g_autofree char *plain = ftrace_config("", wq_events, NULL);
        g_autofree char *sym = ftrace_config("", wq_events, "  symbolize_ksyms: true\n");
        g_auto(Rec) root = {}, user = {}, hashed = {};
        g_auto(Trace) t_root = {}, t_user = {}, t_hashed = {};
        g_autoptr(GHashTable) truth = NULL;
        g_autofree char *decoded = NULL;
        g_autoptr(GError) error = NULL;
        Ksyms *k = read_kallsyms();
        guint truth_events, truth_unresolved;

        /* root's window holds the others': every function they see, root sees. */
        rec_start(&root, "root", "ksyms-root", plain);
        rec_start(&user, "tbuser", "ksyms-user", sym);
        rec_start(&hashed, "tbuser", "ksyms-hashed", plain);
        busy_workqueues();
        g_hash_table_unref(rec_stop(&hashed));
        g_hash_table_unref(rec_stop(&user));
        g_hash_table_unref(rec_stop(&root));

        trace_load(root.out, false, &t_root);
        trace_load(user.out, false, &t_user);
        trace_load(hashed.out, false, &t_hashed);
        check_trace(&t_user, &(CheckOpts) { .closed = true });
        truth = names_of_addresses(&t_root, k, &truth_events, &truth_unresolved);
        check_symbolized(&t_user, truth, truth_events, truth_unresolved);
        check_hashed(&t_hashed);
        if (!tb_trace_protoc_decode(tb_bus()->source_dir, user.out, &decoded, &error))
                shortfall("protoc --decode fails on the symbolized trace: %s", error->message);
        else
                expect(strstr(decoded, "kernel_symbols {") && strstr(decoded, "workqueue_execute_start {"),
                       "protoc --decode shows no kernel_symbols or workqueue_execute_start");
        {
                const Tracebus__FtraceStats *end = NULL;
                for (guint i = 0; i < t_user.pkts->len; i++)
                        if (PKT(&t_user, i)->p->ftrace_stats)
                                end = PKT(&t_user, i)->p->ftrace_stats;
                expect(end && end->kernel_symbols_parsed == ksyms_count(k) && end->kernel_symbols_mem_kb > 0,
                       "the last FtraceStats says %u kernel symbols parsed (%u KiB), /proc/kallsyms has %zu",
                       end ? end->kernel_symbols_parsed : 0, end ? end->kernel_symbols_mem_kb : 0, ksyms_count(k));
        }
        ksyms_unref(k);
        verdict();
}

/* A Start that must be refused with AccessDenied naming org.tracebus.kprobes. */
static void expect_kprobes_refused(const char *user, const char *config) {
        ClientSpec spec = { .user = user, .op = OP_START, .config = config, .output_fd = -1 };
        g_autofree char *name = NULL, *out = NULL, *full = NULL;

        name = client_run_full(&spec, &out, &full);
        expect(name != NULL, "%s may use kprobes or function tracing without org.tracebus.kprobes (session %s)", user,
               out ? out : "?");
        expect(name && strcmp(name, ERR_ACCESS_DENIED) == 0 && full && strstr(full, "org.tracebus.kprobes"),
               "%s's refusal is not AccessDenied naming org.tracebus.kprobes: %s", user, full ? full : "(none)");
}

/* Our probes in kprobe_events (tbkp_* / tbkr_*), or 0 without kprobe events. */
static guint our_probes(void) {
        g_autofree char *text = NULL;
        guint n = 0;

        if (!g_file_get_contents(TRACEFS "/kprobe_events", &text, NULL, NULL))
                return 0;
        for (char *l = text; (l = strstr(l, ":tbk")); l++)
                n++;
        return n;
}

static bool kernel_has_tracer(const char *name) {
        g_autofree char *text = NULL;
        g_auto(GStrv) words = NULL;

        if (!g_file_get_contents(TRACEFS "/available_tracers", &text, NULL, NULL))
                return false;
        words = g_strsplit_set(g_strstrip(text), " \n", -1);
        return g_strv_contains((const char *const *) words, name);
}

static void test_kprobes(void) {
        static const char *const events[] = { "sched/sched_switch", NULL };
        g_autofree char *kp = ftrace_config("", events, "  kprobe_events { probe: \"do_sys_openat2\" type: KPROBE_TYPE_BOTH }\n"
                                           "  symbolize_ksyms: true\n");
        g_autofree char *fg = ftrace_config("", events, "  enable_function_graph: true\n"
                                           "  function_graph_roots: \"do_sys_openat2\"\n  symbolize_ksyms: true\n");
        g_autofree char *both = ftrace_config("", events, "  enable_function_graph: true\n"
                                             "  function_graph_roots: \"do_sys_openat2\"\n"
                                             "  kprobe_events { probe: \"do_sys_openat2\" type: KPROBE_TYPE_BOTH }\n"
                                             "  symbolize_ksyms: true\n");
        bool has_kprobes = access(TRACEFS "/kprobe_events", F_OK) == 0, has_graph = kernel_has_tracer("function_graph");
        g_auto(Rec) admin = {};
        g_auto(Trace) t = {};
        guint probes_during, entries = 0, generic_probes = 0, begins = 0, ends = 0, other = 0;

        note("this kernel: kprobe_events %s, function_graph tracer %s\n", has_kprobes ? "yes" : "no",
             has_graph ? "yes" : "no");
        expect_kprobes_refused("tbuser", kp);
        expect_kprobes_refused("tbuser", fg);
        expect(our_probes() == 0, "a refused Start left %u probes in kprobe_events", our_probes());

        rec_start(&admin, "tbadmin", "kprobes-admin", both);
        probes_during = our_probes();
        for (int i = 0; i < 20; i++) {
                g_autofree char *s = NULL;
                g_file_get_contents("/etc/hostname", &s, NULL, NULL);
                g_usleep(20000);
        }
        g_hash_table_unref(rec_stop(&admin));
        trace_load(admin.out, false, &t);
        check_trace(&t, &(CheckOpts) { .closed = true });
        for (guint i = 0; i < t.evs->len; i++) {
                const Ev *e = EV(&t, i);
                const char *g = generic_name(e);

                const Tracebus__KprobeEvent *k = e->e ? e->e->kprobe_event : NULL;

                entries += e->kind == EV_FUNCGRAPH_ENTRY;
                generic_probes += g && strcmp(g, "do_sys_openat2") == 0;
                if (!k)
                        continue;
                /* KPROBE_TYPE_BOTH: the kprobe begins a slice, the kretprobe ends it (v58). */
                if (g_strcmp0(k->name, "do_sys_openat2") != 0 || !k->has_type)
                        other++;
                else if (k->type == TRACEBUS__KPROBE_EVENT__KPROBE_TYPE__KPROBE_TYPE_BEGIN)
                        begins++;
                else if (k->type == TRACEBUS__KPROBE_EVENT__KPROBE_TYPE__KPROBE_TYPE_END)
                        ends++;
                else
                        other++;
        }
        note("tbadmin's session: %u events, %u probes defined while it ran, %u function graph entries, %u kprobe "
             "begins, %u ends\n", t.evs->len, probes_during, entries, begins, ends);
        expect(t.evs->len > 0, "tbadmin's session with kprobes and a function graph recorded nothing");
        expect(probes_during == (has_kprobes ? 2u : 0u), "%u probes defined while the session ran (kernel %s kprobes)",
               probes_during, has_kprobes ? "has" : "lacks");
        expect(!has_kprobes || (begins > 0 && ends > 0), "no do_sys_openat2 kprobe_event begin and end while files "
               "were opened (%u, %u)", begins, ends);
        expect(generic_probes == 0 && other == 0, "%u probe events as GenericFtraceEvent, %u of another name or type",
               generic_probes, other);
        expect(!has_graph || entries > 0, "no funcgraph_entry under do_sys_openat2 while files were opened");
        expect(has_graph || entries == 0, "funcgraph events from a kernel without the function_graph tracer");
        expect(our_probes() == 0, "the session's probes are still in kprobe_events after it ended: %u", our_probes());
        verdict();
}

RECORDER_WRAP(test_ksyms)
RECORDER_WRAP(test_kprobes)

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();
        RECORDER_CASE("ftgraph-ksyms", test_ksyms);
        RECORDER_CASE("ftgraph-kprobes", test_kprobes);
        return tb_test_run(TB_START_SERVICE);
}
