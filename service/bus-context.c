/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>

#include "bus-context.h"
#include "bus-errors.h"
#include "fd-util.h"

int bus_sender_euid(sd_bus_message *m, uid_t *ret) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
        int r;

        /* EUID from the bus itself; no SD_BUS_CREDS_AUGMENT, which would read racy /proc data. */
        r = sd_bus_query_sender_creds(m, SD_BUS_CREDS_EUID, &creds);
        if (r < 0)
                return r;
        return sd_bus_creds_get_euid(creds, ret);
}

BusRequest *bus_request_free(BusRequest *req) {
        if (!req)
                return NULL;
        if (req->context) {
                if (req->prev)
                        req->prev->next = req->next;
                else if (req->context->requests == req)
                        req->context->requests = req->next;
                if (req->next)
                        req->next->prev = req->prev;
        }
        polkit_query_free(req->query);
        sd_bus_message_unref(req->message);
        start_request_done(&req->start);
        free(req->session_path);
        return mfree(req);
}

int bus_request_new(sd_bus_message *message, BusRequest **ret) {
        _cleanup_(bus_request_freep) BusRequest *req = NULL;
        int r;

        req = calloc(1, sizeof(*req));
        if (!req)
                return -ENOMEM;
        req->start.output_fd = -EBADF;
        req->message = sd_bus_message_ref(message);
        r = bus_sender_euid(message, &req->uid);
        if (r < 0)
                return r;
        req->start.uid = req->uid;
        *ret = TAKE_PTR(req);
        return 0;
}

static void on_polkit_result(int result, void *userdata) {
        _cleanup_(bus_request_freep) BusRequest *req = userdata;

        req->query = polkit_query_free(req->query);
        req->on_result(req, result);
}

int bus_request_authorize(BusContext *c, BusRequest **reqp, const char *action, bool interactive,
                          void (*on_result)(BusRequest *req, int result)) {
        BusRequest *req = *reqp;
        int r;

        req->on_result = on_result;
        r = polkit_check_async(req->message, action, interactive, on_polkit_result, req, &req->query);
        if (r < 0)
                return r;
        req->context = c;
        req->next = c->requests;
        if (c->requests)
                c->requests->prev = req;
        c->requests = TAKE_PTR(*reqp);
        return 1;
}

void bus_request_reply_refusal(BusRequest *req, int result, const char *action, const char *what) {
        if (result == -EBADR)
                (void) sd_bus_reply_method_errorf(req->message, SD_BUS_ERROR_INTERACTIVE_AUTHORIZATION_REQUIRED,
                                                  "%s needs authentication (polkit action %s), but the call "
                                                  "did not allow interactive authorization.", what, action);
        else if (result == -EACCES)
                (void) sd_bus_reply_method_errorf(req->message, SD_BUS_ERROR_ACCESS_DENIED,
                                                  "Not authorized: %s needs polkit action %s.", what, action);
        else if (result == -EHOSTDOWN)
                (void) sd_bus_reply_method_errorf(req->message, TB_ERROR_AUTHORIZATION_UNAVAILABLE,
                                                  "%s was refused: authorization could not be checked, polkit "
                                                  "(org.freedesktop.PolicyKit1) gave no answer. Try again once "
                                                  "polkitd runs.", what);
        else
                (void) sd_bus_reply_method_errnof(req->message, result, "Failed to check authorization: %m");
}

void bus_context_cancel_requests(BusContext *c) {
        while (c->requests) {
                BusRequest *req = c->requests;

                (void) sd_bus_reply_method_errorf(req->message, SD_BUS_ERROR_NO_REPLY,
                                                  "The service is shutting down.");
                bus_request_free(req);
        }
}
