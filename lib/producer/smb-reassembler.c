/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array-util.h"
#include "macro.h"
#include "shm-abi.h"
#include "smb-reassembler-local.h"

/* A chunk held until its fragments are read: how far, and whether it is used up. */
typedef struct HeldChunk {
        SmbChunk chunk;
        uint16_t fragments_read;
        size_t read_offset;
        bool done;
} HeldChunk;

struct SmbReassembler {
        HeldChunk *held;
        size_t n_held;
        size_t allocated;
        size_t held_bytes;
        SmbStats stats;
};

int smb_reassembler_new(SmbReassembler **ret) {
        SmbReassembler *r;

        assert(ret);

        r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        *ret = r;
        return 0;
}

SmbReassembler *smb_reassembler_free(SmbReassembler *r) {
        if (!r)
                return NULL;
        for (size_t i = 0; i < r->n_held; i++)
                smb_chunk_done(&r->held[i].chunk);
        free(r->held);
        return mfree(r);
}

size_t smb_reassembler_held(const SmbReassembler *r) {
        return r->n_held;
}

const SmbStats *smb_reassembler_stats(const SmbReassembler *r) {
        return &r->stats;
}

SmbStats *smb_reassembler_counters(SmbReassembler *r) {
        return &r->stats;
}

/* Lookups walk the held chunks: there are few between reads (a writer's packet in
 * flight), and at most SMB_HELD_CHUNKS_MAX. */
static HeldChunk *find_held(SmbReassembler *r, uint16_t writer_id, uint32_t chunk_id) {
        for (size_t i = 0; i < r->n_held; i++)
                if (r->held[i].chunk.writer_id == writer_id && r->held[i].chunk.chunk_id == chunk_id)
                        return &r->held[i];
        return NULL;
}

/* A re-copy of a held chunk (scraped, then committed) replaces it only if it grew: same
 * size, more fragments, no flag taken away. The read position stays. */
static int replace_held(SmbReassembler *r, HeldChunk *h, SmbChunk *chunk) {
        if (chunk->payload_size != h->chunk.payload_size || chunk->n_fragments < h->chunk.n_fragments ||
            (h->chunk.flags & ~chunk->flags) != 0) {
                r->stats.abi_violations++;
                smb_chunk_done(chunk);
                return 0;
        }
        if (chunk->n_fragments == h->chunk.n_fragments && h->chunk.flags == chunk->flags) {
                smb_chunk_done(chunk);
                return 0;
        }
        free(h->chunk.payload);
        h->chunk = *chunk;
        h->done = false;
        *chunk = (SmbChunk) {};
        return 0;
}

int smb_reassembler_add(SmbReassembler *r, SmbChunk *chunk) {
        HeldChunk *h;

        assert(r);
        assert(chunk);

        h = find_held(r, chunk->writer_id, chunk->chunk_id);
        if (h)
                return replace_held(r, h, chunk);
        if (r->n_held >= SMB_HELD_CHUNKS_MAX || r->held_bytes + chunk->payload_size > SMB_HELD_BYTES_MAX) {
                r->stats.chunks_discarded++;
                smb_chunk_done(chunk);
                return -ENOBUFS;
        }
        if (r->n_held == r->allocated) {
                HeldChunk *grown = array_grow(r->held, &r->allocated, sizeof(HeldChunk), 16);
                if (!grown) {
                        smb_chunk_done(chunk);
                        return -ENOMEM;
                }
                r->held = grown;
        }
        r->held[r->n_held++] = (HeldChunk) { .chunk = *chunk };
        r->held_bytes += chunk->payload_size;
        *chunk = (SmbChunk) {};
        return 0;
}

int smb_reassembler_patch(SmbReassembler *r, const Tracebus__CommitDataRequest__ChunkToPatch *patch) {
        HeldChunk *h = NULL;
        int applied = 0;

        assert(r);
        assert(patch);

        if (patch->writer_id != 0 && patch->writer_id <= SMB_WRITER_ID_MAX &&
            patch->n_patches <= SMB_PATCHES_PER_CHUNK_MAX)
                h = find_held(r, (uint16_t) patch->writer_id, patch->chunk_id);
        if (!h) {
                r->stats.patches_failed += MAX(patch->n_patches, 1u);
                return 0;
        }
        for (size_t i = 0; i < patch->n_patches; i++) {
                const Tracebus__CommitDataRequest__ChunkToPatch__Patch *p = patch->patches[i];

                if (p->data.len != SMB_PATCH_SIZE || h->chunk.payload_size < SMB_PATCH_SIZE ||
                    p->offset > h->chunk.payload_size - SMB_PATCH_SIZE) {
                        r->stats.patches_failed++;
                        continue;
                }
                memcpy(h->chunk.payload + p->offset, p->data.data, SMB_PATCH_SIZE);
                applied++;
        }
        r->stats.patches_applied += (uint64_t) applied;
        if (!(patch->has_has_more_patches && patch->has_more_patches))
                h->chunk.flags &= (uint8_t) ~SMB_CHUNK_NEEDS_PATCHING;
        return applied;
}

/* The pieces of a packet that starts with the last fragment of @h and goes on in the first
 * fragments of the writer's next chunks. With @out, copies them there; with @consume, marks
 * them read. Returns 1 when the packet is whole (its size in *@ret_size), 0 when a chunk of
 * it is not held yet or waits for patches, -EBADMSG when the chain is broken. */
static int glue_walk(SmbReassembler *r, HeldChunk *h, const uint8_t *data, size_t size,
                     uint8_t *out, bool consume, size_t *ret_size) {
        size_t total = size;
        HeldChunk *cur = h;

        if (out)
                memcpy(out, data, size);
        for (;;) {
                HeldChunk *next = find_held(r, cur->chunk.writer_id, cur->chunk.chunk_id + 1);
                const uint8_t *piece;
                size_t offset = 0, piece_size;

                if (!next || (next->chunk.flags & SMB_CHUNK_NEEDS_PATCHING))
                        return 0;
                if (!(next->chunk.flags & SMB_CHUNK_FIRST_CONTINUES) || next->fragments_read != 0 ||
                    next->chunk.n_fragments == 0 ||
                    smb_fragment_next(next->chunk.payload, next->chunk.payload_size, &offset, &piece, &piece_size) <= 0)
                        return -EBADMSG;
                if (out && total + piece_size <= SMB_PACKET_SIZE_MAX)
                        memcpy(out + total, piece, piece_size);
                total += piece_size;
                if (consume) {
                        next->fragments_read = 1;
                        next->read_offset = offset;
                        next->done = next->chunk.n_fragments == 1;
                }
                if (next->chunk.n_fragments > 1 || !(next->chunk.flags & SMB_CHUNK_LAST_CONTINUES))
                        break;
                cur = next;
        }
        *ret_size = total;
        return 1;
}

/* Glues and hands over the packet that starts at @h's last fragment. Returns 1 when it was
 * handed over or dropped (and its pieces consumed), 0 to wait, or @func's error. */
static int read_glued(SmbReassembler *r, HeldChunk *h, const uint8_t *data, size_t size,
                      bool *dropped, SmbPacketFunc func, void *userdata) {
        _cleanup_free_ uint8_t *packet = NULL;
        size_t total = 0;
        int k;

        k = glue_walk(r, h, data, size, NULL, false, &total);
        if (k == 0)
                return 0;
        h->done = true;
        h->fragments_read = h->chunk.n_fragments;
        if (k < 0) {
                r->stats.abi_violations++;
                *dropped = true;
                return 1;
        }
        if (total > SMB_PACKET_SIZE_MAX) {
                (void) glue_walk(r, h, data, size, NULL, true, &total);
                r->stats.packets_too_large++;
                *dropped = true;
                return 1;
        }
        packet = malloc(MAX(total, 1u));
        if (!packet)
                return -ENOMEM;
        (void) glue_walk(r, h, data, size, packet, true, &total);
        k = func(packet, total, h->chunk.writer_id, *dropped, userdata);
        *dropped = false;
        return k < 0 ? k : 1;
}

/* Hands over the fragments of @h not read yet. Returns 1 when the chunk is used up, 0 when
 * it waits for the next chunk of its last packet, or @func's error. */
static int read_chunk(SmbReassembler *r, HeldChunk *h, bool *dropped, SmbPacketFunc func, void *userdata) {
        while (h->fragments_read < h->chunk.n_fragments) {
                size_t offset = h->read_offset, size;
                unsigned i = h->fragments_read;
                const uint8_t *data;
                int k;

                k = smb_fragment_next(h->chunk.payload, h->chunk.payload_size, &offset, &data, &size);
                if (k <= 0) {
                        /* A count larger than the fragments is the writer's business;
                         * a size that is a lie, or its "dropped" mark, loses the rest. */
                        if (k == -ECANCELED)
                                r->stats.packets_lost++;
                        else if (k < 0)
                                r->stats.abi_violations++;
                        *dropped = *dropped || k < 0;
                        break;
                }
                if (i == 0 && (h->chunk.flags & SMB_CHUNK_FIRST_CONTINUES)) {
                        /* The start of this packet was never read: lost. */
                        r->stats.packets_lost++;
                        *dropped = true;
                } else if (i + 1u == h->chunk.n_fragments && (h->chunk.flags & SMB_CHUNK_LAST_CONTINUES))
                        return read_glued(r, h, data, size, dropped, func, userdata);
                else if (size > 0) {
                        k = func(data, size, h->chunk.writer_id, *dropped, userdata);
                        *dropped = false;
                        if (k < 0)
                                return k;
                }
                h->fragments_read++;
                h->read_offset = offset;
        }
        h->done = true;
        return 1;
}

/* One writer's run of consecutive chunk ids, from @h on. */
static int read_run(SmbReassembler *r, HeldChunk *h, SmbPacketFunc func, void *userdata) {
        bool dropped = false;

        for (size_t steps = 0; h && steps < r->n_held; steps++) {
                int k;

                if (h->chunk.flags & SMB_CHUNK_NEEDS_PATCHING)
                        return 0;
                k = read_chunk(r, h, &dropped, func, userdata);
                if (k <= 0)
                        return k;
                h = find_held(r, h->chunk.writer_id, h->chunk.chunk_id + 1);
        }
        return 0;
}

static void drop_done(SmbReassembler *r) {
        size_t kept = 0;

        for (size_t i = 0; i < r->n_held; i++) {
                if (r->held[i].done) {
                        r->held_bytes -= r->held[i].chunk.payload_size;
                        smb_chunk_done(&r->held[i].chunk);
                } else
                        r->held[kept++] = r->held[i];
        }
        r->n_held = kept;
}

int smb_reassembler_read(SmbReassembler *r, SmbPacketFunc func, void *userdata) {
        _cleanup_free_ size_t *starts = NULL;
        size_t n_starts = 0;
        int k = 0;

        assert(r);
        assert(func);

        if (r->n_held == 0)
                return 0;
        /* A run starts at a chunk whose predecessor is not held; chunk ids wrap, and so
         * does the arithmetic. Runs are found first, as reading changes the chunks. */
        starts = malloc(r->n_held * sizeof(size_t));
        if (!starts)
                return -ENOMEM;
        for (size_t i = 0; i < r->n_held; i++)
                if (!find_held(r, r->held[i].chunk.writer_id, r->held[i].chunk.chunk_id - 1))
                        starts[n_starts++] = i;
        for (size_t i = 0; i < n_starts && k >= 0; i++)
                k = read_run(r, &r->held[starts[i]], func, userdata);
        drop_done(r);
        return k < 0 ? k : 0;
}
