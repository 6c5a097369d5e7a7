/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Manager.ActivateTriggers' rule (helper "triggers", issue 23): which sessions a caller's
 * triggers reach. The bus layer (manager-triggers-dbus.c) has checked the names and
 * asked polkit. */
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
