/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit suite: apps built with the Perfetto SDK talk to a service written on libtracebus's
 * producer layer (producer-server.c) on a private socket. The apps are upstream's own
 * builds of its SDK examples, beside the source tree in ../shared/perfetto/sdk (CI's clone
 * has them there too; TRACEBUS_PERFETTO_SDK names another directory):
 *   - example_system_wide (C++ SDK): binds ProducerPort, registers track_event with its
 *     categories, is started, writes a DrawGame slice holding two DrawPlayer slices and
 *     exits; its packets come out of the shared buffer as TracePackets;
 *   - example_shlib_data_source (C API): registers com.example.custom_data_source, is
 *     started, and writes a packet larger than one chunk, which comes out whole after
 *     fragments and patches; then Flush is acknowledged and StopDataSource notified;
 *   - the same app recorded by upstream's traced (and perfetto, on private sockets, in
 *     the same run): every packet we reassemble is byte for byte what traced wrote for the
 *     app, before the trusted fields traced appends.
 */
#include <glib/gstdio.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "producer-server.h"
#include "trace-reader.h"
#include "trace.pb-c.h"

#define CONNECT_TIMEOUT_MS 10000
#define STEP_TIMEOUT_MS 15000

static char *sdk_program(const char *name) {
        const char *dir = g_getenv("TRACEBUS_PERFETTO_SDK");
        g_autofree char *fallback = g_build_filename(g_getenv("TRACEBUS_SOURCE_DIR") ?: ".", "..", "shared",
                                                     "perfetto", "sdk", NULL);
        char *path = g_build_filename(dir ?: fallback, name, NULL);

        if (access(path, X_OK) < 0)
                g_error("upstream Perfetto's %s is not at %s (%m): it sits in ../shared/perfetto/sdk beside "
                        "the source tree, or in $TRACEBUS_PERFETTO_SDK", name, path);
        return path;
}

static char *perfetto_program(const char *name) {
        const char *dir = g_getenv("TRACEBUS_PERFETTO_BIN");
        g_autofree char *fallback = g_build_filename(g_getenv("TRACEBUS_SOURCE_DIR") ?: ".", "..", "shared",
                                                     "perfetto", "bin", NULL);
        char *path = g_build_filename(dir ?: fallback, name, NULL);

        if (access(path, X_OK) < 0)
                g_error("upstream Perfetto's %s is not at %s (%m): it sits in ../shared/perfetto/bin beside "
                        "the source tree, or in $TRACEBUS_PERFETTO_BIN", name, path);
        return path;
}

static bool registered(ProducerServer *s, gconstpointer name) {
        return s->initialized && s->has_async && producer_server_descriptor(s, name);
}

static bool producer_gone(ProducerServer *s, gconstpointer data) {
        return s->eof;
}

static int wait_exit(GPid pid) {
        int status = 0;

        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        return status;
}

/* The handshake every app goes through: connected, bound, initialized, the command stream
 * open, @name registered. */
static ProducerServer *connect_app(const char *program, const char *name, GPid *ret_pid) {
        g_autofree char *path = sdk_program(program);
        const char *argv[] = { path, NULL };
        ProducerServer *s = producer_server_new();

        *ret_pid = producer_server_spawn(s, argv);
        producer_server_accept(s, CONNECT_TIMEOUT_MS);
        g_assert_true(producer_server_run_until(s, registered, name, STEP_TIMEOUT_MS));
        g_assert_true(s->bound);
        /* The SDK names itself after argv[0]. */
        g_assert_cmpstr(s->producer_name, ==, path);
        return s;
}

static bool has_category(const Tracebus__TrackEventDescriptor *d, const char *name, const char *tag) {
        for (size_t i = 0; i < d->n_available_categories; i++) {
                const Tracebus__TrackEventCategory *c = d->available_categories[i];
                if (g_strcmp0(c->name, name) != 0)
                        continue;
                if (!tag)
                        return c->n_tags == 0;
                return c->n_tags == 1 && g_str_equal(c->tags[0], tag);
        }
        return false;
}

/* The track events of the packets: names resolved through the interned strings. */
typedef struct Slices {
        GHashTable *event_names;        /* iid -> name */
        GHashTable *annotation_names;
        GPtrArray *begins;              /* "NAME" or "NAME player_number=N" */
        unsigned ends;
} Slices;

static void intern(GHashTable *table, Tracebus__InternedEventString **strings, size_t n) {
        for (size_t i = 0; i < n; i++)
                g_hash_table_insert(table, GSIZE_TO_POINTER(strings[i]->iid), g_strdup(strings[i]->name));
}

static void note_begin(Slices *slices, const Tracebus__TrackEvent *event) {
        const char *name = event->name ?: g_hash_table_lookup(slices->event_names, GSIZE_TO_POINTER(event->name_iid));
        GString *text = g_string_new(name);

        for (size_t i = 0; i < event->n_debug_annotations; i++) {
                const Tracebus__DebugAnnotation *a = event->debug_annotations[i];
                const char *arg = a->name ?: g_hash_table_lookup(slices->annotation_names, GSIZE_TO_POINTER(a->name_iid));
                g_string_append_printf(text, " %s=%" G_GINT64_FORMAT, arg,
                                       a->has_int_value ? a->int_value : (gint64) a->uint_value);
        }
        g_ptr_array_add(slices->begins, g_string_free(text, FALSE));
}

static void collect_slices(ProducerServer *s, Slices *slices) {
        for (guint i = 0; i < s->packets->len; i++) {
                gsize size;
                const guint8 *data = g_bytes_get_data(g_ptr_array_index(s->packets, i), &size);
                Tracebus__TracePacket *p = tracebus__trace_packet__unpack(NULL, size, data);

                /* Every packet the reassembler hands over decodes as a TracePacket. */
                g_assert_nonnull(p);
                if (p->interned_data) {
                        intern(slices->event_names, p->interned_data->event_names, p->interned_data->n_event_names);
                        intern(slices->annotation_names, p->interned_data->debug_annotation_names,
                               p->interned_data->n_debug_annotation_names);
                }
                if (p->track_event && p->track_event->type == TRACEBUS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN)
                        note_begin(slices, p->track_event);
                if (p->track_event && p->track_event->type == TRACEBUS__TRACK_EVENT__TYPE__TYPE_SLICE_END)
                        slices->ends++;
                tracebus__trace_packet__free_unpacked(p, NULL);
        }
}

static void test_track_event_app(void) {
        GPid pid;
        g_autoptr(ProducerServer) s = connect_app("example_system_wide", "track_event", &pid);
        const Tracebus__DataSourceDescriptor *d = producer_server_descriptor(s, "track_event");
        Slices slices = {
                .event_names = g_hash_table_new_full(NULL, NULL, NULL, g_free),
                .annotation_names = g_hash_table_new_full(NULL, NULL, NULL, g_free),
                .begins = g_ptr_array_new_with_free_func(g_free),
        };

        g_assert_nonnull(d->track_event_descriptor);
        g_assert_true(has_category(d->track_event_descriptor, "rendering", NULL));
        g_assert_true(has_category(d->track_event_descriptor, "network.debug", "debug"));
        g_assert_true(has_category(d->track_event_descriptor, "audio.latency", "verbose"));
        g_assert_true(d->will_notify_on_start);

        producer_server_start(s, "track_event", 1);
        /* The app waits for the start, writes for a second, flushes its writer and exits. */
        g_assert_true(producer_server_run_until(s, producer_gone, NULL, STEP_TIMEOUT_MS));
        g_assert_true(producer_server_has_id(s->started, 1));
        g_assert_cmpuint(s->writers->len, >=, 1);
        g_assert_cmpint(wait_exit(pid), ==, 0);

        collect_slices(s, &slices);
        for (guint i = 0; i < slices.begins->len; i++)
                g_test_message("slice %s", (char *) g_ptr_array_index(slices.begins, i));
        g_assert_cmpuint(slices.begins->len, ==, 3);
        g_assert_cmpstr(g_ptr_array_index(slices.begins, 0), ==, "DrawGame");
        g_assert_cmpstr(g_ptr_array_index(slices.begins, 1), ==, "DrawPlayer player_number=1");
        g_assert_cmpstr(g_ptr_array_index(slices.begins, 2), ==, "DrawPlayer player_number=2");
        g_assert_cmpuint(slices.ends, ==, 3);
        g_assert_cmpuint(smb_reassembler_stats(s->reassembler)->abi_violations, ==, 0);

        g_hash_table_unref(slices.event_names);
        g_hash_table_unref(slices.annotation_names);
        g_ptr_array_unref(slices.begins);
}

/* The first for_testing packet among the packets read so far, or NULL. */
static Tracebus__TracePacket *find_test_packet(ProducerServer *s, gsize *ret_size) {
        for (guint i = 0; i < s->packets->len; i++) {
                gsize size;
                const guint8 *data = g_bytes_get_data(g_ptr_array_index(s->packets, i), &size);
                Tracebus__TracePacket *p = tracebus__trace_packet__unpack(NULL, size, data);

                g_assert_nonnull(p);
                if (p->for_testing) {
                        *ret_size = size;
                        return p;
                }
                tracebus__trace_packet__free_unpacked(p, NULL);
        }
        return NULL;
}

static bool has_test_packet(ProducerServer *s, gconstpointer data) {
        gsize size;
        Tracebus__TracePacket *p = find_test_packet(s, &size);

        if (p)
                tracebus__trace_packet__free_unpacked(p, NULL);
        return p != NULL;
}

static bool flush_acked(ProducerServer *s, gconstpointer id) {
        return s->flush_acked >= GPOINTER_TO_SIZE(id);
}

static bool stopped(ProducerServer *s, gconstpointer id) {
        return producer_server_has_id(s->stopped, GPOINTER_TO_SIZE(id));
}

static void check_test_packet(ProducerServer *s) {
        gsize size = 0;
        Tracebus__TracePacket *p = find_test_packet(s, &size);
        const Tracebus__TestEvent__TestPayload *payload;

        g_assert_nonnull(p);
        g_test_message("for_testing packet of %zu bytes", size);
        /* Larger than a chunk's payload: it crossed chunks and came out whole. */
        g_assert_cmpuint(size, >, smb_chunk_size(SMB_PAGE_SIZE_MIN, SMB_LAYOUT_DIV1) - SMB_CHUNK_HEADER_SIZE);
        g_assert_cmpuint(p->timestamp, ==, 42);
        g_assert_cmpstr(p->for_testing->str, ==, "This is a long string");
        payload = p->for_testing->payload;
        g_assert_nonnull(payload);
        g_test_message("payload: %zu strings, %zu nested", payload->n_str, payload->n_nested);
        g_assert_cmpuint(payload->n_str + payload->n_nested, ==, 1000);
        for (size_t i = 0; i < payload->n_str; i++)
                g_assert_cmpstr(payload->str[i], ==, "nested");
        tracebus__trace_packet__free_unpacked(p, NULL);
}

static void test_custom_data_source_app(void) {
        GPid pid;
        g_autoptr(ProducerServer) s = connect_app("example_shlib_data_source", "com.example.custom_data_source", &pid);
        const Tracebus__DataSourceDescriptor *d = producer_server_descriptor(s, "com.example.custom_data_source");
        const SmbStats *stats;

        g_assert_true(d->has_id && d->id != 0);
        producer_server_start(s, "com.example.custom_data_source", 7);
        g_assert_true(producer_server_run_until(s, has_test_packet, NULL, STEP_TIMEOUT_MS));
        check_test_packet(s);

        producer_server_flush(s, 7, 1);
        g_assert_true(producer_server_run_until(s, flush_acked, GSIZE_TO_POINTER(1), STEP_TIMEOUT_MS));
        producer_server_stop(s, 7);
        g_assert_true(producer_server_run_until(s, stopped, GSIZE_TO_POINTER(7), STEP_TIMEOUT_MS));
        stats = smb_reassembler_stats(s->reassembler);
        g_test_message("chunks taken %" G_GUINT64_FORMAT ", patches applied %" G_GUINT64_FORMAT,
                       stats->chunks_taken, stats->patches_applied);
        g_assert_cmpuint(stats->abi_violations, ==, 0);
        g_assert_cmpuint(stats->patches_failed, ==, 0);
        g_assert_cmpuint(stats->chunks_discarded, ==, 0);
        /* The packet's nested sizes were written after its first chunks were committed. */
        g_assert_cmpuint(stats->patches_applied, >, 0);

        /* The app runs until killed. */
        g_assert_cmpint(kill(pid, SIGTERM), ==, 0);
        g_assert_true(WIFSIGNALED(wait_exit(pid)));
}

static bool two_test_packets(ProducerServer *s, gconstpointer data) {
        return s->packets->len >= 2 && has_test_packet(s, NULL) &&
               g_bytes_get_size(g_ptr_array_index(s->packets, s->packets->len - 1)) > 1000;
}

/* The bytes the producer wrote in a packet of traced's trace: traced appends its trusted
 * fields (uid 3, sequence id 10, pid 79, previous_packet_dropped 42) after them. */
static GBytes *producer_part(const TraceRawPacket *p) {
        const uint8_t *at = p->data, *end = p->data + p->len, *appended = NULL;
        TraceField f;

        while (trace_field_next(&at, end, &f) > 0) {
                bool trusted = f.number == 3 || f.number == 10 || f.number == 79 || f.number == 42;
                if (!trusted)
                        appended = NULL;
                else if (!appended)
                        appended = at - f.framed_len;
        }
        return g_bytes_new(p->data, (size_t) ((appended ?: end) - p->data));
}

/* The custom data source's packets as traced records them, producer parts only. */
static GPtrArray *record_with_traced(void) {
        g_autofree char *dir = g_dir_make_tmp("tb-traced-XXXXXX", NULL);
        g_autofree char *traced = perfetto_program("traced"), *perfetto = perfetto_program("perfetto");
        g_autofree char *app = sdk_program("example_shlib_data_source");
        g_autofree char *cfg = g_build_filename(dir, "cfg.txt", NULL), *out = g_build_filename(dir, "out.pftrace", NULL);
        g_autofree char *psock = g_build_filename(dir, "p.sock", NULL), *csock = g_build_filename(dir, "c.sock", NULL);
        g_auto(GStrv) env = g_environ_setenv(g_environ_setenv(g_get_environ(), "PERFETTO_PRODUCER_SOCK_NAME", psock, TRUE),
                                             "PERFETTO_CONSUMER_SOCK_NAME", csock, TRUE);
        const char *traced_argv[] = { traced, NULL }, *app_argv[] = { app, NULL };
        const char *perfetto_argv[] = { perfetto, "--txt", "-c", cfg, "-o", out, NULL };
        GPtrArray *bodies = g_ptr_array_new_with_free_func((GDestroyNotify) g_bytes_unref);
        g_autofree guint8 *trace = NULL;
        GPid traced_pid, app_pid;
        int status = 0;
        gsize len;
        TraceReader reader;
        TraceRawPacket p;

        g_assert_true(g_file_set_contents(cfg, "buffers { size_kb: 1024 }\n"
                                          "data_sources { config { name: \"com.example.custom_data_source\" } }\n"
                                          "duration_ms: 2500\n", -1, NULL));
        g_assert_true(g_spawn_async(NULL, (char **) traced_argv, env, G_SPAWN_DO_NOT_REAP_CHILD,
                                    producer_server_child_setup, NULL, &traced_pid, NULL));
        for (int i = 0; i < 500 && access(psock, F_OK) < 0; i++)
                g_usleep(10 * 1000);
        g_assert_true(g_spawn_async(NULL, (char **) app_argv, env, G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_STDOUT_TO_DEV_NULL,
                                    producer_server_child_setup, NULL, &app_pid, NULL));
        g_assert_true(g_spawn_sync(NULL, (char **) perfetto_argv, env, G_SPAWN_STDOUT_TO_DEV_NULL,
                                   producer_server_child_setup, NULL, NULL, NULL, &status, NULL));
        g_assert_cmpint(status, ==, 0);
        kill(app_pid, SIGTERM);
        wait_exit(app_pid);
        kill(traced_pid, SIGTERM);
        wait_exit(traced_pid);

        g_assert_true(g_file_get_contents(out, (char **) &trace, &len, NULL));
        trace_reader_init(&reader, trace, len, 0);
        while (trace_reader_next(&reader, &p) > 0) {
                TraceField f;
                if (trace_field_find(p.data, p.len, 900, TRACE_WIRE_LEN, &f) > 0)
                        g_ptr_array_add(bodies, producer_part(&p));
        }
        trace_reader_done(&reader);
        g_unlink(out);
        g_unlink(cfg);
        g_rmdir(dir);
        return bodies;
}

static bool same_bytes_in(GPtrArray *set, GBytes *bytes) {
        for (guint i = 0; i < set->len; i++)
                if (g_bytes_equal(g_ptr_array_index(set, i), bytes))
                        return true;
        return false;
}

static void test_same_packets_as_traced(void) {
        g_autoptr(GPtrArray) theirs = record_with_traced();
        GPid pid;
        g_autoptr(ProducerServer) s = connect_app("example_shlib_data_source", "com.example.custom_data_source", &pid);
        unsigned compared = 0;

        producer_server_start(s, "com.example.custom_data_source", 1);
        g_assert_true(producer_server_run_until(s, two_test_packets, NULL, STEP_TIMEOUT_MS));
        g_assert_cmpint(kill(pid, SIGTERM), ==, 0);
        wait_exit(pid);

        g_test_message("traced recorded %u test packets", theirs->len);
        g_assert_cmpuint(theirs->len, >=, 2);
        for (guint i = 0; i < s->packets->len; i++) {
                GBytes *ours = g_ptr_array_index(s->packets, i);
                if (g_bytes_get_size(ours) < 1000)
                        continue;
                g_assert_true(same_bytes_in(theirs, ours));
                compared++;
        }
        g_assert_cmpuint(compared, >=, 2);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/producer-interop/track-event-app", test_track_event_app);
        g_test_add_func("/producer-interop/custom-data-source-app", test_custom_data_source_app);
        g_test_add_func("/producer-interop/same-packets-as-traced", test_same_packets_as_traced);
        return g_test_run();
}
