/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <tracefs.h>
#include <unistd.h>

#include "fd-util.h"
#include "log.h"
#include "macro.h"
#include "tracefs-instance.h"

struct TraceInstance {
        struct tracefs_instance *instance;
        char *name;
        char *dir;
        /* The instance directory, flock()ed for the instance's whole life: see below. */
        int lock_fd;
};

/*
 * Who owns an instance. tracefs instances are global, but pids are per pid namespace: a
 * service in a container cannot tell from a name's pid whether the host's service (or
 * another container's) is alive. So ownership is a lock, not a pid: the owner holds an
 * exclusive flock() on the instance's own directory while it exists, and clean-up
 * removes only instances whose lock it can take. Locks are on the inode, and every
 * mount of tracefs (a bind mount into a container, a mount in another mount namespace)
 * shows the same inodes, so the lock is seen from every namespace, and the kernel
 * drops it when its owner dies, however it dies.
 *
 * Between mkdir and flock an instance would look unowned, so the instances directory
 * is locked too: shared while creating (mkdir + flock), exclusive while cleaning up.
 */
static int lock_dir(const char *path, int operation) {
        _cleanup_close_ int fd = -EBADF;

        fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (flock(fd, operation) < 0)
                return -errno;
        return TAKE_FD(fd);
}

static char *instances_dir(void) {
        const char *root = tracefs_tracing_dir();
        char *dir;

        if (!root || asprintf(&dir, "%s/instances", root) < 0)
                return NULL;
        return dir;
}

const char *trace_instance_tracefs_root(void) {
        /* tracefs_tracing_dir() may mount tracefs by itself; that is fine for a root service. */
        return tracefs_tracing_dir();
}

int trace_instance_check_writable(void) {
        _cleanup_free_ char *dir = NULL;
        struct statvfs st;

        if (!trace_instance_tracefs_root())
                return -ENODEV;
        dir = instances_dir();
        if (!dir)
                return -ENOMEM;
        if (statvfs(dir, &st) < 0)
                return -errno;
        /* A sandbox's read-only bind mount (ProtectKernelTunables=, ReadOnlyPaths=) is
         * not a permission problem: root could write, the mount says no. */
        if (st.f_flag & ST_RDONLY)
                return -EROFS;
        return 0;
}

static int instance_write(TraceInstance *t, const char *file, const char *value) {
        if (tracefs_instance_file_write(t->instance, file, value) < 0)
                return negative_errno();
        return 0;
}

/* Makes the instance directory and takes its lock, under a shared lock of the
 * instances directory, so that no clean-up sees the instance unlocked. */
static int instance_create_locked(TraceInstance *t) {
        _cleanup_free_ char *dir = instances_dir();
        _cleanup_close_ int dir_lock = -EBADF;

        if (!dir)
                return -ENOMEM;
        dir_lock = lock_dir(dir, LOCK_SH);
        if (dir_lock < 0)
                return log_error_errno(dir_lock, "tracefs instance %s: cannot lock %s: %m", t->name, dir);

        errno = 0;
        t->instance = tracefs_instance_create(t->name);
        if (!t->instance)
                return log_error_errno(negative_errno(), "tracefs instance %s: cannot create it: %m", t->name);
        if (!tracefs_instance_is_new(t->instance)) {
                /* Someone else's instance: never touch it, and never remove it on free. */
                tracefs_instance_free(t->instance);
                t->instance = NULL;
                return log_error_errno(-EEXIST, "tracefs instance %s: it exists already, not ours: %m", t->name);
        }
        t->dir = tracefs_instance_get_dir(t->instance);
        if (!t->dir)
                return -ENOMEM;
        t->lock_fd = lock_dir(t->dir, LOCK_EX | LOCK_NB);
        if (t->lock_fd < 0)
                return log_error_errno(t->lock_fd, "tracefs instance %s: cannot lock it: %m", t->name);
        return 0;
}

int trace_instance_new(const char *name, uint32_t buffer_size_kb, TraceInstance **ret) {
        _cleanup_(trace_instance_freep) TraceInstance *t = NULL;
        char size[32];
        int r;

        assert(name);
        assert(ret);

        r = trace_instance_check_writable();
        if (r < 0)
                return r;

        t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        t->lock_fd = -EBADF;
        t->name = strdup(name);
        if (!t->name)
                return -ENOMEM;

        r = instance_create_locked(t);
        if (r < 0)
                return r;

        r = trace_instance_set_tracing(t, false);
        if (r < 0)
                return log_error_errno(r, "tracefs instance %s: cannot switch tracing off before setup: %m", name);
        /* The kernel then remembers each recorded task's tgid (saved_tgids), so that a process
         * gone before the service read /proc can still be grouped with its threads. */
        r = instance_write(t, "options/record-tgid", "1");
        if (r < 0)
                log_debug_errno(r, "Cannot record tgids in %s, ignoring: %m", name);
        r = instance_write(t, "trace_clock", "boot");
        if (r < 0)
                return log_error_errno(r, "Failed to select the boot clock for %s: %m", name);
        snprintf(size, sizeof(size), "%u", buffer_size_kb);
        r = instance_write(t, "buffer_size_kb", size);
        if (r < 0)
                return log_error_errno(r, "Failed to set a %u KiB buffer for %s: %m", buffer_size_kb, name);

        *ret = TAKE_PTR(t);
        return 0;
}

TraceInstance *trace_instance_free(TraceInstance *t) {
        if (!t)
                return NULL;
        if (t->instance) {
                (void) tracefs_trace_off(t->instance);
                /* rmdir fails with EBUSY while events are enabled. */
                (void) tracefs_event_disable(t->instance, NULL, NULL);
                if (tracefs_instance_destroy(t->instance) < 0)
                        log_warning_errno(negative_errno(), "Failed to remove tracefs instance %s, ignoring: %m", t->name);
                tracefs_instance_free(t->instance);
        }
        /* Only now: the instance is gone, or it stays locked as a live one would. */
        safe_close(t->lock_fd);
        free(t->dir);
        free(t->name);
        return mfree(t);
}

const char *trace_instance_name(const TraceInstance *t) {
        return t->name;
}

int trace_instance_enable_event(TraceInstance *t, const char *event) {
        _cleanup_free_ char *file = NULL;
        int r;

        /* ftrace/print (what programs write to trace_marker) has no enable file: it is
         * always recorded. Let the instance also see the top-level trace_marker, where
         * userspace annotation libraries write; kernels before 6.x lack the option. */
        if (strcmp(event, "ftrace/print") == 0) {
                r = instance_write(t, "options/copy_trace_marker", "1");
                if (r < 0)
                        log_debug_errno(r, "Cannot copy the top-level trace_marker into %s, ignoring: %m", t->name);
                return 0;
        }

        /* Not tracefs_event_enable(): it takes regular expressions, and event names
         * come from callers. The exact file is what we checked. */
        if (asprintf(&file, "events/%s/enable", event) < 0)
                return -ENOMEM;
        if (!tracefs_file_exists(t->instance, file))
                return 0;  /* another always-on event */
        return instance_write(t, file, "1");
}

int trace_instance_write_file(TraceInstance *t, const char *file, const char *value) {
        return instance_write(t, file, value);
}

int trace_instance_set_tracing(TraceInstance *t, bool on) {
        return instance_write(t, "tracing_on", on ? "1" : "0");
}

int trace_instance_read_file(TraceInstance *t, const char *file, char **ret, size_t *ret_len) {
        _cleanup_free_ char *path = NULL;

        if (asprintf(&path, "%s/%s", t->dir, file) < 0)
                return -ENOMEM;
        return read_full_file(path, 1024 * 1024, ret, ret_len);
}

static int instance_open_cpu_file(TraceInstance *t, unsigned cpu, const char *file, int flags) {
        _cleanup_free_ char *path = NULL;
        int fd;

        if (asprintf(&path, "%s/per_cpu/cpu%u/%s", t->dir, cpu, file) < 0)
                return -ENOMEM;
        fd = open(path, flags | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

int trace_instance_open_cpu_pipe(TraceInstance *t, unsigned cpu) {
        return instance_open_cpu_file(t, cpu, "trace_pipe_raw", O_RDONLY | O_NONBLOCK);
}

int trace_instance_open_cpu_stats(TraceInstance *t, unsigned cpu) {
        return instance_open_cpu_file(t, cpu, "stats", O_RDONLY);
}

/* The lines of per_cpu/cpuN/stats we keep. The recorder reads the file every drain
 * period; a sscanf() per field and line was 1.5% of its CPU time under a storm. */
static const struct {
        const char *prefix;
        size_t offset;
        bool is_double;
} cpu_stats_fields[] = {
        { "entries: ", offsetof(TraceCpuStats, entries), false },
        { "overrun: ", offsetof(TraceCpuStats, overrun), false },
        { "commit overrun: ", offsetof(TraceCpuStats, commit_overrun), false },
        { "bytes: ", offsetof(TraceCpuStats, bytes), false },
        { "oldest event ts: ", offsetof(TraceCpuStats, oldest_event_ts), true },
        { "now ts: ", offsetof(TraceCpuStats, now_ts), true },
        { "dropped events: ", offsetof(TraceCpuStats, dropped_events), false },
        { "read events: ", offsetof(TraceCpuStats, read_events), false },
};

static void cpu_stats_parse_line(const char *line, TraceCpuStats *s) {
        for (size_t i = 0; i < ELEMENTSOF(cpu_stats_fields); i++) {
                size_t n = strlen(cpu_stats_fields[i].prefix);
                uint8_t *field = (uint8_t *) s + cpu_stats_fields[i].offset;

                if (strncmp(line, cpu_stats_fields[i].prefix, n) != 0)
                        continue;
                if (cpu_stats_fields[i].is_double)
                        *(double *) field = strtod(line + n, NULL);
                else
                        *(uint64_t *) field = strtoull(line + n, NULL, 10);
                return;
        }
}

int trace_instance_read_cpu_stats_fd(int fd, TraceCpuStats *ret) {
        char buf[1024];
        ssize_t n;
        TraceCpuStats s = {};

        n = pread(fd, buf, sizeof(buf) - 1, 0);
        if (n < 0)
                return -errno;
        buf[n] = 0;

        for (char *line = buf, *next; line && *line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = 0;
                cpu_stats_parse_line(line, &s);
        }
        *ret = s;
        return 0;
}

int trace_instance_n_cpus(TraceInstance *t) {
        int n = 0;

        for (;;) {
                _cleanup_free_ char *path = NULL;
                struct stat st;

                if (asprintf(&path, "%s/per_cpu/cpu%d", t->dir, n) < 0)
                        return -ENOMEM;
                if (stat(path, &st) < 0)
                        break;
                n++;
        }
        return n > 0 ? n : -ENODEV;
}

static bool tracebus_instance_name(const char *name) {
        unsigned pid;
        char tail;

        return sscanf(name, "tracebus-%u-%*u%c", &pid, &tail) == 1;
}

/* Removes @name if nobody holds its lock; holds the lock itself while it does. */
static int remove_if_unowned(const char *name) {
        _cleanup_close_ int fd = -EBADF;
        struct tracefs_instance *inst;
        char *dir;
        int r;

        inst = tracefs_instance_alloc(NULL, name);
        if (!inst)
                return -ENOMEM;
        dir = tracefs_instance_get_dir(inst);
        fd = dir ? lock_dir(dir, LOCK_EX | LOCK_NB) : -ENOMEM;
        tracefs_put_tracing_file(dir);
        if (fd == -EWOULDBLOCK)
                r = 0;  /* a live service's, in whatever pid namespace */
        else if (fd < 0)
                r = fd;
        else {
                (void) tracefs_trace_off(inst);
                (void) tracefs_event_disable(inst, NULL, NULL);
                r = tracefs_instance_destroy(inst) < 0 ? negative_errno() : 1;
        }
        tracefs_instance_free(inst);
        return r;
}

int trace_instance_remove_stale(void) {
        _cleanup_free_ char *dir = instances_dir();
        _cleanup_close_ int dir_lock = -EBADF;
        char **names;
        int removed = 0;

        if (!dir)
                return -ENOMEM;
        /* Waits for services that are between mkdir and flock (a moment). */
        dir_lock = lock_dir(dir, LOCK_EX);
        if (dir_lock < 0)
                return log_warning_errno(dir_lock, "Cannot lock %s, not removing stale instances: %m", dir);

        /* No regex: libtracefs 1.6.4's tracefs_instances() never regfree()s the one it
         * compiles. tracebus_instance_name() picks ours. */
        names = tracefs_instances(NULL);
        for (char **n = names; n && *n; n++) {
                int r;

                if (!tracebus_instance_name(*n))
                        continue;
                r = remove_if_unowned(*n);
                if (r < 0)
                        log_warning_errno(r, "Failed to remove the unowned tracefs instance %s, ignoring: %m", *n);
                else if (r > 0) {
                        log_info("Removed tracefs instance %s left by a service that is gone.", *n);
                        removed++;
                }
        }
        tracefs_list_free(names);
        return removed;
}
