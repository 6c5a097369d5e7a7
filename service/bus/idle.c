/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <stdio.h>
#include <systemd/sd-daemon.h>

#include "idle.h"
#include "log.h"
#include "macro.h"

static int on_name_released(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        bool *released = ASSERT_PTR(userdata);

        *released = true;
        return 0;
}

/* The match goes out before ReleaseName, so the bus cannot send the signal before it. */
static int release_name(sd_bus *bus, const char *name, bool *released, sd_bus_slot **ret_slot) {
        const char *unique;
        char match[512];
        int r;

        r = sd_bus_get_unique_name(bus, &unique);
        if (r < 0)
                return log_error_errno(r, "Failed to release %s: cannot get our unique name: %m", name);
        (void) snprintf(match, sizeof(match),
                        "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',"
                        "interface='org.freedesktop.DBus',member='NameOwnerChanged',"
                        "arg0='%s',arg1='%s',arg2=''", name, unique);
        r = sd_bus_add_match_async(bus, ret_slot, match, on_name_released, NULL, released);
        if (r < 0)
                return log_error_errno(r, "Failed to release %s: cannot watch NameOwnerChanged: %m", name);
        r = sd_bus_release_name_async(bus, NULL, name, NULL, NULL);
        if (r < 0)
                return log_error_errno(r, "Failed to release %s: cannot send ReleaseName: %m", name);
        return 0;
}

int idle_loop_run(sd_event *e, sd_bus *bus, const char *name, uint64_t timeout_usec,
                  bool (*check_idle)(void *userdata), void *userdata) {
        _cleanup_(sd_bus_slot_unrefp) sd_bus_slot *match = NULL;
        bool exiting = false, released = false;
        int r, code = 0;

        for (;;) {
                bool idle;

                r = sd_event_get_state(e);
                if (r < 0)
                        return r;
                if (r == SD_EVENT_FINISHED)
                        break;
                idle = timeout_usec > 0 && check_idle(userdata);
                if (released && idle) {
                        log_info("Exiting: idle, and %s is released.", name);
                        return 0;
                }

                r = sd_event_run(e, exiting || !idle ? UINT64_MAX : timeout_usec);
                if (r < 0)
                        return r;
                /* r == 0: the timeout passed with nothing dispatched, not even a bus message. */
                if (r == 0 && idle && !exiting) {
                        log_info("Idle for %" PRIu64 " ms, releasing %s.", timeout_usec / 1000, name);
                        (void) sd_notify(false, "STOPPING=1\nSTATUS=Exiting for being idle.");
                        r = release_name(bus, name, &released, &match);
                        if (r < 0)
                                return r;
                        exiting = true;
                }
        }
        r = sd_event_get_exit_code(e, &code);
        return r < 0 ? r : code;
}
