/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * service/unwind/unwind-protocol.c: the messages between the perf sampler and
 * tracebus-unwind round-trip, and every cap is checked while reading: a request or reply
 * over a cap, a string without its NUL or with one inside, a wrong magic, a size past the
 * cap announced in a header (refused before anything is read or allocated), a peer that
 * goes quiet (the deadline) or away (EOF).
 */
#include <errno.h>
#include <glib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "time-util.h"
#include "unwind-protocol.h"

static void test_request_round_trip(void) {
        const uint64_t ips[] = { 0x1000, 0x2000, 0x3000 }, regs[] = { 1, 2, 3 };
        const uint8_t stack[] = { 9, 8, 7, 6, 5 };
        UnwindRequest in = { .pid = 42, .tid = 43, .flags = UNWIND_FLAG_EXEC, .ips = ips, .n_ips = 3,
                             .regs = regs, .regs_mask = 0x1c0, .stack = stack, .stack_len = sizeof(stack) }, out;
        UnwindBuffer b = {};
        UnwindHeader h;

        g_assert_cmpint(unwind_request_encode(&in, &b), ==, 0);
        memcpy(&h, b.data, sizeof(h));
        g_assert_cmpuint(h.magic, ==, UNWIND_MAGIC_REQUEST);
        g_assert_cmpuint(h.size, ==, b.len - sizeof(h));
        g_assert_cmpint(unwind_request_decode(b.data + sizeof(h), h.size, &out), ==, 0);
        g_assert_cmpint(out.pid, ==, 42);
        g_assert_cmpint(out.tid, ==, 43);
        g_assert_cmpuint(out.flags, ==, UNWIND_FLAG_EXEC);
        g_assert_cmpuint(out.n_ips, ==, 3);
        g_assert_cmpuint(out.ips[2], ==, 0x3000);
        g_assert_cmpuint(out.regs[1], ==, 2);
        g_assert_cmpmem(out.stack, out.stack_len, stack, sizeof(stack));
        /* One byte short, one too many, a pid of 0: refused. */
        g_assert_cmpint(unwind_request_decode(b.data + sizeof(h), h.size - 1, &out), ==, -EBADMSG);
        g_assert_cmpint(unwind_request_decode(b.data + sizeof(h), h.size + 1, &out), ==, -EBADMSG);
        in.pid = 0;
        g_assert_cmpint(unwind_request_encode(&in, &b), ==, 0);
        g_assert_cmpint(unwind_request_decode(b.data + sizeof(h), h.size, &out), ==, -EBADMSG);
        /* Over a cap: never encoded. */
        in.n_ips = UNWIND_MAX_IPS + 1;
        g_assert_cmpint(unwind_request_encode(&in, &b), ==, -E2BIG);
        unwind_buffer_done(&b);
}

static void test_reply_round_trip(void) {
        const uint8_t id[] = { 0xab, 0xcd };
        UnwindFrame f = { .pc = 0x401000, .rel_pc = 0x1000, .start = 0x400000, .end = 0x402000, .path = "/usr/bin/x",
                          .function = "main", .build_id = id, .build_id_len = 2 }, out[4];
        UnwindReplyFixed fixed;
        UnwindBuffer b = {};
        size_t n;

        g_assert_cmpint(unwind_reply_begin(&b, UNWIND_STATUS_OK, UNWIND_REPLY_FILES_DENIED), ==, 0);
        g_assert_cmpint(unwind_reply_add(&b, &f), ==, 0);
        f.function = NULL;
        g_assert_cmpint(unwind_reply_add(&b, &f), ==, 0);
        unwind_reply_end(&b);
        g_assert_cmpint(unwind_reply_decode(b.data + sizeof(UnwindHeader), b.len - sizeof(UnwindHeader), &fixed, out,
                                            G_N_ELEMENTS(out), &n), ==, 0);
        g_assert_cmpuint(n, ==, 2);
        g_assert_cmpuint(fixed.flags, ==, UNWIND_REPLY_FILES_DENIED);
        g_assert_cmpstr(out[0].path, ==, "/usr/bin/x");
        g_assert_cmpstr(out[0].function, ==, "main");
        g_assert_null(out[1].function);
        g_assert_cmpmem(out[0].build_id, out[0].build_id_len, id, sizeof(id));

        /* The path's NUL made another byte: refused, not read past. */
        uint8_t *path = memmem(b.data, b.len, "/usr/bin/x", 10);
        path[10] = 'y';
        g_assert_cmpint(unwind_reply_decode(b.data + sizeof(UnwindHeader), b.len - sizeof(UnwindHeader), &fixed, out,
                                            G_N_ELEMENTS(out), &n), ==, -EBADMSG);
        path[10] = '\0';
        path[3] = '\0';         /* a NUL inside */
        g_assert_cmpint(unwind_reply_decode(b.data + sizeof(UnwindHeader), b.len - sizeof(UnwindHeader), &fixed, out,
                                            G_N_ELEMENTS(out), &n), ==, -EBADMSG);
        /* More frames announced than the cap. */
        ((UnwindReplyFixed *) (b.data + sizeof(UnwindHeader)))->n_frames = UNWIND_MAX_FRAMES + 1;
        g_assert_cmpint(unwind_reply_decode(b.data + sizeof(UnwindHeader), b.len - sizeof(UnwindHeader), &fixed, out,
                                            G_N_ELEMENTS(out), &n), ==, -EBADMSG);
        unwind_buffer_done(&b);
}

/* A name longer than the cap is cut, a path longer than it leaves the frame out. */
static void test_reply_caps(void) {
        g_autofree char *long_name = g_strnfill(UNWIND_MAX_FUNCTION + 100, 'f');
        g_autofree char *long_path = g_strnfill(UNWIND_MAX_PATH + 1, 'p');
        UnwindFrame f = { .path = "/x", .function = long_name }, out[2];
        UnwindReplyFixed fixed;
        UnwindBuffer b = {};
        size_t n;

        g_assert_cmpint(unwind_reply_begin(&b, UNWIND_STATUS_OK, 0), ==, 0);
        g_assert_cmpint(unwind_reply_add(&b, &f), ==, 0);
        f.path = long_path;
        g_assert_cmpint(unwind_reply_add(&b, &f), ==, 0);
        unwind_reply_end(&b);
        g_assert_cmpuint(unwind_reply_frames(&b), ==, 1);
        g_assert_cmpint(unwind_reply_decode(b.data + sizeof(UnwindHeader), b.len - sizeof(UnwindHeader), &fixed, out,
                                            G_N_ELEMENTS(out), &n), ==, 0);
        g_assert_cmpuint(strlen(out[0].function), ==, UNWIND_MAX_FUNCTION);
        unwind_buffer_done(&b);
}

/* Reading: a header past the cap is refused before its body, a wrong magic too, a quiet
 * peer ends at the deadline, a gone one with EPIPE. */
static void test_read_message(void) {
        UnwindHeader big = { UNWIND_MAGIC_REPLY, UNWIND_MAX_REPLY + 1 }, wrong = { UNWIND_MAGIC_REQUEST, 0 };
        UnwindBuffer b = {};
        int fds[2];

        g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), ==, 0);
        g_assert_cmpint(write(fds[1], &big, sizeof(big)), ==, sizeof(big));
        g_assert_cmpint(unwind_read_message(fds[0], UNWIND_MAGIC_REPLY, UNWIND_MAX_REPLY, UINT64_MAX, &b), ==, -EBADMSG);
        g_assert_cmpuint(b.allocated, ==, 0);
        g_assert_cmpint(write(fds[1], &wrong, sizeof(wrong)), ==, sizeof(wrong));
        g_assert_cmpint(unwind_read_message(fds[0], UNWIND_MAGIC_REPLY, UNWIND_MAX_REPLY, UINT64_MAX, &b), ==, -EBADMSG);
        /* Half a header, then nothing until the deadline. */
        g_assert_cmpint(write(fds[1], &big, 4), ==, 4);
        g_assert_cmpint(unwind_read_message(fds[0], UNWIND_MAGIC_REPLY, UNWIND_MAX_REPLY,
                                            now_usec(CLOCK_MONOTONIC) + 50000, &b), ==, -ETIMEDOUT);
        close(fds[1]);
        g_assert_cmpint(unwind_read_message(fds[0], UNWIND_MAGIC_REPLY, UNWIND_MAX_REPLY, UINT64_MAX, &b), ==, -EPIPE);
        close(fds[0]);
        unwind_buffer_done(&b);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/unwind-protocol/request", test_request_round_trip);
        g_test_add_func("/unwind-protocol/reply", test_reply_round_trip);
        g_test_add_func("/unwind-protocol/reply-caps", test_reply_caps);
        g_test_add_func("/unwind-protocol/read", test_read_message);
        return g_test_run();
}
