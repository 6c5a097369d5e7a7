/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Floods of one hostile call, for the bus suites that time another user's calls while a
 * caller sends the same large request again and again (tests/test-hostile-bounded.c,
 * tests/test-method-cost.c): the flooding client, and the median latency of a cheap call.
 */

#include <stdbool.h>
#include <systemd/sd-bus.h>

#include "tb-client.h"

typedef struct HostileCall {
        /* Builds the call on @bus, once: the flood sends the same message again and again.
         * @data is the HostileCall's own. */
        int (*build)(sd_bus *bus, const void *data, sd_bus_message **ret);
        const void *data;
} HostileCall;

/* A flooding client: @user sends @call's message, waits for the answer, sleeps
 * @gap_us, and again, until hostile_flood_finish(). */
typedef struct HostileFlood {
        Client client;
        char *first;      /* the first answer: "error.name\tmessage", or "success\t" */
} HostileFlood;

/* In a flooding child: whether the test asked it to stop (a byte or EOF on @ctl). */
bool hostile_ctl_pending(int ctl);

/* Spawns the flood and waits for its first answer (NULL in flood->first when none came
 * within @timeout_ms: the service did not answer). */
void hostile_flood_start(HostileFlood *flood, const char *user, const HostileCall *call, unsigned gap_us,
                         unsigned timeout_ms);
/* Stops the flood: how many calls it made, and how many answers differed from the first
 * (false when it did not report within @timeout_ms). */
bool hostile_flood_finish(HostileFlood *flood, unsigned timeout_ms, unsigned *ret_calls, unsigned *ret_wrong);

/* A load run against the service while root's calls are timed: @start begins it (NULL,
 * or why it could not: no timing then), @finish ends it (NULL, or what went wrong). */
typedef struct HostileLoad {
        char *(*start)(void *data);
        char *(*finish)(void *data);
        void *data;
} HostileLoad;

/* Root's IsDetached median (@probes calls) under @load stays under @max_ratio times its
 * quiet median measured just before, in one of @attempts tries (the machine's other load
 * makes one median noisy; a service that works per element fails them all). NULL, or
 * why not; @who names the load in the log and the verdict. */
char *hostile_load_check_ratio(const HostileLoad *load, const char *who, double max_ratio, unsigned probes,
                               unsigned attempts);

/* The median of @n calls to Manager.IsDetached on root's connection, in µs, 10 ms apart. */
double median_is_detached_us(unsigned n);
/* For qsort() and g_array_sort() of doubles, ascending. */
gint cmp_doubles(gconstpointer a, gconstpointer b);
