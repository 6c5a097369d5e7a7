/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The apps built with the Perfetto SDK that are connected to the service's producer
 * socket, as Manager.ListProducers returns them (the caller's own, every user's for an
 * administrator), in words for the "Applications (Perfetto SDK)" category's row.
 * Plain GLib, no GTK, so that a unit test can check it against the reply's shape.
 */

#include <glib.h>

/* The reply's type: (id, name, uid, pid, [(data source, [track_event category])]). */
#define TB_PRODUCERS_TYPE "a(tsuua(sas))"

/* One line per app: "NAME (pid PID): SOURCE (CATEGORY, ...), SOURCE"; NAME is the last
 * part of what the app calls itself. "No app connected now." when @producers is empty,
 * NULL when it is not of TB_PRODUCERS_TYPE. */
char *tb_producers_describe(GVariant *producers);
