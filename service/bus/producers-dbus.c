/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Manager.ListProducers: the apps connected to the producer socket, as a caller may see
 * them (core/manager-producers.c holds the rule). */
#include <errno.h>
#include <string.h>

#include "bus-context.h"
#include "bus-dict.h"
#include "core/manager.h"
#include "log.h"
#include "producers-dbus.h"
#include "tracebus-bus.h"

/* A reply stays well under the system bus's message size (32 MiB by default): producers
 * past this many bytes are left out, and the service says so in its log. */
#define LIST_PRODUCERS_REPLY_MAX (8u * 1024u * 1024u)

static int append_source(sd_bus_message *reply, const ProducerDataSource *s) {
        int r;

        r = sd_bus_message_open_container(reply, 'r', "sas");
        if (r < 0)
                return r;
        r = sd_bus_message_append(reply, "s", s->name);
        if (r < 0)
                return r;
        r = sd_bus_message_append_strv(reply, s->categories);
        if (r < 0)
                return r;
        return sd_bus_message_close_container(reply);
}

static int append_producer(sd_bus_message *reply, const Producer *p) {
        int r;

        r = sd_bus_message_open_container(reply, 'r', "tsuua(sas)");
        if (r < 0)
                return r;
        r = sd_bus_message_append(reply, "tsuu", p->id, p->name ?: "", (uint32_t) p->uid, (uint32_t) p->pid);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', "(sas)");
        if (r < 0)
                return r;
        for (unsigned i = 0; i < p->n_sources; i++) {
                r = append_source(reply, &p->sources[i]);
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_message_close_container(reply);
}

/* The size a producer adds to the reply, roughly: its strings and their headers. */
static size_t producer_reply_size(const Producer *p) {
        size_t n = 64 + (p->name ? strlen(p->name) : 0);

        for (unsigned i = 0; i < p->n_sources; i++) {
                n += 16 + strlen(p->sources[i].name);
                for (unsigned j = 0; j < p->sources[i].n_categories; j++)
                        n += 8 + strlen(p->sources[i].categories[j]);
        }
        return n;
}

static int reply_producer_list(Manager *m, sd_bus_message *message, uid_t uid, bool all) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        size_t size = 0;
        unsigned left_out = 0;
        int r;

        r = bus_message_new_return_container(message, 'a', "(tsuua(sas))", &reply);
        if (r < 0)
                return r;
        for (const Producer *p = m->producers ? m->producers->list : NULL; p; p = p->next) {
                if (!manager_producer_visible(p, uid, all))
                        continue;
                size += producer_reply_size(p);
                if (size > LIST_PRODUCERS_REPLY_MAX) {
                        left_out++;
                        continue;
                }
                r = append_producer(reply, p);
                if (r < 0)
                        return r;
        }
        if (left_out > 0)
                log_notice("ListProducers of UID %u: %u producer(s) left out of a reply over %u bytes.",
                           (unsigned) uid, left_out, LIST_PRODUCERS_REPLY_MAX);
        return bus_message_close_and_send(reply);
}

static void on_list_result(BusRequest *req, int result) {
        int r;

        /* Not a manager: the caller's own producers, which need no authorization. */
        r = reply_producer_list(req->context->manager, req->message, req->uid, result > 0);
        if (r < 0)
                (void) sd_bus_reply_method_errnof(req->message, r, "Failed to list producers: %m");
}

int method_list_producers(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        /* As ListSessions: one's own producers without polkit's yes. */
        return bus_request_authorize_listing(ASSERT_PTR(userdata), message, on_list_result);
}
