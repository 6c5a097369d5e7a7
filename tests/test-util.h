/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What the bus suites share besides the stack itself (system-bus.h, which
 * includes this): the test users, commands run as them, a busy process pair,
 * tracefs listings, root's property reads and the time windows.
 */

#include <gio/gio.h>
#include <glib.h>
#include <stdbool.h>
#include <sys/types.h>

#define TB_INSTANCES_DIR "/sys/kernel/tracing/instances"

/* True when pid exists and is not a zombie. */
bool tb_pid_alive(pid_t pid);

/* ---- time windows ----
 *
 * The factor by which the bus suites stretch what depends on the service's speed:
 * how long they wait for something that must happen "by now", how long a storm
 * runs, the rate the service must keep up with, a latency bound. A sanitizer build
 * (meson -Db_sanitize=..., which defines TB_TEST_SANITIZED for this harness) runs
 * tracebusd 3-5 times slower: 4 there, 1 in a plain build. TRACEBUS_TEST_TIME_FACTOR=N
 * (1..20) overrides either. Only waits, durations and rates scale, never a check:
 * lower bounds ("not before 2 s") stay as they are. */
guint tb_time_factor(void);
/* ms times tb_time_factor(). */
guint tb_scaled_ms(guint ms);
/* Sleeps tb_scaled_ms(ms). */
void tb_sleep_scaled(guint ms);

/* Writes all of p to fd, giving up on an error (async-signal-safe: for
 * signal handlers and forked children). */
void tb_write_all(int fd, const char *p, size_t n);

/* VmRSS of @pid, in KiB (asserts that /proc has it). */
guint64 tb_process_rss_kib(pid_t pid);

/* Waits until pid is gone (or a zombie); false after timeout_ms. */
bool tb_wait_pid_gone(pid_t pid, guint timeout_ms);


/* ---- test users ---- */

typedef struct {
        char *name;
        uid_t uid;
        gid_t gid;
        gid_t *groups;
        int n_groups;
} TbUser;

bool tb_user_lookup(const char *name, TbUser *ret, GError **error);
/* The uid of a user who must exist (fails the test otherwise). */
uid_t tb_user_uid(const char *name);
void tb_user_clear(TbUser *user);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(TbUser, tb_user_clear)
/* In a forked child only (async-signal-safe): setgroups, setresgid, setresuid
 * to user, then PR_SET_PDEATHSIG (a credential change clears it). _exit(126)
 * on failure. */
void tb_user_become(const TbUser *user);

typedef struct {
        int wait_status;
        char *out;
        char *err;
} TbCommandResult;

/* Run argv as user (NULL: stay root) with the current environment
 * (DBUS_SYSTEM_BUS_ADDRESS included), HOME=/, cwd /, under `timeout 120`.
 * Returns false only when it could not be spawned. */
bool tb_run_as_user(const char *user, const char *const *argv, TbCommandResult *ret, GError **error);
void tb_command_result_clear(TbCommandResult *res);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(TbCommandResult, tb_command_result_clear)
/* "exit 0", "exit 3", "signal 9", for messages. */
char *tb_wait_status_to_string(int wait_status);
bool tb_command_succeeded(const TbCommandResult *res);

/* Whether the sets (hash tables used as sets) @a and @b have a key in common. */
bool tb_sets_meet(GHashTable *a, GHashTable *b);

/* ---- upstream Perfetto's SDK apps ---- */

/* A program of upstream Perfetto: @kind "sdk" for its SDK example apps (in
 * ../shared/perfetto/sdk beside the source tree, or $TRACEBUS_PERFETTO_SDK), "bin" for
 * its tools (../shared/perfetto/bin, or $TRACEBUS_PERFETTO_BIN); fails the test when it
 * is missing. */
char *tb_perfetto_program(const char *kind, const char *name);
/* That app as @user (its credentials in *@u, which the caller clears after the app is
 * gone), connecting to the producer socket @socket; it dies with the test. */
GPid tb_spawn_sdk_app(const char *user, const char *program, const char *socket, TbUser *u);
/* SIGKILL and reap a child. */
void tb_kill_child(GPid pid);

/* ---- a busy process pair the test knows ---- */

typedef struct {
        pid_t pid;      /* ping */
        pid_t peer_pid; /* pong */
        char comm[16];
        bool stopped;
} TbBusy;

/* Two children named comm (PR_SET_NAME) ping-pong a byte through pipes, with
 * a short sleep every few rounds, so sched_switch/sched_waking events with
 * their pids keep coming. They die with the caller (PR_SET_PDEATHSIG). */
bool tb_busy_start(const char *comm, TbBusy *ret, GError **error);
/* Kills and reaps both; idempotent; keeps the pids for later checks. */
void tb_busy_stop(TbBusy *busy);

/* ---- tracefs and the trace dir ---- */

/* Sorted names under /sys/kernel/tracing/instances/ that start "tracebus-". */
char **tb_tracebus_instances(void);
/* Sorted relative paths of everything under dir ("" entries excluded); an
 * empty list when dir does not exist. */
char **tb_list_tree(const char *dir);
/* Elements of b that are not in a (both sorted or not, small lists). */
char **tb_strv_added(char *const *a, char *const *b);

/* @s with every @what replaced by @with (newly allocated). */
char *tb_str_replace(const char *s, const char *what, const char *with);

/* ---- D-Bus helpers on root's connection ---- */

GVariant *tb_get_property(GDBusConnection *conn, const char *path, const char *iface,
                          const char *name, GError **error);
/* The session's State, or NULL with error (e.g. the object is gone). */
char *tb_session_state(GDBusConnection *conn, const char *path, GError **error);
/* Waits until the session is "ended" or gone and no tracefs instance named
 * in instance_names (may be NULL) exists. */
bool tb_wait_session_over(GDBusConnection *conn, const char *path, char *const *instance_names,
                          guint timeout_ms, GError **error);

/* ---- latency against a floor measured alongside ----
 *
 * How fast the service answers, judged as a ratio in the same run rather than
 * against a clock (a sanitizer build on a busy machine misses any fixed number):
 * each probe times the Manager's IsDetached (no polkit, no tracefs: only the
 * service's event loop) and, beside it on the same connection, the bus driver's
 * GetId, which goes through the same dbus-daemon under the same load but never
 * reaches tracebusd. tb_latency_assert() compares the 90th percentile and the worst
 * of the two. */
typedef struct {
        GArray *service_us; /* gint64 each */
        GArray *floor_us;
} TbLatency;

/* How many times the floor's the service's 90th percentile and worst may be. */
typedef struct {
        double percentile;
        double worst;
} TbLatencyBounds;

/* Bounds for a service that answers the probe directly, nothing of another client's
 * queued before it. Measured (plain and ASan builds, 16 sessions recording or Start/
 * Stop cycles, the machine busy with other builds): p90 x1.6-1.9, worst x0.6-0.7;
 * IsDetached makes two more hops than GetId, and a sanitizer slows the service, not
 * dbus-daemon. A loop blocked 100 ms a call is x80 or more on the p90 (the floor's
 * is about 1 ms under that load); a single stall of 1 s or more is x50 or more on
 * the worst while the floor's worst stays under 20 ms. */
#define TB_LATENCY_DIRECT ((TbLatencyBounds) { .percentile = 10.0, .worst = 50.0 })

void tb_latency_init(TbLatency *lat);
void tb_latency_clear(TbLatency *lat);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(TbLatency, tb_latency_clear)
/* One pair of calls on @conn (root's, or any that may call IsDetached), in turns
 * one first, then the other. */
void tb_latency_probe(TbLatency *lat, GDBusConnection *conn);
/* Notes the medians, 90th percentiles and worsts under @what, and fails the test
 * when the service's exceed the floor's by more than @bounds. */
void tb_latency_assert(const TbLatency *lat, const char *what, TbLatencyBounds bounds);
