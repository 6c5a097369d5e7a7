/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The recorder tests' view of a trace: its packets, bundles and events (read with
 * libtracebus's trace reader), the shortfall list, and what every trace must be. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "system-bus.h"
#include "tb-client.h"
#include "trace-file.h"
#include "trace-reader.h"
#include "trace.pb-c.h"
#include "recorder.h"

const TypedKind typed_kinds[] = {
        { "print", EV_PRINT },
        { "sched_switch", EV_SCHED_SWITCH },
        { "cpu_frequency", EV_CPU_FREQUENCY },
        { "cpu_idle", EV_CPU_IDLE },
        { "sched_wakeup", EV_SCHED_WAKEUP },
        { "sched_waking", EV_SCHED_WAKING },
        { "softirq_entry", EV_SOFTIRQ_ENTRY },
        { "softirq_exit", EV_SOFTIRQ_EXIT },
        { "irq_handler_entry", EV_IRQ_HANDLER_ENTRY },
        { "irq_handler_exit", EV_IRQ_HANDLER_EXIT },
        { "sched_wakeup_new", EV_SCHED_WAKEUP_NEW },
        { "task_newtask", EV_TASK_NEWTASK },
        { "task_rename", EV_TASK_RENAME },
        { "sched_process_exec", EV_SCHED_PROCESS_EXEC },
        { "sched_process_exit", EV_SCHED_PROCESS_EXIT },
        { "sched_process_fork", EV_SCHED_PROCESS_FORK },
        { "sched_process_free", EV_SCHED_PROCESS_FREE },
        { "sys_enter", EV_SYS_ENTER },
        { "sys_exit", EV_SYS_EXIT },
};
const size_t n_typed_kinds = G_N_ELEMENTS(typed_kinds);

const char *kind_name(guint kind) {
        if (kind == EV_GENERIC)
                return "generic";
        if (kind == EV_COMPACT_SWITCH)
                return "compact sched_switch";
        if (kind == EV_COMPACT_WAKING)
                return "compact sched_waking";
        for (size_t i = 0; i < G_N_ELEMENTS(typed_kinds); i++)
                if (typed_kinds[i].number == kind)
                        return typed_kinds[i].name;
        return "unknown";
}

guint typed_number(const char *name) {
        for (size_t i = 0; i < G_N_ELEMENTS(typed_kinds); i++)
                if (g_str_equal(typed_kinds[i].name, name))
                        return typed_kinds[i].number;
        return 0;
}

/* ===================================================================== */
/* Shortfalls: every failed check of a case, reported together           */
/* ===================================================================== */

static GPtrArray *shortfalls;

void shortfall(const char *fmt, ...) {
        va_list ap;
        char *m;

        va_start(ap, fmt);
        m = g_strdup_vprintf(fmt, ap);
        va_end(ap);
        if (!shortfalls)
                shortfalls = g_ptr_array_new_with_free_func(g_free);
        note("SHORTFALL: %s\n", m);
        g_ptr_array_add(shortfalls, m);
}

void verdict(void) {
        guint n = shortfalls ? shortfalls->len : 0;

        if (n == 0) {
                note("%s: no shortfall\n", g_test_get_path());
                return;
        }
        note("%s: %u shortfall(s):\n", g_test_get_path(), n);
        for (guint i = 0; i < n; i++)
                note("  %u. %s\n", i + 1, (const char *) g_ptr_array_index(shortfalls, i));
        g_assert_cmpuint(n, ==, 0);
}

/* ===================================================================== */
/* Raw protobuf: libtracebus's field walker (lib/include/trace-reader.h)  */
/* ===================================================================== */

static bool raw_int(const guint8 *msg, gsize len, guint32 field, gint64 *ret) {
        TraceField f;

        if (trace_field_find(msg, len, field, TRACE_WIRE_VARINT, &f) <= 0)
                return false;
        *ret = (gint64) f.value;
        return true;
}

/* A copy of string field (the last one), or NULL. */
static char *raw_str(const guint8 *msg, gsize len, guint32 field) {
        TraceField f;

        if (trace_field_find(msg, len, field, TRACE_WIRE_LEN, &f) <= 0)
                return NULL;
        return g_strndup((const char *) f.data, f.len);
}

/* ===================================================================== */
/* Reading a trace                                                        */
/* ===================================================================== */

void trace_clear(Trace *t) {
        if (t->pkts)
                for (guint i = 0; i < t->pkts->len; i++)
                        tracebus__trace_packet__free_unpacked(g_array_index(t->pkts, Pkt, i).p, NULL);
        g_clear_pointer(&t->pkts, g_array_unref);
        g_clear_pointer(&t->bundles, g_array_unref);
        g_clear_pointer(&t->evs, g_array_unref);
        trace_reader_done(&t->reader);
        g_clear_pointer(&t->data, g_free);
        g_clear_pointer(&t->path, g_free);
}

/* The raw bytes of the FtraceEventBundle of a packet. */
static bool packet_bundle_bytes(const Pkt *k, const guint8 **ret, gsize *ret_len) {
        TraceField f;

        if (trace_field_find(k->raw, k->raw_len, 1, TRACE_WIRE_LEN, &f) <= 0)
                return false;
        *ret = f.data;
        *ret_len = f.len;
        return true;
}

static void add_bundle(Trace *t, guint pi) {
        const Pkt *k = PKT(t, pi);
        const Tracebus__FtraceEventBundle *b = k->p->ftrace_events;
        Bundle bd = { .pkt = pi, .b = b, .first_ev = t->evs->len, .min_ts = G_MAXUINT64 };
        const guint8 *bp, *p, *end;
        gsize blen;
        TraceField f;
        guint idx = 0;

        if (packet_bundle_bytes(k, &bp, &blen)) {
                p = bp;
                end = bp + blen;
                while (trace_field_next(&p, end, &f) > 0) {
                        const guint8 *q, *qend;
                        TraceField g;
                        Ev ev = { .cpu = b->cpu, .pkt = pi, .bundle = t->bundles->len };
                        guint nf = 0;

                        t->bundle_field_bytes[MIN(f.number, 15u)] += f.wire_type == TRACE_WIRE_LEN ? f.len : 8;
                        if (f.number != 2 || f.wire_type != TRACE_WIRE_LEN)
                                continue;
                        q = f.data;
                        qend = f.data + f.len;
                        ev.order_ok = true;
                        while (trace_field_next(&q, qend, &g) > 0) {
                                bool is_len = g.wire_type == TRACE_WIRE_LEN;

                                if (nf == 0 && g.number != 1)
                                        ev.order_ok = false;
                                if (nf == 1 && g.number != 2)
                                        ev.order_ok = false;
                                nf++;
                                t->event_field_bytes[g.number >= 3 && is_len ? 7 : MIN(g.number, 6u)] +=
                                        is_len ? g.len : 8;
                                if (g.number == 1 && g.wire_type == TRACE_WIRE_VARINT) {
                                        ev.ts = g.value;
                                        ev.has_ts = true;
                                } else if (g.number == 2 && g.wire_type == TRACE_WIRE_VARINT) {
                                        ev.pid = (guint32) g.value;
                                        ev.has_pid = true;
                                } else if (is_len && g.number >= 3) {
                                        ev.kind = g.number;
                                        ev.payload = g.data;
                                        ev.payload_len = g.len;
                                }
                        }
                        ev.e = idx < b->n_event ? b->event[idx] : NULL;
                        idx++;
                        g_array_append_val(t->evs, ev);
                }
        }
        if (b->compact_sched) {
                const Tracebus__FtraceEventBundle__CompactSched *c = b->compact_sched;
                guint64 ts = 0;

                for (size_t i = 0; i < c->n_switch_timestamp; i++) {
                        Ev ev = { .cpu = b->cpu, .pkt = pi, .bundle = t->bundles->len, .kind = EV_COMPACT_SWITCH,
                                  .has_ts = true, .order_ok = true, .ci = (guint) i };
                        ts += c->switch_timestamp[i];
                        ev.ts = ts;
                        g_array_append_val(t->evs, ev);
                }
                ts = 0;
                for (size_t i = 0; i < c->n_waking_timestamp; i++) {
                        Ev ev = { .cpu = b->cpu, .pkt = pi, .bundle = t->bundles->len, .kind = EV_COMPACT_WAKING,
                                  .has_ts = true, .order_ok = true, .ci = (guint) i };
                        ts += c->waking_timestamp[i];
                        ev.ts = ts;
                        g_array_append_val(t->evs, ev);
                }
        }
        bd.n_ev = t->evs->len - bd.first_ev;
        bd.max_ts = 0;
        for (guint i = bd.first_ev; i < t->evs->len; i++) {
                bd.min_ts = MIN(bd.min_ts, EV(t, i)->ts);
                bd.max_ts = MAX(bd.max_ts, EV(t, i)->ts);
        }
        g_array_append_val(t->bundles, bd);
}

static void add_packet(Trace *t, const TraceRawPacket *raw) {
        Pkt k = { .raw = raw->data, .raw_len = raw->len, .offset = raw->offset };

        if (trace_packet_unpack(raw, &k.p) < 0) {
                shortfall("%s: packet %u at offset %" G_GSIZE_FORMAT " does not unpack as a TracePacket", t->path,
                          t->pkts->len, k.offset);
                return;
        }
        g_array_append_val(t->pkts, k);
        if (k.p->system_info && k.p->system_info->has_num_cpus)
                t->n_cpus = k.p->system_info->num_cpus;
        if (k.p->ftrace_events)
                add_bundle(t, t->pkts->len - 1);
}

/* Appends the whole packets of the file, those inside compressed_packets inflated with
 * zlib in their place, as trace_processor reads them (they count as packets of the file
 * at the outer packet's offset). Returns where the whole packets end. */
static gsize load_packets(Trace *t) {
        TraceRawPacket raw;
        int r;

        trace_reader_init(&t->reader, t->data, t->len, 0);
        while ((r = trace_reader_next(&t->reader, &raw)) != 0) {
                if (r == -EPROTO) {
                        shortfall("%s: compressed_packets before offset %" G_GSIZE_FORMAT
                                  " do not inflate, hold a torn packet or nest compressed_packets",
                                  t->path, trace_reader_offset(&t->reader));
                        continue;
                }
                if (r < 0)
                        break;
                add_packet(t, &raw);
        }
        t->n_compressed = t->reader.n_compressed;
        return trace_reader_offset(&t->reader);
}

/* Reads the file. A torn tail (a file read while recording) is allowed with
 * allow_torn; otherwise it is a shortfall. */
void trace_load(const char *path, bool allow_torn, Trace *t) {
        g_autoptr(GError) error = NULL;
        gsize pos;

        memset(t, 0, sizeof *t);
        t->path = g_strdup(path);
        if (!g_file_get_contents(path, (char **) &t->data, &t->len, &error))
                g_error("cannot read %s: %s", path, error->message);
        t->pkts = g_array_new(FALSE, TRUE, sizeof(Pkt));
        t->bundles = g_array_new(FALSE, TRUE, sizeof(Bundle));
        t->evs = g_array_new(FALSE, TRUE, sizeof(Ev));
        pos = load_packets(t);
        t->torn = pos < t->len;
        if (t->torn && !allow_torn)
                shortfall("%s: the file is torn at offset %" G_GSIZE_FORMAT " of %" G_GSIZE_FORMAT
                          " (not whole packets)",
                          path, pos, t->len);
        note("%s: %" G_GSIZE_FORMAT " bytes, %u packets, %u bundles, %u events%s\n", path, t->len, t->pkts->len,
             t->bundles->len, t->evs->len, t->torn ? " (torn tail)" : "");
        if (t->evs->len > 0 && t->len / t->evs->len > 150) {
                g_autoptr(GString) b = g_string_new(NULL);
                for (guint i = 0; i < 16; i++)
                        if (t->bundle_field_bytes[i])
                                g_string_append_printf(b, " bundle.%u=%" G_GUINT64_FORMAT, i, t->bundle_field_bytes[i]);
                for (guint i = 0; i < 8; i++)
                        if (t->event_field_bytes[i])
                                g_string_append_printf(b, " event.%u=%" G_GUINT64_FORMAT, i, t->event_field_bytes[i]);
                note("%s: %" G_GSIZE_FORMAT " bytes per event; bytes by field:%s\n", path, t->len / t->evs->len, b->str);
        }
}

/* ---- values of events ---- */

gint64 ev_int(const Ev *e, guint32 field, gint64 dflt) {
        gint64 v;
        return e->payload && raw_int(e->payload, e->payload_len, field, &v) ? v : dflt;
}

char *ev_str(const Ev *e, guint32 field) {
        return e->payload ? raw_str(e->payload, e->payload_len, field) : NULL;
}

const Tracebus__FtraceEventBundle__CompactSched *ev_compact(const Trace *t, const Ev *e) {
        return BUNDLE(t, e->bundle)->b->compact_sched;
}

const char *compact_comm(const Tracebus__FtraceEventBundle__CompactSched *c, size_t n_idx,
                                const guint32 *idx, guint i) {
        if (i >= n_idx || idx[i] >= c->n_intern_table)
                return NULL;
        return c->intern_table[idx[i]];
}

/* The generic event's field, or NULL. */
const Tracebus__GenericFtraceEvent__Field *ev_generic_field(const Ev *e, const char *name) {
        const Tracebus__GenericFtraceEvent *g = e->e ? e->e->generic : NULL;

        for (size_t i = 0; g && i < g->n_field; i++)
                if (g->field[i]->name && g_str_equal(g->field[i]->name, name))
                        return g->field[i];
        return NULL;
}

const char *generic_name(const Ev *e) {
        return e->kind == EV_GENERIC && e->e && e->e->generic && e->e->generic->event_name ? e->e->generic->event_name
                                                                                            : NULL;
}

bool generic_int(const Ev *e, const char *name, gint64 *ret) {
        const Tracebus__GenericFtraceEvent__Field *f = ev_generic_field(e, name);

        if (!f)
                return false;
        if (f->has_int_value)
                *ret = f->int_value;
        else if (f->has_uint_value)
                *ret = (gint64) f->uint_value;
        else
                return false;
        return true;
}

/* ---- the pids and names a trace describes ---- */

void described_clear(Described *d) {
        g_clear_pointer(&d->threads, g_hash_table_unref);
        g_clear_pointer(&d->tgid, g_hash_table_unref);
        g_clear_pointer(&d->processes, g_hash_table_unref);
        g_clear_pointer(&d->names_later, g_hash_table_unref);
}

static guint n_process_trees(const Trace *t) {
        guint n = 0;
        for (guint i = 0; i < t->pkts->len; i++)
                n += PKT(t, i)->p->process_tree != NULL;
        return n;
}

void described_collect(const Trace *t, Described *d) {
        bool first = true;

        d->threads = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
        d->tgid = g_hash_table_new(g_direct_hash, g_direct_equal);
        d->processes = g_hash_table_new(g_direct_hash, g_direct_equal);
        d->names_later = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
        for (guint i = 0; i < t->pkts->len; i++) {
                const Tracebus__ProcessTree *pt = PKT(t, i)->p->process_tree;
                if (!pt)
                        continue;
                for (size_t j = 0; j < pt->n_processes; j++)
                        g_hash_table_insert(d->processes, GINT_TO_POINTER(pt->processes[j]->pid), pt->processes[j]);
                for (size_t j = 0; j < pt->n_threads; j++) {
                        const Tracebus__ProcessTree__Thread *th = pt->threads[j];
                        g_hash_table_insert(d->threads, GINT_TO_POINTER(th->tid), g_strdup(th->name ? th->name : ""));
                        if (th->has_tgid)
                                g_hash_table_insert(d->tgid, GINT_TO_POINTER(th->tid), GINT_TO_POINTER(th->tgid));
                        if (!first)
                                g_hash_table_insert(d->names_later, GINT_TO_POINTER(th->tid),
                                                    g_strdup(th->name ? th->name : ""));
                }
                first = false;
        }
}

static bool described_has(const Described *d, int pid) {
        return g_hash_table_contains(d->threads, GINT_TO_POINTER(pid)) ||
               g_hash_table_contains(d->processes, GINT_TO_POINTER(pid));
}

/* Every pid the events show running or acting (FtraceEvent.pid, sched_switch
 * prev/next, compact next pids, waking pids) -> a comm seen with it. */
static GHashTable *event_pids(const Trace *t) {
        GHashTable *h = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);

        for (guint i = 0; i < t->evs->len; i++) {
                const Ev *e = EV(t, i);
                if (e->kind == EV_COMPACT_SWITCH || e->kind == EV_COMPACT_WAKING) {
                        const Tracebus__FtraceEventBundle__CompactSched *c = ev_compact(t, e);
                        bool sw = e->kind == EV_COMPACT_SWITCH;
                        int pid = sw ? (e->ci < c->n_switch_next_pid ? c->switch_next_pid[e->ci] : 0)
                                     : (e->ci < c->n_waking_pid ? c->waking_pid[e->ci] : 0);
                        const char *comm = sw ? compact_comm(c, c->n_switch_next_comm_index, c->switch_next_comm_index, e->ci)
                                              : compact_comm(c, c->n_waking_comm_index, c->waking_comm_index, e->ci);
                        if (pid > 0 && !g_hash_table_contains(h, GINT_TO_POINTER(pid)))
                                g_hash_table_insert(h, GINT_TO_POINTER(pid), g_strdup(comm ? comm : ""));
                        continue;
                }
                if (e->has_pid && e->pid > 0 && !g_hash_table_contains(h, GINT_TO_POINTER(e->pid)))
                        g_hash_table_insert(h, GINT_TO_POINTER(e->pid), g_strdup(""));
                if (e->kind == EV_SCHED_SWITCH) {
                        int prev = (int) ev_int(e, 2, 0), next = (int) ev_int(e, 6, 0);
                        if (prev > 0)
                                g_hash_table_insert(h, GINT_TO_POINTER(prev), ev_str(e, 1));
                        if (next > 0)
                                g_hash_table_insert(h, GINT_TO_POINTER(next), ev_str(e, 5));
                }
                if (e->kind == EV_SCHED_WAKING || e->kind == EV_SCHED_WAKEUP || e->kind == EV_SCHED_WAKEUP_NEW) {
                        int pid = (int) ev_int(e, 2, 0);
                        if (pid > 0)
                                g_hash_table_insert(h, GINT_TO_POINTER(pid), ev_str(e, 1));
                }
        }
        return h;
}

/* ===================================================================== */
/* What every trace must be (facts note, section 3)                       */
/* ===================================================================== */

guint64 tracing_started_ts(const Trace *t) {
        for (guint i = 0; i < t->pkts->len; i++) {
                const Tracebus__TracePacket *p = PKT(t, i)->p;
                if (p->service_event && p->service_event->has_tracing_started && p->service_event->tracing_started)
                        return p->timestamp;
        }
        return 0;
}

guint64 tracing_disabled_ts(const Trace *t) {
        for (guint i = 0; i < t->pkts->len; i++) {
                const Tracebus__TracePacket *p = PKT(t, i)->p;
                if (p->service_event && p->service_event->has_tracing_disabled && p->service_event->tracing_disabled)
                        return p->timestamp;
        }
        return 0;
}

static const Tracebus__FtraceStats *ftrace_stats(const Trace *t, Tracebus__FtraceStats__Phase phase) {
        for (guint i = 0; i < t->pkts->len; i++) {
                const Tracebus__TracePacket *p = PKT(t, i)->p;
                if (p->ftrace_stats && p->ftrace_stats->phase == phase)
                        return p->ftrace_stats;
        }
        return NULL;
}

const Tracebus__TraceStats *last_trace_stats(const Trace *t) {
        const Tracebus__TraceStats *s = NULL;
        for (guint i = 0; i < t->pkts->len; i++)
                if (PKT(t, i)->p->trace_stats)
                        s = PKT(t, i)->p->trace_stats;
        return s;
}

static void check_packets(const Trace *t, const CheckOpts *o) {
        g_autoptr(GHashTable) seqs = g_hash_table_new(g_direct_hash, g_direct_equal);
        guint first_bundle = G_MAXUINT, clock_idx = G_MAXUINT, started_idx = G_MAXUINT;
        guint n_uuid = 0, n_started = 0, n_disabled = 0, n_start_stats = 0, n_end_stats = 0, n_trace_stats = 0;
        guint n_sysinfo = 0, n_config = 0, no_seq = 0;
        struct utsname u;

        g_assert_cmpint(uname(&u), ==, 0);
        for (guint i = 0; i < t->pkts->len; i++) {
                const Tracebus__TracePacket *p = PKT(t, i)->p;
                guint32 seq = p->has_trusted_packet_sequence_id ? p->trusted_packet_sequence_id : 0;
                bool service = p->clock_snapshot || p->trace_config || p->trace_uuid || p->system_info ||
                               p->service_event || p->trace_stats || p->has_synchronization_marker;

                if (seq == 0 && no_seq++ == 0)
                        shortfall("%s: packet %u has no trusted_packet_sequence_id", t->path, i);
                if (seq && !g_hash_table_contains(seqs, GUINT_TO_POINTER(seq))) {
                        g_hash_table_add(seqs, GUINT_TO_POINTER(seq));
                        expect(p->first_packet_on_sequence && (p->sequence_flags & SEQ_INCREMENTAL_STATE_CLEARED),
                               "%s: packet %u, the first of sequence %u, lacks first_packet_on_sequence/"
                               "SEQ_INCREMENTAL_STATE_CLEARED",
                               t->path, i, seq);
                }
                if (service)
                        expect(seq == 1, "%s: service packet %u is on sequence %u, not 1", t->path, i, seq);
                if (p->ftrace_events && first_bundle == G_MAXUINT)
                        first_bundle = i;
                if (p->clock_snapshot && clock_idx == G_MAXUINT) {
                        const Tracebus__ClockSnapshot *cs = p->clock_snapshot;
                        clock_idx = i;
                        expect(cs->has_primary_trace_clock &&
                                       cs->primary_trace_clock == TRACEBUS__BUILTIN_CLOCK__BUILTIN_CLOCK_BOOTTIME,
                               "%s: the first clock snapshot has no primary_trace_clock BOOTTIME", t->path);
                        expect(cs->n_clocks >= 2 && cs->clocks[0]->clock_id == 6,
                               "%s: the first clock snapshot does not start with BOOTTIME (and others)", t->path);
                }
                if (p->system_info) {
                        const Tracebus__Utsname *un = p->system_info->utsname;
                        n_sysinfo++;
                        expect(un && un->sysname && g_str_equal(un->sysname, "Linux") && un->release &&
                                       g_str_equal(un->release, u.release),
                               "%s: SystemInfo.utsname is not sysname Linux, release %s", t->path, u.release);
                        expect(p->system_info->has_num_cpus && p->system_info->num_cpus == (guint) sysconf(_SC_NPROCESSORS_CONF),
                               "%s: SystemInfo.num_cpus is not %ld", t->path, sysconf(_SC_NPROCESSORS_CONF));
                }
                n_config += p->trace_config != NULL;
                if (p->trace_uuid) {
                        n_uuid++;
                        expect(p->trace_uuid->msb != 0 || p->trace_uuid->lsb != 0, "%s: trace_uuid is zero", t->path);
                }
                if (p->service_event && p->service_event->tracing_started) {
                        n_started++;
                        started_idx = MIN(started_idx, i);
                        expect(p->has_timestamp, "%s: tracing_started has no timestamp", t->path);
                }
                if (p->service_event && p->service_event->tracing_disabled)
                        n_disabled++;
                if (p->ftrace_stats) {
                        n_start_stats += p->ftrace_stats->phase == TRACEBUS__FTRACE_STATS__PHASE__START_OF_TRACE;
                        n_end_stats += p->ftrace_stats->phase == TRACEBUS__FTRACE_STATS__PHASE__END_OF_TRACE;
                        expect(p->ftrace_stats->n_cpu_stats == t->n_cpus,
                               "%s: FtraceStats (phase %d) has %zu cpu_stats for %u CPUs", t->path,
                               p->ftrace_stats->phase, p->ftrace_stats->n_cpu_stats, t->n_cpus);
                }
                n_trace_stats += p->trace_stats != NULL;
        }
        if (no_seq > 1)
                shortfall("%s: %u packets in all have no trusted_packet_sequence_id", t->path, no_seq);
        expect(clock_idx != G_MAXUINT, "%s: no ClockSnapshot", t->path);
        expect(clock_idx == G_MAXUINT || first_bundle == G_MAXUINT || clock_idx < first_bundle,
               "%s: the first ClockSnapshot (packet %u) comes after the first ftrace bundle (packet %u)", t->path,
               clock_idx, first_bundle);
        expect(n_sysinfo >= 1, "%s: no SystemInfo", t->path);
        expect(n_config >= 1, "%s: no TraceConfig", t->path);
        expect(n_uuid == 1, "%s: %u trace_uuid packets, expected 1", t->path, n_uuid);
        expect(n_started == 1, "%s: %u tracing_started events, expected 1", t->path, n_started);
        expect(started_idx == G_MAXUINT || first_bundle == G_MAXUINT || started_idx < first_bundle,
               "%s: tracing_started (packet %u) comes after the first ftrace bundle (packet %u)", t->path,
               started_idx, first_bundle);
        expect(n_start_stats == 1, "%s: %u FtraceStats START_OF_TRACE, expected 1", t->path, n_start_stats);
        if (o->closed) {
                expect(n_disabled == 1, "%s: %u tracing_disabled events, expected 1", t->path, n_disabled);
                expect(n_end_stats == 1, "%s: %u FtraceStats END_OF_TRACE, expected 1", t->path, n_end_stats);
                expect(n_trace_stats >= 1, "%s: no TraceStats at the end", t->path);
        }
        expect(t->n_cpus > 0, "%s: no SystemInfo.num_cpus", t->path);
}

static void check_bundles(const Trace *t, const CheckOpts *o) {
        guint64 started = tracing_started_ts(t), disabled = o->closed ? tracing_disabled_ts(t) : G_MAXUINT64;
        g_autofree gint *last = g_new0(gint, MAX(t->n_cpus, 1) + 64);
        guint n_early = 0, n_late = 0, n_no_ts = 0, n_no_pid = 0, n_order = 0, n_chain = 0, n_back = 0, n_errors = 0;
        guint n_no_prev = 0, n_first = 0, n_unknown_kind = 0, n_stream = 0;
        guint64 first_early = 0, first_late = 0;

        for (guint c = 0; c < MAX(t->n_cpus, 1) + 64; c++)
                last[c] = -1;
        expect(started != 0, "%s: no tracing_started timestamp to check events against", t->path);
        for (guint i = 0; i < t->evs->len; i++) {
                const Ev *e = EV(t, i);
                if (!e->has_ts) {
                        n_no_ts++;
                        continue;
                }
                if (e->ts < started && n_early++ == 0)
                        first_early = e->ts;
                if (e->ts > disabled && n_late++ == 0)
                        first_late = e->ts;
                if (e->kind != EV_COMPACT_SWITCH && e->kind != EV_COMPACT_WAKING) {
                        n_no_pid += !e->has_pid;
                        n_order += !e->order_ok;
                        n_unknown_kind += e->kind == 0;
                }
        }
        expect(n_early == 0, "%s: %u events before tracing_started (%" G_GUINT64_FORMAT "), the first at %" G_GUINT64_FORMAT
               ": trace_processor drops them", t->path, n_early, started, first_early);
        expect(n_late == 0, "%s: %u events after tracing_disabled (%" G_GUINT64_FORMAT "), the first at %" G_GUINT64_FORMAT,
               t->path, n_late, disabled, first_late);
        expect(n_no_ts == 0, "%s: %u events without a timestamp", t->path, n_no_ts);
        expect(n_no_pid == 0, "%s: %u events without a pid (trace_processor: \"Pid field not found\")", t->path, n_no_pid);
        expect(n_order == 0, "%s: %u events not written as timestamp (1), pid (2), then the event (the tokenizer's "
               "fast path)", t->path, n_order);
        expect(n_unknown_kind == 0, "%s: %u events with no event message", t->path, n_unknown_kind);

        for (guint bi = 0; bi < t->bundles->len; bi++) {
                const Bundle *bd = BUNDLE(t, bi);
                const Tracebus__FtraceEventBundle *b = bd->b;
                guint64 prev_end = b->previous_bundle_end_timestamp;
                guint cpu = b->cpu;

                if (!b->has_cpu || cpu >= t->n_cpus) {
                        shortfall("%s: bundle %u has cpu %u (has_cpu %d) for %u CPUs", t->path, bi, cpu, b->has_cpu,
                                  t->n_cpus);
                        continue;
                }
                n_errors += (guint) b->n_error;
                if (!b->has_previous_bundle_end_timestamp)
                        n_no_prev++;
                if (last[cpu] < 0) {
                        if (!o->wrapped && prev_end != 0 && n_first++ == 0)
                                shortfall("%s: the first bundle of CPU %u has previous_bundle_end_timestamp %" G_GUINT64_FORMAT
                                          ", expected 0 (the kernel buffer was cleared at start)",
                                          t->path, cpu, prev_end);
                } else {
                        const Bundle *pb = BUNDLE(t, last[cpu]);
                        guint64 want = pb->n_ev ? pb->max_ts : pb->b->previous_bundle_end_timestamp;
                        if (prev_end != want && n_chain++ < 3)
                                shortfall("%s: bundle %u (CPU %u) has previous_bundle_end_timestamp %" G_GUINT64_FORMAT
                                          ", but the previous bundle of that CPU ended at %" G_GUINT64_FORMAT,
                                          t->path, bi, cpu, prev_end, want);
                }
                if (bd->n_ev && bd->min_ts < prev_end && n_back++ < 3)
                        shortfall("%s: bundle %u (CPU %u) has an event at %" G_GUINT64_FORMAT
                                  ", before the previous bundle's end %" G_GUINT64_FORMAT " (timestamps go back)",
                                  t->path, bi, cpu, bd->min_ts, prev_end);
                /* Each stream (full events, compact switches, compact wakings) in order. */
                {
                        guint64 lf = 0, ls = 0, lw = 0;
                        for (guint i = bd->first_ev; i < bd->first_ev + bd->n_ev; i++) {
                                const Ev *e = EV(t, i);
                                guint64 *l = e->kind == EV_COMPACT_SWITCH ? &ls : e->kind == EV_COMPACT_WAKING ? &lw : &lf;
                                if (e->ts < *l && n_stream++ < 3)
                                        shortfall("%s: bundle %u (CPU %u): a %s event at %" G_GUINT64_FORMAT
                                                  " follows one at %" G_GUINT64_FORMAT,
                                                  t->path, bi, cpu, kind_name(e->kind), e->ts, *l);
                                *l = MAX(*l, e->ts);
                        }
                }
                last[cpu] = (gint) bi;
        }
        if (n_chain > 3)
                shortfall("%s: %u bundles in all break the previous_bundle_end_timestamp chain", t->path, n_chain);
        if (n_back > 3)
                shortfall("%s: %u bundles in all start before the previous bundle's end", t->path, n_back);
        if (n_stream > 3)
                shortfall("%s: %u events in all out of order within their bundle", t->path, n_stream);
        expect(n_no_prev == 0, "%s: %u bundles without previous_bundle_end_timestamp", t->path, n_no_prev);
        expect(n_errors == 0, "%s: %u FtraceErrors (pages the parser could not decode)", t->path, n_errors);
}

static void check_processes(const Trace *t) {
        g_auto(Described) d = { 0 };
        g_autoptr(GHashTable) pids = event_pids(t);
        g_autoptr(GString) examples = g_string_new(NULL);
        GHashTableIter it;
        gpointer k, v;
        guint missing = 0;

        described_collect(t, &d);
        expect(n_process_trees(t) > 0, "%s: no ProcessTree packet at all", t->path);
        g_hash_table_iter_init(&it, pids);
        while (g_hash_table_iter_next(&it, &k, &v)) {
                int pid = GPOINTER_TO_INT(k);
                if (described_has(&d, pid))
                        continue;
                if (missing++ < 15)
                        g_string_append_printf(examples, " %d(%s)", pid, (const char *) v);
        }
        expect(missing == 0, "%s: %u of %u pids seen in the events have no ProcessTree process or thread:%s%s", t->path,
               missing, g_hash_table_size(pids), examples->str, missing > 15 ? " ..." : "");
}

void check_trace(const Trace *t, const CheckOpts *o) {
        check_packets(t, o);
        check_bundles(t, o);
        if (o->describe_all)
                check_processes(t);
}

/* Ftrace events in the file (full + compact entries). */
guint64 n_events(const Trace *t) {
        return t->evs->len;
}

guint n_lost_bundles(const Trace *t, gint cpu) {
        guint n = 0;
        for (guint i = 0; i < t->bundles->len; i++) {
                const Tracebus__FtraceEventBundle *b = BUNDLE(t, i)->b;
                if (b->lost_events && (cpu < 0 || (gint) b->cpu == cpu))
                        n++;
        }
        return n;
}

/* Kernel loss over the trace from FtraceStats: overrun + commit overrun + dropped. */
guint64 ftrace_stats_lost(const Trace *t, gint cpu) {
        const Tracebus__FtraceStats *s = ftrace_stats(t, TRACEBUS__FTRACE_STATS__PHASE__START_OF_TRACE);
        const Tracebus__FtraceStats *e = ftrace_stats(t, TRACEBUS__FTRACE_STATS__PHASE__END_OF_TRACE);
        guint64 n = 0;

        if (!s || !e)
                return G_MAXUINT64;
        for (size_t i = 0; i < e->n_cpu_stats; i++) {
                const Tracebus__FtraceCpuStats *ce = e->cpu_stats[i], *cs = NULL;
                for (size_t j = 0; j < s->n_cpu_stats; j++)
                        if (s->cpu_stats[j]->cpu == ce->cpu)
                                cs = s->cpu_stats[j];
                if (!cs || (cpu >= 0 && ce->cpu != (guint64) cpu))
                        continue;
                n += (ce->overrun - cs->overrun) + (ce->commit_overrun - cs->commit_overrun) +
                     (ce->dropped_events - cs->dropped_events);
        }
        return n;
}

void markers_clear(Markers *m) {
        g_clear_pointer(&m->ts, g_free);
        g_clear_pointer(&m->count, g_free);
        g_clear_pointer(&m->bundle, g_free);
}

void markers_collect(const Trace *t, const char *tag, guint n, Markers *m) {
        g_autofree char *prefix = g_strdup_printf("%s ", tag);
        guint64 last_ts = 0;
        gint64 last_i = -1;

        m->n = n;
        m->ts = g_new0(guint64, n);
        m->count = g_new0(guint, n);
        m->bundle = g_new0(guint, n);
        m->out_of_order = 0;
        for (guint i = 0; i < t->evs->len; i++) {
                const Ev *e = EV(t, i);
                g_autofree char *buf = NULL;
                guint64 k;
                if (e->kind != EV_PRINT)
                        continue;
                buf = ev_str(e, 2);
                if (!buf || !g_str_has_prefix(buf, prefix))
                        continue;
                k = g_ascii_strtoull(buf + strlen(prefix), NULL, 10);
                if (k >= n)
                        continue;
                m->count[k]++;
                m->ts[k] = e->ts;
                m->bundle[k] = e->bundle;
                if ((gint64) k <= last_i || e->ts < last_ts)
                        m->out_of_order++;
                last_i = (gint64) k;
                last_ts = e->ts;
        }
}

guint markers_present(const Markers *m) {
        guint n = 0;
        for (guint i = 0; i < m->n; i++)
                n += m->count[i] > 0;
        return n;
}

#define TRACK_ROOT_NAME "tracebus"

void check_tracks(const Trace *t, GPtrArray *instants_out) {
        g_autoptr(GHashTable) names = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
        g_autoptr(GHashTable) counters = g_hash_table_new(g_direct_hash, g_direct_equal);
        g_autoptr(GHashTable) parents = g_hash_table_new(g_direct_hash, g_direct_equal);
        g_autoptr(GPtrArray) desc_packets = g_ptr_array_new();
        guint64 started = tracing_started_ts(t), disabled = tracing_disabled_ts(t), root = 0;
        guint n_lost = 0, n_fill = 0, n_events = 0, undescribed = 0, out_of_range = 0, wrong_type = 0, bad_values = 0;
        g_autoptr(GHashTable) lost_last = g_hash_table_new(g_direct_hash, g_direct_equal);
        guint32 track_seq = 0;

        for (guint i = 0; i < t->pkts->len; i++) {
                const Tracebus__TracePacket *p = PKT(t, i)->p;
                const Tracebus__TrackDescriptor *d = p->track_descriptor;
                const char *old;

                if (!d)
                        continue;
                track_seq = p->trusted_packet_sequence_id;
                expect(d->has_uuid && d->uuid != 0, "a TrackDescriptor without a uuid");
                old = g_hash_table_lookup(names, GSIZE_TO_POINTER(d->uuid));
                expect(!old || g_strcmp0(old, d->name) == 0, "track %" G_GUINT64_FORMAT " is named \"%s\" and \"%s\"",
                       d->uuid, old, d->name);
                g_hash_table_insert(names, GSIZE_TO_POINTER(d->uuid), g_strdup(d->name ? d->name : ""));
                if (d->counter)
                        g_hash_table_add(counters, GSIZE_TO_POINTER(d->uuid));
                if (d->has_parent_uuid)
                        g_hash_table_insert(parents, GSIZE_TO_POINTER(d->uuid), GSIZE_TO_POINTER(d->parent_uuid));
                if (g_strcmp0(d->name, TRACK_ROOT_NAME) == 0 && !d->has_parent_uuid)
                        root = d->uuid;
                if (d->name && g_str_has_prefix(d->name, "Events lost by the kernel, CPU ") && d->counter)
                        n_lost++;
                if (d->name && g_str_has_prefix(d->name, "Kernel buffer fill, CPU ") && d->counter)
                        n_fill++;
        }
        expect(root != 0, "no root track \"%s\" without a parent", TRACK_ROOT_NAME);
        expect(n_lost == t->n_cpus, "%u \"Events lost by the kernel\" counter tracks for %u CPUs", n_lost, t->n_cpus);
        expect(n_fill == t->n_cpus, "%u \"Kernel buffer fill\" counter tracks for %u CPUs", n_fill, t->n_cpus);
        {
                GHashTableIter it;
                gpointer k, v;
                g_hash_table_iter_init(&it, parents);
                while (g_hash_table_iter_next(&it, &k, &v))
                        expect(g_hash_table_contains(names, v), "track %" G_GSIZE_FORMAT " has parent %" G_GSIZE_FORMAT
                               ", which no descriptor describes", GPOINTER_TO_SIZE(k), GPOINTER_TO_SIZE(v));
        }
        /* Incremental state: after every SEQ_INCREMENTAL_STATE_CLEARED on the tracks'
         * sequence, every descriptor again before the next TrackEvent. */
        {
                g_autoptr(GHashTable) since = NULL;
                for (guint i = 0; i < t->pkts->len; i++) {
                        const Tracebus__TracePacket *p = PKT(t, i)->p;
                        if (p->trusted_packet_sequence_id != track_seq)
                                continue;
                        if (p->has_sequence_flags && (p->sequence_flags & SEQ_INCREMENTAL_STATE_CLEARED)) {
                                g_clear_pointer(&since, g_hash_table_unref);
                                since = g_hash_table_new(g_direct_hash, g_direct_equal);
                        }
                        if (p->track_descriptor && since)
                                g_hash_table_add(since, GSIZE_TO_POINTER(p->track_descriptor->uuid));
                        if (p->track_event && p->track_event->has_track_uuid)
                                expect(since && g_hash_table_contains(since, GSIZE_TO_POINTER(p->track_event->track_uuid)),
                                       "packet %u: a TrackEvent on track %" G_GUINT64_FORMAT " before its descriptor "
                                       "since the incremental state was last cleared", i, p->track_event->track_uuid);
                }
        }
        for (guint i = 0; i < t->pkts->len; i++) {
                const Tracebus__TracePacket *p = PKT(t, i)->p;
                const Tracebus__TrackEvent *e = p->track_event;
                if (!e)
                        continue;
                n_events++;
                if (!e->has_track_uuid || !g_hash_table_contains(names, GSIZE_TO_POINTER(e->track_uuid)))
                        undescribed++;
                if (!p->has_timestamp || p->timestamp < started || (disabled && p->timestamp > disabled))
                        out_of_range++;
                if (g_hash_table_contains(counters, GSIZE_TO_POINTER(e->track_uuid))) {
                        const char *tn = g_hash_table_lookup(names, GSIZE_TO_POINTER(e->track_uuid));
                        double v = e->has_double_counter_value ? e->double_counter_value : (double) e->counter_value;
                        if (e->type != TRACEBUS__TRACK_EVENT__TYPE__TYPE_COUNTER ||
                            !(e->has_counter_value || e->has_double_counter_value))
                                wrong_type++;
                        if (tn && g_str_has_prefix(tn, "Kernel buffer fill") && (v < 0 || v > 100))
                                bad_values++;
                        if (tn && g_str_has_prefix(tn, "Events lost")) {
                                gpointer old;
                                if (g_hash_table_lookup_extended(lost_last, GSIZE_TO_POINTER(e->track_uuid), NULL, &old) &&
                                    v < (double) GPOINTER_TO_SIZE(old))
                                        bad_values++;
                                g_hash_table_insert(lost_last, GSIZE_TO_POINTER(e->track_uuid), GSIZE_TO_POINTER((gsize) v));
                        }
                } else if (e->type == TRACEBUS__TRACK_EVENT__TYPE__TYPE_INSTANT) {
                        expect(e->track_uuid == root, "instant \"%s\" is not on the tracebus track", e->name);
                        if (instants_out)
                                g_ptr_array_add(instants_out, g_strdup_printf("%s@%" G_GUINT64_FORMAT, e->name ? e->name : "",
                                                                              p->timestamp));
                } else
                        wrong_type++;
        }
        expect(undescribed == 0, "%u TrackEvents on tracks no descriptor describes", undescribed);
        expect(out_of_range == 0, "%u TrackEvents outside [tracing_started, tracing_disabled]", out_of_range);
        expect(wrong_type == 0, "%u TrackEvents of the wrong type for their track", wrong_type);
        expect(bad_values == 0, "%u counter values out of range (fill outside 0..100 %%, or a lost count going down)",
               bad_values);
        note("%u track descriptors (%u uuids), %u track events\n", g_hash_table_size(names), g_hash_table_size(names),
             n_events);
}
