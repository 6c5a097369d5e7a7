/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <glib/gi18n.h>
#include <stdio.h>
#include <string.h>

#include "messages.h"
#include "tracebus-bus.h"

void tb_message_clear(TbMessage *m) {
        g_clear_pointer(&m->title, g_free);
        g_clear_pointer(&m->detail, g_free);
}

char *tb_error_get_dbus_name(const GError *error) {
        if (!error || !g_dbus_error_is_remote_error(error))
                return NULL;
        return g_dbus_error_get_remote_error(error);
}

/* The service's own sentence, without GDBus's "GDBus.Error:name: " prefix. */
static char *service_text(const GError *error) {
        g_autoptr(GError) copy = g_error_copy(error);

        g_dbus_error_strip_remote_error(copy);
        return g_strdup(copy->message);
}

typedef struct {
        const char *name;  /* D-Bus error name, or the suffix after TB_ERROR_PREFIX */
        const char *title; /* N_() */
        const char *detail; /* N_(), or NULL: the service's own words */
} ErrorWords;

static const ErrorWords error_words[] = {
        { "org.freedesktop.DBus.Error.AccessDenied",
          N_("You are not allowed to record system traces."),
          N_("Ask an administrator to allow your account the polkit action “org.tracebus.record” "
             "(“Record a kernel trace”), for example with a rule in /etc/polkit-1/rules.d.") },
        { "org.freedesktop.DBus.Error.InteractiveAuthorizationRequired",
          N_("Recording needs an administrator’s approval, and no one could be asked."),
          N_("No authentication agent answered. Log in to a desktop session that runs one, or ask an "
             "administrator to allow your account the polkit action “org.tracebus.record”.") },
        { "org.freedesktop.DBus.Error.ServiceUnknown",
          N_("The tracing service is not available."),
          N_("tracebusd is not installed or could not be started. Ask an administrator to install tracebus.") },
        { "org.freedesktop.DBus.Error.NameHasNoOwner",
          N_("The tracing service is not running."),
          N_("tracebusd stopped or could not be started. Ask an administrator to check “journalctl -u tracebusd”.") },
        { "org.freedesktop.DBus.Error.NoReply",
          N_("The tracing service did not answer."), NULL },
        { "org.freedesktop.DBus.Error.Timeout",
          N_("The tracing service did not answer."), NULL },
        { "org.freedesktop.DBus.Error.InvalidArgs",
          N_("The tracing service refused the request."), NULL },
        { "org.freedesktop.DBus.Error.UnknownObject",
          N_("That recording no longer exists."), NULL },
        { "org.freedesktop.DBus.Error.UnknownMethod",
          N_("The tracing service is too old for this application."), NULL },
        { "InvalidConfig", N_("The recording settings were refused."), NULL },
        { "UnknownEvent", N_("This kernel does not offer some of the chosen events."), NULL },
        { "EventNotAllowed", N_("Some of the chosen events need an administrator’s approval."),
          N_("Leave them out, or ask an administrator to allow your account the polkit action "
             "“org.tracebus.manage”.") },
        { "NoSuchSession", N_("That recording no longer exists."), NULL },
        { "TooManySessions", N_("Too many recordings are running."),
          N_("Stop a recording and try again.") },
        { "KeyInUse", N_("A recording kept from an earlier window is still running."),
          N_("Stop it from the list of recordings, then try again.") },
        { "QuotaExceeded", N_("The space for your traces is used up."), NULL },
        { "OutputError", N_("The trace could not be written."), NULL },
        { "TracingUnavailable", N_("Kernel tracing is not available on this computer."), NULL },
        { "AuthorizationUnavailable", N_("Your permission to record could not be checked."),
          N_("The system’s authorization service (polkit) is not running. Try again later, or ask an "
             "administrator to check polkitd.") },
};

static const ErrorWords *lookup_words(const char *name) {
        for (gsize i = 0; i < G_N_ELEMENTS(error_words); i++) {
                const char *n = error_words[i].name;
                if (strchr(n, '.') ? g_str_equal(n, name)
                                   : g_str_has_prefix(name, TB_ERROR_PREFIX) && g_str_equal(name + strlen(TB_ERROR_PREFIX), n))
                        return &error_words[i];
        }
        return NULL;
}

void tb_message_from_error(const GError *error, const char *what_failed, TbMessage *ret) {
        g_autofree char *name = tb_error_get_dbus_name(error);
        g_autofree char *text = NULL;
        const ErrorWords *w;

        memset(ret, 0, sizeof *ret);
        if (!error) {
                ret->title = g_strdup(what_failed);
                return;
        }
        text = service_text(error);
        w = name ? lookup_words(name) : NULL;
        if (!w && g_error_matches(error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT))
                w = lookup_words("org.freedesktop.DBus.Error.Timeout");
        if (!w && name && g_str_has_prefix(name, "org.freedesktop.systemd1."))
                w = lookup_words("org.freedesktop.DBus.Error.ServiceUnknown");
        if (w) {
                ret->title = g_strdup(_(w->title));
                ret->detail = w->detail ? g_strdup(_(w->detail)) : g_steal_pointer(&text);
        } else {
                ret->title = g_strdup(what_failed);
                ret->detail = g_steal_pointer(&text);
        }
        /* A sentence ends with a period, whoever wrote it. */
        if (ret->detail && *ret->detail && !strchr(".!?", ret->detail[strlen(ret->detail) - 1])) {
                char *d = g_strconcat(ret->detail, ".", NULL);
                g_free(ret->detail);
                ret->detail = d;
        }
}

const char *tb_end_reason_to_string(const char *reason) {
        static const struct {
                const char *reason, *words;
        } table[] = {
                { "stopped", N_("Stopped") },
                { "duration-reached", N_("Reached its time limit") },
                { "size-reached", N_("Reached its size limit") },
                { "client-vanished", N_("Stopped when its window closed") },
                { "output-error", N_("Stopped: the trace could not be written") },
                { "service-shutdown", N_("Stopped: the tracing service shut down") },
                { "quota", N_("Stopped: your traces reached the service's quota") },
                { "output-stalled", N_("Stopped: the output took nothing for too long") },
                { "snapshot", N_("Snapshot of a running recording") },
                /* trigger_config's ends. */
                { "trigger-timeout", N_("Stopped: no trigger came in time") },
                { "triggered", N_("Stopped by its trigger") },
        };
        if (!reason || !*reason)
                return _("Finished");
        for (gsize i = 0; i < G_N_ELEMENTS(table); i++)
                if (g_str_equal(table[i].reason, reason))
                        return _(table[i].words);
        return _("Finished");
}

char *tb_format_bytes(guint64 bytes) {
        return g_format_size(bytes);
}

char *tb_format_elapsed(gint64 seconds) {
        if (seconds < 0)
                seconds = 0;
        if (seconds >= 3600)
                return g_strdup_printf("%" G_GINT64_FORMAT ":%02d:%02d", seconds / 3600,
                                       (int) (seconds / 60 % 60), (int) (seconds % 60));
        return g_strdup_printf("%d:%02d", (int) (seconds / 60), (int) (seconds % 60));
}

char *tb_format_count(guint64 n) {
        char buf[64];

        snprintf(buf, sizeof buf, "%'" G_GUINT64_FORMAT, n);
        return g_strdup(buf);
}
