/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "bus-context.h"
#include "bus-errors.h"
#include "fd-util.h"
#include "log.h"
#include "core/output-fd.h"

int bus_sender_euid(sd_bus_message *m, uid_t *ret) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
        int r;

        /* EUID from the bus itself; no SD_BUS_CREDS_AUGMENT, which would read racy /proc data. */
        r = sd_bus_query_sender_creds(m, SD_BUS_CREDS_EUID, &creds);
        if (r < 0)
                return r;
        return sd_bus_creds_get_euid(creds, ret);
}

int bus_take_output_fd(int fd, uid_t uid, int *ret, sd_bus_error *error) {
        const char *why = NULL;
        int r;

        r = output_fd_take(fd, uid, ret, &why);
        if (r == -EPERM)
                return sd_bus_error_set(error, TB_ERROR_OUTPUT_REFUSED, why);
        if (r == -ENXIO)
                return sd_bus_error_set(error, TB_ERROR_OUTPUT_ERROR, why);
        if (why)
                return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS, why);
        if (r < 0)
                return sd_bus_error_set_errnof(error, r, "Cannot use the Output file descriptor: %m");
        return 0;
}

/* Everything a request holds but its place in the list and its polkit query: the
 * caller's message (with the descriptors it carries), what the handler prepared. */
static void bus_request_release(BusRequest *req) {
        req->caller = sd_bus_track_unref(req->caller);
        /* The options borrow from the message: released with it. */
        start_options_done(&req->start_options);
        req->message = sd_bus_message_unref(req->message);
        /* Released when the caller leaves, and again when the request is freed. */
        trace_config_freep(&req->trace_config);
        req->trace_config = NULL;
        start_request_done(&req->start);
}

BusRequest *bus_request_free(BusRequest *req) {
        if (!req)
                return NULL;
        if (req->context) {
                if (req->prev)
                        req->prev->next = req->next;
                else if (req->context->requests == req)
                        req->context->requests = req->next;
                if (req->next)
                        req->next->prev = req->prev;
        }
        polkit_query_free(req->query);
        bus_request_release(req);
        return mfree(req);
}

int bus_request_new(sd_bus_message *message, BusRequest **ret) {
        _cleanup_(bus_request_freep) BusRequest *req = NULL;
        int r;

        req = calloc(1, sizeof(*req));
        if (!req)
                return -ENOMEM;
        req->start.output_fd = -EBADF;
        req->start_options = (StartOptions) { .output_fd = -EBADF };
        req->message = sd_bus_message_ref(message);
        r = bus_sender_euid(message, &req->uid);
        if (r < 0)
                return r;
        req->start.uid = req->uid;
        *ret = TAKE_PTR(req);
        return 0;
}

int bus_request_authorize_listing(BusContext *c, sd_bus_message *message,
                                  void (*on_result)(BusRequest *req, int result)) {
        _cleanup_(bus_request_freep) BusRequest *req = NULL;
        int r;

        r = bus_request_new(message, &req);
        if (r < 0)
                return r;
        req->context = c;
        /* Root, whom polkit always allows, is not asked. */
        if (req->uid == 0) {
                on_result(req, 1);
                return 1;
        }
        return bus_request_authorize(c, &req, TB_ACTION_MANAGE, /* interactive= */ false, on_result);
}

/* A Start's Output: the caller's descriptor in the message, and the service's copy. */
static unsigned bus_request_held_fds(const BusRequest *req) {
        return req->start.output_fd >= 0 ? 2 : 0;
}

void bus_context_count_held_fds(BusContext *c, uid_t uid, unsigned *ret_uid, unsigned *ret_all) {
        unsigned of_uid = 0, all = 0;

        for (BusRequest *req = c->requests; req; req = req->next) {
                all += bus_request_held_fds(req);
                if (req->uid == uid)
                        of_uid += bus_request_held_fds(req);
        }
        *ret_uid = of_uid;
        *ret_all = all;
}

static void on_polkit_result(const int *results, size_t n, void *userdata) {
        BusRequest *req = ASSERT_PTR(userdata);

        req->query = polkit_query_free(req->query);
        /* An orphan (its caller left) has nobody to answer. */
        if (req->message) {
                /* For the file descriptor budgets: what the caller's other waiting calls hold. */
                bus_context_count_held_fds(req->context, req->uid, &req->start.held_fds_uid, &req->start.held_fds_all);
                req->start.held_fds_uid -= bus_request_held_fds(req);
                req->start.held_fds_all -= bus_request_held_fds(req);
                if (req->on_results)
                        req->on_results(req, results);
                else
                        req->on_result(req, results[0]);
        }
        /* Done, unless the callback asked polkit again about the same request. */
        if (!req->query)
                bus_request_free(req);
}

/* The caller left the bus: nothing it asked for may happen, and nothing it sent may stay
 * held (an Output fd for up to the 5 minutes of an authentication dialog). The request
 * stays listed, as an orphan, until polkit answers the cancelled query. */
static int on_caller_vanished(sd_bus_track *track, void *userdata) {
        BusRequest *req = ASSERT_PTR(userdata);

        log_debug("UID %u left the bus while its call waited for polkit; dropping the call.", (unsigned) req->uid);
        bus_request_release(req);
        polkit_query_cancel(req->query);
        return 0;
}

/* Answers TooManyPendingCalls when @n more calls for @req would pass a cap on the calls
 * waiting for polkit; returns 1 then. Not logged: the log would be the flood. */
static int refuse_over_cap(BusContext *c, BusRequest *req, size_t n) {
        const ManagerLimits *l = &c->manager->limits;
        size_t all = 0, of_uid = 0;

        for (BusRequest *i = c->requests; i; i = i->next) {
                size_t pending = polkit_query_n_pending(i->query);

                all += pending;
                if (i->uid == req->uid)
                        of_uid += pending;
        }
        if (of_uid + n > l->max_pending_per_uid)
                (void) sd_bus_reply_method_errorf(req->message, TB_ERROR_TOO_MANY_PENDING_CALLS,
                                                  "You have %zu calls waiting for authorization, the most one user "
                                                  "may have (MaxPendingPerUser=%u); wait for their answers.",
                                                  of_uid, l->max_pending_per_uid);
        else if (all + n > l->max_pending)
                (void) sd_bus_reply_method_errorf(req->message, TB_ERROR_TOO_MANY_PENDING_CALLS,
                                                  "The service has %zu calls waiting for authorization, its cap "
                                                  "(MaxPending=%u); try again later.", all, l->max_pending);
        else
                return 0;
        return 1;
}

/* Follows the caller, so that its request is dropped when it leaves the bus. */
static int track_caller(BusContext *c, BusRequest *req) {
        int r;

        r = sd_bus_track_new(c->bus, &req->caller, on_caller_vanished, req);
        if (r < 0)
                return r;
        return sd_bus_track_add_sender(req->caller, req->message);
}

int bus_request_authorize(BusContext *c, BusRequest **reqp, const char *action, bool interactive,
                          void (*on_result)(BusRequest *req, int result)) {
        const PolkitAction question = { .id = action, .interactive = interactive };
        BusRequest *req = *reqp;
        int r;

        if (refuse_over_cap(c, req, 1))
                return 1;
        req->on_result = on_result;
        r = polkit_verify_actions_async(req->message, &question, 1, on_polkit_result, req, &req->query);
        if (r < 0)
                return r;
        r = track_caller(c, req);
        if (r < 0)
                return r;
        req->context = c;
        req->next = c->requests;
        if (c->requests)
                c->requests->prev = req;
        c->requests = TAKE_PTR(*reqp);
        return 1;
}

int bus_request_authorize_again(BusRequest *req, const PolkitAction *actions, size_t n,
                                void (*on_results)(BusRequest *req, const int *results)) {
        int r;

        assert(req->context && !req->query);
        if (refuse_over_cap(req->context, req, n))
                return 1;
        req->on_result = NULL;
        req->on_results = on_results;
        r = polkit_verify_actions_async(req->message, actions, n, on_polkit_result, req, &req->query);
        return r < 0 ? r : 1;
}

void bus_request_reply_refusal(BusRequest *req, int result, const char *action, const char *what) {
        if (result == -EBADR)
                (void) sd_bus_reply_method_errorf(req->message, SD_BUS_ERROR_INTERACTIVE_AUTHORIZATION_REQUIRED,
                                                  "%s needs authentication (polkit action %s), but the call "
                                                  "did not allow interactive authorization.", what, action);
        else if (result == -EACCES)
                (void) sd_bus_reply_method_errorf(req->message, SD_BUS_ERROR_ACCESS_DENIED,
                                                  "Not authorized: %s needs polkit action %s.", what, action);
        else if (result == -EHOSTDOWN)
                (void) sd_bus_reply_method_errorf(req->message, TB_ERROR_AUTHORIZATION_UNAVAILABLE,
                                                  "%s was refused: authorization could not be checked, polkit "
                                                  "(org.freedesktop.PolicyKit1) gave no answer. Try again once "
                                                  "polkitd runs.", what);
        else
                (void) sd_bus_reply_method_errnof(req->message, result, "Failed to check authorization: %m");
}

void bus_context_cancel_requests(BusContext *c) {
        while (c->requests) {
                BusRequest *req = c->requests;

                if (req->message)
                        (void) sd_bus_reply_method_errorf(req->message, TB_ERROR_SHUTTING_DOWN, BUS_SHUTTING_DOWN_TEXT);
                bus_request_free(req);
        }
}

int bus_start_resource_error(Manager *m, const StartRequest *req, StartFailure failure, sd_bus_error *error) {
        unsigned cost = manager_session_fd_cost(m), fds_uid, fds_all;

        if (failure == START_FAILURE_SHUTTING_DOWN)
                return sd_bus_error_set(error, TB_ERROR_SHUTTING_DOWN, BUS_SHUTTING_DOWN_TEXT);
        manager_count_session_fds(m, req->uid, &fds_uid, &fds_all);
        if (failure == START_FAILURE_USER_FILES)
                return sd_bus_error_setf(error, TB_ERROR_RESOURCE_LIMIT,
                                         "Your sessions and calls hold %u file descriptors; another session needs %u, "
                                         "more than your budget of %u (MaxFilesPerUser) allows. Stop a session first.",
                                         fds_uid + req->held_fds_uid, cost, m->limits.max_files_per_uid);
        if (failure == START_FAILURE_SERVICE_FILES)
                return sd_bus_error_setf(error, TB_ERROR_RESOURCE_LIMIT,
                                         "The service's sessions and calls hold %u file descriptors; another session "
                                         "needs %u, more than its budget of %u allows. Try again later.",
                                         fds_all + req->held_fds_all, cost, m->max_files);
        return sd_bus_error_setf(error, TB_ERROR_BUFFER_MEMORY_EXHAUSTED,
                                 "The sessions' kernel buffers use %" PRIu64 " KiB of the %" PRIu64 " KiB the service "
                                 "allows them (MaxBufferMemory); this one needs %" PRIu64 " KiB (%u KiB on each of "
                                 "%u CPUs). Ask for a smaller buffer, or try again later.",
                                 manager_buffer_memory_in_use(m) >> 10, m->limits.max_buffer_memory_bytes >> 10,
                                 manager_buffer_bytes(m, &req->config) >> 10, req->config.buffer_size_kb, m->n_cpus);
}
