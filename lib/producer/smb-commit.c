/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>

#include "macro.h"
#include "shm-abi.h"
#include "smb-reassembler-local.h"

/* One chunk CommitData names, out of the buffer and into the reassembler. */
static int move_chunk(Smb *smb, SmbReassembler *reassembler, const Tracebus__CommitDataRequest__ChunksToMove *move) {
        SmbChunk chunk = {};
        int r;

        /* Chunks sent inside the message are for producers without shared memory, which
         * this service does not offer. */
        if (move->has_data)
                return -EOPNOTSUPP;
        r = smb_take_chunk(smb, move->page, move->chunk, &chunk);
        if (r < 0)
                return r;
        chunk.target_buffer = move->target_buffer;
        return smb_reassembler_add(reassembler, &chunk);
}

int smb_commit(Smb *smb, SmbReassembler *reassembler, const Tracebus__CommitDataRequest *request) {
        SmbStats *stats = smb_reassembler_counters(reassembler);
        int moved = 0;

        assert(smb);
        assert(reassembler);
        assert(request);

        for (size_t i = 0; i < request->n_chunks_to_move; i++) {
                int r = move_chunk(smb, reassembler, request->chunks_to_move[i]);

                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        stats->chunks_discarded++;
                        continue;
                }
                stats->chunks_taken++;
                moved++;
        }
        /* Patches come after the moves, so that a chunk moved and patched in one request
         * is patched. */
        for (size_t i = 0; i < request->n_chunks_to_patch; i++)
                (void) smb_reassembler_patch(reassembler, request->chunks_to_patch[i]);
        return moved;
}

int smb_scrape_all(Smb *smb, SmbReassembler *reassembler) {
        int copied = 0;

        assert(smb);
        assert(reassembler);

        for (uint32_t page = 0; page < smb->n_pages; page++)
                for (uint32_t c = 0; c < SMB_CHUNKS_PER_PAGE_MAX; c++) {
                        SmbChunk chunk = {};
                        int r = smb_scrape_chunk(smb, page, c, &chunk);

                        if (r == -ERANGE)
                                break;
                        if (r < 0)
                                continue;
                        if (smb_reassembler_add(reassembler, &chunk) >= 0)
                                copied++;
                }
        return copied;
}
