/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "producer-server.h"

#define SERVER_SMB_SIZE SMB_SIZE_DEFAULT
#define SERVER_PAGE_SIZE SMB_PAGE_SIZE_MIN
#define SERVER_TARGET_BUFFER 1

ProducerServer *producer_server_new(void) {
        ProducerServer *s = g_new0(ProducerServer, 1);
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        g_autoptr(GError) error = NULL;

        s->dir = g_dir_make_tmp("tb-producer-XXXXXX", &error);
        g_assert_no_error(error);
        s->socket_path = g_build_filename(s->dir, "producer.sock", NULL);
        g_assert_cmpuint(strlen(s->socket_path), <, sizeof(sa.sun_path));
        strcpy(sa.sun_path, s->socket_path);
        s->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        g_assert_cmpint(s->listen_fd, >=, 0);
        g_assert_cmpint(bind(s->listen_fd, (struct sockaddr *) &sa, sizeof(sa)), ==, 0);
        g_assert_cmpint(listen(s->listen_fd, SOMAXCONN), ==, 0);
        s->conn_fd = -1;
        s->smb_fd = -1;
        g_assert_cmpint(ipc_reader_new(&s->reader), ==, 0);
        g_assert_cmpint(ipc_writer_new(&s->writer), ==, 0);
        g_assert_cmpint(smb_reassembler_new(&s->reassembler), ==, 0);
        s->descriptors = g_ptr_array_new_with_free_func((GDestroyNotify) ipc_message_free);
        s->started = g_array_new(FALSE, FALSE, sizeof(uint64_t));
        s->stopped = g_array_new(FALSE, FALSE, sizeof(uint64_t));
        s->writers = g_array_new(FALSE, FALSE, sizeof(uint32_t));
        s->packets = g_ptr_array_new_with_free_func((GDestroyNotify) g_bytes_unref);
        return s;
}

void producer_server_free(ProducerServer *s) {
        if (!s)
                return;
        smb_unmap(&s->smb);
        if (s->smb_fd >= 0)
                close(s->smb_fd);
        if (s->conn_fd >= 0)
                close(s->conn_fd);
        close(s->listen_fd);
        ipc_reader_free(s->reader);
        ipc_writer_free(s->writer);
        smb_reassembler_free(s->reassembler);
        g_ptr_array_unref(s->descriptors);
        g_array_unref(s->started);
        g_array_unref(s->stopped);
        g_array_unref(s->writers);
        g_ptr_array_unref(s->packets);
        g_unlink(s->socket_path);
        g_rmdir(s->dir);
        g_free(s->socket_path);
        g_free(s->dir);
        g_free(s->producer_name);
        g_free(s);
}

/* The apps run until killed: if the test dies first, they go with it. */
void producer_server_child_setup(gpointer data) {
        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
}

GPid producer_server_spawn(ProducerServer *s, const char *const *argv) {
        g_auto(GStrv) env = g_environ_setenv(g_get_environ(), "PERFETTO_PRODUCER_SOCK_NAME", s->socket_path, TRUE);
        g_autoptr(GError) error = NULL;
        GPid pid = 0;

        g_spawn_async(NULL, (char **) argv, env, G_SPAWN_DO_NOT_REAP_CHILD, producer_server_child_setup, NULL, &pid, &error);
        g_assert_no_error(error);
        return pid;
}

void producer_server_accept(ProducerServer *s, int timeout_ms) {
        struct pollfd p = { .fd = s->listen_fd, .events = POLLIN };

        g_assert_cmpint(poll(&p, 1, timeout_ms), ==, 1);
        s->conn_fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        g_assert_cmpint(s->conn_fd, >=, 0);
}

bool producer_server_has_id(GArray *ids, uint64_t id) {
        for (guint i = 0; i < ids->len; i++)
                if (g_array_index(ids, uint64_t, i) == id)
                        return true;
        return false;
}

const Tracebus__DataSourceDescriptor *producer_server_descriptor(ProducerServer *s, const char *name) {
        for (guint i = 0; i < s->descriptors->len; i++) {
                Tracebus__RegisterDataSourceRequest *r = g_ptr_array_index(s->descriptors, i);
                if (r->data_source_descriptor && g_strcmp0(r->data_source_descriptor->name, name) == 0)
                        return r->data_source_descriptor;
        }
        return NULL;
}

static void reply(ProducerServer *s, uint64_t request_id, const ProtobufCMessage *message) {
        g_assert_cmpint(ipc_writer_queue_reply(s->writer, request_id, true, false, message, -1), ==, 0);
}

static void reply_empty(ProducerServer *s, uint64_t request_id, bool drop_reply) {
        Tracebus__ProducerPortEmptyReply empty = TRACEBUS__PRODUCER_PORT_EMPTY_REPLY__INIT;

        if (!drop_reply)
                reply(s, request_id, &empty.base);
}

static void on_initialize(ProducerServer *s, uint64_t request_id, Tracebus__InitializeConnectionRequest *req) {
        Tracebus__InitializeConnectionResponse response = TRACEBUS__INITIALIZE_CONNECTION_RESPONSE__INIT;

        g_assert_false(s->initialized);
        s->initialized = true;
        s->producer_name = g_strdup(req->producer_name);
        /* Only the service's buffer: a producer-provided one would come with an fd. */
        g_assert_false(req->producer_provided_shmem);
        response.has_direct_smb_patching_supported = true;
        response.direct_smb_patching_supported = true;
        reply(s, request_id, &response.base);
}

static int keep_packet(const uint8_t *data, size_t size, uint16_t writer_id, bool dropped, void *userdata) {
        ProducerServer *s = userdata;

        g_ptr_array_add(s->packets, g_bytes_new(data, size));
        return 0;
}

static void on_commit(ProducerServer *s, Tracebus__CommitDataRequest *req) {
        g_assert_nonnull(s->smb.base);
        g_assert_cmpint(smb_commit(&s->smb, s->reassembler, req), >=, 0);
        g_assert_cmpint(smb_reassembler_read(s->reassembler, false, keep_packet, s), ==, 0);
        if (req->flush_request_id > s->flush_acked)
                s->flush_acked = req->flush_request_id;
        s->commits++;
}

static void on_call(ProducerServer *s, uint64_t request_id, bool drop_reply, ProducerPortMethod method,
                    ProtobufCMessage *args) {
        uint64_t id;
        uint32_t writer;

        switch (method) {
        case PRODUCER_PORT_INITIALIZE_CONNECTION:
                on_initialize(s, request_id, (Tracebus__InitializeConnectionRequest *) args);
                ipc_message_free(args);
                return;
        case PRODUCER_PORT_GET_ASYNC_COMMAND:
                /* Answered by the commands, later, all on this request. */
                s->has_async = true;
                s->async_request_id = request_id;
                ipc_message_free(args);
                return;
        case PRODUCER_PORT_REGISTER_DATA_SOURCE:
                g_assert_cmpuint(s->descriptors->len, <, PRODUCER_DATA_SOURCES_MAX);
                g_ptr_array_add(s->descriptors, g_steal_pointer(&args));
                break;
        case PRODUCER_PORT_COMMIT_DATA:
                on_commit(s, (Tracebus__CommitDataRequest *) args);
                break;
        case PRODUCER_PORT_NOTIFY_DATA_SOURCE_STARTED:
                id = ((Tracebus__NotifyDataSourceStartedRequest *) args)->data_source_id;
                g_array_append_val(s->started, id);
                break;
        case PRODUCER_PORT_NOTIFY_DATA_SOURCE_STOPPED:
                id = ((Tracebus__NotifyDataSourceStoppedRequest *) args)->data_source_id;
                g_array_append_val(s->stopped, id);
                break;
        case PRODUCER_PORT_REGISTER_TRACE_WRITER:
                writer = ((Tracebus__RegisterTraceWriterRequest *) args)->trace_writer_id;
                g_array_append_val(s->writers, writer);
                break;
        case PRODUCER_PORT_UNREGISTER_TRACE_WRITER:
                writer = ((Tracebus__UnregisterTraceWriterRequest *) args)->trace_writer_id;
                if (writer >= 1 && writer <= SMB_WRITER_ID_MAX)
                        g_assert_cmpint(smb_reassembler_end_writer(s->reassembler, (uint16_t) writer, keep_packet, s), ==, 0);
                break;
        default:
                break;
        }
        ipc_message_free(args);
        reply_empty(s, request_id, drop_reply);
}

static void on_frame(ProducerServer *s, Tracebus__IPCFrame *frame) {
        ProducerPortMethod method;
        ProtobufCMessage *args = NULL;
        int r;

        switch (frame->msg_case) {
        case TRACEBUS__IPCFRAME__MSG_MSG_BIND_SERVICE:
                r = producer_port_queue_bind_reply(s->writer, frame->request_id,
                                                   frame->msg_bind_service->service_name);
                g_assert_cmpint(r, ==, 1);
                s->bound = true;
                return;
        case TRACEBUS__IPCFRAME__MSG_MSG_INVOKE_METHOD:
                r = producer_port_unpack_call(frame->msg_invoke_method, &method, &args);
                if (r < 0) {
                        g_test_message("refused call: %s", ipc_error_to_string(r));
                        g_assert_cmpint(ipc_writer_queue_reply(s->writer, frame->request_id, false, false, NULL, -1), ==, 0);
                        return;
                }
                g_test_message("call %s (request %" G_GUINT64_FORMAT ")",
                               producer_port_method_to_string(method), frame->request_id);
                on_call(s, frame->request_id, frame->msg_invoke_method->drop_reply, method, args);
                return;
        default:
                g_test_message("frame without a request (case %d)", frame->msg_case);
        }
}

/* The producer went away: what it wrote and never committed is still in the buffer. */
static void on_eof(ProducerServer *s) {
        s->eof = true;
        if (!s->smb.base)
                return;
        g_test_message("producer gone, scraped %d chunks", smb_scrape_all(&s->smb, s->reassembler));
        g_assert_cmpint(smb_reassembler_read(s->reassembler, true, keep_packet, s), ==, 0);
}

static void serve_input(ProducerServer *s) {
        Tracebus__IPCFrame *frame;
        int r, fd;

        r = ipc_reader_receive(s->reader, s->conn_fd);
        if (r == -EAGAIN)
                return;
        /* Frames already received are served before the end of the connection is. */
        while (ipc_reader_next(s->reader, &frame, &fd) > 0) {
                g_assert_cmpint(fd, <, 0);
                on_frame(s, frame);
                ipc_frame_free(frame);
        }
        if (r == -ECONNRESET)
                on_eof(s);
        else
                g_assert_cmpint(r, >, 0);
}

bool producer_server_run_until(ProducerServer *s, ProducerServerCondition done, gconstpointer data, int timeout_ms) {
        gint64 deadline = g_get_monotonic_time() + (gint64) timeout_ms * 1000;

        while (!done(s, data)) {
                struct pollfd p = { .fd = s->conn_fd, .events = POLLIN };
                gint64 left = (deadline - g_get_monotonic_time()) / 1000;
                int r;

                if (left <= 0)
                        return false;
                r = ipc_writer_flush(s->writer, s->conn_fd);
                if (r == -EAGAIN)
                        p.events |= POLLOUT;
                else if (!s->eof)
                        g_assert_cmpint(r, ==, 0);
                if (s->eof) {
                        g_usleep(10 * 1000);
                        continue;
                }
                r = poll(&p, 1, (int) MIN(left, 100));
                g_assert_cmpint(r, >=, 0);
                if (p.revents & (POLLIN | POLLHUP | POLLERR))
                        serve_input(s);
        }
        if (!s->eof)
                (void) ipc_writer_flush(s->writer, s->conn_fd);
        return true;
}

static void send_command(ProducerServer *s, Tracebus__GetAsyncCommandResponse *command, int fd) {
        g_assert_true(s->has_async);
        /* has_more on every command: the stream must stay open. */
        g_assert_cmpint(ipc_writer_queue_reply(s->writer, s->async_request_id, true, true, &command->base, fd), ==, 0);
}

static void setup_tracing(ProducerServer *s) {
        Tracebus__GetAsyncCommandResponse command = TRACEBUS__GET_ASYNC_COMMAND_RESPONSE__INIT;
        Tracebus__GetAsyncCommandResponse__SetupTracing setup = TRACEBUS__GET_ASYNC_COMMAND_RESPONSE__SETUP_TRACING__INIT;

        g_assert_cmpint(smb_create(SERVER_SMB_SIZE, SERVER_PAGE_SIZE, &s->smb, &s->smb_fd), ==, 0);
        setup.has_shared_buffer_page_size_kb = true;
        setup.shared_buffer_page_size_kb = SERVER_PAGE_SIZE / 1024;
        command.cmd_case = TRACEBUS__GET_ASYNC_COMMAND_RESPONSE__CMD_SETUP_TRACING;
        command.setup_tracing = &setup;
        send_command(s, &command, s->smb_fd);
}

void producer_server_start(ProducerServer *s, const char *name, uint64_t instance_id) {
        Tracebus__GetAsyncCommandResponse command = TRACEBUS__GET_ASYNC_COMMAND_RESPONSE__INIT;
        Tracebus__GetAsyncCommandResponse__SetupDataSource setup = TRACEBUS__GET_ASYNC_COMMAND_RESPONSE__SETUP_DATA_SOURCE__INIT;
        Tracebus__GetAsyncCommandResponse__StartDataSource start = TRACEBUS__GET_ASYNC_COMMAND_RESPONSE__START_DATA_SOURCE__INIT;
        Tracebus__DataSourceConfig config = TRACEBUS__DATA_SOURCE_CONFIG__INIT;
        Tracebus__TrackEventConfig track_event = TRACEBUS__TRACK_EVENT_CONFIG__INIT;
        char *all[] = { (char *) "*" };

        if (!s->smb.base)
                setup_tracing(s);
        config.name = (char *) name;
        config.has_target_buffer = true;
        config.target_buffer = SERVER_TARGET_BUFFER;
        config.has_tracing_session_id = true;
        config.tracing_session_id = 1;
        config.has_stop_timeout_ms = true;
        config.stop_timeout_ms = 5000;
        if (g_str_equal(name, "track_event")) {
                track_event.n_enabled_categories = 1;
                track_event.enabled_categories = all;
                config.track_event_config = &track_event;
        }
        setup.has_new_instance_id = start.has_new_instance_id = true;
        setup.new_instance_id = start.new_instance_id = instance_id;
        setup.config = start.config = &config;
        command.cmd_case = TRACEBUS__GET_ASYNC_COMMAND_RESPONSE__CMD_SETUP_DATA_SOURCE;
        command.setup_data_source = &setup;
        send_command(s, &command, -1);
        command.cmd_case = TRACEBUS__GET_ASYNC_COMMAND_RESPONSE__CMD_START_DATA_SOURCE;
        command.start_data_source = &start;
        send_command(s, &command, -1);
}

void producer_server_flush(ProducerServer *s, uint64_t instance_id, uint64_t request_id) {
        Tracebus__GetAsyncCommandResponse command = TRACEBUS__GET_ASYNC_COMMAND_RESPONSE__INIT;
        Tracebus__GetAsyncCommandResponse__Flush flush = TRACEBUS__GET_ASYNC_COMMAND_RESPONSE__FLUSH__INIT;

        flush.n_data_source_ids = 1;
        flush.data_source_ids = &instance_id;
        flush.has_request_id = true;
        flush.request_id = request_id;
        command.cmd_case = TRACEBUS__GET_ASYNC_COMMAND_RESPONSE__CMD_FLUSH;
        command.flush = &flush;
        send_command(s, &command, -1);
}

void producer_server_stop(ProducerServer *s, uint64_t instance_id) {
        Tracebus__GetAsyncCommandResponse command = TRACEBUS__GET_ASYNC_COMMAND_RESPONSE__INIT;
        Tracebus__GetAsyncCommandResponse__StopDataSource stop = TRACEBUS__GET_ASYNC_COMMAND_RESPONSE__STOP_DATA_SOURCE__INIT;

        stop.has_instance_id = true;
        stop.instance_id = instance_id;
        command.cmd_case = TRACEBUS__GET_ASYNC_COMMAND_RESPONSE__CMD_STOP_DATA_SOURCE;
        command.stop_data_source = &stop;
        send_command(s, &command, -1);
}
