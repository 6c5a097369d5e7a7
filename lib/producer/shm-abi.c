/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "shm-abi.h"

#define SMB_LAYOUT_SHIFT 28
#define SMB_LAYOUT_MASK 0x7u
#define SMB_STATE_MASK 0x3u
/* Compare-and-swap tries on a page header before giving up. A producer writes other chunks
 * of the page meanwhile; the service never waits for it, so it neither sleeps nor yields
 * between tries, and a header that keeps changing is left for later (-EBUSY). */
#define SMB_CAS_TRIES 64

static const uint8_t layout_chunks[_SMB_LAYOUT_MAX] = { 0, 1, 2, 4, 7, 14 };

unsigned smb_layout_chunks(unsigned layout) {
        return layout < _SMB_LAYOUT_MAX ? layout_chunks[layout] : 0;
}

size_t smb_chunk_size(size_t page_size, unsigned layout) {
        unsigned n = smb_layout_chunks(layout);

        if (n == 0 || page_size < SMB_PAGE_HEADER_SIZE)
                return 0;
        return ((page_size - SMB_PAGE_HEADER_SIZE) / n) & ~(size_t) 3;
}

int smb_check_geometry(size_t size, size_t page_size) {
        size_t units = page_size / SMB_PAGE_SIZE_MIN;

        if (page_size < SMB_PAGE_SIZE_MIN || page_size > SMB_PAGE_SIZE_MAX ||
            page_size % SMB_PAGE_SIZE_MIN != 0 || (units & (units - 1)) != 0)
                return -EINVAL;
        if (size < page_size || size > SMB_SIZE_MAX || size % page_size != 0)
                return -EINVAL;
        return 0;
}

int smb_init(Smb *smb, void *base, size_t size, size_t page_size) {
        int r;

        assert(smb);
        assert(base);

        r = smb_check_geometry(size, page_size);
        if (r < 0)
                return r;
        *smb = (Smb) {
                .base = base,
                .size = size,
                .page_size = page_size,
                .n_pages = size / page_size,
        };
        return 0;
}

void smb_chunk_done(SmbChunk *chunk) {
        if (chunk)
                *chunk = (SmbChunk) { .payload = mfree(chunk->payload) };
}

static uint32_t *page_bitmap(const Smb *smb, uint32_t page) {
        return (uint32_t *) (smb->base + (size_t) page * smb->page_size);
}

static unsigned bitmap_layout(uint32_t bitmap) {
        return (bitmap >> SMB_LAYOUT_SHIFT) & SMB_LAYOUT_MASK;
}

static SmbChunkState bitmap_state(uint32_t bitmap, uint32_t chunk) {
        return (SmbChunkState) ((bitmap >> (2 * chunk)) & SMB_STATE_MASK);
}

SmbChunkState smb_chunk_state(const Smb *smb, uint32_t page, uint32_t chunk) {
        uint32_t bitmap;

        if (page >= smb->n_pages || chunk >= SMB_CHUNKS_PER_PAGE_MAX)
                return SMB_CHUNK_FREE;
        bitmap = __atomic_load_n(page_bitmap(smb, page), __ATOMIC_ACQUIRE);
        if (chunk >= smb_layout_chunks(bitmap_layout(bitmap)))
                return SMB_CHUNK_FREE;
        return bitmap_state(bitmap, chunk);
}

/* Moves @chunk from state @from to @to in a page of @layout. Going to Free, a page whose
 * chunks are then all free goes back to unpartitioned (0), as the producer expects. */
static int cas_chunk_state(uint32_t *bitmap_p, unsigned layout, uint32_t chunk,
                           SmbChunkState from, SmbChunkState to) {
        uint32_t old = __atomic_load_n(bitmap_p, __ATOMIC_ACQUIRE);
        uint32_t states_mask = (1u << (2 * smb_layout_chunks(layout))) - 1;

        for (int i = 0; i < SMB_CAS_TRIES; i++) {
                uint32_t new;

                if (bitmap_layout(old) != layout || bitmap_state(old, chunk) != from)
                        return -ENOENT;
                new = (old & ~(SMB_STATE_MASK << (2 * chunk))) | ((uint32_t) to << (2 * chunk));
                if (to == SMB_CHUNK_FREE && (new & states_mask) == 0)
                        new = 0;
                if (__atomic_compare_exchange_n(bitmap_p, &old, new, false,
                                                __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
                        return 0;
        }
        return -EBUSY;
}

static uint32_t read_le(const uint8_t *p, unsigned bytes) {
        uint32_t v = 0;

        for (unsigned i = 0; i < bytes; i++)
                v |= (uint32_t) p[i] << (8 * i);
        return v;
}

/* The header's values from @header, a private copy; @payload (the chunk's payload, copied
 * with it) is moved into @ret. */
static int parse_chunk_copy(const uint8_t *header, uint8_t **payload, size_t payload_size, SmbChunk *ret) {
        uint32_t packets = read_le(header + 6, 2);
        SmbChunk c = {
                .chunk_id = read_le(header, 4),
                .writer_id = (uint16_t) read_le(header + 4, 2),
                .n_fragments = (uint16_t) (packets & SMB_FRAGMENTS_MAX),
                .flags = (uint8_t) (packets >> 10),
                .payload_size = payload_size,
        };

        if (c.writer_id == 0 || c.writer_id > SMB_WRITER_ID_MAX || (c.flags & ~_SMB_CHUNK_FLAGS_ALL))
                return -EBADMSG;
        c.payload = TAKE_PTR(*payload);
        *ret = c;
        return 0;
}

/* Where a chunk starts and how long it is, from the layout as read once and our own page
 * size. */
static uint8_t *chunk_at(const Smb *smb, uint32_t page, unsigned layout, uint32_t chunk, size_t *ret_size) {
        size_t size = smb_chunk_size(smb->page_size, layout);

        *ret_size = size;
        return smb->base + (size_t) page * smb->page_size + SMB_PAGE_HEADER_SIZE + chunk * size;
}

/* Copies chunk @chunk out, header and payload, each byte read once; returns where it
 * starts in the buffer. */
static uint8_t *copy_chunk(const Smb *smb, uint32_t page, unsigned layout, uint32_t chunk,
                           uint8_t header[SMB_CHUNK_HEADER_SIZE], uint8_t **ret_payload, size_t *ret_payload_size) {
        size_t size;
        uint8_t *start = chunk_at(smb, page, layout, chunk, &size);

        *ret_payload_size = size - SMB_CHUNK_HEADER_SIZE;
        *ret_payload = malloc(*ret_payload_size);
        memcpy(header, start, SMB_CHUNK_HEADER_SIZE);
        if (*ret_payload)
                memcpy(*ret_payload, start + SMB_CHUNK_HEADER_SIZE, *ret_payload_size);
        return start;
}

static void clear_chunk_header(uint8_t *start) {
        /* writer_id 0 marks the header cleared; the producer rewrites it when it takes the
         * chunk again. Chunk starts are 4-byte aligned. */
        __atomic_store_n((uint32_t *) start, 0, __ATOMIC_RELAXED);
        __atomic_store_n((uint32_t *) (start + 4), 0, __ATOMIC_RELEASE);
}

/* The page header of @page, read once: -ERANGE when the buffer has no such page or its
 * layout, as read, no such chunk. */
static int read_page_header(const Smb *smb, uint32_t page, uint32_t chunk, uint32_t *ret_bitmap, unsigned *ret_layout) {
        uint32_t bitmap;

        if (page >= smb->n_pages || chunk >= SMB_CHUNKS_PER_PAGE_MAX)
                return -ERANGE;
        bitmap = __atomic_load_n(page_bitmap(smb, page), __ATOMIC_ACQUIRE);
        if (chunk >= smb_layout_chunks(bitmap_layout(bitmap)))
                return -ERANGE;
        *ret_bitmap = bitmap;
        *ret_layout = bitmap_layout(bitmap);
        return 0;
}

/* Copies a chunk out and parses the copy. Taking it (@take) moves it Complete to BeingRead
 * first and releases it to Free after the copy, as CommitData asks; scraping copies a
 * Complete or BeingWritten chunk and changes nothing. *@ret_state is the state it had. */
static int copy_out(Smb *smb, uint32_t page, uint32_t chunk, bool take, SmbChunk *ret, SmbChunkState *ret_state) {
        _cleanup_free_ uint8_t *payload = NULL;
        uint8_t header[SMB_CHUNK_HEADER_SIZE], *start;
        SmbChunkState state;
        uint32_t bitmap;
        unsigned layout;
        size_t size;
        int r;

        assert(smb);
        assert(ret);

        r = read_page_header(smb, page, chunk, &bitmap, &layout);
        if (r < 0)
                return r;
        state = bitmap_state(bitmap, chunk);
        if (take)
                r = cas_chunk_state(page_bitmap(smb, page), layout, chunk, SMB_CHUNK_COMPLETE, SMB_CHUNK_BEING_READ);
        else if (state != SMB_CHUNK_COMPLETE && state != SMB_CHUNK_BEING_WRITTEN)
                r = -ENOENT;
        if (r < 0)
                return r;
        start = copy_chunk(smb, page, layout, chunk, header, &payload, &size);
        if (take) {
                clear_chunk_header(start);
                /* If the producer took the chunk back meanwhile, it is its own loss; the
                 * copy is what we read either way. */
                (void) cas_chunk_state(page_bitmap(smb, page), layout, chunk, SMB_CHUNK_BEING_READ, SMB_CHUNK_FREE);
        }
        if (!payload)
                return -ENOMEM;
        *ret_state = state;
        return parse_chunk_copy(header, &payload, size, ret);
}

int smb_take_chunk(Smb *smb, uint32_t page, uint32_t chunk, SmbChunk *ret) {
        SmbChunkState state;

        return copy_out(smb, page, chunk, true, ret, &state);
}

int smb_scrape_chunk(Smb *smb, uint32_t page, uint32_t chunk, SmbChunk *ret) {
        SmbChunkState state = SMB_CHUNK_FREE;
        int r;

        r = copy_out(smb, page, chunk, false, ret, &state);
        if (r < 0 || state == SMB_CHUNK_COMPLETE)
                return r;
        /* The last fragment may be half written: leave it out, and with it what the flags
         * say about it. */
        if (ret->n_fragments < 2) {
                smb_chunk_done(ret);
                return -ENOENT;
        }
        ret->n_fragments--;
        ret->flags &= (uint8_t) ~(SMB_CHUNK_LAST_CONTINUES | SMB_CHUNK_NEEDS_PATCHING);
        ret->incomplete = true;
        return 0;
}

int smb_fragment_next(const uint8_t *payload, size_t size, size_t *offset,
                      const uint8_t **ret_data, size_t *ret_size) {
        size_t at = *offset;
        uint32_t value = 0;
        unsigned i;

        if (at >= size)
                return 0;
        /* At most 4 bytes: the writer reserves 4 (a redundant varint) or compacts to 1. */
        for (i = 0; i < 4; i++) {
                if (at + i >= size)
                        return -EBADMSG;
                value |= (uint32_t) (payload[at + i] & 0x7f) << (7 * i);
                if (!(payload[at + i] & 0x80))
                        break;
        }
        if (i == 4)
                return -EBADMSG;
        at += i + 1;
        if (value == 0x0FFFFFFFu)
                return -ECANCELED;
        if (value > size - at)
                return -EBADMSG;
        *ret_data = payload + at;
        *ret_size = value;
        *offset = at + value;
        return 1;
}
