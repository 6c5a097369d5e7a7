/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <string.h>

#include "bus-errors.h"
#include "macro.h"

const sd_bus_error_map tracebus_error_map[] = {
        SD_BUS_ERROR_MAP(TB_ERROR_INVALID_CONFIG,      EINVAL),
        SD_BUS_ERROR_MAP(TB_ERROR_UNKNOWN_EVENT,       ENOENT),
        SD_BUS_ERROR_MAP(TB_ERROR_NO_SUCH_SESSION,     ENXIO),
        SD_BUS_ERROR_MAP(TB_ERROR_TOO_MANY_SESSIONS,   EUSERS),
        SD_BUS_ERROR_MAP(TB_ERROR_KEY_IN_USE,          EADDRINUSE),
        SD_BUS_ERROR_MAP(TB_ERROR_OUTPUT_ERROR,        EIO),
        SD_BUS_ERROR_MAP(TB_ERROR_QUOTA_EXCEEDED,      EDQUOT),
        SD_BUS_ERROR_MAP(TB_ERROR_TRACING_UNAVAILABLE, ENODEV),
        SD_BUS_ERROR_MAP(TB_ERROR_AUTHORIZATION_UNAVAILABLE, EHOSTDOWN),
        SD_BUS_ERROR_MAP(TB_ERROR_TOO_MANY_PENDING_CALLS, EAGAIN),
        SD_BUS_ERROR_MAP(TB_ERROR_RESOURCE_LIMIT,      EMFILE),
        SD_BUS_ERROR_MAP(TB_ERROR_BUFFER_MEMORY_EXHAUSTED, ENOBUFS),
        SD_BUS_ERROR_MAP(TB_ERROR_SHUTTING_DOWN,       ESHUTDOWN),
        SD_BUS_ERROR_MAP(TB_ERROR_TRACE_DIRECTORY_REFUSED, ELOOP),
        SD_BUS_ERROR_MAP(TB_ERROR_OUTPUT_REFUSED,      EPERM),
        SD_BUS_ERROR_MAP(TB_ERROR_REQUEST_TOO_LARGE,   EMSGSIZE),
        SD_BUS_ERROR_MAP(TB_ERROR_SESSION_NAME_IN_USE, EEXIST),
        SD_BUS_ERROR_MAP(TB_ERROR_PROCESS_NOT_YOURS, EPERM),
        SD_BUS_ERROR_MAP(TB_ERROR_EVENT_NOT_ALLOWED,   EKEYREJECTED),
        SD_BUS_ERROR_MAP(TB_ERROR_INVALID_ROTATION,    ERANGE),
        SD_BUS_ERROR_MAP(TB_ERROR_INVALID_TRIGGER,     ENAMETOOLONG),
        SD_BUS_ERROR_MAP(TB_ERROR_CLONE_RATE_LIMITED,  EBUSY),
        SD_BUS_ERROR_MAP_END
};

static const struct {
        const char *name;
        const char *text;
} explanations[] = {
        { TB_ERROR_INVALID_CONFIG,       "The trace configuration is not valid" },
        { TB_ERROR_UNKNOWN_EVENT,        "This kernel offers no such trace event" },
        { TB_ERROR_NO_SUCH_SESSION,      "There is no such tracing session of yours" },
        { TB_ERROR_TOO_MANY_SESSIONS,    "Too many tracing sessions are running; stop one first" },
        { TB_ERROR_KEY_IN_USE,           "Another of your sessions is detached under that key" },
        { TB_ERROR_OUTPUT_ERROR,         "The trace could not be written" },
        { TB_ERROR_QUOTA_EXCEEDED,       "Your traces in the service's trace directory use up your quota; delete some" },
        { TB_ERROR_TRACING_UNAVAILABLE,  "Kernel tracing (tracefs) is not available on this machine" },
        { TB_ERROR_AUTHORIZATION_UNAVAILABLE,
          "Authorization could not be checked: polkit is not running; try again later" },
        { TB_ERROR_TOO_MANY_PENDING_CALLS,
          "Too many calls are waiting for authorization; wait for their answers" },
        { TB_ERROR_RESOURCE_LIMIT,
          "The service holds as many file descriptors for you (or for everyone) as it may; stop a session first" },
        { TB_ERROR_BUFFER_MEMORY_EXHAUSTED,
          "The sessions' kernel buffers use up the service's memory for them; stop a session or ask for a smaller buffer" },
        { TB_ERROR_SHUTTING_DOWN,        "The service is shutting down; try again once it has exited" },
        { TB_ERROR_TRACE_DIRECTORY_REFUSED,
          "Your trace directory holds a subdirectory, a link or too many files; remove them" },
        { TB_ERROR_OUTPUT_REFUSED,       "The service may not write into that output (a socket of another user)" },
        { TB_ERROR_REQUEST_TOO_LARGE,    "The request is larger than the service accepts" },
        { TB_ERROR_SESSION_NAME_IN_USE,  "Another of your sessions is running under that unique_session_name" },
        { TB_ERROR_PROCESS_NOT_YOURS,    "Sampling another user's process needs the administrator's authorization" },
        { TB_ERROR_EVENT_NOT_ALLOWED,
          "Recording that kernel event needs the administrator's authorization (org.tracebus.manage)" },
        { TB_ERROR_INVALID_ROTATION,     "The rotation options are not valid for this session" },
        { TB_ERROR_INVALID_TRIGGER,      "A trigger name must be 1 to 64 bytes without control characters" },
        { TB_ERROR_CLONE_RATE_LIMITED,
          "A snapshot of that session is being written or was taken moments ago; try again shortly" },
        { SD_BUS_ERROR_ACCESS_DENIED,    "Not authorized: polkit refused this action" },
        { SD_BUS_ERROR_INTERACTIVE_AUTHORIZATION_REQUIRED,
          "Authentication is required, but no authentication agent may ask for it" },
        { SD_BUS_ERROR_SERVICE_UNKNOWN,  "The tracebus service is not installed or could not be started" },
        { SD_BUS_ERROR_INVALID_ARGS,     "The request was malformed" },
};

const char *tracebus_error_explain(const char *name) {
        if (!name)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(explanations); i++)
                if (strcmp(explanations[i].name, name) == 0)
                        return explanations[i].text;
        return NULL;
}
