/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite, linux.systemd_journald: journal entries written during a session
 * as Perfetto v58's SystemdJournaldEvent, one packet per entry on the monotonic clock, read
 * back field by field, and the one stats packet at the end. tbuser's session sees its
 * own entries, not tbother's, nor root's from inside tbuser's session
 * (_SYSTEMD_OWNER_UID, as sudo's are); root's sees them all, filtered by its config
 * (min_prio, filter_identifiers); tbadmin's (org.tracebus.manage) sees them all too. When this machine runs no journald (a container without systemd),
 * the test starts systemd-journald itself for its duration, and removes what it made.
 */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdlib.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <systemd/sd-journal.h>
#include <unistd.h>

#include "recorder.h"
#include "system-bus.h"
#include "tb-client.h"
#include "time-util.h"

#define TAG "tbjtest"
#define JOURNALD "/lib/systemd/systemd-journald"
#define SOCKET "/run/systemd/journal/socket"

static pid_t journald_pid = 0;

static char *machine_journal_dir(void) {
        g_autofree char *id = NULL;

        g_assert_true(g_file_get_contents("/etc/machine-id", &id, NULL, NULL));
        g_strstrip(id);
        return g_strdup_printf("/run/log/journal/%s", id);
}

/* A journald for the test when none runs. */
static void journald_ensure(void) {
        g_autofree char *dir = machine_journal_dir();

        if (access(SOCKET, F_OK) == 0)
                return;
        g_assert_true(g_file_test(JOURNALD, G_FILE_TEST_IS_EXECUTABLE));
        journald_pid = fork();
        g_assert_cmpint(journald_pid, >=, 0);
        if (journald_pid == 0) {
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                execl(JOURNALD, JOURNALD, (char *) NULL);
                _exit(127);
        }
        for (int i = 0; i < 500 && (access(SOCKET, F_OK) < 0 || access(dir, F_OK) < 0); i++)
                g_usleep(10 * 1000);
        g_assert_cmpint(access(SOCKET, F_OK), ==, 0);
        note("started %s (pid %d) for the test\n", JOURNALD, (int) journald_pid);
}

static void journald_done(void) {
        if (journald_pid <= 0)
                return;
        kill_reap(journald_pid);
        (void) system("rm -rf /run/systemd/journal /run/log/journal");
        journald_pid = 0;
}

/* Logs @message at @prio as @user, from a child named "tbjlog". */
static void log_as(const char *user, const char *message, int prio) {
        struct passwd *pw = getpwnam(user);
        pid_t pid;
        int status;

        g_assert_nonnull(pw);
        fflush(NULL);
        pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                (void) prctl(PR_SET_NAME, "tbjlog");
                if (setgid(pw->pw_gid) < 0 || setuid(pw->pw_uid) < 0)
                        _exit(2);
                if (sd_journal_send("MESSAGE=%s", message, "PRIORITY=%d", prio, "SYSLOG_IDENTIFIER=" TAG, NULL) < 0)
                        _exit(3);
                usleep(200 * 1000);   /* alive while journald reads its _COMM */
                _exit(0);
        }
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* The cgroup hierarchies that say whose session a process is in: the unified one, and
 * the named systemd one of a hybrid or legacy machine. */
static GPtrArray *session_cgroup_roots(void) {
        GPtrArray *roots = g_ptr_array_new_with_free_func(g_free);
        g_autofree char *mountinfo = NULL;
        g_auto(GStrv) lines = NULL;

        g_assert_true(g_file_get_contents("/proc/self/mountinfo", &mountinfo, NULL, NULL));
        lines = g_strsplit(mountinfo, "\n", -1);
        for (guint i = 0; lines[i]; i++) {
                g_auto(GStrv) f = g_strsplit(lines[i], " ", -1);

                if (g_strv_length(f) > 4 && (strstr(lines[i], " - cgroup2 ") ||
                                             (strstr(lines[i], " - cgroup ") && strstr(lines[i], "name=systemd"))))
                        g_ptr_array_add(roots, g_strdup(f[4]));
        }
        g_assert_cmpuint(roots->len, >, 0);
        return roots;
}

/* Moves @pid into user-UID.slice/tbjtest-PID.scope of @user in every such hierarchy,
 * as a process of root's inside the user's login session is (sudo, su): journald then
 * gives its entries _SYSTEMD_OWNER_UID=UID. The directories it made go to @made. */
static void move_into_user_slice(pid_t pid, const char *user, GPtrArray *made) {
        g_autoptr(GPtrArray) roots = session_cgroup_roots();
        uid_t uid = getpwnam(user)->pw_uid;

        for (guint i = 0; i < roots->len; i++) {
                const char *root = g_ptr_array_index(roots, i);
                g_autofree char *slice = g_strdup_printf("%s/user.slice", root);
                g_autofree char *user_slice = g_strdup_printf("%s/user-%u.slice", slice, (unsigned) uid);
                g_autofree char *scope = g_strdup_printf("%s/tbjtest-%d.scope", user_slice, (int) getpid());
                g_autofree char *procs = g_strconcat(scope, "/cgroup.procs", NULL);
                g_autofree char *value = g_strdup_printf("%d\n", (int) pid);
                const char *dirs[] = { slice, user_slice, scope };
                int fd;

                for (size_t d = 0; d < G_N_ELEMENTS(dirs); d++)
                        if (mkdir(dirs[d], 0755) == 0)
                                g_ptr_array_add(made, g_strdup(dirs[d]));
                /* Shortfalls, not assertions: the caller removes what was made. */
                fd = open(procs, O_WRONLY | O_CLOEXEC);
                expect(fd >= 0 && write(fd, value, strlen(value)) == (ssize_t) strlen(value),
                       "cannot move pid %d into %s: %s", (int) pid, scope, g_strerror(errno));
                if (fd >= 0)
                        close(fd);
        }
}

/* Logs @message at @prio as root from inside @user's session (see move_into_user_slice()),
 * from a child named "tbjlog". */
static void log_as_root_in_session_of(const char *user, const char *message, int prio) {
        g_autoptr(GPtrArray) made = g_ptr_array_new_with_free_func(g_free);
        int go[2];
        pid_t pid;
        int status;
        char c = 1;

        g_assert_cmpint(pipe(go), ==, 0);
        fflush(NULL);
        pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                close(go[1]);
                (void) prctl(PR_SET_NAME, "tbjlog");
                if (read(go[0], &c, 1) != 1)
                        _exit(2);
                if (sd_journal_send("MESSAGE=%s", message, "PRIORITY=%d", prio, "SYSLOG_IDENTIFIER=" TAG, NULL) < 0)
                        _exit(3);
                usleep(200 * 1000);   /* alive while journald reads its cgroup */
                _exit(0);
        }
        close(go[0]);
        move_into_user_slice(pid, user, made);
        g_assert_cmpint(write(go[1], &c, 1), ==, 1);
        close(go[1]);
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        for (guint i = made->len; i > 0; i--)
                (void) rmdir(g_ptr_array_index(made, i - 1));
}

/* The _UID and _SYSTEMD_OWNER_UID journald gave the entry @message (-1: none). */
static void journal_uids_of(const char *message, long *ret_uid, long *ret_owner) {
        g_autofree char *match = g_strconcat("MESSAGE=", message, NULL);
        const char *const fields[] = { "_UID", "_SYSTEMD_OWNER_UID" };
        long *rets[] = { ret_uid, ret_owner };
        sd_journal *j = NULL;

        *ret_uid = *ret_owner = -1;
        g_assert_cmpint(sd_journal_open(&j, SD_JOURNAL_LOCAL_ONLY), >=, 0);
        g_assert_cmpint(sd_journal_add_match(j, match, 0), >=, 0);
        if (sd_journal_next(j) > 0)
                for (size_t i = 0; i < G_N_ELEMENTS(fields); i++) {
                        const void *data;
                        size_t len;

                        if (sd_journal_get_data(j, fields[i], &data, &len) >= 0)
                                *rets[i] = strtol((const char *) data + strlen(fields[i]) + 1, NULL, 10);
                }
        sd_journal_close(j);
}

typedef struct {
        GPtrArray *events;   /* const TracePacket* of the entries, all of the trace */
        guint n_stats;
        guint64 stats_total, stats_failed;
} Journal;

static void journal_collect(const Trace *t, Journal *j) {
        j->events = g_ptr_array_new();
        for (guint i = 0; i < t->pkts->len; i++) {
                const Tracebus__TracePacket *p = PKT(t, i)->p;
                const Tracebus__SystemdJournaldEvent *e = p->journald_event;

                if (!e)
                        continue;
                expect(p->trusted_packet_sequence_id == 9, "a journald packet on sequence %u, not 9",
                       p->trusted_packet_sequence_id);
                if (e->has_num_total || e->has_num_failed) {
                        /* v58: the stats are a packet of their own, on the trace's boot clock. */
                        expect(!e->message && !e->has_pid, "the stats packet carries an entry too");
                        expect(!p->has_timestamp_clock_id, "the stats packet is on clock %u", p->timestamp_clock_id);
                        j->n_stats++;
                        j->stats_total = e->num_total;
                        j->stats_failed = e->num_failed;
                        continue;
                }
                g_ptr_array_add(j->events, (gpointer) p);
        }
}

static const Tracebus__TracePacket *find(const Journal *j, const char *message) {
        for (guint i = 0; i < j->events->len; i++) {
                const Tracebus__TracePacket *p = g_ptr_array_index(j->events, i);

                if (g_strcmp0(p->journald_event->message, message) == 0)
                        return p;
        }
        return NULL;
}

/* Every field of the entry in packet @p that tbuser logged between monotonic @t0_ns and
 * @t1_ns. */
static void check_fields(const Tracebus__TracePacket *p, guint64 t0_ns, guint64 t1_ns) {
        const Tracebus__SystemdJournaldEvent *e = p->journald_event;
        char host[256] = "";

        (void) gethostname(host, sizeof(host) - 1);
        expect(p->has_timestamp_clock_id && p->timestamp_clock_id == TRACEBUS__BUILTIN_CLOCK__BUILTIN_CLOCK_MONOTONIC,
               "entry packet on clock %u, not BUILTIN_CLOCK_MONOTONIC (3)", p->timestamp_clock_id);
        expect(p->has_timestamp && p->timestamp >= t0_ns && p->timestamp <= t1_ns,
               "entry timestamp %" G_GUINT64_FORMAT " outside monotonic [%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT "]",
               p->timestamp, t0_ns, t1_ns);
        expect(e->has_prio && e->prio == 4, "prio %u, not 4", e->prio);
        expect(g_strcmp0(e->tag, TAG) == 0, "tag \"%s\"", e->tag);
        expect(e->has_uid && e->uid == getpwnam("tbuser")->pw_uid, "uid %u, not tbuser's", e->uid);
        expect(e->has_gid && e->gid == getpwnam("tbuser")->pw_gid, "gid %u, not tbuser's", e->gid);
        expect(e->has_pid && e->pid > 0, "no pid");
        /* _TID exists from systemd 254 on; the child is single-threaded. */
        expect(!e->has_tid || e->tid == e->pid, "tid %u of a single-threaded pid %u", e->tid, e->pid);
        expect(g_strcmp0(e->comm, "tbjlog") == 0, "comm \"%s\", not tbjlog", e->comm);
        expect(e->exe && g_str_has_suffix(e->exe, "/test-journald"), "exe \"%s\", not this test", e->exe);
        expect(g_strcmp0(e->transport, "journal") == 0, "transport \"%s\"", e->transport);
        expect(g_strcmp0(e->hostname, host) == 0, "hostname \"%s\", not \"%s\"", e->hostname, host);
        expect(!e->has_num_total && !e->has_num_failed, "an entry packet carries stats");
}

static void load(Rec *r, Trace *t, Journal *j) {
        g_autoptr(GHashTable) st = rec_stop(r);

        trace_load(r->out, false, t);
        check_trace(t, &(CheckOpts) { .closed = true });
        journal_collect(t, j);
        expect(j->n_stats == 1 && j->stats_total == j->events->len && j->stats_failed == 0,
               "%s: %u stats packets, num_total %" G_GUINT64_FORMAT " num_failed %" G_GUINT64_FORMAT " for %u entries",
               r->out, j->n_stats, j->stats_total, j->stats_failed, j->events->len);
}

static void test_journald(void) {
        const char *const events[] = { "sched/sched_switch", NULL };
        g_autofree char *ftrace = ftrace_config("", events, NULL);
        g_autofree char *cfg_user = g_strconcat(ftrace, "data_sources { config { name: \"linux.systemd_journald\" } }\n",
                                                NULL);
        g_autofree char *cfg_root = g_strconcat(ftrace, "data_sources { config { name: \"linux.systemd_journald\" "
                                                "journald_config { min_prio: 5 filter_identifiers: \"" TAG "\" } } }\n",
                                                NULL);
        g_autofree char *mine = g_strdup_printf("tbjournal-mine-%d", (int) getpid());
        g_autofree char *other = g_strdup_printf("tbjournal-other-%d", (int) getpid());
        g_autofree char *debug = g_strdup_printf("tbjournal-debug-%d", (int) getpid());
        g_autofree char *in_session = g_strdup_printf("tbjournal-root-in-session-%d", (int) getpid());
        g_auto(Trace) tu = { 0 }, tr = { 0 }, ta = { 0 };
        g_auto(Rec) ru = { 0 }, rr = { 0 }, ra = { 0 };
        Journal ju = { 0 }, jr = { 0 }, ja = { 0 };
        guint64 t0, t1;
        long uid, owner;

        journald_ensure();
        rec_start(&ru, "tbuser", "journald-user.pftrace", cfg_user);
        rec_start(&rr, "root", "journald-root.pftrace", cfg_root);
        rec_start(&ra, "tbadmin", "journald-admin.pftrace", cfg_user);
        tb_sleep_scaled(300);
        t0 = now_ns(CLOCK_MONOTONIC);
        log_as("tbuser", mine, 4);
        log_as("tbother", other, 4);
        log_as("tbuser", debug, 7);
        t1 = now_ns(CLOCK_MONOTONIC);
        log_as_root_in_session_of("tbuser", in_session, 4);
        tb_sleep_scaled(1000);
        {
                g_autofree char *wu = rec_get(&ru, "Warnings"), *wr = rec_get(&rr, "Warnings");

                /* The session takes its recorder's warnings at least once a second. */
                expect(wu && strstr(wu, "only the entries of your own processes"),
                       "tbuser's Warnings do not say it sees only its own entries: %s", wu);
                expect(!wr || !strstr(wr, "linux.systemd_journald"), "root's Warnings name the journal: %s", wr);
        }
        load(&ru, &tu, &ju);
        load(&rr, &tr, &jr);
        load(&ra, &ta, &ja);
        /* journald took root's entry for one of tbuser's session, as it does sudo's. */
        journal_uids_of(in_session, &uid, &owner);
        expect(uid == 0 && owner == (long) getpwnam("tbuser")->pw_uid, "root's entry in tbuser's session has _UID "
               "%ld and _SYSTEMD_OWNER_UID %ld, not 0 and tbuser's", uid, owner);

        note("tbuser's trace: %u journal entries; root's: %u\n", ju.events->len, jr.events->len);
        expect(find(&ju, mine) != NULL, "tbuser's own entry is not in its trace");
        if (find(&ju, mine))
                check_fields(find(&ju, mine), t0, t1);
        expect(find(&ju, debug) != NULL, "tbuser's debug entry is not in its trace (min_prio unset: all)");
        expect(find(&ju, other) == NULL, "tbother's entry is in tbuser's trace");
        /* journalctl shows tbuser only its own processes' entries, not root's in its session. */
        expect(find(&ju, in_session) == NULL, "root's entry from tbuser's session is in tbuser's trace");
        for (guint i = 0; i < ju.events->len; i++) {
                const Tracebus__SystemdJournaldEvent *e =
                        ((const Tracebus__TracePacket *) g_ptr_array_index(ju.events, i))->journald_event;

                expect(e->has_uid && e->uid == getpwnam("tbuser")->pw_uid, "tbuser's trace has an entry of uid %u: %s",
                       e->uid, e->message);
        }
        expect(find(&jr, mine) && find(&jr, other) && find(&jr, in_session),
               "root's trace lacks tbuser's, tbother's or root's entry");
        /* A holder of org.tracebus.manage reads the whole journal. */
        expect(find(&ja, mine) && find(&ja, other) && find(&ja, in_session),
               "tbadmin's (org.tracebus.manage) trace lacks tbuser's, tbother's or root's entry");
        expect(!find(&jr, debug), "root's trace has a priority 7 entry with min_prio 5");
        for (guint i = 0; i < jr.events->len; i++) {
                const Tracebus__SystemdJournaldEvent *e =
                        ((const Tracebus__TracePacket *) g_ptr_array_index(jr.events, i))->journald_event;

                expect(g_strcmp0(e->tag, TAG) == 0 && e->prio <= 5, "root's trace has an entry the filters exclude: "
                       "tag %s prio %u", e->tag, e->prio);
        }
        g_ptr_array_unref(ju.events);
        g_ptr_array_unref(jr.events);
        g_ptr_array_unref(ja.events);
        journald_done();
        verdict();
}

/* The entries of the last poll period are read at Stop: a marker
 * logged right before Stop is in the trace, every time. Root's session; the test itself
 * logs, so that nothing waits between the entry and the Stop. */
static void test_journald_last_entries(void) {
        const char *const events[] = { "sched/sched_switch", NULL };
        g_autofree char *ftrace = ftrace_config("", events, NULL);
        g_autofree char *cfg = g_strconcat(ftrace, "data_sources { config { name: \"linux.systemd_journald\" "
                                           "journald_config { filter_identifiers: \"" TAG "\" } } }\n", NULL);
        unsigned missing = 0;

        journald_ensure();
        for (unsigned i = 0; i < 20; i++) {
                g_autofree char *marker = g_strdup_printf("tbjournal-last-%d-%u", (int) getpid(), i);
                g_autofree char *out = g_strdup_printf("journald-last-%u.pftrace", i);
                g_auto(Trace) t = { 0 };
                g_auto(Rec) r = { 0 };
                Journal j = { 0 };

                rec_start(&r, "root", out, cfg);
                /* Past the first poll: the entry falls inside a period, not at the start. */
                g_usleep((50 + 13 * i) * 1000);
                g_assert_cmpint(sd_journal_send("MESSAGE=%s", marker, "PRIORITY=4", "SYSLOG_IDENTIFIER=" TAG, NULL), >=, 0);
                load(&r, &t, &j);
                if (!find(&j, marker)) {
                        missing++;
                        note("%s: the marker logged right before Stop is missing\n", out);
                }
                g_ptr_array_unref(j.events);
        }
        note("last entries: %u of 20 markers missing\n", missing);
        expect(missing == 0, "%u of 20 markers logged right before Stop are missing from the trace", missing);
        journald_done();   /* in this case's process, which started it */
        verdict();
}

RECORDER_WRAP(test_journald)
RECORDER_WRAP(test_journald_last_entries)

int main(int argc, char **argv) {
        int r;

        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();
        RECORDER_CASE("journald", test_journald);
        RECORDER_CASE("journald-last-entries", test_journald_last_entries);
        r = tb_test_run(TB_START_SERVICE);
        journald_done();
        return r;
}
