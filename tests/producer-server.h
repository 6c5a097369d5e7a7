/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "producer-ipc.h"
#include "shm-abi.h"

/*
 * A minimal service on Perfetto's producer socket for the tests, built on libtracebus's
 * producer layer: it listens on a private socket, serves one producer (BindService,
 * InitializeConnection, the GetAsyncCommand stream, RegisterDataSource, CommitData, ...),
 * gives it a memfd shared memory buffer, sends the commands a test asks for, and collects
 * the packets it reassembles from the buffer. No sessions, no trace file: the tests look
 * at the packets.
 */
typedef struct ProducerServer {
        char *dir;
        char *socket_path;
        int listen_fd;
        int conn_fd;
        IpcReader *reader;
        IpcWriter *writer;

        bool bound;
        bool initialized;
        char *producer_name;
        bool has_async;
        uint64_t async_request_id;
        GPtrArray *descriptors;         /* Tracebus__RegisterDataSourceRequest, as received */
        GArray *started;                /* uint64 instance ids NotifyDataSourceStarted named */
        GArray *stopped;                /* ... and NotifyDataSourceStopped */
        GArray *writers;                /* uint32 writer ids registered */
        uint64_t flush_acked;
        unsigned commits;
        bool eof;

        int smb_fd;
        Smb smb;                        /* mapped once SetupTracing was sent */
        SmbReassembler *reassembler;
        GPtrArray *packets;             /* GBytes, reassembled TracePackets */
} ProducerServer;

ProducerServer *producer_server_new(void);
void producer_server_free(ProducerServer *server);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ProducerServer, producer_server_free)

/* For g_spawn_*(): the child is killed when the test process dies. */
void producer_server_child_setup(gpointer data);

/* Runs @argv with PERFETTO_PRODUCER_SOCK_NAME set to the server's socket. */
GPid producer_server_spawn(ProducerServer *server, const char *const *argv);

/* Accepts the producer (waits up to @timeout_ms). */
void producer_server_accept(ProducerServer *server, int timeout_ms);

/* Serves the producer until @done(server, data) holds or @timeout_ms pass; false on
 * timeout. When the producer goes away, the buffer's chunks are scraped, as the service
 * does. */
typedef bool (*ProducerServerCondition)(ProducerServer *server, gconstpointer data);
bool producer_server_run_until(ProducerServer *server, ProducerServerCondition done,
                               gconstpointer data, int timeout_ms);

/* The descriptor the producer registered under @name, or NULL. */
const Tracebus__DataSourceDescriptor *producer_server_descriptor(ProducerServer *server, const char *name);

/* SetupTracing with the buffer (the first time), then SetupDataSource and StartDataSource
 * of @name as instance @instance_id. */
void producer_server_start(ProducerServer *server, const char *name, uint64_t instance_id);
void producer_server_flush(ProducerServer *server, uint64_t instance_id, uint64_t request_id);
void producer_server_stop(ProducerServer *server, uint64_t instance_id);

bool producer_server_has_id(GArray *ids, uint64_t id);
