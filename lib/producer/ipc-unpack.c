/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>

#include "macro.h"
#include "producer-ipc.h"

/* Messages from a producer are unpacked with an allocator that counts: protobuf-c builds a
 * struct for every submessage and an array for every repeated field, and without a budget a
 * dense frame would cost many times its size. What was handed out is counted, not what was
 * freed again, which can only make the budget stricter. */
typedef struct UnpackBudget {
        size_t left;
        bool exhausted;
} UnpackBudget;

static void *budget_alloc(void *data, size_t size) {
        UnpackBudget *budget = data;

        if (size > budget->left) {
                budget->exhausted = true;
                return NULL;
        }
        budget->left -= size;
        return malloc(size);
}

static void budget_free(void *data, void *pointer) {
        (void) data;
        free(pointer);
}

int ipc_message_unpack(const ProtobufCMessageDescriptor *descriptor, const uint8_t *data,
                       size_t size, ProtobufCMessage **ret) {
        UnpackBudget budget = { .left = IPC_UNPACK_MEMORY_MAX };
        ProtobufCAllocator allocator = {
                .alloc = budget_alloc,
                .free = budget_free,
                .allocator_data = &budget,
        };
        ProtobufCMessage *message;

        assert(descriptor);
        assert(ret);

        if (size > IPC_FRAME_MAX)
                return -EMSGSIZE;
        message = protobuf_c_message_unpack(descriptor, &allocator, size, data);
        if (!message)
                return budget.exhausted ? -ENOMEM : -EBADMSG;
        *ret = message;
        return 0;
}

/* Everything budget_alloc() handed out came from malloc(), which protobuf-c's default
 * allocator frees. */
void ipc_message_free(ProtobufCMessage *message) {
        if (message)
                protobuf_c_message_free_unpacked(message, NULL);
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
