/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* One producer's connection: frames read and answered on the event loop. The socket is
 * nonblocking; what cannot be written at once waits in the writer's bounded queue, and a
 * producer that lets it fill up is dropped rather than waited for. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "producers.h"

/* The longest producer name kept (the SDK sends argv[0]). */
#define PRODUCER_NAME_MAX 256u

int producer_update_events(Producer *producer) {
        uint32_t events = EPOLLIN;

        if (ipc_writer_queued(producer->writer) > 0)
                events |= EPOLLOUT;
        return sd_event_source_set_io_events(producer->io, events);
}

void producer_close(Producer *producer, const char *reason, int error) {
        Producers *p = producer->owner;

        if (reason)
                log_info_errno(error, "Producer %" PRIu64 " (%s, UID %u, PID %d) disconnected: %s.", producer->id,
                               producer->name ?: "unnamed", (unsigned) producer->uid, (int) producer->pid, reason);
        if (producer->prev)
                producer->prev->next = producer->next;
        else
                p->list = producer->next;
        if (producer->next)
                producer->next->prev = producer->prev;
        p->n_producers--;
        producer_tracing_end(producer);
        if (p->sink && p->sink->gone)
                p->sink->gone(producer, p->sink_userdata);
        sd_event_source_disable_unref(producer->io);
        sd_event_source_disable_unref(producer->handshake_timer);
        safe_close(producer->fd);
        ipc_reader_free(producer->reader);
        ipc_writer_free(producer->writer);
        producer_free_sources(producer);
        free(producer->name);
        free(producer);
}

/* The name as shown to users and admins: printable ASCII only, bounded. */
static char *sanitized_name(const char *name) {
        size_t n = strnlen(name, PRODUCER_NAME_MAX);
        char *copy = strndup(name, n);

        if (!copy)
                return NULL;
        for (char *c = copy; *c; c++)
                if (*c < 0x20 || *c > 0x7e)
                        *c = '?';
        return copy;
}

static int on_initialize(Producer *producer, uint64_t request_id, const Tracebus__InitializeConnectionRequest *req) {
        Tracebus__InitializeConnectionResponse response = TRACEBUS__INITIALIZE_CONNECTION_RESPONSE__INIT;

        if (producer->name)
                return -EPROTO;
        producer->name = sanitized_name(req->producer_name ?: "");
        if (!producer->name)
                return -ENOMEM;
        producer->handshake_timer = sd_event_source_disable_unref(producer->handshake_timer);
        if (req->has_shared_memory_size_hint_bytes)
                producer->smb_size_hint = req->shared_memory_size_hint_bytes;
        return ipc_writer_queue_reply(producer->writer, request_id, true, false, &response.base, -1);
}

static int reply_empty(Producer *producer, uint64_t request_id, bool drop_reply) {
        Tracebus__ProducerPortEmptyReply empty = TRACEBUS__PRODUCER_PORT_EMPTY_REPLY__INIT;

        if (drop_reply)
                return 0;
        return ipc_writer_queue_reply(producer->writer, request_id, true, false, &empty.base, -1);
}

/* A registration refused is answered with its reason, as Perfetto's service does; the
 * connection stays. */
static int on_register(Producer *producer, uint64_t request_id, const Tracebus__DataSourceDescriptor *d,
                       bool update, bool drop_reply) {
        Tracebus__RegisterDataSourceResponse response = TRACEBUS__REGISTER_DATA_SOURCE_RESPONSE__INIT;
        int r;

        r = producer_register_source(producer, d, update);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                log_debug_errno(r, "Producer %" PRIu64 ": data source %s refused: %m", producer->id,
                                d && d->name ? d->name : "without a name");
        if (r >= 0 && producer->owner->sink && producer->owner->sink->source_registered)
                producer->owner->sink->source_registered(producer, d->name, producer->owner->sink_userdata);
        if (drop_reply)
                return 0;
        if (update)
                return reply_empty(producer, request_id, false);
        if (r < 0)
                response.error = (char *) (r == -EUSERS ? "too many data sources for this user" :
                                           r == -EEXIST ? "data source already registered" : "invalid data source");
        return ipc_writer_queue_reply(producer->writer, request_id, true, false, &response.base, -1);
}

static int on_call(Producer *producer, uint64_t request_id, bool drop_reply, ProducerPortMethod method,
                   ProtobufCMessage *args) {
        switch (method) {
        case PRODUCER_PORT_INITIALIZE_CONNECTION:
                return on_initialize(producer, request_id, (Tracebus__InitializeConnectionRequest *) args);
        case PRODUCER_PORT_GET_ASYNC_COMMAND:
                /* Kept open: the commands of sessions will come on it. One per connection. */
                if (producer->has_async)
                        return -EPROTO;
                producer->has_async = true;
                producer->async_request_id = request_id;
                return 0;
        case PRODUCER_PORT_REGISTER_DATA_SOURCE:
                return on_register(producer, request_id,
                                   ((Tracebus__RegisterDataSourceRequest *) args)->data_source_descriptor, false, drop_reply);
        case PRODUCER_PORT_UPDATE_DATA_SOURCE:
                return on_register(producer, request_id,
                                   ((Tracebus__UpdateDataSourceRequest *) args)->data_source_descriptor, true, drop_reply);
        case PRODUCER_PORT_UNREGISTER_DATA_SOURCE:
                (void) producer_unregister_source(producer, ((Tracebus__UnregisterDataSourceRequest *) args)->data_source_name);
                return reply_empty(producer, request_id, drop_reply);
        case PRODUCER_PORT_COMMIT_DATA:
        case PRODUCER_PORT_REGISTER_TRACE_WRITER:
        case PRODUCER_PORT_UNREGISTER_TRACE_WRITER:
        case PRODUCER_PORT_NOTIFY_DATA_SOURCE_STARTED:
        case PRODUCER_PORT_NOTIFY_DATA_SOURCE_STOPPED:
        case PRODUCER_PORT_ACTIVATE_TRIGGERS: {
                int r = producer_on_tracing_call(producer, method, args);

                return r < 0 ? r : reply_empty(producer, request_id, drop_reply);
        }
        case PRODUCER_PORT_SYNC:
                /* Every request before it was served in order: nothing to wait for. */
                return reply_empty(producer, request_id, drop_reply);
        default:
                return ipc_writer_queue_reply(producer->writer, request_id, false, false, NULL, -1);
        }
}

static int on_invoke(Producer *producer, const Tracebus__IPCFrame *frame) {
        ProducerPortMethod method;
        ProtobufCMessage *args = NULL;
        int r;

        if (!producer->bound)
                return -EPROTO;
        r = producer_port_unpack_call(frame->msg_invoke_method, &method, &args);
        if (r == -ENOMEM || r == -EBADMSG)
                return r;
        if (r < 0)
                return ipc_writer_queue_reply(producer->writer, frame->request_id, false, false, NULL, -1);
        /* Only the handshake may come before InitializeConnection. */
        if (!producer->name && method != PRODUCER_PORT_INITIALIZE_CONNECTION && method != PRODUCER_PORT_GET_ASYNC_COMMAND &&
            method != PRODUCER_PORT_SYNC)
                r = -EPROTO;
        else
                r = on_call(producer, frame->request_id, frame->msg_invoke_method->drop_reply, method, args);
        ipc_message_free(args);
        return r;
}

static int on_frame(Producer *producer, const Tracebus__IPCFrame *frame) {
        int r;

        switch (frame->msg_case) {
        case TRACEBUS__IPCFRAME__MSG_MSG_BIND_SERVICE:
                r = producer_port_queue_bind_reply(producer->writer, frame->request_id,
                                                   frame->msg_bind_service->service_name);
                if (r > 0)
                        producer->bound = true;
                return r < 0 ? r : 0;
        case TRACEBUS__IPCFRAME__MSG_MSG_INVOKE_METHOD:
                return on_invoke(producer, frame);
        default:
                /* Replies and errors are the service's to send, not a producer's. */
                return -EPROTO;
        }
}

static const char *close_reason(int r) {
        switch (r) {
        case -ECONNRESET:
                return NULL;                 /* the app went away: not worth a line */
        case -EPROTO:
                return "a request out of the protocol's order";
        case -EUSERS:
                return "over this user's limit";
        default:
                return ipc_error_to_string(r);
        }
}

/* Sends each reply as soon as it is made, so that the writer's queue only holds what the
 * socket would not take: a producer that reads its replies never comes near the queue's
 * bounds, however many requests one read brought, and one that does not read reaches
 * them and is closed. */
static int flush_replies(Producer *producer) {
        int r;

        if (ipc_writer_queued(producer->writer) == 0)
                return 0;
        r = ipc_writer_flush(producer->writer, producer->fd);
        return r == -EAGAIN ? 0 : r;
}

/* Serves the frames received; a frame's descriptor is not wanted yet and is closed. */
static int serve_frames(Producer *producer) {
        Tracebus__IPCFrame *frame;
        int r, fd;

        for (;;) {
                r = ipc_reader_next(producer->reader, &frame, &fd);
                if (r <= 0)
                        return r;
                safe_close(fd);
                r = on_frame(producer, frame);
                ipc_frame_free(frame);
                if (r >= 0)
                        r = flush_replies(producer);
                if (r < 0)
                        return r;
        }
}

static int serve_input(Producer *producer) {
        int r, received;

        /* One read per wakeup: a producer that sends without end cannot hold the loop. */
        received = ipc_reader_receive(producer->reader, producer->fd);
        if (received == -EAGAIN)
                return 0;
        /* Frames already received are served before the end of the connection is. */
        r = serve_frames(producer);
        if (r < 0)
                return r;
        return received < 0 ? received : 0;
}

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Producer *producer = ASSERT_PTR(userdata);
        int r = 0;

        if (revents & (EPOLLIN | EPOLLHUP | EPOLLERR))
                r = serve_input(producer);
        if (r >= 0) {
                r = ipc_writer_flush(producer->writer, producer->fd);
                if (r == -EAGAIN)
                        r = 0;
        }
        if (r >= 0)
                r = producer_update_events(producer);
        if (r < 0) {
                const char *reason = close_reason(r);

                if (!reason)
                        log_debug("Producer %" PRIu64 " closed its connection.", producer->id);
                producer_close(producer, reason, r);
        }
        return 0;
}

static int on_handshake_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        Producer *producer = ASSERT_PTR(userdata);

        producer_close(producer, producer->bound ? "no InitializeConnection in time" : "no BindService in time",
                       -ETIMEDOUT);
        return 0;
}

/* A connection has this long to bind and initialize before it is closed. */
static int arm_handshake_timer(Producer *producer, sd_event *event, uint64_t timeout_usec) {
        int r;

        r = sd_event_add_time_relative(event, &producer->handshake_timer, CLOCK_MONOTONIC, timeout_usec, 0,
                                       on_handshake_timeout, producer);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(producer->handshake_timer, "producer-handshake");
        return 0;
}

int producer_new(Producers *owner, int fd, uid_t uid, pid_t pid, Producer **ret) {
        Producer *producer = calloc(1, sizeof(*producer));
        int r;

        if (!producer)
                return -ENOMEM;
        producer->fd = -EBADF;
        producer->smb_fd = -EBADF;
        r = ipc_reader_new(&producer->reader);
        if (r >= 0)
                r = ipc_writer_new(&producer->writer);
        if (r >= 0)
                r = sd_event_add_io(owner->event, &producer->io, fd, EPOLLIN, on_io, producer);
        if (r >= 0)
                r = arm_handshake_timer(producer, owner->event, owner->limits.handshake_timeout_usec);
        if (r < 0) {
                sd_event_source_disable_unref(producer->handshake_timer);
                sd_event_source_disable_unref(producer->io);
                ipc_reader_free(producer->reader);
                ipc_writer_free(producer->writer);
                free(producer);
                return r;
        }
        (void) sd_event_source_set_description(producer->io, "producer");
        producer->owner = owner;
        producer->fd = fd;
        producer->uid = uid;
        producer->pid = pid;
        producer->id = ++owner->last_id;
        producer->next = owner->list;
        if (owner->list)
                owner->list->prev = producer;
        owner->list = producer;
        owner->n_producers++;
        *ret = producer;
        return 0;
}
