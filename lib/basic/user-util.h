/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

/*
 * Group membership of a user, as the user database (NSS) has it: its primary group and
 * the groups that list it. A lookup may block (LDAP, systemd-userdb), so the service asks
 * these on a thread of its own, never on the event loop. More than USER_MAX_GROUPS groups:
 * the first ones are looked at.
 */
#define USER_MAX_GROUPS 256

/* Whether user @uid is a member of group @gid; false when the user is unknown. */
bool user_in_group(uid_t uid, gid_t gid);

/* Whether user @uid is a member of the group named @name; false when there is no such
 * group or user. */
bool user_in_group_named(uid_t uid, const char *name);
