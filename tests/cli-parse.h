/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The unit tests of the CLI's light options: the command line parsed as tracebus parses
 * it, and the config it builds read back. Include before glib.h, which redefines MIN and
 * MAX over macro.h's.
 */
#include "cli.h"

/* Parses @words (NULL-terminated, without argv[0]) as tracebus does: cli_parse_argv()'s
 * result, and the config in @ret (when not NULL) when it is a recording. */
int cli_test_parse(CliConfig *ret, const char *const *words);
#define PARSE(ret, ...) cli_test_parse(ret, (const char *const[]) { __VA_ARGS__, NULL })

/* The config of data source @name in @tc, or NULL. */
const Tracebus__DataSourceConfig *cli_test_source(const Tracebus__TraceConfig *tc, const char *name);
