/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Start's rotation options: RotateEveryMs, RotateBytes, RotateKeep.
 *
 * A rotating session writes its trace as chunks FILE.0, FILE.1, ..., each a trace that
 * loads alone (service/recorder/recorder-rotate.c). The chunks are cut between two drain passes
 * of a write_into_file session: a ring or discard session keeps its data in memory until
 * the end, so there is nothing to cut. */
#include <inttypes.h>

#include "session-config.h"

int session_config_load_rotation(SessionConfig *c, const SessionRotation *r, char **ret_error) {
        bool rotating = r->every_ms > 0 || r->bytes > 0;

        if (r->has_every && (r->every_ms < SESSION_MIN_ROTATE_EVERY_MS || r->every_ms > SESSION_MAX_ROTATE_EVERY_MS))
                return session_config_error(ret_error, "RotateEveryMs must be %u to %" PRIu64 " ms (got %" PRIu64 ").",
                                            SESSION_MIN_ROTATE_EVERY_MS, (uint64_t) SESSION_MAX_ROTATE_EVERY_MS,
                                            r->every_ms);
        if (r->has_bytes && r->bytes < SESSION_MIN_ROTATE_BYTES)
                return session_config_error(ret_error, "RotateBytes must be at least %u bytes (got %" PRIu64 ").",
                                            SESSION_MIN_ROTATE_BYTES, r->bytes);
        if (r->has_keep && (r->keep == 0 || r->keep > SESSION_MAX_ROTATE_KEEP))
                return session_config_error(ret_error, "RotateKeep must be 1 to %u chunks (got %" PRIu32 ").",
                                            SESSION_MAX_ROTATE_KEEP, r->keep);
        if (r->has_keep && !rotating)
                return session_config_error(ret_error, "RotateKeep needs RotateEveryMs or RotateBytes.");
        if (!rotating)
                return 0;
        if (!c->write_into_file)
                return session_config_error(ret_error, "rotation needs write_into_file: a ring or discard "
                                            "buffer is written only at the end, so there is nothing to cut.");
        c->rotate_every_ms = r->every_ms;
        c->rotate_bytes = r->bytes;
        c->rotate_keep = r->keep;
        return 0;
}
