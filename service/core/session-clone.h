/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>

#include "session.h"

/*
 * A self-contained snapshot of a running session (Session.Clone, the
 * triggers' CLONE_SNAPSHOT, rotation), as plain code on the event loop:
 *
 *   SessionCloneOptions o = { .fd = fd, .budget = budget_or_NULL, .min_interval_usec = ... };
 *   r = session_clone(s, &o, on_cloned, userdata);   // o.fd taken, also on failure
 *   ...
 *   static void on_cloned(const SessionCloneResult *result, void *userdata) { ... }
 *
 * The session's recorder thread drains the kernel's buffers at once and copies what the
 * session's buffers hold into memory, with a snapshot's own clock snapshot, system info,
 * process tree and track descriptors (each sequence's first packet clears its incremental
 * state) and TraceStats at the end; a thread of the clone's own writes it into @fd. The
 * recording goes on, losing nothing. The callback runs on the event loop once the file is
 * written, also when the session ended meanwhile (error -ECANCELED if the copy was not
 * made); the session may be gone by then.
 */

typedef struct SessionCloneOptions {
        int fd;                       /* where the snapshot goes; taken over */
        uint64_t timeout_usec;        /* pipes and sockets: the write deadline */
        TraceBudget *budget;          /* the trace directory's quota (not owned; NULL: none) */
        uint64_t max_bytes;           /* 0: none */
        uint64_t min_interval_usec;   /* since the session's last clone, else -EBUSY */
} SessionCloneOptions;

typedef struct SessionCloneResult {
        int error;                    /* 0, or a negative errno: -ECANCELED, -EDQUOT, -EFBIG, -ENOMEM, ... */
        uint64_t bytes;               /* written into the output */
        uint64_t events;              /* ftrace events in the snapshot */
        uint64_t copy_usec;           /* on the recorder's thread, its drain included */
        uint64_t total_usec;          /* from session_clone() to the file written */
        bool streamed;                /* a STREAM session: only what it had not written yet */
} SessionCloneResult;

typedef void (*SessionCloneDone)(const SessionCloneResult *result, void *userdata);

/* -ESRCH: not recording (starting, stopping, ended); -EBUSY: a clone of it is running,
 * or min_interval_usec has not passed since its last one began (the rate limit); -ENOMEM. */
int session_clone(Session *s, SessionCloneOptions *o, SessionCloneDone done, void *userdata);
/* The checks of session_clone() alone. */
int session_clone_check(Session *s, uint64_t min_interval_usec);
