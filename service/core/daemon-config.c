/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <dirent.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon-config.h"
#include "fd-util.h"
#include "log.h"

#define CONFIG_FILE_MAX (64u * 1024u)

void daemon_config_init(DaemonConfig *c) {
        *c = (DaemonConfig) {
                .limits = {
                        .max_sessions = DAEMON_DEFAULT_MAX_SESSIONS,
                        .max_sessions_per_uid = DAEMON_DEFAULT_MAX_SESSIONS_PER_UID,
                        .trace_dir_quota_bytes = DAEMON_DEFAULT_TRACE_DIR_QUOTA_BYTES,
                        .max_buffer_size_kb = SESSION_MAX_BUFFER_SIZE_KB,
                        .max_pending = DAEMON_DEFAULT_MAX_PENDING,
                        .max_pending_per_uid = DAEMON_DEFAULT_MAX_PENDING_PER_UID,
                        .max_files_per_uid = DAEMON_DEFAULT_MAX_FILES_PER_UID,
                        .max_buffer_memory_bytes = 0,
                        .max_process_entries = DAEMON_DEFAULT_MAX_PROCESS_ENTRIES,
                        .output_timeout_usec = DAEMON_DEFAULT_OUTPUT_TIMEOUT_USEC,
                        .clone_min_interval_usec = DAEMON_DEFAULT_CLONE_MIN_INTERVAL_USEC,
                        .stop_drain_threads = DAEMON_DEFAULT_STOP_DRAIN_THREADS,
                        .producer_handshake_timeout_usec = DAEMON_DEFAULT_PRODUCER_HANDSHAKE_TIMEOUT_USEC,
                },
                .idle_timeout_usec = DAEMON_DEFAULT_IDLE_TIMEOUT_USEC,
        };
}

/* A plain count from @min to @max: digits, then blanks at most. */
static int parse_count(const char *v, unsigned min, unsigned max, unsigned *ret) {
        char *end;
        uint64_t n;

        if (!isdigit((unsigned char) *v))
                return -EINVAL;
        errno = 0;
        n = strtoull(v, &end, 10);
        if (errno == ERANGE)
                return -ERANGE;
        while (*end == ' ' || *end == '\t')
                end++;
        if (*end)
                return -EINVAL;
        if (n < min || n > max)
                return -ERANGE;
        *ret = (unsigned) n;
        return 0;
}

static int parse_sessions(const char *v, void *data) {
        return parse_count(v, 1, DAEMON_MAX_SESSIONS_LIMIT, data);
}

static int parse_pending(const char *v, void *data) {
        return parse_count(v, 1, DAEMON_MAX_PENDING_LIMIT, data);
}

static int parse_files(const char *v, void *data) {
        return parse_count(v, DAEMON_MIN_FILES_PER_UID, 1u << 20, data);
}

static int parse_quota(const char *v, void *data) {
        uint64_t n;
        int r = parse_size(v, 1, &n);

        if (r < 0)
                return r;
        if (n == 0)
                return -ERANGE;
        *(uint64_t *) data = n;
        return 0;
}

/* Empty: the default, a fraction of MemTotal, settled at start. */
static int parse_buffer_memory(const char *v, void *data) {
        if (!*v) {
                *(uint64_t *) data = 0;
                return 0;
        }
        return parse_quota(v, data);
}

static int parse_buffer_kb(const char *v, void *data) {
        uint64_t n;
        /* A bare number is in KiB already; "64M" means 64 MiB, that is 65536 KiB. */
        int r = parse_size(v, 1024, &n);

        if (r < 0)
                return r;
        n /= 1024;
        if (n < 1 || n > SESSION_MAX_BUFFER_SIZE_KB)
                return -ERANGE;
        *(uint32_t *) data = (uint32_t) n;
        return 0;
}

static int parse_idle(const char *v, void *data) {
        uint64_t usec;
        int r = parse_timespan(v, &usec);

        if (r < 0)
                return r;
        /* "infinity" and 0 both mean: never exit for being idle. */
        *(uint64_t *) data = usec == UINT64_MAX ? 0 : usec;
        return 0;
}

/* max_process_entries is a uint32_t: the same type as unsigned on Linux. */
static int parse_process_entries(const char *v, void *data) {
        return parse_count(v, DAEMON_MIN_PROCESS_ENTRIES, DAEMON_MAX_PROCESS_ENTRIES_LIMIT, data);
}

static int parse_output_timeout(const char *v, void *data) {
        uint64_t usec;
        int r = parse_timespan(v, &usec);

        if (r < 0)
                return r;
        /* 0 would end every session whose reader pauses at all. */
        if (usec == 0)
                return -ERANGE;
        *(uint64_t *) data = usec;
        return 0;
}

/* ProducerHandshakeTimeoutSec=: 0 or infinity would let a connection that never speaks
 * hold its user's producer slot for good. */
static int parse_handshake_timeout(const char *v, void *data) {
        uint64_t usec;
        int r = parse_timespan(v, &usec);

        if (r < 0)
                return r;
        if (usec == 0 || usec > DAEMON_MAX_PRODUCER_HANDSHAKE_TIMEOUT_USEC)
                return -ERANGE;
        *(uint64_t *) data = usec;
        return 0;
}

/* CloneMinIntervalSec=: 0 allows clones back to back (still one at a time). */
static int parse_clone_interval(const char *v, void *data) {
        uint64_t usec;
        int r = parse_timespan(v, &usec);

        if (r < 0)
                return r;
        if (usec == UINT64_MAX)
                return -ERANGE;
        *(uint64_t *) data = usec;
        return 0;
}

static int parse_stop_drain_threads(const char *v, void *data) {
        return parse_count(v, 1, DAEMON_MAX_STOP_DRAIN_THREADS, data);
}

typedef struct ConfigItem {
        const char *section;
        const char *key;
        int (*parse)(const char *value, void *data);
        size_t offset;
        const char *range;               /* for the warning */
} ConfigItem;

static const ConfigItem config_items[] = {
        { "Limits",  "MaxSessions",        parse_sessions,  offsetof(DaemonConfig, limits.max_sessions),          "1 to 1024" },
        { "Limits",  "MaxSessionsPerUser", parse_sessions,  offsetof(DaemonConfig, limits.max_sessions_per_uid),  "1 to 1024" },
        { "Limits",  "TraceDirQuota",      parse_quota,     offsetof(DaemonConfig, limits.trace_dir_quota_bytes), "bytes with an optional K, M, G or T, above 0" },
        { "Limits",  "MaxBufferSizeKB",    parse_buffer_kb, offsetof(DaemonConfig, limits.max_buffer_size_kb),    "1 to 65536 (KiB per CPU)" },
        { "Service", "IdleTimeoutSec",     parse_idle,      offsetof(DaemonConfig, idle_timeout_usec),            "a time span such as 30s, 2min, 0 or infinity" },
        { "Limits",  "MaxPending",         parse_pending,   offsetof(DaemonConfig, limits.max_pending),           "1 to 120" },
        { "Limits",  "MaxPendingPerUser",   parse_pending,   offsetof(DaemonConfig, limits.max_pending_per_uid),   "1 to 120, at most half of MaxPending" },
        { "Limits",  "MaxFilesPerUser",     parse_files,     offsetof(DaemonConfig, limits.max_files_per_uid),     "16 to 1048576" },
        { "Limits",  "MaxBufferMemory",    parse_buffer_memory, offsetof(DaemonConfig, limits.max_buffer_memory_bytes), "bytes with an optional K, M, G or T, above 0, or empty" },
        { "Limits",  "MaxProcessEntries",  parse_process_entries, offsetof(DaemonConfig, limits.max_process_entries), "64 to 4194304" },
        { "Limits",  "OutputTimeoutSec",   parse_output_timeout, offsetof(DaemonConfig, limits.output_timeout_usec), "a time span above 0 such as 30s, 500ms or infinity" },
        { "Limits",  "CloneMinIntervalSec", parse_clone_interval, offsetof(DaemonConfig, limits.clone_min_interval_usec), "a time span such as 5s, 500ms or 0" },
        { "Limits",  "ProducerHandshakeTimeoutSec", parse_handshake_timeout, offsetof(DaemonConfig, limits.producer_handshake_timeout_usec), "a time span above 0, at most 5min" },
        { "Limits",  "StopDrainThreads",   parse_stop_drain_threads, offsetof(DaemonConfig, limits.stop_drain_threads), "1 to 256" },
};

int daemon_config_check(DaemonConfig *c) {
        ManagerLimits *l = &c->limits;
        unsigned share = MAX(l->max_pending / 2, 1u);

        /* With a share above half, one user's calls (held by an authentication dialog, or
         * a polkitd that hangs) could leave the next user nothing. MaxPending=1 has no
         * half: that one call is everybody's. */
        if (l->max_pending >= 2 && l->max_pending_per_uid > share) {
                log_warning("MaxPendingPerUser=%u is more than half of MaxPending=%u, so one user could take "
                            "every call waiting for polkit; using %u.", l->max_pending_per_uid, l->max_pending, share);
                l->max_pending_per_uid = share;
                return 1;
        }
        return 0;
}

/* The table's own copy of the name, so that it outlives the line. */
static const char *known_section(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(config_items); i++)
                if (strcmp(config_items[i].section, name) == 0)
                        return config_items[i].section;
        return NULL;
}

static const ConfigItem *find_item(const char *section, const char *key) {
        for (size_t i = 0; i < ELEMENTSOF(config_items); i++)
                if (strcmp(config_items[i].section, section) == 0 && strcmp(config_items[i].key, key) == 0)
                        return &config_items[i];
        return NULL;
}

static char *strip(char *s) {
        char *e;

        while (isspace((unsigned char) *s))
                s++;
        e = s + strlen(s);
        while (e > s && isspace((unsigned char) e[-1]))
                *--e = '\0';
        return s;
}

/* One line: 0 when used (or blank), -EINVAL when ignored (and logged). @section is the
 * current section: a static name, "" before any, NULL in an unknown one. */
static int parse_line(DaemonConfig *c, char *line, const char *fn, unsigned n, const char **section) {
        const ConfigItem *item;
        char *eq, *key, *value;
        int r;

        line = strip(line);
        if (!*line || *line == '#' || *line == ';')
                return 0;
        if (*line == '[') {
                size_t len = strlen(line);
                if (len < 3 || line[len - 1] != ']')
                        return log_warning_errno(-EINVAL, "%s:%u: invalid section header '%s', ignoring.", fn, n, line);
                line[len - 1] = '\0';
                *section = known_section(line + 1);
                if (*section)
                        return 0;
                return log_warning_errno(-EINVAL, "%s:%u: unknown section [%s], ignoring its settings.", fn, n, line + 1);
        }
        eq = strchr(line, '=');
        if (!eq)
                return log_warning_errno(-EINVAL, "%s:%u: not a key=value line, ignoring: %s", fn, n, line);
        *eq = '\0';
        key = strip(line);
        value = strip(eq + 1);
        if (!*section)
                return -EINVAL;          /* in an unknown section: reported at its header */
        if (!**section)
                return log_warning_errno(-EINVAL, "%s:%u: %s= outside of a section, ignoring.", fn, n, key);
        item = find_item(*section, key);
        if (!item)
                return log_warning_errno(-EINVAL, "%s:%u: unknown setting %s= in [%s], ignoring.", fn, n, key, *section);
        r = item->parse(value, (uint8_t *) c + item->offset);
        if (r < 0)
                return log_warning_errno(-EINVAL, "%s:%u: invalid %s=%s (expected %s), keeping the previous value.",
                                         fn, n, key, value, item->range);
        return 0;
}

int daemon_config_parse(DaemonConfig *c, const char *text, const char *filename) {
        _cleanup_free_ char *copy = strdup(text);
        const char *section = "";
        unsigned n = 0;
        int ignored = 0;

        if (!copy)
                return -ENOMEM;
        /* strsep, not strtok: empty lines must count for the line numbers. */
        for (char *p = copy, *line; (line = strsep(&p, "\n")); ) {
                if (parse_line(c, line, filename, ++n, &section) < 0)
                        ignored++;
        }
        return ignored;
}

static int load_file(DaemonConfig *c, const char *path, bool must_exist) {
        _cleanup_free_ char *text = NULL;
        int r;

        r = read_full_file(path, CONFIG_FILE_MAX, &text, NULL);
        if (r == -ENOENT && !must_exist) {
                log_debug("No %s, using the built-in defaults for it.", path);
                return 0;
        }
        if (r < 0) {
                log_warning_errno(r, "Failed to read %s, ignoring it: %m", path);
                return 0;
        }
        r = daemon_config_parse(c, text, path);
        if (r < 0)
                return r;
        log_debug("Read %s (%d line(s) ignored).", path, r);
        return 1;
}

static int conf_filter(const struct dirent *de) {
        size_t len = strlen(de->d_name);

        return de->d_name[0] != '.' && len > 5 && strcmp(de->d_name + len - 5, ".conf") == 0;
}

int daemon_config_load(DaemonConfig *c, const char *dir) {
        _cleanup_free_ char *main_path = NULL, *dropin_dir = NULL;
        struct dirent **list = NULL;
        int r, n, files = 0;

        if (asprintf(&main_path, "%s/tracebusd.conf", dir) < 0 ||
            asprintf(&dropin_dir, "%s/tracebusd.conf.d", dir) < 0)
                return -ENOMEM;
        r = load_file(c, main_path, false);
        if (r < 0)
                return r;
        files += r;

        n = scandir(dropin_dir, &list, conf_filter, alphasort);
        if (n < 0 && errno != ENOENT)
                log_warning_errno(-errno, "Failed to list %s, ignoring its drop-ins: %m", dropin_dir);
        for (int i = 0; i < n; i++) {
                _cleanup_free_ char *path = NULL;

                if (r >= 0 && asprintf(&path, "%s/%s", dropin_dir, list[i]->d_name) < 0)
                        r = -ENOMEM;
                if (r >= 0)
                        r = load_file(c, path, true);
                if (r > 0)
                        files += r;
                free(list[i]);
        }
        free(list);
        return r < 0 ? r : files;
}
