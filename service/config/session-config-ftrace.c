/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * FtraceConfig's options beyond events and buffer sizes, read as
 * Perfetto v58's protos/perfetto/config/ftrace/ftrace_config.proto describes them. Each
 * session has its own tracefs instance, so the options Perfetto keeps for one exclusive
 * session at a time (tids_to_trace, tracefs_options, tracing_cpumask) are per session
 * here. What the service cannot do as asked is a warning; a bad value is an error that
 * names the field. ftrace-options.c writes the result into the instance.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "fd-util.h"
#include "session-config.h"
#include "strv.h"
#include "syscall-table.h"

#define MAX_SYSCALL_EVENTS 256u     /* the kernel takes a filter of at most a page */
#define MAX_TIDS_TO_TRACE 4096u
#define MAX_CPUMASK_CHARS 1024u     /* 4096 CPUs */
#define MAX_TRACEFS_OPTIONS 64u
/* Each rule is compared with every ftrace/print the session records: few and short. */
#define MAX_PRINT_RULES 64u
#define MAX_PRINT_PREFIX 256u
#define SYSCALL_NR_LIMIT 4096

/* tracefs options a session may set in its own instance: each exists in instances and
 * changes only what that instance records. Not: the options only the top level has
 * (record-cmd: the machine's saved comms), those that reach beyond the instance
 * (trace_printk_dest, function tracing), those that add raw kernel or user addresses to
 * the records (stacktrace, userstacktrace), and the text-output ones, which change
 * nothing in trace_pipe_raw. */
static const char *const allowed_tracefs_options[] = {
        "event-fork", "record-tgid", "overwrite", "markers", "copy_trace_marker",
};

void session_config_ftrace_done(SessionConfig *c) {
        c->syscall_filter = mfree(c->syscall_filter);
        c->tids_to_trace = mfree(c->tids_to_trace);
        c->n_tids_to_trace = 0;
        c->tracing_cpumask = mfree(c->tracing_cpumask);
        c->tracefs_options = strv_free(c->tracefs_options);
        for (size_t i = 0; i < c->n_print_rules; i++) {
                free((char *) c->print_rules[i].type);
                free((char *) c->print_rules[i].prefix);
        }
        c->print_rules = mfree(c->print_rules);
        c->n_print_rules = 0;
}

static long syscall_lookup(const char *name) {
        /* Perfetto's names carry the "sys_" prefix ("sys_read"); the bare name is taken too. */
        if (strncmp(name, "sys_", 4) == 0)
                name += 4;
        for (size_t i = 0; i < ELEMENTSOF(syscall_table); i++)
                if (strcmp(syscall_table[i].name, name) == 0)
                        return syscall_table[i].nr;
        return -1;
}

/* The syscall numbers of every data source, as one set. */
typedef struct SyscallSet {
        uint64_t bits[SYSCALL_NR_LIMIT / 64];
        bool requested;
} SyscallSet;

static int collect_syscalls(const Tracebus__FtraceConfig *fc, SyscallSet *set, SessionConfig *c, char **ret_error) {
        struct utsname u = {};

        if (fc->n_syscall_events > MAX_SYSCALL_EVENTS)
                return session_config_error(ret_error, "syscall_events: %zu names, at most %u are allowed",
                                    fc->n_syscall_events, MAX_SYSCALL_EVENTS);
        (void) uname(&u);
        for (size_t i = 0; i < fc->n_syscall_events; i++) {
                const char *n = fc->syscall_events[i];
                long nr = syscall_lookup(n);

                set->requested = true;
                if (nr < 0 || nr >= SYSCALL_NR_LIMIT) {
                        if (session_config_warn(c, "syscall_events: '%.64s' is not a syscall of %s: skipped", n,
                                                u.machine) < 0)
                                return -ENOMEM;
                        continue;
                }
                set->bits[nr / 64] |= UINT64_C(1) << (nr % 64);
        }
        return 0;
}

/* As Perfetto v43+: syscall_events alone enables raw_syscalls/sys_{enter,exit}, with a
 * filter on the syscall number. */
static int apply_syscalls(const SyscallSet *set, const char *root, SessionConfig *c) {
        _cleanup_free_ char *filter = NULL;
        size_t size = 0;
        FILE *f;
        bool first = true;
        int r;

        if (!set->requested)
                return 0;
        f = open_memstream(&filter, &size);
        if (!f)
                return -ENOMEM;
        for (int nr = 0; nr < SYSCALL_NR_LIMIT; nr++)
                if (set->bits[nr / 64] & (UINT64_C(1) << (nr % 64))) {
                        fprintf(f, "%sid == %d", first ? "" : " || ", nr);
                        first = false;
                }
        if (first)      /* no known name: nothing may match */
                fputs("id == -1", f);
        if (fclose(f) != 0)
                return -ENOMEM;
        c->syscall_filter = TAKE_PTR(filter);

        for (size_t i = 0; i < 2; i++) {
                const char *e = i == 0 ? "raw_syscalls/sys_enter" : "raw_syscalls/sys_exit";
                _cleanup_strv_free_ char **found = NULL;

                r = session_config_list_events(root, e, &found);
                if (r < 0)
                        return r;
                if (strv_length(found) == 0) {
                        r = session_config_warn(c, "syscall_events: ftrace event '%s' does not exist on this kernel: skipped", e);
                } else
                        r = strv_extend_unique(&c->events, e);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int load_tids(const Tracebus__FtraceConfig *fc, SessionConfig *c, char **ret_error) {
        if (fc->n_tids_to_trace == 0)
                return 0;
        if (fc->n_tids_to_trace > MAX_TIDS_TO_TRACE)
                return session_config_error(ret_error, "tids_to_trace: %zu thread ids, at most %u are allowed",
                                    fc->n_tids_to_trace, MAX_TIDS_TO_TRACE);
        for (size_t i = 0; i < fc->n_tids_to_trace; i++)
                if (fc->tids_to_trace[i] == 0 || fc->tids_to_trace[i] > (1u << 22))   /* PID_MAX_LIMIT */
                        return session_config_error(ret_error, "tids_to_trace: %u is not a thread id", fc->tids_to_trace[i]);
        if (c->tids_to_trace)
                return session_config_warn(c, "tids_to_trace of a second linux.ftrace data source ignored: "
                                           "the session's instance takes the first one's");
        c->tids_to_trace = malloc(fc->n_tids_to_trace * sizeof(uint32_t));
        if (!c->tids_to_trace)
                return -ENOMEM;
        memcpy(c->tids_to_trace, fc->tids_to_trace, fc->n_tids_to_trace * sizeof(uint32_t));
        c->n_tids_to_trace = fc->n_tids_to_trace;
        return 0;
}

/* The CPUs the kernel keeps buffers for: the kernel refuses a mask naming others. */
static int count_cpus(const char *root) {
        int n = 0;

        for (;; n++) {
                _cleanup_free_ char *path = NULL;

                if (asprintf(&path, "%s/per_cpu/cpu%d", root, n) < 0 || access(path, F_OK) < 0)
                        return n;
        }
}

/* The highest CPU a mask of hex digits (commas between groups) selects, -1 if none. */
static int cpumask_highest_cpu(const char *m) {
        int bit = 0, highest = -1;

        for (const char *p = m + strlen(m); p > m; ) {
                char ch = *--p;
                int v;

                if (ch == ',')
                        continue;
                v = isdigit((unsigned char) ch) ? ch - '0' : tolower((unsigned char) ch) - 'a' + 10;
                for (int b = 0; b < 4; b++)
                        if (v & (1 << b))
                                highest = bit + b;
                bit += 4;
        }
        return highest;
}

/* The format of tracing_cpumask: hex digits, in groups of 8 separated by commas. */
static int load_cpumask(const Tracebus__FtraceConfig *fc, const char *root, SessionConfig *c, char **ret_error) {
        const char *m = fc->tracing_cpumask;
        int n_cpus = count_cpus(root);
        bool any = false;

        if (!m)
                return 0;
        if (strlen(m) == 0 || strlen(m) > MAX_CPUMASK_CHARS)
                return session_config_error(ret_error, "tracing_cpumask: expected 1 to %u hex digits", MAX_CPUMASK_CHARS);
        for (const char *p = m; *p; p++) {
                if (!isxdigit((unsigned char) *p) && *p != ',')
                        return session_config_error(ret_error, "tracing_cpumask: '%.64s' is not a hex CPU mask", m);
                any = any || (isxdigit((unsigned char) *p) && *p != '0');
        }
        if (!any)
                return session_config_error(ret_error, "tracing_cpumask: '%.64s' selects no CPU", m);
        if (cpumask_highest_cpu(m) >= n_cpus)
                return session_config_error(ret_error, "tracing_cpumask: '%.64s' names CPUs this machine lacks (it has %d)",
                                    m, n_cpus);
        if (c->tracing_cpumask)
                return session_config_warn(c, "tracing_cpumask of a second linux.ftrace data source ignored: "
                                           "the session's instance takes the first one's");
        c->tracing_cpumask = strdup(m);
        return c->tracing_cpumask ? 0 : -ENOMEM;
}

static bool tracefs_option_allowed(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(allowed_tracefs_options); i++)
                if (strcmp(allowed_tracefs_options[i], name) == 0)
                        return true;
        return false;
}

static int load_tracefs_option(const Tracebus__FtraceConfig__TracefsOption *o, size_t i, const char *root,
                               SessionConfig *c, char **ret_error) {
        _cleanup_free_ char *path = NULL;
        bool on = o->state == TRACEBUS__FTRACE_CONFIG__TRACEFS_OPTION__STATE__STATE_ENABLED;

        if (!o->name || !o->name[0])
                return session_config_error(ret_error, "tracefs_options[%zu].name: missing", i);
        if (!o->has_state || (!on && o->state != TRACEBUS__FTRACE_CONFIG__TRACEFS_OPTION__STATE__STATE_DISABLED))
                return session_config_error(ret_error, "tracefs_options[%zu].state: expected STATE_ENABLED or STATE_DISABLED", i);
        if (!tracefs_option_allowed(o->name))
                return session_config_warn(c, "tracefs option '%.64s' is not one a session may set "
                                           "(allowed: event-fork, record-tgid, overwrite, markers, copy_trace_marker): "
                                           "skipped", o->name);
        /* The name is one of the list above: no caller's path is opened. */
        if (asprintf(&path, "%s/options/%s", root, o->name) < 0)
                return -ENOMEM;
        if (access(path, F_OK) < 0)
                return session_config_warn(c, "tracefs option '%s' does not exist on this kernel: skipped", o->name);
        if (strv_extend(&c->tracefs_options, o->name) < 0 || strv_extend(&c->tracefs_options, on ? "1" : "0") < 0)
                return -ENOMEM;
        return 0;
}

static int load_tracefs_options(const Tracebus__FtraceConfig *fc, const char *root, SessionConfig *c,
                                char **ret_error) {
        int r;

        if (fc->n_tracefs_options > MAX_TRACEFS_OPTIONS)
                return session_config_error(ret_error, "tracefs_options: %zu entries, at most %u are allowed",
                                    fc->n_tracefs_options, MAX_TRACEFS_OPTIONS);
        for (size_t i = 0; i < fc->n_tracefs_options; i++) {
                r = load_tracefs_option(fc->tracefs_options[i], i, root, c, ret_error);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int load_print_rule(const Tracebus__FtraceConfig__PrintFilter__Rule *rule, size_t i, FtracePrintRule *out,
                           char **ret_error) {
        const char *prefix = rule->prefix, *type = NULL;

        if (rule->match_case == TRACEBUS__FTRACE_CONFIG__PRINT_FILTER__RULE__MATCH_ATRACE_MSG) {
                type = rule->atrace_msg->type ?: "";
                prefix = rule->atrace_msg->prefix;
        } else if (rule->match_case != TRACEBUS__FTRACE_CONFIG__PRINT_FILTER__RULE__MATCH_PREFIX)
                return session_config_error(ret_error, "print_filter.rules[%zu]: expected prefix or atrace_msg", i);
        prefix = prefix ?: "";
        if (strlen(prefix) > MAX_PRINT_PREFIX || (type && strlen(type) > MAX_PRINT_PREFIX))
                return session_config_error(ret_error, "print_filter.rules[%zu]: longer than %u bytes", i, MAX_PRINT_PREFIX);
        out->allow = rule->allow;
        out->prefix = strdup(prefix);
        out->type = type ? strdup(type) : NULL;
        return out->prefix && (!type || out->type) ? 0 : -ENOMEM;
}

static int load_print_filter(const Tracebus__FtraceConfig *fc, SessionConfig *c, char **ret_error) {
        const Tracebus__FtraceConfig__PrintFilter *pf = fc->print_filter;
        int r;

        if (!pf)
                return 0;
        if (pf->n_rules > MAX_PRINT_RULES)
                return session_config_error(ret_error, "print_filter: %zu rules, at most %u are allowed", pf->n_rules,
                                    MAX_PRINT_RULES);
        if (c->print_rules)
                return session_config_warn(c, "print_filter of a second linux.ftrace data source ignored: "
                                           "the session's parser takes the first one's");
        c->print_rules = calloc(MAX(pf->n_rules, 1u), sizeof(FtracePrintRule));
        if (!c->print_rules)
                return -ENOMEM;
        for (size_t i = 0; i < pf->n_rules; i++) {
                r = load_print_rule(pf->rules[i], i, &c->print_rules[i], ret_error);
                c->n_print_rules = i + 1;       /* what to free */
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Whether the kernel is at least @major.@minor (drain_buffer_percent needs 6.9). */
static bool kernel_at_least(unsigned major, unsigned minor) {
        struct utsname u;
        unsigned a = 0, b = 0;

        if (uname(&u) < 0 || sscanf(u.release, "%u.%u", &a, &b) < 2)
                return false;
        return a > major || (a == major && b >= minor);
}

static bool file_has_word(const char *root, const char *file, const char *word) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        size_t len = 0;

        if (asprintf(&path, "%s/%s", root, file) < 0 || read_full_file(path, 4096, &text, &len) < 0)
                return false;
        for (char *t = strtok(text, " []\n"); t; t = strtok(NULL, " []\n"))
                if (strcmp(t, word) == 0)
                        return true;
        return false;
}

static int load_clock_and_drain(const Tracebus__FtraceConfig *fc, const char *root, SessionConfig *c,
                                char **ret_error) {
        if (fc->use_monotonic_raw_clock) {
                if (file_has_word(root, "trace_clock", "mono_raw"))
                        c->mono_raw_clock = true;
                else if (session_config_warn(c, "use_monotonic_raw_clock: this kernel has no mono_raw trace "
                                             "clock: the boot clock is used") < 0)
                        return -ENOMEM;
        }
        if (!fc->has_drain_buffer_percent || fc->drain_buffer_percent == 0)
                return 0;
        if (fc->drain_buffer_percent > 100)
                return session_config_error(ret_error, "drain_buffer_percent %u is outside 1..100", fc->drain_buffer_percent);
        /* Perfetto: "Currently does nothing on Linux kernels below v6.9". */
        if (!kernel_at_least(6, 9))
                return session_config_warn(c, "drain_buffer_percent: kernels before 6.9 do not wake a reader at a "
                                           "buffer watermark: only drain_period_ms applies");
        c->drain_buffer_percent = MAX(c->drain_buffer_percent, fc->drain_buffer_percent);
        return 0;
}

static int drop_event(SessionConfig *c, const char *event) {
        size_t n = strv_length(c->events), j = 0;

        if (n == 0)
                return 0;
        for (size_t i = 0; i < n; i++) {
                if (strcmp(c->events[i], event) == 0)
                        free(c->events[i]);
                else
                        c->events[j++] = c->events[i];
        }
        c->events[j] = NULL;
        return (int) (n - j);
}

/* Perfetto v58: with throttle_rss_stat, kmem/rss_stat is replaced by kmem/rss_stat_throttled
 * where the kernel has it (Android kernels), else recorded as it is. */
static int load_rss_stat(bool throttle, const char *root, SessionConfig *c) {
        _cleanup_strv_free_ char **found = NULL;
        int r;

        if (!throttle || !strv_contains(c->events, "kmem/rss_stat"))
                return 0;
        r = session_config_list_events(root, "kmem/rss_stat_throttled", &found);
        if (r < 0)
                return r;
        if (strv_length(found) == 0)
                return session_config_warn(c, "throttle_rss_stat: this kernel has no kmem/rss_stat_throttled: "
                                           "kmem/rss_stat is recorded unthrottled");
        (void) drop_event(c, "kmem/rss_stat");
        return strv_extend_unique(&c->events, "kmem/rss_stat_throttled");
}

/* disable_generic_events: Perfetto leaves out the events it has no proto for. Ours are the
 * events tracebus writes as GenericFtraceEvent, more than Perfetto's: one warning names
 * them. */
static int load_generic_events(bool disable, SessionConfig *c) {
        _cleanup_strv_free_ char **dropped = NULL;
        _cleanup_free_ char *list = NULL;
        size_t n = 0;

        if (!disable)
                return 0;
        for (size_t i = 0; c->events && c->events[i]; ) {
                char name[512], *slash;

                snprintf(name, sizeof(name), "%s", c->events[i]);
                slash = strchr(name, '/');
                *slash = 0;
                if (ftrace_event_is_typed(name, slash + 1)) {
                        i++;
                        continue;
                }
                *slash = '/';
                if (n++ < 8 && strv_extend(&dropped, name) < 0)
                        return -ENOMEM;
                (void) drop_event(c, name);
        }
        if (n == 0)
                return 0;
        list = strv_join(dropped, ", ");
        if (!list)
                return -ENOMEM;
        return session_config_warn(c, "disable_generic_events: %zu events without a typed encoding skipped: %s%s", n,
                                   list, n > 8 ? ", ..." : "");
}

/* The fields that change nothing here, each said once. */
static int warn_moot_fields(const Tracebus__FtraceConfig *fc, SessionConfig *c) {
        int r = 0;

        if (fc->preserve_ftrace_buffer)
                r = session_config_warn(c, "preserve_ftrace_buffer: each session records into a fresh tracefs "
                                        "instance, which holds nothing from before: ignored");
        if (r >= 0 && fc->instance_name)
                r = session_config_warn(c, "instance_name '%.64s': each session records into a tracefs instance "
                                        "of its own, never into a named one: ignored", fc->instance_name);
        if (r >= 0 && fc->debug_ftrace_abi)
                r = session_config_warn(c, "debug_ftrace_abi: pages that cannot be parsed are reported as "
                                        "FtraceEventBundle errors, not written raw: ignored");
        if (r >= 0 && fc->has_denser_generic_event_encoding && fc->denser_generic_event_encoding)
                r = session_config_warn(c, "denser_generic_event_encoding: events without a typed encoding are "
                                        "written as GenericFtraceEvent, which trace_processor reads alike");
        return r;
}

static int load_one(const Tracebus__FtraceConfig *fc, const char *root, SyscallSet *syscalls, SessionConfig *c,
                    char **ret_error) {
        int r;

        r = collect_syscalls(fc, syscalls, c, ret_error);
        if (r >= 0)
                r = load_tids(fc, c, ret_error);
        if (r >= 0)
                r = load_cpumask(fc, root, c, ret_error);
        if (r >= 0)
                r = load_tracefs_options(fc, root, c, ret_error);
        if (r >= 0)
                r = load_print_filter(fc, c, ret_error);
        if (r >= 0)
                r = load_clock_and_drain(fc, root, c, ret_error);
        if (r >= 0)
                r = warn_moot_fields(fc, c);
        /* Perfetto v43+: a lower bound lets the service pick its default when larger. */
        if (r >= 0 && fc->buffer_size_lower_bound)
                c->buffer_size_kb = MAX(c->buffer_size_kb, SESSION_DEFAULT_BUFFER_SIZE_KB);
        return r;
}

int session_config_load_ftrace_options(const Tracebus__TraceConfig *tc, const char *root, SessionConfig *c,
                                       char **ret_error) {
        const Tracebus__FtraceConfig *fc;
        SyscallSet syscalls = {};
        bool throttle = false, no_generic = false;
        int r;

        FOREACH_FTRACE_CONFIG(fc, tc) {
                r = load_one(fc, root, &syscalls, c, ret_error);
                if (r < 0)
                        return r;
                throttle = throttle || fc->throttle_rss_stat;
                no_generic = no_generic || fc->disable_generic_events;
        }
        r = apply_syscalls(&syscalls, root, c);
        if (r >= 0)
                r = load_rss_stat(throttle, root, c);
        if (r >= 0)
                r = load_generic_events(no_generic, c);
        return r < 0 ? r : 0;
}
