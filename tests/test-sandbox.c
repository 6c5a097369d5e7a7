/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite: tracebusd still records inside its unit's sandbox. Without systemd as
 * PID 1 the unit cannot run as such, so the harness starts the build tree's tracebusd
 * under tests/sandbox-run.sh (TB_START_SANDBOXED), which applies what it can of the
 * built systemd/tracebusd.service: its CapabilityBoundingSet= with no inheritable or
 * ambient capabilities, NoNewPrivileges=, a read-only file system but for the state
 * directory and /sys/kernel/tracing, hidden home directories, and private network, IPC
 * and UTS namespaces. The seccomp settings (SystemCallFilter= and friends) are not
 * applied; see sandbox-run.sh.
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "system-bus.h"
#include "trace-file.h"

#define note(...) g_printerr("# " __VA_ARGS__)

static char *proc_file(const char *name) {
        g_autofree char *path = g_strdup_printf("/proc/%d/%s", (int) tb_bus()->service_pid, name);
        char *text = NULL;

        g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
        return text;
}

static char *status_field(const char *status, const char *key) {
        g_auto(GStrv) lines = g_strsplit(status, "\n", -1);

        for (size_t i = 0; lines[i]; i++)
                if (g_str_has_prefix(lines[i], key) && lines[i][strlen(key)] == ':')
                        return g_strstrip(g_strdup(lines[i] + strlen(key) + 1));
        return NULL;
}

/* The mount options ("rw" or "ro") of the mount at @mount_point in the service's namespace. */
static char *mount_options(const char *mountinfo, const char *mount_point) {
        g_auto(GStrv) lines = g_strsplit(mountinfo, "\n", -1);
        char *found = NULL;

        for (size_t i = 0; lines[i]; i++) {
                g_auto(GStrv) f = g_strsplit(lines[i], " ", 7);
                if (g_strv_length(f) >= 6 && g_str_equal(f[4], mount_point)) {
                        g_free(found);
                        found = g_strdup(f[5]);   /* the last one is on top */
                }
        }
        return found;
}

static void test_confined(void) {
        g_autofree char *status = proc_file("status"), *mountinfo = proc_file("mountinfo");
        g_autofree char *bnd = status_field(status, "CapBnd"), *eff = status_field(status, "CapEff");
        g_autofree char *inh = status_field(status, "CapInh"), *amb = status_field(status, "CapAmb");
        g_autofree char *nnp = status_field(status, "NoNewPrivs");
        g_autofree char *root = mount_options(mountinfo, "/"), *tracefs = mount_options(mountinfo, "/sys/kernel/tracing");
        g_autofree char *state = mount_options(mountinfo, tb_bus()->state_dir);
        g_autofree char *my_net = g_file_read_link("/proc/self/ns/net", NULL);
        g_autofree char *net_path = g_strdup_printf("/proc/%d/ns/net", (int) tb_bus()->service_pid);
        g_autofree char *its_net = g_file_read_link(net_path, NULL);

        note("tracebusd: CapBnd %s CapEff %s NoNewPrivs %s; / %s, tracefs %s, state %s; net %s\n", bnd, eff, nnp,
             root, tracefs, state, its_net);
        /* CAP_CHOWN (0), CAP_DAC_OVERRIDE (1), CAP_FOWNER (3): the unit's set, nothing else. */
        g_assert_cmpstr(bnd, ==, "000000000000000b");
        g_assert_cmpstr(eff, ==, "000000000000000b");
        g_assert_cmpstr(inh, ==, "0000000000000000");
        g_assert_cmpstr(amb, ==, "0000000000000000");
        g_assert_cmpstr(nnp, ==, "1");
        g_assert_true(g_str_has_prefix(root, "ro"));
        g_assert_true(g_str_has_prefix(tracefs, "rw"));
        g_assert_true(g_str_has_prefix(state, "rw"));
        g_assert_cmpstr(its_net, !=, my_net);
}

static void test_records_through_the_cli(void) {
        g_autofree char *cli = g_build_filename(tb_bus()->build_dir, "client", "cli", "tracebus", NULL);
        g_autofree char *dir = g_build_filename(tb_bus()->tmpdir, "sandbox-out", NULL);
        g_autofree char *out = g_build_filename(dir, "cli.pftrace", NULL);
        g_auto(TbCommandResult) res = { 0 };
        g_auto(TbTraceSummary) s = { 0 };
        g_autoptr(GError) error = NULL;
        g_autofree char *desc = NULL;
        const char *argv[] = { cli, "-t", "1s", "-o", out, "sched/sched_switch", "sched/sched_waking", NULL };
        TbBusy busy;

        g_assert_cmpint(g_mkdir_with_parents(dir, 0777), ==, 0);
        g_assert_cmpint(chmod(dir, 0777), ==, 0);
        g_assert_true(tb_busy_start("tbsandbox", &busy, &error));
        g_assert_true(tb_run_as_user("tbuser", argv, &res, &error));
        tb_busy_stop(&busy);
        {
                g_autofree char *status = tb_wait_status_to_string(res.wait_status);
                note("tracebus as tbuser: %s\n# stderr: %s\n", status, res.err);
        }
        g_assert_true(tb_command_succeeded(&res));
        g_assert_true(tb_trace_file_read(out, &s, &error));
        g_assert_no_error(error);
        desc = tb_trace_summary_describe(&s);
        note("%s\n", desc);
        g_assert_true(tb_trace_summary_has_switch(&s, busy.pid, "tbsandbox") ||
                      tb_trace_summary_has_switch(&s, busy.peer_pid, "tbsandbox"));
}

/* Into the trace directory: what needs the unit's three capabilities (a file in
 * traces/<uid>/, which is the user's and 0700, handed over with fchown). */
static void test_records_into_the_trace_directory(void) {
        const char *start_argv[] = { "busctl", "--system", "call", TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_IFACE,
                                     "Start", "sa{sv}", "", "2", "Events", "as", "1", "sched/sched_switch",
                                     "DurationMs", "u", "1000", NULL };
        g_auto(TbCommandResult) start = { 0 };
        g_auto(TbTraceSummary) s = { 0 };
        g_autoptr(GError) error = NULL;
        g_auto(TbUser) u = { 0 };
        g_auto(GStrv) tok = NULL;
        g_autoptr(GVariant) v = NULL;
        g_autofree char *file = NULL, *dir = NULL;
        struct stat st;

        g_assert_true(tb_user_lookup("tbuser", &u, &error));
        g_assert_true(tb_run_as_user("tbuser", start_argv, &start, &error));
        note("busctl Start: %s %s\n", start.out, start.err);
        g_assert_true(tb_command_succeeded(&start));
        tok = g_strsplit_set(g_strstrip(start.out), " \"", -1);
        g_assert_cmpstr(tok[0], ==, "o");
        {
                /* ["o", "", "/org/...", ""] */
                const char *path = NULL;
                for (size_t i = 1; tok[i]; i++)
                        if (tok[i][0] == '/')
                                path = tok[i];
                g_assert_nonnull(path);
                v = tb_get_property(tb_bus()->conn, path, TB_SESSION_IFACE, "OutputPath", &error);
                g_assert_no_error(error);
                file = g_variant_dup_string(v, NULL);
                g_assert_true(tb_wait_session_over(tb_bus()->conn, path, NULL, 15000, &error));
                g_assert_no_error(error);
        }
        note("trace directory file %s\n", file);
        dir = g_strdup_printf("%s/traces/%u/", tb_bus()->state_dir, (unsigned) u.uid);
        g_assert_true(g_str_has_prefix(file, dir));
        g_assert_cmpint(stat(file, &st), ==, 0);
        g_assert_cmpuint(st.st_uid, ==, u.uid);
        g_assert_true(tb_trace_file_read(file, &s, &error));
        g_assert_no_error(error);
        g_assert_cmpuint(s.n_sched_switch + s.n_compact_switch, >, 0);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();
        tb_test_add_isolated("/bus/sandbox/a-confined", test_confined);
        tb_test_add_isolated("/bus/sandbox/b-records-through-the-cli", test_records_through_the_cli);
        tb_test_add_isolated("/bus/sandbox/c-records-into-the-trace-directory", test_records_into_the_trace_directory);
        return tb_test_run(TB_START_SERVICE | TB_START_SANDBOXED);
}
