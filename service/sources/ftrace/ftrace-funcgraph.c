/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <stdio.h>

#include "ftrace-funcgraph.h"
#include "kprobes.h"
#include "log.h"
#include "strv.h"

/* Writes @names, space-separated, to @file: the kernel reads a list in one write. */
static int write_list(TraceInstance *t, const char *file, char **names) {
        _cleanup_free_ char *list = NULL;

        if (!names)
                return 0;
        list = strv_join(names, " ");
        if (!list)
                return -ENOMEM;
        return trace_instance_write_file(t, file, list);
}

static int setup_function_graph(TraceInstance *t, SessionConfig *c) {
        char depth[16];
        int r;

        r = write_list(t, "set_ftrace_filter", c->function_filters);
        if (r < 0)
                return session_config_warn(c, "function_filters: the kernel refused them (%s; no such function?): "
                                           "function graph skipped", strerror(-r));
        r = write_list(t, "set_graph_function", c->function_graph_roots);
        if (r < 0)
                return session_config_warn(c, "function_graph_roots: the kernel refused them (%s; no such function?): "
                                           "function graph skipped", strerror(-r));
        if (c->function_graph_max_depth > 0) {
                snprintf(depth, sizeof(depth), "%" PRIu32,
                         c->function_graph_max_depth == UINT32_MAX ? 0 : c->function_graph_max_depth);
                r = trace_instance_write_file(t, "max_graph_depth", depth);
                if (r < 0)
                        (void) session_config_warn(c, "function_graph_max_depth: the kernel refused it (%s): ignored",
                                                   strerror(-r));
        }
        /* Last: the tracer runs from here, within the filters just set. */
        r = trace_instance_write_file(t, "current_tracer", "function_graph");
        if (r < 0)
                return session_config_warn(c, "enable_function_graph: this instance cannot run the function_graph "
                                           "tracer (%s): skipped", strerror(-r));
        return 0;
}

int ftgraph_session_setup(TraceInstance *t, SessionConfig *c, uint64_t session_id) {
        int r = 0;

        if (c->kprobes)
                r = kprobes_create(c, session_id);
        if (r >= 0 && c->function_graph)
                r = setup_function_graph(t, c);
        return r < 0 ? r : 0;
}
