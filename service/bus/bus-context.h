/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <systemd/sd-bus.h>

#include "core/manager.h"
#include "tracebus-bus.h"
#include "start-arguments.h"
#include "polkit.h"

/*
 * What the service's bus objects (manager-dbus.c, session-dbus.c) share: the
 * connection, the manager behind them, and the method calls waiting for polkit, which
 * keep the service from exiting for idleness and are answered when it shuts down.
 */

/* What every call refused for SIGTERM hears (TB_ERROR_SHUTTING_DOWN). */
#define BUS_SHUTTING_DOWN_TEXT \
        "The service is shutting down: it finishes its sessions and starts none. Try again once it has exited."

typedef struct BusRequest BusRequest;
typedef struct BusContext BusContext;

/* What Stop and Clone do to a session (session_dbus_act()): @prepare reads the call's
 * arguments into the request before the session is looked up (NULL: none); @act acts on
 * the session, returning 1 when its reply comes later; @what names it for a refusal. */
typedef struct SessionAction {
        int (*prepare)(BusRequest *req, sd_bus_error *error);
        int (*act)(BusContext *c, BusRequest *req, Session *s);
        const char *what;
} SessionAction;

struct BusContext {
        Manager *manager;
        sd_bus *bus;
        BusRequest *requests;        /* calls waiting for polkit */
};

/* A call waiting for polkit. What happens once polkit has answered depends on the method. */
struct BusRequest {
        BusContext *context;
        BusRequest *next, *prev;
        sd_bus_message *message;
        uid_t uid;                   /* the sender's EUID */
        PolkitQuery *query;
        /* Called with polkit's answer: on_result for a question about one action,
         * on_results for several (an answer per action, in the order asked). */
        void (*on_result)(BusRequest *req, int result);
        void (*on_results)(BusRequest *req, const int *results);
        sd_bus_track *caller;        /* NULL once the caller left: the request is an orphan */

        /* Start: its arguments as read (borrowing from the message), the config parsed
         * from them once polkit allowed recording, and what the session gets. */
        StartOptions start_options;
        Tracebus__TraceConfig *trace_config;
        StartRequest start;
        /* Stop or Clone of a session that is not the caller's: the id its path named. */
        uint64_t session_id;
        const SessionAction *session_action;
};

int bus_request_new(sd_bus_message *message, BusRequest **ret);
BusRequest *bus_request_free(BusRequest *req);
DEFINE_TRIVIAL_CLEANUP_FUNC(BusRequest *, bus_request_free);

/* Hands the request to polkit; the context keeps it until polkit answers, then calls
 * @on_result and frees it, unless @on_result asked polkit again about the same request
 * (bus_request_authorize_again()). Returns 1: the handler's reply comes later.
 *
 * Each UID may have MaxPendingPerUser calls to polkit waiting, the service MaxPending
 * (each below dbus-daemon's 128 replies a connection may wait for, so that one user can
 * never make polkit unreachable for the others): a request that would pass a cap is
 * answered TooManyPendingCalls here, at once, without asking polkit. When the caller
 * leaves the bus, its request is dropped: its polkit query cancelled, its message and
 * descriptors released, @on_result never called. Its calls still count against both
 * caps until polkit has answered them, since until then each holds one of the bus's
 * 128 replies. */
int bus_request_authorize(BusContext *c, BusRequest **reqp, const char *action, bool interactive,
                          void (*on_result)(BusRequest *req, int result));

/* For a method that lists what the caller owns, and everyone's to holders of
 * org.tracebus.manage: calls @on_result with polkit's answer (asked without a dialog), or
 * at once with 1 for root. polkit is asked whatever others run, so the reply's latency
 * says nothing about other users. Returns 1 (the reply comes from @on_result) or a
 * negative errno. */
int bus_request_authorize_listing(BusContext *c, sd_bus_message *message,
                                  void (*on_result)(BusRequest *req, int result));

/* From the callback of @req, whose polkit answer came: asks polkit about @actions
 * together, under the same caps (each action one call), and calls @on_results once
 * with all the answers. Returns 1 (the reply comes later, or TooManyPendingCalls was
 * answered) or a negative errno, with which the caller answers. */
int bus_request_authorize_again(BusRequest *req, const PolkitAction *actions, size_t n,
                                void (*on_results)(BusRequest *req, const int *results));

/* Answers a call that polkit refused (or could not decide): @what needs @action. */
void bus_request_reply_refusal(BusRequest *req, int result, const char *action, const char *what);

/* Answers every call still waiting for polkit with ShuttingDown (SIGTERM), and drops them. */
void bus_context_cancel_requests(BusContext *c);

/* The descriptors the calls waiting for polkit hold, of @uid and of everyone, for the
 * file descriptor budgets: a Start's Output twice (the message's and the copy). */
void bus_context_count_held_fds(BusContext *c, uid_t uid, unsigned *ret_uid, unsigned *ret_all);

/* The Output fd must be something the caller could write a trace into itself
 * (output-fd.c): the service's own fd for it in *ret, or a named error. */
int bus_take_output_fd(int fd, uid_t uid, int *ret, sd_bus_error *error);

/* The caller's EUID, as the bus reports it (SO_PEERCRED): never from the message. */
int bus_sender_euid(sd_bus_message *m, uid_t *ret);

/* Sets the named error for a Start refused for the service's resources or its shutdown
 * (@req may be NULL for START_FAILURE_SHUTTING_DOWN), saying what is in use and the cap. */
int bus_start_resource_error(Manager *m, const StartRequest *req, StartFailure failure, sd_bus_error *error);
