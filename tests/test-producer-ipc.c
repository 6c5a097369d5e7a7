/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The producer socket's IPC layer: frames written and read back over a socketpair, the
 * bytes the SDK sends, the ProducerPort table, and what a hostile peer may send: a huge
 * length prefix, frames cut short, too many descriptors, bytes that are not an IPCFrame,
 * messages built to take memory, a peer that does not read. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "producer-ipc.h"

typedef struct {
        int sv[2];              /* [0] the service's end, [1] the peer's */
        IpcReader *reader;
        IpcWriter *writer;
} Fixture;

static void fixture_setup(Fixture *f, gconstpointer data) {
        g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, f->sv), ==, 0);
        g_assert_cmpint(ipc_reader_new(&f->reader), ==, 0);
        g_assert_cmpint(ipc_writer_new(&f->writer), ==, 0);
}

static void fixture_teardown(Fixture *f, gconstpointer data) {
        ipc_reader_free(f->reader);
        ipc_writer_free(f->writer);
        close(f->sv[0]);
        close(f->sv[1]);
}

static unsigned count_open_fds(void) {
        DIR *d = opendir("/proc/self/fd");
        unsigned n = 0;

        g_assert_nonnull(d);
        while (readdir(d))
                n++;
        closedir(d);
        return n;
}

/* The frame BindService("ProducerPort") with request id 1, byte for byte as the SDK
 * sends it. */
static const uint8_t sdk_bind_service[] = {
        0x12, 0x00, 0x00, 0x00, 0x10, 0x01, 0x1a, 0x0e, 0x0a, 0x0c,
        'P', 'r', 'o', 'd', 'u', 'c', 'e', 'r', 'P', 'o', 'r', 't',
};

static void bind_service_frame(Tracebus__IPCFrame *frame, Tracebus__IPCFrame__BindService *bind, uint64_t id) {
        *frame = (Tracebus__IPCFrame) TRACEBUS__IPCFRAME__INIT;
        *bind = (Tracebus__IPCFrame__BindService) TRACEBUS__IPCFRAME__BIND_SERVICE__INIT;
        bind->service_name = (char *) PRODUCER_PORT_SERVICE_NAME;
        frame->has_request_id = true;
        frame->request_id = id;
        frame->msg_case = TRACEBUS__IPCFRAME__MSG_MSG_BIND_SERVICE;
        frame->msg_bind_service = bind;
}

/* The next frame from @f's service end, receiving as needed. */
static Tracebus__IPCFrame *receive_frame(Fixture *f, int *ret_fd) {
        Tracebus__IPCFrame *frame = NULL;
        int r;

        while ((r = ipc_reader_next(f->reader, &frame, ret_fd)) == 0)
                g_assert_cmpint(ipc_reader_receive(f->reader, f->sv[0]), >, 0);
        g_assert_cmpint(r, ==, 1);
        return frame;
}

static void test_sdk_bytes(Fixture *f, gconstpointer data) {
        Tracebus__IPCFrame frame, *got;
        Tracebus__IPCFrame__BindService bind;
        uint8_t sent[64];
        int fd;

        g_assert_cmpint(write(f->sv[1], sdk_bind_service, sizeof(sdk_bind_service)), ==, sizeof(sdk_bind_service));
        got = receive_frame(f, &fd);
        g_assert_cmpint(fd, <, 0);
        g_assert_cmpuint(got->request_id, ==, 1);
        g_assert_cmpint(got->msg_case, ==, TRACEBUS__IPCFRAME__MSG_MSG_BIND_SERVICE);
        g_assert_cmpstr(got->msg_bind_service->service_name, ==, "ProducerPort");
        ipc_frame_free(got);

        /* Our writer packs the same frame into the same bytes. */
        bind_service_frame(&frame, &bind, 1);
        g_assert_cmpint(ipc_writer_queue(f->writer, &frame, -1), ==, 0);
        g_assert_cmpuint(ipc_writer_queued(f->writer), ==, sizeof(sdk_bind_service));
        g_assert_cmpint(ipc_writer_flush(f->writer, f->sv[0]), ==, 0);
        g_assert_cmpint(read(f->sv[1], sent, sizeof(sent)), ==, sizeof(sdk_bind_service));
        g_assert_cmpmem(sent, sizeof(sdk_bind_service), sdk_bind_service, sizeof(sdk_bind_service));
}

/* A reply with a descriptor: the frame and the fd come out together, the fd open on the
 * same file, and the writer keeps no copy once sent. */
static void test_round_trip_fd(Fixture *f, gconstpointer data) {
        Tracebus__InitializeConnectionResponse response = TRACEBUS__INITIALIZE_CONNECTION_RESPONSE__INIT;
        Tracebus__IPCFrame *got;
        struct stat a, b;
        int memfd = memfd_create("smb", MFD_CLOEXEC), fd, fds_before;
        IpcReader *peer;

        g_assert_cmpint(memfd, >=, 0);
        fds_before = count_open_fds();
        response.has_direct_smb_patching_supported = response.direct_smb_patching_supported = true;
        g_assert_cmpint(ipc_writer_queue_reply(f->writer, 5, true, true, &response.base, memfd), ==, 0);
        g_assert_cmpint(ipc_writer_flush(f->writer, f->sv[1]), ==, 0);
        g_assert_cmpint(count_open_fds(), ==, fds_before);

        /* Read on the other end this time. */
        g_assert_cmpint(ipc_reader_new(&peer), ==, 0);
        g_assert_cmpint(ipc_reader_receive(peer, f->sv[0]), >, 0);
        g_assert_cmpint(ipc_reader_next(peer, &got, &fd), ==, 1);
        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(fstat(fd, &a), ==, 0);
        g_assert_cmpint(fstat(memfd, &b), ==, 0);
        g_assert_cmpuint(a.st_ino, ==, b.st_ino);
        g_assert_cmpint(fcntl(fd, F_GETFD), ==, FD_CLOEXEC);
        g_assert_cmpuint(got->request_id, ==, 5);
        g_assert_true(got->msg_invoke_method_reply->success);
        g_assert_true(got->msg_invoke_method_reply->has_more);
        {
                ProtobufCMessage *m = NULL;
                const ProtobufCBinaryData *bytes = &got->msg_invoke_method_reply->reply_proto;
                g_assert_cmpint(ipc_message_unpack(&tracebus__initialize_connection_response__descriptor,
                                                   bytes->data, bytes->len, &m), ==, 0);
                g_assert_true(((Tracebus__InitializeConnectionResponse *) m)->direct_smb_patching_supported);
                ipc_message_free(m);
        }
        ipc_frame_free(got);
        ipc_reader_free(peer);
        close(fd);
        close(memfd);
}

/* Frames arrive a byte at a time: nothing comes out until the last byte; zero-length
 * frames are skipped; several frames in one read all come out. */
static void test_partial_frames(Fixture *f, gconstpointer data) {
        static const uint8_t empty_frame[4] = {};
        Tracebus__IPCFrame *got;
        int fd;

        for (size_t i = 0; i < sizeof(sdk_bind_service); i++) {
                g_assert_cmpint(ipc_reader_next(f->reader, &got, &fd), ==, 0);
                g_assert_cmpint(ipc_reader_feed(f->reader, sdk_bind_service + i, 1), ==, 0);
        }
        g_assert_cmpint(ipc_reader_feed(f->reader, empty_frame, sizeof(empty_frame)), ==, 0);
        g_assert_cmpint(ipc_reader_feed(f->reader, sdk_bind_service, sizeof(sdk_bind_service)), ==, 0);
        for (int n = 0; n < 2; n++) {
                g_assert_cmpint(ipc_reader_next(f->reader, &got, &fd), ==, 1);
                g_assert_cmpstr(got->msg_bind_service->service_name, ==, "ProducerPort");
                ipc_frame_free(got);
        }
        g_assert_cmpint(ipc_reader_next(f->reader, &got, &fd), ==, 0);
        g_assert_cmpuint(ipc_reader_buffered(f->reader), ==, 0);
}

/* A frame cut short by the end of the connection is never returned. */
static void test_truncated_at_eof(Fixture *f, gconstpointer data) {
        Tracebus__IPCFrame *got;
        int fd;

        g_assert_cmpint(write(f->sv[1], sdk_bind_service, sizeof(sdk_bind_service) - 1), >, 0);
        shutdown(f->sv[1], SHUT_WR);
        g_assert_cmpint(ipc_reader_receive(f->reader, f->sv[0]), ==, sizeof(sdk_bind_service) - 1);
        g_assert_cmpint(ipc_reader_next(f->reader, &got, &fd), ==, 0);
        g_assert_cmpint(ipc_reader_receive(f->reader, f->sv[0]), ==, -ECONNRESET);
        g_assert_cmpint(ipc_reader_next(f->reader, &got, &fd), ==, 0);
}

/* A length prefix over the cap fails as soon as the prefix is in, before any of its
 * payload is waited for or buffered; one exactly at the cap is a frame like any other. */
static void test_frame_size_cap(Fixture *f, gconstpointer data) {
        static const uint8_t huge[] = { 0xff, 0xff, 0xff, 0xff, 0x10, 0x01 };
        uint32_t over = IPC_FRAME_MAX - IPC_FRAME_HEADER_SIZE + 1;
        uint8_t prefix[4] = { over, over >> 8, over >> 16, over >> 24 };
        g_autoptr(GByteArray) max = g_byte_array_new();
        Tracebus__IPCFrame *got;
        IpcReader *second;
        int fd;

        g_assert_cmpint(write(f->sv[1], huge, sizeof(huge)), ==, sizeof(huge));
        g_assert_cmpint(ipc_reader_receive(f->reader, f->sv[0]), ==, -EMSGSIZE);
        g_assert_cmpint(ipc_reader_next(f->reader, &got, &fd), ==, -EMSGSIZE);
        g_assert_cmpstr(ipc_error_to_string(-EMSGSIZE), ==, "frame larger than the IPC frame limit");

        g_assert_cmpint(ipc_reader_new(&second), ==, 0);
        g_assert_cmpint(ipc_reader_feed(second, prefix, sizeof(prefix)), ==, -EMSGSIZE);
        ipc_reader_free(second);

        /* data_for_testing (field 1) filling the frame to exactly IPC_FRAME_MAX. */
        {
                size_t payload = IPC_FRAME_MAX - IPC_FRAME_HEADER_SIZE, bytes = payload - 4;
                uint8_t head[] = { payload, payload >> 8, payload >> 16, payload >> 24,
                                   0x0a, (bytes & 0x7f) | 0x80, ((bytes >> 7) & 0x7f) | 0x80, bytes >> 14 };
                g_byte_array_append(max, head, sizeof(head));
                g_byte_array_set_size(max, IPC_FRAME_MAX);
                memset(max->data + sizeof(head), 'x', IPC_FRAME_MAX - sizeof(head));
        }
        g_assert_cmpint(ipc_reader_new(&second), ==, 0);
        g_assert_cmpint(ipc_reader_feed(second, max->data, max->len), ==, 0);
        g_assert_cmpint(ipc_reader_next(second, &got, &fd), ==, 1);
        g_assert_cmpuint(got->n_data_for_testing, ==, 1);
        g_assert_cmpuint(got->data_for_testing[0].len, ==, IPC_FRAME_MAX - 8);
        ipc_frame_free(got);
        ipc_reader_free(second);
}

static void send_fds(int socket, const int *fds, size_t n, const void *bytes, size_t size) {
        uint8_t control[CMSG_SPACE(sizeof(int) * 4)] = {};
        struct iovec iov = { (void *) bytes, size };
        struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control,
                              .msg_controllen = CMSG_SPACE(sizeof(int) * n) };
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * n);
        memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
        g_assert_cmpint(sendmsg(socket, &msg, 0), ==, (ssize_t) size);
}

/* Three descriptors with one frame: the connection fails and none of them stays open
 * here; then two descriptors in two messages before a frame ends fail the same way. */
static void test_too_many_fds(Fixture *f, gconstpointer data) {
        int fds[3] = { dup(0), dup(0), dup(0) };
        unsigned before;
        IpcReader *second;

        send_fds(f->sv[1], fds, 3, sdk_bind_service, sizeof(sdk_bind_service));
        before = count_open_fds();
        g_assert_cmpint(ipc_reader_receive(f->reader, f->sv[0]), ==, -ETOOMANYREFS);
        g_assert_cmpuint(count_open_fds(), ==, before);

        g_assert_cmpint(ipc_reader_new(&second), ==, 0);
        send_fds(f->sv[1], fds, 1, sdk_bind_service, 2);
        send_fds(f->sv[1], fds + 1, 1, sdk_bind_service + 2, 2);
        g_assert_cmpint(ipc_reader_receive(second, f->sv[0]), ==, 2);
        g_assert_cmpint(ipc_reader_receive(second, f->sv[0]), ==, -ETOOMANYREFS);
        ipc_reader_free(second);
        g_assert_cmpuint(count_open_fds(), ==, before);
        for (int i = 0; i < 3; i++)
                close(fds[i]);
}

/* Bytes that are not an IPCFrame are dropped, the descriptor that came with them closed,
 * and the frame after them reads normally. */
static void test_garbage_frame(Fixture *f, gconstpointer data) {
        static const uint8_t garbage[] = { 0x05, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff };
        int memfd = memfd_create("x", MFD_CLOEXEC), fd;
        Tracebus__IPCFrame *got;
        unsigned before;

        send_fds(f->sv[1], &memfd, 1, garbage, sizeof(garbage));
        g_assert_cmpint(write(f->sv[1], sdk_bind_service, sizeof(sdk_bind_service)), >, 0);
        close(memfd);
        before = count_open_fds();
        while (ipc_reader_buffered(f->reader) < sizeof(garbage) + sizeof(sdk_bind_service))
                g_assert_cmpint(ipc_reader_receive(f->reader, f->sv[0]), >, 0);
        g_assert_cmpuint(count_open_fds(), ==, before + 1);
        g_assert_cmpint(ipc_reader_next(f->reader, &got, &fd), ==, -EBADMSG);
        g_assert_cmpuint(count_open_fds(), ==, before);
        g_assert_cmpint(ipc_reader_next(f->reader, &got, &fd), ==, 1);
        g_assert_cmpint(fd, <, 0);
        g_assert_cmpstr(got->msg_bind_service->service_name, ==, "ProducerPort");
        ipc_frame_free(got);
}

/* A CommitData of empty chunk moves: 2 bytes each on the wire, far more unpacked. The
 * bounded allocator refuses a frame of them; a real-sized one unpacks. */
static void test_unpack_budget(void) {
        size_t n = (IPC_FRAME_MAX - 8) / 2;
        g_autofree uint8_t *bytes = g_malloc(n * 2);
        ProtobufCMessage *m = NULL;

        g_assert_cmpuint(n * (sizeof(Tracebus__CommitDataRequest__ChunksToMove) + sizeof(void *)), >,
                         IPC_UNPACK_MEMORY_MAX);
        for (size_t i = 0; i < n; i++) {
                bytes[2 * i] = 0x0a;
                bytes[2 * i + 1] = 0x00;
        }
        g_assert_cmpint(ipc_message_unpack(&tracebus__commit_data_request__descriptor, bytes, n * 2, &m), ==, -ENOMEM);
        g_assert_null(m);
        g_assert_cmpint(ipc_message_unpack(&tracebus__commit_data_request__descriptor, bytes, 2000, &m), ==, 0);
        g_assert_cmpuint(((Tracebus__CommitDataRequest *) m)->n_chunks_to_move, ==, 1000);
        ipc_message_free(m);
        g_assert_cmpint(ipc_message_unpack(&tracebus__commit_data_request__descriptor, (const uint8_t *) "\x0a\x05",
                                           2, &m), ==, -EBADMSG);
}

/* A peer that does not read: the queue stops at its cap in bytes, and a frame over the
 * frame limit is refused whole. */
static void test_output_queue_cap(Fixture *f, gconstpointer data) {
        g_autofree uint8_t *blob = g_malloc0(IPC_FRAME_MAX);
        ProtobufCBinaryData item = { IPC_FRAME_MAX / 2, blob };
        Tracebus__IPCFrame frame = TRACEBUS__IPCFRAME__INIT;
        size_t queued = 0;
        int r;

        frame.n_data_for_testing = 1;
        frame.data_for_testing = &item;
        while ((r = ipc_writer_queue(f->writer, &frame, -1)) == 0)
                queued++;
        g_assert_cmpint(r, ==, -ENOBUFS);
        g_assert_cmpuint(queued, ==, IPC_OUTPUT_QUEUE_MAX / (IPC_FRAME_MAX / 2 + 8));
        g_assert_cmpuint(ipc_writer_queued(f->writer), <=, IPC_OUTPUT_QUEUE_MAX);
        g_assert_cmpint(ipc_writer_flush(f->writer, f->sv[0]), ==, -EAGAIN);
        g_assert_cmpuint(ipc_writer_queued(f->writer), >, 0);

        item.len = IPC_FRAME_MAX;
        g_assert_cmpint(ipc_writer_queue(f->writer, &frame, -1), ==, -EMSGSIZE);
}

/* A peer that does not read its tiny replies: the queue stops at its cap in frames, far
 * under its cap in bytes, and takes frames again once the peer has read. */
static void test_output_frames_cap(Fixture *f, gconstpointer data) {
        Tracebus__IPCFrame frame = TRACEBUS__IPCFRAME__INIT;
        size_t queued = 0;
        int r;

        frame.has_request_id = true;
        frame.request_id = 1;
        while ((r = ipc_writer_queue(f->writer, &frame, -1)) == 0)
                queued++;
        g_assert_cmpint(r, ==, -ENOBUFS);
        g_assert_cmpuint(queued, ==, IPC_OUTPUT_FRAMES_MAX);
        g_assert_cmpuint(ipc_writer_queued(f->writer), <, IPC_OUTPUT_QUEUE_MAX / 64);
        g_assert_cmpint(ipc_writer_flush(f->writer, f->sv[0]), ==, 0);
        g_assert_cmpuint(ipc_writer_queued(f->writer), ==, 0);
        g_assert_cmpint(ipc_writer_queue(f->writer, &frame, -1), ==, 0);
}

static void test_method_table(void) {
        static const char *const names[] = {
                "InitializeConnection", "RegisterDataSource", "UnregisterDataSource", "CommitData",
                "GetAsyncCommand", "RegisterTraceWriter", "UnregisterTraceWriter",
                "NotifyDataSourceStarted", "NotifyDataSourceStopped", "ActivateTriggers", "Sync",
                "UpdateDataSource",
        };

        for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
                g_assert_cmpstr(producer_port_method_to_string((ProducerPortMethod) (i + 1)), ==, names[i]);
                g_assert_cmpint(producer_port_method_from_string(names[i]), ==, (int) i + 1);
                g_assert_nonnull(producer_port_request_descriptor((ProducerPortMethod) (i + 1)));
        }
        g_assert_cmpint(producer_port_method_from_string("Teardown"), ==, -EINVAL);
        g_assert_null(producer_port_method_to_string(0));
        g_assert_null(producer_port_method_to_string(_PRODUCER_PORT_METHOD_MAX));
}

/* BindServiceReply lists every method by name and id; another service name is refused
 * with an empty reply. */
static void test_bind_reply(Fixture *f, gconstpointer data) {
        Tracebus__IPCFrame *got;
        int fd;

        g_assert_cmpint(producer_port_queue_bind_reply(f->writer, 1, "ProducerPort"), ==, 1);
        g_assert_cmpint(producer_port_queue_bind_reply(f->writer, 2, "ConsumerPort"), ==, 0);
        g_assert_cmpint(ipc_writer_flush(f->writer, f->sv[1]), ==, 0);

        got = receive_frame(f, &fd);
        g_assert_cmpuint(got->request_id, ==, 1);
        g_assert_true(got->msg_bind_service_reply->success);
        g_assert_cmpuint(got->msg_bind_service_reply->service_id, ==, PRODUCER_PORT_SERVICE_ID);
        g_assert_cmpuint(got->msg_bind_service_reply->n_methods, ==, _PRODUCER_PORT_METHOD_MAX - 1);
        for (size_t i = 0; i < got->msg_bind_service_reply->n_methods; i++) {
                const Tracebus__IPCFrame__BindServiceReply__MethodInfo *m = got->msg_bind_service_reply->methods[i];
                g_assert_cmpint(producer_port_method_from_string(m->name), ==, (int) m->id);
        }
        ipc_frame_free(got);

        got = receive_frame(f, &fd);
        g_assert_cmpuint(got->request_id, ==, 2);
        g_assert_cmpint(got->msg_case, ==, TRACEBUS__IPCFRAME__MSG_MSG_BIND_SERVICE_REPLY);
        g_assert_false(got->msg_bind_service_reply->has_success);
        g_assert_cmpuint(got->msg_bind_service_reply->n_methods, ==, 0);
        ipc_frame_free(got);
}

static void test_unpack_call(void) {
        Tracebus__NotifyDataSourceStartedRequest req = TRACEBUS__NOTIFY_DATA_SOURCE_STARTED_REQUEST__INIT;
        Tracebus__IPCFrame__InvokeMethod call = TRACEBUS__IPCFRAME__INVOKE_METHOD__INIT;
        uint8_t args[16];
        ProducerPortMethod method;
        ProtobufCMessage *m = NULL;

        req.has_data_source_id = true;
        req.data_source_id = 77;
        call.args_proto = (ProtobufCBinaryData) { protobuf_c_message_pack(&req.base, args), args };
        call.service_id = PRODUCER_PORT_SERVICE_ID;
        call.method_id = PRODUCER_PORT_NOTIFY_DATA_SOURCE_STARTED;
        g_assert_cmpint(producer_port_unpack_call(&call, &method, &m), ==, 0);
        g_assert_cmpint(method, ==, PRODUCER_PORT_NOTIFY_DATA_SOURCE_STARTED);
        g_assert_cmpuint(((Tracebus__NotifyDataSourceStartedRequest *) m)->data_source_id, ==, 77);
        ipc_message_free(m);

        call.service_id = 2;
        g_assert_cmpint(producer_port_unpack_call(&call, &method, &m), ==, -ESRCH);
        call.service_id = PRODUCER_PORT_SERVICE_ID;
        call.method_id = 0;
        g_assert_cmpint(producer_port_unpack_call(&call, &method, &m), ==, -EOPNOTSUPP);
        call.method_id = _PRODUCER_PORT_METHOD_MAX;
        g_assert_cmpint(producer_port_unpack_call(&call, &method, &m), ==, -EOPNOTSUPP);
        call.method_id = PRODUCER_PORT_NOTIFY_DATA_SOURCE_STARTED;
        call.args_proto = (ProtobufCBinaryData) { 3, (uint8_t *) "\x08\xff\xff" };
        g_assert_cmpint(producer_port_unpack_call(&call, &method, &m), ==, -EBADMSG);
}

#define ADD(name, func) g_test_add(name, Fixture, NULL, fixture_setup, func, fixture_teardown)

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        ADD("/producer-ipc/sdk-bytes", test_sdk_bytes);
        ADD("/producer-ipc/round-trip-fd", test_round_trip_fd);
        ADD("/producer-ipc/partial-frames", test_partial_frames);
        ADD("/producer-ipc/truncated-at-eof", test_truncated_at_eof);
        ADD("/producer-ipc/frame-size-cap", test_frame_size_cap);
        ADD("/producer-ipc/too-many-fds", test_too_many_fds);
        ADD("/producer-ipc/garbage-frame", test_garbage_frame);
        ADD("/producer-ipc/output-queue-cap", test_output_queue_cap);
        ADD("/producer-ipc/output-frames-cap", test_output_frames_cap);
        ADD("/producer-ipc/bind-reply", test_bind_reply);
        g_test_add_func("/producer-ipc/unpack-budget", test_unpack_budget);
        g_test_add_func("/producer-ipc/method-table", test_method_table);
        g_test_add_func("/producer-ipc/unpack-call", test_unpack_call);
        return g_test_run();
}
