/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The producer socket: the listening socket, the connections it accepts, and the counts
 * the per-UID limits are checked against. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "fd-util.h"
#include "log.h"
#include "producers.h"

int producers_new(sd_event *event, const ProducerLimits *limits, Producers **ret) {
        Producers *p = calloc(1, sizeof(*p));

        if (!p)
                return -ENOMEM;
        p->event = sd_event_ref(event);
        p->listen_fd = -EBADF;
        p->limits = *limits;
        *ret = p;
        return 0;
}

Producers *producers_free(Producers *p) {
        if (!p)
                return NULL;
        while (p->list)
                producer_close(p->list, NULL, 0);
        sd_event_source_disable_unref(p->listen_io);
        safe_close(p->listen_fd);
        sd_event_unref(p->event);
        free(p);
        return NULL;
}

unsigned producers_count_uid(const Producers *p, uid_t uid) {
        unsigned n = 0;

        for (const Producer *i = p->list; i; i = i->next)
                n += i->uid == uid;
        return n;
}

unsigned producers_count_data_sources_uid(const Producers *p, uid_t uid) {
        unsigned n = 0;

        for (const Producer *i = p->list; i; i = i->next)
                if (i->uid == uid)
                        n += i->n_sources;
        return n;
}

/* Over a limit the connection is closed at once: the SDK sees a disconnect and retries
 * later, as it does when the service is away. Logged at debug level only, since one
 * user's flood must not fill the journal. */
static int admit(Producers *p, uid_t uid) {
        if (p->n_producers >= p->limits.max_producers)
                return -EMFILE;
        if (producers_count_uid(p, uid) >= p->limits.max_producers_per_uid)
                return -EUSERS;
        return 0;
}

static void accept_one(Producers *p, int fd) {
        struct ucred cred = {};
        socklen_t len = sizeof(cred);
        Producer *producer;
        int r;

        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || len != sizeof(cred)) {
                log_debug_errno(-errno, "Producer connection without credentials, closed: %m");
                safe_close(fd);
                return;
        }
        r = admit(p, cred.uid);
        if (r < 0) {
                log_debug_errno(r, "Producer of UID %u (PID %d) refused: %s.", (unsigned) cred.uid, (int) cred.pid,
                                r == -EUSERS ? "too many producers of this user" : "too many producers");
                safe_close(fd);
                return;
        }
        r = producer_new(p, fd, cred.uid, cred.pid, &producer);
        if (r < 0) {
                log_warning_errno(r, "Failed to set up the connection of a producer of UID %u: %m", (unsigned) cred.uid);
                safe_close(fd);
                return;
        }
        log_debug("Producer %" PRIu64 " connected (UID %u, PID %d).", producer->id, (unsigned) cred.uid, (int) cred.pid);
}

/* A bounded number of connections per wakeup, so that a flood of connects cannot hold
 * the event loop: the rest wait for the next turn. */
#define ACCEPTS_PER_WAKEUP 64

static int on_listen(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Producers *p = ASSERT_PTR(userdata);

        for (unsigned i = 0; i < ACCEPTS_PER_WAKEUP; i++) {
                int conn = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

                if (conn < 0) {
                        if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
                                log_debug_errno(-errno, "Failed to accept a producer: %m");
                        break;
                }
                accept_one(p, conn);
        }
        return 0;
}

int producers_listen(Producers *p, int fd) {
        _cleanup_close_ int owned = fd;
        int r, flags;

        flags = fcntl(owned, F_GETFL);
        if (flags < 0 || fcntl(owned, F_SETFL, flags | O_NONBLOCK) < 0)
                return -errno;
        r = sd_event_add_io(p->event, &p->listen_io, owned, EPOLLIN, on_listen, p);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(p->listen_io, "producer-socket");
        p->listen_fd = TAKE_FD(owned);
        return 0;
}

int producers_bind_path(const char *path, int *ret_fd) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_close_ int fd = -EBADF;

        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        /* A socket file left by an earlier run would make bind() fail. */
        (void) unlink(path);
        if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                return -errno;
        /* Listening right after binding: an app woken by the file's creation connects at once. */
        if (listen(fd, SOMAXCONN) < 0)
                return -errno;
        /* Any local process may connect, as to traced's socket. */
        if (chmod(path, 0666) < 0)
                return -errno;
        *ret_fd = TAKE_FD(fd);
        return 0;
}
