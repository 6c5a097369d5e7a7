/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <glib.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "fd-util.h"
#include "producer-client.h"

int producer_client_connect(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd;

        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                int r = -errno;

                close(fd);
                return r;
        }
        return fd;
}

uint8_t *producer_client_pack(const Tracebus__IPCFrame *frame, size_t *ret_size) {
        size_t payload = protobuf_c_message_get_packed_size(&frame->base);
        uint8_t *data = g_malloc(payload + IPC_FRAME_HEADER_SIZE);

        for (unsigned i = 0; i < IPC_FRAME_HEADER_SIZE; i++)
                data[i] = (uint8_t) (payload >> (8 * i));
        protobuf_c_message_pack(&frame->base, data + IPC_FRAME_HEADER_SIZE);
        *ret_size = payload + IPC_FRAME_HEADER_SIZE;
        return data;
}

uint8_t *producer_client_pack_call(uint64_t request_id, ProducerPortMethod method, const uint8_t *args,
                                   size_t args_size, bool drop_reply, size_t *ret_size) {
        Tracebus__IPCFrame frame = TRACEBUS__IPCFRAME__INIT;
        Tracebus__IPCFrame__InvokeMethod call = TRACEBUS__IPCFRAME__INVOKE_METHOD__INIT;

        call.has_service_id = call.has_method_id = call.has_args_proto = true;
        call.service_id = PRODUCER_PORT_SERVICE_ID;
        call.method_id = (uint32_t) method;
        call.args_proto = (ProtobufCBinaryData) { args_size, (uint8_t *) args };
        call.has_drop_reply = drop_reply;
        call.drop_reply = drop_reply;
        frame.has_request_id = true;
        frame.request_id = request_id;
        frame.msg_case = TRACEBUS__IPCFRAME__MSG_MSG_INVOKE_METHOD;
        frame.msg_invoke_method = &call;
        return producer_client_pack(&frame, ret_size);
}

int producer_client_send(int sock, const void *data, size_t size, int fd) {
        const uint8_t *p = data;

        while (size > 0) {
                ssize_t n = send_with_fd(sock, p, size, fd, MSG_NOSIGNAL);

                if (n == -EINTR)
                        continue;
                if (n < 0)
                        return (int) n;
                fd = -1;
                p += n;
                size -= (size_t) n;
        }
        return 0;
}

int producer_client_receive(int sock, IpcReader *reader, unsigned timeout_ms, Tracebus__IPCFrame **ret) {
        gint64 deadline = g_get_monotonic_time() + (gint64) timeout_ms * 1000;

        for (;;) {
                struct pollfd p = { .fd = sock, .events = POLLIN };
                gint64 left = (deadline - g_get_monotonic_time()) / 1000;
                int fd = -1, r = ipc_reader_next(reader, ret, &fd);

                if (fd >= 0)
                        close(fd);
                if (r != 0)
                        return r;
                if (left <= 0)
                        return 0;
                if (poll(&p, 1, (int) left) <= 0)
                        continue;
                r = ipc_reader_receive(reader, sock);
                if (r < 0 && r != -EAGAIN)
                        return r;
        }
}

/* The reply to @request_id: 0 when it succeeded, -EPROTO when refused, or the error. */
static int expect_reply(int sock, IpcReader *reader, uint64_t request_id, unsigned timeout_ms) {
        Tracebus__IPCFrame *frame = NULL;
        int r = producer_client_receive(sock, reader, timeout_ms, &frame);
        bool ok;

        if (r <= 0)
                return r == 0 ? -ETIMEDOUT : r;
        ok = frame->request_id == request_id &&
             ((frame->msg_case == TRACEBUS__IPCFRAME__MSG_MSG_BIND_SERVICE_REPLY &&
               frame->msg_bind_service_reply->success) ||
              (frame->msg_case == TRACEBUS__IPCFRAME__MSG_MSG_INVOKE_METHOD_REPLY &&
               frame->msg_invoke_method_reply->success));
        ipc_frame_free(frame);
        return ok ? 0 : -EPROTO;
}

int producer_client_handshake(int sock, IpcReader *reader, const char *name, bool initialize, unsigned timeout_ms) {
        Tracebus__IPCFrame frame = TRACEBUS__IPCFRAME__INIT;
        Tracebus__IPCFrame__BindService bind = TRACEBUS__IPCFRAME__BIND_SERVICE__INIT;
        Tracebus__InitializeConnectionRequest init = TRACEBUS__INITIALIZE_CONNECTION_REQUEST__INIT;
        g_autofree uint8_t *bytes = NULL, *args = NULL, *call = NULL;
        size_t size, call_size;
        int r;

        bind.service_name = (char *) PRODUCER_PORT_SERVICE_NAME;
        frame.has_request_id = true;
        frame.request_id = PRODUCER_CLIENT_BIND_ID;
        frame.msg_case = TRACEBUS__IPCFRAME__MSG_MSG_BIND_SERVICE;
        frame.msg_bind_service = &bind;
        bytes = producer_client_pack(&frame, &size);
        r = producer_client_send(sock, bytes, size, -1);
        if (r >= 0)
                r = expect_reply(sock, reader, PRODUCER_CLIENT_BIND_ID, timeout_ms);
        if (r < 0 || !initialize)
                return r;
        init.producer_name = (char *) name;
        args = g_malloc(protobuf_c_message_get_packed_size(&init.base) + 1);
        size = protobuf_c_message_pack(&init.base, args);
        call = producer_client_pack_call(PRODUCER_CLIENT_INIT_ID, PRODUCER_PORT_INITIALIZE_CONNECTION, args, size,
                                         false, &call_size);
        r = producer_client_send(sock, call, call_size, -1);
        return r < 0 ? r : expect_reply(sock, reader, PRODUCER_CLIENT_INIT_ID, timeout_ms);
}

bool producer_client_closed(int sock, unsigned timeout_ms) {
        gint64 deadline = g_get_monotonic_time() + (gint64) timeout_ms * 1000;
        char buf[4096];

        for (;;) {
                struct pollfd p = { .fd = sock, .events = POLLIN };
                gint64 left = (deadline - g_get_monotonic_time()) / 1000;
                ssize_t n;

                if (left <= 0 || poll(&p, 1, (int) left) <= 0)
                        return false;
                n = recv(sock, buf, sizeof(buf), MSG_DONTWAIT);
                if (n == 0 || (n < 0 && errno == ECONNRESET))
                        return true;
                if (n < 0 && errno != EAGAIN && errno != EINTR)
                        return false;
        }
}
