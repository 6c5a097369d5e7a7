/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

/*
 * The event loop of a bus-activated service that exits when idle, in the manner of
 * systemd's bus_event_loop_with_idle(): once @check_idle has said true and nothing has
 * happened for @timeout_usec, it sends STOPPING=1 (systemd then queues new start
 * requests instead of taking us for running), releases @name asynchronously and keeps
 * serving until the bus confirms that the name is gone. Calls that reached us before
 * that are answered; later ones activate a new instance. It returns once @check_idle
 * holds again after the release (a call that raced the release may have started work).
 *
 * @timeout_usec 0 never exits for idleness. Returns the event loop's exit code (SIGTERM
 * and friends still end it through sd_event_exit()), or a negative errno.
 */
int idle_loop_run(sd_event *e, sd_bus *bus, const char *name, uint64_t timeout_usec,
                  bool (*check_idle)(void *userdata), void *userdata);
