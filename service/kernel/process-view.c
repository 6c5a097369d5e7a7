/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fd-util.h"
#include "log.h"
#include "macro.h"
#include "process-view.h"
#include "user-util.h"

#define MOUNTINFO_MAX (4u * 1024 * 1024)

ProcessView process_view_make(uid_t owner_uid, bool all) {
        return (ProcessView) { .owner_uid = owner_uid, .all = all || owner_uid == 0 };
}

long process_status_owner(const char *status) {
        const char *line = strstr(status, "\nUid:");
        long real, effective, saved;

        if (!line || sscanf(line + 5, "%ld %ld %ld", &real, &effective, &saved) != 3)
                return -1;
        return real == effective && real == saved ? real : -1;
}

static unsigned parse_hidepid(const char *v, size_t n) {
        static const struct { const char *name; unsigned value; } values[] = {
                { "0", 0 }, { "off", 0 }, { "1", 1 }, { "noaccess", 1 },
                { "2", 2 }, { "invisible", 2 }, { "4", 4 }, { "ptraceable", 4 },
        };

        for (size_t i = 0; i < ELEMENTSOF(values); i++)
                if (strlen(values[i].name) == n && strncmp(v, values[i].name, n) == 0)
                        return values[i].value;
        return 2;
}

/* The super options of a proc mount ("rw,hidepid=invisible,gid=27"), up to @end. */
static void parse_super_options(const char *o, const char *end, ProcMountHide *ret) {
        *ret = (ProcMountHide) {};
        for (size_t n; o < end; o += n + 1) {
                n = strcspn(o, ",\n");
                if (n > 8 && strncmp(o, "hidepid=", 8) == 0)
                        ret->hidepid = parse_hidepid(o + 8, n - 8);
                else if (n > 4 && strncmp(o, "gid=", 4) == 0) {
                        ret->has_gid = true;
                        ret->gid = (gid_t) strtoul(o + 4, NULL, 10);
                }
        }
}

/* The start of field @n (from 0, fields apart by single spaces) of the line [@line, @end),
 * or @end. */
static const char *field_start(const char *line, const char *end, unsigned n) {
        const char *p = line;

        for (unsigned i = 0; i < n && p < end; i++) {
                const char *space = memchr(p, ' ', (size_t) (end - p));

                p = space ? space + 1 : end;
        }
        return p;
}

void proc_mount_hide_parse(const char *mountinfo, ProcMountHide *ret) {
        *ret = (ProcMountHide) {};
        for (const char *line = mountinfo; *line;) {
                /* "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER" */
                const char *end = strchrnul(line, '\n'), *sep = strstr(line, " - ");

                if (sep && sep < end && strncmp(field_start(line, end, 4), "/proc ", 6) == 0 &&
                    strncmp(sep, " - proc ", 8) == 0)
                        parse_super_options(field_start(sep + 3, end, 2), end, ret);
                line = *end ? end + 1 : end;
        }
}

/* Whether /proc hides the other users' processes from @v's owner. Unreadable mount
 * information counts as hiding them. */
static bool others_hidden(const ProcessView *v) {
        _cleanup_free_ char *mountinfo = NULL;
        ProcMountHide hide;
        int r;

        r = read_full_file("/proc/self/mountinfo", MOUNTINFO_MAX, &mountinfo, NULL);
        if (r < 0) {
                log_warning_errno(r, "Cannot read /proc/self/mountinfo, other users' processes are left out: %m");
                return true;
        }
        proc_mount_hide_parse(mountinfo, &hide);
        if (hide.hidepid == 0)
                return false;
        if (hide.hidepid != 4 && hide.has_gid && user_in_group(v->owner_uid, hide.gid))
                return false;
        return true;
}

ProcessSight process_view_sight(ProcessView *v, long owner) {
        if (v->all || (owner >= 0 && (uid_t) owner == v->owner_uid))
                return PROCESS_SIGHT_WHOLE;
        if (!v->hide_known) {
                v->others_hidden = others_hidden(v);
                v->hide_known = true;
        }
        return v->others_hidden ? PROCESS_SIGHT_NONE : PROCESS_SIGHT_NAME;
}
