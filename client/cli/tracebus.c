/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tracebus: record kernel traces through tracebusd, with perfetto's command line.
 *
 * The CLI opens the output file itself, as the calling user, and passes the file
 * descriptor to the service: the service never opens a path that a user names.
 * See tracebus(1) (doc/tracebus.1).
 */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "config.h"

static int run(int argc, char *argv[]) {
        _cleanup_(cli_args_done) Args a = {};
        int r;

        r = cli_parse_argv(argc, argv, &a);
        if (r == -EOPNOTSUPP)
                return EXIT_NOT_SUPPORTED;
        if (r < 0)
                return EXIT_FAILURE;
        if (a.mode == MODE_HELP) {
                cli_help(stdout);
                return EXIT_SUCCESS;
        }
        if (a.mode == MODE_VERSION) {
                printf("tracebus %s\n", PACKAGE_VERSION);
                return EXIT_SUCCESS;
        }
        cli_set_ask_password(a.ask_password);

        switch (a.mode) {
        case MODE_IS_DETACHED:
                return run_is_detached(&a);
        case MODE_ATTACH:
                return run_attach(&a);
        case MODE_QUERY:
                return run_query(&a);
        case MODE_LIST_EVENTS:
                return run_list_events(&a);
        case MODE_STOP_ALL:
                return run_stop_all(&a);
        case MODE_STOP_SESSION:
                return run_stop_session(&a);
        case MODE_TRIGGER:
                return run_trigger(&a);
        case MODE_CLONE:
                return run_clone(&a);
        default:
                return run_record(&a);
        }
}

int main(int argc, char *argv[]) {
        return run(argc, argv);
}
