/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tb-bench record and tb-bench control: the subcommands that talk to tracebusd over the
 * system bus. record runs one session for bench/run; control times the control plane
 * (Start's reply, Start to the first event, polkit's own check, Stop on an empty and on a
 * wrapped ring, IsDetached).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include "tb-bench.h"
#include "tracebus-bus.h"

#define TB_NAME TB_BUS_NAME
#define TB_PATH TB_MANAGER_PATH
#define TB_MANAGER TB_MANAGER_INTERFACE

typedef struct StopStats {
        uint64_t events, bytes, lost;
        uint64_t overwritten;         /* a ring's events dropped to make room for newer ones */
} StopStats;

static char *read_text(const char *path) {
        FILE *f = fopen(path, "re");
        char *text = NULL;
        size_t n = 0;

        if (!f)
                die(path, errno);
        if (getdelim(&text, &n, 0, f) < 0)
                die(path, EIO);
        fclose(f);
        return text;
}

static int bus_start(sd_bus *bus, const char *config, int out_fd, char **ret_path) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        const char *path;
        int r;

        r = sd_bus_call_method(bus, TB_NAME, TB_PATH, TB_MANAGER, "Start", &error, &reply,
                               "sa{sv}", config, 1, "Output", "h", out_fd);
        if (r < 0) {
                fprintf(stderr, "tb-bench: Start: %s\n", error.message ?: strerror(-r));
                sd_bus_error_free(&error);
                return r;
        }
        r = sd_bus_message_read(reply, "o", &path);
        if (r >= 0)
                *ret_path = strdup(path);
        sd_bus_message_unref(reply);
        return r;
}

static int bus_stop(sd_bus *bus, const char *session, StopStats *ret) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        int r;

        memset(ret, 0, sizeof(*ret));
        r = sd_bus_call_method(bus, TB_NAME, TB_PATH, TB_MANAGER, "Stop", &error, &reply, "o", session);
        if (r < 0) {
                fprintf(stderr, "tb-bench: Stop: %s\n", error.message ?: strerror(-r));
                sd_bus_error_free(&error);
                return r;
        }
        r = sd_bus_message_enter_container(reply, 'a', "{sv}");
        while (r >= 0 && (r = sd_bus_message_enter_container(reply, 'e', "sv")) > 0) {
                const char *key;
                uint64_t *dst = NULL;

                sd_bus_message_read(reply, "s", &key);
                if (strcmp(key, "Events") == 0)
                        dst = &ret->events;
                else if (strcmp(key, "Bytes") == 0)
                        dst = &ret->bytes;
                else if (strcmp(key, "EventsLost") == 0)
                        dst = &ret->lost;
                else if (strcmp(key, "EventsOverwritten") == 0)
                        dst = &ret->overwritten;
                if (dst)
                        r = sd_bus_message_read(reply, "v", "t", dst);
                else
                        r = sd_bus_message_skip(reply, "v");
                if (r >= 0)
                        r = sd_bus_message_exit_container(reply);
        }
        sd_bus_message_unref(reply);
        return r < 0 ? r : 0;
}

static sd_bus *bus_open(void) {
        sd_bus *bus = NULL;
        int r = sd_bus_open_system(&bus);

        if (r < 0)
                die("connect to the system bus", r);
        /* Many calls in a row, each timed: no default 25 s surprise either. */
        sd_bus_set_method_call_timeout(bus, 60ull * 1000000ull);
        return bus;
}

int cmd_record(int argc, char **argv) {
        const char *config_path = arg(argc, argv, "--config", NULL), *out = arg(argc, argv, "--out", NULL);
        sd_bus *bus = bus_open();
        char *config, *session = NULL, buf[64];
        StopStats st;
        uint64_t t0, t1;
        int fd;

        if (!config_path || !out)
                return 2;
        config = read_text(config_path);
        fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0)
                die(out, errno);
        if (bus_start(bus, config, fd, &session) < 0)
                return 1;
        close(fd);
        printf("started\n");
        fflush(stdout);
        while (read(STDIN_FILENO, buf, sizeof(buf)) > 0)
                ;
        t0 = now_ns(CLOCK_MONOTONIC);
        if (bus_stop(bus, session, &st) < 0)
                return 1;
        t1 = now_ns(CLOCK_MONOTONIC);
        printf("{\"events\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"lost\": %" PRIu64 ", \"stop_ns\": %" PRIu64
               ", \"overwritten\": %" PRIu64 "}\n", st.events, st.bytes, st.lost, t1 - t0, st.overwritten);
        return 0;
}

/* polkit's own answer time for the check Start makes (subject: our bus name). */
static int polkit_check(sd_bus *bus, uint64_t *ret_ns) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        const char *unique = NULL;
        uint64_t t0;
        int r;

        sd_bus_get_unique_name(bus, &unique);
        t0 = now_ns(CLOCK_MONOTONIC);
        r = sd_bus_call_method(bus, "org.freedesktop.PolicyKit1", "/org/freedesktop/PolicyKit1/Authority",
                               "org.freedesktop.PolicyKit1.Authority", "CheckAuthorization", &error, &reply,
                               "(sa{sv})sa{ss}us", "system-bus-name", 1, "name", "s", unique,
                               "org.tracebus.record", 0, 0, "");
        *ret_ns = now_ns(CLOCK_MONOTONIC) - t0;
        sd_bus_error_free(&error);
        sd_bus_message_unref(reply);
        return r;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

        return x < y ? -1 : x > y;
}

static void print_dist(const char *name, uint64_t *v, size_t n, bool comma) {
        double med = 0, p99 = 0;

        if (n > 0) {
                qsort(v, n, sizeof(*v), cmp_u64);
                med = (double) v[n / 2] / 1e6;
                p99 = (double) v[(n * 99 + 99) / 100 - 1 < n ? (n * 99 + 99) / 100 - 1 : n - 1] / 1e6;
        }
        printf("\"%s\": {\"n\": %zu, \"median_ms\": %.3f, \"p99_ms\": %.3f}%s", name, n, med, p99, comma ? ", " : "");
}

/* tb-bench control's settings and samples, in nanoseconds. */
typedef struct Control {
        sd_bus *bus;
        int runs, full_runs;
        const char *empty_cfg, *full_cfg;
        char out[512];                /* the session's output file, rewritten each run */
        uint64_t *start_reply, *first_event, *first_event_nopk, *polkit, *stop_empty;
        uint64_t *stop_full, *is_detached;
        size_t n_first, n_full;
        uint64_t full_bytes_min;
} Control;

static int open_output(const Control *c) {
        return open(c->out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
}

/* One Start and Stop on the quiet ring: Start's reply, Stop's, polkit's share, and, from the
 * file, how long after Start was sent the first event was recorded (boot clock, as the trace's). */
static int control_empty_run(Control *c, int i) {
        char *session = NULL;
        uint64_t t0, t1, t2, pk;
        StopStats st;
        Analysis a;
        int fd = open_output(c);

        if (fd < 0)
                die(c->out, errno);
        polkit_check(c->bus, &pk);
        c->polkit[i] = pk;
        t0 = now_ns(CLOCK_BOOTTIME);
        if (bus_start(c->bus, c->empty_cfg, fd, &session) < 0)
                return -1;
        t1 = now_ns(CLOCK_BOOTTIME);
        close(fd);
        c->start_reply[i] = t1 - t0;
        usleep(20000);
        t1 = now_ns(CLOCK_MONOTONIC);
        if (bus_stop(c->bus, session, &st) < 0)
                return -1;
        t2 = now_ns(CLOCK_MONOTONIC);
        c->stop_empty[i] = t2 - t1;
        free(session);
        if (analyze_file(c->out, &a) >= 0 && a.first_event_ts > t0) {
                uint64_t first = a.first_event_ts - t0;

                c->first_event[c->n_first] = first;
                c->first_event_nopk[c->n_first] = first > pk ? first - pk : 0;
                c->n_first++;
        }
        return 0;
}

/* The cheapest method call there is, for the bus's own round trip. */
static void control_is_detached(Control *c) {
        for (int i = 0; i < c->runs; i++) {
                sd_bus_message *reply = NULL;
                uint64_t t0 = now_ns(CLOCK_MONOTONIC);
                int r = sd_bus_call_method(c->bus, TB_NAME, TB_PATH, TB_MANAGER, "IsDetached", NULL, &reply,
                                           "s", "tbbench-no-such-key");
                c->is_detached[i] = now_ns(CLOCK_MONOTONIC) - t0;
                sd_bus_message_unref(reply);
                if (r < 0)
                        die("IsDetached", r);
        }
}

/* About 96 MB of markers at about 100 MB/s, so the 64 MB ring wraps. */
static void flood_markers(int mfd) {
        static char line[3000];

        memset(line, 'f', sizeof(line));
        for (int k = 0; k < 32 * 1024; k++) {
                (void) !write(mfd, line, sizeof(line));
                if ((k & 255) == 255)
                        usleep(7000);
        }
}

/* One session whose ring has wrapped: how long Stop takes to write it all out. */
static int control_full_run(Control *c) {
        char *session = NULL;
        uint64_t t1;
        StopStats st;
        int fd = open_output(c);
        int mfd = open(TRACEFS "/trace_marker", O_WRONLY | O_CLOEXEC);

        if (fd < 0 || mfd < 0)
                die("open", errno);
        if (bus_start(c->bus, c->full_cfg, fd, &session) < 0)
                return -1;
        close(fd);
        flood_markers(mfd);
        close(mfd);
        usleep(250000);
        t1 = now_ns(CLOCK_MONOTONIC);
        if (bus_stop(c->bus, session, &st) < 0)
                return -1;
        c->stop_full[c->n_full++] = now_ns(CLOCK_MONOTONIC) - t1;
        if (st.bytes < c->full_bytes_min)
                c->full_bytes_min = st.bytes;
        free(session);
        return 0;
}

static void control_print(const Control *c) {
        printf("{");
        print_dist("start_reply", c->start_reply, (size_t) c->runs, true);
        print_dist("start_to_first_event", c->first_event, c->n_first, true);
        print_dist("start_to_first_event_without_polkit", c->first_event_nopk, c->n_first, true);
        print_dist("polkit_check", c->polkit, (size_t) c->runs, true);
        print_dist("stop_empty", c->stop_empty, (size_t) c->runs, true);
        print_dist("stop_full", c->stop_full, c->n_full, true);
        print_dist("is_detached", c->is_detached, (size_t) c->runs, true);
        printf("\"full_file_bytes_min\": %" PRIu64 "}\n", c->n_full ? c->full_bytes_min : 0);
}

int cmd_control(int argc, char **argv) {
        Control c = {
                .runs = atoi(arg(argc, argv, "--runs", "200")),
                .full_runs = atoi(arg(argc, argv, "--full-runs", "20")),
                .full_bytes_min = UINT64_MAX,
        };
        const char *dir = arg(argc, argv, "--dir", "/tmp");

        c.empty_cfg = read_text(arg(argc, argv, "--empty-config", "bench/configs/ring-64mb.pbtxt"));
        c.full_cfg = read_text(arg(argc, argv, "--full-config", "bench/configs/ring-64mb-print.pbtxt"));
        c.bus = bus_open();
        c.start_reply = calloc((size_t) c.runs, 8);
        c.first_event = calloc((size_t) c.runs, 8);
        c.first_event_nopk = calloc((size_t) c.runs, 8);
        c.polkit = calloc((size_t) c.runs, 8);
        c.stop_empty = calloc((size_t) c.runs, 8);
        c.stop_full = calloc((size_t) c.full_runs, 8);
        c.is_detached = calloc((size_t) c.runs, 8);
        snprintf(c.out, sizeof(c.out), "%s/control.pftrace", dir);

        for (int i = 0; i < c.runs; i++)
                if (control_empty_run(&c, i) < 0)
                        return 1;
        control_is_detached(&c);
        for (int i = 0; i < c.full_runs; i++)
                if (control_full_run(&c) < 0)
                        return 1;
        unlink(c.out);
        control_print(&c);
        return 0;
}
