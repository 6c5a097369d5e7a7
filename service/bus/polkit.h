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
 * The callback's @result: 1 allowed; -EACCES denied; -EBADR: polkit wants an
 * authentication the message did not allow (answer InteractiveAuthorizationRequired);
 * -EHOSTDOWN: polkit gave no answer (not running, could not be started, died while it
 * held the query): refuse, saying that authorization could not be checked; other
 * negative errno: the query failed.
 */

typedef struct PolkitQuery PolkitQuery;
typedef void (*polkit_callback_t)(int result, void *userdata);

/* Asks whether the sender of @m may do @action. User interaction is requested only if
 * @interactive and @m allows it. The callback runs once, from the event loop, unless the
 * query is freed first. */
int polkit_check_async(sd_bus_message *m, const char *action, bool interactive,
                       polkit_callback_t callback, void *userdata, PolkitQuery **ret);

/* Asks polkit to drop the query (CancelCheckAuthorization: its authentication dialog
 * goes away, and polkit answers the query at once, which frees the bus's slot for it).
 * The query stays: its callback still runs, with whatever polkit answers, and nothing
 * is logged about that answer. */
void polkit_query_cancel(PolkitQuery *q);

/* Forgets a pending query; the callback is not called. NULL-safe. */
PolkitQuery *polkit_query_free(PolkitQuery *q);
DEFINE_TRIVIAL_CLEANUP_FUNC(PolkitQuery *, polkit_query_free);
