/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * --rotate-every, --rotate-size, --keep: the trace as FILE.0, FILE.1,
 * ..., each a trace that loads alone. tracebus opens every chunk itself, as it opens -o
 * FILE (the service never opens a path): FILE.0 goes with Start, FILE.1 right after
 * through Session.SetNextOutput, and on each Rotated(N) FILE.N+1, so the service always
 * has the next chunk's fd when a rotation is due. --keep N deletes FILE.N-K once chunk
 * N began; the chunk handed over but never begun is removed at the end.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "fd-util.h"

#define MIN_ROTATE_EVERY_MS 1000u
#define MIN_ROTATE_BYTES (1024u * 1024u)

typedef struct Rotation {
        const Args *args;
        sd_bus *bus;               /* not owned */
        char *session;
        char *service;
        uint32_t handed;           /* the chunk whose fd the service has last been given */
        bool handed_any;
} Rotation;

static Rotation rotation;

int cli_parse_rotate_option(Args *a, const char *option, const char *arg) {
        uint64_t v;

        if (strcmp(strempty(option), "rotate-every") == 0) {
                if (cli_parse_duration_ms(arg, &v) < 0 || v < MIN_ROTATE_EVERY_MS)
                        return cli_refuse("--rotate-every argument is invalid: '%s' (1s at least: 30s, 10m, 1h)", arg);
                a->rotate_every_ms = v;
        } else if (strcmp(strempty(option), "rotate-size") == 0) {
                if (cli_parse_size_bytes(arg, &v) < 0 || v < MIN_ROTATE_BYTES)
                        return cli_refuse("--rotate-size argument is invalid: '%s' (1mb at least: 64mb, 1gb)", arg);
                a->rotate_bytes = v;
        } else {
                char *end;
                unsigned long n = strtoul(arg, &end, 10);

                if (!*arg || *end || arg[0] == '-' || n == 0 || n > 100000)
                        return cli_refuse("--keep argument is invalid: '%s' (a number of chunks, 1 to 100000)", arg);
                a->rotate_keep = (uint32_t) n;
        }
        return 0;
}

int cli_check_rotation(const Args *a) {
        if (!cli_rotates(a)) {
                if (a->rotate_keep > 0)
                        return cli_refuse("--keep is supported only with --rotate-every or --rotate-size");
                return 0;
        }
        if (a->mode != MODE_RECORD || a->attach_key || a->is_detached_key)
                return cli_refuse("--rotate-every and --rotate-size are supported only when recording");
        if (a->detach_key)
                return cli_refuse("Cannot rotate with --detach: tracebus opens each chunk while it runs "
                                  "(a detached session rotates in the service's trace directory: see tracebus(1))");
        if (!a->output || strcmp(a->output, "-") == 0)
                return cli_refuse("Rotation writes FILE.0, FILE.1, ...: pass -o FILE");
        return 0;
}

int cli_append_rotate_options(sd_bus_message *m) {
        const Args *a = rotation.args;
        int r = 0;

        if (!a)
                return 0;
        if (a->rotate_every_ms > 0)
                r = sd_bus_message_append(m, "{sv}", "RotateEveryMs", "t", a->rotate_every_ms);
        if (r >= 0 && a->rotate_bytes > 0)
                r = sd_bus_message_append(m, "{sv}", "RotateBytes", "t", a->rotate_bytes);
        return r;
}

static char *chunk_path(const Args *a, uint32_t index) {
        char *p;

        return asprintf(&p, "%s.%" PRIu32, a->output, index) < 0 ? NULL : p;
}

/* Opened here, as the caller, never by the service (README: security model). */
static int open_path(const Args *a, const char *path) {
        struct stat st;
        int fd;

        fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOCTTY | (a->no_clobber ? O_EXCL : O_TRUNC), 0600);
        if (fd < 0) {
                int r = -errno;
                cli_log("Failed to open %s: %s%s", path, strerror(-r),
                        r == -EEXIST && a->no_clobber ? " (--no-clobber)" : "");
                return r;
        }
        /* A directory or device would only fail later, in the service. */
        if (fstat(fd, &st) >= 0 && !S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode) && !S_ISSOCK(st.st_mode)) {
                cli_log("%s is not a regular file, a pipe or a socket", path);
                safe_close(fd);
                return -EINVAL;
        }
        return fd;
}

static int open_chunk(const Args *a, uint32_t index) {
        _cleanup_free_ char *path = chunk_path(a, index);

        return path ? open_path(a, path) : -ENOMEM;
}

int cli_open_output(const Args *a) {
        int fd;

        rotation.args = a;
        if (!a->output)
                return -EBADF; /* --detach without -o: the service's trace directory */
        if (cli_rotates(a))
                return open_chunk(a, 0);
        if (strcmp(a->output, "-") != 0)
                return open_path(a, a->output);
        if (isatty(STDOUT_FILENO)) {
                cli_log("refusing to write a binary trace to the terminal; redirect stdout or pass -o FILE");
                return -ENOTTY;
        }
        fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                cli_log("cannot use stdout: %m");
        return fd < 0 ? -errno : fd;
}

char *cli_output_label(const Args *a) {
        char *label;

        if (!a->output)
                return NULL;
        if (cli_rotates(a))
                return asprintf(&label, "%s.0, %s.1, ...", a->output, a->output) < 0 ? NULL : label;
        return strdup(strcmp(a->output, "-") == 0 ? "stdout" : a->output);
}

static int on_set_next_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        const sd_bus_error *e = sd_bus_message_get_error(reply);

        if (e)
                cli_log("cannot hand over the next chunk: %s", e->message ?: e->name);
        return 0;
}

/* Opens chunk @index and hands it over. */
static int hand_over(uint32_t index) {
        _cleanup_close_ int fd = open_chunk(rotation.args, index);
        int r;

        if (fd < 0)
                return fd;
        /* sd-bus keeps a copy of the fd in the message: ours closes here. */
        r = sd_bus_call_method_async(rotation.bus, NULL, TB_BUS_NAME, rotation.session, TB_SESSION_INTERFACE,
                                     "SetNextOutput", on_set_next_reply, NULL, "h", fd);
        if (r < 0)
                return r;
        rotation.handed = index;
        rotation.handed_any = true;
        return 0;
}

static void delete_chunk(uint32_t index) {
        _cleanup_free_ char *path = chunk_path(rotation.args, index);

        if (path && unlink(path) < 0 && errno != ENOENT)
                cli_log("--keep: cannot delete %s: %m", path);
}

static int on_rotated(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        const char *sender = sd_bus_message_get_sender(m);
        uint32_t index;
        int r;

        if (rotation.service && (!sender || strcmp(sender, rotation.service) != 0))
                return 0;
        if (sd_bus_message_read(m, "u", &index) < 0 || index == UINT32_MAX)
                return 0;
        r = hand_over(index + 1);
        if (r < 0)
                cli_log("cannot open chunk %" PRIu32 ": %s; chunk %" PRIu32 " goes on", index + 1, strerror(-r), index);
        if (rotation.args->rotate_keep > 0 && index >= rotation.args->rotate_keep)
                delete_chunk(index - rotation.args->rotate_keep);
        return 0;
}

int cli_rotation_start(sd_bus *bus, const char *session, const char *service) {
        int r;

        if (!rotation.args || !cli_rotates(rotation.args))
                return 0;
        rotation.bus = bus;
        rotation.session = strdup(session);
        rotation.service = service ? strdup(service) : NULL;
        if (!rotation.session || (service && !rotation.service))
                return -ENOMEM;
        r = sd_bus_match_signal(bus, NULL, NULL, session, TB_SESSION_INTERFACE, "Rotated", on_rotated, NULL);
        if (r < 0) {
                cli_log("cannot set up the rotation: cannot watch for Rotated: %s", strerror(-r));
                return r;
        }
        r = hand_over(1);
        if (r < 0)
                cli_log("cannot set up the rotation: cannot hand over the second chunk's file: %s", strerror(-r));
        return r;
}

void cli_rotation_end(void) {
        _cleanup_free_ char *path = NULL;
        struct stat st;

        /* The chunk handed over last, if the session ended before beginning it, is empty. */
        if (rotation.handed_any && (path = chunk_path(rotation.args, rotation.handed)) &&
            stat(path, &st) >= 0 && S_ISREG(st.st_mode) && st.st_size == 0)
                (void) unlink(path);
        rotation.session = mfree(rotation.session);
        rotation.service = mfree(rotation.service);
}
