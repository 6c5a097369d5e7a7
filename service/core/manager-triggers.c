/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The rule behind Manager.ActivateTriggers: which sessions a caller's triggers reach.
 * The bus layer (service/bus/manager-triggers-dbus.c) has already checked the names and
 * asked polkit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "manager.h"
#include "strv.h"
#include "time-util.h"

unsigned manager_activate_triggers(Manager *m, char **names, uid_t uid, bool all, const char *producer) {
        uint64_t now = now_ns(CLOCK_BOOTTIME);
        unsigned taken = 0;

        STRV_FOREACH(name, names)
                for (Session *s = m->sessions; s; s = s->next) {
                        /* Another user's session is not reached, as if it had no such trigger. */
                        if (!all && s->owner_uid != uid)
                                continue;
                        if (session_activate_trigger(s, *name, producer, uid, now) > 0)
                                taken++;
                }
        log_info("UID %u (%s) sent %zu trigger(s): %u session(s) took them.", (unsigned) uid, producer,
                 strv_length(names), taken);
        return taken;
}

static void on_snapshot_written(Manager *m, int r, const SessionCloneResult *result, const char *output_path,
                                void *userdata) {
        uint64_t id = (uint64_t) (uintptr_t) userdata;
        Session *s = manager_find_live_session(m, id);

        if (r >= 0) {
                log_info("Session %" PRIu64 ": trigger snapshot written into %s (%" PRIu64 " bytes).", id,
                         strempty(output_path), result->bytes);
                if (s && output_path)
                        session_note_trigger_snapshot(s, output_path);
                return;
        }
        log_warning_errno(r, "Session %" PRIu64 ": trigger snapshot failed: %m", id);
        if (s)
                (void) session_warn(s, "CLONE_SNAPSHOT: a trigger's snapshot was not written (%s)", strerror(-r));
}

/* CLONE_SNAPSHOT: FILE.N beside the session's trace, as Perfetto's CLI names them
 * (perfetto_cmd: the --out path + "." + a count from 0). Only sessions writing into the
 * trace directory get here: the others were refused at Start. */
void manager_snapshot_on_trigger(Session *s, unsigned n, void *userdata) {
        Manager *m = ASSERT_PTR(userdata);
        _cleanup_free_ char *name = NULL;
        const char *base;

        if (!s->output_path)
                return;
        base = strrchr(s->output_path, '/');
        if (asprintf(&name, "%s.%u", base ? base + 1 : s->output_path, n) < 0)
                return (void) session_warn(s, "CLONE_SNAPSHOT: out of memory, snapshot %u skipped", n);
        manager_clone_session_named(m, s, s->owner_uid, -EBADF, name, on_snapshot_written,
                                    (void *) (uintptr_t) s->id);
}
