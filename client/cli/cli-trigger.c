/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * --trigger=NAME[,NAME]: Manager.ActivateTriggers, as
 * Perfetto's trigger_perfetto sends triggers to traced. The service tells nothing of
 * which sessions took them (nor does Perfetto's): the trace says so (a "Trace Triggers"
 * slice in trace_processor), and a STOP_TRACING session ends on its own.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "strv.h"
#include "tracebus-bus.h"

#define TRIGGER_NAME_MAX 64u   /* the service's cap (session-config.h), said here first */

int cli_parse_triggers(Args *a, const char *arg) {
        _cleanup_free_ char *copy = strdup(arg);
        char *save = NULL;
        size_t before = strv_length(a->triggers);

        if (!copy)
                return -ENOMEM;
        /* "a,,b" and a trailing comma name nothing: refused, not skipped. */
        if (*arg == '\0' || strstr(arg, ",,") || *arg == ',' || arg[strlen(arg) - 1] == ',')
                return cli_refuse("--trigger: a trigger name is 1 to %u bytes: '%s'", TRIGGER_NAME_MAX, arg);
        for (char *n = strtok_r(copy, ",", &save); n; n = strtok_r(NULL, ",", &save)) {
                if (strlen(n) > TRIGGER_NAME_MAX)
                        return cli_refuse("--trigger: a trigger name is 1 to %u bytes: '%s'", TRIGGER_NAME_MAX, n);
                if (strv_extend(&a->triggers, n) < 0)
                        return -ENOMEM;
        }
        return strv_length(a->triggers) > before ? 0 : cli_refuse("--trigger: name at least one trigger");
}

int run_trigger(const Args *a) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        if (cli_connect(&bus) < 0)
                return EXIT_FAILURE;
        r = sd_bus_message_new_method_call(bus, &m, TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_INTERFACE,
                                           "ActivateTriggers");
        if (r >= 0)
                r = sd_bus_message_append_strv(m, a->triggers);
        if (r < 0) {
                cli_log("cannot send the triggers: cannot build the request: %s", strerror(-r));
                return EXIT_FAILURE;
        }
        r = cli_call_authorized(bus, m, CLI_CALL_TIMEOUT_USEC, &error, &reply);
        if (r < 0) {
                cli_print_bus_error("cannot send the triggers", &error, r, TB_ACTION_TRIGGER);
                return EXIT_FAILURE;
        }
        return EXIT_SUCCESS;
}
