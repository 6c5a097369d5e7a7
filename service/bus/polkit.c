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

/* One CheckAuthorization call of a query. */
typedef struct PolkitCheck {
        PolkitQuery *query;
        sd_bus_slot *slot;      /* NULL once answered */
        char *action;
        /* Asked without a dialog, for something optional (ListSessions' other users, raw
         * kernel addresses): a refusal is the common answer, no alarm for the log. */
        bool probe;
        int result;
        char cancellation_id[32];  /* unique among this connection's calls */
} PolkitCheck;

struct PolkitQuery {
        polkit_callback_t callback;
        void *userdata;
        uid_t uid;              /* the caller's, for the log; UID_INVALID if unknown */
        bool cancelled;
        size_t n_checks, n_pending;
        PolkitCheck checks[POLKIT_MAX_ACTIONS];
};

PolkitQuery *polkit_query_free(PolkitQuery *q) {
        if (!q)
                return NULL;
        for (size_t i = 0; i < q->n_checks; i++) {
                sd_bus_slot_unref(q->checks[i].slot);
                free(q->checks[i].action);
        }
        return mfree(q);
}

size_t polkit_query_n_pending(const PolkitQuery *q) {
        return q ? q->n_pending : 0;
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
static void log_refusal(int r, uid_t uid, const PolkitCheck *c) {
        if (r == -EACCES && c->probe)
                log_info("polkit: UID %u does not hold %s.", (unsigned) uid, c->action);
        else if (r == -EACCES)
                log_notice("polkit refused %s to UID %u.", c->action, (unsigned) uid);
        else if (r == -ECANCELED)
                log_notice("polkit: UID %u dismissed the authentication for %s; refused.", (unsigned) uid, c->action);
        else if (r == -EBADR)
                log_notice("polkit wants UID %u to authenticate for %s, but the call did not "
                           "allow interactive authorization; refused.", (unsigned) uid, c->action);
        else if (r < 0 && r != -EHOSTDOWN)
                log_warning_errno(r, "Failed to read polkit's answer on %s for UID %u; refused: %m",
                                  c->action, (unsigned) uid);
}

/* One call answered; the last one answers the query. */
static int on_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        PolkitCheck *c = ASSERT_PTR(userdata);
        PolkitQuery *q = c->query;
        int results[POLKIT_MAX_ACTIONS];
        size_t n = q->n_checks;

        /* A cancelled query's answers (errors, Cancelled) concern nobody any more. */
        c->result = q->cancelled ? -ECANCELED : parse_reply(reply, c->action);
        if (!q->cancelled)
                log_refusal(c->result, q->uid, c);
        /* A dismissed dialog is a refusal like any other to the caller. */
        if (c->result == -ECANCELED)
                c->result = -EACCES;
        c->slot = sd_bus_slot_unref(c->slot);
        if (--q->n_pending > 0)
                return 0;
        /* The query is done: the callback owns what happens next, including freeing q,
         * so the answers are copied out of it first. */
        for (size_t i = 0; i < n; i++)
                results[i] = q->checks[i].result;
        q->callback(results, n, q->userdata);
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

static int send_check(sd_bus *bus, const char *sender, PolkitCheck *c, bool interactive) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL;
        static uint64_t n_checks = 0;
        int r;

        snprintf(c->cancellation_id, sizeof(c->cancellation_id), "tracebus-%" PRIu64, ++n_checks);
        r = sd_bus_message_new_method_call(bus, &call, "org.freedesktop.PolicyKit1",
                                           "/org/freedesktop/PolicyKit1/Authority",
                                           "org.freedesktop.PolicyKit1.Authority", "CheckAuthorization");
        if (r < 0)
                return r;
        r = sd_bus_message_append(call, "(sa{sv})sa{ss}us",
                                  "system-bus-name", 1, "name", "s", sender,
                                  c->action,
                                  0,
                                  interactive ? POLKIT_ALLOW_USER_INTERACTION : 0u,
                                  c->cancellation_id);
        if (r < 0)
                return r;
        return sd_bus_call_async(bus, &c->slot, call, on_reply, c, interactive ? POLKIT_INTERACTIVE_TIMEOUT_USEC : 0);
}

int polkit_verify_actions_async(sd_bus_message *m, const PolkitAction *actions, size_t n,
                                polkit_callback_t callback, void *userdata, PolkitQuery **ret) {
        _cleanup_(polkit_query_freep) PolkitQuery *q = NULL;
        const char *sender = sd_bus_message_get_sender(m);
        bool may_interact = sd_bus_message_get_allow_interactive_authorization(m) > 0;
        int r;

        assert(n > 0 && n <= POLKIT_MAX_ACTIONS);
        assert(callback);
        assert(ret);

        if (!sender)
                return -EBADMSG;
        q = calloc(1, sizeof(*q));
        if (!q)
                return -ENOMEM;
        *q = (PolkitQuery) { .callback = callback, .userdata = userdata, .uid = sender_uid(m) };
        for (size_t i = 0; i < n; i++) {
                PolkitCheck *c = &q->checks[q->n_checks++];

                *c = (PolkitCheck) { .query = q, .probe = !actions[i].interactive, .action = strdup(actions[i].id) };
                if (!c->action)
                        return -ENOMEM;
                r = send_check(sd_bus_message_get_bus(m), sender, c, actions[i].interactive && may_interact);
                if (r < 0)
                        return r;
                q->n_pending++;
        }
        *ret = TAKE_PTR(q);
        return 0;
}

static int send_cancel(PolkitCheck *c) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL;
        sd_bus *bus = sd_bus_slot_get_bus(c->slot);
        int r;

        r = sd_bus_message_new_method_call(bus, &call, "org.freedesktop.PolicyKit1",
                                           "/org/freedesktop/PolicyKit1/Authority",
                                           "org.freedesktop.PolicyKit1.Authority", "CancelCheckAuthorization");
        if (r < 0)
                return r;
        r = sd_bus_message_append(call, "s", c->cancellation_id);
        if (r < 0)
                return r;
        /* No reply wanted: it would be one more call waiting on the bus's count. */
        r = sd_bus_message_set_expect_reply(call, false);
        if (r < 0)
                return r;
        return sd_bus_send(bus, call, NULL);
}

void polkit_query_cancel(PolkitQuery *q) {
        if (!q || q->cancelled)
                return;
        q->cancelled = true;
        for (size_t i = 0; i < q->n_checks; i++) {
                PolkitCheck *c = &q->checks[i];
                int r = c->slot ? send_cancel(c) : 0;

                if (r < 0)
                        log_debug_errno(r, "Failed to cancel polkit check %s, its answer will come anyway: %m",
                                        c->cancellation_id);
        }
}
