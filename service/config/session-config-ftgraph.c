/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * FtraceConfig's symbolize_ksyms (and ksyms_mem_policy), enable_function_graph (with
 * function_filters, function_graph_roots, function_graph_max_depth) and kprobe_events:
 * checked, and reduced to what the session sets up in its instance. What this kernel
 * cannot do is a warning, as Perfetto records the rest of a config; what a caller may
 * not do (kprobes, function tracing without org.tracebus.kprobes) is refused by the
 * bus layer (manager-dbus.c), before anything is created.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fd-util.h"
#include "session-config.h"
#include "strv.h"

/* A kernel function name, or a glob of them for set_ftrace_filter: letters, digits, '_'
 * and '.' ("foo.isra.0"), and for a glob '*' and '?'. Nothing else reaches tracefs,
 * whose filter files also take commands ("func:traceoff", "!func") and lists. */
static bool name_is_valid(const char *s, bool glob) {
        size_t n = strlen(s);

        if (n == 0 || n > FTGRAPH_MAX_NAME)
                return false;
        for (const char *p = s; *p; p++) {
                bool ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                        (*p >= '0' && *p <= '9') || *p == '_' || *p == '.' ||
                        (glob && (*p == '*' || *p == '?'));
                if (!ok)
                        return false;
        }
        return true;
}

static int add_names(char ***list, char **names, size_t n, const char *field, char **ret_error) {
        for (size_t i = 0; i < n; i++) {
                int r;

                if (!name_is_valid(names[i], /* glob= */ true))
                        return session_config_error(ret_error, "%s: '%.128s' is not a kernel function name or glob "
                                         "(letters, digits, '_', '.', '*', '?')", field, names[i]);
                if (strv_length(*list) >= FTGRAPH_MAX_FUNCTIONS)
                        return session_config_error(ret_error, "%s: more than %u functions", field, FTGRAPH_MAX_FUNCTIONS);
                r = strv_extend_unique(list, names[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int load_function_graph(const Tracebus__FtraceConfig *fc, SessionConfig *c, char **ret_error) {
        int r;

        if (!fc->enable_function_graph) {
                if (fc->n_function_filters + fc->n_function_graph_roots > 0 || fc->has_function_graph_max_depth)
                        return session_config_warn(c, "function_filters, function_graph_roots and function_graph_max_depth "
                                                   "apply with enable_function_graph only: ignored");
                return 0;
        }
        c->function_graph = true;
        c->needs_kprobes_action = true;
        r = add_names(&c->function_filters, fc->function_filters, fc->n_function_filters, "function_filters", ret_error);
        if (r >= 0)
                r = add_names(&c->function_graph_roots, fc->function_graph_roots, fc->n_function_graph_roots,
                              "function_graph_roots", ret_error);
        if (r < 0)
                return r;
        /* Data sources asking for different depths: the deepest (0 is unlimited). */
        if (fc->has_function_graph_max_depth && c->function_graph_max_depth != UINT32_MAX)
                c->function_graph_max_depth = fc->function_graph_max_depth == 0 ? UINT32_MAX :
                        MAX(c->function_graph_max_depth, fc->function_graph_max_depth);
        return 0;
}

static int add_kprobe(SessionConfig *c, char kind, const char *symbol) {
        _cleanup_free_ char *entry = NULL;

        if (asprintf(&entry, "%c:%s", kind, symbol) < 0)
                return -ENOMEM;
        return strv_extend_unique(&c->kprobes, entry);
}

static int load_kprobes(const Tracebus__FtraceConfig *fc, SessionConfig *c, char **ret_error) {
        for (size_t i = 0; i < fc->n_kprobe_events; i++) {
                const Tracebus__FtraceConfig__KprobeEvent *k = fc->kprobe_events[i];
                int type = k->has_type ? (int) k->type : 0, r = 0;

                if (!k->probe || !name_is_valid(k->probe, /* glob= */ false))
                        return session_config_error(ret_error, "kprobe_events: probe '%.128s' is not a kernel function name",
                                         strempty(k->probe));
                if (type < TRACEBUS__FTRACE_CONFIG__KPROBE_EVENT__KPROBE_TYPE__KPROBE_TYPE_KPROBE ||
                    type > TRACEBUS__FTRACE_CONFIG__KPROBE_EVENT__KPROBE_TYPE__KPROBE_TYPE_BOTH)
                        return session_config_error(ret_error, "kprobe_events: probe '%s' needs a type (KPROBE_TYPE_KPROBE, "
                                         "KPROBE_TYPE_KRETPROBE or KPROBE_TYPE_BOTH)", k->probe);
                c->needs_kprobes_action = true;
                if (type != TRACEBUS__FTRACE_CONFIG__KPROBE_EVENT__KPROBE_TYPE__KPROBE_TYPE_KRETPROBE)
                        r = add_kprobe(c, 'p', k->probe);
                if (r >= 0 && type != TRACEBUS__FTRACE_CONFIG__KPROBE_EVENT__KPROBE_TYPE__KPROBE_TYPE_KPROBE)
                        r = add_kprobe(c, 'r', k->probe);
                if (r < 0)
                        return r;
                if (strv_length(c->kprobes) > FTGRAPH_MAX_KPROBES)
                        return session_config_error(ret_error, "kprobe_events: more than %u probes", FTGRAPH_MAX_KPROBES);
        }
        return 0;
}

static int load_one(const Tracebus__FtraceConfig *fc, SessionConfig *c, char **ret_error) {
        int r;

        c->symbolize_ksyms = c->symbolize_ksyms || fc->symbolize_ksyms;
        c->ksyms_retain = c->ksyms_retain ||
                fc->ksyms_mem_policy == TRACEBUS__FTRACE_CONFIG__KSYMS_MEM_POLICY__KSYMS_RETAIN;
        r = load_function_graph(fc, c, ret_error);
        if (r >= 0)
                r = load_kprobes(fc, c, ret_error);
        return r;
}

/* Whether this kernel has the function_graph tracer: a word of available_tracers. */
static bool has_function_graph(const char *root) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        size_t len;

        if (asprintf(&path, "%s/available_tracers", root) < 0 || read_full_file(path, 4096, &text, &len) < 0)
                return false;
        for (char *w = strtok(text, " \n"); w; w = strtok(NULL, " \n"))
                if (strcmp(w, "function_graph") == 0)
                        return true;
        return false;
}

static bool has_kprobe_events(const char *root) {
        _cleanup_free_ char *path = NULL;

        return asprintf(&path, "%s/kprobe_events", root) >= 0 && access(path, W_OK) == 0;
}

/* Whether /proc/kallsyms shows addresses to the service: one of its first lines has one
 * that is not zero (kptr_restrict shows zeros even to root without CAP_SYSLOG; per-CPU
 * symbols start at zero anyway). The whole table is read later, on the recorder's thread. */
static bool kallsyms_readable(void) {
        _cleanup_close_ int fd = open("/proc/kallsyms", O_RDONLY | O_CLOEXEC);
        char text[4096];
        ssize_t n;

        if (fd < 0 || (n = read(fd, text, sizeof(text) - 1)) <= 0)
                return false;
        text[n] = '\0';
        for (char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
                if (strspn(l, "0") < strspn(l, "0123456789abcdef"))
                        return true;
        return false;
}

/* What this kernel cannot do: skipped, each with its warning. */
static int check_kernel(const char *root, SessionConfig *c) {
        int r = 0;

        if (c->symbolize_ksyms && !kallsyms_readable()) {
                c->symbolize_ksyms = false;
                r = session_config_warn(c, "symbolize_ksyms: /proc/kallsyms shows the service no addresses "
                                        "(kptr_restrict, or hidden): kernel symbols skipped");
        }
        if (r >= 0 && c->function_graph && !has_function_graph(root)) {
                c->function_graph = false;
                r = session_config_warn(c, "enable_function_graph: this kernel has no function_graph tracer "
                                        "(CONFIG_FUNCTION_GRAPH_TRACER): skipped");
        }
        if (r >= 0 && c->kprobes && !has_kprobe_events(root)) {
                r = session_config_warn(c, "kprobe_events: this kernel has no kprobe events (CONFIG_KPROBE_EVENTS): "
                                        "%zu probes skipped", strv_length(c->kprobes));
                c->kprobes = strv_free(c->kprobes);
        }
        return r;
}

int session_config_load_ftgraph(const Tracebus__TraceConfig *tc, const char *root, SessionConfig *c,
                                char **ret_error) {
        const Tracebus__FtraceConfig *fc;
        int r;

        FOREACH_FTRACE_CONFIG(fc, tc) {
                r = load_one(fc, c, ret_error);
                if (r < 0)
                        return r;
        }
        r = check_kernel(root, c);
        if (r < 0)
                return r;
        /* Probes alone are something to record: their events are named once created. */
        if (c->kprobes && !c->events && !(c->events = calloc(1, sizeof(char *))))
                return -ENOMEM;
        if (!c->function_graph)
                return 0;
        /* The tracer's events: no enable file (always on in the instance), but their
         * formats are what the recorder decodes. */
        r = strv_extend_unique(&c->events, "ftrace/funcgraph_entry");
        if (r >= 0)
                r = strv_extend_unique(&c->events, "ftrace/funcgraph_exit");
        return r < 0 ? r : 0;
}

void session_config_ftgraph_done(SessionConfig *c) {
        c->function_filters = strv_free(c->function_filters);
        c->function_graph_roots = strv_free(c->function_graph_roots);
        c->kprobes = strv_free(c->kprobes);
}
