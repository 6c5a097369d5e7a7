/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Which kernel events a caller without org.tracebus.manage may record: the events a
 * desktop or server tracing user needs, each group with the reason it shows no more than
 * that user could read on the machine anyway, in the manner of Android's list of the
 * events its shell may enable (atrace.rc) and Perfetto's atrace categories. Every event
 * not allowed here is refused, a group nobody reviewed included, and so is every dynamic
 * event (a kprobe, uprobe, eprobe or synthetic event someone defined for the whole
 * machine, whatever its group); the session's own kprobes are made after this check.
 * Kernel addresses and the numbers that may hold one are hashed for such a caller on top
 * of this (lib/ftrace/ftrace-field-privacy.c).
 *
 * Named in a config (or the Events option), a refused event refuses the Start
 * (EventNotAllowed, naming it); chosen only by a group's glob or an atrace category, it is
 * left out with a warning, as Perfetto leaves out the events a kernel lacks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/event-index.h"
#include "session-config.h"
#include "strv.h"

/* Refused events the Start refusal names; the rest are counted. */
#define REFUSED_NAMED_SHOWN 8u
/* Refused events a warning names; the rest of the group are counted. */
#define REFUSED_WARNING_SHOWN 4u
/* FtraceStats.failed_ftrace_events keeps the first few. */
#define FAILED_EVENTS_KEPT 32u

typedef struct EventRule {
        const char *event;        /* "group/name", or "group/ *" for the group's other events */
        bool allowed;
        const char *reason;
} EventRule;

static const EventRule record_only_rules[] = {
        { "sched/*", true, "scheduling of every task, as /proc/PID/stat and schedstat show every user" },
        { "task/*", true, "tasks made and renamed, the pids and comms /proc shows every user" },
        { "irq/*", true, "interrupts, softirqs and tasklets per CPU, as /proc/interrupts and /proc/softirqs count them" },
        { "ipi/*", true, "inter-processor interrupts, /proc/interrupts' CAL, RES and TLB lines one by one" },
        { "timer/*", true, "timers started and fired, objects and callbacks hashed: the wakeups sched shows" },
        { "workqueue/*", true, "the kernel's work items, functions hashed or symbolized: the kworkers' time sched shows" },
        { "power/*", true, "CPU frequency and idle states, suspend, wakeup sources and PM QoS, as cpufreq, cpuidle "
                           "and /sys/class/wakeup show them" },
        { "cpuhp/*", true, "CPUs brought up and down, as /sys/devices/system/cpu/online shows" },
        { "block/*", true, "disk requests with their sector, size and task, /proc/diskstats one by one" },
        { "writeback/*", true, "dirty pages written back per device and inode, as /proc/vmstat and /sys/class/bdi "
                               "count them" },
        { "filemap/*", true, "page-cache insertions and removals by inode and index, page frames hashed: atrace's "
                             "pagecache category" },
        { "raw_syscalls/*", true, "syscall numbers and return values, as syscall_events records them" },
        { "syscalls/*", true, "each syscall's arguments, pointers and other user addresses hashed" },
        { "signal/*", true, "signals sent and delivered, handlers hashed" },
        { "oom/*", true, "OOM kills and oom_score_adj, as /proc/PID/oom_score_adj and status show them" },
        { "regulator/*", true, "voltage regulators, as /sys/class/regulator shows them" },
        { "clk/*", true, "clock rates and gating: atrace's freq category" },
        { "thermal/*", true, "temperatures and cooling states, as /sys/class/thermal shows them" },
        { "net/*", true, "packets per device with length and protocol, skb addresses hashed: /proc/net/dev one by one" },
        { "napi/*", true, "NAPI polls per device and their budget" },
        { "skb/*", true, "packets freed or dropped and why, locations hashed: /proc/net/snmp one by one" },
        { "sock/inet_sock_set_state", true, "TCP state changes with their endpoints, as /proc/net/tcp shows them" },
        { "kmem/*", true, "allocations by size and flags, objects, call sites and page frames hashed; rss_stat "
                          "as /proc/PID/status" },
        { "vmscan/*", true, "memory reclaim, as /proc/vmstat counts it, shrinkers hashed or symbolized" },
        { "compaction/*", true, "memory compaction, page frames hashed, as /proc/vmstat's compact_ counters" },
        { "cgroup/*", true, "cgroups made, removed, frozen and joined, as /sys/fs/cgroup shows them" },
        { "ftrace/print", true, "what programs write to trace_marker for tracers to read (atrace's markers)" },
        { "ftrace/funcgraph_entry", true, "the function graph of the session's own instance, which needs "
                                          "org.tracebus.kprobes" },
        { "ftrace/funcgraph_exit", true, "the function graph of the session's own instance, which needs "
                                         "org.tracebus.kprobes" },

        { "ftrace/*", false, "the kernel's own trace_printk text, stacks and tracers' records" },
        { "printk/*", false, "the kernel log's lines, which dmesg_restrict keeps from users" },
        { "kvm/*", false, "every user's virtual machines: exits, port and MMIO values, guest state" },
        { "kvmmmu/*", false, "every user's virtual machines' memory" },
        { "i2c/*", false, "the bytes on I2C buses: sensors, EEPROMs, touchpads" },
        { "smbus/*", false, "the bytes on SMBus: sensors, EEPROMs" },
        { "tcp/*", false, "every connection's sequence numbers, windows and failed authentications, which no "
                          "/proc file shows" },
        { "sock/*", false, "every socket's buffers and data" },
        { "kprobes/*", false, "probes defined for the whole machine" },
        { "uprobes/*", false, "probes into other users' programs" },
        { "synthetic/*", false, "events made from others for the whole machine" },
        { "avc/*", false, "the security module's decisions about every process" },
};

static const char dynamic_reason[] = "a probe or synthetic event defined for the whole machine, not by this session";
static const char unreviewed_reason[] = "its group was not reviewed for them";

/* The rule for "group/name" @event, or NULL: the event's own first, then its group's. */
static const EventRule *find_rule(const char *event) {
        size_t group_len = strcspn(event, "/");
        const EventRule *group = NULL;

        if (event[group_len] != '/')
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(record_only_rules); i++) {
                const EventRule *r = &record_only_rules[i];

                if (strcmp(r->event, event) == 0)
                        return r;
                if (!group && strncmp(r->event, event, group_len) == 0 && strcmp(r->event + group_len, "/*") == 0)
                        group = r;
        }
        return group;
}

bool session_config_event_allowed(const char *event, const char **ret_reason) {
        const EventRule *r = find_rule(event);

        if (ret_reason)
                *ret_reason = r ? r->reason : unreviewed_reason;
        return r && r->allowed;
}

static int compare_strings(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

int session_config_note_refused_events(SessionConfig *c, const EventSelection *sel) {
        size_t n = 0;

        session_config_forget_refused(c);
        if (sel->n_order == 0)
                return 0;
        c->refused_events = calloc(sel->n_order + 1, sizeof(char *));
        if (!c->refused_events)
                return -ENOMEM;
        for (size_t k = 0; k < sel->n_order; k++) {
                EventSelected e;

                event_selection_get(sel, k, &e);
                if (!e.dynamic && session_config_event_allowed(e.event, NULL))
                        continue;
                c->refused_events[n] = strdup(e.event);
                if (!c->refused_events[n])
                        return -ENOMEM;
                c->n_refused_events = ++n;
                if (!e.named)
                        continue;
                if (c->n_refused_named++ < REFUSED_NAMED_SHOWN && strv_extend(&c->refused_named, e.event) < 0)
                        return -ENOMEM;
        }
        qsort(c->refused_events, n, sizeof(char *), compare_strings);
        return 0;
}

void session_config_forget_refused(SessionConfig *c) {
        c->refused_events = strv_free(c->refused_events);
        c->n_refused_events = 0;
        c->refused_named = strv_free(c->refused_named);
        c->n_refused_named = 0;
}

static bool is_refused(const SessionConfig *c, const char *event) {
        if (!c->refused_events)
                return false;
        return bsearch(&event, c->refused_events, c->n_refused_events, sizeof(char *), compare_strings) != NULL;
}

static const char *refusal_reason(const SessionConfig *c, const char *event) {
        const char *reason;

        /* Refused though its group is allowed: only a dynamic event is. */
        if (session_config_event_allowed(event, &reason))
                return dynamic_reason;
        return reason;
}

/* One warning for the refused events of @event's group in @dropped (from @from on). */
static int warn_group(SessionConfig *c, char **dropped, size_t from) {
        const char *event = dropped[from];
        size_t group_len = strcspn(event, "/"), n = 0;
        _cleanup_strv_free_ char **shown = NULL;
        _cleanup_free_ char *list = NULL;

        for (size_t i = from; dropped[i]; i++) {
                if (strncmp(dropped[i], event, group_len + 1) != 0)
                        continue;
                if (n++ < REFUSED_WARNING_SHOWN && strv_extend(&shown, dropped[i]) < 0)
                        return -ENOMEM;
        }
        list = strv_join(shown, ", ");
        if (!list)
                return -ENOMEM;
        return session_config_warn(c, "%zu ftrace event%s of group '%.*s' that a glob or an atrace category chose "
                                   "%s not for callers without org.tracebus.manage (%s): %s%s: skipped",
                                   n, n == 1 ? "" : "s", (int) group_len, event, n == 1 ? "is" : "are",
                                   refusal_reason(c, event), list, n > REFUSED_WARNING_SHOWN ? ", ..." : "");
}

/* Whether @groups holds the group of "group/name" @event. */
static bool group_listed(char **groups, const char *event) {
        size_t group_len = strcspn(event, "/");

        STRV_FOREACH(g, groups)
                if (strlen(*g) == group_len && strncmp(*g, event, group_len) == 0)
                        return true;
        return false;
}

/* Takes the refused events out of c->events, into *ret_dropped in their order. */
static int drop_refused(SessionConfig *c, char ***ret_dropped) {
        size_t n = strv_length(c->events), kept = 0;
        _cleanup_strv_free_ char **dropped = NULL;

        for (size_t i = 0; i < n; i++) {
                if (!is_refused(c, c->events[i])) {
                        c->events[kept++] = c->events[i];
                        continue;
                }
                if (strv_length(c->failed_ftrace_events) < FAILED_EVENTS_KEPT &&
                    strv_extend(&c->failed_ftrace_events, c->events[i]) < 0)
                        return -ENOMEM;
                if (strv_extend(&dropped, c->events[i]) < 0)
                        return -ENOMEM;
                free(c->events[i]);
        }
        if (c->events)
                c->events[kept] = NULL;
        if (kept == 0)
                c->events = strv_free(c->events);
        *ret_dropped = TAKE_PTR(dropped);
        return 0;
}

int session_config_restrict_to_record_only(SessionConfig *c) {
        _cleanup_strv_free_ char **dropped = NULL, **warned = NULL;
        bool had_events = c->events;
        int r;

        if (c->n_refused_named > 0)
                return -EKEYREJECTED;
        if (c->n_refused_events == 0)
                return 0;
        r = drop_refused(c, &dropped);
        if (r < 0)
                return r;
        /* Nothing left of what the config asked for: refused, naming what was. */
        if (had_events && !c->events) {
                c->n_refused_named = strv_length(dropped);
                for (size_t i = 0; i < c->n_refused_named && i < REFUSED_NAMED_SHOWN; i++)
                        if (strv_extend(&c->refused_named, dropped[i]) < 0)
                                return -ENOMEM;
                return -EKEYREJECTED;
        }
        /* A group's events together, in one warning each: the warnings are few, and so
         * are the kernel's groups. */
        for (size_t i = 0; dropped && dropped[i]; i++) {
                _cleanup_free_ char *group = NULL;

                if (group_listed(warned, dropped[i]))
                        continue;
                r = warn_group(c, dropped, i);
                group = strndup(dropped[i], strcspn(dropped[i], "/"));
                if (r < 0 || !group || strv_extend(&warned, group) < 0)
                        return r < 0 ? r : -ENOMEM;
        }
        return 0;
}

char *session_config_refusal_text(const SessionConfig *c) {
        _cleanup_free_ char *list = NULL;
        char more[48] = "";
        const char *first;
        char *text;

        if (!c->refused_named || !c->refused_named[0])
                return NULL;
        first = c->refused_named[0];
        list = strv_join(c->refused_named, ", ");
        if (!list)
                return NULL;
        if (c->n_refused_named > REFUSED_NAMED_SHOWN)
                snprintf(more, sizeof(more), " and %zu more", c->n_refused_named - REFUSED_NAMED_SHOWN);
        if (asprintf(&text, "ftrace event%s %s%s %s not for callers without org.tracebus.manage (%s: %s)",
                     c->n_refused_named == 1 ? "" : "s", list, more, c->n_refused_named == 1 ? "is" : "are",
                     first, refusal_reason(c, first)) < 0)
                return NULL;
        return text;
}
