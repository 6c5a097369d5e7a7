/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "polkit.h"

/* CheckAuthorization flag: AllowUserInteraction. */
#define POLKIT_ALLOW_USER_INTERACTION 1u
#define UID_INVALID ((uid_t) -1)
/* An authentication dialog can take a person a while; sd-bus's default 25 s is too short. */
#define POLKIT_INTERACTIVE_TIMEOUT_USEC (5ull * 60 * 1000 * 1000)

struct PolkitQuery {
        sd_bus_slot *slot;
        polkit_callback_t callback;
        void *userdata;
        char *action;
        uid_t uid;              /* the caller's, for the log; UID_INVALID if unknown */
        char cancellation_id[32];  /* unique among this connection's queries */
        bool cancelled;
        /* Asked without a dialog, for something optional (ListSessions' other users, raw
         * kernel addresses): a refusal is the common answer, no alarm for the log. */
        bool probe;
};

PolkitQuery *polkit_query_free(PolkitQuery *q) {
        if (!q)
                return NULL;
        sd_bus_slot_unref(q->slot);
        free(q->action);
        return mfree(q);
}

static int parse_reply(sd_bus_message *reply, const char *action) {
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        int authorized, challenge, r;

        if (e) {
                /* An error instead of an answer: polkitd is not running and cannot be
                 * started (ServiceUnknown, Spawn.*), died while it thought (NoReply), or
                 * failed. No polkit, no authorization: never fail open; but the caller
                 * must learn that nobody decided, not that polkit said no. Nothing is
                 * remembered: the next query asks the bus afresh. */
                log_warning("polkit could not decide on %s (%s: %s); refusing.", action, e->name, strempty(e->message));
                return -EHOSTDOWN;
        }

        r = sd_bus_message_enter_container(reply, 'r', "bba{ss}");
        if (r < 0)
                return r;
        r = sd_bus_message_read(reply, "bb", &authorized, &challenge);
        if (r < 0)
                return r;
        if (authorized)
                return 1;
        if (challenge)
                return -EBADR;
        r = sd_bus_message_enter_container(reply, 'a', "{ss}");
        if (r < 0)
                return r;
        /* polkit's answer when the authentication agent's dialog was cancelled. */
        for (const char *k, *v; (r = sd_bus_message_read(reply, "{ss}", &k, &v)) > 0;)
                if (strcmp(k, "polkit.dismissed") == 0 && strcmp(v, "true") == 0)
                        return -ECANCELED;
        return r < 0 ? r : -EACCES;
}

/* One line per refusal, in words: the result codes' strerror() texts ("Invalid request
 * descriptor" for -EBADR) say nothing to an administrator. */
static void log_refusal(int r, const PolkitQuery *q) {
        if (r == -EACCES && q->probe)
                log_info("polkit: UID %u does not hold %s.", (unsigned) q->uid, q->action);
        else if (r == -EACCES)
                log_notice("polkit refused %s to UID %u.", q->action, (unsigned) q->uid);
        else if (r == -ECANCELED)
                log_notice("polkit: UID %u dismissed the authentication for %s; refused.",
                           (unsigned) q->uid, q->action);
        else if (r == -EBADR)
                log_notice("polkit wants UID %u to authenticate for %s, but the call did not "
                           "allow interactive authorization; refused.", (unsigned) q->uid, q->action);
        else if (r < 0 && r != -EHOSTDOWN)
                log_warning_errno(r, "Failed to read polkit's answer on %s for UID %u; refused: %m",
                                  q->action, (unsigned) q->uid);
}

static int on_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        PolkitQuery *q = ASSERT_PTR(userdata);
        polkit_callback_t callback = q->callback;
        void *cb_data = q->userdata;
        int r;

        /* A cancelled query's answer (an error, Cancelled) concerns nobody any more. */
        r = q->cancelled ? -ECANCELED : parse_reply(reply, q->action);
        if (!q->cancelled)
                log_refusal(r, q);
        /* A dismissed dialog is a refusal like any other to the caller. */
        if (r == -ECANCELED)
                r = -EACCES;
        /* The query is done: the callback owns what happens next, including freeing q. */
        q->slot = sd_bus_slot_unref(q->slot);
        callback(r, cb_data);
        return 0;
}

static uid_t sender_uid(sd_bus_message *m) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
        uid_t uid;

        if (sd_bus_query_sender_creds(m, SD_BUS_CREDS_EUID, &creds) < 0 ||
            sd_bus_creds_get_euid(creds, &uid) < 0)
                return UID_INVALID;
        return uid;
}

int polkit_check_async(sd_bus_message *m, const char *action, bool allow_interaction,
                       polkit_callback_t callback, void *userdata, PolkitQuery **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL;
        _cleanup_(polkit_query_freep) PolkitQuery *q = NULL;
        sd_bus *bus = sd_bus_message_get_bus(m);
        const char *sender = sd_bus_message_get_sender(m);
        bool interactive = allow_interaction && sd_bus_message_get_allow_interactive_authorization(m) > 0;
        uid_t uid;
        int r;

        assert(action);
        assert(callback);
        assert(ret);

        static uint64_t n_queries = 0;

        if (!sender)
                return -EBADMSG;
        uid = sender_uid(m);

        q = calloc(1, sizeof(*q));
        if (!q)
                return -ENOMEM;
        q->uid = uid;
        q->probe = !allow_interaction;
        q->callback = callback;
        q->userdata = userdata;
        q->action = strdup(action);
        if (!q->action)
                return -ENOMEM;
        snprintf(q->cancellation_id, sizeof(q->cancellation_id), "tracebus-%" PRIu64, ++n_queries);

        r = sd_bus_message_new_method_call(bus, &call, "org.freedesktop.PolicyKit1",
                                           "/org/freedesktop/PolicyKit1/Authority",
                                           "org.freedesktop.PolicyKit1.Authority", "CheckAuthorization");
        if (r < 0)
                return r;
        r = sd_bus_message_append(call, "(sa{sv})sa{ss}us",
                                  "system-bus-name", 1, "name", "s", sender,
                                  action,
                                  0,
                                  interactive ? POLKIT_ALLOW_USER_INTERACTION : 0u,
                                  q->cancellation_id);
        if (r < 0)
                return r;
        r = sd_bus_call_async(bus, &q->slot, call, on_reply, q,
                              interactive ? POLKIT_INTERACTIVE_TIMEOUT_USEC : 0);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(q);
        return 0;
}

void polkit_query_cancel(PolkitQuery *q) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL;
        sd_bus *bus;
        int r;

        if (!q || !q->slot || q->cancelled)
                return;
        q->cancelled = true;
        bus = sd_bus_slot_get_bus(q->slot);
        r = sd_bus_message_new_method_call(bus, &call, "org.freedesktop.PolicyKit1",
                                           "/org/freedesktop/PolicyKit1/Authority",
                                           "org.freedesktop.PolicyKit1.Authority", "CancelCheckAuthorization");
        if (r >= 0)
                r = sd_bus_message_append(call, "s", q->cancellation_id);
        /* No reply wanted: it would be one more call waiting on the bus's count. */
        if (r >= 0)
                r = sd_bus_message_set_expect_reply(call, false);
        if (r >= 0)
                r = sd_bus_send(bus, call, NULL);
        if (r < 0)
                log_debug_errno(r, "Failed to cancel polkit query %s, its answer will come anyway: %m",
                                q->cancellation_id);
}
