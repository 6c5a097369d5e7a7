/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "tb-client.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <time.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include "trace.pb-c.h"

const char *const sched_events[] = { "sched/sched_switch", "sched/sched_waking", NULL };

char *config_text(guint duration_ms) {
        return g_strdup_printf("duration_ms: %u\n"
                               "buffers { size_kb: 4096 }\n"
                               "data_sources {\n"
                               "  config {\n"
                               "    name: \"linux.ftrace\"\n"
                               "    ftrace_config {\n"
                               "      ftrace_events: \"sched/sched_switch\"\n"
                               "      ftrace_events: \"sched/sched_waking\"\n"
                               "    }\n"
                               "  }\n"
                               "}\n",
                               duration_ms);
}

/* ===================================================================== */
/* Client: the child side. It runs in a fork of a threaded process, so it */
/* keeps to libc and sd-bus (glibc's malloc and stdio are fork-safe).     */
/* ===================================================================== */

#define LINE_MAX_LEN 65536

typedef struct {
        sd_bus *bus;
        int report_fd;
        const ClientSpec *spec;
        char *path; /* the session commands act on */
} ChildState;

/* A growing string for report lines. */
typedef struct {
        char *s;
        size_t len, cap;
} Buf;

static void buf_add(Buf *b, const char *fmt, ...) {
        va_list ap;
        int n;

        for (;;) {
                size_t room = b->cap - b->len;
                va_start(ap, fmt);
                n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? room : 0, fmt, ap);
                va_end(ap);
                if (n < 0)
                        return;
                if (b->s && (size_t) n < room) {
                        b->len += (size_t) n;
                        return;
                }
                b->cap = (b->cap + (size_t) n + 1) * 2;
                b->s = realloc(b->s, b->cap);
                if (!b->s)
                        _exit(7);
        }
}

static void buf_emit(Buf *b, int fd) {
        buf_add(b, "\n");
        if (write(fd, b->s, b->len) < 0) {
                /* The test went away. */
        }
        free(b->s);
        *b = (Buf) { 0 };
}

static void child_report_error(int fd, const char *what, const sd_bus_error *e, int r) {
        if (e && sd_bus_error_is_set(e))
                dprintf(fd, "E %s\t%s\n", e->name, e->message ? e->message : "");
        else
                dprintf(fd, "E local.%s\t%s\n", what, strerror(r < 0 ? -r : r));
}

/* Appends the value of the current complete type (the contents of a variant)
 * as text: numbers, strings, b as true/false, as as a,b,c. */
static int format_value(sd_bus_message *m, const char *contents, Buf *out) {
        char type = contents[0];
        union {
                uint64_t t;
                int64_t x;
                uint32_t u;
                int32_t i;
                int b;
                const char *s;
                uint8_t y;
                double d;
        } v;
        int r;

        switch (type) {
        case 't':
                r = sd_bus_message_read_basic(m, type, &v.t);
                if (r >= 0)
                        buf_add(out, "%" PRIu64, v.t);
                return r;
        case 'x':
                r = sd_bus_message_read_basic(m, type, &v.x);
                if (r >= 0)
                        buf_add(out, "%" PRIi64, v.x);
                return r;
        case 'u':
                r = sd_bus_message_read_basic(m, type, &v.u);
                if (r >= 0)
                        buf_add(out, "%" PRIu32, v.u);
                return r;
        case 'i':
                r = sd_bus_message_read_basic(m, type, &v.i);
                if (r >= 0)
                        buf_add(out, "%" PRIi32, v.i);
                return r;
        case 'y':
                r = sd_bus_message_read_basic(m, type, &v.y);
                if (r >= 0)
                        buf_add(out, "%u", v.y);
                return r;
        case 'd':
                r = sd_bus_message_read_basic(m, type, &v.d);
                if (r >= 0)
                        buf_add(out, "%g", v.d);
                return r;
        case 'b':
                r = sd_bus_message_read_basic(m, type, &v.b);
                if (r >= 0)
                        buf_add(out, "%s", v.b ? "true" : "false");
                return r;
        case 's':
        case 'o':
        case 'g':
                r = sd_bus_message_read_basic(m, type, &v.s);
                if (r >= 0)
                        buf_add(out, "%s", v.s);
                return r;
        default:
                if (strcmp(contents, "as") == 0) {
                        bool first = true;
                        r = sd_bus_message_enter_container(m, 'a', "s");
                        while (r >= 0 && (r = sd_bus_message_read_basic(m, 's', &v.s)) > 0) {
                                buf_add(out, "%s%s", first ? "" : ",", v.s);
                                first = false;
                        }
                        if (r >= 0)
                                r = sd_bus_message_exit_container(m);
                        return r;
                }
                buf_add(out, "?%s", contents);
                return sd_bus_message_skip(m, contents);
        }
}

/* Reads an a{sv} and appends "\tkey=value" for each entry. */
static int format_asv(sd_bus_message *m, Buf *out) {
        int r = sd_bus_message_enter_container(m, 'a', "{sv}");

        while (r >= 0 && (r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
                const char *key, *contents;
                char type;

                r = sd_bus_message_read(m, "s", &key);
                if (r >= 0)
                        r = sd_bus_message_peek_type(m, &type, &contents);
                if (r >= 0)
                        r = sd_bus_message_enter_container(m, 'v', contents);
                if (r < 0)
                        break;
                buf_add(out, "\t%s=", key);
                r = format_value(m, contents, out);
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        return r;
}

static int child_append_options(sd_bus_message *m, const ClientSpec *spec) {
        int r = sd_bus_message_open_container(m, 'a', "{sv}");
        if (r < 0)
                return r;
        if (spec->output_fd >= 0) {
                r = sd_bus_message_append(m, "{sv}", "Output", "h", spec->output_fd);
                if (r < 0)
                        return r;
        }
        if (spec->events) {
                r = sd_bus_message_open_container(m, 'e', "sv");
                if (r >= 0)
                        r = sd_bus_message_append(m, "s", "Events");
                if (r >= 0)
                        r = sd_bus_message_open_container(m, 'v', "as");
                if (r >= 0)
                        r = sd_bus_message_append_strv(m, (char **) spec->events);
                if (r >= 0)
                        r = sd_bus_message_close_container(m);
                if (r >= 0)
                        r = sd_bus_message_close_container(m);
                if (r < 0)
                        return r;
        }
        if (spec->duration_ms) {
                r = sd_bus_message_append(m, "{sv}", "DurationMs", "u", spec->duration_ms);
                if (r < 0)
                        return r;
        }
        if (spec->buffer_size_kb) {
                r = sd_bus_message_append(m, "{sv}", "BufferSizeKb", "u", spec->buffer_size_kb);
                if (r < 0)
                        return r;
        }
        if (spec->detach_key) {
                r = sd_bus_message_append(m, "{sv}", "DetachKey", "s", spec->detach_key);
                if (r < 0)
                        return r;
        }
        return sd_bus_message_close_container(m);
}

/* Calls m (unref'd here); the reply in *reply, or an E line and < 0. */
static int child_call(ChildState *st, sd_bus_message *m, sd_bus_message **reply) {
        sd_bus_error e = SD_BUS_ERROR_NULL;
        int r;

        (void) sd_bus_message_set_allow_interactive_authorization(m, st->spec->interactive);
        r = sd_bus_call(st->bus, m, 60 * 1000 * 1000ULL, &e, reply);
        if (r < 0)
                child_report_error(st->report_fd, "call", &e, r);
        sd_bus_error_free(&e);
        sd_bus_message_unref(m);
        return r;
}

static int child_new_call(ChildState *st, const char *path, const char *iface, const char *member,
                          sd_bus_message **ret) {
        int r = sd_bus_message_new_method_call(st->bus, ret, TB_BUS_NAME, path, iface, member);
        if (r < 0)
                child_report_error(st->report_fd, "build-message", NULL, r);
        return r;
}

static void child_set_path(ChildState *st, const char *path) {
        free(st->path);
        st->path = path ? strdup(path) : NULL;
}

/* Reads an "o" reply, makes it the current path and reports "O path". */
static int child_report_path(ChildState *st, sd_bus_message *reply) {
        const char *path;
        int r = sd_bus_message_read(reply, "o", &path);

        if (r < 0) {
                child_report_error(st->report_fd, "read-reply", NULL, r);
                return r;
        }
        child_set_path(st, path);
        dprintf(st->report_fd, "O %s\n", path);
        return 0;
}

static int child_start(ChildState *st) {
        sd_bus_message *m = NULL, *reply = NULL;
        int r;

        r = child_new_call(st, TB_MANAGER_PATH, TB_MANAGER_IFACE, "Start", &m);
        if (r < 0)
                return r;
        r = sd_bus_message_append(m, "s", st->spec->config ? st->spec->config : "");
        if (r >= 0)
                r = child_append_options(m, st->spec);
        if (r < 0) {
                sd_bus_message_unref(m);
                child_report_error(st->report_fd, "build-message", NULL, r);
                return r;
        }
        r = child_call(st, m, &reply);
        if (r < 0)
                return r;
        r = child_report_path(st, reply);
        sd_bus_message_unref(reply);
        return r;
}

/* Reports the reply's a{sv} as "<kind>\tkey=value...". */
static int child_report_asv(ChildState *st, char kind, sd_bus_message *reply) {
        Buf b = { 0 };
        int r;

        buf_add(&b, "%c", kind);
        r = format_asv(reply, &b);
        if (r < 0) {
                free(b.s);
                child_report_error(st->report_fd, "read-reply", NULL, r);
                return r;
        }
        buf_emit(&b, st->report_fd);
        return 0;
}

static int child_stop(ChildState *st, bool via_session) {
        sd_bus_message *m = NULL, *reply = NULL;
        const char *path = st->path ? st->path : "/";
        int r;

        if (via_session)
                r = child_new_call(st, path, TB_SESSION_IFACE, "Stop", &m);
        else {
                r = child_new_call(st, TB_MANAGER_PATH, TB_MANAGER_IFACE, "Stop", &m);
                if (r >= 0 && (r = sd_bus_message_append(m, "o", path)) < 0)
                        sd_bus_message_unref(m);
        }
        if (r < 0)
                return r;
        r = child_call(st, m, &reply);
        if (r < 0)
                return r;
        r = child_report_asv(st, 'S', reply);
        sd_bus_message_unref(reply);
        return r;
}

static int child_detach(ChildState *st, const char *key, bool via_session) {
        sd_bus_message *m = NULL, *reply = NULL;
        const char *path = st->path ? st->path : "/";
        int r;

        if (via_session) {
                r = child_new_call(st, path, TB_SESSION_IFACE, "Detach", &m);
                if (r >= 0 && (r = sd_bus_message_append(m, "s", key)) < 0)
                        sd_bus_message_unref(m);
        } else {
                r = child_new_call(st, TB_MANAGER_PATH, TB_MANAGER_IFACE, "Detach", &m);
                if (r >= 0 && (r = sd_bus_message_append(m, "os", path, key)) < 0)
                        sd_bus_message_unref(m);
        }
        if (r < 0)
                return r;
        r = child_call(st, m, &reply);
        if (r < 0)
                return r;
        sd_bus_message_unref(reply);
        dprintf(st->report_fd, "D ok\n");
        return 0;
}

static int child_attach(ChildState *st, const char *key) {
        sd_bus_message *m = NULL, *reply = NULL;
        int r;

        r = child_new_call(st, TB_MANAGER_PATH, TB_MANAGER_IFACE, "Attach", &m);
        if (r >= 0 && (r = sd_bus_message_append(m, "s", key)) < 0)
                sd_bus_message_unref(m);
        if (r < 0)
                return r;
        r = child_call(st, m, &reply);
        if (r < 0)
                return r;
        r = child_report_path(st, reply);
        sd_bus_message_unref(reply);
        return r;
}

static int child_is_detached(ChildState *st, const char *key) {
        sd_bus_message *m = NULL, *reply = NULL;
        int r, b;

        r = child_new_call(st, TB_MANAGER_PATH, TB_MANAGER_IFACE, "IsDetached", &m);
        if (r >= 0 && (r = sd_bus_message_append(m, "s", key)) < 0)
                sd_bus_message_unref(m);
        if (r < 0)
                return r;
        r = child_call(st, m, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_read(reply, "b", &b);
        sd_bus_message_unref(reply);
        if (r < 0) {
                child_report_error(st->report_fd, "read-reply", NULL, r);
                return r;
        }
        dprintf(st->report_fd, "B %s\n", b ? "true" : "false");
        return 0;
}

static int child_list(ChildState *st) {
        sd_bus_message *m = NULL, *reply = NULL;
        const char *p;
        Buf b = { 0 };
        int r;

        r = child_new_call(st, TB_MANAGER_PATH, TB_MANAGER_IFACE, "ListSessions", &m);
        if (r < 0)
                return r;
        r = child_call(st, m, &reply);
        if (r < 0)
                return r;
        buf_add(&b, "L ");
        r = sd_bus_message_enter_container(reply, 'a', "o");
        for (bool first = true; r >= 0 && (r = sd_bus_message_read(reply, "o", &p)) > 0; first = false)
                buf_add(&b, "%s%s", first ? "" : " ", p);
        sd_bus_message_unref(reply);
        if (r < 0) {
                free(b.s);
                child_report_error(st->report_fd, "read-reply", NULL, r);
                return r;
        }
        buf_emit(&b, st->report_fd);
        return 0;
}

static int child_get(ChildState *st, const char *prop) {
        sd_bus_message *m = NULL, *reply = NULL;
        const char *contents;
        char type;
        Buf b = { 0 };
        int r;

        r = child_new_call(st, st->path ? st->path : "/", "org.freedesktop.DBus.Properties",
                           prop ? "Get" : "GetAll", &m);
        if (r >= 0) {
                r = prop ? sd_bus_message_append(m, "ss", TB_SESSION_IFACE, prop)
                         : sd_bus_message_append(m, "s", TB_SESSION_IFACE);
                if (r < 0)
                        sd_bus_message_unref(m);
        }
        if (r < 0)
                return r;
        r = child_call(st, m, &reply);
        if (r < 0)
                return r;
        if (!prop) {
                r = child_report_asv(st, 'V', reply);
                sd_bus_message_unref(reply);
                return r;
        }
        buf_add(&b, "V\t%s=", prop);
        r = sd_bus_message_peek_type(reply, &type, &contents);
        if (r >= 0)
                r = sd_bus_message_enter_container(reply, 'v', contents);
        if (r >= 0)
                r = format_value(reply, contents, &b);
        sd_bus_message_unref(reply);
        if (r < 0) {
                free(b.s);
                child_report_error(st->report_fd, "read-reply", NULL, r);
                return r;
        }
        buf_emit(&b, st->report_fd);
        return 0;
}

static int child_introspect(ChildState *st, const char *path) {
        sd_bus_message *m = NULL, *reply = NULL;
        const char *xml;
        Buf b = { 0 };
        int r;

        r = child_new_call(st, path, "org.freedesktop.DBus.Introspectable", "Introspect", &m);
        if (r < 0)
                return r;
        r = child_call(st, m, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_read(reply, "s", &xml);
        if (r < 0) {
                sd_bus_message_unref(reply);
                child_report_error(st->report_fd, "read-reply", NULL, r);
                return r;
        }
        buf_add(&b, "I %s", xml);
        for (size_t i = 0; i < b.len; i++)
                if (b.s[i] == '\n' || b.s[i] == '\r')
                        b.s[i] = ' ';
        sd_bus_message_unref(reply);
        buf_emit(&b, st->report_fd);
        return 0;
}

static void child_command(ChildState *st, char *line) {
        char *sp = strchr(line, ' ');
        const char *arg = sp ? sp + 1 : "";

        if (sp)
                *sp = 0;
        if (strcmp(line, "start") == 0)
                (void) child_start(st);
        else if (strcmp(line, "stop") == 0)
                (void) child_stop(st, false);
        else if (strcmp(line, "sstop") == 0)
                (void) child_stop(st, true);
        else if (strcmp(line, "detach") == 0)
                (void) child_detach(st, arg, false);
        else if (strcmp(line, "sdetach") == 0)
                (void) child_detach(st, arg, true);
        else if (strcmp(line, "attach") == 0)
                (void) child_attach(st, arg);
        else if (strcmp(line, "isdetached") == 0)
                (void) child_is_detached(st, arg);
        else if (strcmp(line, "list") == 0)
                (void) child_list(st);
        else if (strcmp(line, "get") == 0)
                (void) child_get(st, arg);
        else if (strcmp(line, "getall") == 0)
                (void) child_get(st, NULL);
        else if (strcmp(line, "introspect") == 0)
                (void) child_introspect(st, arg);
        else if (strcmp(line, "use") == 0) {
                child_set_path(st, arg);
                dprintf(st->report_fd, "U ok\n");
        } else if (strcmp(line, "quit") == 0)
                _exit(0);
        else
                dprintf(st->report_fd, "E local.UnknownCommand\t%s\n", line);
}

static int on_session_ended(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        ChildState *st = userdata;
        const char *path, *reason;
        Buf b = { 0 };

        if (sd_bus_message_read(m, "os", &path, &reason) < 0)
                return 0;
        buf_add(&b, "X %s\t%s", path, reason);
        (void) format_asv(m, &b);
        buf_emit(&b, st->report_fd);
        return 0;
}

static int on_properties_signal(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        ChildState *st = userdata;
        const char *iface = NULL, *member = sd_bus_message_get_member(m);
        Buf b = { 0 };

        buf_add(&b, "P %s", sd_bus_message_get_path(m) ? sd_bus_message_get_path(m) : "?");
        if (member && strcmp(member, "PropertiesChanged") == 0 && sd_bus_message_read(m, "s", &iface) >= 0) {
                buf_add(&b, "\t%s", iface);
                (void) format_asv(m, &b);
        } else
                buf_add(&b, "\t?%s", member ? member : "");
        buf_emit(&b, st->report_fd);
        return 0;
}

/* Serves commands from ctl_fd and signals from the bus until ctl closes. */
static G_NORETURN void child_loop(ChildState *st, int ctl_fd) {
        static char buf[LINE_MAX_LEN];
        size_t len = 0;

        for (;;) {
                struct pollfd p[2];
                uint64_t usec;
                int r, timeout = -1;

                while ((r = sd_bus_process(st->bus, NULL)) > 0)
                        ;
                if (r < 0)
                        _exit(5); /* the bus connection failed */
                if (sd_bus_get_timeout(st->bus, &usec) >= 0 && usec != UINT64_MAX) {
                        struct timespec ts;
                        uint64_t now;
                        clock_gettime(CLOCK_MONOTONIC, &ts);
                        now = (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
                        timeout = usec > now ? (int) MIN((usec - now + 999) / 1000, 60000u) : 0;
                }
                p[0] = (struct pollfd) { .fd = sd_bus_get_fd(st->bus), .events = (short) sd_bus_get_events(st->bus) };
                p[1] = (struct pollfd) { .fd = ctl_fd, .events = POLLIN };
                r = poll(p, 2, timeout);
                if (r < 0 && errno != EINTR)
                        _exit(6);
                if (r > 0 && p[1].revents) {
                        ssize_t n = read(ctl_fd, buf + len, sizeof buf - 1 - len);
                        char *nl;

                        if (n <= 0)
                                _exit(0);
                        len += (size_t) n;
                        buf[len] = 0;
                        while ((nl = memchr(buf, '\n', len))) {
                                size_t used = (size_t) (nl - buf) + 1;
                                *nl = 0;
                                child_command(st, buf);
                                memmove(buf, buf + used, len - used);
                                len -= used;
                                buf[len] = 0;
                        }
                        if (len == sizeof buf - 1)
                                len = 0; /* an overlong line: drop it */
                }
        }
}

static G_NORETURN void client_child(const ClientSpec *spec, const TbUser *user, int report_fd, int ctl_fd) {
        ChildState st = { .report_fd = report_fd, .spec = spec };
        bool holds = spec->op == OP_HOLD_NAME || (spec->op == OP_START && spec->hold);
        const char *unique;
        int r;

        if (user)
                tb_user_become(user);
        r = sd_bus_open_system(&st.bus);
        if (r < 0) {
                child_report_error(report_fd, "connect", NULL, r);
                _exit(3);
        }
        r = sd_bus_get_unique_name(st.bus, &unique);
        if (r < 0) {
                child_report_error(report_fd, "unique-name", NULL, r);
                _exit(3);
        }
        if (holds) {
                /* Synchronous AddMatch: subscribed before the test hears the name. */
                r = sd_bus_match_signal(st.bus, NULL, NULL, NULL, TB_MANAGER_IFACE, "SessionEnded",
                                        on_session_ended, &st);
                if (r >= 0)
                        r = sd_bus_match_signal(st.bus, NULL, NULL, NULL, "org.freedesktop.DBus.Properties", NULL,
                                                on_properties_signal, &st);
                if (r < 0) {
                        child_report_error(report_fd, "add-match", NULL, r);
                        _exit(3);
                }
        }
        child_set_path(&st, spec->path);
        dprintf(report_fd, "N %s\n", unique);

        switch (spec->op) {
        case OP_HOLD_NAME:
                child_loop(&st, ctl_fd);
        case OP_START:
                if (child_start(&st) < 0)
                        _exit(2);
                if (!spec->hold)
                        _exit(0);
                child_loop(&st, ctl_fd);
        case OP_STOP_MANAGER:
        case OP_STOP_SESSION:
                _exit(child_stop(&st, spec->op == OP_STOP_SESSION) < 0 ? 2 : 0);
        }
        _exit(4);
}

/* ===================================================================== */
/* Client: the test side                                                  */
/* ===================================================================== */

void client_spawn_func(const char *user_name, TbClientChildFunc func, const void *data, Client *ret) {
        g_auto(TbUser) user = { 0 };
        g_autoptr(GError) error = NULL;
        bool as_root = g_str_equal(user_name, "root");
        int rep[2], ctl[2];

        if (!as_root) {
                g_assert_true(tb_user_lookup(user_name, &user, &error));
                g_assert_no_error(error);
        }
        g_assert_cmpint(pipe2(rep, O_CLOEXEC), ==, 0);
        g_assert_cmpint(pipe2(ctl, O_CLOEXEC), ==, 0);
        fflush(NULL);
        ret->pid = fork();
        g_assert_cmpint(ret->pid, >=, 0);
        if (ret->pid == 0) {
                close(rep[0]);
                close(ctl[1]);
                (void) signal(SIGPIPE, SIG_IGN);
                func(as_root ? NULL : &user, rep[1], ctl[0], data);
        }
        close(rep[1]);
        close(ctl[0]);
        ret->report_fd = rep[0];
        ret->ctl_fd = ctl[1];
        ret->queued = g_ptr_array_new_with_free_func(g_free);
}

static G_NORETURN void spec_child(const TbUser *user, int report_fd, int ctl_fd, const void *data) {
        client_child(data, user, report_fd, ctl_fd);
}

void client_spawn(const ClientSpec *spec, Client *ret) {
        client_spawn_func(spec->user, spec_child, spec, ret);
}

static char *line_payload(const char *line) {
        return g_strdup(line[1] == ' ' ? line + 2 : line + 1);
}

char *client_expect(Client *c, char kind, guint timeout_ms, char **ret_error) {
        gint64 deadline = g_get_monotonic_time() + (gint64) timeout_ms * 1000;

        for (guint i = 0; c->queued && i < c->queued->len; i++) {
                const char *line = g_ptr_array_index(c->queued, i);
                if (line[0] == kind || line[0] == 'E') {
                        char *out = NULL;
                        if (line[0] == 'E' && ret_error)
                                *ret_error = line_payload(line);
                        else if (line[0] == kind)
                                out = line_payload(line);
                        g_ptr_array_remove_index(c->queued, i);
                        return out;
                }
        }
        for (;;) {
                g_autoptr(GError) error = NULL;
                gint64 left = (deadline - g_get_monotonic_time()) / 1000;
                g_autofree char *line = left > 0 ? tb_read_line(c->report_fd, (guint) left, &error) : NULL;

                if (!line) {
                        if (ret_error)
                                *ret_error = g_strdup_printf("local.NoReport\t%s", error ? error->message : "timed out");
                        return NULL;
                }
                if (line[0] == 'E') {
                        if (ret_error)
                                *ret_error = line_payload(line);
                        return NULL;
                }
                if (line[0] == kind)
                        return line_payload(line);
                if (c->queued)
                        g_ptr_array_add(c->queued, g_steal_pointer(&line));
        }
}

char *client_cmd(Client *c, const char *cmd, char kind, char **ret_error) {
        g_autofree char *line = g_strconcat(cmd, "\n", NULL);
        size_t n = strlen(line);

        g_assert_null(strchr(cmd, '\n'));
        if (write(c->ctl_fd, line, n) != (ssize_t) n) {
                if (ret_error)
                        *ret_error = g_strdup_printf("local.CtlWrite\t%s", g_strerror(errno));
                return NULL;
        }
        return client_expect(c, kind, 30000, ret_error);
}

GPtrArray *client_collect(Client *c, char kind, guint ms) {
        GPtrArray *out = g_ptr_array_new_with_free_func(g_free);
        gint64 deadline = g_get_monotonic_time() + (gint64) ms * 1000;

        for (guint i = 0; c->queued && i < c->queued->len;) {
                const char *line = g_ptr_array_index(c->queued, i);
                if (line[0] == kind) {
                        g_ptr_array_add(out, line_payload(line));
                        g_ptr_array_remove_index(c->queued, i);
                } else
                        i++;
        }
        for (;;) {
                gint64 left = (deadline - g_get_monotonic_time()) / 1000;
                g_autofree char *line = NULL;

                if (left <= 0)
                        break;
                line = tb_read_line(c->report_fd, (guint) left, NULL);
                if (!line)
                        break;
                if (line[0] == kind)
                        g_ptr_array_add(out, line_payload(line));
                else if (c->queued)
                        g_ptr_array_add(c->queued, g_steal_pointer(&line));
        }
        return out;
}

int client_finish(Client *c, guint timeout_ms) {
        int status = -1;
        gint64 deadline = g_get_monotonic_time() + (gint64) timeout_ms * 1000;

        if (c->ctl_fd >= 0)
                close(c->ctl_fd);
        c->ctl_fd = -1;
        while (c->pid > 0) {
                pid_t r = waitpid(c->pid, &status, WNOHANG);
                if (r == c->pid)
                        break;
                if (g_get_monotonic_time() > deadline) {
                        kill(c->pid, SIGKILL);
                        (void) waitpid(c->pid, &status, 0);
                        break;
                }
                g_usleep(10 * 1000);
        }
        c->pid = 0;
        if (c->report_fd >= 0)
                close(c->report_fd);
        c->report_fd = -1;
        g_clear_pointer(&c->queued, g_ptr_array_unref);
        return status;
}

int client_kill(Client *c) {
        if (c->pid > 0)
                g_assert_cmpint(kill(c->pid, SIGKILL), ==, 0);
        return client_finish(c, 5000);
}

char *error_name(const char *err) {
        const char *tab = err ? strchr(err, '\t') : NULL;
        if (!err)
                return NULL;
        return tab ? g_strndup(err, (gsize) (tab - err)) : g_strdup(err);
}

const char *error_message(const char *err) {
        const char *tab = err ? strchr(err, '\t') : NULL;
        return tab ? tab + 1 : "";
}

char *client_run_full(const ClientSpec *spec, char **ret_out, char **ret_full_error) {
        Client c;
        char kind = spec->op == OP_START ? 'O' : 'S';
        char *err = NULL, *out, *name;

        g_assert_false(spec->hold);
        g_assert_true(spec->op != OP_HOLD_NAME);
        client_spawn(spec, &c);
        out = client_expect(&c, kind, 60000, &err);
        client_finish(&c, 10000);
        if (ret_out)
                *ret_out = out;
        else
                g_free(out);
        if (!err)
                return NULL;
        note("%s: %s\n", spec->user, err);
        name = error_name(err);
        if (ret_full_error)
                *ret_full_error = err;
        else
                g_free(err);
        return name;
}

char *client_run(const ClientSpec *spec, char **ret_out) {
        return client_run_full(spec, ret_out, NULL);
}

GHashTable *parse_stats(const char *s) {
        GHashTable *h = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
        g_auto(GStrv) items = g_strsplit(s, "\t", -1);

        for (size_t i = 0; items[i]; i++) {
                char *eq = strchr(items[i], '=');
                if (eq)
                        g_hash_table_insert(h, g_strndup(items[i], (gsize) (eq - items[i])), g_strdup(eq + 1));
        }
        return h;
}
