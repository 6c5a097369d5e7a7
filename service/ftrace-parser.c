/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Placeholder until the page parser lands. */
#include <errno.h>
#include <stdlib.h>
#include "ftrace-parser.h"

int ftrace_parser_new(FtraceParser **ret) { return -EOPNOTSUPP; }
FtraceParser *ftrace_parser_free(FtraceParser *p) { return NULL; }
int ftrace_parser_load_header_page(FtraceParser *p, const char *text, size_t len) { return -EOPNOTSUPP; }
int ftrace_parser_add_event(FtraceParser *p, const char *group, const char *text, size_t len) { return -EOPNOTSUPP; }
int ftrace_bundle_new(uint32_t cpu, bool compact_sched, FtraceBundle **ret) { return -EOPNOTSUPP; }
FtraceBundle *ftrace_bundle_free(FtraceBundle *b) { return NULL; }
int ftrace_parser_parse_page(FtraceParser *p, const void *page, size_t size, FtraceBundle *b) { return -EOPNOTSUPP; }
size_t ftrace_bundle_n_events(const FtraceBundle *b) { return 0; }
bool ftrace_bundle_lost_events(const FtraceBundle *b) { return false; }
uint64_t ftrace_bundle_last_timestamp(const FtraceBundle *b) { return 0; }
int ftrace_bundle_pack(FtraceBundle *b, uint8_t **ret_buf, size_t *ret_len) { return -EOPNOTSUPP; }
