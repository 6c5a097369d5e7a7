/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "producer.pb-c.h"

/*
 * The IPC layer of Perfetto's producer socket, as the service sees it: frames (a 32-bit
 * little-endian length, then one IPCFrame) read from and written to a nonblocking Unix
 * stream socket, file descriptors passed with SCM_RIGHTS, and the ProducerPort service's
 * method table. Every byte a producer sends is untrusted: lengths are checked against
 * their caps before anything is buffered or allocated, and messages are unpacked with a
 * bounded allocator.
 *
 * Errors are negative errnos; these name what went wrong with a peer, and
 * ipc_error_to_string() says it in words. After any of them but -EAGAIN and -EBADMSG the
 * connection is to be closed, as Perfetto's own service does.
 *   -EMSGSIZE      a frame's length prefix is over IPC_FRAME_MAX
 *   -ETOOMANYREFS  more file descriptors than IPC_FDS_PER_FRAME_MAX before a frame ended,
 *                  or a control message cut short
 *   -EBADMSG       a frame that is not an IPCFrame (dropped; the stream stays in step)
 *   -ENOBUFS       the output queue would grow over IPC_OUTPUT_QUEUE_MAX or
 *                  IPC_OUTPUT_FRAMES_MAX
 *   -ECONNRESET    the peer closed the connection
 */

/* One frame, its 4-byte length prefix included. Perfetto's client and service both drop
 * the connection over this (their receive buffer is this size), so no reply of ours may
 * be larger either. */
#define IPC_FRAME_MAX (128u * 1024u)
#define IPC_FRAME_HEADER_SIZE 4u

/* File descriptors that may come with one frame. Only two messages ever carry one, a
 * single fd each: InitializeConnection with a producer-provided buffer, and the
 * setup_tracing command with the service's buffer. */
#define IPC_FDS_PER_FRAME_MAX 1u

/* Memory one unpacked message may take. protobuf-c's structs are larger than the wire
 * bytes: a full frame of real requests (a CommitData of chunk moves, 6 to 8 bytes each)
 * takes about twelve times its size, which fits; a frame made only to inflate (empty
 * submessages of 2 bytes, forty times their size) is refused instead of built. */
#define IPC_UNPACK_MEMORY_MAX (4u * 1024u * 1024u)

/* Bytes queued for one peer before it is dropped as not reading its socket. Perfetto's
 * service gives a producer 10 ms to take each frame; eight full frames is as much as a
 * burst of commands ever needs. */
#define IPC_OUTPUT_QUEUE_MAX (8u * IPC_FRAME_MAX)

/* Requests of one connection waiting for a reply from the service. The SDK keeps at most
 * InitializeConnection, the GetAsyncCommand stream, one RegisterDataSource or
 * UpdateDataSource per data source type (32, the SDK's own limit), a Sync and a few
 * CommitData with flush callbacks in flight; twice that is still small. */
#define IPC_OUTSTANDING_REPLIES_MAX 128u

/* Frames queued for one peer, whatever their size: each costs the queue its own header
 * and allocation, so a peer that sends many tiny requests and reads none of their tiny
 * replies is bounded by their number too. A reply the socket would not take is one the
 * peer has not read, so no more may wait than requests may be outstanding. */
#define IPC_OUTPUT_FRAMES_MAX IPC_OUTSTANDING_REPLIES_MAX

/* Data source types one producer may register. The SDK allows 32 per process; beyond 64
 * a registration is refused, so a producer cannot grow the service's tables at will. */
#define PRODUCER_DATA_SOURCES_MAX 64u

/* The service's name on the wire (the proto service's name) and the id we give it. */
#define PRODUCER_PORT_SERVICE_NAME "ProducerPort"
#define PRODUCER_PORT_SERVICE_ID 1u

const char *ipc_error_to_string(int error);

/* ---- Reading frames ---- */

typedef struct IpcReader IpcReader;

int ipc_reader_new(IpcReader **ret);
IpcReader *ipc_reader_free(IpcReader *reader);

/* One recvmsg() from @fd into the reader's buffer, file descriptors included (received
 * close-on-exec). Returns the bytes read, -EAGAIN when none are ready, -ECONNRESET at end
 * of stream, -ETOOMANYREFS or -EMSGSIZE (see above), or recvmsg()'s error. Take the
 * frames with ipc_reader_next() until it returns 0 before receiving again: a buffer full
 * of frames not taken is -ENOBUFS. */
int ipc_reader_receive(IpcReader *reader, int fd);

/* Appends @size bytes as if received (the tests, and producers without a socket). */
int ipc_reader_feed(IpcReader *reader, const void *data, size_t size);

/* The next whole frame. Returns 1 with *@ret_frame (free it with ipc_frame_free()) and
 * *@ret_fd, the descriptor received with it or -EBADF (the caller owns it); 0 when the
 * buffer holds no whole frame yet; -EMSGSIZE; -EBADMSG for a frame that did not unpack,
 * or -ENOMEM for one that would take more than IPC_UNPACK_MEMORY_MAX unpacked: either is
 * consumed (with a descriptor that came with it), so the caller may call again. Frames of
 * length 0 are skipped. */
int ipc_reader_next(IpcReader *reader, Tracebus__IPCFrame **ret_frame, int *ret_fd);

/* Bytes received and not yet returned as frames. */
size_t ipc_reader_buffered(const IpcReader *reader);

Tracebus__IPCFrame *ipc_frame_free(Tracebus__IPCFrame *frame);

/* Unpacks @size bytes as @descriptor's message with the bounded allocator
 * (IPC_UNPACK_MEMORY_MAX). -EBADMSG when they do not parse, -ENOMEM when they would
 * take more memory. Free the result with ipc_message_free(). */
int ipc_message_unpack(const ProtobufCMessageDescriptor *descriptor, const uint8_t *data,
                       size_t size, ProtobufCMessage **ret);
void ipc_message_free(ProtobufCMessage *message);

/* ---- Writing frames ---- */

typedef struct IpcWriter IpcWriter;

int ipc_writer_new(IpcWriter **ret);
IpcWriter *ipc_writer_free(IpcWriter *writer);

/* Packs @frame with its length prefix at the end of the output queue. @fd, if not -1, is
 * duplicated and sent with the frame's first bytes. -EMSGSIZE for a frame over
 * IPC_FRAME_MAX, -ENOBUFS when the queue would pass IPC_OUTPUT_QUEUE_MAX bytes or
 * IPC_OUTPUT_FRAMES_MAX frames; the queue is unchanged then. */
int ipc_writer_queue(IpcWriter *writer, const Tracebus__IPCFrame *frame, int fd);

/* Sends what is queued without blocking (MSG_DONTWAIT, MSG_NOSIGNAL). Returns 0 when the
 * queue is empty, -EAGAIN when the socket is full (wait for POLLOUT), or sendmsg()'s
 * error. */
int ipc_writer_flush(IpcWriter *writer, int fd);

size_t ipc_writer_queued(const IpcWriter *writer);

/* An InvokeMethodReply to @request_id carrying @reply (NULL: none), with @fd or -1. */
int ipc_writer_queue_reply(IpcWriter *writer, uint64_t request_id, bool success,
                           bool has_more, const ProtobufCMessage *reply, int fd);

/* ---- The ProducerPort service ---- */

/* The methods, numbered as BindServiceReply lists them: 1-based, in the order of
 * Perfetto's service definition. */
typedef enum ProducerPortMethod {
        PRODUCER_PORT_INITIALIZE_CONNECTION = 1,
        PRODUCER_PORT_REGISTER_DATA_SOURCE,
        PRODUCER_PORT_UNREGISTER_DATA_SOURCE,
        PRODUCER_PORT_COMMIT_DATA,
        PRODUCER_PORT_GET_ASYNC_COMMAND,
        PRODUCER_PORT_REGISTER_TRACE_WRITER,
        PRODUCER_PORT_UNREGISTER_TRACE_WRITER,
        PRODUCER_PORT_NOTIFY_DATA_SOURCE_STARTED,
        PRODUCER_PORT_NOTIFY_DATA_SOURCE_STOPPED,
        PRODUCER_PORT_ACTIVATE_TRIGGERS,
        PRODUCER_PORT_SYNC,
        PRODUCER_PORT_UPDATE_DATA_SOURCE,
        _PRODUCER_PORT_METHOD_MAX,
        _PRODUCER_PORT_METHOD_INVALID = -22, /* -EINVAL */
} ProducerPortMethod;

const char *producer_port_method_to_string(ProducerPortMethod method);
ProducerPortMethod producer_port_method_from_string(const char *name);

/* The method's request message, what InvokeMethod.args_proto holds. */
const ProtobufCMessageDescriptor *producer_port_request_descriptor(ProducerPortMethod method);

/* Answers a BindService: for PRODUCER_PORT_SERVICE_NAME, success with our service id and
 * every method; for any other name, an empty reply, which a client takes as refused.
 * Returns 1 when bound, 0 when refused, or the writer's error. */
int producer_port_queue_bind_reply(IpcWriter *writer, uint64_t request_id, const char *service_name);

/* Checks an InvokeMethod against the table: 0 with *@ret_method and *@ret_args (free with
 * ipc_message_free()), -ESRCH for another service id, -EOPNOTSUPP for a method id out of
 * range, -EBADMSG or -ENOMEM when the arguments do not unpack. */
int producer_port_unpack_call(const Tracebus__IPCFrame__InvokeMethod *call,
                              ProducerPortMethod *ret_method, ProtobufCMessage **ret_args);
