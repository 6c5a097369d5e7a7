/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

#include "ftrace-parser.h"
#include "ksyms.h"
#include "trace-writer.h"

/*
 * The kernel's symbol table for symbolize_ksyms, read from /proc/kallsyms by the
 * thread that asks (a recorder's, never the event loop: the read takes about 0.1 s),
 * and shared by the sessions that ask within KSYMS_CACHE_MAX_AGE_USEC of each other
 * (modules come and go; the table of an older read is read again). The table is freed
 * when its last session ends (ksyms_mem_policy CLEANUP_ON_STOP, the default), or kept
 * until the service exits once a session asked for KSYMS_RETAIN.
 */

#define KSYMS_CACHE_MAX_AGE_USEC (60ull * 1000000ull)
/* /proc/kallsyms of a kernel with many modules is under 16 MiB. */
#define KSYMS_MAX_FILE_BYTES (64u * 1024u * 1024u)

/* A reference to the table, read now if the cached one is missing or too old. */
int ksyms_cache_get(bool retain, Ksyms **ret);
/* Gives back a reference from ksyms_cache_get(). NULL-safe. */
void ksyms_cache_put(Ksyms *k);

/* The symbols @parser gave an iid since the last call, as one packet of
 * InternedData.kernel_symbols on the ftrace sequence, in the metadata (never dropped by
 * a ring buffer, written before the data): ahead of the bundles that use them. */
int ksyms_append_new_symbols(FtraceParser *parser, const Ksyms *k, TraceWriter *w);
