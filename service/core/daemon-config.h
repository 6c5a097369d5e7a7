/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>

#include "macro.h"
/* The settings' sizes and time spans; --idle-timeout is read as IdleTimeoutSec= is. */
#include "parse-util.h"
#include "config/session-config.h"

/*
 * The service's own configuration, tracebusd.conf(5)-style (documented in tracebusd(8)):
 * DIR/tracebusd.conf, then DIR/tracebusd.conf.d/ *.conf in lexical order, each overriding
 * what came before. key=value lines in [Limits] and [Service] sections, '#' and ';'
 * comments. A line that cannot be used is logged with its file and line number and
 * ignored: the setting keeps its previous value, so a broken file never leaves the
 * service without safe limits.
 */

#define DAEMON_DEFAULT_MAX_SESSIONS 16u
#define DAEMON_DEFAULT_MAX_SESSIONS_PER_UID 5u
#define DAEMON_DEFAULT_TRACE_DIR_QUOTA_BYTES (4ull * 1024 * 1024 * 1024)
#define DAEMON_DEFAULT_IDLE_TIMEOUT_USEC (30ull * 1000 * 1000)
#define DAEMON_DEFAULT_OUTPUT_TIMEOUT_USEC (30ull * 1000 * 1000)
/* ProducerHandshakeTimeoutSec= unset: an SDK app binds and initializes within
 * milliseconds of connecting; ten seconds leaves room for a loaded machine, and a
 * connection that has not done it by then only holds one of its user's producer slots. */
#define DAEMON_DEFAULT_PRODUCER_HANDSHAKE_TIMEOUT_USEC (10ull * 1000 * 1000)
#define DAEMON_MAX_PRODUCER_HANDSHAKE_TIMEOUT_USEC (5ull * 60 * 1000 * 1000)
/* Upper bounds of what a config file may set, against typos such as an extra 0. */
#define DAEMON_MAX_SESSIONS_LIMIT 1024u
/* Calls waiting for polkit: dbus-daemon lets a system bus connection wait for 128
 * replies (max_replies_per_connection); the rest is room for the service's other calls. */
#define DAEMON_DEFAULT_MAX_PENDING 96u
#define DAEMON_DEFAULT_MAX_PENDING_PER_UID 8u
#define DAEMON_MAX_PENDING_LIMIT 120u
/* File descriptors one UID's sessions and waiting calls may hold (the unit's LimitNOFILE=
 * is 65536: a quarter, so that four users are needed to use up the service's). */
#define DAEMON_DEFAULT_MAX_FILES_PER_UID 16384u
#define DAEMON_MIN_FILES_PER_UID 16u
/* MaxBufferMemory= unset: this fraction of MemTotal (1/8). */
#define DAEMON_DEFAULT_BUFFER_MEMORY_DIVISOR 8u
/* What a session keeps of the processes it described (see process-scan.h). */
#define DAEMON_DEFAULT_MAX_PROCESS_ENTRIES 32768u
#define DAEMON_MIN_PROCESS_ENTRIES 64u
#define DAEMON_MAX_PROCESS_ENTRIES_LIMIT (4u * 1024 * 1024)
/* Threads reading the kernel's per-CPU buffers at once in Stop's final drain. */
#define DAEMON_DEFAULT_STOP_DRAIN_THREADS 8u
#define DAEMON_MAX_STOP_DRAIN_THREADS 256u

/* CloneMinIntervalSec= unset: a loop of clones writes a session's buffers at most this often. */
#define DAEMON_DEFAULT_CLONE_MIN_INTERVAL_USEC (5u * 1000000u)

typedef struct ManagerLimits {
        unsigned max_sessions;            /* all UIDs together */
        unsigned max_sessions_per_uid;
        uint64_t trace_dir_quota_bytes;   /* per UID, in the service's trace directory */
        uint32_t max_buffer_size_kb;      /* kernel buffer per CPU per session; at most SESSION_MAX_BUFFER_SIZE_KB */
        unsigned max_pending;             /* calls waiting for polkit, all UIDs together */
        unsigned max_pending_per_uid;     /* at most half of max_pending: see daemon_config_check() */
        unsigned max_files_per_uid;       /* fds one UID's sessions and waiting calls may hold */
        uint64_t max_buffer_memory_bytes; /* kernel buffers of all sessions; 0: 1/8 of MemTotal */
        uint32_t max_process_entries;     /* processes (and as many threads) a session keeps described */
        uint64_t output_timeout_usec;     /* a pipe or socket output's write deadline; UINT64_MAX: none */
        /* The least time between two snapshots of one session (Session.Clone). */
        uint64_t clone_min_interval_usec;
        unsigned stop_drain_threads;      /* how many CPUs Stop's final drain reads in parallel */
        /* How long a producer connection may take to bind and initialize. */
        uint64_t producer_handshake_timeout_usec;
} ManagerLimits;

typedef struct DaemonConfig {
        ManagerLimits limits;
        uint64_t idle_timeout_usec;       /* 0: never exit for being idle */
} DaemonConfig;

void daemon_config_init(DaemonConfig *c);

/* Applies the settings in @text, read from @filename (for messages). Returns the number
 * of lines it ignored (each logged as a warning), or -ENOMEM. */
int daemon_config_parse(DaemonConfig *c, const char *text, const char *filename);

/* Reads @dir/tracebusd.conf and then @dir/tracebusd.conf.d/ *.conf. A missing file is
 * fine; an unreadable one is logged and skipped. Returns the number of files read, or
 * -ENOMEM. */
int daemon_config_load(DaemonConfig *c, const char *dir);

/* Makes the limits consistent, logging each change: one UID's share of the calls
 * waiting for polkit is at most half of MaxPending, so that one user can never take
 * them all. Returns the number of settings it lowered. */
int daemon_config_check(DaemonConfig *c);
