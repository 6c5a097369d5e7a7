/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Test harness for the bus suite: a private system-type dbus-daemon, the real
 * polkitd in a private mount namespace (our .policy, tests/polkit-rules), and
 * tracebusd from the build tree, all as root. See
 * shared/notes/system-bus-harness.md for the recipe.
 *
 * Layout of the 0755 temporary directory:
 *   system.conf             bus config       system.d/   copy of the dbus/ .conf
 *   system_bus_socket       the bus          services/   (empty: no activation)
 *   actions/  rules.d/  empty/               bind-mounted for polkitd
 *   state/                  STATE_DIRECTORY of tracebusd
 *   logs/{bus,polkitd,service}.log
 *   producer.sock           the producer socket tracebusd binds ($PERFETTO_PRODUCER_SOCK_NAME)
 *
 * Test binaries bring the stack up once in main() and run each case in a
 * g_test_trap_subprocess() child, which finds the stack through environment
 * variables (tb_system_bus_attach()). One failing case then does not stop the
 * others, and the parent dumps the logs once at the end.
 */

#include <gio/gio.h>
#include <glib.h>
#include <stdbool.h>
#include <sys/types.h>

#include "test-util.h"
#include "tracebus-bus.h"

/* The largest message the test bus passes (its config's max_message_size), for the tests
 * that build the largest request. Not dbus-daemon's 32 MiB: checking one 32 MiB string
 * takes dbus-daemon and the receiver's bus library tens of milliseconds each, whoever the
 * receiver, which would time the bus rather than the service. */
#define TB_TEST_BUS_MAX_MESSAGE_BYTES 4194304

#define TB_MANAGER_IFACE TB_MANAGER_INTERFACE
#define TB_SESSION_IFACE TB_SESSION_INTERFACE

/*
 * Every tracebusd the harness starts reads its configuration from the empty
 * TMP/config/ (TRACEBUS_CONFIG_DIR), not from the machine's, and never exits for
 * being idle unless TRACEBUS_IDLE_TIMEOUT_SEC is set in the test's environment
 * before tb_system_bus_start().
 */
/* A test that sets this environment variable to the text of a tracebusd.conf, before
 * tb_test_run(), gets it as TMP/config/tracebusd.conf. */
#define TB_TEST_TRACEBUSD_CONF "TB_TEST_TRACEBUSD_CONF"

/* The producer socket's name in the temporary directory. */
#define TB_PRODUCER_SOCKET "producer.sock"

typedef enum {
        TB_START_SERVICE = 1 << 0,     /* also start tracebusd and wait for its name */
        /* Install services/org.tracebus.Tracebus1.service, so that the bus activates
         * the build tree's tracebusd (through TMP/activate-tracebusd.sh, logging to
         * logs/service.log, NOTIFY_SOCKET=TMP/notify). Activated instances are the
         * bus's children: tb_system_bus_stop() stops them by their pids. */
        TB_START_ACTIVATABLE = 1 << 1,
} TbStartFlags;

typedef struct {
        char *tmpdir;
        char *address;    /* DBUS_SYSTEM_BUS_ADDRESS */
        char *state_dir;  /* tracebusd's STATE_DIRECTORY */
        char *log_dir;
        char *source_dir; /* TRACEBUS_SOURCE_DIR */
        char *build_dir;  /* TRACEBUS_BUILD_DIR */
        GPid bus_pid;
        GPid polkitd_pid;
        GPid service_pid; /* also known to attached subprocesses */
        bool owner;       /* this process started the stack and stops it */
        GDBusConnection *conn; /* root's own connection to the bus */
} TbSystemBus;

/*
 * Skip policy for bus tests: when not root, or tracefs, dbus-daemon, polkitd,
 * unshare or the test users are missing, print a TAP skip plan and exit 0, or,
 * when $CI is set, a TAP "Bail out!" and exit 1: CI must never skip silently.
 * Call after g_test_init().
 */
void tb_require_system_bus_environment(void);

TbSystemBus *tb_system_bus_start(TbStartFlags flags, GError **error);
/* In a g_test_subprocess() child: the stack the parent started. */
TbSystemBus *tb_system_bus_attach(GError **error);
/* SIGTERM tracebusd and wait up to timeout_ms. Returns its wait status, or -1
 * when it had to be killed (or was not running). */
int tb_system_bus_stop_service(TbSystemBus *bus, guint timeout_ms);
/* Stops what this process started (service, polkitd, dbus-daemon), removes
 * the temporary directory unless keep is true, and frees bus. */
void tb_system_bus_stop(TbSystemBus *bus, bool keep);
void tb_system_bus_dump_logs(const TbSystemBus *bus);

/* ---- running test cases ----
 *
 * tb_test_add_isolated() registers a case that runs in its own
 * g_test_trap_subprocess() child (with stderr inherited), so that one failure
 * does not abort the others. tb_test_run() starts the stack in the parent (or
 * attaches to it in a child), runs g_test_run(), and in the parent dumps the
 * logs when anything failed and stops the stack. Tests registered with plain
 * g_test_add_func() run in the parent, after the isolated ones if their path
 * sorts later; there assertions are non-fatal. */
void tb_test_add_isolated(const char *path, void (*func)(void));
int tb_test_run(TbStartFlags flags);
/* The stack of this test process (parent or child). */
TbSystemBus *tb_bus(void);
/* Mark the run as failed from parent-side code. */
void tb_test_note_failure(void);

/* Reads one line (without the newline) from fd within timeout_ms. */
char *tb_read_line(int fd, guint timeout_ms, GError **error);

bool tb_wait_for_name(GDBusConnection *conn, const char *name, GPid watch_pid,
                      guint timeout_ms, GError **error);
/* Waits until name has no owner. */
bool tb_wait_for_name_gone(GDBusConnection *conn, const char *name, guint timeout_ms, GError **error);
/* The pid (and, if ret_unique, the unique name) of name's owner; 0 with error when none. */
pid_t tb_name_owner_pid(GDBusConnection *conn, const char *name, char **ret_unique, GError **error);
