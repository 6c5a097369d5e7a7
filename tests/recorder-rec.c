/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The recorder tests' sessions (Start with an Output fd, Stop, stats) and workloads
 * (markers, storms, named children), and the cleanup that opens every case. */
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

/* ===================================================================== */
/* Sessions                                                               */
/* ===================================================================== */

guint64 boottime(void) {
        struct timespec ts;
        clock_gettime(CLOCK_BOOTTIME, &ts);
        return (guint64) ts.tv_sec * 1000000000ull + (guint64) ts.tv_nsec;
}

void rec_clear(Rec *r) {
        if (r->c.pid > 0)
                client_finish(&r->c, 10000);
        g_clear_pointer(&r->path, g_free);
        g_clear_pointer(&r->out, g_free);
        g_clear_pointer(&r->instance, g_free);
}

/* Starts a session as user with a text config and an Output fd, held by its
 * client; returns once it records. */
void rec_start(Rec *r, const char *user, const char *name, const char *config) {
        g_autofree char *err = NULL, *state = NULL;
        int fd;
        ClientSpec spec = { .user = user, .op = OP_START, .config = config, .hold = true };
        const char *id;

        memset(r, 0, sizeof *r);
        fd = open_output(name, &r->out);
        spec.output_fd = fd;
        client_spawn(&spec, &r->c);
        close(fd);
        r->path = client_expect(&r->c, 'O', tb_scaled_ms(30000), &err);
        if (!r->path)
                g_error("%s's Start (%s) failed: %s\nconfig:\n%s", user, name, err, config);
        state = wait_state(r->path, "recording", tb_scaled_ms(10000));
        g_assert_cmpstr(state, ==, "recording");
        r->recording_at = boottime();
        id = strrchr(r->path, '/') + 1;
        r->instance = g_strdup_printf(TRACEFS "/instances/tracebus-%d-%s", (int) tb_bus()->service_pid, id);
        note("%s: session %s records into %s (instance %s)\n", user, r->path, r->out, r->instance);
}

guint64 stat_u64(GHashTable *st, const char *key) {
        const char *v = g_hash_table_lookup(st, key);
        if (!v) {
                shortfall("Stop's stats have no %s", key);
                return 0;
        }
        return g_ascii_strtoull(v, NULL, 10);
}

/* Stop on the session's own connection; the stats. Also checks that
 * SessionEnded carries the same numbers. */
GHashTable *rec_stop(Rec *r) {
        g_autofree char *err = NULL, *st = client_cmd(&r->c, "stop", 'S', &err), *ended = NULL;
        GHashTable *h;

        if (!st)
                g_error("Stop of %s failed: %s", r->path, err);
        note("Stop %s:%s\n", r->path, st);
        h = parse_stats(st);
        ended = client_expect(&r->c, 'X', tb_scaled_ms(10000), NULL);
        if (!ended)
                shortfall("no SessionEnded for %s after Stop", r->path);
        else {
                g_autoptr(GHashTable) x = parse_stats(ended);
                for (const char *const *k = (const char *const[]) { "Events", "Bytes", "EventsLost", "KernelEventsLost",
                                                                    "EventsOverwritten", NULL };
                     *k; k++)
                        expect(g_strcmp0(g_hash_table_lookup(h, *k), g_hash_table_lookup(x, *k)) == 0,
                               "%s: Stop says %s=%s, SessionEnded says %s", r->path, *k,
                               (const char *) g_hash_table_lookup(h, *k), (const char *) g_hash_table_lookup(x, *k));
        }
        client_finish(&r->c, 10000);
        return h;
}

/* Waits for the session to end by itself: the SessionEnded stats (with Reason). */
GHashTable *rec_wait_end(Rec *r, guint timeout_ms) {
        g_autofree char *ended = client_expect(&r->c, 'X', timeout_ms, NULL);
        g_auto(GStrv) parts = NULL;
        GHashTable *h;

        if (!ended)
                g_error("%s did not end within %u ms", r->path, timeout_ms);
        parts = g_strsplit(ended, "\t", 3);
        h = parse_stats(ended);
        g_hash_table_insert(h, g_strdup("Reason"), g_strdup(parts[1] ? parts[1] : ""));
        note("%s ended: %s\n", r->path, ended);
        client_finish(&r->c, 10000);
        return h;
}

char *rec_get(Rec *r, const char *prop) {
        g_autofree char *cmd = g_strconcat("get ", prop, NULL), *err = NULL;
        char *v = client_cmd(&r->c, cmd, 'V', &err);
        const char *eq;
        char *val;

        if (!v)
                g_error("get %s on %s failed: %s", prop, r->path, err);
        eq = strchr(v, '=');
        val = g_strdup(eq ? eq + 1 : "");
        g_free(v);
        return val;
}

/* Loss accounting every Stop must satisfy. */
void check_stop_stats(GHashTable *st, const Trace *t, bool exact_events) {
        guint64 events = stat_u64(st, "Events"), lost = stat_u64(st, "EventsLost");
        guint64 klost = stat_u64(st, "KernelEventsLost"), over = stat_u64(st, "EventsOverwritten");
        guint64 bytes = stat_u64(st, "Bytes"), flost = ftrace_stats_lost(t, -1);

        expect(lost == klost + over, "EventsLost %" G_GUINT64_FORMAT " != KernelEventsLost %" G_GUINT64_FORMAT
               " + EventsOverwritten %" G_GUINT64_FORMAT, lost, klost, over);
        expect(bytes == t->len, "Stop's Bytes %" G_GUINT64_FORMAT " != the file's size %" G_GSIZE_FORMAT, bytes, t->len);
        if (exact_events)
                expect(events == n_events(t), "Stop's Events %" G_GUINT64_FORMAT " != %" G_GUINT64_FORMAT
                       " events in the file", events, n_events(t));
        expect(flost == klost, "KernelEventsLost %" G_GUINT64_FORMAT " != overrun + commit overrun + dropped between "
               "FtraceStats START and END (%" G_GUINT64_FORMAT ")", klost, flost);
        /* (Overwritten or refused packets may have held the lost_events bundles.) */
        if (klost > 0 && over == 0)
                expect(n_lost_bundles(t, -1) > 0, "the kernel lost %" G_GUINT64_FORMAT " events, but no bundle has "
                       "lost_events", klost);
}

/* ---- config text ---- */

char *ftrace_config(const char *top, const char *const *events, const char *ftrace_extra) {
        GString *s = g_string_new(top);
        g_string_append(s, "data_sources { config { name: \"linux.ftrace\" ftrace_config {\n");
        for (size_t i = 0; events[i]; i++)
                g_string_append_printf(s, "  ftrace_events: \"%s\"\n", events[i]);
        g_string_append(s, ftrace_extra ? ftrace_extra : "");
        g_string_append(s, "} } }\n");
        return g_string_free(s, FALSE);
}

/* ---- workloads ---- */

int marker_open(const Rec *r) {
        g_autofree char *p = g_build_filename(r->instance, "trace_marker", NULL);
        int fd = open(p, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                g_error("open %s: %s", p, g_strerror(errno));
        return fd;
}

void marker_write(int fd, const char *s) {
        ssize_t n = write(fd, s, strlen(s));
        if (n != (ssize_t) strlen(s))
                g_error("write to trace_marker: %s", n < 0 ? g_strerror(errno) : "short");
}

void pin_to_cpu(int cpu, cpu_set_t *old) {
        cpu_set_t set;
        if (old)
                g_assert_cmpint(sched_getaffinity(0, sizeof *old, old), ==, 0);
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        g_assert_cmpint(sched_setaffinity(0, sizeof set, &set), ==, 0);
}

/* perf bench sched pipe: a storm of sched_switch/sched_waking. With nice, it
 * leaves the recorder the CPU it needs. */
GPid storm_start(guint loops, bool nice) {
        g_autofree char *l = g_strdup_printf("%u", loops);
        const char *argv[] = { "nice", "-n", "19", "perf", "bench", "sched", "pipe", "-l", l, NULL };
        g_autoptr(GError) error = NULL;
        GPid pid;

        if (!g_spawn_async(NULL, (char **) (nice ? argv : argv + 3), NULL,
                           G_SPAWN_SEARCH_PATH | G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_STDOUT_TO_DEV_NULL |
                                   G_SPAWN_STDERR_TO_DEV_NULL,
                           NULL, NULL, &pid, &error))
                g_error("perf bench: %s", error->message);
        return pid;
}

void storm_wait(GPid pid) {
        int status;
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                note("perf bench exited with status 0x%x\n", status);
}

/* Events waiting in the session's kernel buffers (its instance's per_cpu stats). */
static guint64 instance_unread(const Rec *r) {
        guint64 n = 0;

        for (long cpu = 0; cpu < sysconf(_SC_NPROCESSORS_CONF); cpu++) {
                g_autofree char *p = g_strdup_printf("%s/per_cpu/cpu%ld/stats", r->instance, cpu);
                g_autofree char *text = NULL;
                const char *e;
                if (!g_file_get_contents(p, &text, NULL, NULL))
                        continue;
                e = strstr(text, "entries:");
                if (e)
                        n += g_ascii_strtoull(e + 8, NULL, 10);
        }
        return n;
}

/* Waits until the service has read (nearly) everything the kernel holds. */
void wait_caught_up(const Rec *r, guint timeout_ms) {
        gint64 deadline = g_get_monotonic_time() + (gint64) timeout_ms * 1000;
        guint64 n;

        while ((n = instance_unread(r)) > 2000 && g_get_monotonic_time() < deadline)
                g_usleep(50 * 1000);
        note("%" G_GUINT64_FORMAT " events unread in the kernel buffers\n", n);
}

/* A copy of a binary under a name of ours, executable by everyone. */
char *copy_binary(const char *src, const char *name) {
        char *dst = g_build_filename(tb_bus()->tmpdir, name, NULL);
        g_autofree char *data = NULL;
        g_autoptr(GError) error = NULL;
        gsize len;

        g_assert_true(g_file_get_contents(src, &data, &len, &error));
        g_assert_true(g_file_set_contents_full(dst, data, (gssize) len, G_FILE_SET_CONTENTS_NONE, 0755, &error));
        g_assert_no_error(error);
        return dst;
}

char *self_comm(void) {
        char *c = NULL;
        g_assert_true(g_file_get_contents("/proc/self/comm", &c, NULL, NULL));
        g_strchomp(c);
        return c;
}

pid_t gettid_(void) {
        return (pid_t) syscall(SYS_gettid);
}

/* A child named comm that waits (it dies with the test). */
pid_t idle_child(const char *comm) {
        pid_t pid;

        fflush(NULL);
        pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                (void) prctl(PR_SET_NAME, comm);
                (void) signal(SIGUSR1, SIG_IGN);
                for (;;)
                        pause();
        }
        return pid;
}

void kill_reap(pid_t pid) {
        if (pid <= 0)
                return;
        (void) kill(pid, SIGKILL);
        (void) waitpid(pid, NULL, 0);
}

/* ===================================================================== */
/* Cases                                                                  */
/* ===================================================================== */

/* Sessions of a failed earlier case may be left: stop them. */
void case_begin(void) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GVariant) reply = g_dbus_connection_call_sync(
                        tb_bus()->conn, TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_IFACE, "ListSessions", NULL,
                        G_VARIANT_TYPE("(ao)"), G_DBUS_CALL_FLAGS_NONE, 10000, NULL, &error);
        g_autofree const char **paths = NULL;

        g_assert_no_error(error);
        g_variant_get(reply, "(^a&o)", &paths);
        for (size_t i = 0; paths && paths[i]; i++) {
                g_autoptr(GVariant) r = NULL;
                note("a session left by an earlier case: %s; stopping it\n", paths[i]);
                r = g_dbus_connection_call_sync(tb_bus()->conn, TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_IFACE, "Stop",
                                                g_variant_new("(o)", paths[i]), NULL, G_DBUS_CALL_FLAGS_NONE, 30000,
                                                NULL, NULL);
        }
}
