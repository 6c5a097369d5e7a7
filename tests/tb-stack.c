/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The bus tests' helpers beside the sd-bus client (tb-client.h): busctl output, trace
 * file assertions (over libtracebus's trace reader, through trace-file.h) and the test
 * stack (sessions' states, output files, tracefs instances, the trace directory). */
#include "tb-client.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "trace.pb-c.h"

/* ===================================================================== */
/* busctl                                                                 */
/* ===================================================================== */

char **busctl_tokens(const char *s) {
        GPtrArray *a = g_ptr_array_new();

        while (*s) {
                GString *t;
                while (*s == ' ' || *s == '\n' || *s == '\t')
                        s++;
                if (!*s)
                        break;
                t = g_string_new(NULL);
                if (*s == '"') {
                        for (s++; *s && *s != '"'; s++) {
                                if (*s == '\\' && s[1])
                                        s++;
                                g_string_append_c(t, *s);
                        }
                        if (*s)
                                s++;
                } else
                        while (*s && *s != ' ' && *s != '\n' && *s != '\t')
                                g_string_append_c(t, *s++);
                g_ptr_array_add(a, g_string_free(t, FALSE));
        }
        g_ptr_array_add(a, NULL);
        return (char **) g_ptr_array_free(a, FALSE);
}

GHashTable *busctl_stats(const char *out) {
        g_auto(GStrv) tok = busctl_tokens(out);
        GHashTable *h = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);

        g_assert_cmpstr(tok[0], ==, "a{sv}");
        for (size_t i = 2; tok[i] && tok[i + 1] && tok[i + 2];) {
                /* An "as" value (Warnings) is a count and that many strings, kept joined
                 * by newlines. */
                if (g_str_equal(tok[i + 1], "as")) {
                        size_t n = strtoul(tok[i + 2], NULL, 10);
                        g_autoptr(GString) joined = g_string_new(NULL);

                        for (size_t k = 0; k < n && tok[i + 3 + k]; k++)
                                g_string_append_printf(joined, "%s%s", k ? "\n" : "", tok[i + 3 + k]);
                        g_hash_table_insert(h, g_strdup(tok[i]), g_string_free(g_steal_pointer(&joined), FALSE));
                        i += 3 + n;
                        continue;
                }
                g_hash_table_insert(h, g_strdup(tok[i]), g_strdup(tok[i + 2]));
                i += 3;
        }
        return h;
}

void log_command(const char *what, const TbCommandResult *res) {
        g_autofree char *st = tb_wait_status_to_string(res->wait_status);
        note("%s: %s\n", what, st);
        if (res->out && *res->out)
                note("  stdout: %s\n", res->out);
        if (res->err && *res->err)
                note("  stderr: %s\n", res->err);
}

/* ===================================================================== */
/* Trace files                                                            */
/* ===================================================================== */

void summarise(const char *path, TbTraceSummary *s) {
        g_autoptr(GError) error = NULL;
        g_autofree char *desc = NULL;

        if (!tb_trace_file_read(path, s, &error))
                g_error("trace file does not decode: %s", error->message);
        desc = tb_trace_summary_describe(s);
        note("%s: %s\n", path, desc);
}

void assert_trace_complete(const TbTraceSummary *s) {
        g_assert_cmpuint(s->n_packets, >, 0);
        g_assert_true(s->has_clock_snapshot);
        g_assert_true(s->clock_is_boottime);
        g_assert_true(s->has_system_info);
        g_assert_true(s->has_utsname);
        g_assert_true(s->has_tracing_started);
        g_assert_true(s->has_trace_config);
        if (s->first_problem)
                note("sequence problem: %s\n", s->first_problem);
        g_assert_true(s->all_have_sequence_id);
        g_assert_true(s->first_packets_flagged);
        g_assert_cmpuint(s->n_ftrace_bundles, >, 0);
        g_assert_cmpuint(s->n_sched_switch + s->n_compact_switch, >, 0);
}

typedef struct {
        bool tracing_disabled, end_stats;
} Closing;

static void closing_packet(const Tracebus__TracePacket *p, const TraceRawPacket *raw, guint index, gpointer userdata) {
        Closing *c = userdata;

        if (p->service_event && p->service_event->has_tracing_disabled && p->service_event->tracing_disabled)
                c->tracing_disabled = true;
        if (p->ftrace_stats && p->ftrace_stats->has_phase &&
            p->ftrace_stats->phase == TRACEBUS__FTRACE_STATS__PHASE__END_OF_TRACE)
                c->end_stats = true;
}

bool trace_closing_packets(const char *path, bool *ret_tracing_disabled, bool *ret_end_stats, GError **error) {
        g_autofree guint8 *data = NULL;
        Closing c = {};
        gsize len;

        *ret_tracing_disabled = *ret_end_stats = false;
        if (!g_file_get_contents(path, (char **) &data, &len, error))
                return false;
        if (!tb_trace_foreach_packet(data, len, closing_packet, &c, NULL, error)) {
                g_prefix_error(error, "%s: ", path);
                return false;
        }
        *ret_tracing_disabled = c.tracing_disabled;
        *ret_end_stats = c.end_stats;
        return true;
}

void assert_trace_file_closed(const char *path) {
        g_auto(TbTraceSummary) s = { 0 };
        g_autoptr(GError) error = NULL;
        bool disabled, end_stats;

        summarise(path, &s);
        assert_trace_complete(&s);
        g_assert_true(trace_closing_packets(path, &disabled, &end_stats, &error));
        g_assert_no_error(error);
        note("%s: tracing_disabled=%d END_OF_TRACE stats=%d\n", path, disabled, end_stats);
        g_assert_true(disabled || end_stats);
}

void assert_busy_seen(const TbTraceSummary *s, const TbBusy *busy) {
        if (!tb_trace_summary_has_switch(s, busy->pid, busy->comm) &&
            !tb_trace_summary_has_switch(s, busy->peer_pid, busy->comm)) {
                note("no sched_switch with pid %d/%d and comm \"%s\" (pid %d seen with any comm: %d)\n", busy->pid,
                     busy->peer_pid, busy->comm, busy->pid, tb_trace_summary_has_switch(s, busy->pid, NULL));
                g_assert_not_reached();
        }
}

/* ===================================================================== */
/* The stack                                                              */
/* ===================================================================== */

char *wait_state(const char *path, const char *want, guint timeout_ms) {
        gint64 deadline = g_get_monotonic_time() + (gint64) timeout_ms * 1000;

        for (;;) {
                g_autoptr(GError) error = NULL;
                char *state = tb_session_state(tb_bus()->conn, path, &error);

                if (state && g_str_equal(state, want))
                        return state;
                if (g_get_monotonic_time() > deadline) {
                        note("session %s: state %s, expected %s\n", path, state ? state : error->message, want);
                        return state;
                }
                g_free(state);
                g_usleep(20 * 1000);
        }
}

int open_output(const char *name, char **ret_path) {
        char *path = g_build_filename(tb_bus()->tmpdir, name, NULL);
        int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

        g_assert_cmpint(fd, >=, 0);
        *ret_path = path;
        return fd;
}

char *traces_dir(void) {
        return g_build_filename(tb_bus()->state_dir, "traces", NULL);
}

char *make_user_dir(const char *user, const char *name) {
        g_auto(TbUser) u = { 0 };
        char *dir = g_build_filename(tb_bus()->tmpdir, name, NULL);

        g_assert_true(tb_user_lookup(user, &u, NULL));
        g_assert_cmpint(g_mkdir_with_parents(dir, 0700), ==, 0);
        g_assert_cmpint(chown(dir, u.uid, u.gid), ==, 0);
        g_assert_cmpint(chmod(dir, 0700), ==, 0);
        return dir;
}

/* A file copied from the build or source tree where every test user can read
 * and run it: those trees may sit under a directory they cannot traverse. */
char *copy_executable(const char *src, const char *name) {
        g_autofree char *bindir = g_build_filename(tb_bus()->tmpdir, "bin", NULL);
        char *dst = g_build_filename(bindir, name, NULL);
        g_autofree char *contents = NULL;
        g_autoptr(GError) error = NULL;
        gsize len;

        if (access(dst, X_OK) == 0)
                return dst;
        g_assert_cmpint(g_mkdir_with_parents(bindir, 0755), ==, 0);
        g_assert_true(g_file_get_contents(src, &contents, &len, &error));
        g_assert_no_error(error);
        g_assert_true(g_file_set_contents_full(dst, contents, (gssize) len, G_FILE_SET_CONTENTS_NONE, 0755, &error));
        g_assert_no_error(error);
        return dst;
}

/* The CLI, where the test users can run it. */
char *cli_path(void) {
        g_autofree char *src = g_build_filename(tb_bus()->build_dir, "client", "cli", "tracebus", NULL);

        return copy_executable(src, "tracebus");
}

char **own_instances(void) {
        return instances_of_pid(tb_bus()->service_pid);
}

char **instances_of_pid(pid_t pid) {
        g_autofree char *prefix = g_strdup_printf("tracebus-%d-", (int) pid);
        g_auto(GStrv) all = tb_tracebus_instances();
        GPtrArray *a = g_ptr_array_new();

        for (size_t i = 0; all[i]; i++)
                if (g_str_has_prefix(all[i], prefix))
                        g_ptr_array_add(a, g_strdup(all[i]));
        g_ptr_array_add(a, NULL);
        return (char **) g_ptr_array_free(a, FALSE);
}

void snapshot_state(char ***ret_instances, char ***ret_files) {
        g_autofree char *tdir = traces_dir();
        *ret_instances = own_instances();
        *ret_files = tb_list_tree(tdir);
}

void assert_nothing_created(char **instances_before, char **files_before) {
        g_auto(GStrv) inst = NULL, files = NULL, new_inst = NULL, new_files = NULL;

        /* Give a wrongly started session a moment to show up. */
        g_usleep(200 * 1000);
        snapshot_state(&inst, &files);
        new_inst = tb_strv_added(instances_before, inst);
        new_files = tb_strv_added(files_before, files);
        for (size_t i = 0; new_inst[i]; i++)
                note("new tracefs instance: %s\n", new_inst[i]);
        for (size_t i = 0; new_files[i]; i++)
                note("new file in the trace dir: %s\n", new_files[i]);
        g_assert_cmpuint(g_strv_length(new_inst), ==, 0);
        g_assert_cmpuint(g_strv_length(new_files), ==, 0);
}

void assert_service_file(const char *file, uid_t uid) {
        g_autofree char *tdir = traces_dir();
        g_autofree char *user_dir = g_strdup_printf("%s/%u/", tdir, (unsigned) uid);
        struct stat st;

        note("service-written file %s (expected in %s)\n", file, user_dir);
        g_assert_true(g_str_has_prefix(file, user_dir));
        g_assert_null(strchr(file + strlen(user_dir), '/'));
        g_assert_cmpint(lstat(file, &st), ==, 0);
        g_assert_true(S_ISREG(st.st_mode));
        g_assert_cmpuint(st.st_uid, ==, uid);
        g_assert_cmpuint(st.st_mode & 07777, ==, 0600);
}

char *new_trace_file(char **files_before) {
        g_autofree char *tdir = traces_dir();
        g_auto(GStrv) now = tb_list_tree(tdir), added = tb_strv_added(files_before, now);
        char *found = NULL;

        for (size_t i = 0; added[i]; i++) {
                g_autofree char *full = g_build_filename(tdir, added[i], NULL);
                note("new in the trace dir: %s\n", added[i]);
                if (g_file_test(full, G_FILE_TEST_IS_REGULAR)) {
                        g_assert_null(found);
                        found = g_steal_pointer(&full);
                }
        }
        return found;
}
