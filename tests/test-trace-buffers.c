/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit suite: TraceConfig.buffers as configured. The writer's
 * data buffers, each with its own size and fill policy, a small one never evicted by a
 * large ftrace stream; where each data source writes (target_buffer, target_buffer_name);
 * a recorder without ftrace (no tracefs instance) writing what other threads submit into
 * their buffers, with TraceStats per buffer read back field by field; a ring's flush
 * through the writer's stage. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

/* Before glib.h, which redefines MIN and MAX over macro.h's. */
#include "recorder/recorder.h"     /* the service's, not tests/recorder.h */
#include "session-config.h"
#include "trace-writer.h"

#include <glib.h>

#include "trace-file.h"

#define COUNTER_UUID_BASE 0x7b000000u

static GBytes *read_back(int fd) {
        off_t size = lseek(fd, 0, SEEK_END);
        guint8 *buf = g_malloc(size ?: 1);

        g_assert_cmpint(pread(fd, buf, size, 0), ==, size);
        return g_bytes_new_take(buf, size);
}

/* A counter packet: its track says which buffer it was meant for, its value its order. */
static void counter_packet(Tracebus__TracePacket *p, Tracebus__TrackEvent *te, uint32_t buffer, int64_t value) {
        tracebus__trace_packet__init(p);
        tracebus__track_event__init(te);
        te->has_type = te->has_track_uuid = te->has_counter_value = true;
        te->type = TRACEBUS__TRACK_EVENT__TYPE__TYPE_COUNTER;
        te->track_uuid = COUNTER_UUID_BASE + buffer;
        te->counter_value = value;
        p->has_timestamp = true;
        p->timestamp = 1000 + (uint64_t) value;
        p->track_event = te;
}

static void append_counter(TraceWriter *w, uint32_t buffer, int64_t value) {
        Tracebus__TracePacket p;
        Tracebus__TrackEvent te;

        counter_packet(&p, &te, buffer, value);
        g_assert_cmpint(trace_writer_append_data_to(w, buffer, &p, TRACE_SEQUENCE_PROCESS_STATS), ==, 0);
}

static void append_bundle(TraceWriter *w, uint32_t cpu) {
        Tracebus__FtraceEventBundle b = TRACEBUS__FTRACE_EVENT_BUNDLE__INIT;
        guint8 buf[64];
        size_t len;

        b.has_cpu = true;
        b.cpu = cpu;
        b.has_previous_bundle_end_timestamp = true;
        b.previous_bundle_end_timestamp = 123456789;
        len = tracebus__ftrace_event_bundle__pack(&b, buf);
        g_assert_cmpint(trace_writer_append_ftrace_bundle(w, buf, len, 1), ==, 0);
}

typedef struct Seen {
        guint bundles;
        guint counters[2];
        int64_t first_value[2], last_value[2];
} Seen;

static void count_packet(const Tracebus__TracePacket *p, const TraceRawPacket *raw, guint index, gpointer userdata) {
        Seen *s = userdata;

        s->bundles += p->ftrace_events != NULL;
        if (p->track_event && p->track_event->track_uuid >= COUNTER_UUID_BASE &&
            p->track_event->track_uuid < COUNTER_UUID_BASE + 2) {
                guint b = (guint) (p->track_event->track_uuid - COUNTER_UUID_BASE);

                if (s->counters[b]++ == 0)
                        s->first_value[b] = p->track_event->counter_value;
                s->last_value[b] = p->track_event->counter_value;
        }
}

static void read_seen(int fd, Seen *s) {
        g_autoptr(GBytes) bytes = read_back(fd);
        g_autoptr(GError) error = NULL;
        gsize len;
        const guint8 *data = g_bytes_get_data(bytes, &len);

        *s = (Seen) {};
        g_assert_true(tb_trace_foreach_packet(data, len, count_packet, s, NULL, &error));
        g_assert_no_error(error);
}

/* A small RING buffer of counters beside a large ftrace stream that wraps its own
 * buffer many times: the counters are all there; then a small DISCARD buffer keeps its
 * first packets and refuses the rest, and each buffer's figures say so. */
static void test_writer_two_buffers(void) {
        const TraceWriterBufferConfig configs[] = {
                { .capacity = 8192 },                          /* ftrace, RING */
                { .capacity = 1024, .discard = true },         /* counters, DISCARD */
        };
        const TraceWriterBufferStats *s0, *s1;
        Tracebus__TracePacket meta = TRACEBUS__TRACE_PACKET__INIT;
        Tracebus__SystemInfo info = TRACEBUS__SYSTEM_INFO__INIT;
        TraceWriter w;
        Seen seen;
        guint counters = 0;
        int fd = memfd_create("trace", MFD_CLOEXEC);

        g_assert_cmpint(fd, >=, 0);
        trace_writer_init(&w, fd, TRACE_WRITER_RING, 4096, 0);
        g_assert_cmpint(trace_writer_set_buffers(&w, configs, 2, 2), ==, -EINVAL);
        g_assert_cmpint(trace_writer_set_buffers(&w, configs, 2, 0), ==, 0);
        g_assert_cmpint(w.mode, ==, TRACE_WRITER_RING);
        g_assert_cmpint(w.buffers[1].mode, ==, TRACE_WRITER_DISCARD);
        meta.system_info = &info;
        g_assert_cmpint(trace_writer_append_meta(&w, &meta, TRACE_SEQUENCE_FTRACE), ==, 0);
        /* The first packet of a sequence is metadata: the counters' own start at the next. */
        append_counter(&w, 1, -1);

        for (int i = 0; i < 4000; i++) {
                append_bundle(&w, (uint32_t) (i % 4));
                if (i % 1000 == 0)
                        append_counter(&w, 1, counters++);
        }
        g_assert_cmpuint(w.buffers[0].stats.packets_overwritten, >, 3000);
        g_assert_cmpuint(w.buffers[1].stats.packets_overwritten, ==, 0);
        g_assert_cmpuint(w.buffers[1].stats.packets_written, ==, 4);
        /* Now the counters' buffer fills: DISCARD keeps the oldest. */
        for (int i = 0; i < 200; i++)
                append_counter(&w, 1, counters++);
        g_assert_cmpint(trace_writer_append_data_to(&w, 2, &meta, TRACE_SEQUENCE_SERVICE), ==, -EINVAL);
        g_assert_cmpint(trace_writer_flush(&w), ==, 0);

        s0 = &w.buffers[0].stats;
        s1 = &w.buffers[1].stats;
        read_seen(fd, &seen);
        /* Ftrace: 4000 bundles in, what 8 KiB holds out, the rest overwritten. */
        g_assert_cmpuint(s0->packets_written, ==, 4000);
        g_assert_cmpuint(s0->packets_overwritten + s0->packets_read, ==, 4000);
        g_assert_cmpuint(s0->bytes_overwritten + s0->bytes_read, ==, s0->bytes_written);
        g_assert_cmpuint(s0->bytes_read, <=, 8192);
        g_assert_cmpuint(s0->write_wrap_count, ==, s0->bytes_written / 8192);
        g_assert_cmpuint(s0->packets_discarded, ==, 0);
        g_assert_cmpuint(seen.bundles, ==, s0->packets_read);
        /* Counters: the first packet (metadata) plus all the buffer took, in order, the
         * four written during the stream first. */
        g_assert_cmpuint(s1->packets_overwritten, ==, 0);
        g_assert_cmpuint(s1->packets_discarded, >, 0);
        g_assert_cmpuint(s1->packets_written + s1->packets_discarded, ==, 204);
        g_assert_cmpuint(s1->bytes_read, ==, s1->bytes_written);
        g_assert_cmpuint(s1->bytes_written, <=, 1024);
        g_assert_cmpuint(s1->write_wrap_count, ==, 0);
        g_assert_cmpuint(seen.counters[1], ==, 1 + s1->packets_written);
        g_assert_cmpint(seen.first_value[1], ==, -1);
        g_assert_cmpint(seen.last_value[1], ==, (int64_t) s1->packets_written - 1);
        /* The totals are the sums. */
        g_assert_cmpuint(w.stats.packets_overwritten, ==, s0->packets_overwritten);
        g_assert_cmpuint(w.stats.packets_discarded, ==, s1->packets_discarded);
        trace_writer_done(&w);
        close(fd);
}

/* write_into_file: each buffer holds its size between writes; the caller writes when
 * one is full, and nothing is dropped. */
static void test_writer_stream_full(void) {
        const TraceWriterBufferConfig configs[] = { { .capacity = 1 << 20 }, { .capacity = 512 } };
        TraceWriter w;
        int fd = memfd_create("trace", MFD_CLOEXEC), n = 0;

        trace_writer_init(&w, fd, TRACE_WRITER_STREAM, 0, 0);
        g_assert_cmpint(trace_writer_set_buffers(&w, configs, 2, 0), ==, 0);
        g_assert_cmpint(w.buffers[1].mode, ==, TRACE_WRITER_STREAM);
        append_counter(&w, 1, 0);
        while (!trace_writer_buffer_full(&w))
                append_counter(&w, 1, ++n);
        g_assert_cmpuint(w.buffers[1].data_len, >=, 512);
        g_assert_cmpuint(w.buffers[0].data_len, ==, 0);
        g_assert_cmpint(trace_writer_flush(&w), ==, 0);
        g_assert_false(trace_writer_buffer_full(&w));
        g_assert_cmpuint(w.buffers[1].stats.packets_read, ==, (guint64) n);
        g_assert_cmpuint(w.buffers[1].stats.bytes_read, ==, w.buffers[1].stats.bytes_written);
        g_assert_cmpuint(w.stats.packets_discarded + w.stats.packets_overwritten, ==, 0);
        trace_writer_done(&w);
        close(fd);
}

static void load_text(const char *text, SessionConfig *c, int expect, const char *error_part) {
        _cleanup_(trace_config_freep) Tracebus__TraceConfig *tc = NULL;
        g_autofree char *error = NULL;

        g_assert_cmpint(session_config_parse_text(text, &tc, NULL), ==, 0);
        *c = (SessionConfig) {};
        g_assert_cmpint(session_config_load_buffers(tc, c, &error), ==, expect);
        if (error_part) {
                g_assert_nonnull(error);
                g_assert_nonnull(strstr(error, error_part));
        }
}

#define TWO_BUFFERS "buffers { size_kb: 64 fill_policy: RING_BUFFER } " \
                    "buffers { size_kb: 8 fill_policy: DISCARD name: \"stats\" } "

static void test_config_routing(void) {
        SessionConfig c;

        /* By index. */
        load_text(TWO_BUFFERS "data_sources { config { name: \"linux.process_stats\" target_buffer: 0 } } "
                  "data_sources { config { name: \"linux.ftrace\" target_buffer: 1 } }", &c, 0, NULL);
        g_assert_cmpuint(c.n_buffers, ==, 2);
        g_assert_cmpuint(c.buffers[0].size_kb, ==, 64);
        g_assert_false(c.buffers[0].discard);
        g_assert_cmpuint(c.buffers[1].size_kb, ==, 8);
        g_assert_true(c.buffers[1].discard);
        g_assert_cmpuint(c.ftrace_buffer, ==, 1);
        g_assert_cmpuint(c.trace_buffer_kb, ==, 72);
        g_assert_true(c.discard_when_full);
        session_config_done(&c);

        /* By name, which wins over the index. */
        load_text(TWO_BUFFERS "data_sources { config { name: \"linux.ftrace\" target_buffer: 0 "
                  "target_buffer_name: \"stats\" } }", &c, 0, NULL);
        g_assert_cmpuint(c.ftrace_buffer, ==, 1);
        session_config_done(&c);

        /* None: the default buffer. */
        load_text("data_sources { config { name: \"linux.ftrace\" } }", &c, 0, NULL);
        g_assert_cmpuint(c.n_buffers, ==, 1);
        g_assert_cmpuint(c.buffers[0].size_kb, ==, SESSION_DEFAULT_TRACE_BUFFER_KB);
        g_assert_cmpuint(c.ftrace_buffer, ==, 0);
        session_config_done(&c);

        /* size_kb 0: the default, with a warning. */
        load_text("buffers { fill_policy: DISCARD }", &c, 0, NULL);
        g_assert_cmpuint(c.buffers[0].size_kb, ==, SESSION_DEFAULT_TRACE_BUFFER_KB);
        g_assert_nonnull(c.warnings);
        g_assert_nonnull(strstr(c.warnings[0], "buffers[0]"));
        session_config_done(&c);
}

static void test_config_errors(void) {
        SessionConfig c;

        load_text(TWO_BUFFERS "data_sources { config { name: \"linux.sys_stats\" target_buffer: 2 } }", &c, -EINVAL,
                  "data source 'linux.sys_stats': target_buffer 2 does not exist");
        session_config_done(&c);
        load_text("data_sources { config { name: \"linux.process_stats\" target_buffer: 1 } }", &c, -EINVAL,
                  "'linux.process_stats'");
        session_config_done(&c);
        load_text(TWO_BUFFERS "data_sources { config { name: \"linux.ftrace\" target_buffer_name: \"nope\" } }", &c,
                  -EINVAL, "target_buffer_name 'nope' names no buffer");
        session_config_done(&c);
        load_text("buffers { size_kb: 200000 } buffers { size_kb: 100000 }", &c, -EINVAL, "above the limit");
        session_config_done(&c);
}

/* The data sources apps record: kept with their target buffer, their config as written and
 * their producer name filters; a filter over its bounds is refused before it is compiled. */
static void load_producers(const char *text, SessionConfig *c, int expect, const char *error_part) {
        _cleanup_(trace_config_freep) Tracebus__TraceConfig *tc = NULL;
        g_autofree char *error = NULL;

        g_assert_cmpint(session_config_parse_text(text, &tc, NULL), ==, 0);
        *c = (SessionConfig) {};
        g_assert_cmpint(session_config_load_producers(tc, c, &error), ==, expect);
        if (error_part) {
                g_assert_nonnull(error);
                g_assert_nonnull(strstr(error, error_part));
        }
}

static void test_config_producer_sources(void) {
        _cleanup_(trace_config_freep) Tracebus__TraceConfig *back = NULL;
        SessionConfig c;
        Tracebus__DataSourceConfig *ds;

        load_producers(TWO_BUFFERS "data_sources { config { name: \"linux.sys_stats\" } } "
                       "data_sources { config { name: \"track_event\" target_buffer: 1 "
                       "track_event_config { enabled_categories: \"rendering\" } } "
                       "producer_name_filter: \"example\" producer_name_regex_filter: \"ex.*\" } "
                       "data_sources { config { name: \"com.example.custom_data_source\" } }", &c, 0, NULL);
        g_assert_cmpuint(c.n_producer_sources, ==, 2);
        g_assert_cmpstr(c.producer_sources[0].name, ==, "track_event");
        g_assert_cmpuint(c.producer_sources[0].buffer, ==, 1);
        g_assert_true(session_producer_source_accepts(&c.producer_sources[0], "example"));
        g_assert_true(session_producer_source_accepts(&c.producer_sources[0], "exactly"));
        g_assert_false(session_producer_source_accepts(&c.producer_sources[0], "other"));
        g_assert_true(session_producer_source_accepts(&c.producer_sources[1], "other"));
        ds = tracebus__data_source_config__unpack(NULL, c.producer_sources[0].config_len, c.producer_sources[0].config);
        g_assert_nonnull(ds);
        g_assert_cmpstr(ds->track_event_config->enabled_categories[0], ==, "rendering");
        tracebus__data_source_config__free_unpacked(ds, NULL);
        session_config_done(&c);

        load_producers("data_sources { config { name: \"track_event\" } producer_name_regex_filter: \"(((a{99}){99}){99})\" }",
                       &c, -EINVAL, "producer_name_regex_filter 0");
        session_config_done(&c);
        load_producers("data_sources { config { name: \"gpu.renderstages\" target_buffer: 3 } }", &c, -EINVAL,
                       "target_buffer 3 does not exist");
        session_config_done(&c);
        load_producers("data_sources { config { name: \"android.power\" } }", &c, 0, NULL);
        g_assert_cmpuint(c.n_producer_sources, ==, 0);
        session_config_done(&c);
}

/* A packet as a poller hands it over: packed, no sequence id. */
static void submit_counter(Recorder *rec, uint32_t sequence_id, uint32_t buffer, int64_t value) {
        Tracebus__TracePacket p;
        Tracebus__TrackEvent te;
        guint8 buf[128];
        size_t len;

        counter_packet(&p, &te, buffer, value);
        len = tracebus__trace_packet__pack(&p, buf);
        g_assert_cmpint(recorder_submit_packet(rec, sequence_id, buffer, false, buf, len), ==, 0);
}

typedef struct Whole {
        Seen seen;
        guint ftrace_stats, clock_snapshots, system_info, trace_config, trace_stats;
        guint service_instants;           /* the tracebus track's, in buffer 0 */
        guint n_buffer_stats;
        uint32_t total_buffers;
        Tracebus__TraceStats__BufferStats buffer[2];
} Whole;

static void whole_packet(const Tracebus__TracePacket *p, const TraceRawPacket *raw, guint index, gpointer userdata) {
        Whole *w = userdata;

        count_packet(p, raw, index, &w->seen);
        w->ftrace_stats += p->ftrace_stats != NULL;
        w->clock_snapshots += p->clock_snapshot != NULL;
        w->system_info += p->system_info != NULL;
        w->trace_config += p->trace_config != NULL;
        w->service_instants += p->track_event && p->trusted_packet_sequence_id == TRACE_SEQUENCE_TRACKS;
        if (!p->trace_stats)
                return;
        w->trace_stats++;
        w->total_buffers = p->trace_stats->total_buffers;
        w->n_buffer_stats = (guint) p->trace_stats->n_buffer_stats;
        for (size_t i = 0; i < MIN(p->trace_stats->n_buffer_stats, (size_t) 2); i++)
                w->buffer[i] = *p->trace_stats->buffer_stats[i];
}

static void wait_done(Recorder *rec) {
        struct pollfd pfd = { .fd = recorder_done_fd(rec), .events = POLLIN };

        g_assert_cmpint(poll(&pfd, 1, 30000), ==, 1);
}

/* A config of polling data sources only: no tracefs instance, and still a whole trace
 * (clocks, system info, the config) with each source's packets in its own buffer and
 * TraceStats per buffer, field by field. */
static void test_recorder_without_ftrace(void) {
        _cleanup_(trace_config_freep) Tracebus__TraceConfig *tc = NULL;
        _cleanup_(recorder_freep) Recorder *rec = NULL;
        g_autoptr(GBytes) bytes = NULL;
        g_autoptr(GError) error = NULL;
        const Tracebus__TraceStats__BufferStats *b0, *b1;
        SessionConfig c = {};
        Whole w = {};
        const guint8 *data;
        gsize len;
        int fd = memfd_create("trace", MFD_CLOEXEC), err = 0;

        g_assert_cmpint(session_config_parse_text(TWO_BUFFERS
                        "data_sources { config { name: \"linux.process_stats\" target_buffer_name: \"stats\" } } "
                        "data_sources { config { name: \"linux.sys_stats\" target_buffer: 0 } }", &tc, NULL), ==, 0);
        g_assert_cmpint(session_config_load_buffers(tc, &c, NULL), ==, 0);
        c.drain_period_ms = 10;
        c.trace_config_len = tracebus__trace_config__get_packed_size(tc);
        c.trace_config = g_malloc(c.trace_config_len);
        tracebus__trace_config__pack(tc, c.trace_config);

        g_assert_cmpint(recorder_new(&c, NULL, dup(fd), &rec), ==, 0);
        g_assert_cmpint(recorder_start(rec, NULL), ==, 0);
        /* The first packet of each sequence goes into the metadata. */
        for (int i = 0; i < 500; i++)
                submit_counter(rec, TRACE_SEQUENCE_PROCESS_STATS, 1, i);
        for (int i = 0; i < 51; i++)
                submit_counter(rec, TRACE_SEQUENCE_SYS_STATS, 0, i);
        g_usleep(50 * 1000);
        recorder_stop(rec);
        wait_done(rec);
        g_assert_cmpint(recorder_join(rec, &err), ==, RECORDER_END_STOPPED);
        g_assert_cmpint(err, ==, 0);
        session_config_done(&c);

        bytes = read_back(fd);
        data = g_bytes_get_data(bytes, &len);
        g_assert_true(tb_trace_foreach_packet(data, len, whole_packet, &w, NULL, &error));
        g_assert_no_error(error);
        g_assert_cmpuint(w.seen.bundles, ==, 0);
        g_assert_cmpuint(w.ftrace_stats, ==, 0);
        g_assert_cmpuint(w.clock_snapshots, >=, 2);
        g_assert_cmpuint(w.system_info, ==, 1);
        g_assert_cmpuint(w.trace_config, ==, 1);
        g_assert_cmpuint(w.trace_stats, ==, 1);
        g_assert_cmpuint(w.total_buffers, ==, 2);
        g_assert_cmpuint(w.n_buffer_stats, ==, 2);
        b0 = &w.buffer[0];
        b1 = &w.buffer[1];
        /* Buffer 0, 64 KiB RING: sys_stats' 50 data packets, all kept, and the service's
         * own instants ("started", "stopped"). */
        g_assert_cmpuint(w.service_instants, >=, 2);
        g_assert_true(b0->has_buffer_size && b0->has_bytes_written && b0->has_bytes_overwritten &&
                      b0->has_bytes_read && b0->has_chunks_written && b0->has_chunks_overwritten &&
                      b0->has_chunks_discarded && b0->has_chunks_read && b0->has_write_wrap_count);
        g_assert_cmpuint(b0->buffer_size, ==, 64 * 1024);
        g_assert_cmpuint(b0->chunks_written, ==, 50 + w.service_instants);
        g_assert_cmpuint(b0->chunks_read, ==, 50 + w.service_instants);
        g_assert_cmpuint(b0->bytes_read, ==, b0->bytes_written);
        g_assert_cmpuint(b0->bytes_overwritten + b0->chunks_overwritten + b0->chunks_discarded, ==, 0);
        g_assert_cmpuint(b0->write_wrap_count, ==, 0);
        g_assert_cmpuint(w.seen.counters[0], ==, 51);
        /* Buffer 1, 8 KiB DISCARD: process_stats' first packets, the rest refused. */
        g_assert_cmpuint(b1->buffer_size, ==, 8 * 1024);
        g_assert_cmpuint(b1->bytes_written, <=, 8 * 1024);
        g_assert_cmpuint(b1->chunks_discarded, >, 0);
        g_assert_cmpuint(b1->chunks_written + b1->chunks_discarded, ==, 499);
        g_assert_cmpuint(b1->chunks_read, ==, b1->chunks_written);
        g_assert_cmpuint(b1->bytes_read, ==, b1->bytes_written);
        g_assert_cmpuint(b1->bytes_overwritten + b1->chunks_overwritten, ==, 0);
        g_assert_cmpuint(w.seen.counters[1], ==, 1 + b1->chunks_written);
        g_assert_cmpint(w.seen.last_value[1], ==, (int64_t) b1->chunks_written);
        close(fd);
}

/* A bundle of @len bytes (20,000 to 2 MiB): field 15 (unknown to the decoder), length-
 * delimited, filled with @fill. */
static void append_big_bundle(TraceWriter *w, size_t len, guint8 fill) {
        g_autofree guint8 *buf = g_malloc(len);
        size_t body = len - 4;

        g_assert_true(len >= 20000 && len < (1u << 21));
        buf[0] = (15 << 3) | 2;
        buf[1] = 0x80 | (body & 0x7f);
        buf[2] = 0x80 | ((body >> 7) & 0x7f);
        buf[3] = (guint8) (body >> 14);
        memset(buf + 4, fill, body);
        g_assert_cmpint(trace_writer_append_ftrace_bundle(w, buf, len, 1), ==, 0);
}

/* 5.4 MB of bundles, one of them larger than the writer's 1 MiB stage, into @fd. */
static void big_writer(TraceWriter *w, int fd, TraceWriterMode mode) {
        Tracebus__TracePacket meta = TRACEBUS__TRACE_PACKET__INIT;
        Tracebus__SystemInfo info = TRACEBUS__SYSTEM_INFO__INIT;

        trace_writer_init(w, fd, mode, mode == TRACE_WRITER_STREAM ? 0 : 16 << 20, 0);
        meta.system_info = &info;
        g_assert_cmpint(trace_writer_append_meta(w, &meta, TRACE_SEQUENCE_FTRACE), ==, 0);
        for (unsigned i = 0; i < 120; i++)
                append_big_bundle(w, i == 60 ? 3u << 19 : 20000 + 397 * i, (guint8) i);
        g_assert_cmpuint(w->stats.packets_overwritten, ==, 0);
}

/* Stop of a ring: its chunks go out through the writer's stage of 1 MiB, several stages
 * and a chunk larger than one here, and the file is byte for byte what a stream writer
 * makes of the same packets. A write cut short inside a stage (RLIMIT_FSIZE, as ENOSPC
 * on a full disk) leaves a file of whole packets, as long as the count says. */
static void test_ring_staged_flush(void) {
        g_autoptr(GBytes) ring = NULL, stream = NULL, cut = NULL;
        struct rlimit old, lim;
        TraceWriter w[3];
        int fds[3];
        Seen seen;

        for (int i = 0; i < 3; i++) {
                fds[i] = memfd_create("trace", MFD_CLOEXEC);
                g_assert_cmpint(fds[i], >=, 0);
                big_writer(&w[i], fds[i], i == 1 ? TRACE_WRITER_STREAM : TRACE_WRITER_RING);
        }
        g_assert_cmpint(trace_writer_flush(&w[0]), ==, 0);
        g_assert_cmpint(trace_writer_flush(&w[1]), ==, 0);
        ring = read_back(fds[0]);
        stream = read_back(fds[1]);
        g_assert_cmpuint(g_bytes_get_size(ring), >, 5u << 20);
        g_assert_true(g_bytes_equal(ring, stream));
        g_assert_cmpuint(w[0].stats.bytes_written, ==, g_bytes_get_size(ring));
        read_seen(fds[0], &seen);
        g_assert_cmpuint(seen.bundles, ==, 120);

        signal(SIGXFSZ, SIG_IGN);
        g_assert_cmpint(getrlimit(RLIMIT_FSIZE, &old), ==, 0);
        /* Past the large chunk, inside the stage after it. */
        lim = (struct rlimit) { .rlim_cur = (4u << 20) + 1000, .rlim_max = old.rlim_max };
        g_assert_cmpint(setrlimit(RLIMIT_FSIZE, &lim), ==, 0);
        g_assert_cmpint(trace_writer_flush(&w[2]), ==, -EFBIG);
        g_assert_cmpint(setrlimit(RLIMIT_FSIZE, &old), ==, 0);
        cut = read_back(fds[2]);
        g_assert_cmpuint(w[2].stats.bytes_written, ==, g_bytes_get_size(cut));
        g_assert_cmpuint(g_bytes_get_size(cut), >, 3u << 20);
        g_assert_cmpuint(g_bytes_get_size(cut), <, lim.rlim_cur);
        g_assert_cmpint(memcmp(g_bytes_get_data(cut, NULL), g_bytes_get_data(ring, NULL), g_bytes_get_size(cut)), ==, 0);
        read_seen(fds[2], &seen);
        g_assert_cmpuint(seen.bundles, >, 0);
        g_assert_cmpuint(seen.bundles, <, 120);
        for (int i = 0; i < 3; i++) {
                trace_writer_done(&w[i]);
                close(fds[i]);
        }
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/trace-buffers/writer-two-buffers", test_writer_two_buffers);
        g_test_add_func("/trace-buffers/writer-stream-full", test_writer_stream_full);
        g_test_add_func("/trace-buffers/ring-staged-flush", test_ring_staged_flush);
        g_test_add_func("/trace-buffers/config-routing", test_config_routing);
        g_test_add_func("/trace-buffers/config-errors", test_config_errors);
        g_test_add_func("/trace-buffers/config-producer-sources", test_config_producer_sources);
        g_test_add_func("/trace-buffers/recorder-without-ftrace", test_recorder_without_ftrace);
        return g_test_run();
}
