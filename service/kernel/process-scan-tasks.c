/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Tasks that task_newtask and task_rename events name. The service reads /proc for a new
 * pid after the drain period that saw it, by when a task that lived a millisecond is
 * gone; its process then had no entry in the trace unless the kernel's saved tables
 * still held it (saved_cmdlines keeps a few hundred comms, which a fork storm
 * overwrites). task_newtask's payload says all the tree needs: the new pid, its comm,
 * and whether it is a thread of its creator's process or a new process whose parent
 * that is (clone_flags' CLONE_THREAD), as trace_processor reads it too.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "process-scan-local.h"

static int note_cmp(const void *a, const void *b) {
        const FtraceTaskNote *x = a, *y = b;

        if (x->pid != y->pid)
                return x->pid < y->pid ? -1 : 1;
        return x->timestamp < y->timestamp ? -1 : x->timestamp > y->timestamp;
}

/* The process of thread @tid: from its description, else from /proc; 0 when unknown. */
static int32_t known_tgid(ProcessTreeBuilder *b, int32_t tid) {
        PidEntry *e = pid_table_find(&b->threads, tid);
        ProcStatus st;

        if (e && e->tgid > 0)
                return e->tgid;
        if (tid > 0 && proc_status(b, tid, &st) >= 0)
                return (int32_t) st.tgid;
        return 0;
}

int add_comm_process(ProcessTreeBuilder *b, int32_t pid, int32_t ppid, const char *comm) {
        Tracebus__ProcessTree__Process *p;

        if (!pid_table_find(&b->processes, pid) && !pid_table_has_room(&b->processes))
                return 0;
        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        tracebus__process_tree__process__init(p);
        p->has_pid = true;
        p->pid = pid;
        p->has_ppid = ppid > 0;
        p->ppid = ppid;
        if (comm && comm[0]) {
                p->cmdline = calloc(1, sizeof(char *));
                if (!p->cmdline || !(p->cmdline[0] = strdup(comm))) {
                        process_description_free(p, /* thread= */ false);
                        return -ENOMEM;
                }
                p->n_cmdline = 1;
                p->has_cmdline_is_comm = p->cmdline_is_comm = true;
        }
        return add_entry_process(b, p);
}

int add_comm_thread(ProcessTreeBuilder *b, int32_t tid, int32_t tgid, const char *comm) {
        Tracebus__ProcessTree__Thread *t;

        if (!pid_table_find(&b->threads, tid) && !pid_table_has_room(&b->threads))
                return 0;
        t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        tracebus__process_tree__thread__init(t);
        t->has_tid = t->has_tgid = true;
        t->tid = tid;
        t->tgid = tgid;
        if (comm && comm[0] && !(t->name = strdup(comm))) {
                process_description_free(t, /* thread= */ true);
                return -ENOMEM;
        }
        return add_entry_thread(b, t);
}

/* The notes of one pass, sorted by pid. */
typedef struct TaskNotes {
        const FtraceTaskNote *v;
        size_t n;
} TaskNotes;

/* The task_newtask of @pid among @notes, if it has one. */
static const FtraceTaskNote *find_born(const TaskNotes *notes, int32_t pid) {
        size_t lo = 0, hi = notes->n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (notes->v[mid].pid < pid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        for (; lo < notes->n && notes->v[lo].pid == pid; lo++)
                if (notes->v[lo].newtask)
                        return &notes->v[lo];
        return NULL;
}

/* The process of @tid as known_tgid() says, else, when @tid was born in the same pass
 * and is gone already (a shell that forked and exited, in a build), from its own
 * task_newtask, a few generations up at most: the kernel's saved tables, which cost a
 * read of every pid the kernel saw, are left for what no event says. */
static int32_t creator_tgid(ProcessTreeBuilder *b, const TaskNotes *notes, int32_t tid, unsigned depth) {
        int32_t tgid = known_tgid(b, tid);
        const FtraceTaskNote *born;

        if (tgid > 0 || depth >= 8 || !(born = find_born(notes, tid)))
                return tgid;
        if (!(born->clone_flags & CLONE_THREAD))
                return born->pid;
        return creator_tgid(b, notes, born->creator, depth + 1);
}

/* A task born during the trace and gone from /proc: described from its task_newtask,
 * under @comm, its last name. Nothing is guessed: when its creator's process is not
 * known either, the kernel's saved tables are asked, as for any gone thread. */
static int describe_born(ProcessTreeBuilder *b, const TaskNotes *notes, const FtraceTaskNote *born,
                         const char *comm) {
        bool thread = born->clone_flags & CLONE_THREAD;
        int32_t parent = creator_tgid(b, notes, born->creator, 0), tgid = thread ? parent : born->pid;
        int r;

        if (tgid <= 0)
                return add_gone_thread(b, born->pid);
        if (!thread) {
                r = add_comm_process(b, born->pid, parent, comm);
                if (r < 0)
                        return r;
        }
        r = add_comm_thread(b, born->pid, tgid, comm);
        return r < 0 ? r : 1;
}

/* The notes of one pid: @born its task_newtask if any, @last its latest note. */
static int describe_task(ProcessTreeBuilder *b, const TaskNotes *notes, const FtraceTaskNote *born,
                         const FtraceTaskNote *last) {
        ProcStatus st;
        PidEntry *e;

        if (proc_status(b, last->pid, &st) >= 0)
                /* Alive: /proc says more (its command line), and a rename is read again
                 * from there by process_tree_builder_redescribe_thread(). */
                return born ? process_tree_builder_add_thread(b, last->pid) : 0;
        if (born)
                return describe_born(b, notes, born, last->comm);
        /* Renamed, then gone: its new name, if the trace describes it. */
        e = pid_table_find(&b->threads, last->pid);
        if (!e || e->tgid <= 0)
                return 0;
        return add_comm_thread(b, last->pid, e->tgid, last->comm);
}

int process_tree_builder_add_tasks(ProcessTreeBuilder *b, FtraceTaskNote *notes, size_t n) {
        TaskNotes all = { notes, n };
        int added = 0;

        qsort(notes, n, sizeof(FtraceTaskNote), note_cmp);
        for (size_t i = 0, j; i < n; i = j) {
                const FtraceTaskNote *born = NULL;
                int r;

                for (j = i; j < n && notes[j].pid == notes[i].pid; j++)
                        if (notes[j].newtask)
                                born = &notes[j];
                if (notes[i].pid <= 0)
                        continue;
                r = describe_task(b, &all, born, &notes[j - 1]);
                if (r < 0)
                        return r;
                added += r > 0;
        }
        return added;
}
