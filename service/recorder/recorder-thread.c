/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/ksyms-cache.h"
#include "log.h"
#include "recorder-local.h"
#include "service-tracks.h"

/* The worker thread. */

static bool write_due(Recorder *rec);

/* Compressed, the bundle is packed into its own buffer and deflated from there into
 * the writer's; otherwise packed straight into the writer's memory: one copy fewer. */
static int pack_bundle(Recorder *rec, unsigned cpu) {
        FtraceBundle *b = rec->bundles[cpu];
        size_t n = ftrace_bundle_n_events(b), len, n_coded;
        const DeflateSpan *coded;
        const uint8_t *packed;
        uint8_t *dst;
        int r;

        if (n == 0 && !ftrace_bundle_lost_events(b))
                return 0;
        if (rec->compress || rec->writer.filter) {
                /* A filter needs the whole bundle: no writing it in place. */
                r = ftrace_bundle_pack(b, &packed, &len);
                if (r < 0)
                        return r;
                n_coded = ftrace_bundle_coded_spans(b, &coded);
                r = rec->compress ? trace_writer_append_ftrace_bundle_deflated(&rec->writer, packed, len, coded, n_coded, n)
                                  : trace_writer_append_ftrace_bundle(&rec->writer, packed, len, n);
        } else {
                r = ftrace_bundle_packed_size(b, &len);
                if (r < 0)
                        return r;
                r = trace_writer_reserve_ftrace_bundle(&rec->writer, len, n, &dst);
                if (r >= 0)
                        ftrace_bundle_pack_into(b, dst);
        }
        if (r < 0)
                return r;
        rec->packed_events += n;
        return 0;
}

/* The tasks task_newtask and task_rename named in every CPU's events of this pass, in
 * one sorted list: a task is often born on one CPU and renamed (exec) on another. */
static int describe_tasks(Recorder *rec) {
        size_t n = 0;
        int r;

        for (unsigned cpu = 0; cpu < rec->n_cpus; cpu++) {
                const FtraceTaskNote *notes;
                size_t k = ftrace_bundle_take_tasks(rec->bundles[cpu], &notes);

                if (k == 0)
                        continue;
                if (n + k > rec->task_notes_allocated) {
                        FtraceTaskNote *p = realloc(rec->task_notes, (n + k) * sizeof(FtraceTaskNote));
                        if (!p)
                                return -ENOMEM;
                        rec->task_notes = p;
                        rec->task_notes_allocated = n + k;
                }
                memcpy(rec->task_notes + n, notes, k * sizeof(FtraceTaskNote));
                n += k;
        }
        r = n > 0 ? process_tree_builder_add_tasks(rec->processes, rec->task_notes, n) : 0;
        return r < 0 ? r : 0;
}

/* linux.process_stats quirk DISABLE_ON_DEMAND: the lists are emptied, nothing read. */
static int forget_new_threads(Recorder *rec) {
        for (unsigned cpu = 0; cpu < rec->n_cpus; cpu++) {
                const FtraceTaskNote *notes;
                const int32_t *pids;

                (void) ftrace_bundle_take_tasks(rec->bundles[cpu], &notes);
                (void) ftrace_bundle_take_pids(rec->bundles[cpu], &pids);
                (void) ftrace_bundle_take_renamed(rec->bundles[cpu], &pids);
        }
        return 0;
}

/* Threads first seen in the events since the last pass: their names and processes. The
 * tasks' own events first, which describe those already gone. */
static int describe_new_threads(Recorder *rec) {
        int r;

        if (!rec->on_demand)
                return forget_new_threads(rec);
        r = describe_tasks(rec);

        for (unsigned cpu = 0; r >= 0 && cpu < rec->n_cpus; cpu++) {
                const int32_t *pids;
                size_t n = ftrace_bundle_take_pids(rec->bundles[cpu], &pids);

                for (size_t i = 0; r >= 0 && i < n; i++)
                        r = process_tree_builder_add_thread(rec->processes, pids[i]);
                n = ftrace_bundle_take_renamed(rec->bundles[cpu], &pids);
                for (size_t i = 0; r >= 0 && i < n; i++)
                        r = process_tree_builder_redescribe_thread(rec->processes, pids[i]);
        }
        return r < 0 ? r : 0;
}

/* Ends the CPU's current bundle: the functions it names (symbolize_ksyms) written ahead
 * of it, the bundle packed. Its new threads are described at the end of the pass. */
static int flush_bundle(Recorder *rec, unsigned cpu) {
        if (rec->ksyms) {
                int r = ksyms_append_new_symbols(rec->parser, rec->ksyms, &rec->writer);
                if (r < 0)
                        return r;
        }
        rec->bundle_pages[cpu] = 0;
        return pack_bundle(rec, cpu);
}

int recorder_end_bundles(Recorder *rec) {
        for (unsigned cpu = 0; cpu < rec->n_cpus; cpu++) {
                int r = flush_bundle(rec, cpu);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Reads up to MAX_PAGES_PER_CPU_PER_PASS pages of one CPU. Returns 1 if more may be waiting.
 *
 * trace_pipe_raw hands out the page the kernel is still writing as soon as it holds
 * anything, so a reader that goes on until EAGAIN while events keep coming chases the
 * writer, one syscall per page holding an event or two. A page less than half full
 * (after the first of a pass, which may be the rest of a page read last time) says we
 * have caught up: the rest waits for the next period, as traced_probes does. */
int recorder_take_page(Recorder *rec, unsigned cpu, const uint8_t *page, size_t n) {
        ssize_t data = ftrace_parser_page_data_size(rec->parser, page, n);

        rec->pages_read++;
        rec->data_read += data > 0 ? (uint64_t) data : 0;
        /* Events lost before this page: the loss starts a bundle of its own, so that
         * lost_events marks the place where it happened, as traced_probes does. */
        if (ftrace_parser_page_lost_events(rec->parser, page, n) > 0 &&
            ftrace_bundle_n_events(rec->bundles[cpu]) > 0) {
                int r = flush_bundle(rec, cpu);
                if (r < 0)
                        return r;
        }
        /* A damaged page is recorded as an FtraceError in the bundle; go on. */
        int events = ftrace_parser_parse_page(rec->parser, page, n, rec->bundles[cpu]);
        if (events > 0)
                rec->read_since_stats[cpu] += (uint64_t) events;
        /* Bundles small next to the service's buffer, so a ring keeps close to its size. */
        if (++rec->bundle_pages[cpu] >= rec->pages_per_bundle)
                return flush_bundle(rec, cpu);
        return 0;
}

/* splice() of trace_pipe_raw hands the ring buffer's finished pages over to a pipe
 * without the copy into a spare page that read() makes first. Even with one read() of
 * the pipe after it, draining a fork storm's pages cost 0.55 of read()'s CPU in
 * bench/run's floor measurement. If the service cannot get a pipe, it loses only that
 * saving: read() then takes every page. */
int recorder_splice_init(Recorder *rec) {
        int size;

        if (pipe2(rec->splice_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
                log_debug_errno(errno, "No pipe for splice(), the drain reads: %m");
                rec->splice_pipe[0] = rec->splice_pipe[1] = -EBADF;
                return 0;
        }
        size = fcntl(rec->splice_pipe[0], F_GETPIPE_SZ);
        if (size < (int) rec->page_size)
                size = (int) rec->page_size;
        rec->splice_size = (size_t) size / rec->page_size * rec->page_size;
        rec->splice_buf = malloc(rec->splice_size);
        return rec->splice_buf ? 0 : -ENOMEM;
}

/* Reads the @n bytes just spliced into the pipe, all of them: a pipe left holding some
 * would hand them to the next CPU's drain. */
static int read_splice_pipe(Recorder *rec, size_t n) {
        for (size_t at = 0; at < n;) {
                ssize_t k = read(rec->splice_pipe[0], rec->splice_buf + at, n - at);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return k < 0 ? -errno : -EIO;
                at += (size_t) k;
        }
        return 0;
}

/* Takes the CPU's finished pages by splice(), up to @max; returns how many, or 0 when
 * there are none (or splice() cannot be had: read() then takes them). */
static int splice_cpu(Recorder *rec, unsigned cpu, unsigned max) {
        unsigned taken = 0;

        while (rec->splice_pipe[0] >= 0 && taken < max) {
                size_t want = MIN(rec->splice_size, (size_t) (max - taken) * rec->page_size);
                ssize_t n = splice(rec->pipe_fds[cpu], NULL, rec->splice_pipe[1], NULL, want, SPLICE_F_NONBLOCK);
                int r;

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno != EAGAIN) {
                        /* Nothing moved; this kernel or file will not splice: read() from now on. */
                        log_debug_errno(errno, "splice() of trace_pipe_raw failed, the drain reads: %m");
                        rec->splice_pipe[0] = safe_close(rec->splice_pipe[0]);
                        rec->splice_pipe[1] = safe_close(rec->splice_pipe[1]);
                }
                if (n <= 0)
                        break;
                r = read_splice_pipe(rec, (size_t) n);
                if (r < 0)
                        return r;
                for (size_t at = 0; at < (size_t) n; at += rec->page_size, taken++) {
                        r = recorder_take_page(rec, cpu, rec->splice_buf + at, MIN(rec->page_size, (size_t) n - at));
                        if (r < 0)
                                return r;
                }
        }
        return (int) taken;
}

static int drain_cpu(Recorder *rec, unsigned cpu) {
        int spliced = splice_cpu(rec, cpu, MAX_PAGES_PER_CPU_PER_PASS);

        if (spliced < 0)
                return spliced;
        /* What splice() left: the page the kernel is still writing. */
        for (unsigned i = (unsigned) spliced; i < MAX_PAGES_PER_CPU_PER_PASS; i++) {
                ssize_t n = read(rec->pipe_fds[cpu], rec->page, rec->page_size);
                int r;

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                return 0;
                        return -errno;
                }
                if (n == 0)
                        return 0;
                r = recorder_take_page(rec, cpu, rec->page, (size_t) n);
                if (r < 0)
                        return r;
                /* Once splice() has taken the finished pages, the first read() is the page
                 * being written, not the rest of one read part way last time. */
                if ((i > 0 || rec->splice_pipe[0] >= 0) &&
                    ftrace_parser_page_data_size(rec->parser, rec->page, (size_t) n) < (ssize_t) (rec->page_size / 2))
                        return 0;
        }
        return 1;
}

/* Whether the CPUs' bundles end with this pass. A quiet CPU's pass, a page with a few
 * events, cost a packet and a deflate block of its own (perf, a quiet session drained
 * every 100 ms: 10% of the worker's CPU, and the bundles' headers most of the file). A
 * long trace written on a period keeps a bundle open across passes until it is full
 * (MAX_PAGES_PER_BUNDLE) or the next write into the file; every pass that hands the data
 * on (@end_all: Stop, a drain asked for, a clone, a new chunk, a write) ends it, and so
 * does every pass of a ring or a discard buffer, whose data the writer holds. */
static bool pass_ends_bundles(const Recorder *rec, bool end_all) {
        return end_all || rec->writer.mode != TRACE_WRITER_STREAM || rec->write_period_ns == UINT64_MAX;
}

/* Drains every CPU until caught up, or until @deadline (CLOCK_MONOTONIC ns): the final
 * drain of a Stop is bounded by data_source_stop_timeout_ms, as Perfetto bounds the
 * data sources' stop. */
static int drain_all(Recorder *rec, uint64_t deadline, bool end_all) {
        bool more;
        int r;

        do {
                more = false;
                for (unsigned cpu = 0; cpu < rec->n_cpus; cpu++) {
                        r = drain_cpu(rec, cpu);
                        if (r < 0)
                                return r;
                        more = more || r > 0;
                        r = pass_ends_bundles(rec, end_all) ? flush_bundle(rec, cpu) : 0;
                        if (r < 0)
                                return r;
                }
                r = describe_new_threads(rec);
                if (r < 0)
                        return r;
                if (more && now_ns(CLOCK_MONOTONIC) >= deadline) {
                        (void) recorder_warn(rec, "the final drain passed data_source_stop_timeout_ms: what was "
                                             "still in the kernel's buffers is left out of the trace");
                        break;
                }
        } while (more);
        return recorder_append_process_tree(rec);
}

/* One drain of every CPU. A wake by the watermark that finds nothing to read means this
 * kernel's poll does not wait for buffer_percent after all: drain on the period instead,
 * rather than spin. */
static int drain_pass(Recorder *rec, unsigned why, bool stopping, bool end_all) {
        uint64_t pages = rec->pages_read, data = rec->data_read;
        int r;

        rec->last_drain_ns = now_ns(CLOCK_MONOTONIC);
        r = drain_all(rec, stopping && rec->stop_timeout_ns != UINT64_MAX ?
                           rec->last_drain_ns + rec->stop_timeout_ns : UINT64_MAX, stopping || end_all);
        /* While events flow (a page of them or more in this pass), the next pass comes a
         * drain period later, as before the watermark: a short-lived process must still
         * be in /proc when its first event is read, or it is described only by the
         * kernel's small saved tables. A quiet pass goes back to sleeping on the
         * watermark: an idle session costs nothing. */
        rec->busy = rec->data_read - data >= rec->page_size;
        if (r >= 0 && why == RECORDER_WAKE_WATERMARK && rec->pages_read == pages && rec->watermark) {
                log_debug("The trace buffers polled readable with nothing to read: draining every %u ms instead.",
                          rec->drain_period_ms);
                rec->watermark = false;
                rec->periodic_drain = true;
                rec->n_poll_fds = 2;
        }
        return r;
}

int recorder_flush_output(Recorder *rec) {
        int r = trace_writer_flush(&rec->writer);

        rec->last_write_ns = now_ns(CLOCK_MONOTONIC);
        recorder_publish_stats(rec);
        return r;
}

static bool write_due(Recorder *rec) {
        if (rec->writer.mode != TRACE_WRITER_STREAM)
                return false;
        /* A buffer at its size is written at once (Perfetto would overwrite or discard in
         * it until its next read): a long trace loses nothing. */
        if (trace_writer_pending(&rec->writer) >= rec->write_threshold || trace_writer_buffer_full(&rec->writer))
                return true;
        return rec->write_period_ns != UINT64_MAX &&
               now_ns(CLOCK_MONOTONIC) - rec->last_write_ns >= rec->write_period_ns;
}

static void finish(Recorder *rec, RecorderEnd end, int error) {
        uint64_t one = 1;

        rec->end = end;
        rec->error = error;
        recorder_cancel_clone(rec);
        (void) write(rec->done_fd, &one, sizeof(one));
}

static RecorderEnd end_for_write_error(int r) {
        switch (r) {
        case -EFBIG:
                return RECORDER_END_SIZE_REACHED;
        case -EDQUOT:
                return RECORDER_END_QUOTA;
        case -ETIMEDOUT:
                return RECORDER_END_OUTPUT_STALLED;
        default:
                return RECORDER_END_OUTPUT_ERROR;
        }
}

/* Ends the recording after @step failed with @r. A size limit or a quota reached is an
 * ordinary end, logged only for debugging; anything else is a warning that names the
 * step, since the session hears only the errno. */
static void end_with_error(Recorder *rec, int r, const char *step) {
        RecorderEnd end;

        r = recorder_output_error(rec, r);
        end = end_for_write_error(r);

        if (end == RECORDER_END_SIZE_REACHED || end == RECORDER_END_QUOTA)
                log_debug_errno(r, "Recording: %s, ending the session: %m", step);
        else
                log_warning_errno(r, "Recording: %s, ending the session: %m", step);
        finish(rec, end, r);
}

/* symbolize_ksyms: the kernel's symbols, read here rather than on the event loop. A
 * table that cannot be read leaves the addresses as they would be without it. */
static void start_symbolizing(Recorder *rec) {
        int r;

        if (!rec->symbolize_ksyms)
                return;
        r = ksyms_cache_get(rec->ksyms_retain, &rec->ksyms);
        if (r < 0) {
                log_warning_errno(r, "symbolize_ksyms: cannot read /proc/kallsyms, "
                                  "recording without kernel symbols: %m");
                return;
        }
        r = ftrace_parser_symbolize(rec->parser, rec->ksyms);
        if (r < 0)
                log_warning_errno(r, "symbolize_ksyms: cannot index the kernel's symbols, recording without them: %m");
}

/* The steps of one pass, in order. On failure, *ret_step says which step failed. */
static int pass_steps(Recorder *rec, unsigned why, bool stopping, bool hand_on, bool drain, const char **ret_step) {
        int r;

        /* Sampled before the drain: the fill is at its highest then. */
        if (drain && recorder_cpu_stats_due(rec, stopping || hand_on || (why & RECORDER_WAKE_WATERMARK))) {
                *ret_step = "cannot sample the CPUs' buffer stats";
                r = recorder_sample_cpu_stats(rec);
                if (r < 0)
                        return r;
        }
        *ret_step = "cannot add the annotations and warnings to the trace";
        r = recorder_append_annotations(rec);
        if (r < 0)
                return r;
        *ret_step = "cannot add the other data sources' packets to the trace";
        r = recorder_append_submitted(rec);
        if (r < 0)
                return r;
        *ret_step = "cannot add the periodic clock snapshot to the trace";
        r = recorder_append_periodic_snapshot(rec, /* force= */ false);
        if (r < 0)
                return r;
        if (stopping) {
                *ret_step = "cannot read the kernel's trace buffers for the final drain";
                r = recorder_drain_parallel(rec);
                if (r < 0)
                        return r;
        }
        *ret_step = "cannot read the kernel's trace buffers";
        return drain ? drain_pass(rec, why, stopping, hand_on || write_due(rec)) : 0;
}

/* One pass of the worker after a wake: what other threads handed over, then a drain of
 * the kernel's buffers when something asks for one, then the drain requests answered. */
static int take_pass(Recorder *rec, unsigned why, bool stopping, const char **ret_step) {
        RecorderDrainRequest requests[RECORDER_MAX_DRAIN_REQUESTS];
        size_t n_requests = recorder_take_drain_requests(rec, requests);
        /* A clone or a chunk takes what the kernel holds first. */
        bool hand_on = n_requests > 0 || atomic_load(&rec->clone_request) ||
                       recorder_rotate_next_ns(rec) <= now_ns(CLOCK_MONOTONIC);
        bool drain = stopping || hand_on || (why & RECORDER_WAKE_WATERMARK) || recorder_drain_due(rec);
        int r;

        r = pass_steps(rec, why, stopping, hand_on, drain, ret_step);
        for (size_t i = 0; i < n_requests; i++)
                requests[i].callback(rec, r >= 0 ? &rec->writer : NULL, requests[i].userdata);
        return r;
}

void *recorder_thread_main(void *userdata) {
        Recorder *rec = userdata;
        const char *step = NULL;
        int r;

        (void) pthread_setname_np(pthread_self(), "tb-recorder");
        start_symbolizing(rec);

        /* The opening packets go out at once, from this thread: a write to a passed fd
         * may block, and the event loop must not. The file is a valid trace from here on. */
        r = recorder_describe_all_processes(rec);
        if (r < 0)
                return end_with_error(rec, r, "cannot describe the running processes"), NULL;
        r = recorder_flush_output(rec);
        if (r < 0)
                return end_with_error(rec, r, "cannot write the opening packets"), NULL;

        for (;;) {
                unsigned why = recorder_wait(rec);
                bool stopping = why & RECORDER_WAKE_STOP;

                r = take_pass(rec, why, stopping, &step);
                if (r < 0) {
                        /* What was read so far still makes a complete trace. */
                        log_error_errno(r, "Recording: %s, ending the session: %m", step);
                        (void) recorder_write_closing_packets(rec, &step);
                        (void) recorder_finish_output(rec);
                        return finish(rec, RECORDER_END_READ_ERROR, r), NULL;
                }
                recorder_publish_stats(rec);
                /* A snapshot is served right after the drain, before a periodic write. */
                recorder_serve_clone(rec);
                if (stopping)
                        break;
                r = recorder_rotate_if_due(rec, &step);
                if (r < 0)
                        return end_with_error(rec, r, step), NULL;
                if (!write_due(rec))
                        continue;
                r = service_tracks_append_instant(&rec->writer, now_ns(CLOCK_BOOTTIME), "periodic write");
                if (r < 0)
                        return end_with_error(rec, r, "cannot mark the periodic write"), NULL;
                r = recorder_flush_output(rec);
                if (r < 0)
                        return end_with_error(rec, r, "cannot write the trace"), NULL;
        }

        r = recorder_write_closing_packets(rec, &step);
        if (r < 0)
                return end_with_error(rec, r, step), NULL;
        r = recorder_finish_output(rec);
        if (r < 0)
                return end_with_error(rec, r, "cannot finish writing the output file"), NULL;
        finish(rec, RECORDER_END_STOPPED, 0);
        return NULL;
}
