/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fd-util.h"
#include "macro.h"
#include "producer-ipc.h"

/* One packed frame waiting in the output queue, with the descriptor that goes with its
 * first bytes. */
typedef struct IpcOutFrame {
        struct IpcOutFrame *next;
        int fd;
        size_t size;
        size_t sent;
        uint8_t data[];
} IpcOutFrame;

struct IpcWriter {
        IpcOutFrame *head;
        IpcOutFrame *tail;
        size_t queued;          /* bytes not yet sent, prefixes included */
        unsigned frames;        /* frames not yet sent whole */
};

int ipc_writer_new(IpcWriter **ret) {
        IpcWriter *writer;

        assert(ret);

        writer = calloc(1, sizeof(*writer));
        if (!writer)
                return -ENOMEM;
        *ret = writer;
        return 0;
}

static IpcOutFrame *out_frame_free(IpcOutFrame *frame) {
        safe_close(frame->fd);
        return mfree(frame);
}

static void pop_frame(IpcWriter *writer) {
        IpcOutFrame *frame = writer->head;

        writer->head = frame->next;
        if (!writer->head)
                writer->tail = NULL;
        writer->queued -= frame->size - frame->sent;
        writer->frames--;
        out_frame_free(frame);
}

IpcWriter *ipc_writer_free(IpcWriter *writer) {
        if (!writer)
                return NULL;
        while (writer->head)
                pop_frame(writer);
        return mfree(writer);
}

size_t ipc_writer_queued(const IpcWriter *writer) {
        return writer->queued;
}

int ipc_writer_queue(IpcWriter *writer, const Tracebus__IPCFrame *frame, int fd) {
        size_t payload, size;
        IpcOutFrame *out;

        assert(writer);
        assert(frame);

        payload = protobuf_c_message_get_packed_size(&frame->base);
        if (payload > IPC_FRAME_MAX - IPC_FRAME_HEADER_SIZE)
                return -EMSGSIZE;
        size = payload + IPC_FRAME_HEADER_SIZE;
        if (writer->queued + size > IPC_OUTPUT_QUEUE_MAX || writer->frames >= IPC_OUTPUT_FRAMES_MAX)
                return -ENOBUFS;
        out = malloc(sizeof(*out) + size);
        if (!out)
                return -ENOMEM;
        *out = (IpcOutFrame) { .fd = -EBADF, .size = size };
        if (fd >= 0) {
                out->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
                if (out->fd < 0) {
                        free(out);
                        return -errno;
                }
        }
        for (unsigned i = 0; i < IPC_FRAME_HEADER_SIZE; i++)
                out->data[i] = (uint8_t) (payload >> (8 * i));
        protobuf_c_message_pack(&frame->base, out->data + IPC_FRAME_HEADER_SIZE);
        if (writer->tail)
                writer->tail->next = out;
        else
                writer->head = out;
        writer->tail = out;
        writer->queued += size;
        writer->frames++;
        return 0;
}

/* One sendmsg() of the head frame's remaining bytes; its descriptor rides on the first. */
static ssize_t send_head(IpcOutFrame *frame, int fd) {
        int with = frame->sent == 0 ? frame->fd : -EBADF;
        ssize_t n = send_with_fd(fd, frame->data + frame->sent, frame->size - frame->sent, with,
                                 MSG_DONTWAIT | MSG_NOSIGNAL);

        if (n == -EWOULDBLOCK)
                return -EAGAIN;
        if (n >= 0 && with >= 0)
                frame->fd = safe_close(frame->fd);
        return n;
}

int ipc_writer_flush(IpcWriter *writer, int fd) {
        assert(writer);

        while (writer->head) {
                IpcOutFrame *frame = writer->head;
                ssize_t n = send_head(frame, fd);

                if (n == -EINTR)
                        continue;
                if (n < 0)
                        return (int) n;
                frame->sent += (size_t) n;
                writer->queued -= (size_t) n;
                if (frame->sent == frame->size)
                        pop_frame(writer);
        }
        return 0;
}

int ipc_writer_queue_reply(IpcWriter *writer, uint64_t request_id, bool success,
                           bool has_more, const ProtobufCMessage *reply, int fd) {
        Tracebus__IPCFrame frame = TRACEBUS__IPCFRAME__INIT;
        Tracebus__IPCFrame__InvokeMethodReply answer = TRACEBUS__IPCFRAME__INVOKE_METHOD_REPLY__INIT;
        _cleanup_free_ uint8_t *bytes = NULL;
        size_t size = 0;

        assert(writer);

        if (reply) {
                size = protobuf_c_message_get_packed_size(reply);
                if (size > IPC_FRAME_MAX)
                        return -EMSGSIZE;
                bytes = malloc(MAX(size, 1u));
                if (!bytes)
                        return -ENOMEM;
                protobuf_c_message_pack(reply, bytes);
                answer.has_reply_proto = true;
                answer.reply_proto = (ProtobufCBinaryData) { size, bytes };
        }
        answer.has_success = true;
        answer.success = success;
        answer.has_has_more = has_more;
        answer.has_more = has_more;
        frame.has_request_id = true;
        frame.request_id = request_id;
        frame.msg_case = TRACEBUS__IPCFRAME__MSG_MSG_INVOKE_METHOD_REPLY;
        frame.msg_invoke_method_reply = &answer;
        return ipc_writer_queue(writer, &frame, fd);
}
