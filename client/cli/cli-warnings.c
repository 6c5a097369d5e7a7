/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The service's warnings on stderr, each once: those of Start's reply (what it skipped
 * or changed of the config), then those of the session's Warnings property as it grows
 * while recording (PropertiesChanged, and every GetAll the progress line makes).
 */
#include <string.h>

#include "cli.h"
#include "strv.h"

bool cli_has_new_warnings(char **printed, char **l) {
        STRV_FOREACH(w, l)
                if (!strv_contains(printed, *w))
                        return true;
        return false;
}

int cli_print_new_warnings(char ***printed, char **l) {
        int n = 0;

        STRV_FOREACH(w, l) {
                if (strv_contains(*printed, *w))
                        continue;
                cli_log("warning: %s", *w);
                if (strv_extend(printed, *w) < 0)
                        return -ENOMEM;
                n++;
        }
        return n;
}

int cli_read_start_reply(sd_bus_message *reply, const char **ret_path, char ***ret_warnings) {
        const char *signature = sd_bus_message_get_signature(reply, /* complete= */ true);
        int r;

        r = sd_bus_message_read(reply, "o", ret_path);
        if (r < 0)
                return r;
        *ret_warnings = NULL;
        /* Attach answers the path alone, as Start did before it had warnings. */
        if (!signature || strcmp(signature, "oas") != 0)
                return 0;
        return sd_bus_message_read_strv(reply, ret_warnings);
}
