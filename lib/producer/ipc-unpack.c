/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "macro.h"
#include "producer-ipc.h"

/* Messages from a producer are unpacked into an arena of their own: protobuf-c builds a
 * struct for every submessage and an array for every repeated field, so a dense frame (a
 * descriptor of 26,000 categories in 128 KiB) asks for tens of thousands of small
 * allocations. The arena hands them out of 64 KiB blocks and frees the blocks together,
 * which keeps a frame's cost in the event loop near the cost of reading its bytes, and
 * counts what it handed out against a budget, so that a dense frame cannot cost many times
 * its size. What protobuf-c frees while unpacking stays counted, which can only make the
 * budget stricter.
 *
 * Every block is aligned to its size and starts with the arena's address, so that
 * ipc_message_free() finds the arena from the message alone. */
#define ARENA_BLOCK_SIZE ((size_t) 64 * 1024)
#define ARENA_ALIGN ((size_t) 16)
#define ROUND_UP(n, to) (((n) + (to) - 1) / (to) * (to))

typedef struct ArenaBlock ArenaBlock;
typedef struct Arena Arena;

struct ArenaBlock {
        Arena *arena;
        ArenaBlock *next;
        size_t used;
        size_t size;
};
/* Allocations start right after the header, aligned as malloc()'s. */
_Static_assert(sizeof(ArenaBlock) % ARENA_ALIGN == 0, "arena block header alignment");

struct Arena {
        ArenaBlock *blocks;       /* the newest first */
        size_t left;              /* of the budget */
        bool exhausted;
};

static ArenaBlock *arena_new_block(Arena *arena, size_t payload) {
        size_t size = ROUND_UP(sizeof(ArenaBlock) + payload, ARENA_BLOCK_SIZE);
        ArenaBlock *block;

        if (size > arena->left + ARENA_BLOCK_SIZE)
                return NULL;
        block = aligned_alloc(ARENA_BLOCK_SIZE, size);
        if (!block)
                return NULL;
        *block = (ArenaBlock) { .arena = arena, .next = arena->blocks, .used = sizeof(ArenaBlock), .size = size };
        arena->blocks = block;
        return block;
}

static void *arena_alloc(void *data, size_t size) {
        Arena *arena = data;
        ArenaBlock *block = arena->blocks;
        size_t need = ROUND_UP(MAX(size, (size_t) 1), ARENA_ALIGN);
        void *p;

        if (need > arena->left) {
                arena->exhausted = true;
                return NULL;
        }
        if (!block || block->size - block->used < need) {
                block = arena_new_block(arena, need);
                if (!block) {
                        arena->exhausted = true;
                        return NULL;
                }
        }
        arena->left -= need;
        p = (uint8_t *) block + block->used;
        block->used += need;
        /* A block made larger for one allocation takes no other: every pointer handed out
         * lies in the first ARENA_BLOCK_SIZE bytes of its block, as ipc_message_free()
         * needs. */
        if (block->size > ARENA_BLOCK_SIZE)
                block->used = block->size;
        return p;
}

/* Freed with the arena. */
static void arena_free(void *data, void *pointer) {
        (void) data;
        (void) pointer;
}

static void arena_release(Arena *arena) {
        ArenaBlock *block = arena->blocks;

        while (block) {
                ArenaBlock *next = block->next;
                free(block);
                block = next;
        }
        free(arena);
}

int ipc_message_unpack(const ProtobufCMessageDescriptor *descriptor, const uint8_t *data,
                       size_t size, ProtobufCMessage **ret) {
        ProtobufCAllocator allocator = { .alloc = arena_alloc, .free = arena_free };
        ProtobufCMessage *message;
        Arena *arena;

        assert(descriptor);
        assert(ret);

        if (size > IPC_FRAME_MAX)
                return -EMSGSIZE;
        arena = calloc(1, sizeof(Arena));
        if (!arena)
                return -ENOMEM;
        arena->left = IPC_UNPACK_MEMORY_MAX;
        allocator.allocator_data = arena;
        message = protobuf_c_message_unpack(descriptor, &allocator, size, data);
        if (!message) {
                int r = arena->exhausted ? -ENOMEM : -EBADMSG;

                arena_release(arena);
                return r;
        }
        *ret = message;
        return 0;
}

/* The message lives in one of its arena's blocks: the block's start, found by its
 * alignment, names the arena. */
void ipc_message_free(ProtobufCMessage *message) {
        ArenaBlock *block;

        if (!message)
                return;
        block = (ArenaBlock *) ((uintptr_t) message & ~((uintptr_t) ARENA_BLOCK_SIZE - 1));
        arena_release(block->arena);
}

Tracebus__IPCFrame *ipc_frame_free(Tracebus__IPCFrame *frame) {
        ipc_message_free(frame ? &frame->base : NULL);
        return NULL;
}

const char *ipc_error_to_string(int error) {
        switch (error) {
        case -EMSGSIZE:
                return "frame larger than the IPC frame limit";
        case -ETOOMANYREFS:
                return "too many file descriptors with one frame";
        case -EBADMSG:
                return "frame or message that does not parse";
        case -ENOBUFS:
                return "peer does not read its socket: output queue full";
        case -ECONNRESET:
                return "peer closed the connection";
        case -ENOMEM:
                return "message would take more memory than allowed";
        case -ESRCH:
                return "call to a service that is not bound";
        case -EOPNOTSUPP:
                return "call to a method the service does not have";
        default:
                return "connection error";
        }
}
