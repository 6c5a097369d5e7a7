/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target: ring-buffer pages (per_cpu/cpuN/trace_pipe_raw) with arbitrary
 * contents, decoded by ftrace_parser_parse_page() and packed, against
 *
 *  - the kernel's real format files (tests/fixtures/ftrace/events), when the
 *    first byte of the input has bit 7 clear: the rest is the page;
 *  - one of those format files with arbitrary field layouts, when bit 7 is set:
 *    the second byte picks the format, and every number after "offset:",
 *    "size:" and "signed:" is replaced by the next input byte (or bit), so that
 *    fields may overlap, run past the record, have sizes of 0 or 255; the rest
 *    of the input is the page.
 *
 * Bit 0 of the first byte turns on compact_sched; bit 1 hashes kernel addresses, as
 * for callers without org.tracebus.manage. Each packed bundle is deflated too. The format text stays in the
 * kernel's grammar: format files come from tracefs, which only root can write,
 * never from a caller, and libtraceevent 1.7.1 itself crashes in
 * tep_parse_event() on some damaged texts (its parser, not ours, and not
 * reachable by a caller). What a hostile or buggy kernel can vary without
 * breaking the grammar, the layout, is what we decode, and is fuzzed here.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftrace-parser.h"
#include "fuzz-common.h"

#define MAX_FORMATS 64

typedef struct {
        char group[64];
        char *text;
        size_t len;
} Format;

static Format formats[MAX_FORMATS];
static size_t n_formats;
static char *header_page;
static size_t header_page_len;
static FtraceParser *real_parser, *hashing_parser;  /* the kernel's formats; the second hashes addresses */

static char *read_file(const char *path, size_t *ret_len) {
        FILE *f = fopen(path, "re");
        char *buf = NULL;
        size_t len = 0;

        if (!f)
                return NULL;
        buf = malloc(1 << 16);
        if (buf)
                len = fread(buf, 1, (1 << 16) - 1, f);
        fclose(f);
        if (buf)
                buf[len] = 0;
        *ret_len = len;
        return buf;
}

static void load_formats(void) {
        char path[4096];
        DIR *groups;
        struct dirent *g;

        snprintf(path, sizeof(path), "%s/header_page", fuzz_tracefs_root());
        header_page = read_file(path, &header_page_len);
        if (!header_page)
                abort();
        snprintf(path, sizeof(path), "%s/events", fuzz_tracefs_root());
        groups = opendir(path);
        if (!groups)
                abort();
        while ((g = readdir(groups))) {
                DIR *events;
                struct dirent *e;

                if (g->d_name[0] == '.')
                        continue;
                snprintf(path, sizeof(path), "%s/events/%s", fuzz_tracefs_root(), g->d_name);
                events = opendir(path);
                if (!events)
                        continue;
                while ((e = readdir(events)) && n_formats < MAX_FORMATS) {
                        Format *f = &formats[n_formats];

                        if (e->d_name[0] == '.')
                                continue;
                        snprintf(path, sizeof(path), "%s/events/%s/%s/format", fuzz_tracefs_root(), g->d_name,
                                 e->d_name);
                        f->text = read_file(path, &f->len);
                        if (!f->text)
                                continue;
                        snprintf(f->group, sizeof(f->group), "%s", g->d_name);
                        n_formats++;
                }
                closedir(events);
        }
        closedir(groups);
        /* A stable order, whatever readdir gives. */
        for (size_t i = 0; i < n_formats; i++)
                for (size_t j = i + 1; j < n_formats; j++)
                        if (strcmp(formats[i].text, formats[j].text) > 0) {
                                Format t = formats[i];
                                formats[i] = formats[j];
                                formats[j] = t;
                        }
        if (n_formats == 0)
                abort();
}

static FtraceParser *parser_with(const Format *const *fs, size_t n) {
        FtraceParser *p = NULL;

        if (ftrace_parser_new(&p) < 0)
                abort();
        if (ftrace_parser_load_header_page(p, header_page, header_page_len) < 0)
                abort();
        for (size_t i = 0; i < n; i++)
                (void) ftrace_parser_add_event(p, fs[i]->group, fs[i]->text, fs[i]->len);
        return p;
}

/* A fixed key: a crash must reproduce from its input alone. */
static const uint8_t address_key[FTRACE_ADDRESS_KEY_SIZE] = "tracebus-fuzzkey";

static void hash_addresses(FtraceParser *p) {
        if (ftrace_parser_hash_addresses(p, address_key) < 0)
                abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        const Format *all[MAX_FORMATS];

        (void) argc;
        (void) argv;
        load_formats();
        for (size_t i = 0; i < n_formats; i++)
                all[i] = &formats[i];
        real_parser = parser_with(all, n_formats);
        hashing_parser = parser_with(all, n_formats);
        hash_addresses(hashing_parser);
        return 0;
}

/* The format text of @f with every number after offset:/size:/signed: taken from
 * the input. Advances *data/*size over what it used. */
static char *mutate_layout(const Format *f, const uint8_t **data, size_t *size) {
        static const char *const keys[] = { "offset:", "size:", "signed:" };
        size_t cap = f->len * 2 + 64, o = 0;
        char *out = malloc(cap);
        const char *s = f->text;

        if (!out)
                return NULL;
        while (*s && o + 16 < cap) {
                size_t k;

                for (k = 0; k < 3; k++)
                        if (strncmp(s, keys[k], strlen(keys[k])) == 0)
                                break;
                if (k == 3 || *size == 0) {
                        out[o++] = *s++;
                        continue;
                }
                memcpy(out + o, keys[k], strlen(keys[k]));
                o += strlen(keys[k]);
                s += strlen(keys[k]);
                while (*s >= '0' && *s <= '9')
                        s++;
                o += (size_t) snprintf(out + o, cap - o, "%u", k == 2 ? (unsigned) ((*data)[0] & 1) : (unsigned) (*data)[0]);
                (*data)++;
                (*size)--;
        }
        out[o] = 0;
        return out;
}

/* Deflated as compression_type DEFLATE does it, into exactly deflate_bound() bytes (so
 * that ASan sees a write past them), the stream ending in the checksum of the bytes. */
static void deflate_packed(const FtraceBundle *b, const uint8_t *buf, size_t len) {
        const DeflateSpan *spans;
        size_t n = ftrace_bundle_coded_spans(b, &spans), zlen;
        uint8_t *z = malloc(deflate_bound(len, 2 * n + 1));
        uint32_t adler = adler32_update(1, buf, len);
        DeflateStream s;

        if (!z)
                abort();
        deflate_begin(&s, z);
        deflate_spans(&s, buf, len, spans, n);
        zlen = deflate_end(&s);
        if (zlen > deflate_bound(len, 2 * n + 1) || zlen < 10 ||
            z[zlen - 4] != (uint8_t) (adler >> 24) || z[zlen - 1] != (uint8_t) adler)
                abort();
        free(z);
}

static void parse_and_pack(FtraceParser *p, bool compact, const uint8_t *page, size_t size) {
        FtraceBundle *b = NULL;
        const int32_t *pids;
        const uint8_t *buf = NULL;
        size_t len;

        if (ftrace_bundle_new(1, compact, &b) < 0)
                abort();
        (void) ftrace_parser_page_lost_events(p, page, size);
        (void) ftrace_parser_parse_page(p, page, size, b);
        (void) ftrace_bundle_n_events(b);
        (void) ftrace_bundle_take_pids(b, &pids);
        if (ftrace_bundle_pack(b, &buf, &len) >= 0)
                deflate_packed(b, buf, len);
        ftrace_bundle_free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        uint8_t mode;

        if (size < 1)
                return 0;
        mode = data[0];
        data++;
        size--;
        if (!(mode & 0x80)) {
                parse_and_pack(mode & 2 ? hashing_parser : real_parser, mode & 1, data, size);
                return 0;
        }

        if (size < 1)
                return 0;
        {
                Format mutated = formats[data[0] % n_formats];
                const Format *one[] = { &mutated };
                FtraceParser *p;

                data++;
                size--;
                mutated.text = mutate_layout(&formats[data[-1] % n_formats], &data, &size);
                if (!mutated.text)
                        return 0;
                mutated.len = strlen(mutated.text);
                p = parser_with(one, 1);
                if (mode & 2)
                        hash_addresses(p);
                parse_and_pack(p, mode & 1, data, size);
                ftrace_parser_free(p);
                free(mutated.text);
        }
        return 0;
}
