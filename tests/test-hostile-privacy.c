/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite: hostile input and privacy. Every method gets bad input and must
 * answer with a named error and leave the service unchanged: no session, no
 * tracefs instance, no file. This part: another user must learn nothing of a
 * session: not its path, key, properties or signals. The other parts are
 * tests/test-hostile-*.c.
 *
 * Raw calls go through root's own GDBus connection (tests/root-call.h); the
 * per-user cases use the sd-bus test client of tb-client.h and busctl.
 */
#include <errno.h>
#include <pwd.h>
#include <fcntl.h>
#include <gio/gunixfdlist.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.pb-c.h"
#include "root-call.h"
#include "session-util.h"

/* ===================================================================== */
/* 5. Privacy                                                             */
/* ===================================================================== */

/* A session path of the same shape as @a's that is neither @a nor @b: ids are random,
 * so any other number is (almost surely) no session. */
static char *unused_session_path(const char *a, const char *b) {
        for (guint64 id = 281474976710655ULL;; id--) {
                g_autofree char *p = g_strdup_printf(TB_MANAGER_PATH "/session/%" G_GUINT64_FORMAT, id);
                if (!g_str_equal(p, a) && !g_str_equal(p, b))
                        return g_steal_pointer(&p);
        }
}

/* What a spy's every read and change of the session at @target answers (each call must fail). */
static GPtrArray *spy_replies(Client *o, const char *target, const char *const *props, size_t n_props) {
        static const struct { const char *cmd; char kind; } changes[] = {
                { "getall", 'V' }, { "detach stolen", 'D' }, { "sdetach stolen2", 'D' },
                { "stop", 'S' }, { "sstop", 'S' },
        };
        GPtrArray *replies = g_ptr_array_new_with_free_func(g_free);
        g_autofree char *use = g_strconcat("use ", target, NULL);
        g_autofree char *err = NULL;

        g_free(client_cmd(o, use, 'U', &err));
        for (size_t i = 0; i < n_props; i++) {
                g_autofree char *cmd = g_strconcat("get ", props[i], NULL);
                g_autofree char *v = client_cmd(o, cmd, 'V', &err);
                g_assert_null(v);
                g_assert_true(g_str_has_prefix(err, ERR_UNKNOWN_OBJECT));
                g_ptr_array_add(replies, g_strdup(err));
        }
        for (size_t i = 0; i < G_N_ELEMENTS(changes); i++) {
                g_autofree char *v = client_cmd(o, changes[i].cmd, changes[i].kind, &err);
                g_assert_null(v);
                g_ptr_array_add(replies, g_strdup(err));
        }
        {
                g_autofree char *cmd = g_strconcat("introspect ", target, NULL);
                g_autofree char *xml = client_cmd(o, cmd, 'I', &err);
                g_ptr_array_add(replies, g_strdup(xml ?: err));
        }
        return replies;
}

/* tbother learns nothing of tbuser's sessions: not listed, not in the
 * object tree, no property, key unknown, errors that name nothing of it. */
static void case_privacy_methods(void) {
        g_autofree char *out_path = NULL, *path = NULL, *err = NULL, *detached = NULL, *detached_out = NULL;
        int fd = open_output("private.pftrace", &out_path);
        ClientSpec holder = { .user = "tbuser", .op = OP_START, .events = sched_events, .duration_ms = 60000,
                              .output_fd = fd, .hold = true };
        ClientSpec det = { .user = "tbuser", .op = OP_START, .events = sched_events, .duration_ms = 60000,
                           .detach_key = "k-private-9", .output_fd = -1 };
        ClientSpec spy = { .user = "tbother", .op = OP_HOLD_NAME, .output_fd = -1 };
        g_autofree char *name = NULL;
        g_autoptr(GPtrArray) replies = g_ptr_array_new_with_free_func(g_free);
        Client c, o;

        client_spawn(&holder, &c);
        close(fd);
        path = client_expect(&c, 'O', 30000, &err);
        g_assert_nonnull(path);
        g_assert_null(client_run(&det, &detached));
        detached_out = g_strdup(detached);
        /* Ids are random: the next session's id tells nothing of how many others began
         * in between (a sequence gave the second one id + 1). */
        g_assert_cmpuint(g_ascii_strtoull(strrchr(detached, '/') + 1, NULL, 10), !=,
                         g_ascii_strtoull(strrchr(path, '/') + 1, NULL, 10) + 1);

        client_spawn(&spy, &o);
        name = client_expect(&o, 'N', 10000, &err);
        g_assert_nonnull(name);
        {
                const char *props[] = { "State", "OwnerUid", "OutputPath", "Events", "BytesWritten", "Detached" };
                g_autofree char *l = client_cmd(&o, "list", 'L', &err);
                g_autofree char *i1 = NULL, *i2 = NULL;
                g_assert_nonnull(l);
                g_assert_cmpstr(g_strstrip(l), ==, "");
                g_assert_false(g_str_equal(client_cmd(&o, "isdetached k-private-9", 'B', &err) ?: "", "true"));
                i1 = client_cmd(&o, "introspect /org/tracebus/Tracebus1/session", 'I', &err);
                if (i1)
                        g_ptr_array_add(replies, g_strdup(i1));
                else
                        g_ptr_array_add(replies, g_strdup(err));
                i2 = client_cmd(&o, "introspect /org/tracebus/Tracebus1", 'I', &err);
                g_ptr_array_add(replies, g_strdup(i2 ?: err));
                /* Every answer about tbuser's two sessions is, word for word once the path
                 * tbother sent is taken out, the answer about a path no session has. */
                g_autofree char *missing = unused_session_path(path, detached);
                g_autoptr(GPtrArray) about_missing = spy_replies(&o, missing, props, G_N_ELEMENTS(props));
                for (int k = 0; k < 2; k++) {
                        const char *target = k == 0 ? path : detached;
                        g_autoptr(GPtrArray) about = spy_replies(&o, target, props, G_N_ELEMENTS(props));
                        g_assert_cmpuint(about->len, ==, about_missing->len);
                        for (guint i = 0; i < about->len; i++) {
                                g_autofree char *a = tb_str_replace(about->pdata[i], target, "PATH");
                                g_autofree char *b = tb_str_replace(about_missing->pdata[i], missing, "PATH");
                                g_assert_cmpstr(a, ==, b);
                                g_ptr_array_add(replies, g_steal_pointer(&a));
                        }
                }
                {
                        g_autofree char *v = client_cmd(&o, "attach k-private-9", 'O', &err);
                        g_assert_null(v);
                        g_ptr_array_add(replies, g_strdup(err));
                        g_assert_true(g_str_has_prefix(err, ERR_NO_SUCH_SESSION));
                }
        }
        client_finish(&o, 5000);

        /* Nothing tbother got names tbuser's files, uid, name or key. */
        {
                g_auto(TbUser) u = { 0 };
                g_autofree char *uid_s = NULL;
                g_autofree char *det_path_in_state = NULL;
                g_autoptr(GError) error = NULL;
                g_assert_true(tb_user_lookup("tbuser", &u, &error));
                uid_s = g_strdup_printf("%u", (unsigned) u.uid);
                for (guint i = 0; i < replies->len; i++) {
                        const char *r = replies->pdata[i];
                        note("tbother got: %.200s\n", r);
                        g_assert_null(strstr(r, out_path));
                        g_assert_null(strstr(r, "private.pftrace"));
                        g_assert_null(strstr(r, "tbuser"));
                        g_assert_null(strstr(r, "/traces/"));
                        g_assert_null(strstr(r, "sched_switch"));
                        g_assert_null(strstr(r, strrchr(path, '/')));
                        g_assert_null(strstr(r, strrchr(detached, '/')));
                }
        }

        /* Clean up: tbuser's sessions are intact, and stop normally. */
        {
                g_autofree char *s1 = client_cmd(&c, "stop", 'S', &err);
                g_assert_nonnull(s1);
                ClientSpec stop = { .user = "tbuser", .op = OP_STOP_MANAGER, .path = detached, .output_fd = -1 };
                g_autofree char *e2 = client_run(&stop, NULL);
                g_assert_null(e2);
        }
        client_finish(&c, 5000);
        wait_over(path, 10000);
        wait_over(detached, 10000);
}

/* SessionEnded and PropertiesChanged reach only the owner: a listener as
 * tbother (an ordinary match and an eavesdropping dbus-monitor) hears
 * nothing of tbuser's session, while tbuser's own connection does. */
static void case_privacy_signals(void) {
        g_autofree char *out_path = NULL, *path = NULL, *err = NULL, *name = NULL;
        int fd = open_output("signals.pftrace", &out_path);
        ClientSpec holder = { .user = "tbuser", .op = OP_START, .events = sched_events, .duration_ms = 60000,
                              .output_fd = fd, .hold = true };
        ClientSpec spy = { .user = "tbother", .op = OP_HOLD_NAME, .output_fd = -1 };
        g_autofree char *mon_out = g_build_filename(tb_bus()->tmpdir, "monitor-tbother.txt", NULL);
        g_autoptr(GPtrArray) own_x = NULL, own_p = NULL, spy_x = NULL, spy_p = NULL;
        pid_t monitor;
        Client c, o;

        client_spawn(&spy, &o);
        name = client_expect(&o, 'N', 10000, &err);
        g_assert_nonnull(name);
        monitor = fork();
        g_assert_cmpint(monitor, >=, 0);
        if (monitor == 0) {
                int out = open(mon_out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
                if (out < 0)
                        _exit(127);
                dup2(out, 1);
                dup2(out, 2);
                execlp("setpriv", "setpriv", "--reuid=tbother", "--regid=tbother", "--init-groups", "dbus-monitor",
                       "--system", "sender='" TB_BUS_NAME "'", "eavesdrop=true", (char *) NULL);
                _exit(127);
        }
        g_usleep(500 * 1000);

        client_spawn(&holder, &c);
        close(fd);
        path = client_expect(&c, 'O', 30000, &err);
        g_assert_nonnull(path);
        g_free(wait_state(path, "recording", 10000));
        g_free(client_cmd(&c, "detach sig-key", 'D', &err));
        g_free(client_cmd(&c, "attach sig-key", 'O', &err));
        g_usleep(1500 * 1000);
        g_free(client_cmd(&c, "stop", 'S', &err));
        own_x = client_collect(&c, 'X', 2000);
        own_p = client_collect(&c, 'P', 100);
        spy_x = client_collect(&o, 'X', 500);
        spy_p = client_collect(&o, 'P', 100);
        note("owner got %u SessionEnded, %u PropertiesChanged; tbother %u and %u\n", own_x->len, own_p->len,
             spy_x->len, spy_p->len);
        g_assert_cmpuint(own_x->len, >=, 1);
        g_assert_cmpuint(own_p->len, >=, 1);
        g_assert_cmpuint(spy_x->len, ==, 0);
        g_assert_cmpuint(spy_p->len, ==, 0);
        client_finish(&c, 5000);
        client_finish(&o, 5000);
        wait_over(path, 10000);
        {
                int status;
                g_autofree char *text = NULL;
                (void) kill(monitor, SIGTERM);
                (void) waitpid(monitor, &status, 0);
                g_assert_true(g_file_get_contents(mon_out, &text, NULL, NULL));
                note("dbus-monitor as tbother: %.300s\n", text);
                g_assert_null(strstr(text, path));
                g_assert_null(strstr(text, "SessionEnded"));
                g_assert_null(strstr(text, "signals.pftrace"));
        }
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();

        tb_test_add_isolated("/bus/hostile/05-privacy-methods", case_privacy_methods);
        tb_test_add_isolated("/bus/hostile/05-privacy-signals", case_privacy_signals);
        tb_test_add_isolated("/bus/hostile/99-no-leftovers", root_test_no_leftovers);
        return tb_test_run(TB_START_SERVICE);
}
