/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Manager.ActivateTriggers. The names are checked first (at most SESSION_MAX_TRIGGERS of
 * them, each 1 to 64 bytes), then polkit is asked for org.tracebus.trigger, then, never
 * with a dialog, for org.tracebus.manage, which decides whether the triggers reach every
 * user's sessions or only the caller's own. Both questions are asked whatever sessions
 * run, so the reply's latency reveals nothing about other users' sessions. The reply is
 * empty for the same reason, just as Perfetto's ActivateTriggers tells a producer nothing.
 */
#include "bus-context.h"
#include "bus-errors.h"
#include "log.h"
#include "manager-triggers-dbus.h"
#include "strv.h"

/* The trigger's producer_name: the caller's process name, as the bus reports it. Like a
 * Perfetto producer's name, the caller chooses it; trusted_producer_uid is the trusted part. */
static char *sender_name(sd_bus_message *m) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
        const char *comm = NULL;

        if (sd_bus_query_sender_creds(m, SD_BUS_CREDS_COMM | SD_BUS_CREDS_AUGMENT, &creds) >= 0)
                (void) sd_bus_creds_get_comm(creds, &comm);
        return strdup(comm ?: "unknown");
}

/* Activates the triggers, in every user's sessions when @all, and replies; an error
 * reply names the step that failed. */
static int activate_and_reply(Manager *m, BusRequest *req, bool all) {
        _cleanup_strv_free_ char **names = NULL;
        _cleanup_free_ char *producer = NULL;
        int r;

        r = sd_bus_message_rewind(req->message, /* complete= */ true);
        if (r >= 0)
                r = sd_bus_message_read_strv(req->message, &names);
        if (r < 0)
                return sd_bus_reply_method_errnof(req->message, r,
                                                  "Failed to activate the triggers: cannot read their names again: %m");
        producer = sender_name(req->message);
        if (!producer)
                return sd_bus_reply_method_errnof(req->message, ENOMEM, "Failed to activate the triggers: "
                                                  "cannot name the caller's process: %m");
        (void) manager_activate_triggers(m, names, req->uid, all, producer);
        return sd_bus_reply_method_return(req->message, NULL);
}

/* polkit has answered both questions: the triggers reach every user's sessions when
 * the caller holds org.tracebus.manage, only its own otherwise. activate_and_reply()
 * answers the caller on every path. */
static void on_manage_result(BusRequest *req, const int *results) {
        (void) activate_and_reply(req->context->manager, req, results[0] > 0);
}

static void on_trigger_result(BusRequest *req, int result) {
        static const PolkitAction manage = { TB_ACTION_MANAGE, /* interactive= */ false };
        int r;

        if (result < 0)
                return bus_request_reply_refusal(req, result, TB_ACTION_TRIGGER, "Activating triggers");
        r = bus_request_authorize_again(req, &manage, 1, on_manage_result);
        if (r < 0)
                (void) sd_bus_reply_method_errnof(req->message, r, "Failed to ask polkit about " TB_ACTION_MANAGE ": %m");
}

/* Checks the names one by one as they are read, the count and each name's length while
 * reading: a huge array is refused at the first name over a cap, never read whole, so a
 * caller whom polkit would refuse costs no more than 65 names' work. */
static int check_names(sd_bus_message *message, sd_bus_error *error) {
        const char *n;
        unsigned count = 0;
        int r;

        r = sd_bus_message_enter_container(message, 'a', "s");
        while (r >= 0 && (r = sd_bus_message_read_basic(message, 's', &n)) > 0) {
                if (++count > SESSION_MAX_TRIGGERS)
                        return sd_bus_error_setf(error, TB_ERROR_REQUEST_TOO_LARGE,
                                                 "More than %u trigger names.", SESSION_MAX_TRIGGERS);
                if (!session_trigger_name_valid(n))
                        return sd_bus_error_setf(error, TB_ERROR_INVALID_TRIGGER,
                                                 "Trigger name '%.64s%s' is not 1 to %u bytes without control "
                                                 "characters.", n, strlen(n) > 64 ? "..." : "",
                                                 SESSION_TRIGGER_NAME_MAX);
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(message);
        return r;
}

int method_activate_triggers(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        BusContext *c = ASSERT_PTR(userdata);
        _cleanup_(bus_request_freep) BusRequest *req = NULL;
        int r;

        r = check_names(message, error);
        if (r < 0)
                return r;
        r = bus_request_new(message, &req);
        if (r < 0)
                return r;
        /* Root, whom polkit always allows, reaches every session without asking. */
        if (req->uid == 0)
                return activate_and_reply(c->manager, req, true);
        return bus_request_authorize(c, &req, TB_ACTION_TRIGGER, /* interactive= */ true, on_trigger_result);
}
