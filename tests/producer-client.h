/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * A producer of the tests' own on tracebusd's producer socket, speaking the wire with
 * libtracebus's frame reader: connect, bind and initialize, send any frame (the hostile
 * ones too), read replies, and see whether the service closed the connection. Only
 * system calls and the frame code, so that a forked child that became a test user may
 * use it; errors are returned, never asserted.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <glib.h>

#include "producer-ipc.h"

G_DEFINE_AUTOPTR_CLEANUP_FUNC(IpcReader, ipc_reader_free)

/* The request ids of the handshake; a test's own requests come after them. */
#define PRODUCER_CLIENT_BIND_ID 1u
#define PRODUCER_CLIENT_INIT_ID 2u

/* A blocking connection to @path, or -errno. */
int producer_client_connect(const char *path);

/* @frame with its length prefix, in a buffer of the caller's (g_free()); *@ret_size its size. */
uint8_t *producer_client_pack(const Tracebus__IPCFrame *frame, size_t *ret_size);
/* An InvokeMethod of ProducerPort's @method with @args (its packed request), packed. */
uint8_t *producer_client_pack_call(uint64_t request_id, ProducerPortMethod method, const uint8_t *args,
                                   size_t args_size, bool drop_reply, size_t *ret_size);

/* Writes all of @data, with @fd (-1: none) on the first byte. -errno on failure. */
int producer_client_send(int sock, const void *data, size_t size, int fd);

/* The next frame from @sock, within @timeout_ms: 1 with *@ret (free with ipc_frame_free()),
 * 0 on timeout, -ECONNRESET when the service closed the connection, or another -errno. */
int producer_client_receive(int sock, IpcReader *reader, unsigned timeout_ms, Tracebus__IPCFrame **ret);

/* BindService, then InitializeConnection as @name (unless @initialize is false), each
 * waiting for its reply within @timeout_ms. 0, or -errno (-EPROTO: a refusal). */
int producer_client_handshake(int sock, IpcReader *reader, const char *name, bool initialize, unsigned timeout_ms);

/* Whether the service closed @sock within @timeout_ms (what it sent meanwhile is read
 * and dropped). */
bool producer_client_closed(int sock, unsigned timeout_ms);
