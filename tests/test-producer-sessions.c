/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite: apps built with upstream Perfetto's SDK record into tracebus sessions. A
 * config naming track_event (or an app's own data source) sets up every app of the
 * session's owner that registered it, before or after the session started; what the
 * apps write is in the trace, each packet stamped once with the app's uid and pid on a
 * sequence of its own; another user's app is set up only by a session of root.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pb-wire.h"
#include "producer-ipc.h"
#include "session-util.h"
#include "shm-abi.h"

#include "cli-util.h"
#include "system-bus.h"
#include "tb-client.h"
#include "test-util.h"
#include "trace-writer.h"
#include "trace.pb-c.h"

#define REGISTER_TIMEOUT_MS 20000

#define TRACK_EVENT_CONFIG "duration_ms: %u\nbuffers { size_kb: 4096 }\n" \
        "data_sources { config { name: \"track_event\" track_event_config { enabled_categories: \"*\" } } }\n"

static char *producer_socket(void) {
        return g_build_filename(tb_bus()->tmpdir, TB_PRODUCER_SOCKET, NULL);
}

static GPid spawn_app(const char *user, const char *program, TbUser *u) {
        g_autofree char *sock = producer_socket();

        return tb_spawn_sdk_app(user, program, sock, u);
}

/* ListProducers as root names @program's data source @source for @pid. */
static bool registered(GPid pid, const char *source) {
        const char *argv[] = { "busctl", "--system", "call", TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_IFACE,
                               "ListProducers", NULL };
        g_autofree char *pid_text = g_strdup_printf(" %d ", (int) pid);
        gint64 deadline = g_get_monotonic_time() + (gint64) tb_scaled_ms(REGISTER_TIMEOUT_MS) * 1000;

        while (g_get_monotonic_time() < deadline) {
                g_auto(TbCommandResult) res = { 0 };
                g_autoptr(GError) error = NULL;

                g_assert_true(tb_run_as_user(NULL, argv, &res, &error));
                if (res.out && strstr(res.out, pid_text) && strstr(res.out, source))
                        return true;
                g_usleep(100 * 1000);
        }
        return false;
}

/* The rows of @sql's answer on @trace, without the header line and the quotes. */
static char *tp_query(const char *trace, const char *sql) {
        g_autofree char *tp = tb_perfetto_program("bin", "trace_processor_shell");
        const char *argv[] = { tp, "-Q", sql, trace, NULL };
        g_autofree char *err = NULL;
        g_autoptr(GError) error = NULL;
        char *out = NULL;
        int status = 0;

        g_assert_true(g_spawn_sync(NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &status, &error));
        if (!g_spawn_check_wait_status(status, NULL))
                g_error("trace_processor_shell failed on %s for \"%s\": %s", trace, sql, err);
        g_test_message("%s: %s", sql, out);
        return out;
}

/* DrawGame and its two DrawPlayer slices, player_number 1 and 2, on one thread's track;
 * no import error. */
static void assert_game_drawn(const char *trace) {
        g_autofree char *slices = tp_query(trace, "select s.name, a.int_value from slice s left join args a "
                                                  "on a.arg_set_id = s.arg_set_id and a.key = 'debug.player_number' "
                                                  "join thread_track t on s.track_id = t.id order by s.ts");
        g_autofree char *errors = tp_query(trace, "select count(*) from stats where severity in ('error', 'data_loss') "
                                                  "and value > 0 and name not like 'ftrace%'");

        g_assert_nonnull(strstr(slices, "\"DrawGame\""));
        g_assert_nonnull(strstr(slices, "\"DrawPlayer\",1"));
        g_assert_nonnull(strstr(slices, "\"DrawPlayer\",2"));
        g_assert_nonnull(strstr(errors, "\n0"));
}

static void assert_no_game(const char *trace) {
        g_autofree char *slices = tp_query(trace, "select count(*) from slice where name like 'Draw%'");

        g_assert_nonnull(strstr(slices, "\n0"));
}

static Tracebus__Trace *read_trace(const char *path) {
        g_autofree char *data = NULL;
        gsize len = 0;
        Tracebus__Trace *t;

        g_assert_true(g_file_get_contents(path, &data, &len, NULL));
        t = tracebus__trace__unpack(NULL, len, (const uint8_t *) data);
        g_assert_nonnull(t);
        return t;
}

/* How many times the top level of @packet holds varint field @field. */
static guint count_varint_field(const uint8_t *packet, size_t len, uint32_t field) {
        const uint8_t *p = packet, *end = packet + len;
        guint n = 0;

        while (p < end) {
                uint64_t key, v;

                g_assert_true(pb_varint_decode(&p, end, &key));
                switch (key & 7) {
                case PB_WIRE_VARINT:
                        g_assert_true(pb_varint_decode(&p, end, &v));
                        n += (key >> 3) == field;
                        break;
                case PB_WIRE_LEN:
                        g_assert_true(pb_varint_decode(&p, end, &v) && v <= (uint64_t) (end - p));
                        p += v;
                        break;
                case PB_WIRE_I64:
                        p += 8;
                        break;
                default:
                        p += 4;
                        break;
                }
        }
        return n;
}

/* Every packet with an app's pid carries exactly one trusted_uid (protobuf-c would keep
 * the last of several, so each packet's own bytes in the file are counted), the app's, and
 * its pid, on a sequence above the service's own. Returns how many there are. */
static guint assert_app_packets(const char *path, uid_t uid, pid_t pid) {
        g_autofree char *data = NULL;
        const uint8_t *p, *end;
        gsize len = 0;
        guint n = 0;

        g_assert_true(g_file_get_contents(path, &data, &len, NULL));
        for (p = (const uint8_t *) data, end = p + len; p < end;) {
                Tracebus__TracePacket *packet;
                uint64_t key, size;

                g_assert_true(pb_varint_decode(&p, end, &key) && key == pb_tag(1, PB_WIRE_LEN));
                g_assert_true(pb_varint_decode(&p, end, &size) && size <= (uint64_t) (end - p));
                packet = tracebus__trace_packet__unpack(NULL, size, p);
                g_assert_nonnull(packet);
                if (packet->has_trusted_pid && packet->trusted_pid == (int32_t) pid) {
                        g_assert_cmpuint(count_varint_field(p, size, 3), ==, 1);
                        g_assert_cmpint(packet->trusted_uid, ==, (int32_t) uid);
                        g_assert_cmpuint(packet->trusted_packet_sequence_id, >=, _TRACE_SEQUENCE_MAX);
                        n++;
                }
                tracebus__trace_packet__free_unpacked(packet, NULL);
                p += size;
        }
        return n;
}

static char *write_config(const char *user, const char *dir, guint duration_ms) {
        g_autofree char *text = g_strdup_printf(TRACK_EVENT_CONFIG, duration_ms);

        return user_file(user, dir, "te.pbtxt", text, -1);
}

static void wait_exit(GPid pid) {
        gint64 deadline = g_get_monotonic_time() + (gint64) tb_scaled_ms(REGISTER_TIMEOUT_MS) * 1000;

        while (waitpid(pid, NULL, WNOHANG) == 0) {
                if (g_get_monotonic_time() > deadline) {
                        tb_kill_child(pid);
                        return;
                }
                g_usleep(50 * 1000);
        }
}

/* example_system_wide drew its game, flushed and left: its slices are in @out. */
static void assert_app_recorded(const char *out, GPid app, uid_t uid) {
        wait_exit(app);
        assert_game_drawn(out);
        g_assert_cmpuint(assert_app_packets(out, uid, app), >, 0);
}

/* tbuser's example_system_wide, connected before tbuser's session of @config_text starts,
 * drew its game into the trace; its path and the app's pid are returned. */
static char *record_game_of_connected_app(const char *name, const char *config_text, GPid *ret_app) {
        g_autofree char *dir = make_user_dir("tbuser", name);
        g_autofree char *config = user_file("tbuser", dir, "game.pbtxt", config_text, -1);
        g_autofree char *out = g_build_filename(dir, "game.pftrace", NULL);
        g_auto(TbCommandResult) res = { 0 };
        g_auto(TbUser) u = { 0 };
        GPid app = spawn_app("tbuser", "example_system_wide", &u);

        g_assert_true(registered(app, "track_event"));
        run_cli("tbuser", &res, "-c", config, "--txt", "-o", out, NULL);
        assert_exit(&res, 0);
        assert_app_recorded(out, app, u.uid);
        *ret_app = app;
        return g_steal_pointer(&out);
}

/* The owner's app, connected before the session starts, records its slices. */
static void case_track_event(void) {
        g_autofree char *text = g_strdup_printf(TRACK_EVENT_CONFIG, 4000u);
        GPid app;
        g_autofree char *out = record_game_of_connected_app("ps-te", text, &app);
}

/* An app that starts after the session did is set up when it registers. */
static void case_app_after_start(void) {
        g_autofree char *dir = make_user_dir("tbuser", "ps-late");
        g_autofree char *config = write_config("tbuser", dir, 6000);
        g_autofree char *out = g_build_filename(dir, "late.pftrace", NULL);
        const char *args[] = { "-c", config, "--txt", "-o", out, NULL };
        g_auto(TbUser) u = { 0 };
        CliProc cli = { 0 };
        GPid app;

        cli_spawn("tbuser", args, -1, &cli);
        g_assert_true(cli_proc_expect(&cli, "no producer has registered it", tb_scaled_ms(REGISTER_TIMEOUT_MS)));
        app = spawn_app("tbuser", "example_system_wide", &u);
        g_assert_cmpint(cli_proc_wait(&cli, tb_scaled_ms(30000)), ==, 0);
        cli_proc_clear(&cli);
        assert_app_recorded(out, app, u.uid);
}

/* Another user's app is not set up by tbuser's session (a warning says none registered
 * it), and is by root's. */
static void case_isolation(void) {
        g_autofree char *dir = make_user_dir("tbuser", "ps-iso");
        g_autofree char *config = write_config("tbuser", dir, 3000);
        g_autofree char *out = g_build_filename(dir, "iso.pftrace", NULL);
        g_autofree char *root_out = g_build_filename(tb_bus()->tmpdir, "ps-iso-root.pftrace", NULL);
        g_auto(TbCommandResult) res = { 0 }, root = { 0 };
        g_auto(TbUser) other = { 0 };
        GPid app = spawn_app("tbother", "example_system_wide", &other);

        g_assert_true(registered(app, "track_event"));
        run_cli("tbuser", &res, "-c", config, "--txt", "-o", out, NULL);
        assert_exit(&res, 0);
        assert_stderr_has(&res, "track_event: no producer has registered it");
        assert_no_game(out);
        g_assert_cmpuint(assert_app_packets(out, other.uid, app), ==, 0);

        run_cli(NULL, &root, "-c", config, "--txt", "-o", root_out, NULL);
        assert_exit(&root, 0);
        assert_app_recorded(root_out, app, other.uid);
}

/* An app of the C API writes its own data source: each for_testing packet, larger than
 * a chunk, whole. */
static void case_custom_source(void) {
        g_autofree char *dir = make_user_dir("tbuser", "ps-custom");
        g_autofree char *config = user_file("tbuser", dir, "custom.pbtxt", "duration_ms: 3000\nbuffers { size_kb: 4096 }\n"
                                            "data_sources { config { name: \"com.example.custom_data_source\" } }\n", -1);
        g_autofree char *out = g_build_filename(dir, "custom.pftrace", NULL);
        g_auto(TbCommandResult) res = { 0 };
        g_auto(TbUser) u = { 0 };
        GPid app = spawn_app("tbuser", "example_shlib_data_source", &u);
        Tracebus__Trace *t;
        guint n = 0;

        g_assert_true(registered(app, "com.example.custom_data_source"));
        run_cli("tbuser", &res, "-c", config, "--txt", "-o", out, NULL);
        assert_exit(&res, 0);
        tb_kill_child(app);
        g_assert_cmpuint(assert_app_packets(out, u.uid, app), >, 0);
        t = read_trace(out);
        for (size_t i = 0; i < t->n_packet; i++) {
                const Tracebus__TracePacket *p = t->packet[i];

                if (!p->for_testing)
                        continue;
                g_assert_cmpstr(p->for_testing->str, ==, "This is a long string");
                g_assert_nonnull(p->for_testing->payload);
                g_assert_cmpuint(protobuf_c_message_get_packed_size(&p->for_testing->base), >, SMB_PAGE_SIZE_MIN);
                g_assert_cmpuint(p->timestamp, ==, 42);
                n++;
        }
        tracebus__trace__free_unpacked(t, NULL);
        g_assert_cmpuint(n, >=, 2);
}

/* ---- a hostile producer, written with the service's own IPC library ---- */

typedef struct Hostile {
        int fd;
        IpcReader *reader;
        IpcWriter *writer;
        uint64_t next_request;
        Smb smb;
        int smb_fd;
        uint32_t target_buffer;
        bool started;
        uint64_t flush_request_id;     /* the last Flush received; 0: none */
} Hostile;

static void hostile_send(Hostile *h, ProducerPortMethod method, const ProtobufCMessage *args) {
        Tracebus__IPCFrame frame = TRACEBUS__IPCFRAME__INIT;
        Tracebus__IPCFrame__InvokeMethod call = TRACEBUS__IPCFRAME__INVOKE_METHOD__INIT;
        g_autofree uint8_t *bytes = g_malloc(protobuf_c_message_get_packed_size(args) + 1);

        call.has_service_id = call.has_method_id = call.has_args_proto = true;
        call.service_id = PRODUCER_PORT_SERVICE_ID;
        call.method_id = method;
        call.args_proto = (ProtobufCBinaryData) { protobuf_c_message_pack(args, bytes), bytes };
        frame.has_request_id = true;
        frame.request_id = ++h->next_request;
        frame.msg_case = TRACEBUS__IPCFRAME__MSG_MSG_INVOKE_METHOD;
        frame.msg_invoke_method = &call;
        g_assert_cmpint(ipc_writer_queue(h->writer, &frame, -1), ==, 0);
        g_assert_cmpint(ipc_writer_flush(h->writer, h->fd), ==, 0);
}

static void hostile_connect(Hostile *h) {
        Tracebus__IPCFrame frame = TRACEBUS__IPCFRAME__INIT;
        Tracebus__IPCFrame__BindService bind = TRACEBUS__IPCFRAME__BIND_SERVICE__INIT;
        Tracebus__InitializeConnectionRequest init = TRACEBUS__INITIALIZE_CONNECTION_REQUEST__INIT;
        Tracebus__ProducerPortEmptyReply async = TRACEBUS__PRODUCER_PORT_EMPTY_REPLY__INIT;
        Tracebus__RegisterDataSourceRequest reg = TRACEBUS__REGISTER_DATA_SOURCE_REQUEST__INIT;
        Tracebus__DataSourceDescriptor d = TRACEBUS__DATA_SOURCE_DESCRIPTOR__INIT;
        g_autofree char *path = producer_socket();
        struct sockaddr_un sa = { .sun_family = AF_UNIX };

        *h = (Hostile) { .smb_fd = -1 };
        h->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        strcpy(sa.sun_path, path);
        g_assert_cmpint(connect(h->fd, (struct sockaddr *) &sa, sizeof(sa)), ==, 0);
        g_assert_cmpint(ipc_reader_new(&h->reader), ==, 0);
        g_assert_cmpint(ipc_writer_new(&h->writer), ==, 0);
        bind.service_name = (char *) PRODUCER_PORT_SERVICE_NAME;
        frame.has_request_id = true;
        frame.request_id = ++h->next_request;
        frame.msg_case = TRACEBUS__IPCFRAME__MSG_MSG_BIND_SERVICE;
        frame.msg_bind_service = &bind;
        g_assert_cmpint(ipc_writer_queue(h->writer, &frame, -1), ==, 0);
        init.producer_name = (char *) "hostile";
        hostile_send(h, PRODUCER_PORT_INITIALIZE_CONNECTION, &init.base);
        hostile_send(h, PRODUCER_PORT_GET_ASYNC_COMMAND, &async.base);
        d.name = (char *) "com.example.hostile";
        reg.data_source_descriptor = &d;
        hostile_send(h, PRODUCER_PORT_REGISTER_DATA_SOURCE, &reg.base);
}

static void hostile_command(Hostile *h, const Tracebus__IPCFrame *frame, int fd) {
        const Tracebus__IPCFrame__InvokeMethodReply *reply = frame->msg_invoke_method_reply;
        Tracebus__GetAsyncCommandResponse *cmd;
        struct stat st;

        if (frame->msg_case != TRACEBUS__IPCFRAME__MSG_MSG_INVOKE_METHOD_REPLY || !reply->has_more)
                return;
        cmd = tracebus__get_async_command_response__unpack(NULL, reply->reply_proto.len, reply->reply_proto.data);
        g_assert_nonnull(cmd);
        /* The commands are a oneof: their pointers share one place. */
        if (cmd->cmd_case == TRACEBUS__GET_ASYNC_COMMAND_RESPONSE__CMD_SETUP_TRACING) {
                g_assert_cmpint(fd, >=, 0);
                g_assert_cmpint(fstat(fd, &st), ==, 0);
                h->smb_fd = fd;
                h->smb.base = mmap(NULL, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
                g_assert_true(h->smb.base != MAP_FAILED);
                g_assert_cmpint(smb_init(&h->smb, h->smb.base, st.st_size, SMB_PAGE_SIZE_MIN), ==, 0);
        }
        if (cmd->cmd_case == TRACEBUS__GET_ASYNC_COMMAND_RESPONSE__CMD_FLUSH)
                h->flush_request_id = cmd->flush->request_id;
        if (cmd->cmd_case == TRACEBUS__GET_ASYNC_COMMAND_RESPONSE__CMD_START_DATA_SOURCE) {
                h->target_buffer = cmd->start_data_source->config->target_buffer;
                h->started = true;
        }
        tracebus__get_async_command_response__free_unpacked(cmd, NULL);
}

/* Serves what the service sent within @timeout_ms. */
static void hostile_pump(Hostile *h, int timeout_ms) {
        struct pollfd p = { .fd = h->fd, .events = POLLIN };
        Tracebus__IPCFrame *frame;
        int fd;

        if (poll(&p, 1, timeout_ms) <= 0)
                return;
        g_assert_cmpint(ipc_reader_receive(h->reader, h->fd), >, 0);
        while (ipc_reader_next(h->reader, &frame, &fd) > 0) {
                hostile_command(h, frame, fd);
                ipc_frame_free(frame);
        }
}

static void hostile_wait_started(Hostile *h, guint timeout_ms) {
        gint64 deadline = g_get_monotonic_time() + (gint64) timeout_ms * 1000;

        while (!h->started && g_get_monotonic_time() < deadline)
                hostile_pump(h, 100);
        g_assert_true(h->started);
}

/* Chunk @chunk of page 0 (cut in four), Complete, writer @writer, one fragment: @p. */
static void hostile_write_chunk(Hostile *h, unsigned chunk, uint16_t writer, const Tracebus__TracePacket *p) {
        uint8_t *page = h->smb.base, *c = page + SMB_PAGE_HEADER_SIZE + chunk * smb_chunk_size(SMB_PAGE_SIZE_MIN, SMB_LAYOUT_DIV4);
        size_t len = tracebus__trace_packet__get_packed_size(p);
        uint32_t word;

        g_assert_cmpuint(len, <, 127);
        c[SMB_CHUNK_HEADER_SIZE] = (uint8_t) len;
        tracebus__trace_packet__pack(p, c + SMB_CHUNK_HEADER_SIZE + 1);
        memset(c, 0, 4);                                    /* chunk id 0 */
        c[4] = (uint8_t) writer, c[5] = 0;
        c[6] = 1, c[7] = 0;                                  /* one fragment, no flags */
        memcpy(&word, page, 4);
        word = (word & ~(0x7u << 28)) | (uint32_t) SMB_LAYOUT_DIV4 << 28 | (uint32_t) SMB_CHUNK_COMPLETE << (2 * chunk);
        memcpy(page, &word, 4);
}

static void hostile_packet(Tracebus__TracePacket *p, Tracebus__TestEvent *e, const char *str) {
        tracebus__trace_packet__init(p);
        tracebus__test_event__init(e);
        e->str = (char *) str;
        p->for_testing = e;
}

/* Writes three chunks: a good packet, one forging trusted_uid, and one into a buffer the
 * service did not give it (the one before its own: another session's, tbuser's, which
 * started just before); commits them. */
static void hostile_commit(Hostile *h) {
        Tracebus__TracePacket good, forged, astray;
        Tracebus__TestEvent e1, e2, e3;
        Tracebus__CommitDataRequest commit = TRACEBUS__COMMIT_DATA_REQUEST__INIT;
        Tracebus__CommitDataRequest__ChunksToMove moves[3], *list[3];

        hostile_packet(&good, &e1, "hostile good");
        hostile_packet(&forged, &e2, "hostile forged uid");
        forged.has_trusted_uid = true;
        forged.trusted_uid = 12345;
        hostile_packet(&astray, &e3, "hostile wrong buffer");
        hostile_write_chunk(h, 0, 1, &good);
        hostile_write_chunk(h, 1, 2, &forged);
        hostile_write_chunk(h, 2, 3, &astray);
        for (unsigned i = 0; i < 3; i++) {
                tracebus__commit_data_request__chunks_to_move__init(&moves[i]);
                moves[i].has_page = moves[i].has_chunk = moves[i].has_target_buffer = true;
                moves[i].page = 0;
                moves[i].chunk = i;
                moves[i].target_buffer = i == 2 ? h->target_buffer - 1 : h->target_buffer;
                list[i] = &moves[i];
        }
        commit.n_chunks_to_move = 3;
        commit.chunks_to_move = list;
        hostile_send(h, PRODUCER_PORT_COMMIT_DATA, &commit.base);
}

static void hostile_done(Hostile *h) {
        if (h->smb.base)
                munmap(h->smb.base, h->smb.size);
        if (h->smb_fd >= 0)
                close(h->smb_fd);
        close(h->fd);
        ipc_reader_free(h->reader);
        ipc_writer_free(h->writer);
}

static bool trace_has_test_string(const char *path, const char *str) {
        Tracebus__Trace *t = read_trace(path);
        bool found = false;

        for (size_t i = 0; i < t->n_packet && !found; i++)
                found = t->packet[i]->for_testing && g_strcmp0(t->packet[i]->for_testing->str, str) == 0;
        tracebus__trace__free_unpacked(t, NULL);
        return found;
}

static bool trace_has_warning(const char *path, const char *text) {
        g_autofree char *name = g_strdup_printf("warning: %s", text);
        Tracebus__Trace *t = read_trace(path);
        bool found = false;

        for (size_t i = 0; i < t->n_packet && !found; i++)
                found = t->packet[i]->track_event && g_strcmp0(t->packet[i]->track_event->name, name) == 0;
        tracebus__trace__free_unpacked(t, NULL);
        return found;
}

/* A producer that forges trusted_uid or writes into a buffer it was not given (another
 * user's session's) loses those packets; its honest one is kept. */
static void case_hostile_producer(void) {
        g_autofree char *dir = make_user_dir("tbuser", "ps-hostile");
        g_autofree char *user_config = write_config("tbuser", dir, 4000);
        g_autofree char *user_out = g_build_filename(dir, "victim.pftrace", NULL);
        g_autofree char *config = g_build_filename(tb_bus()->tmpdir, "ps-hostile.pbtxt", NULL);
        g_autofree char *out = g_build_filename(tb_bus()->tmpdir, "ps-hostile.pftrace", NULL);
        const char *user_args[] = { "-c", user_config, "--txt", "-o", user_out, NULL };
        const char *args[] = { "-c", config, "--txt", "-o", out, NULL };
        CliProc victim = { 0 }, cli = { 0 };
        Hostile h;

        g_assert_true(g_file_set_contents(config, "duration_ms: 3000\ndata_source_stop_timeout_ms: 1000\n"
                                          "buffers { size_kb: 1024 }\n"
                                          "data_sources { config { name: \"com.example.hostile\" } }\n", -1, NULL));
        hostile_connect(&h);
        g_assert_true(registered(getpid(), "com.example.hostile"));
        cli_spawn("tbuser", user_args, -1, &victim);
        g_assert_true(cli_proc_expect(&victim, "Recording into", tb_scaled_ms(REGISTER_TIMEOUT_MS)));
        cli_spawn("root", args, -1, &cli);
        hostile_wait_started(&h, tb_scaled_ms(REGISTER_TIMEOUT_MS));
        hostile_commit(&h);
        g_assert_cmpint(cli_proc_wait(&cli, tb_scaled_ms(30000)), ==, 0);
        g_assert_cmpint(cli_proc_wait(&victim, tb_scaled_ms(30000)), ==, 0);
        cli_proc_clear(&cli);
        cli_proc_clear(&victim);
        hostile_done(&h);
        g_assert_true(trace_has_test_string(out, "hostile good"));
        g_assert_false(trace_has_test_string(out, "hostile forged uid"));
        g_assert_false(trace_has_test_string(user_out, "hostile wrong buffer"));
        g_assert_false(trace_has_test_string(out, "hostile wrong buffer"));
        g_assert_cmpuint(assert_app_packets(out, 0, getpid()), ==, 1);
        /* It never said it stopped: Stop waited for it no longer than the config said. */
        g_assert_true(trace_has_warning(out, "apps did not stop within 1000 ms: their data so far is kept"));
        /* The forged packet is said, in the session it was written for. */
        g_assert_true(trace_has_warning(out, "1 packets of apps dropped: not a TracePacket, or writing a field only the "
                                             "service writes (trusted_uid, trusted_pid, its sequence id...)"));
}

#define TRIGGER_CONFIG "trigger_config { trigger_mode: STOP_TRACING trigger_timeout_ms: 60000\n" \
        "  triggers { name: \"app-boom\" stop_delay_ms: 0 } }\n" \
        "buffers { size_kb: 1024 }\ndata_sources { config { name: \"track_event\" } }\n"

/* An app's ActivateTriggers reaches the sessions of its own user only: root's app stops
 * root's session, and tbuser's goes on. */
static void case_app_triggers(void) {
        g_autofree char *dir = make_user_dir("tbuser", "ps-trigger");
        g_autofree char *user_config = user_file("tbuser", dir, "trigger.pbtxt", TRIGGER_CONFIG, -1);
        g_autofree char *user_out = g_build_filename(dir, "trigger.pftrace", NULL);
        g_autofree char *config = g_build_filename(tb_bus()->tmpdir, "ps-trigger.pbtxt", NULL);
        g_autofree char *out = g_build_filename(tb_bus()->tmpdir, "ps-trigger.pftrace", NULL);
        const char *user_args[] = { "-c", user_config, "--txt", "-o", user_out, NULL };
        const char *args[] = { "-c", config, "--txt", "-o", out, NULL };
        Tracebus__ActivateTriggersRequest req = TRACEBUS__ACTIVATE_TRIGGERS_REQUEST__INIT;
        char *names[] = { (char *) "app-boom" };
        CliProc victim = { 0 }, cli = { 0 };
        Hostile h;

        g_assert_true(g_file_set_contents(config, TRIGGER_CONFIG, -1, NULL));
        cli_spawn("tbuser", user_args, -1, &victim);
        g_assert_true(cli_proc_expect(&victim, "Recording into", tb_scaled_ms(REGISTER_TIMEOUT_MS)));
        cli_spawn("root", args, -1, &cli);
        g_assert_true(cli_proc_expect(&cli, "Recording into", tb_scaled_ms(REGISTER_TIMEOUT_MS)));
        hostile_connect(&h);
        req.n_trigger_names = 1;
        req.trigger_names = names;
        hostile_send(&h, PRODUCER_PORT_ACTIVATE_TRIGGERS, &req.base);
        /* Root's session ends on the trigger, long before its 60 s; tbuser's does not. */
        g_assert_cmpint(cli_proc_wait(&cli, tb_scaled_ms(20000)), ==, 0);
        g_assert_cmpint(waitpid(victim.pid, NULL, WNOHANG), ==, 0);
        stop_all_of("tbuser");
        g_assert_cmpint(cli_proc_wait(&victim, tb_scaled_ms(20000)), ==, 0);
        cli_proc_clear(&cli);
        cli_proc_clear(&victim);
        hostile_done(&h);
}

/* A snapshot holds what an app had not committed: the service flushes the apps and waits
 * (bounded) for their answer before it copies. This app commits only when flushed. */
static void case_clone_flushes_apps(void) {
        g_autofree char *config = g_build_filename(tb_bus()->tmpdir, "ps-clone.pbtxt", NULL);
        g_autofree char *out = g_build_filename(tb_bus()->tmpdir, "ps-clone.pftrace", NULL);
        g_autofree char *snap = g_build_filename(tb_bus()->tmpdir, "ps-clone-snap.pftrace", NULL);
        const char *args[] = { "-c", config, "--txt", "-o", out, NULL };
        Tracebus__CommitDataRequest commit = TRACEBUS__COMMIT_DATA_REQUEST__INIT;
        Tracebus__CommitDataRequest__ChunksToMove move = TRACEBUS__COMMIT_DATA_REQUEST__CHUNKS_TO_MOVE__INIT, *list[1];
        Tracebus__TracePacket packet;
        Tracebus__TestEvent event;
        g_auto(GStrv) paths = NULL;
        g_autofree char *opt = NULL;
        CliProc cli = { 0 }, cloner = { 0 };
        gint64 deadline;
        Hostile h;

        g_assert_true(g_file_set_contents(config, "duration_ms: 60000\ndata_source_stop_timeout_ms: 1000\n"
                                          "buffers { size_kb: 1024 }\n"
                                          "data_sources { config { name: \"com.example.hostile\" } }\n", -1, NULL));
        hostile_connect(&h);
        g_assert_true(registered(getpid(), "com.example.hostile"));
        cli_spawn("root", args, -1, &cli);
        hostile_wait_started(&h, tb_scaled_ms(REGISTER_TIMEOUT_MS));
        paths = sessions_of(0);
        g_assert_cmpuint(g_strv_length(paths), ==, 1);
        opt = g_strdup_printf("--clone=%s", session_id(paths[0]));
        cli_spawn("root", (const char *[]) { opt, "-o", snap, NULL }, -1, &cloner);
        /* The chunk is written and committed only on the Flush, with its ack. */
        deadline = g_get_monotonic_time() + (gint64) tb_scaled_ms(REGISTER_TIMEOUT_MS) * 1000;
        while (h.flush_request_id == 0 && g_get_monotonic_time() < deadline)
                hostile_pump(&h, 100);
        g_assert_cmpuint(h.flush_request_id, >, 0);
        hostile_packet(&packet, &event, "flushed for the snapshot");
        hostile_write_chunk(&h, 0, 1, &packet);
        move.has_page = move.has_chunk = move.has_target_buffer = true;
        move.target_buffer = h.target_buffer;
        list[0] = &move;
        commit.n_chunks_to_move = 1;
        commit.chunks_to_move = list;
        commit.has_flush_request_id = true;
        commit.flush_request_id = h.flush_request_id;
        hostile_send(&h, PRODUCER_PORT_COMMIT_DATA, &commit.base);
        g_assert_cmpint(cli_proc_wait(&cloner, tb_scaled_ms(30000)), ==, 0);
        g_assert_true(trace_has_test_string(snap, "flushed for the snapshot"));
        stop_all_of("root");
        g_assert_cmpint(cli_proc_wait(&cli, tb_scaled_ms(30000)), ==, 0);
        cli_proc_clear(&cli);
        cli_proc_clear(&cloner);
        hostile_done(&h);
}

/* How many of the app's packets (trusted_pid @pid) say that their sequence's incremental
 * state was cleared before them. */
static guint count_cleared_packets(const char *path, pid_t pid) {
        /* TracePacket.sequence_flags' SEQ_INCREMENTAL_STATE_CLEARED. */
        const uint32_t incremental_state_cleared = 1;
        Tracebus__Trace *t = read_trace(path);
        guint n = 0;

        for (size_t i = 0; i < t->n_packet; i++) {
                const Tracebus__TracePacket *p = t->packet[i];

                if (p->has_trusted_pid && p->trusted_pid == (int32_t) pid && p->has_sequence_flags &&
                    (p->sequence_flags & incremental_state_cleared))
                        n++;
        }
        tracebus__trace__free_unpacked(t, NULL);
        return n;
}

/* incremental_state_config.clear_period_ms: the apps are told to clear their interned
 * state every period, and their next packets say so (a writer marks only its first packet
 * when nobody asks), while the game still reads whole. */
static void case_incremental_state_cleared(void) {
        g_autofree char *text = g_strdup_printf(TRACK_EVENT_CONFIG "incremental_state_config { clear_period_ms: 150 }\n",
                                                4000u);
        GPid app;
        g_autofree char *out = record_game_of_connected_app("ps-clear", text, &app);

        g_assert_cmpuint(count_cleared_packets(out, app), >=, 2);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();

        tb_test_add_isolated("/bus/producer-sessions/01-track-event", case_track_event);
        tb_test_add_isolated("/bus/producer-sessions/02-app-after-start", case_app_after_start);
        tb_test_add_isolated("/bus/producer-sessions/03-isolation", case_isolation);
        tb_test_add_isolated("/bus/producer-sessions/04-custom-source", case_custom_source);
        tb_test_add_isolated("/bus/producer-sessions/05-hostile-producer", case_hostile_producer);
        tb_test_add_isolated("/bus/producer-sessions/06-app-triggers", case_app_triggers);
        tb_test_add_isolated("/bus/producer-sessions/07-clone-flushes-apps", case_clone_flushes_apps);
        tb_test_add_isolated("/bus/producer-sessions/08-incremental-state-cleared", case_incremental_state_cleared);
        return tb_test_run(TB_START_SERVICE);
}
