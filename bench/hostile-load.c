/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hostile-load.h"
#include "tracebus-bus.h"

#define PROBE_KEY "hostile-probe"
#define PROBE_GAP_US 15000u
/* Between one hostile Start's answer and the next: a flood still (dozens a second, each
 * one the most a message can ask for), but one that leaves the machine's CPUs to the
 * service to show what its event loop does, rather than how busy dbus-daemon and polkitd
 * can make two shared vCPUs. A service that did the whole of a Start's work on its loop
 * would stall for seconds on each one. */
#define ATTACK_GAP_US 20000u
/* Bounds on one measurement, not limits it is judged by: a service that stalls for
 * minutes is measured on the probes it answered, or gave up on, by then. */
#define PROBE_WINDOW_US (30u * 1000000u)
#define PROBE_TIMEOUT_USEC (20u * 1000000u)
#define ATTACK_TIMEOUT_USEC (120u * 1000000u)
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

static uint64_t now_us(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

void hostile_names_free(char **names) {
        for (char **n = names; n && *n; n++)
                free(*n);
        free(names);
}

char **hostile_kernel_names(const char *tracefs) {
        char path[4096], line[512];
        size_t n = 0, allocated = 0;
        char **names = NULL;
        FILE *f;

        snprintf(path, sizeof(path), "%s/available_events", tracefs);
        f = fopen(path, "re");
        if (!f)
                return NULL;
        while (fgets(line, sizeof(line), f)) {
                char *colon = strchr(line, ':');

                if (!colon)
                        continue;
                colon[1 + strcspn(colon + 1, "\n")] = 0;
                if (n + 2 > allocated) {
                        allocated = allocated ? 2 * allocated : 1024;
                        names = realloc(names, allocated * sizeof(char *));
                        if (!names)
                                abort();
                }
                names[n] = strdup(colon + 1);
                if (!names[n++])
                        abort();
                names[n] = NULL;
        }
        fclose(f);
        return names;
}

/* ---- the messages ---- */

static void put_varint(uint8_t **p, uint64_t v) {
        while (v >= 0x80) {
                *(*p)++ = (uint8_t) (v | 0x80);
                v >>= 7;
        }
        *(*p)++ = (uint8_t) v;
}

static size_t varint_size(uint64_t v) {
        size_t n = 1;

        for (; v >= 0x80; v >>= 7)
                n++;
        return n;
}

static size_t len_field_size(uint32_t field, size_t len) {
        return varint_size((uint64_t) field << 3 | 2) + varint_size(len) + len;
}

static void put_len_header(uint8_t **p, uint32_t field, size_t len) {
        put_varint(p, (uint64_t) field << 3 | 2);
        put_varint(p, len);
}

/* FtraceConfig.ftrace_events, from @names[*next] on: @count names, or fewer once @bytes
 * are written. Returns the end. */
static uint8_t *put_ftrace_events(uint8_t *p, char *const *names, size_t *next, size_t count, size_t bytes) {
        uint8_t *begin = p;

        for (size_t i = 0; i < count && (size_t) (p - begin) < bytes; i++, (*next)++) {
                if (!names[*next])
                        *next = 0;
                put_len_header(&p, 1, strlen(names[*next]));
                p = mempcpy(p, names[*next], strlen(names[*next]));
        }
        return p;
}

void *hostile_binary_config(char *const *names, unsigned n_sources, size_t per_source, size_t source_bytes,
                            size_t *ret_size) {
        static const char name[] = "linux.ftrace";
        size_t longest = 0, bound, next = 0;
        uint8_t *events, *tc, *p;

        for (char *const *n = names; *n; n++)
                longest = MAX(longest, strlen(*n));
        /* A name takes a byte at least: no source holds more names than @source_bytes. */
        bound = MIN(per_source, source_bytes) * (longest + 4) + 64;
        events = malloc(bound);
        p = tc = malloc((size_t) n_sources * (bound + 64));
        if (!events || !tc)
                abort();
        for (unsigned i = 0; i < n_sources; i++) {
                /* DataSource { config { name: "linux.ftrace" ftrace_config { ftrace_events ... } } } */
                size_t events_len = put_ftrace_events(events, names, &next, per_source, source_bytes) - events;
                size_t config_len = len_field_size(1, strlen(name)) + len_field_size(100, events_len);

                put_len_header(&p, 2, len_field_size(1, config_len));
                put_len_header(&p, 1, config_len);
                put_len_header(&p, 1, strlen(name));
                p = mempcpy(p, name, strlen(name));
                put_len_header(&p, 100, events_len);
                p = mempcpy(p, events, events_len);
        }
        free(events);
        *ret_size = p - tc;
        return tc;
}

/* Start(@text, {@key: @value}), the option's value appended by @append (none without @key). */
static int start_message(sd_bus *bus, const char *text, const char *key, const char *signature,
                         int (*append)(sd_bus_message *m, const void *a, size_t n), const void *a, size_t n,
                         sd_bus_message **ret) {
        sd_bus_message *m = NULL;
        int r;

        r = sd_bus_message_new_method_call(bus, &m, TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_INTERFACE, "Start");
        if (r >= 0)
                r = sd_bus_message_append(m, "s", text);
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', "{sv}");
        if (r >= 0 && key) {
                r = sd_bus_message_open_container(m, 'e', "sv");
                if (r >= 0)
                        r = sd_bus_message_append(m, "s", key);
                if (r >= 0)
                        r = sd_bus_message_open_container(m, 'v', signature);
                if (r >= 0)
                        r = append(m, a, n);
                for (int i = 0; i < 2 && r >= 0; i++)
                        r = sd_bus_message_close_container(m);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        if (r < 0) {
                sd_bus_message_unref(m);
                return r;
        }
        *ret = m;
        return 0;
}

/* @n names from @a, in turn. */
static int append_names(sd_bus_message *m, const void *a, size_t n) {
        char *const *names = a;
        size_t next = 0;
        int r;

        r = sd_bus_message_open_container(m, 'a', "s");
        for (size_t i = 0; r >= 0 && i < n; i++, next++) {
                if (!names[next])
                        next = 0;
                r = sd_bus_message_append_basic(m, 's', names[next]);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        return r;
}

static int append_bytes(sd_bus_message *m, const void *a, size_t n) {
        return sd_bus_message_append_array(m, 'y', a, n);
}

int hostile_start_with_events(sd_bus *bus, char *const *names, size_t count, sd_bus_message **ret) {
        return start_message(bus, "", "Events", "as", append_names, names, count, ret);
}

int hostile_start_with_binary(sd_bus *bus, const void *config, size_t size, sd_bus_message **ret) {
        return start_message(bus, "", "BinaryConfig", "ay", append_bytes, config, size, ret);
}

int hostile_start_with_text(sd_bus *bus, const char *text, sd_bus_message **ret) {
        return start_message(bus, text, NULL, NULL, NULL, NULL, 0, ret);
}

/* One linux.ftrace data source naming events from @names until the text is one byte
 * short of the cap. */
static char *max_text(char *const *names) {
        static const char head[] = "data_sources { config { name: \"linux.ftrace\" ftrace_config {\n", tail[] = "} } }\n";
        char *text = malloc(HOSTILE_MAX_CONFIG_BYTES), *p = text;
        size_t next = 0;

        if (!text)
                return NULL;
        p = stpcpy(p, head);
        for (;; next++) {
                if (!names[next])
                        next = 0;
                if ((size_t) (p - text) + strlen(names[next]) + 32 + sizeof(tail) >= HOSTILE_MAX_CONFIG_BYTES)
                        break;
                p += sprintf(p, "ftrace_events: \"%s\"\n", names[next]);
        }
        p = stpcpy(p, tail);
        memset(p, ' ', HOSTILE_MAX_CONFIG_BYTES - 1 - (p - text));
        text[HOSTILE_MAX_CONFIG_BYTES - 1] = 0;
        return text;
}

static char *nested_text(unsigned depth) {
        static const char open[] = "data_sources { ";
        size_t len = depth * (sizeof(open) - 1) + depth * 2 + 1;
        char *text = malloc(len), *p = text;

        if (!text)
                return NULL;
        for (unsigned i = 0; i < depth; i++)
                p = stpcpy(p, open);
        for (unsigned i = 0; i < depth; i++)
                p = stpcpy(p, "} ");
        return text;
}

int hostile_start_message(sd_bus *bus, HostileKind kind, char *const *names, sd_bus_message **ret) {
        /* Each of the 80 data sources as large as the cap allows them together. */
        size_t source_bytes = HOSTILE_MAX_CONFIG_BYTES / HOSTILE_DATA_SOURCE_COUNT - 128, size;
        char *text = NULL;
        void *binary;
        int r;

        switch (kind) {
        case HOSTILE_BARE_NAMES:
                return hostile_start_with_events(bus, names, HOSTILE_NAMES, ret);
        case HOSTILE_DATA_SOURCES:
                binary = hostile_binary_config(names, HOSTILE_DATA_SOURCE_COUNT, SIZE_MAX, source_bytes, &size);
                r = hostile_start_with_binary(bus, binary, size, ret);
                free(binary);
                return r;
        case HOSTILE_NESTING:
        case HOSTILE_MAX_TEXT:
        default:
                text = kind == HOSTILE_NESTING ? nested_text(HOSTILE_NESTING_DEPTH) : max_text(names);
                if (!text)
                        return -ENOMEM;
                r = hostile_start_with_text(bus, text, ret);
                free(text);
                return r;
        }
}

/* ---- the processes ---- */

static int become(const char *user) {
        struct passwd *pw = getpwnam(user);

        if (!pw)
                return -ESRCH;
        if (initgroups(user, pw->pw_gid) < 0 || setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid) < 0 ||
            setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid) < 0)
                return -errno;
        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
        return 0;
}

static int compare_doubles(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;

        return x < y ? -1 : x > y;
}

/* The victim's measurement: @probes calls, PROBE_GAP_US apart, their median in µs. */
static double probe_median(sd_bus *bus, unsigned probes) {
        double *took = calloc(probes, sizeof(double));
        uint64_t begin = now_us();
        unsigned n = 0;
        double median;

        if (!took)
                abort();
        for (; n < probes && now_us() - begin < PROBE_WINDOW_US; n++) {
                sd_bus_message *m = NULL;
                uint64_t t0;

                if (sd_bus_message_new_method_call(bus, &m, TB_BUS_NAME, TB_MANAGER_PATH, TB_MANAGER_INTERFACE,
                                                   "IsDetached") < 0 ||
                    sd_bus_message_append(m, "s", PROBE_KEY) < 0)
                        _exit(5);
                /* A call that times out counts as slow as it was: the service stalled. */
                t0 = now_us();
                (void) sd_bus_call(bus, m, PROBE_TIMEOUT_USEC, NULL, NULL);
                took[n] = (double) (now_us() - t0);
                sd_bus_message_unref(m);
                usleep(PROBE_GAP_US);
        }
        qsort(took, n, sizeof(double), compare_doubles);
        median = took[n / 2];
        free(took);
        return median;
}

/* Answers each line on @ctl with a measurement on @report, until @ctl closes. */
static _Noreturn void victim_main(const char *user, unsigned probes, int ctl, int report) {
        sd_bus *bus = NULL;
        char c;

        if (become(user) < 0 || sd_bus_open_system(&bus) < 0)
                _exit(3);
        /* The first calls of a connection are slower (the bus and the service learn of it). */
        (void) probe_median(bus, 5);
        dprintf(report, "ready\n");
        while (read(ctl, &c, 1) == 1)
                if (c == '\n')
                        dprintf(report, "%.1f\n", probe_median(bus, probes));
        _exit(0);
}

/* Sends hostile Starts of every kind in turn, each ATTACK_GAP_US after the last was answered; reports
 * "sending" once, then each answer: "ok" or the error's name. The messages are built
 * once and sent again (sd-bus keeps a sealed message's serial, which the bus allows):
 * the flood measures the service, not how fast this process builds MiB of config. */
static _Noreturn void attacker_main(const char *user, char *const *names, int report) {
        sd_bus_message *messages[_HOSTILE_KIND_MAX] = {};
        sd_bus *bus = NULL;

        if (become(user) < 0 || sd_bus_open_system(&bus) < 0)
                _exit(3);
        for (unsigned k = 0; k < _HOSTILE_KIND_MAX; k++)
                if (hostile_start_message(bus, k, names, &messages[k]) < 0)
                        _exit(4);
        dprintf(report, "sending\n");
        for (unsigned i = 0;; i++) {
                sd_bus_error error = SD_BUS_ERROR_NULL;
                int r;

                r = sd_bus_call(bus, messages[i % _HOSTILE_KIND_MAX], ATTACK_TIMEOUT_USEC, &error, NULL);
                dprintf(report, "%s\n", r >= 0 ? "ok" : error.name ? error.name : "(no name)");
                sd_bus_error_free(&error);
                usleep(ATTACK_GAP_US);
        }
}

/* ---- the measurement ---- */

typedef struct Child {
        pid_t pid;
        FILE *report;
        int ctl;                /* -1 for the attacker, which takes no commands */
} Child;

static int spawn(Child *c, const char *user, bool victim, char *const *names, unsigned probes) {
        int rep[2], ctl[2] = { -1, -1 };

        if (pipe2(rep, O_CLOEXEC) < 0 || (victim && pipe2(ctl, O_CLOEXEC) < 0))
                return -errno;
        fflush(NULL);
        c->pid = fork();
        if (c->pid < 0)
                return -errno;
        if (c->pid == 0) {
                /* Only the parent may hold the other ends: each side must see the other's EOF. */
                close(rep[0]);
                if (victim) {
                        close(ctl[1]);
                        victim_main(user, probes, ctl[0], rep[1]);
                }
                attacker_main(user, names, rep[1]);
        }
        close(rep[1]);
        if (victim)
                close(ctl[0]);
        c->ctl = ctl[1];
        c->report = fdopen(rep[0], "re");
        return c->report ? 0 : -errno;
}

static int expect_line(Child *c, char *buf, size_t size) {
        if (!fgets(buf, (int) size, c->report))
                return -EPIPE;
        buf[strcspn(buf, "\n")] = 0;
        return 0;
}

static int measure(Child *victim, double *ret) {
        char line[64];
        int r;

        if (write(victim->ctl, "\n", 1) != 1)
                return -EPIPE;
        r = expect_line(victim, line, sizeof(line));
        if (r < 0)
                return r;
        *ret = strtod(line, NULL);
        return 0;
}

/* What the attacker was told, once it is gone. */
static void count_answers(Child *attacker, HostileResult *ret) {
        char line[256];

        while (expect_line(attacker, line, sizeof(line)) >= 0) {
                ret->answered++;
                if (strcmp(line, "ok") == 0)
                        ret->accepted++;
                if (!ret->first_error[0])
                        snprintf(ret->first_error, sizeof(ret->first_error), "%s", line);
        }
}

static void reap(Child *c, bool kill_it) {
        if (c->ctl >= 0)
                close(c->ctl);
        if (c->pid > 0) {
                if (kill_it)
                        kill(c->pid, SIGKILL);
                (void) waitpid(c->pid, NULL, 0);
        }
        if (c->report)
                fclose(c->report);
}

static int run_flood(Child *victim, const char *attacker_user, char *const *names, HostileResult *ret) {
        Child attacker = { .ctl = -1 };
        char line[64];
        int r;

        r = spawn(&attacker, attacker_user, false, names, 0);
        if (r >= 0)
                r = expect_line(&attacker, line, sizeof(line));
        if (r >= 0) {
                /* The first Start on its way: the flood has begun. */
                usleep(100000);
                r = measure(victim, &ret->loaded_us);
        }
        if (attacker.pid > 0)
                kill(attacker.pid, SIGKILL);
        if (r >= 0)
                count_answers(&attacker, ret);
        reap(&attacker, true);
        return r;
}

int hostile_measure(const char *victim_user, const char *attacker_user, char *const *names, unsigned probes,
                    HostileResult *ret) {
        Child victim = { .ctl = -1 };
        HostileResult res = {};
        char line[64];
        int r;

        r = spawn(&victim, victim_user, true, names, probes);
        if (r >= 0)
                r = expect_line(&victim, line, sizeof(line));
        if (r >= 0)
                r = measure(&victim, &res.quiet_us);
        if (r >= 0)
                r = run_flood(&victim, attacker_user, names, &res);
        reap(&victim, r < 0);
        if (r < 0)
                return r;
        *ret = res;
        return 0;
}
