/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <string.h>
#include <unistd.h>

#include "cli-parse.h"

#include <glib.h>

int cli_test_parse(CliConfig *ret, const char *const *words) {
        g_autoptr(GPtrArray) argv = g_ptr_array_new();
        Args a = {};
        int r;

        g_ptr_array_add(argv, (char *) "tracebus");
        for (size_t i = 0; words[i]; i++)
                g_ptr_array_add(argv, (char *) words[i]);
        g_ptr_array_add(argv, NULL);
        optind = 0; /* glibc: start getopt afresh */
        r = cli_parse_argv((int) argv->len - 1, (char **) argv->pdata, &a);
        if (r > 0 && ret)
                r = cli_config_load(&a, ret);
        cli_args_done(&a);
        return r;
}

const Tracebus__DataSourceConfig *cli_test_source(const Tracebus__TraceConfig *tc, const char *name) {
        for (size_t i = 0; i < tc->n_data_sources; i++)
                if (tc->data_sources[i]->config && strcmp(tc->data_sources[i]->config->name, name) == 0)
                        return tc->data_sources[i]->config;
        return NULL;
}
