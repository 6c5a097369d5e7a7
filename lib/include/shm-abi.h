/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "producer.pb-c.h"

/*
 * The shared memory buffer (SMB) of a Perfetto producer, as the service reads it. The
 * buffer is pages; a page starts with an 8-byte header whose first word holds its layout
 * (how many chunks it is cut into) and a 2-bit state per chunk. A chunk starts with an
 * 8-byte header (chunk id, writer id, fragment count and flags) and holds fragments: a
 * varint size and that many bytes, each a whole TracePacket or a piece of one that
 * continues in the writer's next chunk.
 *
 * The producer is another process that shares these pages and may change them at any
 * moment, in any way. So every value is read once: a chunk is copied out before anything
 * in it is parsed, states change only by compare-and-swap, and sizes come from the layout
 * and our own page size, never from the memory twice. Nothing here blocks or waits on the
 * producer, and bad input is counted, never a crash.
 */

/* Pages: 4 KiB multiples whose count of 4 KiB is a power of two, up to 32 KiB. The ABI
 * allows 64 KiB, but a chunk must fit Perfetto's 16-bit record size, so its service stops
 * at 32 KiB, and SDK apps expect no more. */
#define SMB_PAGE_SIZE_MIN (4u * 1024u)
#define SMB_PAGE_SIZE_MAX (32u * 1024u)
/* The whole buffer: at most 32 MiB (Perfetto's limit, so configs written for it work),
 * 256 KiB when neither the config nor the producer asks (what the SDK gets from Perfetto). */
#define SMB_SIZE_MAX (32u * 1024u * 1024u)
#define SMB_SIZE_DEFAULT (256u * 1024u)

#define SMB_PAGE_HEADER_SIZE 8u
#define SMB_CHUNK_HEADER_SIZE 8u
#define SMB_CHUNKS_PER_PAGE_MAX 14u

/* Writer ids: the SDK hands out 1..32767 per producer; 0 is a cleared header. So a
 * producer has at most this many sequences of chunks, and larger ids are refused. */
#define SMB_WRITER_ID_MAX 32767u

/* A packet reassembled from fragments. Perfetto's SDK has no hard limit, but its service
 * stores a packet in one trace buffer chunk; 8 MiB keeps one writer's packet from taking
 * the memory of many sessions. */
#define SMB_PACKET_SIZE_MAX (8u * 1024u * 1024u)

/* What the reassembler holds for one producer while chunks wait for the rest of a packet
 * or for patches: at most the bytes of the largest buffer, so a producer that never
 * finishes its packets costs the service one more buffer's worth of memory, and at most
 * as many chunks as such a buffer has of 4 KiB pages. */
#define SMB_HELD_BYTES_MAX SMB_SIZE_MAX
#define SMB_HELD_CHUNKS_MAX (SMB_SIZE_MAX / SMB_PAGE_SIZE_MIN)

/* Patches in one ChunkToPatch entry, as Perfetto's service allows; each is 4 bytes. */
#define SMB_PATCHES_PER_CHUNK_MAX 1024u
#define SMB_PATCH_SIZE 4u

typedef enum SmbChunkState {
        SMB_CHUNK_FREE = 0,
        SMB_CHUNK_BEING_WRITTEN = 1,
        SMB_CHUNK_BEING_READ = 2,
        SMB_CHUNK_COMPLETE = 3,
} SmbChunkState;

/* The page layouts: how many chunks a page is cut into. 6 and 7 are reserved. */
typedef enum SmbPageLayout {
        SMB_LAYOUT_NOT_PARTITIONED = 0,
        SMB_LAYOUT_DIV1 = 1,
        SMB_LAYOUT_DIV2 = 2,
        SMB_LAYOUT_DIV4 = 3,
        SMB_LAYOUT_DIV7 = 4,
        SMB_LAYOUT_DIV14 = 5,
        _SMB_LAYOUT_MAX,
} SmbPageLayout;

/* The chunk header's flags. */
enum {
        SMB_CHUNK_FIRST_CONTINUES = 1 << 0,   /* fragment 0 ends the previous chunk's packet */
        SMB_CHUNK_LAST_CONTINUES = 1 << 1,    /* the last fragment goes on in the next chunk */
        SMB_CHUNK_NEEDS_PATCHING = 1 << 2,    /* sizes in it wait for CommitData's patches */
        _SMB_CHUNK_FLAGS_ALL = 0x7,
};

#define SMB_FRAGMENTS_MAX 1023u    /* the header's 10-bit count */

/* A producer's buffer as mapped by the service. */
typedef struct Smb {
        uint8_t *base;
        size_t size;
        size_t page_size;
        size_t n_pages;
} Smb;

/* Checks a buffer's geometry against the caps: -EINVAL for a page size or a size the ABI
 * or our caps do not allow. */
int smb_check_geometry(size_t size, size_t page_size);
int smb_init(Smb *smb, void *base, size_t size, size_t page_size);

/* A new buffer for a producer: a memfd of @size bytes, sealed against shrinking and
 * growing, mapped shared into *@ret; *@ret_fd is the descriptor to send with setup_tracing.
 * Release the mapping with smb_unmap(). */
int smb_create(size_t size, size_t page_size, Smb *ret, int *ret_fd);
void smb_unmap(Smb *smb);

/* Chunks in a page of @layout, and their size in a page of @page_size (0 for a layout
 * without chunks). */
unsigned smb_layout_chunks(unsigned layout);
size_t smb_chunk_size(size_t page_size, unsigned layout);

/* A chunk copied out of the buffer: the header's values, read from the copy, and the
 * payload, ours. */
typedef struct SmbChunk {
        uint16_t writer_id;
        uint32_t chunk_id;
        uint16_t n_fragments;
        uint8_t flags;
        uint32_t target_buffer;   /* from the CommitData request, never from the memory */
        bool incomplete;          /* scraped while being written */
        size_t payload_size;
        uint8_t *payload;
} SmbChunk;

void smb_chunk_done(SmbChunk *chunk);

/* Moves chunk @chunk of page @page out of the buffer, as CommitData asks: Complete to
 * BeingRead, copy, header cleared, Free (the page unpartitioned when all its chunks are).
 * Returns 0 with *@ret filled; -ERANGE for a page or chunk the buffer or the page's layout
 * does not have; -ENOENT for a chunk not Complete; -EBUSY when the state word kept changing
 * under us; -EBADMSG for a header that is not valid (the chunk is freed and dropped). */
int smb_take_chunk(Smb *smb, uint32_t page, uint32_t chunk, SmbChunk *ret);

/* Copies a chunk without changing its state, as the service does when a producer goes
 * away or a flush ends: a Complete chunk whole, a chunk being written without its last
 * fragment (which may be half written) and without the continuation and patch flags.
 * -ENOENT for a free chunk or one being written with fewer than two fragments. */
int smb_scrape_chunk(Smb *smb, uint32_t page, uint32_t chunk, SmbChunk *ret);

/* The state of a chunk as one read of its page header sees it. */
SmbChunkState smb_chunk_state(const Smb *smb, uint32_t page, uint32_t chunk);

/* ---- Fragments ---- */

/* The next fragment of @payload from *@offset: 1 with its bytes, 0 at the end of the
 * payload, -EBADMSG for a size that is not a varint of at most 4 bytes or runs past the
 * end, -ECANCELED for the writer's "packet dropped" size. After an error the rest of the
 * chunk is to be discarded. */
int smb_fragment_next(const uint8_t *payload, size_t size, size_t *offset,
                      const uint8_t **ret_data, size_t *ret_size);

/* ---- Reassembly ---- */

/* What the reader dropped, as Perfetto's service counts it. */
typedef struct SmbStats {
        uint64_t chunks_taken;
        uint64_t chunks_discarded;      /* invalid headers, over the caps */
        uint64_t abi_violations;        /* bad fragment sizes, broken chains */
        uint64_t packets_lost;          /* the writer's own "dropped" marks, orphans */
        uint64_t packets_too_large;
        uint64_t patches_applied;
        uint64_t patches_failed;
} SmbStats;

typedef struct SmbReassembler SmbReassembler;

/* A packet, whole: @previous_dropped says packets of this writer were lost before it. */
typedef int (*SmbPacketFunc)(const uint8_t *data, size_t size, uint16_t writer_id,
                             bool previous_dropped, void *userdata);

int smb_reassembler_new(SmbReassembler **ret);
SmbReassembler *smb_reassembler_free(SmbReassembler *reassembler);

/* Holds @chunk (its payload is taken over and the struct cleared). A chunk already held
 * under the same writer and chunk id (scraped first, committed later) is replaced when the
 * new copy has more fragments, same size, and no new flags; otherwise the new copy is
 * dropped. -ENOBUFS when it would pass SMB_HELD_CHUNKS_MAX or
 * SMB_HELD_BYTES_MAX (the chunk is dropped). */
int smb_reassembler_add(SmbReassembler *reassembler, SmbChunk *chunk);

/* Applies one ChunkToPatch of a CommitData: 4 bytes at each offset of the payload of the
 * held chunk (writer_id, chunk_id), and clears its NeedsPatching flag unless more patches
 * are announced. Returns the patches applied; patches that do not fit are counted as
 * failed. */
int smb_reassembler_patch(SmbReassembler *reassembler,
                          const Tracebus__CommitDataRequest__ChunkToPatch *patch);

/* Calls @func for every packet that is whole, writer by writer: each writer's fragments in
 * chunk id order from where its last read stopped, glued across chunks. A writer's
 * sequence waits at a gap in chunk ids, at a chunk that needs patching, at a packet that
 * continues in a chunk not yet held, and at a chunk scraped while being written (its
 * committed copy will say more). With @final (the producer is gone, or the session
 * stops), nothing waits: what cannot be completed is counted as lost, gaps are crossed,
 * and the next packet says packets were dropped. Packets read are dropped from the
 * reassembler, and later copies of chunks already read are ignored. Stops at @func's
 * first negative return and returns it. */
int smb_reassembler_read(SmbReassembler *reassembler, bool final, SmbPacketFunc func, void *userdata);

/* A writer went away (UnregisterTraceWriter, sent after its last CommitData): its held
 * chunks are read as at the final pass, and its sequence is forgotten, since the producer
 * may give its id to a new writer, whose chunk ids start again at 0. */
int smb_reassembler_end_writer(SmbReassembler *reassembler, uint16_t writer_id, SmbPacketFunc func, void *userdata);

size_t smb_reassembler_held(const SmbReassembler *reassembler);
const SmbStats *smb_reassembler_stats(const SmbReassembler *reassembler);

/* CommitData's buffer work in Perfetto's order: the chunks to move taken out of @smb (the
 * target buffer from the request), then the patches. Returns the chunks moved; the
 * others are counted in the stats. */
int smb_commit(Smb *smb, SmbReassembler *reassembler, const Tracebus__CommitDataRequest *request);

/* Scrapes every chunk of @smb that is not free into @reassembler (a producer that went
 * away). Returns the chunks copied. */
int smb_scrape_all(Smb *smb, SmbReassembler *reassembler);
