/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite: every message of the producer socket costs the service the same, whatever
 * it carries, within the socket's caps. The cases are generated from ProducerPort's
 * method table when the test runs: for each method, and for each field of its request
 * whose size a producer chooses (a repeated field, a string or bytes, at any depth), the
 * largest frame the socket takes (IPC_FRAME_MAX) is built with that field at its worst:
 * as many of the tiniest elements as fit, or one string as long as fits. A method added
 * to the table is covered at once. Beside them: a full frame of garbage, a frame over the
 * cap, half a full frame and then silence (a service that waited for the rest would hang
 * there), frames that carry a file descriptor, and more connections than a user may hold.
 *
 * An unprivileged user (tbuser) sends each case again and again, reconnecting whenever
 * the service closes the connection, while root's IsDetached is timed: its median stays
 * within MAX_RATIO of the quiet median measured just before, and the service answers the
 * first of them (a reply, or the connection closed).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hostile-flood.h"
#include "producer-client.h"
#include "system-bus.h"
#include "test-util.h"

#define MAX_RATIO 3.0
#define PROBES 31u
#define ATTEMPTS 3u
/* Between two frames of a flood: the service reads a full frame in well under this. */
#define GAP_US 20000u
/* The first answer (or the connection closed) comes well within this. */
#define FIRST_ANSWER_MS 2000u
#define HANDSHAKE_MS 5000u
/* More connections than one user may hold (64), opened at once in each round. */
#define CONNECTIONS_PER_ROUND 100u
/* A field path stops here; protobuf's recursive messages would not. */
#define PATH_DEPTH_MAX 4u

typedef enum CaseKind {
        CASE_FRAME,            /* the frame, again and again on one connection */
        CASE_HALF_FRAME,       /* half the frame, then silence, on a new connection each time */
        CASE_CONNECTIONS,      /* CONNECTIONS_PER_ROUND connections, then all closed */
} CaseKind;

typedef struct SocketCase {
        char *name;
        CaseKind kind;
        uint8_t *bytes;        /* the frame, its length prefix included */
        size_t size;
        bool initialize;       /* InitializeConnection before the frames (else BindService only) */
        bool with_fd;          /* /dev/null with each frame */
        bool streamed;         /* answered later, if ever (GetAsyncCommand) */
        /* What the method needs to do its whole work each time: a frame sent once after
         * the handshake, and one after each of the case's (NULL: none). */
        uint8_t *setup, *after;
        size_t setup_size, after_size;
} SocketCase;

static void socket_case_free(SocketCase *c) {
        g_free(c->name);
        g_free(c->bytes);
        g_free(c->setup);
        g_free(c->after);
        g_free(c);
}

/* ---- the worst request of a method, built from its descriptor ---- */

static void put_varint(GByteArray *b, uint64_t v) {
        do {
                guint8 byte = (guint8) (v & 0x7f);

                v >>= 7;
                if (v)
                        byte |= 0x80;
                g_byte_array_append(b, &byte, 1);
        } while (v);
}

static void put_tag(GByteArray *b, unsigned number, unsigned wire_type) {
        put_varint(b, ((uint64_t) number << 3) | wire_type);
}

/* A submessage as small as the wire allows, but with a name of one letter when its type
 * has a name (a category): the service reads a named element further than an empty one. */
static void put_tiny_message(GByteArray *b, const ProtobufCFieldDescriptor *f) {
        const ProtobufCFieldDescriptor *name =
                protobuf_c_message_descriptor_get_field_by_name(f->descriptor, "name");
        bool named = name && name->type == PROTOBUF_C_TYPE_STRING && name->id < 16;

        put_tag(b, f->id, 2);
        put_varint(b, named ? 3 : 0);
        if (named) {
                put_tag(b, name->id, 2);
                put_varint(b, 1);
                g_byte_array_append(b, (const guint8 *) "a", 1);
        }
}

/* One element of @f as small as the wire allows: zero, a submessage, "a". */
static void put_tiny(GByteArray *b, const ProtobufCFieldDescriptor *f) {
        static const guint8 zeros[8] = {}, a = 'a';

        switch (f->type) {
        case PROTOBUF_C_TYPE_FIXED32: case PROTOBUF_C_TYPE_SFIXED32: case PROTOBUF_C_TYPE_FLOAT:
                put_tag(b, f->id, 5);
                g_byte_array_append(b, zeros, 4);
                return;
        case PROTOBUF_C_TYPE_FIXED64: case PROTOBUF_C_TYPE_SFIXED64: case PROTOBUF_C_TYPE_DOUBLE:
                put_tag(b, f->id, 1);
                g_byte_array_append(b, zeros, 8);
                return;
        case PROTOBUF_C_TYPE_STRING: case PROTOBUF_C_TYPE_BYTES:
                put_tag(b, f->id, 2);
                put_varint(b, 1);
                g_byte_array_append(b, &a, 1);
                return;
        case PROTOBUF_C_TYPE_MESSAGE:
                put_tiny_message(b, f);
                return;
        default:
                put_tag(b, f->id, 0);
                put_varint(b, 0);
                return;
        }
}

/* @f at its worst within @budget bytes: as many tiny elements as fit when repeated, one
 * long string otherwise. */
static GByteArray *worst_leaf(const ProtobufCFieldDescriptor *f, size_t budget) {
        GByteArray *b = g_byte_array_new();

        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
                for (;;) {
                        guint before = b->len;

                        put_tiny(b, f);
                        if (b->len > budget) {
                                g_byte_array_set_size(b, before);
                                return b;
                        }
                }
        }
        put_tag(b, f->id, 2);
        put_varint(b, budget);
        g_byte_array_set_size(b, b->len + (guint) budget);
        memset(b->data + b->len - budget, 'a', budget);
        return b;
}

/* @inner as field @f of its message, with a name beside it when the message has one (a
 * data source without a name is refused before anything else of it is read). */
static GByteArray *wrap(const ProtobufCMessageDescriptor *d, const ProtobufCFieldDescriptor *f, GByteArray *inner) {
        const ProtobufCFieldDescriptor *name = protobuf_c_message_descriptor_get_field_by_name(d, "name");
        GByteArray *b = g_byte_array_new();

        if (name && name != f && name->type == PROTOBUF_C_TYPE_STRING) {
                put_tag(b, name->id, 2);
                put_varint(b, 4);
                g_byte_array_append(b, (const guint8 *) "cost", 4);
        }
        put_tag(b, f->id, 2);
        put_varint(b, inner->len);
        g_byte_array_append(b, inner->data, inner->len);
        g_byte_array_unref(inner);
        return b;
}

/* The request of @method with the field at the end of @path (@n fields from the
 * request's own) at its worst, within @budget bytes of leaf. */
static GByteArray *worst_request(ProducerPortMethod method, const ProtobufCFieldDescriptor **path, unsigned n,
                                 size_t budget) {
        const ProtobufCMessageDescriptor *owners[PATH_DEPTH_MAX];
        GByteArray *b;

        owners[0] = producer_port_request_descriptor(method);
        for (unsigned i = 1; i < n; i++)
                owners[i] = path[i - 1]->descriptor;
        b = worst_leaf(path[n - 1], budget);
        for (unsigned i = n - 1; i > 0; i--)
                b = wrap(owners[i - 1], path[i - 1], b);
        return b;
}

/* The frame of @method's worst request along @path, as near IPC_FRAME_MAX as it goes. */
static uint8_t *worst_frame(ProducerPortMethod method, const ProtobufCFieldDescriptor **path, unsigned n,
                            size_t *ret_size) {
        size_t budget = IPC_FRAME_MAX;

        for (;;) {
                g_autoptr(GByteArray) args = worst_request(method, path, n, budget);
                uint8_t *frame = producer_client_pack_call(3, method, args->data, args->len, false, ret_size);

                if (*ret_size <= IPC_FRAME_MAX)
                        return frame;
                g_free(frame);
                budget -= *ret_size - IPC_FRAME_MAX;
        }
}

static SocketCase *frame_case(char *name, uint8_t *bytes, size_t size, bool initialize) {
        SocketCase *c = g_new0(SocketCase, 1);

        *c = (SocketCase) { .name = name, .kind = CASE_FRAME, .bytes = bytes, .size = size, .initialize = initialize };
        return c;
}

/* @method's small request naming the data source "cost", the name every worst
 * descriptor has, packed with drop_reply. */
static uint8_t *cost_source_call(ProducerPortMethod method, size_t *ret_size) {
        Tracebus__DataSourceDescriptor d = TRACEBUS__DATA_SOURCE_DESCRIPTOR__INIT;
        Tracebus__RegisterDataSourceRequest reg = TRACEBUS__REGISTER_DATA_SOURCE_REQUEST__INIT;
        Tracebus__UnregisterDataSourceRequest unreg = TRACEBUS__UNREGISTER_DATA_SOURCE_REQUEST__INIT;
        ProtobufCMessage *m = method == PRODUCER_PORT_REGISTER_DATA_SOURCE ? &reg.base : &unreg.base;
        g_autofree uint8_t *args = NULL;
        size_t size;

        d.name = (char *) "cost";
        reg.data_source_descriptor = &d;
        unreg.data_source_name = (char *) "cost";
        args = g_malloc(protobuf_c_message_get_packed_size(m));
        size = protobuf_c_message_pack(m, args);
        return producer_client_pack_call(4, method, args, size, true, ret_size);
}

/* A registration does its whole work only for a name not yet registered, an update
 * only for one that is: each Register is undone after it, an Update has one to replace. */
static void add_source_state(SocketCase *c, ProducerPortMethod method) {
        if (method == PRODUCER_PORT_REGISTER_DATA_SOURCE)
                c->after = cost_source_call(PRODUCER_PORT_UNREGISTER_DATA_SOURCE, &c->after_size);
        else if (method == PRODUCER_PORT_UPDATE_DATA_SOURCE)
                c->setup = cost_source_call(PRODUCER_PORT_REGISTER_DATA_SOURCE, &c->setup_size);
}

static void add_path_case(GPtrArray *cases, ProducerPortMethod method, const ProtobufCFieldDescriptor **path,
                          unsigned n) {
        g_autoptr(GString) name = g_string_new(producer_port_method_to_string(method));
        size_t size;
        uint8_t *bytes = worst_frame(method, path, n, &size);

        for (unsigned i = 0; i < n; i++)
                g_string_append_printf(name, "%c%s", i ? '.' : '(', path[i]->name);
        g_string_append_printf(name, " %s, %zu bytes)", path[n - 1]->label == PROTOBUF_C_LABEL_REPEATED ?
                               "repeated" : "long", size);
        /* A second InitializeConnection is out of order: that case binds only. */
        g_ptr_array_add(cases, frame_case(g_string_free(g_steal_pointer(&name), FALSE), bytes, size,
                                          method != PRODUCER_PORT_INITIALIZE_CONNECTION));
        ((SocketCase *) cases->pdata[cases->len - 1])->streamed = method == PRODUCER_PORT_GET_ASYNC_COMMAND;
        add_source_state(cases->pdata[cases->len - 1], method);
}

static bool in_path(const ProtobufCFieldDescriptor **path, unsigned n, const void *descriptor) {
        for (unsigned i = 0; i < n; i++)
                if (path[i]->descriptor == descriptor)
                        return true;
        return false;
}

/* A case for each field under @d whose size a producer chooses, at any depth. */
static void add_field_cases(GPtrArray *cases, ProducerPortMethod method, const ProtobufCMessageDescriptor *d,
                            const ProtobufCFieldDescriptor **path, unsigned n) {
        for (unsigned i = 0; i < d->n_fields; i++) {
                const ProtobufCFieldDescriptor *f = &d->fields[i];

                path[n] = f;
                if (f->label == PROTOBUF_C_LABEL_REPEATED || f->type == PROTOBUF_C_TYPE_STRING ||
                    f->type == PROTOBUF_C_TYPE_BYTES)
                        add_path_case(cases, method, path, n + 1);
                if (f->type == PROTOBUF_C_TYPE_MESSAGE && n + 1 < PATH_DEPTH_MAX && !in_path(path, n, f->descriptor))
                        add_field_cases(cases, method, f->descriptor, path, n + 1);
        }
}

/* ---- the cases beside the methods ---- */

static void add_raw_cases(GPtrArray *cases) {
        uint8_t *garbage = g_malloc(IPC_FRAME_MAX), *over = g_malloc0(8), *sync;
        SocketCase *c;
        size_t size;

        memset(garbage, 0xff, IPC_FRAME_MAX);
        for (unsigned i = 0; i < IPC_FRAME_HEADER_SIZE; i++)
                garbage[i] = (uint8_t) ((IPC_FRAME_MAX - IPC_FRAME_HEADER_SIZE) >> (8 * i));
        g_ptr_array_add(cases, frame_case(g_strdup("a full frame of garbage"), g_memdup2(garbage, IPC_FRAME_MAX),
                                          IPC_FRAME_MAX, true));
        c = frame_case(g_strdup("a full frame of garbage with an fd"), g_memdup2(garbage, IPC_FRAME_MAX),
                       IPC_FRAME_MAX, true);
        c->with_fd = true;
        g_ptr_array_add(cases, c);
        c = frame_case(g_strdup("half a full frame, then silence"), garbage, IPC_FRAME_MAX, true);
        c->kind = CASE_HALF_FRAME;
        g_ptr_array_add(cases, c);
        over[0] = over[1] = over[2] = over[3] = 0xff;
        g_ptr_array_add(cases, frame_case(g_strdup("a length prefix of 4 GiB"), over, 8, true));
        sync = producer_client_pack_call(3, PRODUCER_PORT_SYNC, NULL, 0, false, &size);
        c = frame_case(g_strdup("Sync with an fd"), sync, size, true);
        c->with_fd = true;
        g_ptr_array_add(cases, c);
        c = frame_case(g_strdup_printf("%u connections at once", CONNECTIONS_PER_ROUND), NULL, 0, false);
        c->kind = CASE_CONNECTIONS;
        g_ptr_array_add(cases, c);
}

static GPtrArray *all_cases(void) {
        GPtrArray *cases = g_ptr_array_new_with_free_func((GDestroyNotify) socket_case_free);
        const ProtobufCFieldDescriptor *path[PATH_DEPTH_MAX];

        for (int m = PRODUCER_PORT_INITIALIZE_CONNECTION; m < _PRODUCER_PORT_METHOD_MAX; m++) {
                const ProtobufCMessageDescriptor *d = producer_port_request_descriptor((ProducerPortMethod) m);
                guint before = cases->len;

                g_assert_nonnull(d);
                add_field_cases(cases, (ProducerPortMethod) m, d, path, 0);
                /* A request without fields: a full frame of it all the same, padded with
                 * an unknown field, which the reader must skip. */
                if (cases->len == before) {
                        g_autoptr(GByteArray) pad = g_byte_array_new();
                        size_t size;
                        uint8_t *frame;

                        put_tag(pad, 1000, 2);
                        put_varint(pad, IPC_FRAME_MAX - 64);
                        g_byte_array_set_size(pad, pad->len + IPC_FRAME_MAX - 64);
                        memset(pad->data + pad->len - (IPC_FRAME_MAX - 64), 'a', IPC_FRAME_MAX - 64);
                        frame = producer_client_pack_call(3, (ProducerPortMethod) m, pad->data, pad->len, false, &size);
                        g_assert_cmpuint(size, <=, IPC_FRAME_MAX);
                        g_ptr_array_add(cases, frame_case(g_strdup_printf("%s(unknown field, %zu bytes)",
                                                                          producer_port_method_to_string(m), size),
                                                          frame, size, true));
                        ((SocketCase *) cases->pdata[cases->len - 1])->streamed = m == PRODUCER_PORT_GET_ASYNC_COMMAND;
                }
        }
        add_raw_cases(cases);
        return cases;
}

/* ---- flooding, in a child that became the test user ---- */

typedef struct FloodState {
        const SocketCase *c;
        const char *path;
        int sock;
        IpcReader *reader;
        unsigned calls, closes;
} FloodState;

static void flood_disconnect(FloodState *s) {
        if (s->sock >= 0)
                close(s->sock);
        s->sock = -1;
        g_clear_pointer(&s->reader, ipc_reader_free);
}

/* A connection bound (and initialized, when the case wants it), or false. */
static bool flood_connect(FloodState *s) {
        if (s->sock >= 0)
                return true;
        s->sock = producer_client_connect(s->path);
        if (s->sock < 0 || ipc_reader_new(&s->reader) < 0)
                return false;
        if (producer_client_handshake(s->sock, s->reader, "cost", s->c->initialize, HANDSHAKE_MS) < 0 ||
            (s->c->setup && producer_client_send(s->sock, s->c->setup, s->c->setup_size, -1) < 0)) {
                /* Over the user's limit, or closed: counted as the service's answer. */
                s->closes++;
                flood_disconnect(s);
                return false;
        }
        return true;
}

/* Reads and drops what the service sent; false when it closed the connection. */
static bool flood_drain(FloodState *s) {
        char buf[4096];

        for (;;) {
                ssize_t n = recv(s->sock, buf, sizeof(buf), MSG_DONTWAIT);

                if (n > 0)
                        continue;
                return n < 0 && (errno == EAGAIN || errno == EINTR);
        }
}

/* One frame of the case: sent, then what came back read (unless @first: its answer is
 * looked at); reconnects when closed. */
static void flood_frame(FloodState *s, int null_fd, bool first) {
        size_t size = s->c->kind == CASE_HALF_FRAME ? s->c->size / 2 : s->c->size;

        /* Half a frame stays silent on its connection until the next round. */
        if (s->c->kind == CASE_HALF_FRAME)
                flood_disconnect(s);
        if (!flood_connect(s))
                return;
        if (producer_client_send(s->sock, s->c->bytes, size, s->c->with_fd ? null_fd : -1) < 0 ||
            (s->c->after && producer_client_send(s->sock, s->c->after, s->c->after_size, -1) < 0) ||
            (s->c->kind == CASE_FRAME && !first && !flood_drain(s))) {
                s->closes++;
                flood_disconnect(s);
        }
}

static void flood_connections(FloodState *s) {
        int fds[CONNECTIONS_PER_ROUND];

        for (unsigned i = 0; i < CONNECTIONS_PER_ROUND; i++)
                fds[i] = producer_client_connect(s->path);
        for (unsigned i = 0; i < CONNECTIONS_PER_ROUND; i++)
                if (fds[i] >= 0)
                        close(fds[i]);
}

/* The first frame's answer: "reply", "closed" or "none" (a stream such as
 * GetAsyncCommand answers later). */
static const char *first_answer(FloodState *s) {
        struct pollfd p = { .fd = s->sock, .events = POLLIN };
        char c;

        if (s->c->kind != CASE_FRAME)
                return "sent";
        if (s->sock < 0)
                return "closed";
        if (poll(&p, 1, FIRST_ANSWER_MS) <= 0)
                return "none";
        return recv(s->sock, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 1 ? "reply" : "closed";
}

/* As @user: the case again and again, GAP_US apart, until a byte or EOF on @ctl. Reports
 * "R answer" after the first, then "F calls closes". */
static G_NORETURN void flood_child(const TbUser *user, int report, int ctl, const void *data) {
        FloodState s = { .c = data, .path = g_build_filename(tb_bus()->tmpdir, TB_PRODUCER_SOCKET, NULL), .sock = -1 };
        int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        char line[128];

        tb_user_become(user);
        do {
                if (s.c->kind == CASE_CONNECTIONS)
                        flood_connections(&s);
                else
                        flood_frame(&s, null_fd, s.calls == 0);
                if (s.calls++ == 0) {
                        snprintf(line, sizeof(line), "R %s\n", first_answer(&s));
                        tb_write_all(report, line, strlen(line));
                }
                usleep(GAP_US);
        } while (!hostile_ctl_pending(ctl));
        snprintf(line, sizeof(line), "F %u %u\n", s.calls, s.closes);
        tb_write_all(report, line, strlen(line));
        _exit(0);
}

/* ---- timing ---- */

typedef struct CaseFlood {
        const SocketCase *c;
        Client client;
} CaseFlood;

static char *case_flood_start(void *data) {
        CaseFlood *f = data;
        g_autofree char *first = NULL, *err = NULL;

        client_spawn_func("tbuser", flood_child, f->c, &f->client);
        first = client_expect(&f->client, 'R', tb_scaled_ms(FIRST_ANSWER_MS + HANDSHAKE_MS + 5000), &err);
        if (first && g_str_equal(first, "none") && !f->c->streamed) {
                client_kill(&f->client);
                return g_strdup_printf("the service neither answered the first frame within %u ms nor closed the "
                                       "connection", FIRST_ANSWER_MS);
        }
        if (first) {
                note("  first answer: %s\n", first);
                return NULL;
        }
        client_kill(&f->client);
        return g_strdup("the flood's first frame got no answer in time");
}

static char *case_flood_finish(void *data) {
        CaseFlood *f = data;
        g_autofree char *done = NULL, *err = NULL;
        unsigned calls = 0, closes = 0;

        if (write(f->client.ctl_fd, "x", 1) == 1)
                done = client_expect(&f->client, 'F', tb_scaled_ms(60000), &err);
        if (!done || sscanf(done, "%u %u", &calls, &closes) != 2) {
                client_kill(&f->client);
                return g_strdup("the flood did not finish");
        }
        client_finish(&f->client, 5000);
        note("  %u rounds, %u connections closed by the service\n", calls, closes);
        return calls < 2 ? g_strdup_printf("only %u rounds", calls) : NULL;
}

static void test_every_message(void) {
        g_autoptr(GPtrArray) cases = all_cases(), failures = g_ptr_array_new_with_free_func(g_free);
        gint64 begin = g_get_monotonic_time();

        note("%u cases from ProducerPort's method table and the frame layer\n", cases->len);
        for (guint i = 0; i < cases->len; i++) {
                CaseFlood f = { .c = cases->pdata[i] };
                const HostileLoad load = { case_flood_start, case_flood_finish, &f };
                g_autofree char *why = NULL;

                note("%s\n", f.c->name);
                why = hostile_load_check_ratio(&load, "tbuser", MAX_RATIO, PROBES, ATTEMPTS);
                if (!why)
                        continue;
                note("FAILED %s: %s\n", f.c->name, why);
                g_ptr_array_add(failures, g_strdup_printf("%s: %s", f.c->name, why));
        }
        note("%u cases in %.1f s, %u failed\n", cases->len, (double) (g_get_monotonic_time() - begin) / 1e6,
             failures->len);
        g_assert_cmpuint(failures->len, ==, 0);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();

        tb_test_add_isolated("/bus/producer-cost/every-message", test_every_message);
        return tb_test_run(TB_START_SERVICE);
}
