/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tb-bench hostile --victim USER --attacker USER --probes N
 *
 * What a hostile Start costs others: USER victim's IsDetached latency, median
 * of N calls, quiet and then while the attacker (whom polkit refuses) floods the service
 * with hostile Starts (bench/hostile-load.c, which tests/test-hostile-start.c shares).
 * Prints one JSON object; the ratio of the two is measured in this one run.
 */
#include <stdio.h>
#include <stdlib.h>

#include "hostile-load.h"
#include "tb-bench.h"

int cmd_hostile(int argc, char **argv) {
        const char *victim = arg(argc, argv, "--victim", "tbuser");
        const char *attacker = arg(argc, argv, "--attacker", "tbother");
        unsigned probes = (unsigned) strtoul(arg(argc, argv, "--probes", "101"), NULL, 10);
        char **names = hostile_kernel_names(TRACEFS);
        HostileResult res;
        int r;

        if (!names)
                die("reading the kernel's events", 2);
        r = hostile_measure(victim, attacker, names, probes, &res);
        hostile_names_free(names);
        if (r < 0)
                die("measuring", r);
        printf("{\"quiet_us\": %.1f, \"loaded_us\": %.1f, \"ratio\": %.3f, \"probes\": %u, "
               "\"starts_answered\": %u, \"starts_accepted\": %u, \"first_answer\": \"%s\"}\n",
               res.quiet_us, res.loaded_us, res.loaded_us / (res.quiet_us > 1 ? res.quiet_us : 1), probes,
               res.answered, res.accepted, res.first_error);
        return 0;
}
