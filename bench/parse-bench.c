/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The recorder's decode path alone, on pages a real storm left in the kernel's buffer
 * (tb-bench floor --dump FILE): parse every page into per-CPU-like bundles, pack a
 * bundle every 200 pages (about one drain period at the storm's rate; --bundle-pages N
 * for another count), and report the CPU time per event. --deflate also compresses each
 * bundle as the service does for compression_type DEFLATE.
 *
 * --protobuf-c asks whether protobuf-c's generated packing would do as well as ours:
 * each bundle our packer wrote is unpacked (not timed) into the generated
 * FtraceEventBundle and CompactSched structs, which is what a decoder filling them would
 * have made, then packed again by tracebus__ftrace_event_bundle__get_packed_size() and
 * __pack(), timed. Ours writes each value's varint once, as the page is decoded, and
 * packing is a copy; protobuf-c's route would store each value in an array as it is
 * decoded, then size and encode every value when packing. Reported: our pack alone and
 * protobuf-c's, per event, next to the whole decode.
 * --fixtures DIR reads the formats from DIR/header_page and DIR/events/ (the layout of
 * tests/fixtures/ftrace/, whose pages were captured with them) instead of the running
 * kernel's, so that the captured pages can be measured without tracefs.
 * --event GROUP/NAME (again for more) decodes that event too, besides the storm's two;
 * --hash-addresses writes kernel addresses hashed, as in traces of callers without
 * org.tracebus.manage (ftrace_parser_hash_addresses()).
 * --columns (with --deflate) reports each compact_sched field's bytes before and after
 * the deflate of its bundle (each column as deflate_spans() treats it, coded or stored,
 * and what deflate_coded() would make of it), to say where the file's bytes go.
 * --out FILE writes each bundle's packed bytes (then, with --deflate, its deflated bytes)
 * to FILE, so that a change to the decoder or deflate can be checked byte for byte
 * against the build before it (cmp).
 * Usage: parse-bench PAGES [--full] [--deflate] [--columns] [--protobuf-c] [--fixtures DIR]
 *                          [--bundle-pages N] [--loops N] [--event G/N] [--hash-addresses]
 *                          [--out FILE]
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ftrace-parser.h"
#include "parse-bench-columns.h"
#include "trace.pb-c.h"

typedef struct Options {
        const char *pages_path;
        const char *header_page, *events_dir;
        char *fixtures_header;
        bool full, deflate, columns, protobuf_c, hash_addresses;
        int loops, bundle_pages;
        const char *events[8];
        size_t n_events;
        const char *out_path;
} Options;

typedef struct Totals {
        uint64_t events;
        size_t out_bytes, z_bytes, pbc_bytes;
        uint64_t pack_ns, pbc_ns;       /* --protobuf-c: the packs alone */
        uint64_t pbc_all_ns;            /* --protobuf-c: its unpack, pack and free */
        uint8_t *z, *pbc;               /* scratch output buffers */
        size_t z_allocated, pbc_allocated;
        ColumnTotals columns;           /* --columns */
        FILE *out;                      /* --out */
} Totals;

static char *slurp(const char *path, size_t *len) {
        FILE *f = fopen(path, "re");
        char *t = NULL;
        size_t n = 0;
        ssize_t r;

        if (!f)
                return NULL;
        r = getdelim(&t, &n, 0, f);
        fclose(f);
        *len = r > 0 ? (size_t) r : 0;
        return t;
}

static uint64_t cpu_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

static bool parse_options(int argc, char **argv, Options *o) {
        *o = (Options) { .loops = 5, .bundle_pages = 200, .events_dir = "/sys/kernel/tracing/events",
                         .header_page = "/sys/kernel/tracing/events/header_page",
                         .events = { "sched/sched_switch", "sched/sched_waking" }, .n_events = 2 };
        if (argc < 2)
                return false;
        o->pages_path = argv[1];
        for (int i = 2; i < argc; i++) {
                if (strcmp(argv[i], "--full") == 0)
                        o->full = true;
                else if (strcmp(argv[i], "--deflate") == 0)
                        o->deflate = true;
                else if (strcmp(argv[i], "--columns") == 0)
                        o->columns = o->deflate = true;
                else if (strcmp(argv[i], "--protobuf-c") == 0)
                        o->protobuf_c = true;
                else if (strcmp(argv[i], "--fixtures") == 0 && i + 1 < argc) {
                        const char *dir = argv[++i];

                        if (asprintf(&o->fixtures_header, "%s/header_page", dir) < 0 ||
                            asprintf((char **) &o->events_dir, "%s/events", dir) < 0)
                                return false;
                        o->header_page = o->fixtures_header;
                } else if (strcmp(argv[i], "--bundle-pages") == 0 && i + 1 < argc)
                        o->bundle_pages = atoi(argv[++i]);
                else if (strcmp(argv[i], "--loops") == 0 && i + 1 < argc)
                        o->loops = atoi(argv[++i]);
                else if (strcmp(argv[i], "--event") == 0 && i + 1 < argc && o->n_events < 8)
                        o->events[o->n_events++] = argv[++i];
                else if (strcmp(argv[i], "--hash-addresses") == 0)
                        o->hash_addresses = true;
                else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
                        o->out_path = argv[++i];
                else
                        return false;
        }
        return o->loops >= 1 && o->bundle_pages >= 1;
}

/* The header page and the storm's two events (and --event's), as the running kernel
 * (or --fixtures) has them. */
static int parser_setup(FtraceParser *p, const Options *o) {
        static const uint8_t key[FTRACE_ADDRESS_KEY_SIZE] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
        size_t len;
        char *text;
        int r;

        text = slurp(o->header_page, &len);
        r = text ? ftrace_parser_load_header_page(p, text, len) : -1;
        free(text);
        if (r >= 0 && o->hash_addresses)
                r = ftrace_parser_hash_addresses(p, key);
        for (size_t i = 0; r >= 0 && i < o->n_events; i++) {
                char path[512], group[128];

                snprintf(group, sizeof(group), "%.*s", (int) strcspn(o->events[i], "/"), o->events[i]);
                snprintf(path, sizeof(path), "%s/%s/format", o->events_dir, o->events[i]);
                text = slurp(path, &len);
                r = text ? ftrace_parser_add_event(p, group, text, len) : -1;
                free(text);
        }
        return r < 0 ? -1 : 0;
}

static uint8_t *scratch(uint8_t **buf, size_t *allocated, size_t len) {
        if (len > *allocated) {
                free(*buf);
                *buf = malloc(len);
                *allocated = *buf ? len : 0;
        }
        return *buf;
}

static int deflate_bundle(FtraceBundle *b, const uint8_t *buf, size_t len, Totals *t) {
        const DeflateSpan *spans;
        size_t n = ftrace_bundle_coded_spans(b, &spans);
        DeflateStream s;

        if (!scratch(&t->z, &t->z_allocated, deflate_bound(len, 2 * n + 1)))
                return -1;
        deflate_begin(&s, t->z);
        deflate_spans(&s, buf, len, spans, n);
        n = deflate_end(&s);
        t->z_bytes += n;
        if (t->out && fwrite(t->z, 1, n, t->out) != n)
                return -1;
        return 0;
}

/* Our bundle's bytes through protobuf-c: unpacked untimed, packed timed. */
static int protobuf_c_pack(const uint8_t *buf, size_t len, Totals *t) {
        Tracebus__FtraceEventBundle *m = tracebus__ftrace_event_bundle__unpack(NULL, len, buf);
        uint64_t t0;
        size_t n;

        if (!m)
                return -1;
        t0 = cpu_ns();
        n = tracebus__ftrace_event_bundle__get_packed_size(m);
        if (!scratch(&t->pbc, &t->pbc_allocated, n)) {
                tracebus__ftrace_event_bundle__free_unpacked(m, NULL);
                return -1;
        }
        t->pbc_bytes += tracebus__ftrace_event_bundle__pack(m, t->pbc);
        t->pbc_ns += cpu_ns() - t0;
        tracebus__ftrace_event_bundle__free_unpacked(m, NULL);
        return 0;
}

/* Packs @b as the service does (ftrace_bundle_pack_into() under ftrace_bundle_pack()). */
static int bundle_round(FtraceBundle *b, const Options *o, Totals *t) {
        const int32_t *pids;
        const uint8_t *buf;
        uint64_t t0 = o->protobuf_c ? cpu_ns() : 0;
        size_t len;

        (void) ftrace_bundle_take_pids(b, &pids);
        if (ftrace_bundle_pack(b, &buf, &len) < 0)
                return -1;
        if (o->protobuf_c)
                t->pack_ns += cpu_ns() - t0;
        t->out_bytes += len;
        if (t->out && fwrite(buf, 1, len, t->out) != len)
                return -1;
        if (o->deflate && deflate_bundle(b, buf, len, t) < 0)
                return -1;
        if (o->columns && column_totals_add(&t->columns, buf, len) < 0)
                return -1;
        if (o->protobuf_c) {
                uint64_t t1 = cpu_ns();

                if (protobuf_c_pack(buf, len, t) < 0)
                        return -1;
                t->pbc_all_ns += cpu_ns() - t1;
        }
        return 0;
}

static int run(FtraceParser *p, FtraceBundle *b, const uint8_t *pages, size_t n_pages, size_t page_size,
               const Options *o, Totals *t) {
        size_t every = (size_t) o->bundle_pages;

        for (int l = 0; l < o->loops; l++)
                for (size_t i = 0; i < n_pages; i++) {
                        int r = ftrace_parser_parse_page(p, pages + i * page_size, page_size, b);

                        if (r > 0)
                                t->events += (uint64_t) r;
                        if ((i % every == every - 1 || i == n_pages - 1) && bundle_round(b, o, t) < 0)
                                return -1;
                }
        return 0;
}

static void report(const Options *o, const Totals *t, size_t n_pages, uint64_t ns) {
        double ev = (double) t->events;

        /* The protobuf-c passes are not part of the decode's time. */
        printf("{\"pages\": %zu, \"events\": %llu, \"ns_per_event\": %.2f, \"bytes_per_event\": %.2f",
               n_pages * (size_t) o->loops, (unsigned long long) t->events, (double) (ns - t->pbc_all_ns) / ev,
               (double) t->out_bytes / ev);
        if (o->deflate)
                printf(", \"deflated_bytes_per_event\": %.2f", (double) t->z_bytes / ev);
        if (o->protobuf_c)
                printf(", \"our_pack_ns_per_event\": %.2f, \"protobuf_c_pack_ns_per_event\": %.2f"
                       ", \"protobuf_c_bytes_per_event\": %.2f",
                       (double) t->pack_ns / ev, (double) t->pbc_ns / ev, (double) t->pbc_bytes / ev);
        printf("}\n");
        if (o->columns)
                column_totals_print(&t->columns, t->events, t->z_bytes);
}

int main(int argc, char **argv) {
        long page_size = sysconf(_SC_PAGESIZE);
        FtraceParser *p;
        FtraceBundle *b;
        Totals t = {};
        struct stat st;
        const uint8_t *pages;
        size_t n_pages;
        uint64_t t0;
        Options o;
        int fd;

        if (!parse_options(argc, argv, &o))
                return 2;
        if (ftrace_parser_new(&p) < 0 || ftrace_bundle_new(0, !o.full, &b) < 0 || parser_setup(p, &o) < 0)
                return 1;
        fd = open(o.pages_path, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0)
                return 1;
        pages = mmap(NULL, (size_t) st.st_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
        if (pages == MAP_FAILED)
                return 1;
        n_pages = (size_t) st.st_size / (size_t) page_size;

        if (o.out_path) {
                t.out = fopen(o.out_path, "we");
                if (!t.out)
                        return 1;
        }
        t0 = cpu_ns();
        if (run(p, b, pages, n_pages, (size_t) page_size, &o, &t) < 0)
                return 1;
        report(&o, &t, n_pages, cpu_ns() - t0);
        if (t.out && fclose(t.out) != 0)
                return 1;
        free(t.z);
        free(t.pbc);
        ftrace_bundle_free(b);
        ftrace_parser_free(p);
        return 0;
}
