/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The sampler's and tracebus-unwind's messages (unwind-protocol.h): built, read and
 * checked against their caps on both sides. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "macro.h"
#include "time-util.h"
#include "unwind-protocol.h"

void unwind_buffer_done(UnwindBuffer *b) {
        free(b->data);
        *b = (UnwindBuffer) {};
}

static int buffer_reserve(UnwindBuffer *b, size_t size) {
        uint8_t *p;

        if (size <= b->allocated)
                return 0;
        p = realloc(b->data, size);
        if (!p)
                return -ENOMEM;
        b->data = p;
        b->allocated = size;
        return 0;
}

static int buffer_append(UnwindBuffer *b, const void *data, size_t n) {
        int r = b->len + n <= b->allocated ? 0 : buffer_reserve(b, MAX(b->len + n, b->allocated * 2));

        if (r < 0)
                return r;
        /* An empty field may come as NULL, which memcpy() must not be given. */
        if (n > 0)
                memcpy(b->data + b->len, data, n);
        b->len += n;
        return 0;
}

static int bits_set(uint64_t mask) {
        return __builtin_popcountll(mask);
}

int unwind_request_encode(const UnwindRequest *r, UnwindBuffer *b) {
        size_t n_regs = bits_set(r->regs_mask);
        UnwindRequestFixed fixed = {
                .pid = r->pid, .tid = r->tid, .flags = r->flags, .n_ips = r->n_ips,
                .regs_mask = r->regs_mask, .stack_len = r->stack_len,
        };
        UnwindHeader h = { .magic = UNWIND_MAGIC_REQUEST };
        int k;

        if (r->n_ips > UNWIND_MAX_IPS || n_regs > UNWIND_MAX_REGS || r->stack_len > UNWIND_MAX_STACK)
                return -E2BIG;
        h.size = sizeof(fixed) + 8 * (r->n_ips + n_regs) + r->stack_len;
        b->len = 0;
        if ((k = buffer_append(b, &h, sizeof(h))) < 0 || (k = buffer_append(b, &fixed, sizeof(fixed))) < 0 ||
            (k = buffer_append(b, r->ips, 8 * r->n_ips)) < 0 || (k = buffer_append(b, r->regs, 8 * n_regs)) < 0 ||
            (k = buffer_append(b, r->stack, r->stack_len)) < 0)
                return k;
        return 0;
}

int unwind_request_decode(const uint8_t *body, size_t size, UnwindRequest *ret) {
        UnwindRequestFixed fixed;
        size_t n_regs;

        if (size < sizeof(fixed))
                return -EBADMSG;
        memcpy(&fixed, body, sizeof(fixed));
        n_regs = bits_set(fixed.regs_mask);
        if (fixed.n_ips > UNWIND_MAX_IPS || n_regs > UNWIND_MAX_REGS || fixed.stack_len > UNWIND_MAX_STACK ||
            fixed.pid <= 0 || size != sizeof(fixed) + 8 * (fixed.n_ips + n_regs) + fixed.stack_len)
                return -EBADMSG;
        /* The body is malloc()ed and the fixed part a multiple of 8: the arrays are aligned. */
        *ret = (UnwindRequest) {
                .pid = fixed.pid, .tid = fixed.tid, .flags = fixed.flags,
                .ips = (const uint64_t *) (body + sizeof(fixed)), .n_ips = fixed.n_ips,
                .regs = (const uint64_t *) (body + sizeof(fixed) + 8 * fixed.n_ips), .regs_mask = fixed.regs_mask,
                .stack = body + sizeof(fixed) + 8 * (fixed.n_ips + n_regs), .stack_len = fixed.stack_len,
        };
        return 0;
}

int unwind_reply_begin(UnwindBuffer *b, uint32_t status, uint32_t flags) {
        UnwindHeader h = { .magic = UNWIND_MAGIC_REPLY };
        UnwindReplyFixed fixed = { .status = status, .flags = flags };
        int r;

        b->len = 0;
        r = buffer_append(b, &h, sizeof(h));
        return r < 0 ? r : buffer_append(b, &fixed, sizeof(fixed));
}

int unwind_reply_add(UnwindBuffer *b, const UnwindFrame *f) {
        UnwindReplyFixed *fixed = (UnwindReplyFixed *) (b->data + sizeof(UnwindHeader));
        size_t path_len = strlen(f->path), function_len = f->function ? strnlen(f->function, UNWIND_MAX_FUNCTION) : 0;
        UnwindWireFrame w = {
                .pc = f->pc, .rel_pc = f->rel_pc, .start = f->start, .end = f->end, .pgoff = f->pgoff,
                .load_bias = f->load_bias, .path_len = path_len, .function_len = function_len,
                .build_id_len = f->build_id_len, .has_function = f->function != NULL,
        };
        size_t start = b->len;
        int r;

        if (fixed->n_frames >= UNWIND_MAX_FRAMES || path_len > UNWIND_MAX_PATH || f->build_id_len > UNWIND_MAX_BUILD_ID)
                return 0;
        if ((r = buffer_append(b, &w, sizeof(w))) < 0 || (r = buffer_append(b, f->path, path_len)) < 0 ||
            (r = buffer_append(b, "", 1)) < 0 ||
            (f->function && ((r = buffer_append(b, f->function, function_len)) < 0 || (r = buffer_append(b, "", 1)) < 0)) ||
            (r = buffer_append(b, f->build_id, f->build_id_len)) < 0) {
                b->len = start;
                return r;
        }
        fixed = (UnwindReplyFixed *) (b->data + sizeof(UnwindHeader));
        fixed->n_frames++;
        return 0;
}

size_t unwind_reply_frames(const UnwindBuffer *b) {
        UnwindReplyFixed fixed;

        memcpy(&fixed, b->data + sizeof(UnwindHeader), sizeof(fixed));
        return fixed.n_frames;
}

void unwind_reply_end(UnwindBuffer *b) {
        UnwindHeader *h = (UnwindHeader *) b->data;

        h->size = b->len - sizeof(*h);
}

/* A string of @len bytes and its NUL at @p, with no NUL inside; advances @p. */
static const char *take_string(const uint8_t **p, const uint8_t *end, size_t len) {
        const char *s = (const char *) *p;

        if ((size_t) (end - *p) < len + 1 || s[len] != '\0' || memchr(s, '\0', len))
                return NULL;
        *p += len + 1;
        return s;
}

static int decode_frame(const uint8_t **p, const uint8_t *end, UnwindFrame *f) {
        UnwindWireFrame w;

        if ((size_t) (end - *p) < sizeof(w))
                return -EBADMSG;
        memcpy(&w, *p, sizeof(w));
        *p += sizeof(w);
        if (w.path_len > UNWIND_MAX_PATH || w.function_len > UNWIND_MAX_FUNCTION || w.build_id_len > UNWIND_MAX_BUILD_ID ||
            w.has_function > 1 || w.start > w.end)
                return -EBADMSG;
        *f = (UnwindFrame) { .pc = w.pc, .rel_pc = w.rel_pc, .start = w.start, .end = w.end, .pgoff = w.pgoff,
                             .load_bias = w.load_bias, .build_id_len = w.build_id_len };
        f->path = take_string(p, end, w.path_len);
        if (!f->path)
                return -EBADMSG;
        if (w.has_function && !(f->function = take_string(p, end, w.function_len)))
                return -EBADMSG;
        if ((size_t) (end - *p) < w.build_id_len)
                return -EBADMSG;
        f->build_id = *p;
        *p += w.build_id_len;
        return 0;
}

int unwind_reply_decode(const uint8_t *body, size_t size, UnwindReplyFixed *ret, UnwindFrame *frames,
                        size_t max, size_t *ret_n) {
        const uint8_t *p = body + sizeof(UnwindReplyFixed), *end = body + size;
        UnwindReplyFixed fixed;

        *ret_n = 0;
        if (size < sizeof(fixed))
                return -EBADMSG;
        memcpy(&fixed, body, sizeof(fixed));
        if (fixed.n_frames > UNWIND_MAX_FRAMES || fixed.status > UNWIND_STATUS_FAILED || fixed.zero != 0)
                return -EBADMSG;
        for (size_t i = 0; i < fixed.n_frames; i++) {
                UnwindFrame f;
                int r = decode_frame(&p, end, &f);

                if (r < 0)
                        return r;
                if (*ret_n < max)
                        frames[(*ret_n)++] = f;
        }
        if (p != end)
                return -EBADMSG;
        *ret = fixed;
        return 0;
}

/* Reads exactly @n bytes into @buf before @deadline_usec. */
static int read_exact(int fd, void *buf, size_t n, uint64_t deadline_usec) {
        for (size_t got = 0; got < n;) {
                struct pollfd pfd = { .fd = fd, .events = POLLIN };
                uint64_t now = now_usec(CLOCK_MONOTONIC);
                int timeout = deadline_usec == UINT64_MAX ? -1
                                : now >= deadline_usec ? 0 : (int) MIN((deadline_usec - now + 999) / 1000, (uint64_t) INT32_MAX);
                int k = poll(&pfd, 1, timeout);
                ssize_t l;

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        return -ETIMEDOUT;
                l = read(fd, (uint8_t *) buf + got, n - got);
                if (l < 0 && (errno == EINTR || errno == EAGAIN))
                        continue;
                if (l < 0)
                        return -errno;
                if (l == 0)
                        return -EPIPE;
                got += l;
        }
        return 0;
}

int unwind_read_message(int fd, uint32_t magic, size_t max_body, uint64_t deadline_usec, UnwindBuffer *b) {
        UnwindHeader h;
        int r;

        r = read_exact(fd, &h, sizeof(h), deadline_usec);
        if (r < 0)
                return r;
        if (h.magic != magic || h.size > max_body)
                return -EBADMSG;
        r = buffer_reserve(b, MAX((size_t) h.size, (size_t) 1));
        if (r < 0)
                return r;
        b->len = 0;
        r = read_exact(fd, b->data, h.size, deadline_usec);
        if (r < 0)
                return r;
        b->len = h.size;
        return 0;
}
