/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "log.h"
#include "recorder-local.h"
#include "service-tracks.h"


static uint64_t cpu_lost_since_start(const Recorder *rec, unsigned cpu, const TraceCpuStats *s) {
        return (s->overrun - rec->start_stats[cpu].overrun) +
               (s->dropped_events - rec->start_stats[cpu].dropped_events);
}

/* The kernel clears an instance's buffers when an event that was ever enabled in it is
 * removed (an administrator deletes a kprobe or uprobe the session records): what they
 * held is gone without a page saying so, and the counters start again from zero. A
 * counter that only grows went backwards, or "read events" grew by less than the events
 * parsed since the last sample (the kernel counts every data record it hands out, and
 * the parser counts no more than that): keep the losses counted so far, and mark the
 * CPU's next bundle as following lost events, so that the trace says where. The second
 * test finds a reset that the counters grew back past since the last sample. */
static void check_buffer_reset(Recorder *rec, unsigned cpu, const TraceCpuStats *s) {
        const TraceCpuStats *last = &rec->last_stats[cpu];

        if (s->read_events >= last->read_events + rec->read_since_stats[cpu] && s->overrun >= last->overrun &&
            s->dropped_events >= last->dropped_events)
                return;
        rec->lost_before_reset[cpu] += cpu_lost_since_start(rec, cpu, last);
        rec->start_stats[cpu] = (TraceCpuStats) {};
        ftrace_bundle_set_lost_events(rec->bundles[cpu]);
        log_warning("The kernel cleared the trace buffer of CPU %u (was an event of the session removed?): "
                    "the events it held are lost.", cpu);
}

/* A sample at least this often while the session drains. */
#define STATS_PERIOD_NS (1000ull * 1000 * 1000)
/* A fill (percent) from which every drain samples, to show how close the buffer comes. */
#define STATS_FILL_WATCHED 25.0

/* Reading every CPU's stats costs a syscall per CPU and the kernel's formatting, more
 * than the rest of a quiet drain pass (perf, a quiet session drained every 100 ms: 14%
 * of the worker's CPU). Losses are flagged on the pages themselves, so a sample is taken
 * at once when a page said events were lost, whenever the last fill was high, on the
 * urgent passes, and otherwise once a second. */
bool recorder_cpu_stats_due(Recorder *rec, bool urgent) {
        FtraceParserStats ps;

        if (urgent || rec->n_cpus == 0 || now_ns(CLOCK_MONOTONIC) - rec->last_stats_ns >= STATS_PERIOD_NS)
                return true;
        if (rec->parser) {
                ftrace_parser_get_stats(rec->parser, &ps);
                if (ps.lost_pages != rec->lost_pages_sampled)
                        return true;
        }
        for (unsigned cpu = 0; cpu < rec->n_cpus; cpu++)
                if (rec->fill_reported[cpu] >= STATS_FILL_WATCHED)
                        return true;
        return false;
}

/* Samples the kernel's per-CPU counters: loss and fill on the timeline, and the
 * session's EventsLost, live. */
int recorder_sample_cpu_stats(Recorder *rec) {
        uint64_t now = now_ns(CLOCK_BOOTTIME), kernel_lost = 0;
        FtraceParserStats ps;
        int r;

        rec->last_stats_ns = now_ns(CLOCK_MONOTONIC);
        if (rec->parser) {
                ftrace_parser_get_stats(rec->parser, &ps);
                rec->lost_pages_sampled = ps.lost_pages;
        }

        for (unsigned cpu = 0; cpu < rec->n_cpus; cpu++) {
                TraceCpuStats s;
                uint64_t lost;
                double fill = 0;

                r = trace_instance_read_cpu_stats_fd(rec->stats_fds[cpu], &s);
                if (r < 0)
                        return r;
                check_buffer_reset(rec, cpu, &s);
                rec->last_stats[cpu] = s;
                rec->read_since_stats[cpu] = 0;
                lost = rec->lost_before_reset[cpu] + cpu_lost_since_start(rec, cpu, &s);
                kernel_lost += lost;
                if (lost != rec->lost_reported[cpu]) {
                        rec->lost_reported[cpu] = lost;
                        r = service_tracks_append_counter(&rec->writer, now, service_track_lost_uuid(cpu), (double) lost);
                        if (r < 0)
                                return r;
                }
                /* entries waiting, times the average event size read so far, of the buffer. */
                if (s.read_events > 0 && rec->buffer_size_kb > 0)
                        fill = MIN(100.0, 100.0 * (double) s.entries * ((double) s.bytes / (double) s.read_events) /
                                          ((double) rec->buffer_size_kb * 1024.0));
                fill = (double) (int64_t) (fill * 10.0) / 10.0;
                if (fill != rec->fill_reported[cpu]) {
                        rec->fill_reported[cpu] = fill;
                        r = service_tracks_append_counter(&rec->writer, now, service_track_fill_uuid(cpu), fill);
                        if (r < 0)
                                return r;
                }
        }
        rec->kernel_lost = kernel_lost;
        return 0;
}

/* What Stop and the Session properties say, from the worker's own counters. */
void recorder_publish_stats(Recorder *rec) {
        const TraceWriterStats *ws = &rec->writer.stats;
        uint64_t dropped = ws->events_overwritten + ws->events_discarded;

        atomic_store(&rec->events, rec->packed_events - dropped);
        atomic_store(&rec->events_overwritten, dropped);
        atomic_store(&rec->kernel_events_lost, rec->kernel_lost);
        atomic_store(&rec->events_lost, rec->kernel_lost + dropped);
        atomic_store(&rec->bytes_written, ws->bytes_written);
}

void recorder_get_stats(const Recorder *rec, RecorderStats *ret) {
        *ret = (RecorderStats) {
                .events = atomic_load(&rec->events),
                .bytes_written = atomic_load(&rec->bytes_written),
                .events_lost = atomic_load(&rec->events_lost),
                .kernel_events_lost = atomic_load(&rec->kernel_events_lost),
                .events_overwritten = atomic_load(&rec->events_overwritten),
        };
}
