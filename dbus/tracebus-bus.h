/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The bus contract: the names every program on both sides of the bus uses. The
 * interfaces themselves (methods, arguments, properties) are in the XML files
 * beside this header; tests/check-bus-contract.sh holds these names to them.
 * Plain macros, so that the service, the CLI, the tests (GLib) and the GTK app
 * can all include it.
 */

#define TB_BUS_NAME                     "org.tracebus.Tracebus1"
#define TB_MANAGER_PATH                 "/org/tracebus/Tracebus1"
#define TB_SESSION_PATH_PREFIX          "/org/tracebus/Tracebus1/session"
#define TB_MANAGER_INTERFACE            "org.tracebus.Tracebus1.Manager"
#define TB_SESSION_INTERFACE            "org.tracebus.Tracebus1.Session"

/* The polkit actions the service asks about, declared in polkit/org.tracebus.policy:
 * recording (Start, ListEvents); other users' sessions, raw kernel pointers and perf
 * kernel frames; kprobes and function tracing; ActivateTriggers. */
#define TB_ACTION_RECORD                "org.tracebus.record"
#define TB_ACTION_MANAGE                "org.tracebus.manage"
#define TB_ACTION_KPROBES               "org.tracebus.kprobes"
#define TB_ACTION_TRIGGER               "org.tracebus.trigger"

/* Errors a client can act on, beyond the standard org.freedesktop.DBus.Error.* ones.
 * Each is declared in the XML (annotation org.tracebus.Tracebus1.Errors) and has an
 * errno and an explanation in lib/bus/bus-errors.c. */
#define TB_ERROR_PREFIX                 "org.tracebus.Tracebus1.Error."
#define TB_ERROR_INVALID_CONFIG         TB_ERROR_PREFIX "InvalidConfig"
#define TB_ERROR_UNKNOWN_EVENT          TB_ERROR_PREFIX "UnknownEvent"
#define TB_ERROR_NO_SUCH_SESSION        TB_ERROR_PREFIX "NoSuchSession"
#define TB_ERROR_TOO_MANY_SESSIONS      TB_ERROR_PREFIX "TooManySessions"
#define TB_ERROR_KEY_IN_USE             TB_ERROR_PREFIX "KeyInUse"
#define TB_ERROR_OUTPUT_ERROR           TB_ERROR_PREFIX "OutputError"
#define TB_ERROR_QUOTA_EXCEEDED         TB_ERROR_PREFIX "QuotaExceeded"
#define TB_ERROR_TRACING_UNAVAILABLE    TB_ERROR_PREFIX "TracingUnavailable"
/* polkit gave no answer: the request is refused, but nobody decided it. */
#define TB_ERROR_AUTHORIZATION_UNAVAILABLE TB_ERROR_PREFIX "AuthorizationUnavailable"
/* A caller has MaxPendingPerUser calls waiting for polkit, or the service MaxPending. */
#define TB_ERROR_TOO_MANY_PENDING_CALLS TB_ERROR_PREFIX "TooManyPendingCalls"
/* A Start would pass the caller's file descriptor budget (MaxFilesPerUser) or the service's. */
#define TB_ERROR_RESOURCE_LIMIT         TB_ERROR_PREFIX "ResourceLimit"
/* A Start would pass MaxBufferMemory, the kernel buffer memory of all sessions together. */
#define TB_ERROR_BUFFER_MEMORY_EXHAUSTED TB_ERROR_PREFIX "BufferMemoryExhausted"
/* The service got SIGTERM: it finishes its sessions and starts none. */
#define TB_ERROR_SHUTTING_DOWN          TB_ERROR_PREFIX "ShuttingDown"
/* The trace directory holds what the quota cannot count (a subdirectory, a link). */
#define TB_ERROR_TRACE_DIRECTORY_REFUSED TB_ERROR_PREFIX "TraceDirectoryRefused"
/* The Output fd is one the service may not write into (a socket whose peer is another user). */
#define TB_ERROR_OUTPUT_REFUSED         TB_ERROR_PREFIX "OutputRefused"
/* A request over a size or count cap, refused before polkit is asked. */
#define TB_ERROR_REQUEST_TOO_LARGE      TB_ERROR_PREFIX "RequestTooLarge"
/* A live session of the caller's has the config's unique_session_name. */
#define TB_ERROR_SESSION_NAME_IN_USE    TB_ERROR_PREFIX "SessionNameInUse"
/* A linux.perf scope names another user's process, and the caller
 * does not hold org.tracebus.manage. */
#define TB_ERROR_PROCESS_NOT_YOURS      TB_ERROR_PREFIX "ProcessNotYours"
/* A config names a kernel event that a caller without org.tracebus.manage may not
 * record (the kernel log, other users' virtual machines, probes...), or keeps none. */
#define TB_ERROR_EVENT_NOT_ALLOWED      TB_ERROR_PREFIX "EventNotAllowed"
/* Bad RotateEveryMs, RotateBytes or RotateKeep, rotation of a session
 * that cannot rotate, or SetNextOutput on a session that does not rotate. */
#define TB_ERROR_INVALID_ROTATION       TB_ERROR_PREFIX "InvalidRotation"
/* A trigger name of ActivateTriggers is empty, over 64 bytes or has control characters. */
#define TB_ERROR_INVALID_TRIGGER        TB_ERROR_PREFIX "InvalidTrigger"
/* A snapshot of the session is being written, or the last began within CloneMinIntervalSec=. */
#define TB_ERROR_CLONE_RATE_LIMITED     TB_ERROR_PREFIX "CloneRateLimited"
