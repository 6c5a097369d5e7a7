/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target: the bytes a producer writes on its socket, through the IPC frame
 * reader (fed in two pieces, split where the input's first byte says), every frame's
 * InvokeMethod checked against the ProducerPort table with its arguments unpacked, and a
 * BindService answered, as a service would.
 */
#include <stdint.h>
#include <errno.h>
#include <stdlib.h>

#include "producer-ipc.h"

static void serve_frame(IpcWriter *writer, const Tracebus__IPCFrame *frame) {
        ProducerPortMethod method;
        ProtobufCMessage *args = NULL;

        if (frame->msg_case == TRACEBUS__IPCFRAME__MSG_MSG_BIND_SERVICE)
                (void) producer_port_queue_bind_reply(writer, frame->request_id, frame->msg_bind_service->service_name);
        if (frame->msg_case == TRACEBUS__IPCFRAME__MSG_MSG_INVOKE_METHOD &&
            producer_port_unpack_call(frame->msg_invoke_method, &method, &args) >= 0)
                ipc_message_free(args);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        IpcReader *reader = NULL;
        IpcWriter *writer = NULL;
        size_t split;

        if (size < 1 || ipc_reader_new(&reader) < 0)
                return 0;
        if (ipc_writer_new(&writer) < 0) {
                ipc_reader_free(reader);
                return 0;
        }
        split = 1 + (size - 1) * data[0] / 255;
        for (size_t at = 1; at < size;) {
                size_t n = (at < split ? split : size) - at;
                Tracebus__IPCFrame *frame;
                int fd, r;

                if (ipc_reader_feed(reader, data + at, n) < 0)
                        break;
                at += n;
                while ((r = ipc_reader_next(reader, &frame, &fd)) != 0) {
                        if (r == -EBADMSG)
                                continue;
                        if (r < 0)
                                break;
                        serve_frame(writer, frame);
                        ipc_frame_free(frame);
                }
                if (r < 0)
                        break;
        }
        ipc_writer_free(writer);
        ipc_reader_free(reader);
        return 0;
}
