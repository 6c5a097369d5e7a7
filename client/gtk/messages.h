/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Words for the window: what a service error means to the person at the
 * desktop and what they can do about it, and how numbers are shown.
 * Plain GLib, unit-tested.
 */

#include <gio/gio.h>

typedef struct {
        char *title;  /* one sentence: what happened */
        char *detail; /* what to do next, or the service's own explanation */
} TbMessage;

void tb_message_clear(TbMessage *m);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(TbMessage, tb_message_clear)

/* What failed, in words ("Could not start recording"), is what_failed; the
 * message says why. Never a raw D-Bus error name alone. */
void tb_message_from_error(const GError *error, const char *what_failed, TbMessage *ret);

/* The D-Bus error name of a remote error, or NULL. */
char *tb_error_get_dbus_name(const GError *error);

/* "stopped" -> "Stopped", "duration-reached" -> "Reached its time limit", ... */
const char *tb_end_reason_to_string(const char *reason);

/* 12 345 678 -> "12.3 MB"; uses g_format_size. */
char *tb_format_bytes(guint64 bytes);
/* 3723 s -> "1:02:03", 63 s -> "1:03". */
char *tb_format_elapsed(gint64 seconds);
/* 1234567 -> "1,234,567" in the locale's grouping ("%'"). */
char *tb_format_count(guint64 n);
