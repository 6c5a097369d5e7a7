/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The producer's shared memory buffer, read from crafted pages: the geometry and layouts,
 * chunks taken and scraped with their states, headers that are not valid, fragments and
 * their sizes, packets glued across chunks in any order of arrival, patches, the caps, a
 * producer changing the memory behind our copy (a second mapping of the same memfd), and
 * a producer scribbling on its headers while we read them. */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shm-abi.h"

#define PAGE SMB_PAGE_SIZE_MIN
#define PAGES 8

typedef struct {
        int memfd;
        uint8_t *service;       /* the service's mapping */
        uint8_t *producer;      /* the producer's, the same memory */
        Smb smb;
        SmbReassembler *r;
        GPtrArray *packets;     /* "W:bytes" per packet, '!' before a packet after a loss */
        char *read;             /* the packets of the last read, joined */
} Fixture;

static void fixture_setup(Fixture *f, gconstpointer data) {
        f->memfd = memfd_create("smb", MFD_CLOEXEC);
        g_assert_cmpint(ftruncate(f->memfd, PAGE * PAGES), ==, 0);
        f->service = mmap(NULL, PAGE * PAGES, PROT_READ | PROT_WRITE, MAP_SHARED, f->memfd, 0);
        f->producer = mmap(NULL, PAGE * PAGES, PROT_READ | PROT_WRITE, MAP_SHARED, f->memfd, 0);
        g_assert_true(f->service != MAP_FAILED && f->producer != MAP_FAILED);
        g_assert_cmpint(smb_init(&f->smb, f->service, PAGE * PAGES, PAGE), ==, 0);
        g_assert_cmpint(smb_reassembler_new(&f->r), ==, 0);
        f->packets = g_ptr_array_new_with_free_func(g_free);
}

static void fixture_teardown(Fixture *f, gconstpointer data) {
        smb_reassembler_free(f->r);
        g_ptr_array_unref(f->packets);
        g_free(f->read);
        munmap(f->service, PAGE * PAGES);
        munmap(f->producer, PAGE * PAGES);
        close(f->memfd);
}

static void put_le(uint8_t *p, uint32_t v, unsigned bytes) {
        for (unsigned i = 0; i < bytes; i++)
                p[i] = (uint8_t) (v >> (8 * i));
}

static uint32_t page_word(Fixture *f, unsigned page) {
        uint32_t v;

        memcpy(&v, f->producer + page * PAGE, 4);
        return v;
}

/* The producer's side: page @page in @layout, chunk @chunk in @state with a header and
 * the fragments given as strings ("" is an empty packet), each size written as a 4-byte
 * redundant varint when @long_sizes. Returns the payload offset after the fragments. */
static size_t write_chunk(Fixture *f, unsigned page, unsigned layout, unsigned chunk, SmbChunkState state,
                          uint16_t writer, uint32_t chunk_id, uint8_t flags, bool long_sizes,
                          const char *const *fragments) {
        uint8_t *p = f->producer + page * PAGE;
        size_t size = smb_chunk_size(PAGE, layout), at = 0, n = 0;
        uint8_t *c = p + SMB_PAGE_HEADER_SIZE + chunk * size, *payload = c + SMB_CHUNK_HEADER_SIZE;
        uint32_t word = page_word(f, page);

        word = (word & ~(0x7u << 28) & ~(3u << (2 * chunk))) | (uint32_t) layout << 28 | (uint32_t) state << (2 * chunk);
        put_le(p, word, 4);
        for (; fragments && fragments[n]; n++) {
                size_t len = strlen(fragments[n]);
                if (long_sizes) {
                        for (unsigned i = 0; i < 3; i++)
                                payload[at++] = (uint8_t) ((len >> (7 * i)) & 0x7f) | 0x80;
                        payload[at++] = (uint8_t) (len >> 21);
                } else
                        payload[at++] = (uint8_t) len;
                memcpy(payload + at, fragments[n], len);
                at += len;
        }
        put_le(c, chunk_id, 4);
        put_le(c + 4, writer, 2);
        put_le(c + 6, (uint32_t) n | (uint32_t) flags << 10, 2);
        return at;
}

static int keep(const uint8_t *data, size_t size, uint16_t writer_id, bool dropped, void *userdata) {
        Fixture *f = userdata;

        g_ptr_array_add(f->packets, g_strdup_printf("%s%u:%.*s", dropped ? "!" : "", writer_id, (int) size, data));
        return 0;
}

static const char *read_packets_mode(Fixture *f, bool final) {
        g_ptr_array_set_size(f->packets, 0);
        g_assert_cmpint(smb_reassembler_read(f->r, final, keep, f), ==, 0);
        g_ptr_array_add(f->packets, NULL);
        g_free(f->read);
        f->read = g_strjoinv(" ", (char **) f->packets->pdata);
        g_ptr_array_set_size(f->packets, 0);
        return f->read;
}

static const char *read_packets(Fixture *f) {
        return read_packets_mode(f, false);
}

static void take_into(Fixture *f, unsigned page, unsigned chunk) {
        SmbChunk c = {};

        g_assert_cmpint(smb_take_chunk(&f->smb, page, chunk, &c), ==, 0);
        g_assert_cmpint(smb_reassembler_add(f->r, &c), ==, 0);
        g_assert_null(c.payload);
}

#define FRAGS(...) ((const char *const[]) { __VA_ARGS__, NULL })

static void test_geometry(void) {
        static const size_t sizes_4k[] = { 0, 4088, 2044, 1020, 584, 292 };
        static const size_t sizes_32k[] = { 0, 32760, 16380, 8188, 4680, 2340 };

        g_assert_cmpint(smb_check_geometry(SMB_SIZE_DEFAULT, 4096), ==, 0);
        g_assert_cmpint(smb_check_geometry(SMB_SIZE_MAX, SMB_PAGE_SIZE_MAX), ==, 0);
        g_assert_cmpint(smb_check_geometry(8192 * 3, 8192), ==, 0);
        g_assert_cmpint(smb_check_geometry(SMB_SIZE_DEFAULT, 12288), ==, -EINVAL);   /* 3 x 4 KiB */
        g_assert_cmpint(smb_check_geometry(SMB_SIZE_DEFAULT, 65536), ==, -EINVAL);
        g_assert_cmpint(smb_check_geometry(SMB_SIZE_DEFAULT, 2048), ==, -EINVAL);
        g_assert_cmpint(smb_check_geometry(4096 * 3 + 1, 4096), ==, -EINVAL);
        g_assert_cmpint(smb_check_geometry(SMB_SIZE_MAX + 4096, 4096), ==, -EINVAL);
        g_assert_cmpint(smb_check_geometry(4096, 8192), ==, -EINVAL);
        for (unsigned l = 0; l < _SMB_LAYOUT_MAX; l++) {
                g_assert_cmpuint(smb_chunk_size(4096, l), ==, sizes_4k[l]);
                g_assert_cmpuint(smb_chunk_size(32768, l), ==, sizes_32k[l]);
        }
        g_assert_cmpuint(smb_layout_chunks(6), ==, 0);
        g_assert_cmpuint(smb_layout_chunks(7), ==, 0);
}

/* A buffer made for a producer: its size, zeroed (every page free), sealed so that the
 * producer cannot shrink it under our reads; a geometry over the caps is refused. */
static void test_create(void) {
        Smb smb = {};
        struct stat st;
        int fd = -1;

        g_assert_cmpint(smb_create(SMB_SIZE_DEFAULT, 8192, &smb, &fd), ==, 0);
        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpuint(smb.n_pages, ==, SMB_SIZE_DEFAULT / 8192);
        g_assert_cmpint(fstat(fd, &st), ==, 0);
        g_assert_cmpint(st.st_size, ==, SMB_SIZE_DEFAULT);
        g_assert_cmpint(fcntl(fd, F_GET_SEALS), ==, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
        g_assert_cmpint(ftruncate(fd, 4096), ==, -1);
        g_assert_cmpint(errno, ==, EPERM);
        for (size_t i = 0; i < smb.size; i += 4096)
                g_assert_cmpuint(smb.base[i], ==, 0);
        g_assert_cmpint(smb_chunk_state(&smb, 0, 0), ==, SMB_CHUNK_FREE);
        smb_unmap(&smb);
        g_assert_null(smb.base);
        close(fd);
        g_assert_cmpint(smb_create(SMB_SIZE_MAX * 2, 4096, &smb, &fd), ==, -EINVAL);
}

/* A Complete chunk is copied, its header cleared, its state Free; the page goes back to
 * unpartitioned once all its chunks are free, and not before. */
static void test_take_chunk(Fixture *f, gconstpointer data) {
        SmbChunk c = {};
        uint8_t zero[SMB_CHUNK_HEADER_SIZE] = {};

        write_chunk(f, 1, SMB_LAYOUT_DIV2, 0, SMB_CHUNK_COMPLETE, 3, 10, 0, true, FRAGS("alpha", "beta"));
        write_chunk(f, 1, SMB_LAYOUT_DIV2, 1, SMB_CHUNK_BEING_WRITTEN, 4, 0, 0, false, FRAGS("x"));
        g_assert_cmpint(smb_chunk_state(&f->smb, 1, 0), ==, SMB_CHUNK_COMPLETE);
        g_assert_cmpint(smb_take_chunk(&f->smb, 1, 1, &c), ==, -ENOENT);
        g_assert_cmpint(smb_take_chunk(&f->smb, 1, 2, &c), ==, -ERANGE);
        g_assert_cmpint(smb_take_chunk(&f->smb, PAGES, 0, &c), ==, -ERANGE);
        g_assert_cmpint(smb_take_chunk(&f->smb, 2, 0, &c), ==, -ERANGE);   /* unpartitioned */

        g_assert_cmpint(smb_take_chunk(&f->smb, 1, 0, &c), ==, 0);
        g_assert_cmpuint(c.writer_id, ==, 3);
        g_assert_cmpuint(c.chunk_id, ==, 10);
        g_assert_cmpuint(c.n_fragments, ==, 2);
        g_assert_cmpuint(c.payload_size, ==, 2044 - SMB_CHUNK_HEADER_SIZE);
        g_assert_cmpmem(f->producer + PAGE + SMB_PAGE_HEADER_SIZE, SMB_CHUNK_HEADER_SIZE, zero, sizeof(zero));
        g_assert_cmpint(smb_chunk_state(&f->smb, 1, 0), ==, SMB_CHUNK_FREE);
        g_assert_cmphex(page_word(f, 1), ==, (uint32_t) SMB_LAYOUT_DIV2 << 28 | SMB_CHUNK_BEING_WRITTEN << 2);
        g_assert_cmpint(smb_take_chunk(&f->smb, 1, 0, &c), ==, -ENOENT);
        g_assert_cmpint(smb_reassembler_add(f->r, &c), ==, 0);
        g_assert_cmpstr(read_packets(f), ==, "3:alpha 3:beta");

        /* The producer completes the other chunk: taking it empties the page. */
        write_chunk(f, 1, SMB_LAYOUT_DIV2, 1, SMB_CHUNK_COMPLETE, 4, 0, 0, false, FRAGS("x"));
        take_into(f, 1, 1);
        g_assert_cmphex(page_word(f, 1), ==, 0);
}

/* Headers no producer of ours writes: refused, and the chunk freed all the same so the
 * producer does not lose the page. */
static void test_invalid_headers(Fixture *f, gconstpointer data) {
        static const struct { uint16_t writer; uint8_t flags; } bad[] = { { 0, 0 }, { 40000, 0 }, { 1, 0x8 }, { 1, 0x20 } };
        SmbChunk c = {};

        for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
                write_chunk(f, 0, SMB_LAYOUT_DIV1, 0, SMB_CHUNK_COMPLETE, bad[i].writer, 0, bad[i].flags, false, FRAGS("a"));
                g_assert_cmpint(smb_take_chunk(&f->smb, 0, 0, &c), ==, -EBADMSG);
                g_assert_null(c.payload);
                g_assert_cmphex(page_word(f, 0), ==, 0);
        }
        /* A reserved layout has no chunks. */
        put_le(f->producer, 6u << 28 | 3, 4);
        g_assert_cmpint(smb_take_chunk(&f->smb, 0, 0, &c), ==, -ERANGE);
}

static void test_fragments(void) {
        static const uint8_t payload[] = {
                0x02, 'a', 'b',                          /* 1-byte size */
                0x83, 0x80, 0x80, 0x00, 'x', 'y', 'z',    /* 4-byte redundant varint */
                0x00,                                     /* empty packet */
        };
        static const uint8_t five[] = { 0x81, 0x80, 0x80, 0x80, 0x00, 'a' };
        static const uint8_t past[] = { 0x05, 'a', 'b' };
        static const uint8_t dropped[] = { 0xff, 0xff, 0xff, 0x7f };
        static const uint8_t cut[] = { 0x80, 0x80 };
        const uint8_t *d;
        size_t at = 0, n;

        g_assert_cmpint(smb_fragment_next(payload, sizeof(payload), &at, &d, &n), ==, 1);
        g_assert_cmpmem(d, n, "ab", 2);
        g_assert_cmpint(smb_fragment_next(payload, sizeof(payload), &at, &d, &n), ==, 1);
        g_assert_cmpmem(d, n, "xyz", 3);
        g_assert_cmpint(smb_fragment_next(payload, sizeof(payload), &at, &d, &n), ==, 1);
        g_assert_cmpuint(n, ==, 0);
        g_assert_cmpint(smb_fragment_next(payload, sizeof(payload), &at, &d, &n), ==, 0);
        at = 0;
        g_assert_cmpint(smb_fragment_next(five, sizeof(five), &at, &d, &n), ==, -EBADMSG);
        g_assert_cmpint(smb_fragment_next(past, sizeof(past), &at, &d, &n), ==, -EBADMSG);
        g_assert_cmpint(smb_fragment_next(dropped, sizeof(dropped), &at, &d, &n), ==, -ECANCELED);
        g_assert_cmpint(smb_fragment_next(cut, sizeof(cut), &at, &d, &n), ==, -EBADMSG);
        g_assert_cmpuint(at, ==, 0);
}

/* One packet over three chunks, committed out of order: it comes out whole once the
 * middle arrives, and the packets around it in their order. */
static void test_glue(Fixture *f, gconstpointer data) {
        write_chunk(f, 0, SMB_LAYOUT_DIV1, 0, SMB_CHUNK_COMPLETE, 5, 100, SMB_CHUNK_LAST_CONTINUES, true, FRAGS("A", "B1"));
        write_chunk(f, 1, SMB_LAYOUT_DIV1, 0, SMB_CHUNK_COMPLETE, 5, 101,
                    SMB_CHUNK_FIRST_CONTINUES | SMB_CHUNK_LAST_CONTINUES, true, FRAGS("B2"));
        write_chunk(f, 2, SMB_LAYOUT_DIV1, 0, SMB_CHUNK_COMPLETE, 5, 102, SMB_CHUNK_FIRST_CONTINUES, false, FRAGS("B3", "C", ""));
        take_into(f, 0, 0);
        take_into(f, 2, 0);
        g_assert_cmpstr(read_packets(f), ==, "5:A");
        g_assert_cmpuint(smb_reassembler_held(f->r), ==, 2);
        take_into(f, 1, 0);
        g_assert_cmpstr(read_packets(f), ==, "5:B1B2B3 5:C");
        g_assert_cmpuint(smb_reassembler_held(f->r), ==, 0);
        g_assert_cmpuint(smb_reassembler_stats(f->r)->abi_violations, ==, 0);
}

/* Chunk ids wrap: 0xffffffff is followed by 0. */
static void test_chunk_id_wrap(Fixture *f, gconstpointer data) {
        write_chunk(f, 0, SMB_LAYOUT_DIV1, 0, SMB_CHUNK_COMPLETE, 2, 0, SMB_CHUNK_FIRST_CONTINUES, false, FRAGS("end"));
        write_chunk(f, 1, SMB_LAYOUT_DIV1, 0, SMB_CHUNK_COMPLETE, 2, UINT32_MAX, SMB_CHUNK_LAST_CONTINUES, false, FRAGS("start-"));
        take_into(f, 0, 0);
        take_into(f, 1, 0);
        g_assert_cmpstr(read_packets(f), ==, "2:start-end");
}

/* A fragment continuing a chunk never seen is lost, and the packet after it says so. */
static void test_orphan(Fixture *f, gconstpointer data) {
        write_chunk(f, 0, SMB_LAYOUT_DIV1, 0, SMB_CHUNK_COMPLETE, 9, 50, SMB_CHUNK_FIRST_CONTINUES, false, FRAGS("tail", "next"));
        take_into(f, 0, 0);
        g_assert_cmpstr(read_packets(f), ==, "!9:next");
        g_assert_cmpuint(smb_reassembler_stats(f->r)->packets_lost, ==, 1);

        /* A loss at the end of one read (the writer's "dropped" size in place of the second
         * fragment) is told with the packet of the next read. */
        write_chunk(f, 0, SMB_LAYOUT_DIV1, 0, SMB_CHUNK_COMPLETE, 9, 51, 0, false, FRAGS("ok", "xx"));
        put_le(f->producer + SMB_PAGE_HEADER_SIZE + SMB_CHUNK_HEADER_SIZE + 3, 0x7fffffff, 4);
        take_into(f, 0, 0);
        g_assert_cmpstr(read_packets(f), ==, "9:ok");
        write_chunk(f, 0, SMB_LAYOUT_DIV1, 0, SMB_CHUNK_COMPLETE, 9, 52, 0, false, FRAGS("after"));
        take_into(f, 0, 0);
        g_assert_cmpstr(read_packets(f), ==, "!9:after");
}

/* A broken chain: the next chunk does not continue the packet. */
static void test_broken_chain(Fixture *f, gconstpointer data) {
        write_chunk(f, 0, SMB_LAYOUT_DIV1, 0, SMB_CHUNK_COMPLETE, 9, 1, SMB_CHUNK_LAST_CONTINUES, false, FRAGS("a", "b-"));
        write_chunk(f, 1, SMB_LAYOUT_DIV1, 0, SMB_CHUNK_COMPLETE, 9, 2, 0, false, FRAGS("c"));
        take_into(f, 0, 0);
        take_into(f, 1, 0);
        g_assert_cmpstr(read_packets(f), ==, "9:a !9:c");
        g_assert_cmpuint(smb_reassembler_stats(f->r)->abi_violations, ==, 1);
}

static Tracebus__CommitDataRequest__ChunkToPatch *patch_entry(Tracebus__CommitDataRequest__ChunkToPatch *e,
                                                             Tracebus__CommitDataRequest__ChunkToPatch__Patch **pp,
                                                             size_t n, uint32_t writer, uint32_t chunk_id, bool more) {
        *e = (Tracebus__CommitDataRequest__ChunkToPatch) TRACEBUS__COMMIT_DATA_REQUEST__CHUNK_TO_PATCH__INIT;
        e->has_writer_id = e->has_chunk_id = true;
        e->writer_id = writer;
        e->chunk_id = chunk_id;
        e->n_patches = n;
        e->patches = pp;
        e->has_has_more_patches = more;
        e->has_more_patches = more;
        return e;
}

/* A chunk that needs patching holds its writer's sequence, not the others; patches land
 * at their offsets, those that do not fit are counted, and the last one frees the chunk. */
static void test_patches(Fixture *f, gconstpointer data) {
        Tracebus__CommitDataRequest__ChunkToPatch__Patch p[3] = {
                TRACEBUS__COMMIT_DATA_REQUEST__CHUNK_TO_PATCH__PATCH__INIT,
                TRACEBUS__COMMIT_DATA_REQUEST__CHUNK_TO_PATCH__PATCH__INIT,
                TRACEBUS__COMMIT_DATA_REQUEST__CHUNK_TO_PATCH__PATCH__INIT,
        };
        Tracebus__CommitDataRequest__ChunkToPatch__Patch *pp[3] = { &p[0], &p[1], &p[2] };
        Tracebus__CommitDataRequest__ChunkToPatch e;

        write_chunk(f, 0, SMB_LAYOUT_DIV1, 0, SMB_CHUNK_COMPLETE, 1, 0, SMB_CHUNK_NEEDS_PATCHING, false, FRAGS("....xyz"));
        write_chunk(f, 1, SMB_LAYOUT_DIV1, 0, SMB_CHUNK_COMPLETE, 2, 0, 0, false, FRAGS("other"));
        take_into(f, 0, 0);
        take_into(f, 1, 0);
        g_assert_cmpstr(read_packets(f), ==, "2:other");

        p[0].offset = 1;                        /* after the size byte */
        p[0].data = (ProtobufCBinaryData) { 4, (uint8_t *) "ABCD" };
        p[1].offset = 4088 - 8 - 3;             /* runs past the payload */
        p[1].data = (ProtobufCBinaryData) { 4, (uint8_t *) "EFGH" };
        p[2].offset = 2;
        p[2].data = (ProtobufCBinaryData) { 3, (uint8_t *) "IJK" };   /* not 4 bytes */
        g_assert_cmpint(smb_reassembler_patch(f->r, patch_entry(&e, pp, 3, 1, 0, true)), ==, 1);
        g_assert_cmpstr(read_packets(f), ==, "");
        g_assert_cmpint(smb_reassembler_patch(f->r, patch_entry(&e, pp, 0, 1, 0, false)), ==, 0);
        g_assert_cmpstr(read_packets(f), ==, "1:ABCDxyz");
        g_assert_cmpuint(smb_reassembler_stats(f->r)->patches_failed, ==, 2);

        /* Writer 0, a writer over the cap, a chunk not held: nothing to patch. */
        g_assert_cmpint(smb_reassembler_patch(f->r, patch_entry(&e, pp, 1, 0, 0, false)), ==, 0);
        g_assert_cmpint(smb_reassembler_patch(f->r, patch_entry(&e, pp, 1, 40000, 0, false)), ==, 0);
        g_assert_cmpint(smb_reassembler_patch(f->r, patch_entry(&e, pp, 1, 1, 99, false)), ==, 0);
        g_assert_cmpuint(smb_reassembler_stats(f->r)->patches_failed, ==, 5);
}

/* CommitData in one call: moves (one of a chunk not complete, one of a page the buffer
 * does not have), then a patch of a chunk the same request moved. */
static void test_commit(Fixture *f, gconstpointer data) {
        Tracebus__CommitDataRequest__ChunksToMove m[3] = {
                TRACEBUS__COMMIT_DATA_REQUEST__CHUNKS_TO_MOVE__INIT,
                TRACEBUS__COMMIT_DATA_REQUEST__CHUNKS_TO_MOVE__INIT,
                TRACEBUS__COMMIT_DATA_REQUEST__CHUNKS_TO_MOVE__INIT,
        };
        Tracebus__CommitDataRequest__ChunksToMove *mp[3] = { &m[0], &m[1], &m[2] };
        Tracebus__CommitDataRequest__ChunkToPatch__Patch p = TRACEBUS__COMMIT_DATA_REQUEST__CHUNK_TO_PATCH__PATCH__INIT;
        Tracebus__CommitDataRequest__ChunkToPatch__Patch *pp = &p;
        Tracebus__CommitDataRequest__ChunkToPatch e, *ep = &e;
        Tracebus__CommitDataRequest req = TRACEBUS__COMMIT_DATA_REQUEST__INIT;

        write_chunk(f, 3, SMB_LAYOUT_DIV4, 2, SMB_CHUNK_COMPLETE, 7, 0, SMB_CHUNK_NEEDS_PATCHING, false, FRAGS("-----"));
        write_chunk(f, 3, SMB_LAYOUT_DIV4, 1, SMB_CHUNK_BEING_WRITTEN, 8, 0, 0, false, FRAGS("busy"));
        m[0].page = 3, m[0].chunk = 2, m[0].target_buffer = 4;
        m[1].page = 3, m[1].chunk = 1;
        m[2].page = PAGES + 1;
        p.offset = 2;
        p.data = (ProtobufCBinaryData) { 4, (uint8_t *) "done" };
        req.n_chunks_to_move = 3;
        req.chunks_to_move = mp;
        req.n_chunks_to_patch = 1;
        req.chunks_to_patch = &ep;
        patch_entry(&e, &pp, 1, 7, 0, false);
        g_assert_cmpint(smb_commit(&f->smb, f->r, &req), ==, 1);
        g_assert_cmpuint(smb_reassembler_stats(f->r)->chunks_taken, ==, 1);
        g_assert_cmpuint(smb_reassembler_stats(f->r)->chunks_discarded, ==, 2);
        g_assert_cmpstr(read_packets(f), ==, "7:-done");
        g_assert_cmpint(smb_chunk_state(&f->smb, 3, 1), ==, SMB_CHUNK_BEING_WRITTEN);
}

/* Scraping copies without changing states: a chunk being written without its last
 * fragment, a Complete one whole; a later commit of the same chunk with more fragments
 * replaces the scraped copy before it is read. */
static void test_scrape(Fixture *f, gconstpointer data) {
        SmbChunk c = {};

        write_chunk(f, 0, SMB_LAYOUT_DIV1, 0, SMB_CHUNK_BEING_WRITTEN, 1, 0, SMB_CHUNK_LAST_CONTINUES, false, FRAGS("one", "tw"));
        write_chunk(f, 1, SMB_LAYOUT_DIV1, 0, SMB_CHUNK_BEING_WRITTEN, 2, 0, 0, false, FRAGS("half"));
        write_chunk(f, 2, SMB_LAYOUT_DIV1, 0, SMB_CHUNK_COMPLETE, 3, 0, 0, false, FRAGS("whole"));
        g_assert_cmpint(smb_scrape_chunk(&f->smb, 1, 0, &c), ==, -ENOENT);
        g_assert_cmpint(smb_scrape_chunk(&f->smb, 3, 0, &c), ==, -ERANGE);
        g_assert_cmpint(smb_scrape_all(&f->smb, f->r), ==, 2);
        g_assert_cmpint(smb_chunk_state(&f->smb, 0, 0), ==, SMB_CHUNK_BEING_WRITTEN);
        g_assert_cmpint(smb_chunk_state(&f->smb, 2, 0), ==, SMB_CHUNK_COMPLETE);

        write_chunk(f, 0, SMB_LAYOUT_DIV1, 0, SMB_CHUNK_COMPLETE, 1, 0, 0, false, FRAGS("one", "two", "three"));
        take_into(f, 0, 0);
        g_assert_cmpstr(read_packets(f), ==, "1:one 1:two 1:three 3:whole");
}

/* A chunk scraped while being written is read as far as it went, then its committed copy
 * gives the rest, once; a copy of a chunk read to its end is ignored. */
static void test_scrape_then_commit(Fixture *f, gconstpointer data) {
        write_chunk(f, 0, SMB_LAYOUT_DIV1, 0, SMB_CHUNK_BEING_WRITTEN, 1, 0, 0, false, FRAGS("one", "two", "thr"));
        g_assert_cmpint(smb_scrape_all(&f->smb, f->r), ==, 1);
        g_assert_cmpstr(read_packets(f), ==, "1:one 1:two");
        g_assert_cmpuint(smb_reassembler_held(f->r), ==, 1);

        write_chunk(f, 0, SMB_LAYOUT_DIV1, 0, SMB_CHUNK_COMPLETE, 1, 0, 0, false, FRAGS("one", "two", "three"));
        take_into(f, 0, 0);
        g_assert_cmpstr(read_packets(f), ==, "1:three");
        g_assert_cmpuint(smb_reassembler_held(f->r), ==, 0);

        write_chunk(f, 0, SMB_LAYOUT_DIV1, 0, SMB_CHUNK_COMPLETE, 1, 0, 0, false, FRAGS("one", "two", "three"));
        take_into(f, 0, 0);
        g_assert_cmpuint(smb_reassembler_held(f->r), ==, 0);
        g_assert_cmpstr(read_packets(f), ==, "");
}

/* A gap in a writer's chunk ids holds its sequence until the chunk comes; the final pass
 * crosses it, says packets were dropped, and counts what waited for patches as lost. */
static void test_gap_and_final(Fixture *f, gconstpointer data) {
        write_chunk(f, 0, SMB_LAYOUT_DIV1, 0, SMB_CHUNK_COMPLETE, 4, 0, 0, false, FRAGS("a"));
        write_chunk(f, 1, SMB_LAYOUT_DIV1, 0, SMB_CHUNK_COMPLETE, 4, 2, 0, false, FRAGS("c"));
        write_chunk(f, 2, SMB_LAYOUT_DIV1, 0, SMB_CHUNK_COMPLETE, 6, 0, SMB_CHUNK_NEEDS_PATCHING, false, FRAGS("p"));
        write_chunk(f, 3, SMB_LAYOUT_DIV1, 0, SMB_CHUNK_COMPLETE, 6, 1, 0, false, FRAGS("q"));
        for (unsigned page = 0; page < 4; page++)
                take_into(f, page, 0);
        g_assert_cmpstr(read_packets(f), ==, "4:a");
        g_assert_cmpstr(read_packets(f), ==, "");
        g_assert_cmpstr(read_packets_mode(f, true), ==, "!4:c !6:q");
        g_assert_cmpuint(smb_reassembler_held(f->r), ==, 0);
        g_assert_cmpuint(smb_reassembler_stats(f->r)->packets_lost, ==, 1);
}

/* A writer that went away is read to its end; its id, given to a new writer, starts a new
 * sequence at chunk 0. */
static void test_writer_id_reused(Fixture *f, gconstpointer data) {
        write_chunk(f, 0, SMB_LAYOUT_DIV1, 0, SMB_CHUNK_COMPLETE, 3, 0, 0, false, FRAGS("old0"));
        write_chunk(f, 1, SMB_LAYOUT_DIV1, 0, SMB_CHUNK_COMPLETE, 3, 1, SMB_CHUNK_LAST_CONTINUES, false, FRAGS("old1", "cut"));
        take_into(f, 0, 0);
        take_into(f, 1, 0);
        g_assert_cmpstr(read_packets(f), ==, "3:old0 3:old1");
        g_assert_cmpint(smb_reassembler_end_writer(f->r, 3, keep, f), ==, 0);
        g_assert_cmpuint(smb_reassembler_held(f->r), ==, 0);
        g_assert_cmpuint(smb_reassembler_stats(f->r)->packets_lost, ==, 1);

        write_chunk(f, 0, SMB_LAYOUT_DIV1, 0, SMB_CHUNK_COMPLETE, 3, 0, 0, false, FRAGS("new0"));
        take_into(f, 0, 0);
        g_assert_cmpstr(read_packets(f), ==, "3:new0");
}

/* Many writers and chunks: the sorted tables find each chunk and writer again. */
static void test_many_writers(Fixture *f, gconstpointer data) {
        unsigned packets = 0;

        for (uint32_t i = 0; i < 3000; i++) {
                uint16_t writer = (uint16_t) (1 + (i * 7919) % 1000);
                SmbChunk c = { .writer_id = writer, .chunk_id = i / 1000, .n_fragments = 1,
                               .payload_size = 2, .payload = g_memdup2("\x01" "x", 2) };
                g_assert_cmpint(smb_reassembler_add(f->r, &c), ==, 0);
        }
        g_assert_cmpint(smb_reassembler_read(f->r, false, keep, f), ==, 0);
        packets = f->packets->len;
        g_assert_cmpuint(packets, ==, 3000);
        g_assert_cmpuint(smb_reassembler_held(f->r), ==, 0);
}

/* The producer rewrites the chunk through its own mapping after we took it: our copy and
 * the packets read from it do not change. */
static void test_change_after_copy(Fixture *f, gconstpointer data) {
        write_chunk(f, 0, SMB_LAYOUT_DIV1, 0, SMB_CHUNK_COMPLETE, 1, 0, 0, true, FRAGS("stable", "bytes"));
        take_into(f, 0, 0);
        memset(f->producer, 0xff, PAGE);
        g_assert_cmpstr(read_packets(f), ==, "1:stable 1:bytes");
}

typedef struct {
        uint8_t *page;
        bool stop;
        unsigned long writes;
} Scribbler;

static void *scribble(void *data) {
        Scribbler *s = data;
        uint32_t x = 12345;

        while (!__atomic_load_n(&s->stop, __ATOMIC_RELAXED)) {
                x = x * 1103515245u + 12345u;
                /* Now and then the CPU goes back to the reader, so that both run on a
                 * machine with one core free. */
                if (__atomic_add_fetch(&s->writes, 1, __ATOMIC_RELAXED) % 256 == 0)
                        sched_yield();
                /* The page header, half the time with a real layout, and any word of
                 * the chunks, headers included. */
                __atomic_store_n((uint32_t *) s->page, (x & 1) ? x : ((1 + x % 5) << 28 | (x >> 4)), __ATOMIC_RELAXED);
                __atomic_store_n((uint32_t *) (s->page + 8 + (x >> 8) % (PAGE - 12) / 4 * 4), x ^ 0x5a5a5a5a, __ATOMIC_RELAXED);
        }
        return NULL;
}

/* A producer scribbling on its page header and chunk headers while the service takes and
 * scrapes: whatever comes out is within the caps, and nothing crashes. The loop runs while
 * the scribbler really writes (the machine may give it the CPU late). */
static void test_concurrent_scribbling(Fixture *f, gconstpointer data) {
        Scribbler s = { .page = f->producer };
        pthread_t thread;
        unsigned got = 0;

        /* Valid chunk headers wherever a layout starts a chunk, for the scribbler to spoil. */
        for (unsigned layout = SMB_LAYOUT_DIV1; layout < _SMB_LAYOUT_MAX; layout++)
                for (unsigned c = 0; c < smb_layout_chunks(layout); c++)
                        write_chunk(f, 0, layout, c, SMB_CHUNK_COMPLETE, (uint16_t) (1 + c), layout, 0, false, FRAGS("p"));
        g_assert_cmpint(pthread_create(&thread, NULL, scribble, &s), ==, 0);
        while (__atomic_load_n(&s.writes, __ATOMIC_RELAXED) == 0)
                sched_yield();
        for (unsigned i = 0; i < 200000 || (__atomic_load_n(&s.writes, __ATOMIC_RELAXED) < 200000 && i < 5000000); i++) {
                SmbChunk c = {};
                int r = (i & 1) ? smb_take_chunk(&f->smb, 0, i % 14, &c) : smb_scrape_chunk(&f->smb, 0, i % 14, &c);

                if (r < 0)
                        continue;
                got++;
                g_assert_cmpuint(c.writer_id, >=, 1);
                g_assert_cmpuint(c.writer_id, <=, SMB_WRITER_ID_MAX);
                g_assert_cmpuint(c.payload_size + SMB_CHUNK_HEADER_SIZE, <=, PAGE - SMB_PAGE_HEADER_SIZE);
                g_assert_cmpuint(c.flags & ~_SMB_CHUNK_FLAGS_ALL, ==, 0);
                if (smb_reassembler_add(f->r, &c) == -ENOBUFS)
                        break;
                if (i % 64 == 0)
                        g_assert_cmpint(smb_reassembler_read(f->r, false, keep, f), ==, 0);
        }
        __atomic_store_n(&s.stop, true, __ATOMIC_RELAXED);
        pthread_join(thread, NULL);
        g_assert_cmpint(smb_reassembler_read(f->r, true, keep, f), ==, 0);
        g_test_message("%u chunks came out of the scribbled page, %lu scribbles", got, s.writes);
}

/* A packet glued over more than SMB_PACKET_SIZE_MAX is dropped, and the next one says so;
 * the reassembler holds at most SMB_HELD_CHUNKS_MAX chunks. */
static void test_caps(Fixture *f, gconstpointer data) {
        size_t piece = 32760 - SMB_CHUNK_HEADER_SIZE - 4, n = SMB_PACKET_SIZE_MAX / piece + 2;

        for (size_t i = 0; i < n; i++) {
                SmbChunk c = { .writer_id = 1, .chunk_id = (uint32_t) i, .n_fragments = 1,
                               .payload_size = piece + 4, .payload = g_malloc(piece + 4) };
                c.flags = (i > 0 ? SMB_CHUNK_FIRST_CONTINUES : 0) | (i + 1 < n ? SMB_CHUNK_LAST_CONTINUES : 0);
                for (unsigned b = 0; b < 3; b++)
                        c.payload[b] = (uint8_t) ((piece >> (7 * b)) & 0x7f) | 0x80;
                c.payload[3] = (uint8_t) (piece >> 21);
                g_assert_cmpint(smb_reassembler_add(f->r, &c), ==, 0);
        }
        {
                SmbChunk c = { .writer_id = 1, .chunk_id = (uint32_t) n, .n_fragments = 1,
                               .payload_size = 4, .payload = g_memdup2("\x03" "end", 4) };
                g_assert_cmpint(smb_reassembler_add(f->r, &c), ==, 0);
        }
        g_assert_cmpstr(read_packets(f), ==, "!1:end");
        g_assert_cmpuint(smb_reassembler_stats(f->r)->packets_too_large, ==, 1);
        g_assert_cmpuint(smb_reassembler_held(f->r), ==, 0);

        for (uint32_t i = 0; i <= SMB_HELD_CHUNKS_MAX; i++) {
                SmbChunk c = { .writer_id = 2, .chunk_id = i, .n_fragments = 1, .flags = SMB_CHUNK_NEEDS_PATCHING,
                               .payload_size = 4, .payload = g_memdup2("\x03" "abc", 4) };
                g_assert_cmpint(smb_reassembler_add(f->r, &c), ==, i < SMB_HELD_CHUNKS_MAX ? 0 : -ENOBUFS);
                g_assert_null(c.payload);
        }
        g_assert_cmpuint(smb_reassembler_held(f->r), ==, SMB_HELD_CHUNKS_MAX);
}

#define ADD(name, func) g_test_add(name, Fixture, NULL, fixture_setup, func, fixture_teardown)

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/shm-abi/geometry", test_geometry);
        g_test_add_func("/shm-abi/fragments", test_fragments);
        g_test_add_func("/shm-abi/create", test_create);
        ADD("/shm-abi/take-chunk", test_take_chunk);
        ADD("/shm-abi/invalid-headers", test_invalid_headers);
        ADD("/shm-abi/glue", test_glue);
        ADD("/shm-abi/chunk-id-wrap", test_chunk_id_wrap);
        ADD("/shm-abi/orphan", test_orphan);
        ADD("/shm-abi/broken-chain", test_broken_chain);
        ADD("/shm-abi/patches", test_patches);
        ADD("/shm-abi/commit", test_commit);
        ADD("/shm-abi/scrape", test_scrape);
        ADD("/shm-abi/scrape-then-commit", test_scrape_then_commit);
        ADD("/shm-abi/gap-and-final", test_gap_and_final);
        ADD("/shm-abi/writer-id-reused", test_writer_id_reused);
        ADD("/shm-abi/many-writers", test_many_writers);
        ADD("/shm-abi/change-after-copy", test_change_after_copy);
        ADD("/shm-abi/concurrent-scribbling", test_concurrent_scribbling);
        ADD("/shm-abi/caps", test_caps);
        return g_test_run();
}
