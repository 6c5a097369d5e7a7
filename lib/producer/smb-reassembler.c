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

/* Where a writer's sequence goes on: the id of the next chunk to read, and whether
 * packets were lost since the last one handed over. */
typedef struct WriterState {
        uint16_t writer_id;
        bool dropped;
        uint32_t next_chunk_id;
} WriterState;

struct SmbReassembler {
        HeldChunk *held;
        size_t n_held;
        size_t allocated;
        size_t held_bytes;
        /* One per writer read from; writer ids are checked, so at most
         * SMB_WRITER_ID_MAX. */
        WriterState *writers;
        size_t n_writers;
        size_t allocated_writers;
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
        free(r->writers);
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

/* The held chunks are sorted by writer and chunk id, the writers by id: lookups are binary
 * searches, so that a producer holding many chunks or using many writer ids cannot make
 * each commit cost the square of them. */
static size_t held_lower_bound(const SmbReassembler *r, uint16_t writer_id, uint32_t chunk_id) {
        size_t lo = 0, hi = r->n_held;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                const SmbChunk *c = &r->held[mid].chunk;

                if (c->writer_id < writer_id || (c->writer_id == writer_id && c->chunk_id < chunk_id))
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

static HeldChunk *find_held(SmbReassembler *r, uint16_t writer_id, uint32_t chunk_id) {
        size_t i = held_lower_bound(r, writer_id, chunk_id);

        if (i < r->n_held && r->held[i].chunk.writer_id == writer_id && r->held[i].chunk.chunk_id == chunk_id)
                return &r->held[i];
        return NULL;
}

static size_t writer_lower_bound(const SmbReassembler *r, uint16_t writer_id) {
        size_t lo = 0, hi = r->n_writers;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (r->writers[mid].writer_id < writer_id)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

static WriterState *find_writer(SmbReassembler *r, uint16_t writer_id) {
        size_t i = writer_lower_bound(r, writer_id);

        return i < r->n_writers && r->writers[i].writer_id == writer_id ? &r->writers[i] : NULL;
}

static int set_writer_next(SmbReassembler *r, uint16_t writer_id, uint32_t next_chunk_id, bool dropped) {
        WriterState *w = find_writer(r, writer_id);

        if (!w) {
                size_t i = writer_lower_bound(r, writer_id);

                if (r->n_writers == r->allocated_writers) {
                        WriterState *grown = array_grow(r->writers, &r->allocated_writers, sizeof(WriterState), 8);
                        if (!grown)
                                return -ENOMEM;
                        r->writers = grown;
                }
                memmove(r->writers + i + 1, r->writers + i, (r->n_writers - i) * sizeof(WriterState));
                r->n_writers++;
                w = &r->writers[i];
                w->writer_id = writer_id;
        }
        w->next_chunk_id = next_chunk_id;
        w->dropped = dropped;
        return 0;
}

/* A chunk its writer's sequence already read past (scraped and read, then committed):
 * nothing new in it. Ids wrap, so "past" is the half of the id space behind. */
static bool already_read(SmbReassembler *r, const SmbChunk *chunk) {
        WriterState *w = find_writer(r, chunk->writer_id);

        return w && (int32_t) (chunk->chunk_id - w->next_chunk_id) < 0;
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
        size_t i;

        assert(r);
        assert(chunk);

        if (already_read(r, chunk)) {
                smb_chunk_done(chunk);
                return 0;
        }
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
        i = held_lower_bound(r, chunk->writer_id, chunk->chunk_id);
        memmove(r->held + i + 1, r->held + i, (r->n_held - i) * sizeof(HeldChunk));
        r->held[i] = (HeldChunk) { .chunk = *chunk };
        r->n_held++;
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

/* One pass of reading: its mode, the callback, and whether packets were lost since the
 * last one handed over on the current sequence. */
typedef struct ReadPass {
        SmbReassembler *r;
        bool final;
        bool dropped;
        SmbPacketFunc func;
        void *userdata;
} ReadPass;

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
        for (size_t steps = 0; steps < r->n_held; steps++) {
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
                }
                if (next->chunk.n_fragments > 1 || !(next->chunk.flags & SMB_CHUNK_LAST_CONTINUES)) {
                        *ret_size = total;
                        return 1;
                }
                cur = next;
        }
        return 0;
}

static void lose(ReadPass *pass, uint64_t *counter) {
        (*counter)++;
        pass->dropped = true;
}

/* Glues and hands over the packet that starts at @h's last fragment. Returns 1 when it was
 * handed over or dropped (its pieces consumed), 0 to wait for more chunks, or the
 * callback's error. At the final pass a packet that cannot be completed is lost. */
static int read_glued(ReadPass *pass, HeldChunk *h, const uint8_t *data, size_t size) {
        SmbReassembler *r = pass->r;
        _cleanup_free_ uint8_t *packet = NULL;
        size_t total = 0;
        int k;

        k = glue_walk(r, h, data, size, NULL, false, &total);
        if (k == 0 && !pass->final)
                return 0;
        h->fragments_read = h->chunk.n_fragments;
        if (k <= 0) {
                lose(pass, k == 0 ? &r->stats.packets_lost : &r->stats.abi_violations);
                return 1;
        }
        if (total > SMB_PACKET_SIZE_MAX) {
                (void) glue_walk(r, h, data, size, NULL, true, &total);
                lose(pass, &r->stats.packets_too_large);
                return 1;
        }
        packet = malloc(MAX(total, 1u));
        if (!packet)
                return -ENOMEM;
        (void) glue_walk(r, h, data, size, packet, true, &total);
        k = pass->func(packet, total, h->chunk.writer_id, pass->dropped, pass->userdata);
        pass->dropped = false;
        return k < 0 ? k : 1;
}

/* Hands over one fragment at @h's read position; returns 1 to go on with the chunk, 0 to
 * wait, or the callback's error. */
static int read_fragment(ReadPass *pass, HeldChunk *h, const uint8_t *data, size_t size, size_t offset) {
        unsigned i = h->fragments_read;
        int k;

        if (i == 0 && (h->chunk.flags & SMB_CHUNK_FIRST_CONTINUES))
                /* The start of this packet was never read: lost. */
                lose(pass, &pass->r->stats.packets_lost);
        else if (i + 1u == h->chunk.n_fragments && (h->chunk.flags & SMB_CHUNK_LAST_CONTINUES))
                return read_glued(pass, h, data, size);
        else if (size > 0) {
                k = pass->func(data, size, h->chunk.writer_id, pass->dropped, pass->userdata);
                pass->dropped = false;
                if (k < 0)
                        return k;
        }
        h->fragments_read++;
        h->read_offset = offset;
        return 1;
}

/* Hands over the fragments of @h not read yet. Returns 1 when the chunk is used up, 0 when
 * it waits (for patches, for the next chunk of its last packet, or, scraped while being
 * written, for its committed copy), or the callback's error. */
static int read_chunk(ReadPass *pass, HeldChunk *h) {
        if (h->chunk.flags & SMB_CHUNK_NEEDS_PATCHING) {
                if (!pass->final)
                        return 0;
                /* Its patches never came: what it holds cannot be read. */
                lose(pass, &pass->r->stats.packets_lost);
                h->fragments_read = h->chunk.n_fragments;
        }
        while (h->fragments_read < h->chunk.n_fragments) {
                size_t offset = h->read_offset, size;
                const uint8_t *data;
                int k;

                k = smb_fragment_next(h->chunk.payload, h->chunk.payload_size, &offset, &data, &size);
                if (k < 0)
                        /* A size that is a lie, or the writer's "dropped" mark, loses the
                         * rest of the chunk; a count beyond the fragments is not ours to
                         * mind. */
                        lose(pass, k == -ECANCELED ? &pass->r->stats.packets_lost : &pass->r->stats.abi_violations);
                if (k <= 0)
                        break;
                k = read_fragment(pass, h, data, size, offset);
                if (k <= 0)
                        return k;
        }
        if (h->chunk.incomplete && !pass->final && h->fragments_read >= h->chunk.n_fragments &&
            !(h->chunk.flags & SMB_CHUNK_LAST_CONTINUES))
                return 0;
        h->done = true;
        return 1;
}

/* Reads @writer_id's chunks in id order from @h on, while they follow each other; returns
 * the id of the next chunk to read in *@ret_next. */
static int read_run(ReadPass *pass, HeldChunk *h, uint32_t *ret_next) {
        uint32_t next = h->chunk.chunk_id;
        uint16_t writer_id = h->chunk.writer_id;

        for (size_t steps = 0; h && steps < pass->r->n_held; steps++) {
                int k = read_chunk(pass, h);

                if (k < 0)
                        return k;
                if (k == 0)
                        break;
                next = h->chunk.chunk_id + 1;
                h = find_held(pass->r, writer_id, next);
        }
        *ret_next = next;
        return 0;
}

/* Where a writer's reading may go on: the chunk after the last one read, and only that one
 * (a gap waits for its chunk). A writer not read before starts at its run of consecutive
 * chunks with the lowest id, as its ids count up from 0; at the final pass, reading goes
 * on at the run nearest after the last one read, across any gap. */
static HeldChunk *run_start(SmbReassembler *r, uint16_t writer_id, bool final) {
        WriterState *w = find_writer(r, writer_id);
        uint32_t base = w ? w->next_chunk_id : 0;
        HeldChunk *best = NULL, *next = w ? find_held(r, writer_id, base) : NULL;

        if (next && !next->done)
                return next;
        for (size_t i = held_lower_bound(r, writer_id, 0); i < r->n_held && r->held[i].chunk.writer_id == writer_id; i++) {
                HeldChunk *h = &r->held[i], *prev;

                if (h->done)
                        continue;
                prev = find_held(r, writer_id, h->chunk.chunk_id - 1);
                if (prev && !prev->done)
                        continue;
                if (!best || h->chunk.chunk_id - base < best->chunk.chunk_id - base)
                        best = h;
        }
        return final || !w ? best : NULL;
}

static int read_writer(ReadPass *pass, uint16_t writer_id) {
        WriterState *w = find_writer(pass->r, writer_id);

        pass->dropped = w && w->dropped;
        for (size_t steps = 0; steps <= pass->r->n_held; steps++) {
                HeldChunk *h = run_start(pass->r, writer_id, pass->final);
                uint32_t next;
                int k;

                if (!h)
                        return 0;
                /* At the final pass, the chunks skipped over a gap are lost. */
                w = find_writer(pass->r, writer_id);
                if (w && h->chunk.chunk_id != w->next_chunk_id)
                        pass->dropped = true;
                k = read_run(pass, h, &next);
                if (k < 0)
                        return k;
                k = set_writer_next(pass->r, writer_id, next, pass->dropped);
                if (k < 0 || !pass->final)
                        return k;
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

int smb_reassembler_read(SmbReassembler *r, bool final, SmbPacketFunc func, void *userdata) {
        ReadPass pass = { .r = r, .final = final, .func = func, .userdata = userdata };
        int k = 0;

        assert(r);
        assert(func);

        /* Reading marks chunks done and drops them only at the end, so the array stays
         * as it is while it is walked, writer by writer. */
        for (size_t i = 0; i < r->n_held && k >= 0; i++)
                if (i == 0 || r->held[i].chunk.writer_id != r->held[i - 1].chunk.writer_id)
                        k = read_writer(&pass, r->held[i].chunk.writer_id);
        drop_done(r);
        return k < 0 ? k : 0;
}

int smb_reassembler_end_writer(SmbReassembler *r, uint16_t writer_id, SmbPacketFunc func, void *userdata) {
        ReadPass pass = { .r = r, .final = true, .func = func, .userdata = userdata };
        WriterState *w;
        int k;

        assert(r);
        assert(func);

        k = read_writer(&pass, writer_id);
        drop_done(r);
        if (k < 0)
                return k;
        w = find_writer(r, writer_id);
        if (w) {
                size_t i = (size_t) (w - r->writers);
                memmove(w, w + 1, (r->n_writers - i - 1) * sizeof(WriterState));
                r->n_writers--;
        }
        return 0;
}
