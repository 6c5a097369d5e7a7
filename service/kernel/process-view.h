/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

/*
 * How much of the machine's processes the owner of a session may see, as its own /proc
 * shows them. Root and the holders of org.tracebus.manage see every process whole. Any
 * other user sees its own processes whole (real, effective and saved uid its own), and
 * the other users' by pid, parent and name (comm) only: not their command lines, uids or
 * start times; and not at all when /proc is mounted with hidepid= (noaccess, invisible
 * or ptraceable), unless the user is in the mount's gid= group (which ptraceable ignores).
 */

typedef enum ProcessSight {
        PROCESS_SIGHT_NONE,            /* not there for the owner */
        PROCESS_SIGHT_NAME,            /* pid, parent, comm, its threads and their names */
        PROCESS_SIGHT_WHOLE,           /* also its command line, uid and start time */
} ProcessSight;

typedef struct ProcessView {
        uid_t owner_uid;
        bool all;                      /* root or org.tracebus.manage: everything */
        bool hide_known;               /* others_hidden was worked out */
        bool others_hidden;            /* /proc hides the other users' processes from the owner */
} ProcessView;

/* The view of @owner_uid; @all for root and the holders of org.tracebus.manage. */
ProcessView process_view_make(uid_t owner_uid, bool all);

/* How much the owner of @v may see of a process owned by @owner (process_status_owner();
 * -1: not one user's, or unknown). The first call for a view that is not @all reads /proc's
 * mount options and may ask NSS for the owner's groups: never on the event loop. */
ProcessSight process_view_sight(ProcessView *v, long owner);

/* The user owning the process of a /proc/PID/status text: its real uid when its effective
 * and saved uids are the same, else -1 (a setuid program, which /proc keeps from its real
 * user as ptrace does). */
long process_status_owner(const char *status);

/* What /proc's mount says about other users' processes. */
typedef struct ProcMountHide {
        unsigned hidepid;              /* 0 off, 1 noaccess, 2 invisible, 4 ptraceable */
        bool has_gid;
        gid_t gid;                     /* gid=: its members see every process, unless ptraceable */
} ProcMountHide;

/* hidepid= and gid= of the proc mount at /proc in the text of /proc/self/mountinfo (the
 * last such line: the one on top). An unknown hidepid value counts as invisible. */
void proc_mount_hide_parse(const char *mountinfo, ProcMountHide *ret);
