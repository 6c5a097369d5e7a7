/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <systemd/sd-bus.h>

#include "macro.h"

/*
 * Asynchronous polkit checks over D-Bus (org.freedesktop.PolicyKit1.Authority.
 * CheckAuthorization, subject system-bus-name), so that a handler never blocks the
 * event loop while polkit (or an authentication agent) thinks.
 *
 * Each answer: 1 allowed; -EACCES denied; -EBADR: polkit wants an
 * authentication the message did not allow (answer InteractiveAuthorizationRequired);
 * -EHOSTDOWN: polkit gave no answer (not running, could not be started, died while it
 * held the query): refuse, saying that authorization could not be checked; other
 * negative errno: the query failed.
 */

typedef struct PolkitQuery PolkitQuery;

/* One polkit action to ask about. User interaction is requested only if @interactive and
 * the caller's message allows it; an action asked without it is a probe, whose refusal
 * is logged as the common answer it is. */
typedef struct PolkitAction {
        const char *id;
        bool interactive;
} PolkitAction;

/* The most actions one query asks about together. */
#define POLKIT_MAX_ACTIONS 4u

/* @results[i] is the answer on the query's i-th action, as described above. */
typedef void (*polkit_callback_t)(const int *results, size_t n, void *userdata);

/* Asks whether the sender of @m may do each of @actions (1 to POLKIT_MAX_ACTIONS): the
 * CheckAuthorization calls go out together, and the callback runs once, from the event
 * loop, when polkit has answered all of them, unless the query is freed first. */
int polkit_verify_actions_async(sd_bus_message *m, const PolkitAction *actions, size_t n,
                                polkit_callback_t callback, void *userdata, PolkitQuery **ret);

/* The query's CheckAuthorization calls still waiting for polkit's answer: each holds one
 * of the replies the bus lets a connection wait for. 0 for NULL. */
size_t polkit_query_n_pending(const PolkitQuery *q);

/* Asks polkit to drop the query (CancelCheckAuthorization for each of its calls: their
 * authentication dialogs go away, and polkit answers them at once, which frees the bus's
 * slots for them).
 * The query stays: its callback still runs, with whatever polkit answers, and nothing
 * is logged about that answer. */
void polkit_query_cancel(PolkitQuery *q);

/* Forgets a pending query; the callback is not called. NULL-safe. */
PolkitQuery *polkit_query_free(PolkitQuery *q);
DEFINE_TRIVIAL_CLEANUP_FUNC(PolkitQuery *, polkit_query_free);
