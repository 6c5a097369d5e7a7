/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What the ftrace parser's unit tests share: the real ring-buffer pages captured on the
 * target kernel (tests/fixtures/ftrace, made by capture.sh) with the kernel's own text
 * rendering of them, parsers set up from their format files, bundles packed and
 * unpacked with protobuf-c, and a writer of synthetic pages.
 */
#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "ftrace-parser.h"
#include "trace.pb-c.h"

#define PAGE_SIZE_4K 4096

#define RB_COMMIT_MASK ((1u << 27) - 1)

#define N_CPUS 2

typedef struct TextEvent {
        uint64_t ts_us;
        int pid;
        char *name;
} TextEvent;

typedef struct Fixture {
        GBytes *pages[N_CPUS];
        GArray *text[N_CPUS];           /* TextEvent */
        GKeyFile *expected;
        int worker_pid, child_pid;
} Fixture;

extern Fixture fx;

typedef struct Record {
        size_t offset;          /* in the page */
        unsigned type_len;
        uint64_t ts_before;     /* running time before this record */
} Record;

typedef struct PageWriter {
        uint8_t page[PAGE_SIZE_4K];
        size_t off;
} PageWriter;

GBytes *fixture_read(const char *name);

void fixture_load(void);

void fixture_unload(void);

char *expected_string(const char *key);

/* @s with its one occurrence of @from replaced by @to. */
char *replace_once(const char *s, const char *from, const char *to);

/* Adds every format under events/ (or only @only, "group/name"), under its own group or
 * @as_group. Returns the parser. */
FtraceParser *parser_new_from_fixtures_as(const char *only, const char *as_group);

FtraceParser *parser_new_from_fixtures(const char *only);

const uint8_t *cpu_page(int cpu, size_t i);

size_t cpu_n_pages(int cpu);

Tracebus__FtraceEventBundle *bundle_pack_unpack(FtraceBundle *b, GBytes **ret_raw);

/* Parses all pages of @cpu into one bundle. */
Tracebus__FtraceEventBundle *decode_cpu(FtraceParser *p, int cpu, bool compact, GBytes **ret_raw);

const char *event_name(const Tracebus__FtraceEvent *e);

const Tracebus__GenericFtraceEvent__Field *generic_field(const Tracebus__GenericFtraceEvent *g,
                                                                 const char *name);

uint32_t rd32(const uint8_t *s);

uint64_t rd64(const uint8_t *s);

/* The records of @page, in order. */
GArray *page_records(const uint8_t *page);

void pw_word(PageWriter *w, uint32_t v);

void pw_bytes(PageWriter *w, const void *s, size_t n);

void pw_finish(PageWriter *w, uint64_t ts);

/* The common fields of a 64-bit kernel's event format, as the first lines after "format:". */
#define FORMAT_COMMON_FIELDS \
        "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n" \
        "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n" \
        "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n" \
        "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"

/* The one record @rec (@len bytes, a multiple of 4) on a page, parsed by @p into a bundle
 * of one event, packed and read back. */
Tracebus__FtraceEventBundle *decode_one_record(FtraceParser *p, const void *rec, size_t len);
