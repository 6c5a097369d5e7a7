/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "macro.h"
#include "producer-ipc.h"

/* The buffer starts small and grows to the frame being read, never past IPC_FRAME_MAX. */
#define IPC_READER_INITIAL_SIZE (16u * 1024u)

struct IpcReader {
        uint8_t *buffer;
        size_t allocated;
        size_t start;           /* first byte not yet returned as a frame */
        size_t end;             /* end of the bytes received */
        int pending_fd;         /* received, for the next frame returned */
};

int ipc_reader_new(IpcReader **ret) {
        _cleanup_free_ IpcReader *reader = NULL;

        assert(ret);

        reader = calloc(1, sizeof(*reader));
        if (!reader)
                return -ENOMEM;
        reader->buffer = malloc(IPC_READER_INITIAL_SIZE);
        if (!reader->buffer)
                return -ENOMEM;
        reader->allocated = IPC_READER_INITIAL_SIZE;
        reader->pending_fd = -1;
        *ret = TAKE_PTR(reader);
        return 0;
}

IpcReader *ipc_reader_free(IpcReader *reader) {
        if (!reader)
                return NULL;
        safe_close(reader->pending_fd);
        free(reader->buffer);
        return mfree(reader);
}

size_t ipc_reader_buffered(const IpcReader *reader) {
        return reader->end - reader->start;
}

static uint32_t read_le32(const uint8_t *p) {
        return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 | (uint32_t) p[3] << 24;
}

/* The whole size of the frame at the start of the buffer, prefix included: 0 while its
 * prefix is incomplete, -EMSGSIZE when it announces more than the cap. Checked before the
 * frame's payload is waited for or room is made for it. */
static int64_t pending_frame_size(const IpcReader *reader) {
        uint32_t length;

        if (ipc_reader_buffered(reader) < IPC_FRAME_HEADER_SIZE)
                return 0;
        length = read_le32(reader->buffer + reader->start);
        if (length > IPC_FRAME_MAX - IPC_FRAME_HEADER_SIZE)
                return -EMSGSIZE;
        return (int64_t) length + IPC_FRAME_HEADER_SIZE;
}

/* Moves the unread bytes to the front and grows the buffer to hold the pending frame
 * whole; returns the room left at the end. */
static int make_room(IpcReader *reader) {
        size_t buffered = ipc_reader_buffered(reader), want = IPC_READER_INITIAL_SIZE;
        int64_t frame = pending_frame_size(reader);

        if (frame < 0)
                return (int) frame;
        if (reader->start > 0) {
                memmove(reader->buffer, reader->buffer + reader->start, buffered);
                reader->start = 0;
                reader->end = buffered;
        }
        want = MAX(want, (size_t) frame);
        if (want > reader->allocated) {
                uint8_t *p = realloc(reader->buffer, want);
                if (!p)
                        return -ENOMEM;
                reader->buffer = p;
                reader->allocated = want;
        }
        return (int) (reader->allocated - reader->end);
}

int ipc_reader_feed(IpcReader *reader, const void *data, size_t size) {
        const uint8_t *p = data;

        assert(reader);

        while (size > 0) {
                int room = make_room(reader);
                size_t n;

                if (room < 0)
                        return room;
                if (room == 0)
                        return -ENOBUFS;
                n = MIN(size, (size_t) room);
                memcpy(reader->buffer + reader->end, p, n);
                reader->end += n;
                p += n;
                size -= n;
        }
        return pending_frame_size(reader) < 0 ? -EMSGSIZE : 0;
}

/* Takes the descriptors of one control message. More than a frame may carry, or a control
 * message the kernel had to cut, closes every one and fails the connection. */
static int take_fds(IpcReader *reader, struct msghdr *msg) {
        int fds[IPC_FDS_PER_FRAME_MAX + 1], n = 0, r = 0;

        for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c)) {
                size_t count;

                if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                        continue;
                count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (size_t i = 0; i < count; i++) {
                        int fd;

                        memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                        if (n < (int) ELEMENTSOF(fds))
                                fds[n++] = fd;
                        else
                                safe_close(fd);
                }
        }
        if (n > (int) IPC_FDS_PER_FRAME_MAX || (msg->msg_flags & MSG_CTRUNC) ||
            (n > 0 && reader->pending_fd >= 0))
                r = -ETOOMANYREFS;
        for (int i = 0; i < n; i++) {
                if (r < 0 || i > 0)
                        safe_close(fds[i]);
                else
                        reader->pending_fd = fds[i];
        }
        return r;
}

int ipc_reader_receive(IpcReader *reader, int fd) {
        union {
                struct cmsghdr header;
                uint8_t space[CMSG_SPACE(sizeof(int) * IPC_FDS_PER_FRAME_MAX)];
        } control;
        struct iovec iov;
        struct msghdr msg = {
                .msg_iov = &iov,
                .msg_iovlen = 1,
                .msg_control = &control,
                .msg_controllen = sizeof(control),
        };
        ssize_t n;
        int room, r;

        assert(reader);

        room = make_room(reader);
        if (room < 0)
                return room;
        if (room == 0)
                return -ENOBUFS;
        iov = (struct iovec) { reader->buffer + reader->end, (size_t) room };
        n = recvmsg(fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n < 0)
                return errno == EWOULDBLOCK ? -EAGAIN : -errno;
        r = take_fds(reader, &msg);
        if (r < 0)
                return r;
        if (n == 0)
                return -ECONNRESET;
        reader->end += (size_t) n;
        if (pending_frame_size(reader) < 0)
                return -EMSGSIZE;
        return (int) n;
}

int ipc_reader_next(IpcReader *reader, Tracebus__IPCFrame **ret_frame, int *ret_fd) {
        assert(reader);
        assert(ret_frame);
        assert(ret_fd);

        for (;;) {
                int64_t size = pending_frame_size(reader);
                ProtobufCMessage *frame = NULL;
                const uint8_t *payload = reader->buffer + reader->start + IPC_FRAME_HEADER_SIZE;
                int r;

                if (size <= 0)
                        return (int) size;
                if ((size_t) size > ipc_reader_buffered(reader))
                        return 0;
                reader->start += (size_t) size;
                if (reader->start == reader->end)
                        reader->start = reader->end = 0;
                if (size == IPC_FRAME_HEADER_SIZE)
                        continue;
                /* The payload stays in place until the next receive, so unpacking after
                 * moving start is safe. */
                r = ipc_message_unpack(&tracebus__ipcframe__descriptor, payload,
                                       (size_t) size - IPC_FRAME_HEADER_SIZE, &frame);
                if (r < 0) {
                        reader->pending_fd = safe_close(reader->pending_fd);
                        return r == -ENOMEM ? -ENOMEM : -EBADMSG;
                }
                *ret_frame = (Tracebus__IPCFrame *) frame;
                *ret_fd = TAKE_FD(reader->pending_fd);
                return 1;
        }
}
