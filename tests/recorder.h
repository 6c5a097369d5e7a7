/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What the bus test pieces test-recorder-* share (recorder-trace.c: reading a
 * trace and what every trace must be; recorder-rec.c: sessions and workloads).
 *
 * Bus suite: what the recorder writes, against the real service, polkitd and
 * tracefs. Each case records real kernel events while the test makes the
 * kernel do known things (a known pid, a known comm after a rename, known
 * marker strings, an exec of a known file, a signal, a TCP connection to a
 * known port), then reads the trace back with libtracebus's trace reader (its
 * field walker for the events, protobuf-c for the rest) and checks the decoded fields, the
 * buffer modes, the loss accounting and what trace_processor needs of a
 * trace (shared/notes/perfetto-facts.md, section 3):
 *
 *   01  (test-recorder-events) event names (group/name, group/ *, bare names, UnknownEvent); every
 *       event group at once, each generic event against its format file;
 *       the typed events against what the test made happen
 *   02  (test-recorder-sched) compact_sched against full events, recorded at once by two sessions;
 *       compression_type DEFLATE against none, the same way
 *   03  (test-recorder-processes) ProcessTree: the scan at start, threads renamed, started and gone
 *   04  (test-recorder-processes) the service's tracks (TrackDescriptor/TrackEvent)
 *   05  (test-recorder-buffers) long trace with max_file_size_bytes, ring buffer wrapped 100 times, DISCARD
 *   06  (test-recorder-fidelity) numbered markers through a storm, without and with kernel loss
 *   07  (test-recorder-decode) the whole trace against protos/ (protoc --decode), service packets
 *
 * Every trace also goes through check_trace(): sequence ids and first-packet
 * flags, clock snapshot, SystemInfo, tracing_started before the first event,
 * timestamps within [tracing_started, tracing_disabled] and in order per CPU,
 * the previous_bundle_end_timestamp chain, and (where asked) a ProcessTree
 * entry for every pid the events show.
 *
 * A case does not stop at its first shortfall: every check that fails is
 * logged as "SHORTFALL: ..." and the case fails at its end with the list, so
 * one run shows everything the service still lacks.
 *
 * Users (tests/polkit-rules): tbuser may record; uid 0 always may. The test
 * itself runs as root: it writes into the session's own tracefs instance
 * (tracebus-<service pid>-<session id>/trace_marker) and runs the workloads
 * (perf bench sched pipe, the harness's busy pair).
 */

#include <glib.h>
#include <sched.h>
#include <stdbool.h>

#include "system-bus.h"
#include "tb-client.h"
#include "trace-reader.h"
#include "trace.pb-c.h"

#define TRACEFS "/sys/kernel/tracing"

#define SEQ_INCREMENTAL_STATE_CLEARED 1u

/* FtraceEvent payload field numbers (facts note 2.9). */
enum {
        EV_PRINT = 3,
        EV_SCHED_SWITCH = 4,
        EV_CPU_FREQUENCY = 11,
        EV_CPU_IDLE = 13,
        EV_SCHED_WAKEUP = 17,
        EV_SCHED_WAKING = 20,
        EV_SOFTIRQ_ENTRY = 24,
        EV_SOFTIRQ_EXIT = 25,
        EV_IRQ_HANDLER_ENTRY = 36,
        EV_IRQ_HANDLER_EXIT = 37,
        EV_SCHED_WAKEUP_NEW = 114,
        EV_TASK_NEWTASK = 235,
        EV_TASK_RENAME = 236,
        EV_SCHED_PROCESS_EXEC = 237,
        EV_SCHED_PROCESS_EXIT = 238,
        EV_SCHED_PROCESS_FORK = 239,
        EV_SCHED_PROCESS_FREE = 240,
        EV_GENERIC = 327,
        EV_SYS_ENTER = 329,
        EV_SYS_EXIT = 330,
        /* Not FtraceEvent fields: entries of FtraceEventBundle.compact_sched. */
        EV_COMPACT_SWITCH = 100004,
        EV_COMPACT_WAKING = 100020,
};

typedef struct {
        const char *name;
        guint number;
} TypedKind;
extern const TypedKind typed_kinds[];
extern const size_t n_typed_kinds;

#define expect(cond, ...)                     \
        do {                                  \
                if (!(cond))                  \
                        shortfall(__VA_ARGS__); \
        } while (0)

typedef struct {
        Tracebus__TracePacket *p;
        const guint8 *raw;
        gsize raw_len;
        gsize offset;
} Pkt;

typedef struct {
        guint32 cpu;
        guint64 ts;
        guint kind;                 /* EV_* */
        guint pkt;                  /* index into Trace.pkts */
        guint bundle;               /* index into Trace.bundles */
        guint32 pid;                /* FtraceEvent.pid (0 for compact entries) */
        bool has_ts, has_pid, order_ok;
        const guint8 *payload;      /* the event message, raw */
        gsize payload_len;
        const Tracebus__FtraceEvent *e;  /* protobuf-c view (NULL for compact) */
        guint ci;                   /* compact index */
} Ev;

typedef struct {
        guint pkt;
        const Tracebus__FtraceEventBundle *b;
        guint first_ev, n_ev;
        guint64 min_ts, max_ts;
} Bundle;

typedef struct {
        char *path;
        guint8 *data;
        gsize len;
        GArray *pkts;     /* Pkt */
        GArray *bundles;  /* Bundle */
        GArray *evs;      /* Ev, file order */
        bool torn;
        guint n_cpus;
        TraceReader reader;   /* holds the inflated compressed_packets, which packets point into */
        guint n_compressed;   /* packets of compressed_packets */
        guint64 bundle_field_bytes[16]; /* bytes per FtraceEventBundle field (15: others) */
        guint64 event_field_bytes[8];   /* bytes per FtraceEvent field 1..6 (7: the event message) */
} Trace;

#define PKT(t, i) (&g_array_index((t)->pkts, Pkt, (i)))

#define EV(t, i) (&g_array_index((t)->evs, Ev, (i)))

#define BUNDLE(t, i) (&g_array_index((t)->bundles, Bundle, (i)))

typedef struct {
        GHashTable *threads;   /* tid -> name (may be "") */
        GHashTable *tgid;      /* tid -> tgid */
        GHashTable *processes; /* pid -> Tracebus__ProcessTree__Process* (the last one) */
        GHashTable *names_later; /* tid -> name from ProcessTree packets after the first */
} Described;

typedef struct {
        bool closed;       /* ended by Stop/duration: tracing_disabled, FtraceStats END, TraceStats */
        bool wrapped;      /* a ring buffer that overwrote: first bundles follow overwritten ones */
        bool describe_all; /* every pid in the events must be in a ProcessTree */
} CheckOpts;

/* Markers of a run, by number. */
typedef struct {
        guint n;
        guint64 *ts;     /* 0: absent */
        guint *count;
        guint *bundle;
        guint out_of_order;
} Markers;

typedef struct {
        Client c;
        char *path;      /* the session object */
        char *out;       /* the trace file */
        char *instance;  /* its tracefs instance directory */
        guint64 recording_at; /* BOOTTIME once the session records */
} Rec;

const char *kind_name(guint kind);

guint typed_number(const char *name);

void shortfall(const char *fmt, ...) G_GNUC_PRINTF(1, 2);

void verdict(void);

void trace_clear(Trace *t);

/* Reads the file. A torn tail (a file read while recording) is allowed with
 * allow_torn; otherwise it is a shortfall. */
void trace_load(const char *path, bool allow_torn, Trace *t);

gint64 ev_int(const Ev *e, guint32 field, gint64 dflt);

char *ev_str(const Ev *e, guint32 field);

const Tracebus__FtraceEventBundle__CompactSched *ev_compact(const Trace *t, const Ev *e);

const char *compact_comm(const Tracebus__FtraceEventBundle__CompactSched *c, size_t n_idx,
                                const guint32 *idx, guint i);

/* The generic event's field, or NULL. */
const Tracebus__GenericFtraceEvent__Field *ev_generic_field(const Ev *e, const char *name);

const char *generic_name(const Ev *e);

bool generic_int(const Ev *e, const char *name, gint64 *ret);

void described_clear(Described *d);

void described_collect(const Trace *t, Described *d);

guint64 tracing_started_ts(const Trace *t);

guint64 tracing_disabled_ts(const Trace *t);

const Tracebus__TraceStats *last_trace_stats(const Trace *t);

void check_trace(const Trace *t, const CheckOpts *o);

/* Ftrace events in the file (full + compact entries). */
guint64 n_events(const Trace *t);

guint n_lost_bundles(const Trace *t, gint cpu);

/* Kernel loss over the trace from FtraceStats: overrun + commit overrun + dropped. */
guint64 ftrace_stats_lost(const Trace *t, gint cpu);

/* The service's own tracks (TrackDescriptor/TrackEvent) as every trace must have them;
 * the instants as "name@ts" strings into instants_out when given. */
void check_tracks(const Trace *t, GPtrArray *instants_out);

void markers_clear(Markers *m);

void markers_collect(const Trace *t, const char *tag, guint n, Markers *m);

guint markers_present(const Markers *m);

guint64 boottime(void);

void rec_clear(Rec *r);

/* Starts a session as user with a text config and an Output fd, held by its
 * client; returns once it records. */
void rec_start(Rec *r, const char *user, const char *name, const char *config);

guint64 stat_u64(GHashTable *st, const char *key);

/* Stop on the session's own connection; the stats. Also checks that
 * SessionEnded carries the same numbers. */
GHashTable *rec_stop(Rec *r);

/* Waits for the session to end by itself: the SessionEnded stats (with Reason). */
GHashTable *rec_wait_end(Rec *r, guint timeout_ms);

char *rec_get(Rec *r, const char *prop);

/* Loss accounting every Stop must satisfy. */
void check_stop_stats(GHashTable *st, const Trace *t, bool exact_events);

char *ftrace_config(const char *top, const char *const *events, const char *ftrace_extra);

int marker_open(const Rec *r);

void marker_write(int fd, const char *s);

void pin_to_cpu(int cpu, cpu_set_t *old);

/* perf bench sched pipe: a storm of sched_switch/sched_waking. With nice, it
 * leaves the recorder the CPU it needs. */
GPid storm_start(guint loops, bool nice);

void storm_wait(GPid pid);

/* Waits until the service has read (nearly) everything the kernel holds. */
void wait_caught_up(const Rec *r, guint timeout_ms);

/* A copy of a binary under a name of ours, executable by everyone. */
char *copy_binary(const char *src, const char *name);

char *self_comm(void);

pid_t gettid_(void);

/* A child named comm that waits (it dies with the test). */
pid_t idle_child(const char *comm);

void kill_reap(pid_t pid);

/* Sessions of a failed earlier case may be left: stop them. */
void case_begin(void);

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Trace, trace_clear)
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Described, described_clear)
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Markers, markers_clear)
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Rec, rec_clear)

/* Each case starts with case_begin(), in its own isolated test stack. */
#define RECORDER_WRAP(fn)             \
        static void case_##fn(void) { \
                case_begin();         \
                fn();                 \
        }
#define RECORDER_CASE(path, fn) tb_test_add_isolated("/bus/recorder/" path, case_##fn)
