/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Rotation: the trace written as chunks, each of which loads alone.
 *
 * A chunk ends between two drain passes: everything drained before it is in the chunk,
 * everything after in the next, so every event is in exactly one. What makes the next
 * chunk load alone is what a trace opens with, written again into it: the clock snapshot
 * first, the config, system info, FtraceStats, the service's track descriptors, and a
 * ProcessTree of every live process and thread from a process builder that forgets what
 * the chunks before described (a thread seen later is described again in its chunk).
 * Each sequence's first packet in the chunk clears its incremental state. The chunk
 * before ends as a trace does: the threads its events showed that had gone from /proc,
 * described from the kernel's saved tables read once more, a sync marker and a clock
 * snapshot. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd-util.h"
#include "log.h"
#include "recorder-local.h"
#include "service-tracks.h"

int recorder_rotate_init(Recorder *rec, const SessionConfig *config) {
        rec->rotate_every_ns = config->rotate_every_ms * 1000000ull;
        rec->rotate_bytes = config->rotate_bytes;
        rec->rotate_keep = config->rotate_keep;
        rec->chunk_started_ns = now_ns(CLOCK_MONOTONIC);
        rec->max_process_entries = config->max_process_entries ?: PROCESS_TREE_DEFAULT_MAX_ENTRIES;
        rec->process_age = config->process_tree.age;
        rec->process_skip_main = config->process_tree.skip_main_thread;
        if (!recorder_rotates(rec))
                return 0;
        rec->rotated_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        return rec->rotated_fd < 0 ? -errno : 0;
}

void recorder_rotate_free(Recorder *rec) {
        safe_close(rec->next_fd);
        safe_close(rec->rotated_fd);
        safe_close(rec->chunk_dir_fd);
        free(rec->chunk_base);
        free(rec->chunk_files);
        (void) pthread_mutex_destroy(&rec->next_lock);
}

bool recorder_rotates(const Recorder *rec) {
        return rec->rotate_every_ns > 0 || rec->rotate_bytes > 0;
}

/* RotateKeep's bookkeeping of chunk @index's file, in a ring of RotateKeep + 1. */
static struct RecorderChunkFile *chunk_file(Recorder *rec, uint32_t index) {
        return rec->chunk_files ? &rec->chunk_files[index % (rec->rotate_keep + 1)] : NULL;
}

static void note_chunk_file(Recorder *rec, uint32_t index, int fd) {
        struct RecorderChunkFile *f = chunk_file(rec, index);
        struct stat st;

        if (f && fstat(fd, &st) >= 0)
                *f = (struct RecorderChunkFile) { .ino = st.st_ino };
}

int recorder_set_chunk_dir(Recorder *rec, int dir_fd, const char *base, uid_t uid) {
        _cleanup_close_ int fd = dir_fd;

        if (!recorder_rotates(rec))
                return -ENOTCONN;
        rec->chunk_base = strdup(base);
        if (!rec->chunk_base)
                return -ENOMEM;
        if (rec->rotate_keep > 0) {
                rec->chunk_files = calloc((size_t) rec->rotate_keep + 1, sizeof(*rec->chunk_files));
                if (!rec->chunk_files)
                        return -ENOMEM;
                note_chunk_file(rec, 0, rec->output_fd);
        }
        rec->chunk_dir_fd = TAKE_FD(fd);
        rec->chunk_uid = uid;
        return 0;
}

int recorder_set_next_output(Recorder *rec, int fd) {
        _cleanup_close_ int owned = fd;

        if (!recorder_rotates(rec) || rec->chunk_dir_fd >= 0)
                return -ENOTCONN;
        (void) pthread_mutex_lock(&rec->next_lock);
        safe_close(rec->next_fd);
        rec->next_fd = TAKE_FD(owned);
        (void) pthread_mutex_unlock(&rec->next_lock);
        return 0;
}

int recorder_rotated_fd(const Recorder *rec) {
        return rec->rotated_fd;
}

uint32_t recorder_chunk_index(const Recorder *rec) {
        return atomic_load(&((Recorder *) rec)->chunk_index);
}

uint64_t recorder_rotate_next_ns(const Recorder *rec) {
        if (!recorder_rotates(rec) || rec->rotate_every_ns == 0)
                return UINT64_MAX;
        return rec->rotate_every_ns > UINT64_MAX - rec->chunk_started_ns ? UINT64_MAX :
               rec->chunk_started_ns + rec->rotate_every_ns;
}

static bool rotation_due(Recorder *rec) {
        uint64_t in_chunk;

        if (!recorder_rotates(rec))
                return false;
        if (rec->rotate_every_ns > 0 && now_ns(CLOCK_MONOTONIC) - rec->chunk_started_ns >= rec->rotate_every_ns)
                return true;
        in_chunk = rec->writer.stats.bytes_written - rec->chunk_start_bytes + trace_writer_pending(&rec->writer);
        return rec->rotate_bytes > 0 && in_chunk >= rec->rotate_bytes;
}

/* In the trace directory: BASE.N, created as trace_dir_create_file() creates files,
 * never following or reusing what the user put there. */
static int create_chunk_file(Recorder *rec, uint32_t index) {
        _cleanup_close_ int fd = -EBADF;
        char name[PATH_MAX];

        if ((size_t) snprintf(name, sizeof(name), "%s.%" PRIu32, rec->chunk_base, index) >= sizeof(name))
                return -ENAMETOOLONG;
        fd = openat(rec->chunk_dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
        if (fd < 0)
                return -errno;
        if (fchown(fd, rec->chunk_uid, (gid_t) -1) < 0) {
                int r = -errno;
                (void) unlinkat(rec->chunk_dir_fd, name, 0);
                return r;
        }
        note_chunk_file(rec, index, fd);
        return TAKE_FD(fd);
}

/* RotateKeep in the trace directory: chunk @index goes, if it is still the file it was;
 * what was written into it goes back to the owner's quota. */
static void delete_chunk_file(Recorder *rec, uint32_t index) {
        struct RecorderChunkFile *f = chunk_file(rec, index);
        char name[PATH_MAX];
        struct stat st;

        if ((size_t) snprintf(name, sizeof(name), "%s.%" PRIu32, rec->chunk_base, index) >= sizeof(name))
                return;
        if (!f || fstatat(rec->chunk_dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) ||
            st.st_ino != f->ino)
                return;
        if (unlinkat(rec->chunk_dir_fd, name, 0) < 0)
                return;
        if (rec->writer.budget) {
                uint64_t used = atomic_load(&rec->writer.budget->used);
                (void) atomic_fetch_sub(&rec->writer.budget->used, MIN(used, f->bytes));
        }
}

/* The next chunk's output, or -EBADF when there is none yet. */
static int take_next_output(Recorder *rec, uint32_t index) {
        int fd;

        if (rec->chunk_dir_fd >= 0)
                return create_chunk_file(rec, index);
        (void) pthread_mutex_lock(&rec->next_lock);
        fd = TAKE_FD(rec->next_fd);
        (void) pthread_mutex_unlock(&rec->next_lock);
        return fd;
}

static int close_chunk(Recorder *rec, uint32_t index, const char **ret_step) {
        struct RecorderChunkFile *f = chunk_file(rec, index);
        int r;

        *ret_step = "cannot describe the exited threads at the end of the chunk";
        r = recorder_describe_gone_threads(rec);
        if (r < 0)
                return r;
        r = recorder_append_ending(rec, "rotated", ret_step);
        if (r < 0)
                return r;
        *ret_step = "cannot write the end of the chunk";
        r = recorder_flush_output(rec);
        if (f)
                f->bytes = rec->writer.stats.bytes_written - rec->chunk_start_bytes;
        return r;
}

/* A process builder that has described nothing yet, so that the new chunk names every
 * thread again: the live ones now, the others when its events show them (which the
 * bundles note again, having forgotten the pids they noted). */
static int renew_process_tree(Recorder *rec) {
        ProcessTreeBuilder *b;
        int r;

        for (unsigned cpu = 0; cpu < rec->n_cpus; cpu++)
                ftrace_bundle_forget_pids(rec->bundles[cpu]);

        r = process_tree_builder_new(&b);
        if (r < 0)
                return r;
        process_tree_builder_set_limits(b, rec->max_process_entries, PROCESS_TREE_WRITE);
        process_tree_builder_set_options(b, rec->process_age, rec->process_skip_main);
        process_tree_builder_set_view(b, rec->process_view);
        process_tree_builder_free(rec->processes);
        rec->processes = b;
        return recorder_describe_all_processes(rec);
}

/* The chunk's opening packets. FtraceStats at its start are the kernel's counters now;
 * the session's loss is still counted from the trace's start. */
static int append_chunk_opening(Recorder *rec) {
        _cleanup_free_ TraceCpuStats *kept = NULL;
        int r;

        if (rec->n_cpus > 0) {
                kept = malloc(rec->n_cpus * sizeof(TraceCpuStats));
                if (!kept)
                        return -ENOMEM;
                memcpy(kept, rec->start_stats, rec->n_cpus * sizeof(TraceCpuStats));
        }
        r = recorder_append_opening_packets(rec);
        if (kept)
                memcpy(rec->start_stats, kept, rec->n_cpus * sizeof(TraceCpuStats));
        return r;
}

static int open_chunk(Recorder *rec, int fd, const char **ret_step) {
        int r;

        safe_close(rec->output_fd);
        rec->output_fd = fd;
        trace_writer_begin_output(&rec->writer, fd);
        recorder_set_output_limits(rec, rec->output_timeout_usec, rec->writer.budget);
        rec->chunk_start_bytes = rec->writer.stats.bytes_written;
        rec->chunk_started_ns = now_ns(CLOCK_MONOTONIC);
        rec->next_missing_warned = false;

        /* No tracing_started in a later chunk: trace_processor would drop the events
         * still in the kernel's buffers from before it, which this chunk holds. */
        if (rec->parser)
                ftrace_parser_forget_symbols(rec->parser);
        *ret_step = "cannot add the opening packets to the next chunk";
        r = append_chunk_opening(rec);
        if (r < 0)
                return r;
        *ret_step = "cannot describe the running processes in the next chunk";
        r = renew_process_tree(rec);
        if (r < 0)
                return r;
        *ret_step = "cannot write the start of the next chunk";
        return recorder_flush_output(rec);
}

/* Ends the chunk being written and starts the next into @fd (taken). */
static int rotate_into(Recorder *rec, uint32_t index, int fd, const char **ret_step) {
        int r;

        *ret_step = "cannot end the chunk's event bundles";
        r = recorder_end_bundles(rec);
        if (r >= 0)
                r = close_chunk(rec, index - 1, ret_step);
        if (r < 0) {
                safe_close(fd);
                return r;
        }
        return open_chunk(rec, fd, ret_step);
}

int recorder_rotate_if_due(Recorder *rec, const char **ret_step) {
        uint32_t index = atomic_load(&rec->chunk_index) + 1;
        uint64_t one = 1;
        int fd, r;

        if (!rotation_due(rec) || index == UINT32_MAX)
                return 0;
        fd = take_next_output(rec, index);
        if (fd < 0) {
                if (!rec->next_missing_warned)
                        (void) recorder_warn(rec, "rotation: chunk %" PRIu32 " is due to end, but chunk %" PRIu32
                                             " has no output (%s): chunk %" PRIu32 " goes on",
                                             index - 1, index, rec->chunk_dir_fd >= 0 ? strerror(-fd) :
                                             "no SetNextOutput yet", index - 1);
                rec->next_missing_warned = true;
                return 0;
        }
        r = rotate_into(rec, index, fd, ret_step);
        if (r < 0)
                return r;
        atomic_store(&rec->chunk_index, index);
        if (rec->chunk_dir_fd >= 0 && rec->rotate_keep > 0 && index >= rec->rotate_keep)
                delete_chunk_file(rec, index - rec->rotate_keep);
        (void) write(rec->rotated_fd, &one, sizeof(one));
        log_debug("Rotated into chunk %" PRIu32 ".", index);
        return 0;
}
