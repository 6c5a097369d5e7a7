/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "daemon-config.h"
#include "session.h"
#include "worker.h"

typedef struct PendingStart PendingStart;
typedef struct TraceQuota TraceQuota;

/*
 * The service's sessions and every rule about them: the limits, the detach keys, who
 * may stop or detach what, where a trace goes, and how long a session lives. It knows
 * nothing of the bus: the bus layer (manager-dbus.c, session-dbus.c) asks it, maps
 * its negative errno to named errors, and hears of sessions through the callbacks it
 * sets with manager_set_observer(). The event loop is the manager's: sessions arm
 * their timers on it, and the bus is attached to it.
 */

struct Manager {
        sd_event *event;

        Session *sessions;                /* linked list, in the order they started */
        unsigned n_sessions;

        char *state_dir;                  /* traces go to STATE/traces/<uid>/ */
        const char *tracefs_root;
        ManagerLimits limits;             /* from tracebusd.conf (daemon-config.h) */
        bool exiting;

        /* Who hears of the sessions (the bus layer); may be NULL. */
        const SessionCallbacks *observer;
        void *observer_userdata;

        /* Set once by manager_setup_limits() (manager-limits.c). */
        unsigned n_cpus;                  /* the kernel's ring buffers per session */
        unsigned max_files;               /* the descriptors all sessions and calls may hold */
        /* Starts into the trace directory wait for the worker, which scans the UID's
         * directory and creates the file off the event loop (manager-trace-dir.c). */
        Worker *worker;
        /* The polling data sources' thread (service/sources/poller.c), shared by all sessions. */
        Poller *poller;
        PendingStart *pending_starts;
        /* Per UID with sessions writing into the trace directory: its quota, counted
         * as the sessions write. */
        TraceQuota *quotas;
};

/* The manager with the default limits, its state directory and the event loop; logs
 * the step that failed. */
int manager_new(Manager **ret);
Manager *manager_free(Manager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(Manager *, manager_free);

void manager_set_observer(Manager *m, const SessionCallbacks *observer, void *userdata);

Session *manager_find_session(Manager *m, uint64_t id);
/* A fresh random session id, 1 .. SESSION_ID_MASK, not used by any session. */
int manager_new_session_id(Manager *m, uint64_t *ret);
unsigned manager_count_sessions(Manager *m, uid_t uid);
/* Takes @s into the manager's care: it reports to the manager from now on. */
void manager_add_session(Manager *m, Session *s);

/* Checks the session limits for @uid: -EUSERS if one is reached. */
int manager_check_limits(Manager *m, uid_t uid, bool *ret_per_uid);

/* Validates @tc for a session of this service: the kernel's events, the limits of
 * session-config.h, and tracebusd.conf's MaxBufferSizeKB, which reduces a larger
 * kernel buffer rather than refusing it; then the sections of the other data sources
 * (data_sources_load()). -ENOMEDIUM: tracefs is not mounted; otherwise as
 * session_config_load_flags() and data_sources_load(). */
int manager_load_session_config(Manager *m, const Tracebus__TraceConfig *tc, SessionConfigFlags flags,
                                SessionConfig *ret, char **ret_error);

/* What Start asks for, once validated. */
typedef struct StartRequest {
        uid_t uid;
        SessionConfig config;       /* moved into the session */
        int output_fd;              /* the caller's; -EBADF: the service creates the file */
        char *detach_key;           /* start detached under it */
        /* What the caller's other calls waiting for polkit hold, and everyone's (the bus
         * layer counts them), for the file descriptor budgets. */
        unsigned held_fds_uid, held_fds_all;
} StartRequest;

void start_request_done(StartRequest *req);

/* What a start may need beyond recording, which the bus layer asks polkit about. */
typedef enum StartRight {
        /* kprobes or function tracing, which patch kernel code: refused without it. */
        START_RIGHT_KPROBES = 1 << 0,
        /* Raw kernel pointers, linux.perf's kernel frames and other users' processes,
         * and what each data source keeps to it (DataSourceOps.apply_rights: slabinfo,
         * other users' command lines, the whole journal): without it, hashed pointers,
         * user frames only, the caller's processes only, what the caller could read. */
        START_RIGHT_MANAGE  = 1 << 1,
} StartRight;

/* The rights @req's loaded config needs (*ret_required: the start is refused without
 * them) and those it would use (*ret_optional). None for root, whom polkit always allows. */
void manager_start_rights(const StartRequest *req, unsigned *ret_required, unsigned *ret_optional);

/* Applies to @req's config the rights @granted (StartRight flags; all of them for root):
 * raw or hashed kernel pointers, each data source's part (data_sources_apply_rights())
 * and linux.perf's scope. -EPERM, with the pid in
 * *ret_pid, when linux.perf names another user's process without START_RIGHT_MANAGE. */
int manager_grant_start_rights(StartRequest *req, unsigned granted, pid_t *ret_pid);

/* Which rule or step refused a start, for the caller's message. */
typedef enum StartFailure {
        START_FAILURE_NONE,
        START_FAILURE_USER_LIMIT,     /* -EUSERS: @uid runs max_sessions_per_uid */
        START_FAILURE_SERVICE_LIMIT,  /* -EUSERS: the service runs max_sessions */
        START_FAILURE_KEY_IN_USE,     /* -EADDRINUSE */
        START_FAILURE_SESSION_ID,
        START_FAILURE_OUTPUT,         /* -EDQUOT: @uid's traces use up the quota */
        START_FAILURE_TRACING,
        START_FAILURE_SHUTTING_DOWN,  /* -ESHUTDOWN: SIGTERM came */
        START_FAILURE_USER_FILES,     /* -EMFILE: past @uid's max_files_per_uid */
        START_FAILURE_SERVICE_FILES,  /* -EMFILE: past the service's max_files */
        START_FAILURE_BUFFER_MEMORY,  /* -ENOBUFS: past max_buffer_memory_bytes */
        START_FAILURE_TRACE_DIR,      /* the UID's trace directory holds what the quota cannot count */
        START_FAILURE_NAME_IN_USE,    /* -EEXIST: a live session of @uid has the unique_session_name */
} StartFailure;

/* How a start went, for manager_start_session()'s callback. */
typedef struct StartResult {
        const StartRequest *request;  /* what was asked */
        Session *session;             /* on success */
        StartFailure failure;         /* on failure: which rule or step */
        const char *refused_entry;    /* START_FAILURE_TRACE_DIR: the entry, NULL for too many */
} StartResult;

/* Called once per start with 0 or a negative errno. -ECANCELED: the service is going
 * away; the callback must then only answer and release @userdata. */
typedef void (*StartCallback)(Manager *m, int r, const StartResult *result, void *userdata);

/* Starts a session for @req, whose contents are moved out, and calls @callback. The
 * limits are checked again here, since things may have changed while polkit was
 * deciding. With an output fd from the caller, @callback runs at once. Otherwise it runs
 * once the worker has scanned the UID's trace directory and created the file there; the
 * directory is scanned again at every such start, because users delete files. Without
 * an output fd, or with a detach key, the session starts detached; otherwise the caller
 * binds it to its client. */
void manager_start_session(Manager *m, StartRequest *req, StartCallback callback, void *userdata);

/* manager_shutdown() and manager_free(): every start still waiting for the worker is
 * answered with -ECANCELED. */
void manager_cancel_starts(Manager *m);
/* A session is over: what it wrote into the trace directory stays counted until the
 * next scan. */
void manager_release_quota(Manager *m, Session *s);

/* @uid's own session @id, recording or stopping: what a caller may stop or detach
 * without authorization. NULL otherwise, whether the session exists or not. */
Session *manager_find_own_session(Manager *m, uint64_t id, uid_t uid);
/* Session @id, recording or stopping, whoever owns it. */
Session *manager_find_live_session(Manager *m, uint64_t id);

/* -EINVAL: @key is no valid detach key; -EADDRINUSE: another of @uid's sessions is
 * detached under it. Keys are per UID: other users' keys never match. */
int manager_check_detach_key(Manager *m, uid_t uid, const char *key);
/* Finds @uid's session detached under @key, still recording; NULL if none. -EINVAL for
 * an invalid key. */
int manager_find_detached(Manager *m, uid_t uid, const char *key, Session **ret);
/* Whether @uid may detach its session @id under @key: -EINVAL (the key), -ESRCH (no
 * such session of @uid), -ESTALE (it is ending), -EEXIST (it has a key already),
 * -EADDRINUSE (another of @uid's sessions has this key). */
int manager_check_detach(Manager *m, uint64_t id, uid_t uid, const char *key, Session **ret);

/* True when the manager has nothing to do: no session (detached ones included), not
 * shutting down. The bus layer adds its calls waiting for polkit. */
bool manager_is_idle(Manager *m);

/* SIGTERM: finalizes every session (reason service-shutdown), then leaves the event loop. */
void manager_shutdown(Manager *m);

/* ---- the machine's resources (manager-limits.c) ---- */

/* Once, after the configuration is applied: MaxBufferMemory's default (1/8 of MemTotal),
 * the soft RLIMIT_NOFILE raised to the hard one, the service's descriptor budget from it,
 * and MaxFilesPerUser lowered to half of that budget when above (logged). */
void manager_setup_limits(Manager *m);

/* The descriptors one session holds: its output, each CPU's trace_pipe_raw and stats,
 * its tracefs instance, the recorder's eventfds, and room for the files it opens briefly. */
unsigned manager_session_fd_cost(const Manager *m);
/* The descriptors @uid's sessions hold, and every session's. */
void manager_count_session_fds(Manager *m, uid_t uid, unsigned *ret_uid, unsigned *ret_all);
/* The kernel buffer memory of a session with @config: buffer_size_kb on each CPU. */
uint64_t manager_buffer_bytes(const Manager *m, const SessionConfig *config);
/* The kernel buffer memory of every session. */
uint64_t manager_buffer_memory_in_use(Manager *m);

/* Whether @req may start now: -ESHUTDOWN after SIGTERM, -EMFILE past a descriptor
 * budget, -ENOBUFS past MaxBufferMemory (@ret_failure says which). */
int manager_check_resources(Manager *m, const StartRequest *req, StartFailure *ret_failure);

/* Delivers the triggers @names, sent by @uid (whose process is @producer), to @uid's
 * sessions, or to every session when @all (the caller holds org.tracebus.manage).
 * Returns how many times a session acted on one. */
unsigned manager_activate_triggers(Manager *m, char **names, uid_t uid, bool all, const char *producer);
/* manager-clone.c: a snapshot of session @s for @uid, who may clone it
 * (its owner, or a holder of org.tracebus.manage: the bus layer asked), into @fd (taken),
 * or with @fd < 0 into a new file of @uid's trace directory, within @uid's quota (scanned
 * first, on the worker). @callback runs once on the loop, at once on a refusal, with 0 or
 * session_clone()'s errors, -EDQUOT, or the trace directory's (-ENOTDIR, -ELOOP, ...);
 * @output_path is the file the service created (NULL for an fd). */
#include "session-clone.h"
typedef void (*CloneCallback)(Manager *m, int r, const SessionCloneResult *result, const char *output_path,
                              void *userdata);
void manager_clone_session(Manager *m, Session *s, uid_t uid, int fd, CloneCallback callback, void *userdata);
/* As manager_clone_session(), but with @fd < 0 the new file in @uid's trace directory is
 * named exactly @name: a trigger's CLONE_SNAPSHOT writes FILE.N. */
void manager_clone_session_named(Manager *m, Session *s, uid_t uid, int fd, const char *name, CloneCallback callback,
                                 void *userdata);
/* SessionCallbacks.on_snapshot_due: writes snapshot @n of session @s into its trace
 * file's name + ".N" in its owner's trace directory (manager-triggers.c). */
void manager_snapshot_on_trigger(Session *s, unsigned n, void *userdata);
