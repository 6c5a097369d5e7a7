/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target: a producer's shared memory buffer and its CommitData, as the service
 * reads them. The input is a 2-byte little-endian length, that many bytes of
 * CommitDataRequest, then the buffer's contents (four 4 KiB pages, zero-filled past the
 * input). The request's moves and patches are applied, the packets read, the buffer
 * scraped as if the producer were gone, and the final pass read.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "producer-ipc.h"
#include "shm-abi.h"

#define FUZZ_SMB_SIZE (4 * SMB_PAGE_SIZE_MIN)

static int count_packet(const uint8_t *data, size_t size, uint16_t writer_id, bool dropped, void *userdata) {
        size_t *total = userdata;

        *total += size;
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static uint8_t memory[FUZZ_SMB_SIZE] __attribute__((aligned(4096)));
        ProtobufCMessage *request = NULL;
        SmbReassembler *r = NULL;
        size_t length, total = 0;
        Smb smb;

        if (size < 2)
                return 0;
        length = data[0] | (size_t) data[1] << 8;
        if (length > size - 2)
                return 0;
        memset(memory, 0, sizeof(memory));
        memcpy(memory, data + 2 + length, MIN(size - 2 - length, sizeof(memory)));
        if (smb_init(&smb, memory, sizeof(memory), SMB_PAGE_SIZE_MIN) < 0 || smb_reassembler_new(&r) < 0)
                return 0;
        if (ipc_message_unpack(&tracebus__commit_data_request__descriptor, data + 2, length, &request) >= 0) {
                (void) smb_commit(&smb, r, (const Tracebus__CommitDataRequest *) request);
                (void) smb_reassembler_read(r, false, count_packet, &total);
                ipc_message_free(request);
        }
        (void) smb_scrape_all(&smb, r);
        (void) smb_reassembler_read(r, true, count_packet, &total);
        smb_reassembler_free(r);
        return 0;
}
