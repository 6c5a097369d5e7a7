/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tracebus-unwind's answers: a sample's user frames named from its callchain, or
 * unwound with DWARF from its registers and stack copy, whichever finds more. The
 * process's maps and files are read with the helper's own credentials (the session
 * owner's): a process the owner may not ptrace is answered UNWIND_STATUS_DENIED.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "unwind-serve.h"

#define UNWIND_MAX_PROCESSES 256u

typedef struct UnwindProcess {
        pid_t pid;
        uint32_t status;                /* UNWIND_STATUS_OK with @process, else why not */
        PerfProcess *process;
} UnwindProcess;

struct UnwindServer {
        PerfUnwinder *unwinder;
        UnwindProcess processes[UNWIND_MAX_PROCESSES];
        size_t n_processes;
        UnwindBuffer dwarf;             /* the DWARF unwind's reply, against the callchain's */
};

int unwind_server_new(uint64_t max_memory_kb, const char *debug_dirs, UnwindServer **ret) {
        UnwindServer *s = calloc(1, sizeof(*s));
        int r;

        if (!s)
                return -ENOMEM;
        r = perf_unwinder_new(max_memory_kb, &s->unwinder);
        if (r >= 0 && debug_dirs)
                r = perf_unwinder_set_debug_dirs(s->unwinder, debug_dirs);
        if (r < 0) {
                unwind_server_free(s);
                return r;
        }
        *ret = s;
        return 0;
}

static void drop_processes(UnwindServer *s) {
        for (size_t i = 0; i < s->n_processes; i++)
                perf_process_free(s->processes[i].process);
        s->n_processes = 0;
}

UnwindServer *unwind_server_free(UnwindServer *s) {
        if (!s)
                return NULL;
        drop_processes(s);
        perf_unwinder_free(s->unwinder);
        unwind_buffer_done(&s->dwarf);
        return mfree(s);
}

static uint32_t status_of(int r) {
        return r == -EACCES || r == -EPERM ? UNWIND_STATUS_DENIED : r == -ESRCH ? UNWIND_STATUS_GONE : UNWIND_STATUS_FAILED;
}

/* The process @pid as read before (its maps read again after an exec), or read now. */
static UnwindProcess *find_process(UnwindServer *s, pid_t pid, bool exec) {
        UnwindProcess *u = NULL;
        int r;

        for (size_t i = 0; i < s->n_processes && !u; i++)
                if (s->processes[i].pid == pid)
                        u = &s->processes[i];
        if (u && exec) {
                r = u->process ? perf_process_reload_maps(u->process) : perf_process_new(s->unwinder, pid, &u->process);
                u->status = r < 0 ? status_of(r) : UNWIND_STATUS_OK;
        }
        if (u)
                return u;
        if (s->n_processes >= UNWIND_MAX_PROCESSES)
                drop_processes(s);
        u = &s->processes[s->n_processes++];
        *u = (UnwindProcess) { .pid = pid };
        r = perf_process_new(s->unwinder, pid, &u->process);
        if (r < 0)
                u->process = NULL;
        u->status = r < 0 ? status_of(r) : UNWIND_STATUS_OK;
        return u;
}

static int add_frame(UnwindBuffer *b, const PerfFrame *f) {
        const PerfMapping *m = f->mapping;
        UnwindFrame w = {
                .pc = f->pc, .rel_pc = f->rel_pc, .start = m->start, .end = m->end, .pgoff = m->pgoff,
                .load_bias = m->load_bias, .path = m->path, .function = f->function,
                .build_id = m->build_id, .build_id_len = m->build_id ? m->build_id_len : 0,
        };

        return unwind_reply_add(b, &w);
}

/* The callchain's frames, each named; a pc outside the maps read has them read again,
 * once a request (mapped since: dlopen, JIT). */
static int callchain_frames(PerfProcess *p, const UnwindRequest *req, UnwindBuffer *b) {
        bool reloaded = false;

        for (size_t i = 0; i < req->n_ips; i++) {
                PerfFrame f;

                (void) perf_symbolize(p, req->ips[i], i > 0, &f);
                if (!f.mapping && !reloaded) {
                        reloaded = true;
                        int r = perf_process_reload_maps(p);
                        if (r < 0)
                                return r;
                        (void) perf_symbolize(p, req->ips[i], i > 0, &f);
                }
                if (f.mapping) {
                        int r = add_frame(b, &f);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

static int dwarf_frames(PerfProcess *p, const UnwindRequest *req, UnwindBuffer *b) {
        PerfFrame frames[UNWIND_MAX_FRAMES];
        size_t n = 0;

        if (perf_unwind_dwarf(p, req->regs, req->regs_mask, req->stack, req->stack_len, frames,
                              UNWIND_MAX_FRAMES, &n) < 0)
                return 0;
        for (size_t i = 0; i < n; i++)
                if (frames[i].mapping) {
                        int r = add_frame(b, &frames[i]);
                        if (r < 0)
                                return r;
                }
        return 0;
}

static uint32_t take_flags(UnwindServer *s) {
        uint32_t flags = 0;

        if (perf_unwinder_take_memory_exceeded(s->unwinder))
                flags |= UNWIND_REPLY_MEMORY_CAP;
        if (perf_unwinder_take_files_denied(s->unwinder))
                flags |= UNWIND_REPLY_FILES_DENIED;
        return flags;
}

int unwind_server_answer(UnwindServer *s, const UnwindRequest *req, UnwindBuffer *reply) {
        UnwindProcess *u = find_process(s, req->pid, req->flags & UNWIND_FLAG_EXEC);
        int r;

        if (u->status != UNWIND_STATUS_OK) {
                r = unwind_reply_begin(reply, u->status, take_flags(s));
                unwind_reply_end(reply);
                return r;
        }
        r = unwind_reply_begin(reply, UNWIND_STATUS_OK, 0);
        if (r >= 0)
                r = callchain_frames(u->process, req, reply);
        if (r < 0) {
                /* Its maps could not be read again: gone, or no longer the owner's to read. */
                u->status = status_of(r);
                r = unwind_reply_begin(reply, u->status, 0);
        } else if (r >= 0 && req->regs_mask != 0) {
                r = unwind_reply_begin(&s->dwarf, UNWIND_STATUS_OK, 0);
                if (r >= 0)
                        r = dwarf_frames(u->process, req, &s->dwarf);
                if (r >= 0 && unwind_reply_frames(&s->dwarf) > unwind_reply_frames(reply)) {
                        UnwindBuffer t = *reply;
                        *reply = s->dwarf;
                        s->dwarf = t;
                }
        }
        if (r < 0)
                return r;
        ((UnwindReplyFixed *) (reply->data + sizeof(UnwindHeader)))->flags = take_flags(s);
        unwind_reply_end(reply);
        return 0;
}
