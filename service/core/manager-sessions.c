/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The rules for starting, stopping, detaching and attaching sessions: limits, detach
 * keys, ownership, the output file. The bus layer asks; nothing here knows the bus. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fd-util.h"
#include "log.h"
#include "manager-local.h"
#include "kernel/tracefs-instance.h"
#include "sources/perf/perf-sampler.h"

int manager_load_session_config(Manager *m, const Tracebus__TraceConfig *tc, SessionConfigFlags flags,
                                SessionConfig *ret, char **ret_error) {
        int r;

        m->tracefs_root = trace_instance_tracefs_root();
        if (!m->tracefs_root)
                return -ENOMEDIUM;
        r = session_config_load_flags(tc, m->tracefs_root, flags, ret, ret_error);
        if (r < 0)
                return r;
        /* Then each data source with a section reads its own part, through the registry
         * (linux.ftrace's was read above, with the TraceConfig's own). */
        r = data_sources_load(tc, m->tracefs_root, ret, ret_error);
        if (r < 0) {
                session_config_done(ret);
                *ret = (SessionConfig) {};
                return r;
        }
        /* session_config_load() holds the hard limit; tracebusd.conf may set a lower one,
         * which also applies to the default size: reduce rather than refuse. */
        if (ret->buffer_size_kb > m->limits.max_buffer_size_kb) {
                log_info("Reducing a kernel buffer of %u KiB per CPU to the configured MaxBufferSizeKB=%u.",
                         ret->buffer_size_kb, m->limits.max_buffer_size_kb);
                ret->buffer_size_kb = m->limits.max_buffer_size_kb;
        }
        ret->max_process_entries = m->limits.max_process_entries;
        ret->stop_drain_threads = m->limits.stop_drain_threads;
        return 0;
}

void start_request_done(StartRequest *req) {
        session_config_done(&req->config);
        req->output_fd = safe_close(req->output_fd);
        req->detach_key = mfree(req->detach_key);
}

void manager_start_rights(const StartRequest *req, unsigned *ret_required, unsigned *ret_optional) {
        if (req->uid == 0) {
                *ret_required = *ret_optional = 0;
                return;
        }
        *ret_required = req->config.needs_kprobes_action ? START_RIGHT_KPROBES : 0;
        /* Asked for every start, whatever its config, and never with a dialog: whoever
         * may record is not asked to authenticate again for raw addresses. */
        *ret_optional = START_RIGHT_MANAGE;
}

int manager_grant_start_rights(StartRequest *req, unsigned granted, pid_t *ret_pid) {
        bool manage = req->uid == 0 || (granted & START_RIGHT_MANAGE);
        int r;

        /* Raw kernel addresses for root and the holders of org.tracebus.manage, as
         * kptr_restrict=1 shows them only to the privileged; the others' traces hold
         * them hashed, and only the kernel events whose content they could read anyway. */
        req->config.kernel_pointers_raw = manage;
        /* Apps of other users record for the session only when its owner could trace them. */
        req->config.producers_any_uid = manage;
        /* Each data source narrows its part to what the owner may read
         * (DataSourceOps.apply_rights); linux.perf's scope may refuse the start. */
        r = data_sources_apply_rights(&req->config, req->uid, manage);
        if (r < 0)
                return r;
        return perf_scope_authorize(&req->config, req->uid, manage, ret_pid);
}

/* @uid's session under @key that has not ended: a key stays taken until then. */
static Session *find_keyed(Manager *m, uid_t uid, const char *key) {
        for (Session *s = m->sessions; s; s = s->next)
                if (s->owner_uid == uid && s->detach_key && strcmp(s->detach_key, key) == 0 &&
                    s->state != SESSION_ENDED)
                        return s;
        return NULL;
}

int manager_check_detach_key(Manager *m, uid_t uid, const char *key) {
        if (!session_detach_key_valid(key))
                return -EINVAL;
        return find_keyed(m, uid, key) ? -EADDRINUSE : 0;
}

/* @uid's live session named @name (unique_session_name). Perfetto checks the name across
 * all users; here it is per user, as detach keys are: no one can hold a name another user's
 * script needs, nor learn from a refusal what someone else records. */
static Session *find_named(Manager *m, uid_t uid, const char *name) {
        for (Session *s = m->sessions; s; s = s->next)
                if (s->owner_uid == uid && s->config.unique_session_name && s->state != SESSION_ENDED &&
                    strcmp(s->config.unique_session_name, name) == 0)
                        return s;
        return NULL;
}

int manager_check_start(Manager *m, const StartRequest *req, StartFailure *ret_failure) {
        bool per_uid;

        if (manager_check_limits(m, req->uid, &per_uid) < 0) {
                *ret_failure = per_uid ? START_FAILURE_USER_LIMIT : START_FAILURE_SERVICE_LIMIT;
                return -EUSERS;
        }
        /* Checked again: another session may have taken the key while polkit thought. */
        if (req->detach_key && find_keyed(m, req->uid, req->detach_key)) {
                *ret_failure = START_FAILURE_KEY_IN_USE;
                return -EADDRINUSE;
        }
        if (req->config.unique_session_name && find_named(m, req->uid, req->config.unique_session_name)) {
                *ret_failure = START_FAILURE_NAME_IN_USE;
                return -EEXIST;
        }
        return manager_check_resources(m, req, ret_failure);
}

int manager_create_session(Manager *m, StartRequest *req, uint64_t id, SessionOutput *output, StartResult *res) {
        Session *s;
        int r;

        r = manager_check_start(m, req, &res->failure);
        if (r >= 0 && manager_find_session(m, id)) {
                res->failure = START_FAILURE_SESSION_ID;
                r = -EBUSY;
        }
        if (r < 0) {
                output->fd = safe_close(output->fd);
                return r;
        }
        res->failure = START_FAILURE_TRACING;
        /* The pollers' thread, started with the first session and kept for the next. */
        if (!m->poller) {
                r = poller_new(&m->poller);
                if (r < 0) {
                        output->fd = safe_close(output->fd);
                        return r;
                }
        }
        r = session_new(m->event, m->poller, id, req->uid, &req->config, output, &s);
        if (r < 0)
                return r;
        manager_add_session(m, s);

        /* Started detached, the session is never bound: no window in which a vanishing
         * client would stop it. Without Output, the caller cannot hold a connection
         * (busctl): the session is detached, keyless, and stopped by its path. */
        if (req->detach_key || output->path)
                session_set_detached(s, true, TAKE_PTR(req->detach_key));
        res->failure = START_FAILURE_NONE;
        res->session = s;
        return 0;
}

/* Into the caller's fd: nothing to wait for, and nothing counted against a quota. */
static void start_into_fd(Manager *m, StartRequest *req, StartCallback callback, void *userdata) {
        StartResult res = { .request = req, .failure = START_FAILURE_SESSION_ID };
        SessionOutput output = { .fd = -EBADF, .timeout_usec = m->limits.output_timeout_usec };
        uint64_t id;
        int r;

        r = manager_new_session_id(m, &id);
        if (r >= 0) {
                output.fd = TAKE_FD(req->output_fd);
                r = manager_create_session(m, req, id, &output, &res);
        }
        callback(m, r, &res, userdata);
}

void manager_start_session(Manager *m, StartRequest *req, StartCallback callback, void *userdata) {
        StartRequest taken = *req;

        /* Moved: the request may outlive the caller's copy, waiting for the worker. */
        *req = (StartRequest) { .uid = req->uid, .output_fd = -EBADF };
        if (taken.output_fd >= 0)
                start_into_fd(m, &taken, callback, userdata);
        else
                manager_start_in_trace_dir(m, &taken, callback, userdata);
        start_request_done(&taken);
}

Session *manager_find_live_session(Manager *m, uint64_t id) {
        Session *s = manager_find_session(m, id);

        return s && s->state != SESSION_ENDED ? s : NULL;
}

Session *manager_find_own_session(Manager *m, uint64_t id, uid_t uid) {
        Session *s = manager_find_live_session(m, id);

        return s && s->owner_uid == uid ? s : NULL;
}

int manager_find_detached(Manager *m, uid_t uid, const char *key, Session **ret) {
        Session *s;

        if (!session_detach_key_valid(key))
                return -EINVAL;
        /* Strictly per UID, root included: another user's key is indistinguishable from none. */
        s = find_keyed(m, uid, key);
        *ret = s && session_is_running(s) ? s : NULL;
        return 0;
}

int manager_check_detach(Manager *m, uint64_t id, uid_t uid, const char *key, Session **ret) {
        Session *s;

        if (!session_detach_key_valid(key))
                return -EINVAL;
        /* Only the owner may detach, root included: keys are per UID. */
        s = manager_find_own_session(m, id, uid);
        if (!s)
                return -ESRCH;
        if (!session_is_running(s))
                return -ESTALE;
        if (s->detach_key)
                return -EEXIST;
        if (find_keyed(m, uid, key))
                return -EADDRINUSE;
        *ret = s;
        return 0;
}
