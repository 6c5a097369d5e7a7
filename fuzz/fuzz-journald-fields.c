/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target: a journal entry's fields, as sd_journal_get_data() hands them
 * ("FIELD=value", any bytes), made into the SystemdJournaldEvent packet by
 * journald_event_fill() and journald_event_pack() as for an entry of the journal, then
 * read back and its strings checked against the caps. The entry is also judged by
 * journald_entry_visible(), the rule for a caller who may not read the whole journal:
 * an entry it lets through must be of the caller's uid and not an audit record.
 *
 * The input: a byte of the priority (its low 3 bits) and the caller's uid (the rest),
 * then fields, each a length byte and that many bytes (the first field of a name wins,
 * as sd_journal_get_data() returns the first).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "journald.h"
#include "trace.pb-c.h"

#define MAX_FIELDS 64

typedef struct Field {
        const uint8_t *data;
        size_t len;
} Field;

typedef struct Entry {
        Field fields[MAX_FIELDS];
        size_t n;
} Entry;

static int get_data(void *userdata, const char *field, const void **ret, size_t *ret_len) {
        const Entry *e = userdata;
        size_t nlen = strlen(field);

        for (size_t i = 0; i < e->n; i++)
                if (e->fields[i].len > nlen && memcmp(e->fields[i].data, field, nlen) == 0 &&
                    e->fields[i].data[nlen] == '=') {
                        *ret = e->fields[i].data;
                        *ret_len = e->fields[i].len;
                        return 0;
                }
        return -ENOENT;
}

static void check_cap(const char *s, size_t max) {
        if (s && strlen(s) > max)
                abort();
}

/* What the visibility rule let through, as the event says it. */
static void check_visible(const Tracebus__SystemdJournaldEvent *e, uid_t uid) {
        if (!e->has_uid || e->uid != uid || (e->transport && strcmp(e->transport, "audit") == 0))
                abort();
}

static void check_packet(const uint8_t *buf, size_t len) {
        Tracebus__TracePacket *back = tracebus__trace_packet__unpack(NULL, len, buf);
        const Tracebus__SystemdJournaldEvent *e;

        if (!back || !back->journald_event)
                abort();
        e = back->journald_event;
        check_cap(e->message, JOURNALD_MAX_MESSAGE);
        check_cap(e->tag, JOURNALD_MAX_FIELD);
        check_cap(e->comm, JOURNALD_MAX_FIELD);
        check_cap(e->exe, JOURNALD_MAX_FIELD);
        check_cap(e->systemd_unit, JOURNALD_MAX_FIELD);
        check_cap(e->hostname, JOURNALD_MAX_FIELD);
        check_cap(e->transport, JOURNALD_MAX_FIELD);
        tracebus__trace_packet__free_unpacked(back, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        Entry entry = { .n = 0 };
        Tracebus__SystemdJournaldEvent e;
        uint8_t *buf = NULL;
        size_t len = 0;
        uint32_t prio;
        uid_t uid;
        bool visible;

        if (size < 1)
                return 0;
        prio = data[0] % 8;
        uid = data[0] >> 3;
        data++;
        size--;
        while (size > 0 && entry.n < MAX_FIELDS) {
                size_t flen = data[0] < size - 1 ? data[0] : size - 1;

                entry.fields[entry.n++] = (Field) { .data = data + 1, .len = flen };
                data += 1 + flen;
                size -= 1 + flen;
        }
        visible = journald_entry_visible(uid, get_data, &entry);
        journald_event_fill(&e, prio, get_data, &entry);
        if (visible)
                check_visible(&e, uid);
        if (journald_event_pack(&e, 1000, 0, &buf, &len) < 0)
                abort();
        check_packet(buf, len);
        free(buf);
        journald_event_done(&e);
        return 0;
}
