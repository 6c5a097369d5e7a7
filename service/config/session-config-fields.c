/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

#include "session-config-fields.h"
#include "strv.h"

#define H FIELD_HONOURED
#define A FIELD_ANDROID_ONLY
#define N FIELD_NOT_YET
#define I FIELD_IGNORED
#define P FIELD_PRODUCER

#define SET_BY_SERVICE "Perfetto's service sets it, not a config"
#define OWNERS_APPS "a session records only its owner's apps, every user's for root and org.tracebus.manage"
#define NO_CLONE "a tracebus clone copies every buffer and leaves the session's buffers as they are"
#define NO_PRIORITY "tracebus does not change its scheduling for a session"

/* Fields of the messages walked, in Perfetto's order. Honoured fields name who
 * honours them (the file that loads them, after merge). */
const FieldRule session_config_field_rules[] = {
        { "TraceConfig", "buffers", H, NULL },
        { "TraceConfig", "data_sources", H, NULL },
        { "TraceConfig", "builtin_data_sources", H, NULL },
        { "TraceConfig", "duration_ms", H, NULL },
        { "TraceConfig", "prefer_suspend_clock_for_duration", N, NULL },
        { "TraceConfig", "enable_extra_guardrails", A, NULL },
        { "TraceConfig", "lockdown_mode", I, OWNERS_APPS },
        { "TraceConfig", "producers", N, "an app's shared memory is its own hint, else 256 KiB" },
        { "TraceConfig", "statsd_metadata", A, NULL },
        { "TraceConfig", "write_into_file", H, NULL },
        { "TraceConfig", "output_path", H, "refused: the service never opens a path a caller names" },
        { "TraceConfig", "file_write_period_ms", H, NULL },
        { "TraceConfig", "max_file_size_bytes", H, NULL },
        { "TraceConfig", "guardrail_overrides", A, NULL },
        { "TraceConfig", "deferred_start", I, "the session starts when Start returns" },
        { "TraceConfig", "flush_period_ms", H, NULL },
        { "TraceConfig", "flush_timeout_ms", N, "Stop waits for the apps' flush within data_source_stop_timeout_ms" },
        { "TraceConfig", "data_source_stop_timeout_ms", H, NULL },
        { "TraceConfig", "notify_traceur", A, NULL },
        { "TraceConfig", "bugreport_score", A, NULL },
        { "TraceConfig", "bugreport_filename", A, NULL },
        { "TraceConfig", "trigger_config", H, NULL },
        { "TraceConfig", "activate_triggers", I, "the service takes triggers from Manager.ActivateTriggers: "
                                                 "send them with tracebus --trigger=NAME" },
        { "TraceConfig", "incremental_state_config", H, NULL },
        { "TraceConfig", "allow_user_build_tracing", A, NULL },
        { "TraceConfig", "unique_session_name", H, NULL },
        { "TraceConfig", "compression_type", H, NULL },
        { "TraceConfig", "incident_report_config", A, NULL },
        { "TraceConfig", "statsd_logging", A, NULL },
        { "TraceConfig", "trace_uuid_msb", H, NULL },
        { "TraceConfig", "trace_uuid_lsb", H, NULL },
        { "TraceConfig", "trace_filter", H, NULL },
        { "TraceConfig", "android_report_config", A, NULL },
        { "TraceConfig", "cmd_trace_start_delay", H, NULL },
        { "TraceConfig", "session_semaphores", N, NULL },
        { "TraceConfig", "priority_boost", I, NO_PRIORITY },
        { "TraceConfig", "exclusive_prio", I, "each tracebus session has its own ftrace instance, so none "
                                             "needs the kernel's tracing to itself" },
        { "TraceConfig", "trace_all_machines", I, "tracebus records the machine it runs on" },
        { "TraceConfig", "write_flush_mode", I, "the recorder writes all it holds at each write" },
        { "TraceConfig", "fflush_post_write", N, NULL },
        { "TraceConfig", "compression", H, NULL },
        { "TraceConfig", "trace_attributes", H, NULL },

        { "TraceConfig.BufferConfig", "size_kb", H, NULL },
        { "TraceConfig.BufferConfig", "fill_policy", H, NULL },
        { "TraceConfig.BufferConfig", "transfer_on_clone", I, NO_CLONE },
        { "TraceConfig.BufferConfig", "clear_before_clone", I, NO_CLONE },
        { "TraceConfig.BufferConfig", "name", H, NULL },
        { "TraceConfig.BufferConfig", "experimental_mode", I, "tracebus has one buffer implementation" },

        { "TraceConfig.DataSource", "config", H, NULL },
        { "TraceConfig.DataSource", "producer_name_filter", H, NULL },
        { "TraceConfig.DataSource", "producer_name_regex_filter", H, NULL },
        { "TraceConfig.DataSource", "machine_name_filter", I, "tracebus records the machine it runs on" },

        { "DataSourceConfig", "name", H, NULL },
        { "DataSourceConfig", "target_buffer", H, NULL },
        { "DataSourceConfig", "trace_duration_ms", I, SET_BY_SERVICE },
        { "DataSourceConfig", "tracing_session_id", I, SET_BY_SERVICE },
        { "DataSourceConfig", "enable_extra_guardrails", I, SET_BY_SERVICE },
        { "DataSourceConfig", "stop_timeout_ms", I, SET_BY_SERVICE },
        { "DataSourceConfig", "session_initiator", I, SET_BY_SERVICE },
        { "DataSourceConfig", "buffer_exhausted_policy", I, "tracebus's data sources write no shared memory" },
        { "DataSourceConfig", "priority_boost", I, NO_PRIORITY },
        { "DataSourceConfig", "target_buffer_name", H, NULL },
        { "DataSourceConfig", "protovm_config", I, "tracebus runs no ProtoVM" },
        { "DataSourceConfig", "interceptor_config", I, "interceptors exist in Perfetto's SDK only" },
        { "DataSourceConfig", "prefer_suspend_clock_for_duration", I, SET_BY_SERVICE },
        { "DataSourceConfig", "legacy_config", I, "no data source of tracebus reads it" },
        { "DataSourceConfig", "for_testing", I, "it configures Perfetto's test producer" },
        {}
};

/* Data source names, exact or prefixes ("android."). The platform of an Android-only
 * source is in @why (NULL: Android). */
const SourceRule session_config_source_rules[] = {
        { "linux.ftrace", H, NULL },
        { "linux.process_stats", H, NULL },
        { "linux.sys_stats", H, NULL },
        { "linux.system_info", H, NULL },
        { "linux.sysfs_power", H, NULL },
        { "linux.systemd_journald", H, NULL },
        { "linux.perf", H, NULL },
        { "linux.frozen_ftrace", N, NULL },
        { "linux.inode_file_map", N, NULL },
        { "perfetto.metatrace", N, NULL },
        { "android.", A, NULL },
        { "gpu.", P, NULL },
        { "vulkan.", P, NULL },
        { "track_event", P, NULL },
        { "org.chromium.", A, "Chrome" },
        { "code.v8.dev", A, "Chrome" },
        { "windows.", A, "Windows" },
        {}
};

/* Which data source each DataSourceConfig.*_config field configures. */
typedef struct ConfigFieldSource {
        const char *field;
        const char *source;
} ConfigFieldSource;

static const ConfigFieldSource config_field_sources[] = {
        { "ftrace_config", "linux.ftrace" },
        { "chrome_config", "org.chromium.trace_event" },
        { "inode_file_config", "linux.inode_file_map" },
        { "process_stats_config", "linux.process_stats" },
        { "sys_stats_config", "linux.sys_stats" },
        { "heapprofd_config", "android.heapprofd" },
        { "android_power_config", "android.power" },
        { "android_log_config", "android.log" },
        { "gpu_counter_config", "gpu.counters" },
        { "packages_list_config", "android.packages_list" },
        { "java_hprof_config", "android.java_hprof" },
        { "perf_event_config", "linux.perf" },
        { "vulkan_memory_config", "vulkan.memory_tracker" },
        { "track_event_config", "track_event" },
        { "android_polled_state_config", "android.polled_state" },
        { "android_game_intervention_list_config", "android.game_interventions" },
        { "statsd_tracing_config", "android.statsd" },
        { "android_system_property_config", "android.system_property" },
        { "system_info_config", "linux.system_info" },
        { "network_packet_trace_config", "android.network_packets" },
        { "surfaceflinger_layers_config", "android.surfaceflinger.layers" },
        { "surfaceflinger_transactions_config", "android.surfaceflinger.transactions" },
        { "android_sdk_sysprop_guard_config", "android.sdk_sysprop_guard" },
        { "etw_config", "windows.etw" },
        { "protolog_config", "android.protolog" },
        { "v8_config", "code.v8.dev" },
        { "android_input_event_config", "android.input.inputevent" },
        { "pixel_modem_config", "android.pixel.modem" },
        { "windowmanager_config", "android.windowmanager" },
        { "chromium_system_metrics", "org.chromium.system_metrics" },
        { "kernel_wakelocks_config", "android.kernel_wakelocks" },
        { "gpu_renderstages_config", "gpu.renderstages" },
        { "chromium_histogram_samples", "org.chromium.histogram_samples" },
        { "app_wakelocks_config", "android.app_wakelocks" },
        { "frozen_ftrace_config", "linux.frozen_ftrace" },
        { "cpu_per_uid_config", "android.cpu_per_uid" },
        { "user_list_config", "android.user_list" },
        { "inputmethod_config", "android.inputmethod" },
        { "android_aflags_config", "android.aflags" },
        { "journald_config", "linux.systemd_journald" },
        {}
};

#undef H
#undef A
#undef N
#undef I
#undef P

const FieldRule *session_config_field_rule(const char *message, const char *field) {
        for (const FieldRule *r = session_config_field_rules; r->message; r++)
                if (strcmp(r->message, message) == 0 && strcmp(r->field, field) == 0)
                        return r;
        return NULL;
}

static bool source_rule_matches(const SourceRule *r, const char *name) {
        size_t n = strlen(r->name);

        if (n > 0 && r->name[n - 1] == '.')
                return strncmp(r->name, name, n) == 0 && name[n] != '\0';
        return strcmp(r->name, name) == 0;
}

const SourceRule *session_config_source_rule(const char *name) {
        for (const SourceRule *r = session_config_source_rules; r->name; r++)
                if (source_rule_matches(r, name))
                        return r;
        return NULL;
}

const char *session_config_field_source(const char *field) {
        for (const ConfigFieldSource *s = config_field_sources; s->field; s++)
                if (strcmp(s->field, field) == 0)
                        return s->source;
        return NULL;
}

/* "tracebus.TraceConfig.BufferConfig" -> "TraceConfig.BufferConfig": the rules' names. */
static const char *message_name(const ProtobufCMessageDescriptor *desc) {
        const char *p = desc->name;

        return strncmp(p, "tracebus.", 9) == 0 ? p + 9 : p;
}

/* Whether @fd is present in @m, whatever its label: proto2 presence bits, a oneof's
 * case, a repeated field's count or a pointer. */
static bool field_is_set(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *fd) {
        const uint8_t *base = (const uint8_t *) m;

        if (fd->label == PROTOBUF_C_LABEL_REPEATED)
                return *(const size_t *) (base + fd->quantifier_offset) > 0;
        if (fd->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
                return *(const uint32_t *) (base + fd->quantifier_offset) == fd->id;
        if (fd->type == PROTOBUF_C_TYPE_STRING || fd->type == PROTOBUF_C_TYPE_MESSAGE)
                return *(const void *const *) (base + fd->offset) != NULL;
        return fd->quantifier_offset != 0 && *(const protobuf_c_boolean *) (base + fd->quantifier_offset);
}

static int warn_rule(SessionConfig *c, const char *what, const char *name, FieldDisposition d, const char *why) {
        switch (d) {
        case FIELD_HONOURED:
        case FIELD_PRODUCER:
                return 0;
        case FIELD_ANDROID_ONLY:
                return session_config_warn(c, "%s '%s' is %s-only: skipped", what, name, why ?: "Android");
        case FIELD_NOT_YET:
                return session_config_warn(c, "%s '%s' is not yet %s by tracebus%s%s: skipped", what, name,
                                           strcmp(what, "data source") == 0 ? "recorded" : "honoured",
                                           why ? ", " : "", why ?: "");
        case FIELD_IGNORED:
        default:
                return session_config_warn(c, "%s '%s' is skipped: %s", what, name, why ?: "");
        }
}

/* Warns about the set fields of @m whose rule is not FIELD_HONOURED. The config fields
 * of a DataSourceConfig (ftrace_config, ...) have no rule: see check_config_fields(). */
static int check_message_fields(const ProtobufCMessage *m, SessionConfig *c) {
        const char *msg = message_name(m->descriptor);
        int r;

        for (unsigned i = 0; i < m->descriptor->n_fields; i++) {
                const ProtobufCFieldDescriptor *fd = &m->descriptor->fields[i];
                const FieldRule *rule;
                _cleanup_free_ char *what = NULL;

                if (!field_is_set(m, fd))
                        continue;
                rule = session_config_field_rule(msg, fd->name);
                if (!rule || rule->disposition == FIELD_HONOURED)
                        continue;
                if (asprintf(&what, "%s field", msg) < 0)
                        return -ENOMEM;
                r = warn_rule(c, what, fd->name, rule->disposition, rule->why);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* A *_config field set for another data source than the one named is ignored, as
 * Perfetto's data sources read only their own. */
static int check_config_fields(const Tracebus__DataSourceConfig *ds, SessionConfig *c) {
        const ProtobufCMessage *m = &ds->base;

        for (unsigned i = 0; i < m->descriptor->n_fields; i++) {
                const ProtobufCFieldDescriptor *fd = &m->descriptor->fields[i];
                const char *source = session_config_field_source(fd->name);
                int r;

                if (!source || !field_is_set(m, fd) || strcmp(source, ds->name) == 0)
                        continue;
                r = session_config_warn(c, "data source '%s': field '%s' configures '%s': skipped",
                                        ds->name, fd->name, source);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Producer name filters choose among the apps; tracebus's own data sources run in the
 * service, which no filter names. */
static int check_own_source_filters(const Tracebus__TraceConfig__DataSource *source, SessionConfig *c) {
        static const char *const why = "the data sources of tracebus itself run in the service, not in an app";
        int r = 0;

        if (source->n_producer_name_filter > 0)
                r = warn_rule(c, "TraceConfig.DataSource field", "producer_name_filter", FIELD_IGNORED, why);
        if (r >= 0 && source->n_producer_name_regex_filter > 0)
                r = warn_rule(c, "TraceConfig.DataSource field", "producer_name_regex_filter", FIELD_IGNORED, why);
        return r;
}

static int check_data_source(const Tracebus__TraceConfig__DataSource *source, size_t i, SessionConfig *c) {
        const Tracebus__DataSourceConfig *ds = source->config;
        const SourceRule *rule;
        int r;

        r = check_message_fields(&source->base, c);
        if (r < 0)
                return r;
        if (!ds || !ds->name || !*ds->name)
                return session_config_warn(c, "data source %zu has no name: skipped", i);
        /* An app's data source gets its config as written: its fields are the app's to read. */
        if (session_config_is_producer_source(ds->name))
                return 0;
        r = check_own_source_filters(source, c);
        if (r < 0)
                return r;
        rule = session_config_source_rule(ds->name);
        if (rule->disposition != FIELD_HONOURED)
                return warn_rule(c, "data source", ds->name, rule->disposition, rule->why);
        r = check_message_fields(&ds->base, c);
        if (r < 0)
                return r;
        return check_config_fields(ds, c);
}

/* Fields a binary config carries that v58 does not define: protobuf-c keeps them as
 * unknown fields; each is named by its number and where it was. */
static int check_unknown_fields(const ProtobufCMessage *m, const char *path, unsigned depth, SessionConfig *c) {
        int r;

        for (unsigned i = 0; i < m->n_unknown_fields; i++) {
                r = session_config_warn(c, "unknown field %u in %s: skipped", m->unknown_fields[i].tag, path);
                if (r < 0)
                        return r;
        }
        if (depth >= 32)        /* TraceConfig nests far less; a bound all the same */
                return 0;
        for (unsigned i = 0; i < m->descriptor->n_fields; i++) {
                const ProtobufCFieldDescriptor *fd = &m->descriptor->fields[i];
                const uint8_t *base = (const uint8_t *) m;
                size_t n = 1;
                const ProtobufCMessage *const *subs;

                if (fd->type != PROTOBUF_C_TYPE_MESSAGE || !field_is_set(m, fd))
                        continue;
                if (fd->label == PROTOBUF_C_LABEL_REPEATED) {
                        n = *(const size_t *) (base + fd->quantifier_offset);
                        subs = *(const ProtobufCMessage *const *const *) (base + fd->offset);
                } else
                        subs = (const ProtobufCMessage *const *) (base + fd->offset);
                for (size_t j = 0; j < n; j++) {
                        _cleanup_free_ char *sub = NULL;

                        if (fd->label == PROTOBUF_C_LABEL_REPEATED ? asprintf(&sub, "%s.%s[%zu]", path, fd->name, j) < 0
                                                                   : asprintf(&sub, "%s.%s", path, fd->name) < 0)
                                return -ENOMEM;
                        r = check_unknown_fields(subs[j], sub, depth + 1, c);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* The config's data sources that tracebus runs, each once, in the config's order (the
 * Session's DataSources): linux.ftrace only when it has a kernel buffer to record. What a
 * listed source cannot do on this machine is in the warnings. */
int session_config_load_source_names(const Tracebus__TraceConfig *tc, SessionConfig *c) {
        const Tracebus__DataSourceConfig *ds;

        FOREACH_CONFIG_SOURCE(ds, tc, NULL) {
                const SourceRule *rule = session_config_source_rule(ds->name);
                bool runs = rule ? rule->disposition == FIELD_HONOURED || rule->disposition == FIELD_PRODUCER
                                 : session_config_is_producer_source(ds->name);

                if (!runs || strv_contains(c->data_sources, ds->name))
                        continue;
                if (strcmp(ds->name, "linux.ftrace") == 0 && !c->events)
                        continue;
                if (strv_extend(&c->data_sources, ds->name) < 0)
                        return -ENOMEM;
        }
        return 0;
}

int session_config_check_fields(const Tracebus__TraceConfig *tc, SessionConfig *c) {
        int r;

        r = check_unknown_fields(&tc->base, "TraceConfig", 0, c);
        if (r < 0)
                return r;
        r = check_message_fields(&tc->base, c);
        if (r < 0)
                return r;
        for (size_t i = 0; i < tc->n_buffers; i++) {
                r = check_message_fields(&tc->buffers[i]->base, c);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < tc->n_data_sources; i++) {
                r = check_data_source(tc->data_sources[i], i, c);
                if (r < 0)
                        return r;
        }
        return 0;
}

static const char *disposition_text(FieldDisposition d) {
        switch (d) {
        case FIELD_HONOURED:
                return "honoured";
        case FIELD_ANDROID_ONLY:
                return "warned and skipped";
        case FIELD_NOT_YET:
                return "warned and skipped (not yet)";
        case FIELD_PRODUCER:
                return "recorded by the apps (Perfetto SDK) that register it on the producer socket";
        case FIELD_IGNORED:
        default:
                return "warned and skipped";
        }
}

static void markdown_rule(FILE *f, const char *name, FieldDisposition d, const char *why) {
        if (d == FIELD_HONOURED && why) {       /* honoured in a way of its own, which @why says */
                fprintf(f, "| `%s` | %s |\n", name, why);
                return;
        }
        fprintf(f, "| `%s` | %s", name, disposition_text(d));
        if (d == FIELD_ANDROID_ONLY)
                fprintf(f, ": %s-only", why ?: "Android");
        else if (why)
                fprintf(f, ": %s", why);
        fputs(" |\n", f);
}

static void markdown_fields(FILE *f, const char *message) {
        fprintf(f, "\n| %s field | tracebus |\n|---|---|\n", message);
        for (const FieldRule *r = session_config_field_rules; r->message; r++)
                if (strcmp(r->message, message) == 0)
                        markdown_rule(f, r->field, r->disposition, r->why);
}

void session_config_fields_markdown(FILE *f) {
        markdown_fields(f, "TraceConfig");
        markdown_fields(f, "TraceConfig.BufferConfig");
        markdown_fields(f, "TraceConfig.DataSource");
        markdown_fields(f, "DataSourceConfig");
        fputs("\n| Data source (`name`, or names starting with it) | tracebus |\n|---|---|\n", f);
        for (const SourceRule *r = session_config_source_rules; r->name; r++)
                markdown_rule(f, r->name, r->disposition, r->why);
        fputs("| any other name | recorded by the apps (Perfetto SDK) that register it on the producer socket |\n", f);
        fputs("\n| DataSourceConfig field | configures |\n|---|---|\n", f);
        for (const ConfigFieldSource *s = config_field_sources; s->field; s++)
                fprintf(f, "| `%s` | `%s` |\n", s->field, s->source);
}
