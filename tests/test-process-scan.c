/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The /proc scan that names processes and threads in the trace, checked against this
 * very process: its pid, its argv, and a thread with a name the test gives it; what
 * another user may see of it (kernel/process-view.h). */
#include <glib.h>
#include <glib/gstdio.h>
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "process-scan.h"

/* pthread's, not GLib's: GLib's GMutex is a bare futex that ThreadSanitizer cannot see. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static pid_t thread_tid;
static gboolean thread_release;

static void *named_thread(void *arg) {
        prctl(PR_SET_NAME, "tb-scan-test");
        pthread_mutex_lock(&lock);
        thread_tid = (pid_t) syscall(SYS_gettid);
        pthread_cond_broadcast(&cond);
        while (!thread_release)
                pthread_cond_wait(&cond, &lock);
        pthread_mutex_unlock(&lock);
        return NULL;
}

static pthread_t start_named_thread(void) {
        pthread_t t;

        /* Under the lock: the threads parked before this one are reading them. */
        pthread_mutex_lock(&lock);
        thread_tid = 0;
        thread_release = FALSE;
        g_assert_cmpint(pthread_create(&t, NULL, named_thread, NULL), ==, 0);
        while (thread_tid == 0)
                pthread_cond_wait(&cond, &lock);
        pthread_mutex_unlock(&lock);
        return t;
}

static void stop_named_thread(pthread_t t) {
        pthread_mutex_lock(&lock);
        thread_release = TRUE;
        pthread_cond_broadcast(&cond);
        pthread_mutex_unlock(&lock);
        pthread_join(t, NULL);
}

static const Tracebus__ProcessTree__Process *find_process(const Tracebus__ProcessTree *tree, pid_t pid) {
        for (size_t i = 0; i < tree->n_processes; i++)
                if (tree->processes[i]->pid == pid)
                        return tree->processes[i];
        return NULL;
}

static const Tracebus__ProcessTree__Thread *find_thread(const Tracebus__ProcessTree *tree, pid_t tid) {
        for (size_t i = 0; i < tree->n_threads; i++)
                if (tree->threads[i]->tid == tid)
                        return tree->threads[i];
        return NULL;
}

static const char *argv0;

static void test_scan_all(void) {
        ProcessTreeBuilder *b = NULL;
        const Tracebus__ProcessTree *tree;
        const Tracebus__ProcessTree__Process *self, *init;
        const Tracebus__ProcessTree__Thread *t;
        pthread_t thread = start_named_thread();

        g_assert_cmpint(process_tree_builder_new(&b), ==, 0);
        g_assert_cmpint(process_tree_builder_add_all(b), ==, 0);
        tree = process_tree_builder_tree(b);

        self = find_process(tree, getpid());
        g_assert_nonnull(self);
        g_assert_cmpint(self->ppid, ==, getppid());
        g_assert_cmpint(self->uid, ==, getuid());
        g_assert_cmpuint(self->n_cmdline, >=, 1);
        g_assert_cmpstr(self->cmdline[0], ==, argv0);
        g_assert_false(self->cmdline_is_comm);

        t = find_thread(tree, thread_tid);
        g_assert_nonnull(t);
        g_assert_cmpstr(t->name, ==, "tb-scan-test");
        g_assert_cmpint(t->tgid, ==, getpid());

        /* pid 1 exists everywhere; a kernel thread (kthreadd, pid 2) has no argv. */
        init = find_process(tree, 1);
        g_assert_nonnull(init);
        if (find_process(tree, 2) && find_process(tree, 2)->ppid == 0)
                g_assert_true(find_process(tree, 2)->cmdline_is_comm);

        /* Described once: a second scan adds nothing. */
        process_tree_builder_reset(b);
        g_assert_cmpint(process_tree_builder_add_all(b), ==, 0);
        g_assert_null(find_process(process_tree_builder_tree(b), getpid()));
        g_assert_cmpint(process_tree_builder_add_thread(b, thread_tid), ==, 0);

        stop_named_thread(thread);
        process_tree_builder_free(b);
}

/* A thread first seen in the event stream: described with its process, once. */
static void test_add_thread(void) {
        ProcessTreeBuilder *b = NULL;
        const Tracebus__ProcessTree *tree;
        pthread_t thread = start_named_thread();

        g_assert_cmpint(process_tree_builder_new(&b), ==, 0);
        g_assert_cmpint(process_tree_builder_add_thread(b, thread_tid), ==, 1);
        tree = process_tree_builder_tree(b);
        g_assert_cmpuint(tree->n_processes, ==, 1);
        g_assert_cmpint(tree->processes[0]->pid, ==, getpid());
        g_assert_cmpuint(tree->n_threads, ==, 1);
        g_assert_cmpstr(tree->threads[0]->name, ==, "tb-scan-test");
        g_assert_cmpint(process_tree_builder_add_thread(b, thread_tid), ==, 0);
        g_assert_cmpuint(process_tree_builder_n_entries(b), ==, 2);

        /* A pid that does not exist is skipped, not an error. */
        g_assert_cmpint(process_tree_builder_add_thread(b, 0x7ffffff0), ==, 0);

        /* Renamed to a name /proc/PID/status shows escaped ("tb\\scan\\n"): described
         * again with the real name, as comm has it. */
        g_assert_cmpint(pthread_setname_np(thread, "tb\\scan\n"), ==, 0);
        g_assert_cmpint(process_tree_builder_redescribe_thread(b, thread_tid), ==, 1);
        tree = process_tree_builder_tree(b);
        g_assert_cmpuint(tree->n_threads, ==, 2);
        g_assert_cmpstr(tree->threads[1]->name, ==, "tb\\scan\n");

        stop_named_thread(thread);
        process_tree_builder_free(b);
}

#define TRACEFS "/sys/kernel/tracing"

static void write_tracefs(const char *instance, const char *file, const char *value) {
        g_autofree char *path = g_build_filename(instance, file, NULL);
        g_autoptr(GError) error = NULL;

        g_assert_true(g_file_set_contents_full(path, value, -1, G_FILE_SET_CONTENTS_NONE, 0644, &error));
        g_assert_no_error(error);
}

/* A process that names itself, sleeps (so the kernel switches it out and saves its
 * comm and tgid) and exits; reaped when this returns, so gone from /proc. */
static pid_t run_short_lived(const char *name) {
        g_autofree char *proc = NULL;
        int status;
        pid_t pid = fork();

        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                prctl(PR_SET_NAME, name);
                g_usleep(20 * 1000);
                _exit(0);
        }
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        proc = g_strdup_printf("/proc/%d", (int) pid);
        g_assert_false(g_file_test(proc, G_FILE_TEST_EXISTS));
        return pid;
}

/* A thread gone from /proc before it was looked at is described from the kernel's
 * saved_tgids and saved_cmdlines (the real kernel's, with record-tgid on in an instance
 * of the test's own): its tgid and name, and its process, named by its comm. A pid the
 * kernel never saw waits for the next read of the tables and is then dropped. */
static void test_gone_thread(void) {
        char instance[128];     /* not on the heap: the child would report it lost */
        const Tracebus__ProcessTree__Thread *t;
        const Tracebus__ProcessTree__Process *p;
        ProcessTreeBuilder *b = NULL;
        pid_t gone, later;

        g_assert_true(g_file_test(TRACEFS "/saved_tgids", G_FILE_TEST_EXISTS));
        g_snprintf(instance, sizeof(instance), TRACEFS "/instances/tb-scan-test-%d", (int) getpid());
        g_assert_cmpint(g_mkdir(instance, 0755), ==, 0);
        write_tracefs(instance, "options/record-tgid", "1");
        write_tracefs(instance, "events/sched/sched_switch/enable", "1");
        write_tracefs(instance, "tracing_on", "1");
        gone = run_short_lived("tb-gone-test");
        later = run_short_lived("tb-gone-later");
        write_tracefs(instance, "events/sched/sched_switch/enable", "0");

        g_assert_cmpint(process_tree_builder_new(&b), ==, 0);
        process_tree_builder_set_tracefs(b, TRACEFS);
        g_assert_cmpint(process_tree_builder_add_thread(b, gone), ==, 1);
        t = find_thread(process_tree_builder_tree(b), gone);
        g_assert_nonnull(t);
        g_assert_cmpint(t->tgid, ==, gone);
        g_assert_cmpstr(t->name, ==, "tb-gone-test");
        p = find_process(process_tree_builder_tree(b), gone);
        g_assert_nonnull(p);
        g_assert_true(p->cmdline_is_comm);
        g_assert_cmpuint(p->n_cmdline, ==, 1);
        g_assert_cmpstr(p->cmdline[0], ==, "tb-gone-test");

        /* Gone as well, but the tables were read just now: it waits for the next read
         * (forced here, as at the end of a trace), and is described then. */
        g_assert_cmpint(process_tree_builder_add_thread(b, later), ==, 0);
        g_assert_null(find_thread(process_tree_builder_tree(b), later));
        g_assert_cmpint(process_tree_builder_retry_gone(b, /* force= */ true), ==, 1);
        t = find_thread(process_tree_builder_tree(b), later);
        g_assert_nonnull(t);
        g_assert_cmpstr(t->name, ==, "tb-gone-later");

        /* Never seen by the kernel: waits, then the last read does not know it either. */
        g_assert_cmpint(process_tree_builder_add_thread(b, 0x7ffffff0), ==, 0);
        g_assert_cmpint(process_tree_builder_retry_gone(b, /* force= */ true), ==, 0);
        g_assert_cmpuint(process_tree_builder_n_entries(b), ==, 4);

        process_tree_builder_free(b);
        g_assert_cmpint(g_rmdir(instance), ==, 0);
}

/* Threads of this process, each parked until released, for the budget tests. */
#define N_PARKED 3
static pthread_t parked[N_PARKED];
static pid_t parked_tid[N_PARKED];

static void park_threads(void) {
        for (int i = 0; i < N_PARKED; i++) {
                parked[i] = start_named_thread();
                parked_tid[i] = thread_tid;
        }
}

static void release_threads(void) {
        pthread_mutex_lock(&lock);
        thread_release = TRUE;
        pthread_cond_broadcast(&cond);
        pthread_mutex_unlock(&lock);
        for (int i = 0; i < N_PARKED; i++)
                pthread_join(parked[i], NULL);
}

/* Within a budget of 2 threads: the least recently seen is forgotten, not the one seen
 * again meanwhile, and described again (re-emitted) when it shows up again. */
static void test_lru_redescribe(void) {
        ProcessTreeBuilder *b = NULL;
        pid_t a, c, d;

        park_threads();
        a = parked_tid[0], c = parked_tid[1], d = parked_tid[2];
        g_assert_cmpint(process_tree_builder_new(&b), ==, 0);
        process_tree_builder_set_limits(b, 2, PROCESS_TREE_WRITE);
        g_assert_cmpint(process_tree_builder_add_thread(b, a), ==, 1);
        g_assert_cmpint(process_tree_builder_add_thread(b, getpid()), ==, 1);
        g_assert_cmpint(process_tree_builder_add_thread(b, a), ==, 0);      /* seen: a is now the newest */
        g_assert_cmpuint(process_tree_builder_n_evicted(b), ==, 0);
        process_tree_builder_reset(b);

        g_assert_cmpint(process_tree_builder_add_thread(b, c), ==, 1);      /* evicts the main thread */
        g_assert_cmpuint(process_tree_builder_n_evicted(b), ==, 1);
        g_assert_cmpint(process_tree_builder_add_thread(b, a), ==, 0);
        g_assert_cmpint(process_tree_builder_add_thread(b, d), ==, 1);      /* evicts c */
        process_tree_builder_reset(b);

        /* Seen again after its eviction: described again, with its process known still. */
        g_assert_cmpint(process_tree_builder_add_thread(b, getpid()), ==, 1);
        g_assert_nonnull(find_thread(process_tree_builder_tree(b), getpid()));
        g_assert_cmpuint(process_tree_builder_tree(b)->n_processes, ==, 0);
        g_assert_cmpint(process_tree_builder_add_thread(b, c), ==, 1);
        g_assert_cmpint(find_thread(process_tree_builder_tree(b), c)->tgid, ==, getpid());
        g_assert_cmpuint(process_tree_builder_n_evicted(b), ==, 4);

        process_tree_builder_free(b);
        release_threads();
}

typedef struct KeptTrees {
        GArray *tids;             /* of the threads written, in order */
        GArray *timestamps;       /* of each tree */
        guint n_processes;
} KeptTrees;

static int collect_kept(const Tracebus__ProcessTree *tree, void *userdata) {
        KeptTrees *k = userdata;

        g_array_append_val(k->timestamps, tree->collection_end_timestamp);
        for (size_t i = 0; i < tree->n_threads; i++)
                g_array_append_val(k->tids, tree->threads[i]->tid);
        k->n_processes += tree->n_processes;
        return 0;
}

/* @b's kept descriptions, as process_tree_builder_write_kept() writes them. */
static KeptTrees write_kept(ProcessTreeBuilder *b) {
        KeptTrees k = { g_array_new(FALSE, FALSE, sizeof(pid_t)), g_array_new(FALSE, FALSE, sizeof(uint64_t)), 0 };

        g_assert_cmpint(process_tree_builder_write_kept(b, collect_kept, &k), ==, 0);
        return k;
}

static void kept_trees_done(KeptTrees *k) {
        g_array_unref(k->tids);
        g_array_unref(k->timestamps);
}

/* A ring trace keeps its descriptions for the end: the latest within the budget, each
 * at its collection time, oldest first. */
static void test_keep_latest(void) {
        ProcessTreeBuilder *b = NULL;
        KeptTrees k;

        park_threads();
        g_assert_cmpint(process_tree_builder_new(&b), ==, 0);
        process_tree_builder_set_limits(b, 2, PROCESS_TREE_KEEP_LATEST);
        for (int i = 0; i < N_PARKED; i++) {
                g_assert_cmpint(process_tree_builder_add_thread(b, parked_tid[i]), ==, 1);
                process_tree_builder_keep(b, 1000 + (uint64_t) i);
                g_assert_cmpuint(process_tree_builder_n_entries(b), ==, 0);
        }
        k = write_kept(b);
        g_assert_cmpuint(k.tids->len, ==, 2);
        g_assert_cmpint(g_array_index(k.tids, pid_t, 0), ==, parked_tid[1]);
        g_assert_cmpint(g_array_index(k.tids, pid_t, 1), ==, parked_tid[2]);
        g_assert_cmpuint(k.n_processes, ==, 1);
        g_assert_cmpuint(k.timestamps->len, ==, 3);    /* the process at 1000, the threads at 1001, 1002 */
        g_assert_cmpuint(g_array_index(k.timestamps, uint64_t, 0), ==, 1000);
        g_assert_cmpuint(g_array_index(k.timestamps, uint64_t, 2), ==, 1002);
        kept_trees_done(&k);

        /* Renamed: the newer description replaces the kept one. */
        g_assert_cmpint(process_tree_builder_redescribe_thread(b, parked_tid[2]), ==, 1);
        process_tree_builder_keep(b, 2000);
        k = write_kept(b);
        g_assert_cmpuint(k.tids->len, ==, 2);
        g_assert_cmpint(g_array_index(k.tids, pid_t, 1), ==, parked_tid[2]);
        g_assert_cmpuint(g_array_index(k.timestamps, uint64_t, k.timestamps->len - 1), ==, 2000);
        kept_trees_done(&k);

        process_tree_builder_free(b);
        release_threads();
}

/* A discard trace keeps the first ones: once full, a new thread is not described. */
static void test_keep_first(void) {
        ProcessTreeBuilder *b = NULL;
        KeptTrees k;

        park_threads();
        g_assert_cmpint(process_tree_builder_new(&b), ==, 0);
        process_tree_builder_set_limits(b, 2, PROCESS_TREE_KEEP_FIRST);
        g_assert_cmpint(process_tree_builder_add_thread(b, parked_tid[0]), ==, 1);
        g_assert_cmpint(process_tree_builder_add_thread(b, parked_tid[1]), ==, 1);
        g_assert_cmpint(process_tree_builder_add_thread(b, parked_tid[2]), ==, 0);
        process_tree_builder_keep(b, 1000);
        k = write_kept(b);
        g_assert_cmpuint(k.tids->len, ==, 2);
        g_assert_cmpint(g_array_index(k.tids, pid_t, 0) + g_array_index(k.tids, pid_t, 1), ==,
                        parked_tid[0] + parked_tid[1]);
        g_assert_cmpuint(process_tree_builder_n_evicted(b), ==, 0);
        kept_trees_done(&k);
        process_tree_builder_free(b);
        release_threads();
}

/* A child running /bin/sh with @argv, once it has exec'd (its cmdline is then no longer
 * this process's), in a process group of its own that the caller kills. */
static pid_t spawn_sh(char **argv) {
        pid_t pid = fork();

        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                setpgid(0, 0);      /* its sleep is killed with it */
                execv("/bin/sh", argv);
                _exit(127);
        }
        /* exec sets /proc/PID/exe before it lays out argv: a child seen between the two
         * has an empty cmdline, so both are waited for. */
        for (int i = 0; i < 500; i++) {
                g_autofree char *path = g_strdup_printf("/proc/%d/exe", (int) pid);
                g_autofree char *exe = g_file_read_link(path, NULL);
                g_autofree char *cmdline_path = g_strdup_printf("/proc/%d/cmdline", (int) pid);
                g_autofree char *cmdline = NULL;
                gsize len = 0;

                if (exe && g_str_has_suffix(exe, "sh") &&
                    g_file_get_contents(cmdline_path, &cmdline, &len, NULL) && len > 0)
                        return pid;
                g_usleep(10 * 1000);
        }
        g_assert_not_reached();
}

static const Tracebus__ProcessTree__Process *describe_child(ProcessTreeBuilder *b, pid_t pid) {
        g_assert_cmpint(process_tree_builder_add_thread(b, pid), ==, 1);
        return find_process(process_tree_builder_tree(b), pid);
}

/* A command line of 64 KiB: the process is described, with its first whole arguments
 * that fit in 4 KiB; an argv[0] of 64 KiB alone is cut to its first 4 KiB. */
static void test_long_cmdline(void) {
        g_autofree char *arg = g_strnfill(1000, 'a'), *huge = g_strnfill(64 * 1024, 'x');
        g_autoptr(GPtrArray) argv = g_ptr_array_new();
        const Tracebus__ProcessTree__Process *p;
        ProcessTreeBuilder *b = NULL;
        size_t total = 0;
        pid_t many, single;

        g_ptr_array_add(argv, "/bin/sh");
        g_ptr_array_add(argv, "-c");
        g_ptr_array_add(argv, "sleep 30; :");
        for (int i = 0; i < 64; i++)
                g_ptr_array_add(argv, arg);
        g_ptr_array_add(argv, NULL);
        many = spawn_sh((char **) argv->pdata);
        single = spawn_sh((char *[]) { huge, "-c", "sleep 30; :", NULL });

        g_assert_cmpint(process_tree_builder_new(&b), ==, 0);
        p = describe_child(b, many);
        g_assert_nonnull(p);
        g_assert_cmpuint(p->n_cmdline, ==, 3 + 4);   /* 23 + 4 * 1001 bytes fit in 4096, a 5th does not */
        g_assert_cmpstr(p->cmdline[0], ==, "/bin/sh");
        g_assert_cmpstr(p->cmdline[6], ==, arg);
        for (size_t i = 0; i < p->n_cmdline; i++)
                total += strlen(p->cmdline[i]) + 1;
        g_assert_cmpuint(total, <=, 4096);

        p = describe_child(b, single);
        g_assert_nonnull(p);
        g_assert_cmpuint(p->n_cmdline, ==, 1);
        g_assert_cmpuint(strlen(p->cmdline[0]), ==, 4096);
        g_assert_false(p->cmdline_is_comm);

        process_tree_builder_free(b);
        for (pid_t pid, *k = (pid_t[]) { many, single, 0 }; (pid = *k); k++) {
                kill(-pid, SIGKILL);
                waitpid(pid, NULL, 0);
        }
}

/* A process of one thread ("Threads: 1" in its status) has its main thread described
 * without a listing of task/; one of two threads still has both listed. */
static void test_scan_single_thread(void) {
        ProcessTreeBuilder *b = NULL;
        const Tracebus__ProcessTree *tree;
        const Tracebus__ProcessTree__Thread *t;
        pid_t child = spawn_sh((char *[]) { "/bin/sh", "-c", "sleep 30; :", NULL });
        pthread_t thread = start_named_thread();

        g_assert_cmpint(process_tree_builder_new(&b), ==, 0);
        g_assert_cmpint(process_tree_builder_add_all(b), ==, 0);
        tree = process_tree_builder_tree(b);
        g_assert_nonnull(find_process(tree, child));
        t = find_thread(tree, child);
        g_assert_nonnull(t);
        g_assert_cmpint(t->tgid, ==, child);
        g_assert_cmpstr(t->name, ==, "sh");
        g_assert_nonnull(find_thread(tree, getpid()));
        t = find_thread(tree, thread_tid);
        g_assert_nonnull(t);
        g_assert_cmpstr(t->name, ==, "tb-scan-test");

        stop_named_thread(thread);
        process_tree_builder_free(b);
        kill(-child, SIGKILL);
        waitpid(child, NULL, 0);
}

/* A chain born and gone within one pass, as a build's shells are: process A (of this
 * process), process B forked by A, thread C of B, the children's pids below their
 * creators' (the notes are taken in pid order). Each is described from the notes alone,
 * with no saved table to read (none is set): B's parent is A, C is a thread of B. */
static void test_born_chain(void) {
        const int32_t a = 5000300, bb = 5000200, c = 5000100;   /* above any pid_max: never in /proc */
        FtraceTaskNote notes[] = {
                { .timestamp = 3, .clone_flags = CLONE_THREAD | CLONE_VM, .pid = c, .creator = bb, .newtask = true,
                  .comm = "tb-thread" },
                { .timestamp = 2, .clone_flags = SIGCHLD, .pid = bb, .creator = a, .newtask = true, .comm = "tb-child" },
                { .timestamp = 1, .clone_flags = SIGCHLD, .pid = a, .creator = getpid(), .newtask = true,
                  .comm = "tb-parent" },
        };
        const Tracebus__ProcessTree__Process *p;
        const Tracebus__ProcessTree__Thread *t;
        ProcessTreeBuilder *b = NULL;

        g_assert_cmpint(process_tree_builder_new(&b), ==, 0);
        g_assert_cmpint(process_tree_builder_add_tasks(b, notes, G_N_ELEMENTS(notes)), ==, 3);
        p = find_process(process_tree_builder_tree(b), a);
        g_assert_nonnull(p);
        g_assert_cmpint(p->ppid, ==, getpid());
        p = find_process(process_tree_builder_tree(b), bb);
        g_assert_nonnull(p);
        g_assert_cmpint(p->ppid, ==, a);
        g_assert_cmpstr(p->cmdline[0], ==, "tb-child");
        t = find_thread(process_tree_builder_tree(b), c);
        g_assert_nonnull(t);
        g_assert_cmpint(t->tgid, ==, bb);
        g_assert_cmpstr(t->name, ==, "tb-thread");
        process_tree_builder_free(b);
}

/* What another user sees of this process (root's, or the test user's): its pid, parent
 * and comm, no argv, uid or start time; its threads by name. Unless /proc hides other
 * users' processes (hidepid=), when it is not there at all. Its owner sees it whole. */
static void test_view_of_others(void) {
        g_autofree char *mountinfo = NULL, *comm = NULL;
        uid_t other = getuid() == 65534 ? 65533 : 65534;
        const Tracebus__ProcessTree__Process *self;
        const Tracebus__ProcessTree *tree;
        ProcessTreeBuilder *b = NULL;
        pthread_t thread = start_named_thread();
        ProcMountHide hide;

        g_assert_true(g_file_get_contents("/proc/self/mountinfo", &mountinfo, NULL, NULL));
        proc_mount_hide_parse(mountinfo, &hide);
        g_assert_true(g_file_get_contents("/proc/self/comm", &comm, NULL, NULL));
        g_strchomp(comm);

        g_assert_cmpint(process_tree_builder_new(&b), ==, 0);
        process_tree_builder_set_options(b, /* record_age= */ true, /* skip_main_thread= */ false);
        process_tree_builder_set_view(b, process_view_make(other, /* all= */ false));
        g_assert_cmpint(process_tree_builder_add_all(b), ==, 0);
        tree = process_tree_builder_tree(b);
        self = find_process(tree, getpid());
        if (hide.hidepid != 0) {
                g_assert_null(self);
                g_assert_null(find_thread(tree, thread_tid));
        } else {
                g_assert_nonnull(self);
                g_assert_cmpint(self->ppid, ==, getppid());
                g_assert_false(self->has_uid);
                g_assert_false(self->has_process_start_from_boot);
                g_assert_cmpuint(self->n_cmdline, ==, 1);
                g_assert_true(self->cmdline_is_comm);
                g_assert_cmpstr(self->cmdline[0], ==, comm);
                g_assert_nonnull(find_thread(tree, thread_tid));
                g_assert_cmpstr(find_thread(tree, thread_tid)->name, ==, "tb-scan-test");
        }
        process_tree_builder_free(b);

        g_assert_cmpint(process_tree_builder_new(&b), ==, 0);
        process_tree_builder_set_view(b, process_view_make(getuid(), /* all= */ false));
        g_assert_cmpint(process_tree_builder_add_thread(b, thread_tid), ==, 1);
        self = find_process(process_tree_builder_tree(b), getpid());
        g_assert_nonnull(self);
        g_assert_true(self->has_uid);
        g_assert_cmpstr(self->cmdline[0], ==, argv0);
        g_assert_false(self->cmdline_is_comm);
        process_tree_builder_free(b);
        stop_named_thread(thread);
}

/* /proc's hidepid= and gid= as mountinfo shows them, old numbers and new names; the
 * mount on top counts; other mounts of proc (a container's /proc elsewhere) do not. */
static void test_proc_mount_hide(void) {
        ProcMountHide h;

        proc_mount_hide_parse("22 1 0:21 / /sys rw,nosuid - sysfs sysfs rw\n"
                              "23 1 0:22 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n", &h);
        g_assert_cmpuint(h.hidepid, ==, 0);
        g_assert_false(h.has_gid);
        proc_mount_hide_parse("23 1 0:22 / /proc rw,relatime shared:12 - proc proc rw,hidepid=invisible,gid=27", &h);
        g_assert_cmpuint(h.hidepid, ==, 2);
        g_assert_true(h.has_gid);
        g_assert_cmpuint(h.gid, ==, 27);
        proc_mount_hide_parse("23 1 0:22 / /proc rw - proc proc rw,hidepid=2\n"
                              "90 23 0:40 / /proc rw - proc proc rw,hidepid=ptraceable\n", &h);
        g_assert_cmpuint(h.hidepid, ==, 4);
        g_assert_false(h.has_gid);
        proc_mount_hide_parse("23 1 0:22 / /proc rw - proc proc rw,hidepid=noaccess\n"
                              "91 1 0:41 / /srv/ct/proc rw - proc proc rw\n"
                              "92 1 0:42 / /proc rw - tmpfs none rw\n", &h);
        g_assert_cmpuint(h.hidepid, ==, 1);
        proc_mount_hide_parse("23 1 0:22 / /proc rw - proc proc rw,hidepid=something-new", &h);
        g_assert_cmpuint(h.hidepid, ==, 2);

        g_assert_cmpint(process_status_owner("Name:\tx\nUid:\t1000\t1000\t1000\t1000\n"), ==, 1000);
        g_assert_cmpint(process_status_owner("Name:\tsu\nUid:\t1000\t0\t0\t0\n"), ==, -1);
        g_assert_cmpint(process_status_owner("Name:\tx\n"), ==, -1);
}

int main(int argc, char **argv) {
        argv0 = argv[0];
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/process-scan/all", test_scan_all);
        g_test_add_func("/process-scan/thread", test_add_thread);
        g_test_add_func("/process-scan/gone-thread", test_gone_thread);
        g_test_add_func("/process-scan/lru-redescribe", test_lru_redescribe);
        g_test_add_func("/process-scan/keep-latest", test_keep_latest);
        g_test_add_func("/process-scan/keep-first", test_keep_first);
        g_test_add_func("/process-scan/long-cmdline", test_long_cmdline);
        g_test_add_func("/process-scan/single-thread", test_scan_single_thread);
        g_test_add_func("/process-scan/born-chain", test_born_chain);
        g_test_add_func("/process-scan/view-of-others", test_view_of_others);
        g_test_add_func("/process-scan/proc-mount-hide", test_proc_mount_hide);
        return g_test_run();
}
