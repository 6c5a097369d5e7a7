/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "macro.h"
#include "producer-ipc.h"
#include "shm-abi.h"

/*
 * The apps built with the Perfetto SDK that connect to the producer socket: each
 * connection is a Producer, read and written on the event loop without ever blocking.
 * Who a producer is comes from SO_PEERCRED alone; its name and data sources are what it
 * says about itself. Everything a producer sends is bounded per UID: connections, data
 * sources, a frame's size and what waits to be written to it. A producer that breaks the
 * protocol loses its connection, with one log line.
 */

typedef struct Producers Producers;
typedef struct Producer Producer;

/* What a producer may hold; set by the manager (core/manager-limits.c). */
typedef struct ProducerLimits {
        unsigned max_producers;              /* all UIDs together */
        unsigned max_producers_per_uid;
        unsigned max_data_sources_per_uid;   /* registered by all of one UID's producers */
        /* BindService and InitializeConnection must be done by then, or the connection is
         * closed: a connection that never speaks would hold its UID's slot for good. */
        uint64_t handshake_timeout_usec;
        uint64_t max_smb_bytes_per_uid;      /* shared memory all of one UID's producers get */
} ProducerLimits;

/* What a producer says it offers: the data source's name, and for track_event its
 * categories (names only). */
typedef struct ProducerDataSource {
        char *name;
        char **categories;                   /* NULL-terminated; may be NULL */
        unsigned n_categories;
        bool notifies_stop;                  /* will_notify_on_stop: else its flush's ack ends it */
} ProducerDataSource;

/* A data source instance a session started in this producer. */
typedef struct ProducerInstance {
        uint64_t id;                         /* service-unique */
        uint32_t target_buffer;              /* service-global buffer id it writes to */
        bool started, stopped;               /* NotifyDataSourceStarted / Stopped seen */
        bool stopping;                       /* StopDataSource sent */
        bool notifies_stop;                  /* its data source says NotifyDataSourceStopped */
} ProducerInstance;

/* Which global buffer one of its trace writers writes to, as its chunks say. */
typedef struct ProducerWriter {
        uint16_t id;
        uint32_t target_buffer;
} ProducerWriter;

/* What the producers tell the service's sessions (core/manager-producers.c). */
typedef struct ProducerSink {
        /* @producer registered the data source @name (or updated it). */
        void (*source_registered)(Producer *producer, const char *name, void *userdata);
        /* A whole packet of @producer's writer @writer_id, validated at its top level, for
         * @target_buffer, one of the buffers it was given. */
        void (*packet)(Producer *producer, uint32_t target_buffer, uint16_t writer_id, bool previous_dropped,
                       const uint8_t *data, size_t size, void *userdata);
        /* A packet of @producer's writer for @target_buffer, one of the buffers it was given,
         * dropped: -EPERM when it writes a field only the service writes, -EBADMSG when it
         * is no TracePacket. */
        void (*packet_refused)(Producer *producer, uint32_t target_buffer, int error, void *userdata);
        /* The producer said NotifyDataSourceStopped for @instance_id. */
        void (*instance_stopped)(Producer *producer, uint64_t instance_id, void *userdata);
        /* A CommitData acknowledged the Flush @flush_request_id, after its data. */
        void (*flush_acked)(Producer *producer, uint64_t flush_request_id, void *userdata);
        /* The producer went away; what it held was handed over (packet) first. */
        void (*gone)(Producer *producer, void *userdata);
        /* The producer asked for triggers (ActivateTriggers). */
        void (*triggers)(Producer *producer, char **names, size_t n_names, void *userdata);
} ProducerSink;

/* Trace writers one producer may use at once, and what a packet of it may be: the SDK
 * uses a few per thread that traces. */
#define PRODUCER_WRITERS_MAX 1024u
/* Data source instances one producer holds at once, of all sessions together. */
#define PRODUCER_INSTANCES_MAX 256u

/* What a producer's tracing dropped, counted (producer-tracing.c). */
typedef struct ProducerDrops {
        uint64_t chunks_wrong_buffer;        /* a target buffer it was not given */
        uint64_t packets_invalid;            /* not a TracePacket at its top level */
        uint64_t packets_reserved;           /* a field only the service may write */
} ProducerDrops;

struct Producer {
        Producers *owner;
        Producer *prev, *next;
        uint64_t id;                         /* the service's own, in order of connection */
        int fd;
        uid_t uid;                           /* from SO_PEERCRED */
        pid_t pid;
        char *name;                          /* from InitializeConnection; NULL before it */
        ProducerDataSource *sources;
        unsigned n_sources;

        sd_event_source *io;
        sd_event_source *handshake_timer;    /* until InitializeConnection is answered */
        IpcReader *reader;
        IpcWriter *writer;
        bool bound;
        bool has_async;                      /* a GetAsyncCommand waits for commands */
        uint64_t async_request_id;

        /* Tracing, once a session set it up (producer-tracing.c). */
        uint32_t smb_size_hint;              /* InitializeConnection's, bytes; 0: none */
        Smb smb;                             /* base NULL before SetupTracing */
        int smb_fd;
        SmbReassembler *reassembler;
        ProducerInstance *instances;
        unsigned n_instances;
        ProducerWriter *writers;
        unsigned n_writers;
        ProducerDrops drops;
};

struct Producers {
        sd_event *event;
        int listen_fd;
        sd_event_source *listen_io;
        Producer *list;
        unsigned n_producers;
        uint64_t last_id;
        ProducerLimits limits;
        const ProducerSink *sink;
        void *sink_userdata;
        uint64_t last_instance_id;
        uint32_t last_buffer_id;             /* service-global buffer ids given to sessions */
};

int producers_new(sd_event *event, const ProducerLimits *limits, Producers **ret);
Producers *producers_free(Producers *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(Producers *, producers_free);

/* Accepts connections on @fd, a listening stream socket, from now on; takes it. */
int producers_listen(Producers *p, int fd);

/* A listening socket at @path, mode 0666, its old file removed first. */
int producers_bind_path(const char *path, int *ret_fd);

unsigned producers_count_uid(const Producers *p, uid_t uid);
unsigned producers_count_data_sources_uid(const Producers *p, uid_t uid);

/* ---- one connection (producer-connection.c) ---- */

int producer_new(Producers *owner, int fd, uid_t uid, pid_t pid, Producer **ret);
/* Closes the connection; @reason (may be NULL) is logged once. */
void producer_close(Producer *producer, const char *reason, int error);

/* Queues what was written to @producer's socket for sending and watches for room. */
int producer_update_events(Producer *producer);

/* ---- its data sources (producer-sources.c) ---- */

/* Registers or, with @update, replaces a data source. -EEXIST when already registered
 * (without @update), -ENOENT to update an unknown one, -EUSERS over the UID's limit,
 * -EINVAL without a name. */
int producer_register_source(Producer *producer, const Tracebus__DataSourceDescriptor *descriptor,
                             bool update);
int producer_unregister_source(Producer *producer, const char *name);
void producer_free_sources(Producer *producer);

bool producer_has_source(const Producer *producer, const char *name);

/* ---- tracing (producer-tracing.c) ---- */

void producers_set_sink(Producers *p, const ProducerSink *sink, void *userdata);

/* What a session gives a producer to start: its data source's config as the session's
 * config wrote it (packed DataSourceConfig), with the fields the service sets. */
typedef struct ProducerStart {
        const char *name;
        const uint8_t *config;
        size_t config_len;
        uint32_t target_buffer;              /* service-global */
        uint64_t tracing_session_id;
        uint32_t duration_ms;
        uint32_t stop_timeout_ms;
        size_t smb_size;                     /* wanted; 0: the producer's hint or the default */
} ProducerStart;

/* Sets up tracing (once per producer: its shared memory, sent with SetupTracing), then
 * SetupDataSource and StartDataSource of a new instance, whose id is *@ret_instance_id.
 * -ENOTCONN before the producer asked for commands, -EUSERS over its UID's shared memory
 * bound or its instances' bound. */
int producer_start_instance(Producer *producer, const ProducerStart *start, uint64_t *ret_instance_id);
/* Flush of an instance: its writers commit what they hold. */
int producer_flush_instance(Producer *producer, uint64_t instance_id, uint64_t flush_request_id);
/* ClearIncrementalState of an instance: its writers emit their interned data and track
 * descriptors again before the packets that use them. */
int producer_clear_instance_state(Producer *producer, uint64_t instance_id);
/* Flush (@flush_request_id, 0: none) then StopDataSource of an instance. Its buffer stays
 * the producer's, for the data of the flush, until producer_forget_instance(). */
int producer_stop_instance(Producer *producer, uint64_t instance_id, uint64_t flush_request_id);
void producer_forget_instance(Producer *producer, uint64_t instance_id);
/* Whether instance @id said NotifyDataSourceStopped (or is no longer the producer's). */
bool producer_instance_stopped(const Producer *producer, uint64_t id);
/* Copies every chunk not free out of the shared memory and hands over every packet that
 * can be whole, as when the producer went away: for the session that stops. */
void producer_scrape(Producer *producer);
/* The calls of the protocol that tracing answers (producer-connection.c dispatches):
 * CommitData, the trace writers, the instances' notifications, ActivateTriggers. */
int producer_on_tracing_call(Producer *producer, ProducerPortMethod method, const ProtobufCMessage *args);
int producer_commit(Producer *producer, const Tracebus__CommitDataRequest *request);
int producer_register_writer(Producer *producer, const Tracebus__RegisterTraceWriterRequest *request);
int producer_unregister_writer(Producer *producer, const Tracebus__UnregisterTraceWriterRequest *request);
void producer_note_instance(Producer *producer, uint64_t instance_id, bool stopped);
/* Before the producer is freed: its last data scraped and handed over, its memory unmapped. */
void producer_tracing_end(Producer *producer);
Producer *producers_find(Producers *p, uint64_t id);
/* @n service-global buffer ids, consecutive: the first is returned. */
uint32_t producers_allocate_buffers(Producers *p, size_t n);
uint64_t producers_smb_bytes_uid(const Producers *p, uid_t uid);

/* ---- its packets (producer-packets.c) ---- */

/* 0 when @data is a TracePacket at its top level (valid keys, wire types 0, 1, 2, 5, ends
 * on a field's end) and holds no field only the service writes; -EBADMSG, or -EPERM for a
 * reserved field. */
int producer_packet_check(const uint8_t *data, size_t size);
/* The bytes the service appends to a producer's packet: trusted_uid, trusted_pid,
 * trusted_packet_sequence_id, and previous_packet_dropped when @dropped. Returns their
 * length (at most PRODUCER_STAMP_MAX). */
#define PRODUCER_STAMP_MAX 48u
size_t producer_packet_stamp(uint8_t out[static PRODUCER_STAMP_MAX], uid_t uid, pid_t pid, uint32_t sequence_id,
                             bool dropped);
