/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "bus-dict.h"

int bus_message_read_dict(sd_bus_message *m, bus_dict_entry_t read_entry, void *userdata) {
        const char *key;
        int r;

        r = sd_bus_message_enter_container(m, 'a', "{sv}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
                r = sd_bus_message_read(m, "s", &key);
                if (r < 0)
                        return r;
                r = read_entry(m, key, userdata);
                if (r < 0)
                        return r;
                r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

int bus_message_append_strv_entry(sd_bus_message *m, const char *key, char **l) {
        int r;

        r = sd_bus_message_open_container(m, 'e', "sv");
        if (r < 0)
                return r;
        r = sd_bus_message_append(m, "s", key);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(m, 'v', "as");
        if (r < 0)
                return r;
        r = sd_bus_message_append_strv(m, l);
        if (r < 0)
                return r;
        r = sd_bus_message_close_container(m);
        if (r < 0)
                return r;
        return sd_bus_message_close_container(m);
}

int bus_message_new_return_container(sd_bus_message *call, char type, const char *contents, sd_bus_message **ret) {
        sd_bus_message *reply = NULL;
        int r;

        r = sd_bus_message_new_method_return(call, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, type, contents);
        if (r < 0) {
                sd_bus_message_unref(reply);
                return r;
        }
        *ret = reply;
        return 0;
}

int bus_message_close_and_send(sd_bus_message *reply) {
        int r;

        r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}
