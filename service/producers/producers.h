/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "macro.h"
#include "producer-ipc.h"

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
} ProducerLimits;

/* What a producer says it offers: the data source's name, and for track_event its
 * categories (names only). */
typedef struct ProducerDataSource {
        char *name;
        char **categories;                   /* NULL-terminated; may be NULL */
        unsigned n_categories;
} ProducerDataSource;

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
};

struct Producers {
        sd_event *event;
        int listen_fd;
        sd_event_source *listen_io;
        Producer *list;
        unsigned n_producers;
        uint64_t last_id;
        ProducerLimits limits;
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

/* ---- its data sources (producer-sources.c) ---- */

/* Registers or, with @update, replaces a data source. -EEXIST when already registered
 * (without @update), -ENOENT to update an unknown one, -EUSERS over the UID's limit,
 * -EINVAL without a name. */
int producer_register_source(Producer *producer, const Tracebus__DataSourceDescriptor *descriptor,
                             bool update);
int producer_unregister_source(Producer *producer, const char *name);
void producer_free_sources(Producer *producer);
