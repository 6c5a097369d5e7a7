/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>

#include "session-config.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(TraceFilter *, trace_filter_free);

/* One string_filter_chain rule into @f; a refusal names the rule, as Perfetto refuses the
 * whole config for one it cannot use. */
static int load_rule(TraceFilter *f, const Tracebus__TraceConfig__TraceFilter__StringFilterRule *rule, size_t i,
                     char **ret_error) {
        const char *reason = NULL;
        int r;

        r = trace_filter_add_rule(f, rule->has_policy ? (int) rule->policy : 0, rule->regex_pattern,
                                  rule->atrace_payload_starts_with, &reason);
        if (r == -EINVAL)
                return session_config_error(ret_error, "trace_filter: string_filter_chain rule %zu: %s", i, reason);
        return r;
}

int session_config_load_filter(const Tracebus__TraceConfig *tc, SessionConfig *c, char **ret_error) {
        const Tracebus__TraceConfig__TraceFilter *tf = tc->trace_filter;
        _cleanup_(trace_filter_freep) TraceFilter *f = NULL;
        const char *reason = NULL;
        ProtobufCBinaryData code;
        int r;

        if (!tf)
                return 0;
        /* bytecode_v2 when set, as Perfetto v58's service prefers it; an empty or missing
         * bytecode is invalid there too. */
        code = tf->has_bytecode_v2 && tf->bytecode_v2.len > 0 ? tf->bytecode_v2 : tf->bytecode;
        r = trace_filter_new(code.data, code.len, &f, &reason);
        if (r == -EINVAL || r == -E2BIG)
                return session_config_error(ret_error, "trace_filter: %s", reason);
        if (r < 0)
                return r;
        if (tf->string_filter_chain)
                for (size_t i = 0; i < tf->string_filter_chain->n_rules; i++) {
                        r = load_rule(f, tf->string_filter_chain->rules[i], i, ret_error);
                        if (r < 0)
                                return r;
                }
        c->trace_filter = TAKE_PTR(f);
        return 0;
}
