/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target: the D-Bus argument readers, start_read_arguments() (Manager.Start's
 * "s" and a{sv}) and bus_message_read_dict() itself, on a real sd_bus_message built
 * from the input. sd-bus has no public way to take a message from raw bytes, so the
 * input is a small program of appends: what a caller can send, any types in any order,
 * with the known option names most of the time so that their readers are reached.
 *
 * The input, byte by byte (a missing byte reads as 0):
 *   mode       bit 0: a generic dictionary reader that skips each value, else Start's;
 *              bit 1: the config string is left out (the body starts with the dict)
 *   text       (Start) a string: a length byte, then that many bytes
 *   entries    until the input ends: a key (a byte < 0xf0 picks a known name, else a
 *              string follows), then a value (see append_value())
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include "bus-dict.h"
#include "start-arguments.h"

typedef struct Input {
        const uint8_t *p;
        size_t n;
} Input;

static const char *const option_names[] = {
        "Output", "Events", "DurationMs", "BinaryConfig", "DetachKey", "BufferSizeKb",
        "RotateEveryMs", "RotateBytes", "RotateKeep", "",
};

static sd_bus *bus;
static int null_fd = -1;

static uint8_t take_byte(Input *in) {
        if (in->n == 0)
                return 0;
        in->n--;
        return *in->p++;
}

static uint64_t take_u64(Input *in) {
        uint64_t v = 0;

        for (int i = 0; i < 8; i++)
                v = v << 8 | take_byte(in);
        return v;
}

/* A string of up to @max bytes (the length from one or two bytes), NUL-terminated. */
static char *take_string(Input *in, size_t max) {
        size_t len = take_byte(in);
        char *s;

        if (max > 255)
                len = len << 8 | take_byte(in);
        len = len < max ? len : max;
        len = len < in->n ? len : in->n;
        s = malloc(len + 1);
        if (!s)
                abort();
        memcpy(s, in->p, len);
        s[len] = 0;
        in->p += len;
        in->n -= len;
        return s;
}

static int append_value(sd_bus_message *m, Input *in, unsigned depth);

/* An array of strings, each from the input: Events' type. */
static int append_strv(sd_bus_message *m, Input *in) {
        unsigned count = take_byte(in) * 8u + take_byte(in) % 8u;
        int r = sd_bus_message_open_container(m, 'a', "s");

        for (unsigned i = 0; r >= 0 && i < count && in->n > 0; i++) {
                char *s = take_string(in, 255);
                r = sd_bus_message_append_basic(m, 's', s);
                free(s);
        }
        return r < 0 ? r : sd_bus_message_close_container(m);
}

/* A dictionary a{sv} of entries from the input, @depth deep. */
static int append_dict(sd_bus_message *m, Input *in, unsigned depth, bool to_end) {
        int r = sd_bus_message_open_container(m, 'a', "{sv}");
        unsigned count = to_end ? UINT32_MAX : take_byte(in) % 8u;

        for (unsigned i = 0; r >= 0 && i < count && in->n > 0; i++) {
                uint8_t k = take_byte(in);
                char *key = k < 0xf0 ? strdup(option_names[k % (sizeof(option_names) / sizeof(*option_names))])
                                     : take_string(in, 255);

                if (!key)
                        abort();
                r = sd_bus_message_open_container(m, 'e', "sv");
                if (r >= 0)
                        r = sd_bus_message_append_basic(m, 's', key);
                if (r >= 0)
                        r = append_value(m, in, depth);
                if (r >= 0)
                        r = sd_bus_message_close_container(m);
                free(key);
        }
        return r < 0 ? r : sd_bus_message_close_container(m);
}

/* A variant: its type from a byte, its contents from the input. */
static int append_value(sd_bus_message *m, Input *in, unsigned depth) {
        static const char *const types[] = { "u", "t", "s", "as", "ay", "h", "i", "b", "a{sv}", "v", "(su)", "d" };
        const char *type = types[take_byte(in) % (sizeof(types) / sizeof(*types))];
        int r;

        if (depth > 4 && (type[0] == 'a' && type[1] == '{'))
                type = "u";
        if (depth > 4 && type[0] == 'v')
                type = "u";
        r = sd_bus_message_open_container(m, 'v', type);
        if (r < 0)
                return r;
        switch (type[0]) {
        case 'u': {
                uint32_t v = (uint32_t) take_u64(in);
                r = sd_bus_message_append_basic(m, 'u', &v);
                break;
        }
        case 't': case 'd': {
                uint64_t v = take_u64(in);
                r = sd_bus_message_append_basic(m, type[0], &v);
                break;
        }
        case 'i': case 'b': {
                int32_t v = take_byte(in) & 1;
                r = sd_bus_message_append_basic(m, type[0], &v);
                break;
        }
        case 'h':
                r = sd_bus_message_append_basic(m, 'h', &null_fd);
                break;
        case 's': {
                char *s = take_string(in, 4096);
                r = sd_bus_message_append_basic(m, 's', s);
                free(s);
                break;
        }
        case 'v':
                r = append_value(m, in, depth + 1);
                break;
        case '(': {
                char *s = take_string(in, 255);
                r = sd_bus_message_append(m, "(su)", s, (uint32_t) take_byte(in));
                free(s);
                break;
        }
        default:
                if (strcmp(type, "as") == 0)
                        r = append_strv(m, in);
                else if (strcmp(type, "ay") == 0) {
                        char *bytes = take_string(in, 65535);
                        r = sd_bus_message_append_array(m, 'y', bytes, strlen(bytes));
                        free(bytes);
                } else
                        r = append_dict(m, in, depth + 1, false);
        }
        return r < 0 ? r : sd_bus_message_close_container(m);
}

/* A client bus on one end of a socket pair, which the other end never answers: enough
 * for sd-bus to make messages (and to allow fds in them). */
static void bus_setup(void) {
        int fds[2];

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) < 0 || sd_bus_new(&bus) < 0 ||
            sd_bus_set_fd(bus, fds[0], fds[0]) < 0 || sd_bus_negotiate_fds(bus, true) < 0 || sd_bus_start(bus) < 0)
                abort();
        null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (null_fd < 0)
                abort();
}

static int skip_entry(sd_bus_message *m, const char *key, void *userdata) {
        (void) key;
        (void) userdata;
        return sd_bus_message_skip(m, "v");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        Input in = { .p = data, .n = size };
        uint8_t mode = take_byte(&in);
        sd_bus_message *m = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        StartOptions o = { .output_fd = -1 };
        int r;

        if (!bus)
                bus_setup();
        if (sd_bus_message_new_method_call(bus, &m, "org.tracebus.Tracebus1", "/org/tracebus/Tracebus1",
                                           "org.tracebus.Tracebus1.Manager", "Start") < 0)
                abort();
        r = 0;
        if (!(mode & 2)) {
                char *text = take_string(&in, 255);
                r = sd_bus_message_append_basic(m, 's', text);
                free(text);
        }
        if (r >= 0)
                r = append_dict(m, &in, 0, true);
        /* What sd-bus refused to append (a string that is not UTF-8) no caller can send. */
        if (r < 0 || sd_bus_message_seal(m, 1, 0) < 0) {
                sd_bus_message_unref(m);
                return 0;
        }
        if (sd_bus_message_rewind(m, true) < 0)
                abort();
        if (mode & 1)
                (void) bus_message_read_dict(m, skip_entry, NULL);
        else
                (void) start_read_arguments(m, &o, &error);
        start_options_done(&o);
        sd_bus_error_free(&error);
        sd_bus_message_unref(m);
        return 0;
}
