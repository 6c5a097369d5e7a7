/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <glib/gstdio.h>

#include "tb-recording.h"

enum { SIGNAL_CHANGED, N_SIGNALS };
static guint signals[N_SIGNALS];

G_DEFINE_FINAL_TYPE(TbRecording, tb_recording, G_TYPE_OBJECT)

static void tb_recording_finalize(GObject *object) {
        TbRecording *r = TB_RECORDING(object);

        g_free(r->id);
        g_free(r->object_path);
        g_clear_object(&r->proxy);
        g_free(r->detach_key);
        g_free(r->file_path);
        g_free(r->saved_path);
        g_free(r->summary);
        g_free(r->reason);
        g_strfreev(r->warnings);
        G_OBJECT_CLASS(tb_recording_parent_class)->finalize(object);
}

static void tb_recording_class_init(TbRecordingClass *klass) {
        G_OBJECT_CLASS(klass)->finalize = tb_recording_finalize;
        signals[SIGNAL_CHANGED] = g_signal_new("changed", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL,
                                               NULL, NULL, G_TYPE_NONE, 0);
}

static void tb_recording_init(TbRecording *r) {
}

TbRecording *tb_recording_new(const char *id) {
        TbRecording *r = g_object_new(TB_TYPE_RECORDING, NULL);
        r->id = g_strdup(id);
        return r;
}

void tb_recording_changed(TbRecording *r) {
        g_signal_emit(r, signals[SIGNAL_CHANGED], 0);
}

static TbRecordingState state_from_string(const char *s) {
        if (g_strcmp0(s, "stopping") == 0)
                return TB_RECORDING_STOPPING;
        if (g_strcmp0(s, "ended") == 0)
                return TB_RECORDING_FINISHED;
        if (g_strcmp0(s, "starting") == 0)
                return TB_RECORDING_STARTING;
        return TB_RECORDING_RECORDING;
}

void tb_recording_update_from_proxy(TbRecording *r) {
        TracebusDbusSession *p = r->proxy;
        const char *state, *out;

        if (!p || r->state == TB_RECORDING_FINISHED)
                return;
        state = tracebus_dbus_session_get_state(p);
        /* "ended" comes with SessionEnded or Stop's reply, which carry the numbers. */
        if (state && !g_str_equal(state, "ended") && !(r->state == TB_RECORDING_STOPPING && g_str_equal(state, "recording")))
                r->state = state_from_string(state);
        r->bytes = MAX(r->bytes, tracebus_dbus_session_get_bytes_written(p));
        r->events = MAX(r->events, tracebus_dbus_session_get_events_recorded(p));
        r->lost = MAX(r->lost, tracebus_dbus_session_get_events_lost(p));
        if (tracebus_dbus_session_get_started_at(p))
                r->started_at_us = (gint64) tracebus_dbus_session_get_started_at(p);
        r->detached = tracebus_dbus_session_get_detached(p);
        out = tracebus_dbus_session_get_output_path(p);
        if (out && *out && !r->file_path)
                r->file_path = g_strdup(out);
}

void tb_recording_finish(TbRecording *r, const char *reason, GVariant *stats) {
        guint64 t;
        const char *s;

        if (stats) {
                if (g_variant_lookup(stats, "Events", "t", &t))
                        r->events = t;
                if (g_variant_lookup(stats, "Bytes", "t", &t))
                        r->bytes = t;
                if (g_variant_lookup(stats, "EventsLost", "t", &t))
                        r->lost = t;
                if (!reason && g_variant_lookup(stats, "Reason", "&s", &s))
                        reason = s;
                if (!r->file_path && g_variant_lookup(stats, "OutputPath", "&s", &s) && *s)
                        r->file_path = g_strdup(s);
        }
        if (reason) {
                g_free(r->reason);
                r->reason = g_strdup(reason);
        }
        if (r->state != TB_RECORDING_FINISHED)
                r->ended_at_us = g_get_real_time();
        r->state = TB_RECORDING_FINISHED;
        g_clear_pointer(&r->object_path, g_free);
        g_clear_object(&r->proxy);
        r->ours = FALSE;
        r->detached = FALSE;
}

gint64 tb_recording_elapsed_seconds(const TbRecording *r) {
        gint64 end = r->state == TB_RECORDING_FINISHED && r->ended_at_us ? r->ended_at_us : g_get_real_time();

        if (!r->started_at_us)
                return 0;
        return MAX(end - r->started_at_us, 0) / G_USEC_PER_SEC;
}

/* ---- index ---- */

static TbRecording *load_one(GKeyFile *kf, const char *group) {
        g_autofree char *path = g_key_file_get_string(kf, group, "Path", NULL);
        g_autofree char *state = g_key_file_get_string(kf, group, "State", NULL);
        TbRecording *r;

        if (!path || !g_file_test(path, G_FILE_TEST_IS_REGULAR))
                return NULL;
        r = tb_recording_new(group);
        r->file_path = g_steal_pointer(&path);
        r->detach_key = g_key_file_get_string(kf, group, "DetachKey", NULL);
        r->saved_path = g_key_file_get_string(kf, group, "SavedPath", NULL);
        r->summary = g_key_file_get_string(kf, group, "Summary", NULL);
        r->reason = g_key_file_get_string(kf, group, "Reason", NULL);
        r->started_at_us = g_key_file_get_int64(kf, group, "StartedAt", NULL);
        r->ended_at_us = g_key_file_get_int64(kf, group, "EndedAt", NULL);
        r->events = g_key_file_get_uint64(kf, group, "Events", NULL);
        r->bytes = g_key_file_get_uint64(kf, group, "Bytes", NULL);
        r->lost = g_key_file_get_uint64(kf, group, "EventsLost", NULL);
        /* A session still recording when the index was written is the app's to find
         * again by its key; anything else is over by now and its file complete. */
        r->state = g_strcmp0(state, "finished") != 0 && r->detach_key ? TB_RECORDING_RECORDING : TB_RECORDING_FINISHED;
        if (r->state == TB_RECORDING_FINISHED && !r->bytes) {
                GStatBuf st;
                if (g_stat(r->file_path, &st) == 0)
                        r->bytes = (guint64) st.st_size;
        }
        return r;
}

GPtrArray *tb_recordings_load(const char *index_path) {
        g_autoptr(GKeyFile) kf = g_key_file_new();
        g_auto(GStrv) groups = NULL;
        GPtrArray *out = g_ptr_array_new_with_free_func(g_object_unref);

        if (!g_key_file_load_from_file(kf, index_path, G_KEY_FILE_NONE, NULL))
                return out;
        groups = g_key_file_get_groups(kf, NULL);
        for (char **g = groups; *g; g++) {
                TbRecording *r = load_one(kf, *g);
                if (r)
                        g_ptr_array_add(out, r);
        }
        return out;
}

gboolean tb_recordings_save(GListModel *recordings, const char *index_path, GError **error) {
        g_autoptr(GKeyFile) kf = g_key_file_new();
        guint n = g_list_model_get_n_items(recordings);

        for (guint i = 0; i < n; i++) {
                g_autoptr(TbRecording) r = g_list_model_get_item(recordings, i);
                const char *g = r->id;

                if (r->foreign || !r->file_path)
                        continue;
                g_key_file_set_string(kf, g, "Path", r->file_path);
                g_key_file_set_string(kf, g, "State", r->state == TB_RECORDING_FINISHED ? "finished" : "recording");
                if (r->detach_key)
                        g_key_file_set_string(kf, g, "DetachKey", r->detach_key);
                if (r->saved_path)
                        g_key_file_set_string(kf, g, "SavedPath", r->saved_path);
                if (r->summary)
                        g_key_file_set_string(kf, g, "Summary", r->summary);
                if (r->reason)
                        g_key_file_set_string(kf, g, "Reason", r->reason);
                g_key_file_set_int64(kf, g, "StartedAt", r->started_at_us);
                g_key_file_set_int64(kf, g, "EndedAt", r->ended_at_us);
                g_key_file_set_uint64(kf, g, "Events", r->events);
                g_key_file_set_uint64(kf, g, "Bytes", r->bytes);
                g_key_file_set_uint64(kf, g, "EventsLost", r->lost);
        }
        return g_key_file_save_to_file(kf, index_path, error);
}
