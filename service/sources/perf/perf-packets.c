/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * linux.perf's packets, as traced_perf writes them and trace_processor's perf importer
 * reads them: a first packet on the sequence (SEQ_INCREMENTAL_STATE_CLEARED, set by the
 * writer) with TracePacketDefaults.perf_sample_defaults naming the timebase; then per
 * read pass the new InternedData and the pass's PerfSamples, each with the sample's
 * BOOTTIME timestamp, cpu, pid, tid, cpu_mode, timebase_count and callstack_iid. Data
 * loss in a kernel ring is a PerfSample with kernel_records_lost.
 */
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "kernel/ksyms-cache.h"
#include "log.h"
#include "perf-packets.h"
#include "perf-helper.h"
#include "time-util.h"

static int submit(PerfWriter *w, Tracebus__TracePacket *packet, bool meta) {
        size_t len = tracebus__trace_packet__get_packed_size(packet);
        _cleanup_free_ uint8_t *buf = malloc(len ?: 1);

        if (!buf)
                return -ENOMEM;
        tracebus__trace_packet__pack(packet, buf);
        return recorder_submit_packet(w->rec, TRACE_SEQUENCE_PERF, w->config->target_buffer, meta, buf, len);
}

int perf_writer_init(PerfWriter *w, Recorder *rec, const PerfSection *c, uid_t owner_uid) {
        *w = (PerfWriter) { .rec = rec, .config = c };
        w->scope = (PerfScope) { .config = c, .owner_uid = owner_uid, .manage = c->manage };
        if (c->process_shard_count > 0 &&
            getrandom(&w->scope.chosen_shard, sizeof(w->scope.chosen_shard), 0) == sizeof(w->scope.chosen_shard))
                w->scope.chosen_shard %= c->process_shard_count;
        if (c->additional_cmdline_count > 0 &&
            !(w->scope.additional = calloc(c->additional_cmdline_count, sizeof(pid_t))))
                return -ENOMEM;
        w->intern.max_bytes = (size_t) c->max_memory_kb * 1024u;
        w->intern.manage = c->manage;
        /* User frames are named by tracebus-unwind as the owner, started by the first
         * sample that has some; its files count against the same cap. */
        if (c->user_frames) {
                w->intern.helper = malloc(sizeof(PerfHelper));
                if (!w->intern.helper)
                        return -ENOMEM;
                perf_helper_init(w->intern.helper, owner_uid, c->max_memory_kb);
        }
        if (c->kernel_frames && c->manage) {
                int r = ksyms_cache_get(/* retain= */ false, &w->intern.ksyms);
                if (r < 0) {
                        w->intern.ksyms = NULL;
                        (void) recorder_warn(rec, "linux.perf: kernel symbols unreadable (%s): kernel frames unnamed",
                                             strerror(-r));
                }
        }
        return 0;
}

int perf_writer_defaults(PerfWriter *w) {
        const PerfSection *c = w->config;
        Tracebus__TracePacket packet = TRACEBUS__TRACE_PACKET__INIT;
        Tracebus__TracePacketDefaults defaults = TRACEBUS__TRACE_PACKET_DEFAULTS__INIT;
        Tracebus__PerfSampleDefaults perf = TRACEBUS__PERF_SAMPLE_DEFAULTS__INIT;
        Tracebus__PerfEvents__Timebase tb = TRACEBUS__PERF_EVENTS__TIMEBASE__INIT;
        Tracebus__PerfEvents__Tracepoint tp = TRACEBUS__PERF_EVENTS__TRACEPOINT__INIT;

        tb.interval_case = c->freq ? TRACEBUS__PERF_EVENTS__TIMEBASE__INTERVAL_FREQUENCY
                                        : TRACEBUS__PERF_EVENTS__TIMEBASE__INTERVAL_PERIOD;
        if (c->freq)
                tb.frequency = c->interval;
        else
                tb.period = c->interval;
        if (c->tracepoint) {
                tp.name = c->tracepoint;
                tp.filter = c->tracepoint_filter;
                tb.event_case = TRACEBUS__PERF_EVENTS__TIMEBASE__EVENT_TRACEPOINT;
                tb.tracepoint = &tp;
        } else {
                tb.event_case = TRACEBUS__PERF_EVENTS__TIMEBASE__EVENT_COUNTER;
                tb.counter = c->counter;
        }
        tb.name = c->timebase_name;
        perf.timebase = &tb;
        if (c->process_shard_count > 0) {
                perf.has_process_shard_count = perf.has_chosen_process_shard = true;
                perf.process_shard_count = c->process_shard_count;
                perf.chosen_process_shard = w->scope.chosen_shard;
        }
        defaults.perf_sample_defaults = &perf;
        packet.trace_packet_defaults = &defaults;
        packet.has_timestamp = true;
        packet.timestamp = now_ns(CLOCK_BOOTTIME);
        return submit(w, &packet, /* meta= */ true);
}

/* Interned data first, then the samples that use it: the order trace_processor needs. */
static void flush_queue(PerfWriter *w) {
        int r = perf_intern_flush(&w->intern, w->rec);

        if (r < 0)
                w->dropped++;
        for (size_t off = 0; off + 4 <= w->queued_len;) {
                uint32_t len;

                memcpy(&len, w->queued + off, 4);
                if (recorder_submit_packet(w->rec, TRACE_SEQUENCE_PERF, w->config->target_buffer, false,
                                           w->queued + off + 4, len) < 0)
                        w->dropped++;
                off += 4 + len;
        }
        w->queued_len = 0;
}

static void queue_packet(PerfWriter *w, Tracebus__TracePacket *packet) {
        size_t len = tracebus__trace_packet__get_packed_size(packet);

        if (w->queued_len + 4 + len > w->queued_allocated) {
                size_t n = MAX(w->queued_allocated * 2, w->queued_len + 4 + len + 4096);
                uint8_t *q = realloc(w->queued, n);

                if (!q) {
                        w->dropped++;
                        return;
                }
                w->queued = q;
                w->queued_allocated = n;
        }
        memcpy(w->queued + w->queued_len, &(uint32_t) { (uint32_t) len }, 4);
        tracebus__trace_packet__pack(packet, w->queued + w->queued_len + 4);
        w->queued_len += 4 + len;
        /* max_enqueued_footprint_kb: what waits for the recorder stays under it. */
        if (w->queued_len > w->config->max_enqueued_kb * 1024u)
                flush_queue(w);
}

void perf_writer_sample(PerfWriter *w, const PerfRawSample *s) {
        Tracebus__TracePacket packet = TRACEBUS__TRACE_PACKET__INIT;
        Tracebus__PerfSample ps = TRACEBUS__PERF_SAMPLE__INIT;
        PerfProc *p = perf_scope_lookup(&w->scope, (pid_t) s->pid);

        if (!p || !p->in_scope) {
                if (p && p->denied)
                        w->denied++;
                else
                        w->skipped++;
                return;
        }
        ps.has_cpu = ps.has_pid = ps.has_tid = ps.has_cpu_mode = ps.has_timebase_count = true;
        ps.cpu = s->cpu;
        ps.pid = s->pid;
        ps.tid = s->tid;
        /* The kernel's PERF_RECORD_MISC_* modes are Profiling.CpuMode's values. */
        ps.cpu_mode = s->misc & PERF_RECORD_MISC_CPUMODE_MASK;
        ps.timebase_count = s->period;
        if (s->stack.n_ips > 0 || s->stack.regs) {
                int r = perf_intern_callstack(&w->intern, p->pid > 0 ? p : NULL, &s->stack, &ps.callstack_iid);

                if (r == -EACCES || r == -ENOTCONN) {
                        /* Not the owner's to see, or no helper to name its frames: dropped. */
                        if (r == -EACCES)
                                w->denied++;
                        else
                                w->helper_dropped++;
                        return;
                }
                ps.has_callstack_iid = ps.callstack_iid != 0;
                if (w->intern.full && !w->warned_memory) {
                        w->warned_memory = true;
                        (void) recorder_warn(w->rec, "linux.perf: max_daemon_memory_kb (%u KiB) reached: later "
                                             "samples are written without their callstack", w->config->max_memory_kb);
                }
        }
        packet.has_timestamp = true;
        packet.timestamp = s->time;
        packet.has_sequence_flags = true;
        packet.sequence_flags = PERF_SEQ_NEEDS_INCREMENTAL_STATE;
        packet.perf_sample = &ps;
        queue_packet(w, &packet);
        w->samples++;
}

void perf_writer_lost(PerfWriter *w, const PerfRawSample *s, uint64_t lost) {
        Tracebus__TracePacket packet = TRACEBUS__TRACE_PACKET__INIT;
        Tracebus__PerfSample ps = TRACEBUS__PERF_SAMPLE__INIT;

        ps.has_cpu = ps.has_kernel_records_lost = true;
        ps.cpu = (uint32_t) w->cpu;
        ps.kernel_records_lost = lost;
        packet.has_timestamp = true;
        packet.timestamp = now_ns(CLOCK_BOOTTIME);
        packet.has_sequence_flags = true;
        packet.sequence_flags = PERF_SEQ_NEEDS_INCREMENTAL_STATE;
        packet.perf_sample = &ps;
        queue_packet(w, &packet);
        w->lost += lost;
}

void perf_writer_exec(PerfWriter *w, pid_t pid) {
        /* A new program, perhaps setuid: judged again at its next sample. */
        perf_scope_forget(&w->scope, pid);
        perf_intern_forget(&w->intern, pid);
}

/* What the helper left out since the last pass, told once each. */
static void warn_unwinder(PerfWriter *w) {
        PerfIntern *in = &w->intern;

        if (in->helper_memory_cap && !w->warned_memory) {
                w->warned_memory = true;
                (void) recorder_warn(w->rec, "linux.perf: max_daemon_memory_kb (%u KiB) reached: some user frames "
                                     "are not named or unwound", w->config->max_memory_kb);
        }
        if (in->helper_files_denied && !w->warned_files) {
                w->warned_files = true;
                (void) recorder_warn(w->rec, "linux.perf: the session owner may not read some mapped files: "
                                     "their frames have no names");
        }
        if (in->helper && in->helper->failed && !w->warned_helper) {
                w->warned_helper = true;
                (void) recorder_warn(w->rec, "linux.perf: %s: later samples with user frames are dropped",
                                     in->helper->failure ?: "tracebus-unwind failed");
        }
        in->helper_memory_cap = in->helper_files_denied = false;
}

void perf_writer_end_pass(PerfWriter *w) {
        warn_unwinder(w);
        flush_queue(w);
        perf_scope_new_pass(&w->scope);
}

void perf_writer_finish(PerfWriter *w) {
        flush_queue(w);
        log_debug("linux.perf: %" PRIu64 " samples written, %" PRIu64 " out of scope, %" PRIu64 " lost by the kernel, %"
                  PRIu64 " dropped, %" PRIu64 " not the owner's to ptrace, %" PRIu64 " without a helper.",
                  w->samples, w->skipped, w->lost, w->dropped, w->denied, w->helper_dropped);
        if (w->denied > 0)
                (void) recorder_warn(w->rec, "linux.perf: %" PRIu64 " samples of processes the session owner may not "
                                     "ptrace were dropped", w->denied);
        if (w->helper_dropped > 0)
                (void) recorder_warn(w->rec, "linux.perf: %" PRIu64 " samples were dropped: tracebus-unwind, which "
                                     "names user frames, was not there to answer", w->helper_dropped);
        if (w->lost > 0 || w->dropped > 0)
                (void) recorder_warn(w->rec, "linux.perf: %" PRIu64 " records lost in the kernel's ring buffers, %" PRIu64
                                     " packets dropped by the service (raise ring_buffer_pages or lower the frequency)",
                                     w->lost, w->dropped);
}

void perf_writer_end_helper(PerfWriter *w) {
        if (w->intern.helper)
                perf_helper_done(w->intern.helper);
}

void perf_writer_done(PerfWriter *w) {
        perf_writer_end_helper(w);
        w->intern.helper = mfree(w->intern.helper);
        perf_scope_done(&w->scope);
        perf_intern_done(&w->intern);
        w->queued = mfree(w->queued);
        w->queued_len = w->queued_allocated = 0;
}
