/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

/* Reads one entry of an a{sv} dictionary: the value of @key, its variant included (or
 * skips it). Negative to stop reading the dictionary there. */
typedef int (*bus_dict_entry_t)(sd_bus_message *m, const char *key, void *userdata);

/* Reads the a{sv} dictionary at @m's position, entry by entry, handing each key to
 * @read_entry: a dictionary is read no further than the first entry refused, so a long
 * one costs nothing past it. 0, or the first negative errno. */
int bus_message_read_dict(sd_bus_message *m, bus_dict_entry_t read_entry, void *userdata);

/* Appends the dictionary entry {sv} @key = as @l to @m, inside its open a{sv}. */
int bus_message_append_strv_entry(sd_bus_message *m, const char *key, char **l);

/* A method return to @call with a container of @type and @contents opened in it
 * (an a{sv} reply: 'a', "{sv}"). */
int bus_message_new_return_container(sd_bus_message *call, char type, const char *contents, sd_bus_message **ret);

/* Closes the container bus_message_new_return_container() opened in @reply, and sends it. */
int bus_message_close_and_send(sd_bus_message *reply);
