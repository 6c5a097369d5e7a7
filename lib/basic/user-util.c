/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <grp.h>
#include <pwd.h>
#include <stddef.h>

#include "user-util.h"

bool user_in_group(uid_t uid, gid_t gid) {
        struct passwd pw, *p = NULL;
        gid_t gids[USER_MAX_GROUPS];
        int n = USER_MAX_GROUPS;
        char buf[4096];

        if (getpwuid_r(uid, &pw, buf, sizeof(buf), &p) != 0 || !p)
                return false;
        if (p->pw_gid == gid)
                return true;
        if (getgrouplist(p->pw_name, p->pw_gid, gids, &n) < 0)
                n = USER_MAX_GROUPS;   /* more groups than that: the first ones are enough */
        for (int i = 0; i < n; i++)
                if (gids[i] == gid)
                        return true;
        return false;
}

bool user_in_group_named(uid_t uid, const char *name) {
        struct group gr, *g = NULL;
        char buf[4096];

        if (getgrnam_r(name, &gr, buf, sizeof(buf), &g) != 0 || !g)
                return false;
        return user_in_group(uid, g->gr_gid);
}
