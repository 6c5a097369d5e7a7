/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fd-util.h"
#include "kprobes.h"
#include "log.h"
#include "strv.h"
#include "kernel/tracefs-instance.h"

/* kprobe_events of a kernel with a few hundred probes. */
#define KPROBE_EVENTS_MAX_BYTES (1024u * 1024u)

static char *kprobe_events_path(void) {
        const char *root = trace_instance_tracefs_root();
        char *path;

        if (!root || asprintf(&path, "%s/kprobe_events", root) < 0)
                return NULL;
        return path;
}

/* One definition or removal ("-:group/event"), appended: writing without O_APPEND
 * would clear every probe of the machine first. */
static int kprobe_events_append(const char *line) {
        _cleanup_free_ char *path = kprobe_events_path();
        _cleanup_close_ int fd = -EBADF;

        if (!path)
                return -ENOMEM;
        fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        return loop_write(fd, line, strlen(line));
}

/* The group letter of the probe @entry ("p:sym" or "r:sym") of @c, which tells the trace
 * encoder (lib/ftrace/ftrace-event-typed.c) its KprobeEvent type: a kprobe or a kretprobe alone is
 * an instant ('p', 'r'); with both on the function (KPROBE_TYPE_BOTH), the kprobe begins a
 * slice ('b') and the kretprobe ends it ('e'). */
static char group_kind(const SessionConfig *c, const char *entry) {
        bool ret = entry[0] == 'r';
        _cleanup_free_ char *pair = NULL;

        if (asprintf(&pair, "%c:%s", ret ? 'p' : 'r', entry + 2) < 0)
                return ret ? 'r' : 'p';
        if (strv_contains(c->kprobes, pair))
                return ret ? 'e' : 'b';
        return ret ? 'r' : 'p';
}

static bool is_group_kind(char kind) {
        return kind == 'p' || kind == 'r' || kind == 'b' || kind == 'e';
}

int kprobes_create(SessionConfig *c, uint64_t session_id) {
        STRV_FOREACH(k, c->kprobes) {
                _cleanup_free_ char *line = NULL, *event = NULL;
                bool ret = (*k)[0] == 'r';
                const char *symbol = *k + 2;
                int r;

                if (asprintf(&event, "tbk%c_%d_%" PRIu64 "/%s", group_kind(c, *k), (int) getpid(), session_id, symbol) < 0 ||
                    asprintf(&line, "%c:%s %s\n", ret ? 'r' : 'p', event, symbol) < 0)
                        return -ENOMEM;
                r = kprobe_events_append(line);
                if (r < 0) {
                        r = session_config_warn(c, "kprobe_events: the kernel refused a %s on '%s' (%s): skipped",
                                                ret ? "kretprobe" : "kprobe", symbol, strerror(-r));
                        if (r < 0)
                                return r;
                        continue;
                }
                r = strv_extend_unique(&c->events, event);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The "group/event" of a kprobe_events line ("p:grp/ev sym", "r16:grp/ev sym"), into @buf. */
static bool line_event(const char *line, char *buf, size_t size) {
        const char *colon = strchr(line, ':'), *end;

        if (!colon)
                return false;
        end = colon + 1 + strcspn(colon + 1, " \n");
        if ((size_t) (end - colon - 1) >= size)
                return false;
        memcpy(buf, colon + 1, (size_t) (end - colon - 1));
        buf[end - colon - 1] = '\0';
        return true;
}

/* Removes the probes whose group @match accepts. Returns how many. */
static int remove_matching(bool (*match)(const char *group, const void *userdata), const void *userdata) {
        _cleanup_free_ char *path = kprobe_events_path(), *text = NULL;
        size_t len;
        int n = 0;

        if (!path || read_full_file(path, KPROBE_EVENTS_MAX_BYTES, &text, &len) < 0)
                return 0;
        for (char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
                char event[256], removal[260];

                if (!line_event(l, event, sizeof(event)) || !match(event, userdata))
                        continue;
                snprintf(removal, sizeof(removal), "-:%s\n", event);
                if (kprobe_events_append(removal) >= 0)
                        n++;
                else
                        log_warning("Failed to remove kprobe %s.", event);
        }
        return n;
}

static bool is_session_group(const char *event, const void *userdata) {
        char rest[64];

        snprintf(rest, sizeof(rest), "_%d_%" PRIu64 "/", (int) getpid(), *(const uint64_t *) userdata);
        return strncmp(event, "tbk", 3) == 0 && is_group_kind(event[3]) && strncmp(event + 4, rest, strlen(rest)) == 0;
}

void kprobes_remove_session(uint64_t session_id) {
        (void) remove_matching(is_session_group, &session_id);
}

/* A group of ours whose service is gone: not this one, and no such process. */
static bool is_stale_group(const char *event, const void *userdata) {
        int pid;

        if (strncmp(event, "tbk", 3) != 0 || !is_group_kind(event[3]) || event[4] != '_' ||
            sscanf(event + 5, "%d_", &pid) != 1 || pid <= 0)
                return false;
        return pid != getpid() && kill(pid, 0) < 0 && errno == ESRCH;
}

int kprobes_remove_stale(void) {
        return remove_matching(is_stale_group, NULL);
}
