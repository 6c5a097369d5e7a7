/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite: the producer socket's bounds in time and in output. A connection that does
 * not bind and initialize within ProducerHandshakeTimeoutSec= (shortened here) is closed
 * and its user's slot freed; a producer that sends requests and never reads the replies
 * is closed once its output queue is full, while another producer is answered as before.
 */
#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include "producer-client.h"
#include "tb-client.h"
#include "session-util.h"
#include "system-bus.h"
#include "test-util.h"

#define HANDSHAKE_TIMEOUT_MS 2000u
#define REPLY_TIMEOUT_MS 5000u
#define PRODUCERS_PER_UID 64u

static char *socket_path(void) {
        return g_build_filename(tb_bus()->tmpdir, TB_PRODUCER_SOCKET, NULL);
}

static int connect_or_die(void) {
        g_autofree char *path = socket_path();
        int fd = producer_client_connect(path);

        g_assert_cmpint(fd, >=, 0);
        return fd;
}

/* Whether @fd is still open: nothing to read, and no end of stream. */
static bool still_open(int fd) {
        char c;
        ssize_t n = recv(fd, &c, 1, MSG_DONTWAIT);

        return n < 0 && errno == EAGAIN;
}

/* A full share of connections that never finish the handshake (half of them bound, the
 * rest silent) hold root's slots: one more is refused. After the timeout all are closed,
 * and a new connection binds, initializes and stays past the timeout. */
static void case_handshake_timeout(void) {
        g_autoptr(IpcReader) reader = NULL;
        int fds[PRODUCERS_PER_UID], extra, fresh;

        for (unsigned i = 0; i < PRODUCERS_PER_UID; i++) {
                g_autoptr(IpcReader) r = NULL;

                fds[i] = connect_or_die();
                g_assert_cmpint(ipc_reader_new(&r), ==, 0);
                if (i % 2 == 0)
                        g_assert_cmpint(producer_client_handshake(fds[i], r, NULL, false, tb_scaled_ms(REPLY_TIMEOUT_MS)),
                                        ==, 0);
        }
        extra = connect_or_die();
        g_assert_true(producer_client_closed(extra, tb_scaled_ms(REPLY_TIMEOUT_MS)));
        close(extra);
        for (unsigned i = 0; i < PRODUCERS_PER_UID; i++)
                g_assert_true(still_open(fds[i]));
        for (unsigned i = 0; i < PRODUCERS_PER_UID; i++) {
                if (!producer_client_closed(fds[i], tb_scaled_ms(4 * HANDSHAKE_TIMEOUT_MS)))
                        g_error("connection %u (%s) outlived the handshake timeout", i, i % 2 ? "silent" : "bound");
                close(fds[i]);
        }
        g_assert_cmpint(ipc_reader_new(&reader), ==, 0);
        fresh = connect_or_die();
        g_assert_cmpint(producer_client_handshake(fresh, reader, "after-timeout", true, tb_scaled_ms(REPLY_TIMEOUT_MS)),
                        ==, 0);
        g_assert_false(producer_client_closed(fresh, tb_scaled_ms(2 * HANDSHAKE_TIMEOUT_MS)));
        close(fresh);
        {
                g_autofree char *log = service_log();

                g_assert_nonnull(strstr(log, "disconnected: no BindService in time"));
                g_assert_nonnull(strstr(log, "disconnected: no InitializeConnection in time"));
        }
}

/* A Sync of @fd's producer as request @id, answered within the reply timeout. */
static bool sync_answered(int fd, IpcReader *reader, uint64_t id) {
        g_autofree uint8_t *call = NULL;
        Tracebus__IPCFrame *frame = NULL;
        size_t size;
        bool ok;

        call = producer_client_pack_call(id, PRODUCER_PORT_SYNC, NULL, 0, false, &size);
        if (producer_client_send(fd, call, size, -1) < 0)
                return false;
        if (producer_client_receive(fd, reader, tb_scaled_ms(REPLY_TIMEOUT_MS), &frame) != 1)
                return false;
        ok = frame->request_id == id && frame->msg_case == TRACEBUS__IPCFRAME__MSG_MSG_INVOKE_METHOD_REPLY &&
             frame->msg_invoke_method_reply->success;
        ipc_frame_free(frame);
        return ok;
}

/* Syncs sent without reading a reply, until the service closes the connection: how
 * many it took, or 0 when it was still open after @max. */
static unsigned syncs_until_closed(int fd, unsigned max) {
        size_t size;
        g_autofree uint8_t *call = producer_client_pack_call(100, PRODUCER_PORT_SYNC, NULL, 0, false, &size);

        for (unsigned i = 1; i <= max; i++) {
                int r = producer_client_send(fd, call, size, -1);

                if (r == -EPIPE || r == -ECONNRESET)
                        return i;
                g_assert_cmpint(r, ==, 0);
        }
        return 0;
}

/* A producer that never reads is closed at the bound, with one log line; another one
 * is answered all along. */
static void case_never_reads(void) {
        g_autoptr(IpcReader) reader = NULL, other_reader = NULL;
        int hog = connect_or_die(), other = connect_or_die();
        unsigned sent;

        g_assert_cmpint(ipc_reader_new(&reader), ==, 0);
        g_assert_cmpint(ipc_reader_new(&other_reader), ==, 0);
        g_assert_cmpint(producer_client_handshake(hog, reader, "never-reads", true, tb_scaled_ms(REPLY_TIMEOUT_MS)), ==, 0);
        g_assert_cmpint(producer_client_handshake(other, other_reader, "reads", true, tb_scaled_ms(REPLY_TIMEOUT_MS)),
                        ==, 0);
        g_assert_true(sync_answered(other, other_reader, 10));
        /* Far more than the socket's buffers and the queue's bound hold. */
        sent = syncs_until_closed(hog, 1000000);
        note("the service closed the producer that never reads after %u Syncs\n", sent);
        g_assert_cmpuint(sent, >, 0);
        /* The socket's buffers hold some hundreds of replies, the queue IPC_OUTPUT_FRAMES_MAX
         * more; bounded by bytes alone it would take a hundred thousand tiny ones. */
        g_assert_cmpuint(sent, <, 20000);
        g_assert_true(sync_answered(other, other_reader, 11));
        close(hog);
        close(other);
        {
                g_autofree char *log = service_log();

                g_assert_nonnull(strstr(log, "(never-reads, UID 0, "));
                g_assert_nonnull(strstr(log, "disconnected: peer does not read its socket: output queue full"));
        }
}

int main(int argc, char **argv) {
        g_autofree char *conf = NULL;

        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();
        conf = g_strdup_printf("[Limits]\nProducerHandshakeTimeoutSec=%ums\n", tb_scaled_ms(HANDSHAKE_TIMEOUT_MS));
        g_setenv(TB_TEST_TRACEBUSD_CONF, conf, TRUE);

        tb_test_add_isolated("/bus/producer-bounds/01-handshake-timeout", case_handshake_timeout);
        tb_test_add_isolated("/bus/producer-bounds/02-never-reads", case_never_reads);
        return tb_test_run(TB_START_SERVICE);
}
