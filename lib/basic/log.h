/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <syslog.h>

#include "macro.h"

void log_set_max_level(int level);
int log_get_max_level(void);

/* Logs a sentence to stderr with a syslog priority prefix (journald reads it). %m expands to
 * strerror(-error). Returns -abs(error), so that callers can `return log_error_errno(r, ...)`. */
int log_internal(int level, int error, const char *func, const char *format, ...) _printf_(4, 5);

#define log_full_errno(level, error, ...) log_internal((level), (error), __func__, __VA_ARGS__)
#define log_debug(...) log_full_errno(LOG_DEBUG, 0, __VA_ARGS__)
#define log_info(...) log_full_errno(LOG_INFO, 0, __VA_ARGS__)
#define log_notice(...) log_full_errno(LOG_NOTICE, 0, __VA_ARGS__)
#define log_warning(...) log_full_errno(LOG_WARNING, 0, __VA_ARGS__)
#define log_error(...) log_full_errno(LOG_ERR, 0, __VA_ARGS__)
#define log_debug_errno(e, ...) log_full_errno(LOG_DEBUG, (e), __VA_ARGS__)
#define log_info_errno(e, ...) log_full_errno(LOG_INFO, (e), __VA_ARGS__)
#define log_warning_errno(e, ...) log_full_errno(LOG_WARNING, (e), __VA_ARGS__)
#define log_error_errno(e, ...) log_full_errno(LOG_ERR, (e), __VA_ARGS__)
#define log_oom() log_error_errno(-ENOMEM, "Out of memory.")
