/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A rotating session. The recorder cuts the trace into chunks on its own thread; the
 * session, on the event loop, hands it the chunks' directory or the caller's next
 * output, and tells its owner of each new chunk. */
#include <string.h>
#include <unistd.h>

#include "fd-util.h"
#include "log.h"
#include "session.h"

static int on_rotated(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        Session *s = userdata;
        uint64_t n;

        if (read(fd, &n, sizeof(n)) != sizeof(n))
                return 0;
        s->chunk_index = recorder_chunk_index(s->recorder);
        if (s->callbacks && s->callbacks->on_changed)
                s->callbacks->on_changed(s, SESSION_CHANGED_ROTATED, s->callbacks_userdata);
        return 0;
}

/* The trace directory's chunks: OutputPath is BASE.0 (manager-trace-dir.c named it). */
static int set_chunk_dir(Session *s, int dir_fd) {
        _cleanup_close_ int fd = dir_fd;
        _cleanup_free_ char *base = NULL;
        const char *name = s->output_path ? strrchr(s->output_path, '/') : NULL;
        size_t len;

        if (!name)
                return -EINVAL;
        base = strdup(name + 1);
        if (!base)
                return -ENOMEM;
        len = strlen(base);
        if (len < 2 || strcmp(base + len - 2, ".0") != 0)
                return -EINVAL;
        base[len - 2] = '\0';
        return recorder_set_chunk_dir(s->recorder, TAKE_FD(fd), base, s->owner_uid);
}

int session_rotate_setup(Session *s, int chunk_dir_fd) {
        int r;

        if (chunk_dir_fd >= 0) {
                r = set_chunk_dir(s, chunk_dir_fd);
                if (r < 0)
                        return r;
        }
        if (!recorder_rotates(s->recorder))
                return 0;
        return sd_event_add_io(s->event, &s->rotated_source, recorder_rotated_fd(s->recorder), EPOLLIN, on_rotated, s);
}

void session_rotate_done(Session *s) {
        s->rotated_source = sd_event_source_disable_unref(s->rotated_source);
}

int session_set_next_output(Session *s, int fd) {
        _cleanup_close_ int owned = fd;

        if (s->state != SESSION_RECORDING || !s->recorder)
                return -ESTALE;
        return recorder_set_next_output(s->recorder, TAKE_FD(owned));
}
