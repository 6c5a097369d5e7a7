/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <systemd/sd-bus.h>

#include "core/manager.h"
#include "tracebus-bus.h"
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

typedef struct BusContext {
        Manager *manager;
        sd_bus *bus;
        BusRequest *requests;        /* calls waiting for polkit */
} BusContext;

/* A call waiting for polkit. What happens once polkit has answered depends on the method. */
struct BusRequest {
        BusContext *context;
        BusRequest *next, *prev;
        sd_bus_message *message;
        uid_t uid;                   /* the sender's EUID */
        PolkitQuery *query;
        void (*on_result)(BusRequest *req, int result);
        sd_bus_track *caller;        /* NULL once the caller left: the request is an orphan */

        StartRequest start;          /* Start */
        char *session_path;          /* Stop of a session that is not the caller's */
};

int bus_request_new(sd_bus_message *message, BusRequest **ret);
BusRequest *bus_request_free(BusRequest *req);
DEFINE_TRIVIAL_CLEANUP_FUNC(BusRequest *, bus_request_free);

/* Hands the request to polkit; the context keeps it until polkit answers, then calls
 * @on_result and frees it. Returns 1: the handler's reply comes later.
 *
 * Each UID may have MaxPendingPerUser calls waiting, the service MaxPending (each below
 * dbus-daemon's 128 replies a connection may wait for, so that one user can never make
 * polkit unreachable for the others): one more is answered TooManyPendingCalls here, at
 * once, without asking polkit. When the caller leaves the bus, its request is dropped:
 * its polkit query cancelled, its message and descriptors released, @on_result never
 * called. It still counts against both caps until polkit has answered the cancelled
 * query, since until then it holds one of the bus's 128 slots. */
int bus_request_authorize(BusContext *c, BusRequest **reqp, const char *action, bool interactive,
                          void (*on_result)(BusRequest *req, int result));

/* Answers a call that polkit refused (or could not decide): @what needs @action. */
void bus_request_reply_refusal(BusRequest *req, int result, const char *action, const char *what);

/* Answers every call still waiting for polkit with ShuttingDown (SIGTERM), and drops them. */
void bus_context_cancel_requests(BusContext *c);

/* The descriptors the calls waiting for polkit hold, of @uid and of everyone, for the
 * file descriptor budgets: a Start's Output twice (the message's and the copy). */
void bus_context_count_held_fds(BusContext *c, uid_t uid, unsigned *ret_uid, unsigned *ret_all);

/* The caller's EUID, as the bus reports it (SO_PEERCRED): never from the message. */
int bus_sender_euid(sd_bus_message *m, uid_t *ret);

/* Sets the named error for a Start refused for the service's resources or its shutdown
 * (@req may be NULL for START_FAILURE_SHUTTING_DOWN), saying what is in use and the cap. */
int bus_start_resource_error(Manager *m, const StartRequest *req, StartFailure failure, sd_bus_error *error);
