/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * The wire format between tracebusd's perf sampler and tracebus-unwind, the helper
 * that names and unwinds user frames as the session owner. One stream socket, the
 * helper's stdin and stdout. Messages alternate: the sampler sends one request and
 * reads its reply before it sends the next. All integers are in host byte order (both
 * ends run on one machine); every message starts with an 8-byte header:
 *
 *   u32 magic    UNWIND_MAGIC_REQUEST or UNWIND_MAGIC_REPLY
 *   u32 size     bytes after the header, at most UNWIND_MAX_REQUEST / UNWIND_MAX_REPLY
 *
 * A request (UnwindRequestFixed after the header, then its arrays):
 *   i32 pid, tid; u32 flags (UNWIND_FLAG_*); u32 n_ips (<= UNWIND_MAX_IPS);
 *   u64 regs_mask (PERF_REG_X86_* bits, at most UNWIND_MAX_REGS set); u32 stack_len
 *   (<= UNWIND_MAX_STACK); u32 zero;
 *   u64 ips[n_ips]        the kernel's user callchain, leaf first, no PERF_CONTEXT_*
 *   u64 regs[popcount]    the sample's user registers, in bit order (none: mask 0)
 *   u8 stack[stack_len]   the copy of the user stack from SP
 *
 * A reply (UnwindReplyFixed after the header, then n_frames frames):
 *   u32 status (UNWIND_STATUS_*); u32 n_frames (<= UNWIND_MAX_FRAMES); u32 flags
 *   (UNWIND_REPLY_*: what the helper left out since its last reply); u32 zero;
 *   each frame: UnwindWireFrame, then path_len bytes and a NUL, function_len bytes
 *   and a NUL (when has_function), build_id_len bytes. A path or function holds no
 *   NUL of its own; path_len <= UNWIND_MAX_PATH, function_len <= UNWIND_MAX_FUNCTION,
 *   build_id_len <= UNWIND_MAX_BUILD_ID. Only frames in a mapping are sent.
 *
 * Each side checks every cap while reading, before it allocates; a message that breaks
 * one ends the conversation (the sampler then stops the helper).
 */

#define UNWIND_MAGIC_REQUEST 0x51554254u        /* "TBUQ" */
#define UNWIND_MAGIC_REPLY   0x41554254u        /* "TBUA" */

#define UNWIND_MAX_IPS 256u
#define UNWIND_MAX_REGS 16u
#define UNWIND_MAX_STACK 65528u                 /* perf's largest sample_stack_user */
#define UNWIND_MAX_FRAMES 256u
#define UNWIND_MAX_PATH 4096u
#define UNWIND_MAX_FUNCTION 1024u
#define UNWIND_MAX_BUILD_ID 64u

/* The request's flags: the process exec'd since its last request (read its maps again). */
#define UNWIND_FLAG_EXEC 1u

enum {
        UNWIND_STATUS_OK = 0,           /* frames follow (maybe none) */
        UNWIND_STATUS_DENIED = 1,       /* the kernel refused the owner the process's maps */
        UNWIND_STATUS_GONE = 2,         /* the process exited */
        UNWIND_STATUS_FAILED = 3,       /* anything else: no frames */
};

typedef struct UnwindHeader {
        uint32_t magic;
        uint32_t size;
} UnwindHeader;

typedef struct UnwindRequestFixed {
        int32_t pid, tid;
        uint32_t flags;
        uint32_t n_ips;
        uint64_t regs_mask;
        uint32_t stack_len;
        uint32_t zero;
} UnwindRequestFixed;

/* What the helper left out since its last reply, for the session's warnings. */
#define UNWIND_REPLY_MEMORY_CAP 1u      /* max_daemon_memory_kb kept a file out */
#define UNWIND_REPLY_FILES_DENIED 2u    /* the kernel refused the owner a mapped file */

typedef struct UnwindReplyFixed {
        uint32_t status;
        uint32_t n_frames;
        uint32_t flags;
        uint32_t zero;
} UnwindReplyFixed;

typedef struct UnwindWireFrame {
        uint64_t pc, rel_pc;
        uint64_t start, end, pgoff, load_bias;  /* the mapping */
        uint16_t path_len, function_len;
        uint8_t build_id_len;
        uint8_t has_function;
        uint8_t zero[2];
} UnwindWireFrame;

#define UNWIND_MAX_REQUEST                                                                      \
        (sizeof(UnwindRequestFixed) + 8u * (UNWIND_MAX_IPS + UNWIND_MAX_REGS) + UNWIND_MAX_STACK)
#define UNWIND_FRAME_MAX_BYTES                                                                  \
        (sizeof(UnwindWireFrame) + UNWIND_MAX_PATH + 1u + UNWIND_MAX_FUNCTION + 1u + UNWIND_MAX_BUILD_ID)
#define UNWIND_MAX_REPLY (sizeof(UnwindReplyFixed) + UNWIND_MAX_FRAMES * UNWIND_FRAME_MAX_BYTES)

/* A request, decoded: the arrays point into the message. */
typedef struct UnwindRequest {
        pid_t pid, tid;
        uint32_t flags;
        const uint64_t *ips;
        size_t n_ips;
        const uint64_t *regs;
        uint64_t regs_mask;
        const uint8_t *stack;
        size_t stack_len;
} UnwindRequest;

/* A frame, decoded: the strings point into the message and end in a NUL. */
typedef struct UnwindFrame {
        uint64_t pc, rel_pc;
        uint64_t start, end, pgoff, load_bias;
        const char *path;
        const char *function;           /* NULL: unnamed */
        const uint8_t *build_id;
        size_t build_id_len;
} UnwindFrame;

/* A message being built or read: the header and body, bytes owned. */
typedef struct UnwindBuffer {
        uint8_t *data;
        size_t len, allocated;
} UnwindBuffer;

void unwind_buffer_done(UnwindBuffer *b);

/* The request @r as one message in @b: -E2BIG past a cap. */
int unwind_request_encode(const UnwindRequest *r, UnwindBuffer *b);
/* A request's body (after the header): -EBADMSG when it breaks the format or a cap. */
int unwind_request_decode(const uint8_t *body, size_t size, UnwindRequest *ret);

/* A reply: begun with a status, frames added (a frame over a cap is left out, a name
 * too long is cut), then ended (the header's size filled in). */
int unwind_reply_begin(UnwindBuffer *b, uint32_t status, uint32_t flags);
int unwind_reply_add(UnwindBuffer *b, const UnwindFrame *f);
void unwind_reply_end(UnwindBuffer *b);
/* A reply's body: its status, flags and at most @max frames; -EBADMSG on a breach. */
int unwind_reply_decode(const uint8_t *body, size_t size, UnwindReplyFixed *ret, UnwindFrame *frames,
                        size_t max, size_t *ret_n);
/* The number of frames in the reply being built in @b. */
size_t unwind_reply_frames(const UnwindBuffer *b);

/* Reads one message of @magic from @fd into @b (b->len: the body's size; the body at
 * b->data), at most @max_body bytes, waiting until @deadline_usec (CLOCK_MONOTONIC;
 * UINT64_MAX: no deadline). -ETIMEDOUT, -EPIPE at EOF, -EBADMSG for a wrong magic or size. */
int unwind_read_message(int fd, uint32_t magic, size_t max_body, uint64_t deadline_usec, UnwindBuffer *b);
