/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "log.h"

static int max_level = LOG_INFO;

void log_set_max_level(int level) {
        max_level = level;
}

int log_get_max_level(void) {
        return max_level;
}

int log_internal(int level, int error, const char *func, const char *format, ...) {
        int saved_errno = errno;
        char buf[2048];
        va_list ap;

        if (error < 0)
                error = -error;
        if (level > max_level)
                return -error;

        /* %m refers to the error we were handed, not whatever errno happens to hold. */
        errno = error;
        va_start(ap, format);
        (void) vsnprintf(buf, sizeof(buf), format, ap);
        va_end(ap);

        /* The "<N>" prefix lets journald keep the priority of each line. */
        fprintf(stderr, "<%d>%s\n", level, buf);
        errno = saved_errno;
        return -error;
}
