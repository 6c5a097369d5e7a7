/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "trace-file.h"

#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <string.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <unistd.h>

#include "trace-reader.h"
#include "trace.pb-c.h"

#define SEQ_INCREMENTAL_STATE_CLEARED 1u

static void add_switch(TbTraceSummary *s, int pid, const char *comm) {
        g_hash_table_add(s->switch_pids, g_strdup_printf("%d %s", pid, comm ? comm : ""));
}

static void summarise_bundle(TbTraceSummary *s, const Tracebus__FtraceEventBundle *b) {
        s->n_ftrace_bundles++;
        if (b->has_lost_events && b->lost_events)
                s->n_lost_bundles++;
        for (size_t i = 0; i < b->n_event; i++) {
                const Tracebus__FtraceEvent *e = b->event[i];
                s->n_ftrace_events++;
                if (e->sched_switch) {
                        const Tracebus__SchedSwitchFtraceEvent *sw = e->sched_switch;
                        s->n_sched_switch++;
                        if (sw->has_next_pid)
                                add_switch(s, sw->next_pid, sw->next_comm);
                        if (sw->has_prev_pid)
                                add_switch(s, sw->prev_pid, sw->prev_comm);
                }
                if (e->sched_waking)
                        s->n_sched_waking++;
        }
        if (b->compact_sched) {
                const Tracebus__FtraceEventBundle__CompactSched *c = b->compact_sched;
                s->n_compact_switch += (guint) c->n_switch_next_pid;
                s->n_sched_waking += (guint) c->n_waking_pid;
                for (size_t i = 0; i < c->n_switch_next_pid; i++) {
                        const char *comm = NULL;
                        if (i < c->n_switch_next_comm_index && c->switch_next_comm_index[i] < c->n_intern_table)
                                comm = c->intern_table[c->switch_next_comm_index[i]];
                        add_switch(s, c->switch_next_pid[i], comm);
                }
        }
}

static void note_problem(TbTraceSummary *s, char *msg) {
        if (!s->first_problem)
                s->first_problem = msg;
        else
                g_free(msg);
}

static void summarise_packet(TbTraceSummary *s, const Tracebus__TracePacket *p, guint index) {
        guint32 seq = p->has_trusted_packet_sequence_id ? p->trusted_packet_sequence_id : 0;

        s->n_packets++;
        if (seq == 0) {
                s->all_have_sequence_id = false;
                note_problem(s, g_strdup_printf("packet %u has no trusted_packet_sequence_id", index));
        } else if (!g_hash_table_contains(s->seen_sequences, GUINT_TO_POINTER(seq))) {
                g_hash_table_add(s->seen_sequences, GUINT_TO_POINTER(seq));
                s->n_sequences++;
                if (!(p->has_first_packet_on_sequence && p->first_packet_on_sequence) ||
                    !(p->has_sequence_flags && (p->sequence_flags & SEQ_INCREMENTAL_STATE_CLEARED))) {
                        s->first_packets_flagged = false;
                        note_problem(s, g_strdup_printf("packet %u, the first of sequence %u, has "
                                                        "first_packet_on_sequence=%d sequence_flags=%u",
                                                        index, seq, p->first_packet_on_sequence,
                                                        p->sequence_flags));
                }
        }
        if (p->clock_snapshot) {
                s->has_clock_snapshot = true;
                if (p->clock_snapshot->has_primary_trace_clock &&
                    p->clock_snapshot->primary_trace_clock == TRACEBUS__BUILTIN_CLOCK__BUILTIN_CLOCK_BOOTTIME)
                        s->clock_is_boottime = true;
        }
        if (p->system_info) {
                s->has_system_info = true;
                if (p->system_info->utsname && p->system_info->utsname->sysname &&
                    p->system_info->utsname->sysname[0])
                        s->has_utsname = true;
        }
        if (p->service_event && p->service_event->has_tracing_started && p->service_event->tracing_started)
                s->has_tracing_started = true;
        if (p->trace_config)
                s->has_trace_config = true;
        if (p->ftrace_events)
                summarise_bundle(s, p->ftrace_events);
}

static void summary_init(TbTraceSummary *s) {
        memset(s, 0, sizeof *s);
        s->all_have_sequence_id = true;
        s->first_packets_flagged = true;
        s->switch_pids = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        s->seen_sequences = g_hash_table_new(g_direct_hash, g_direct_equal);
}

GBytes *tb_zlib_inflate(const guint8 *data, gsize len, GError **error) {
        uint8_t *out = NULL;
        size_t out_len = 0;
        int r = trace_zlib_inflate(data, len, &out, &out_len);

        if (r < 0) {
                g_set_error(error, G_IO_ERROR, g_io_error_from_errno(-r), "not one whole zlib stream: %s",
                            g_strerror(-r));
                return NULL;
        }
        return g_bytes_new_with_free_func(out, out_len, free, out);
}

GBytes *tb_zlib_inflate_or_fail(const guint8 *data, gsize len) {
        g_autoptr(GError) error = NULL;
        GBytes *out = tb_zlib_inflate(data, len, &error);

        g_assert_no_error(error);
        return out;
}

static bool reader_error(int r, const TraceReader *reader, guint index, GError **error) {
        if (r == -EPROTO)
                g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                            "packet %u: compressed_packets do not inflate to whole packets "
                            "(or hold compressed_packets)", index);
        else
                g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                            "offset %" G_GSIZE_FORMAT ": packet %u is torn or not a Trace.packet: %s",
                            trace_reader_offset(reader), index, g_strerror(-r));
        return false;
}

static bool foreach_packet(TraceReader *reader, TbPacketFunc fn, gpointer userdata, gsize *ret_whole_len,
                           GError **error) {
        TraceRawPacket k;
        guint index = 0;
        int r;

        while ((r = trace_reader_next(reader, &k)) > 0) {
                Tracebus__TracePacket *p = NULL;

                if (trace_packet_unpack(&k, &p) < 0) {
                        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                                    "offset %" G_GSIZE_FORMAT ": packet %u (%" G_GSIZE_FORMAT
                                    " bytes) does not unpack as TracePacket",
                                    k.offset, index, k.len);
                        return false;
                }
                fn(p, &k, index++, userdata);
                tracebus__trace_packet__free_unpacked(p, NULL);
                if (ret_whole_len)
                        *ret_whole_len = trace_reader_offset(reader);
        }
        if (r < 0)
                return reader_error(r, reader, index, error);
        return true;
}

bool tb_trace_foreach_packet(const guint8 *data, gsize len, TbPacketFunc fn, gpointer userdata, gsize *ret_whole_len,
                             GError **error) {
        TraceReader reader;
        bool ok;

        if (ret_whole_len)
                *ret_whole_len = 0;
        trace_reader_init(&reader, data, len, 0);
        ok = foreach_packet(&reader, fn, userdata, ret_whole_len, error);
        trace_reader_done(&reader);
        return ok;
}

static void summarise_one(const Tracebus__TracePacket *p, const TraceRawPacket *raw, guint index, gpointer userdata) {
        summarise_packet(userdata, p, index);
}

bool tb_trace_parse(const guint8 *data, gsize len, TbTraceSummary *ret, GError **error) {
        TraceReader reader;
        TbTraceSummary s;
        bool ok;

        summary_init(&s);
        trace_reader_init(&reader, data, len, 0);
        ok = foreach_packet(&reader, summarise_one, &s, NULL, error);
        s.n_compressed_packets = reader.n_compressed;
        s.n_inflated_bytes = reader.n_inflated_bytes;
        trace_reader_done(&reader);
        if (!ok) {
                tb_trace_summary_clear(&s);
                return false;
        }
        *ret = s;
        return true;
}

bool tb_trace_file_read(const char *path, TbTraceSummary *ret, GError **error) {
        g_autofree char *data = NULL;
        gsize len;

        if (!g_file_get_contents(path, &data, &len, error))
                return false;
        if (!tb_trace_parse((const guint8 *) data, len, ret, error)) {
                g_prefix_error(error, "%s (%" G_GSIZE_FORMAT " bytes): ", path, len);
                return false;
        }
        return true;
}

void tb_trace_summary_clear(TbTraceSummary *s) {
        g_clear_pointer(&s->switch_pids, g_hash_table_unref);
        g_clear_pointer(&s->seen_sequences, g_hash_table_unref);
        g_clear_pointer(&s->first_problem, g_free);
}

bool tb_trace_summary_has_switch(const TbTraceSummary *s, int pid, const char *comm) {
        GHashTableIter it;
        gpointer key;
        g_autofree char *prefix = g_strdup_printf("%d ", pid);

        if (comm) {
                g_autofree char *k = g_strdup_printf("%d %s", pid, comm);
                return g_hash_table_contains(s->switch_pids, k);
        }
        g_hash_table_iter_init(&it, s->switch_pids);
        while (g_hash_table_iter_next(&it, &key, NULL))
                if (g_str_has_prefix(key, prefix))
                        return true;
        return false;
}

char *tb_trace_summary_describe(const TbTraceSummary *s) {
        return g_strdup_printf("%u packets, %u sequences, %u bundles (%u with lost events), %u ftrace events, "
                               "%u sched_switch + %u compact switches, %u wakings, %u distinct switch pid/comm; "
                               "clock_snapshot=%d boottime=%d system_info=%d utsname=%d tracing_started=%d "
                               "trace_config=%d seq_ids=%d first_flags=%d%s%s",
                               s->n_packets, s->n_sequences, s->n_ftrace_bundles, s->n_lost_bundles,
                               s->n_ftrace_events, s->n_sched_switch, s->n_compact_switch, s->n_sched_waking,
                               s->switch_pids ? g_hash_table_size(s->switch_pids) : 0, s->has_clock_snapshot,
                               s->clock_is_boottime, s->has_system_info, s->has_utsname, s->has_tracing_started,
                               s->has_trace_config, s->all_have_sequence_id, s->first_packets_flagged,
                               s->first_problem ? "; " : "", s->first_problem ? s->first_problem : "");
}

bool tb_trace_protoc_decode(const char *source_dir, const char *path, char **ret_text, GError **error) {
        g_autofree char *proto_path = g_strdup_printf("--proto_path=%s/protos", source_dir);
        const char *argv[] = { "protoc", proto_path, "--decode=tracebus.Trace", "trace.proto", NULL };
        g_autoptr(GBytes) out = NULL, err = NULL;
        int fd, status = 0;

        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
                g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno), "open %s: %s", path, g_strerror(errno));
                return false;
        }
        {
                g_autoptr(GSubprocessLauncher) l = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDOUT_PIPE |
                                                                             G_SUBPROCESS_FLAGS_STDERR_PIPE);
                g_autoptr(GSubprocess) p = NULL;

                g_subprocess_launcher_take_stdin_fd(l, fd);
                p = g_subprocess_launcher_spawnv(l, argv, error);
                if (!p)
                        return false;
                if (!g_subprocess_communicate(p, NULL, NULL, &out, &err, error))
                        return false;
                status = g_subprocess_get_status(p);
        }
        if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
                g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "protoc --decode failed (status 0x%x): %.*s",
                            status, (int) MIN(g_bytes_get_size(err), 2000), (const char *) g_bytes_get_data(err, NULL));
                return false;
        }
        if (ret_text) {
                gsize n = g_bytes_get_size(out);
                char *t = g_malloc(n + 1);
                memcpy(t, g_bytes_get_data(out, NULL), n);
                t[n] = 0;
                *ret_text = t;
        }
        return true;
}
