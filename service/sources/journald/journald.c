/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * linux.systemd_journald: journal entries as Perfetto v58's SystemdJournaldEvent (TracePacket
 * field 132), one packet per entry timestamped by the entry's __MONOTONIC_TIMESTAMP on the
 * monotonic clock (as traced_probes, see protos/trace.proto), which trace_processor imports
 * into its log table; one stats packet (num_total, num_failed) at the end.
 * The journal is opened, and the caller's groups looked up (NSS may block), on the
 * pollers' thread at the first poll; from then on each poll reads the entries written
 * since the last one, from the session's start on. Bounded: at most
 * JOURNALD_MAX_EXAMINED entries looked at per poll (the rest wait for the next), at most
 * JOURNALD_MAX_PER_POLL written (the rest counted as failed), fields cut to
 * JOURNALD_MAX_FIELD bytes (MESSAGE to JOURNALD_MAX_MESSAGE).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <systemd/sd-journal.h>
#include <unistd.h>

#include "fd-util.h"
#include "journald.h"
#include "log.h"
#include "macro.h"
#include "strv.h"
#include "time-util.h"
#include "trace-writer.h"
#include "user-util.h"

#define JOURNALD_PERIOD_MS 200u
#define JOURNALD_MAX_EXAMINED 20000u
#define JOURNALD_MAX_PER_POLL 500u
/* journald's own Varlink socket (root only), and how long its answer may take. */
#define JOURNALD_VARLINK "/run/systemd/journal/io.systemd.journal"
#define JOURNALD_SYNC_TIMEOUT_USEC (500 * 1000)

typedef Tracebus__SystemdJournaldEvent JournalEvent;

struct JournaldSource {
        Poller *poller;
        PollerEntry *entry;
        Recorder *rec;
        uid_t uid;
        bool manage;                   /* the owner is root or holds org.tracebus.manage */
        bool opened, all;              /* all: the caller may read every entry */
        sd_journal *journal;
        uint64_t start_usec;           /* CLOCK_REALTIME: entries from here on */
        /* Monotonic stamps are of one boot only: that of the first entry read. Entries are read
         * from the session's start on, so it is this boot; the kernel's boot_id is not asked,
         * since in a container (systemd-nspawn) journald's differs from what the service's
         * own /proc (ProcSubset=pid) says, while the clock is the same. */
        sd_id128_t boot_id;
        bool have_boot_id;
        uint32_t min_prio, target_buffer;
        char **identifiers, **units;
        uint64_t n_total, n_failed, n_over_limit;
};

/* The value of a field's data as sd_journal_get_data() gives it ("FIELD=value", @len
 * bytes, not NUL-terminated), cut to @max bytes, malloc'd; NULL without a '='. */
static char *field_value(const void *data, size_t len, size_t max) {
        const char *eq = memchr(data, '=', len);

        if (!eq)
                return NULL;
        eq++;
        len -= (size_t) (eq - (const char *) data);
        return strndup(eq, MIN(len, max));
}

/* The value of @field, cut to @max bytes, malloc'd; NULL if none. */
static char *field_of(JournaldGetData get, void *userdata, const char *field, size_t max) {
        const void *data;
        size_t len;

        if (get(userdata, field, &data, &len) < 0)
                return NULL;
        return field_value(data, len, max);
}

/* The value of @field as a number (_PID, _UID, PRIORITY): false unless it is one, in
 * decimal, up to UINT32_MAX. */
static bool uint_of(JournaldGetData get, void *userdata, const char *field, uint32_t *ret) {
        _cleanup_free_ char *v = field_of(get, userdata, field, 32);
        char *end;
        unsigned long n;

        if (!v)
                return false;
        n = strtoul(v, &end, 10);
        if (end == v || *end || n > UINT32_MAX)
                return false;
        *ret = (uint32_t) n;
        return true;
}

static int journal_get_data(void *userdata, const char *field, const void **ret, size_t *ret_len) {
        return sd_journal_get_data(userdata, field, ret, ret_len);
}

/* The value of @field of the current entry, cut to @max bytes, malloc'd; NULL if none. */
static char *entry_field(sd_journal *j, const char *field, size_t max) {
        return field_of(journal_get_data, j, field, max);
}

static bool entry_uint(sd_journal *j, const char *field, uint32_t *ret) {
        return uint_of(journal_get_data, j, field, ret);
}

bool journald_entry_visible(uid_t uid, JournaldGetData get, void *userdata) {
        _cleanup_free_ char *transport = NULL;
        uint32_t v;

        if (!uint_of(get, userdata, "_UID", &v) || v != uid)
                return false;
        transport = field_of(get, userdata, "_TRANSPORT", JOURNALD_MAX_FIELD);
        return !transport || strcmp(transport, "audit") != 0;
}

/* Whether the caller in @s could read the current entry itself, unless it may read them
 * all: journald writes an entry of a process of the caller's uid (_UID) into the caller's
 * own journal file, which journalctl shows it. Not a root process's in its session
 * (_SYSTEMD_OWNER_UID: sudo, su, sshd), nor an audit record, whose _UID says whom it is
 * about: those go to the system journal. */
static bool entry_visible(JournaldSource *s) {
        return s->all || journald_entry_visible(s->uid, journal_get_data, s->journal);
}

/* The config's filters: PRIORITY up to min_prio, and the identifiers and units named. */
static bool entry_wanted(JournaldSource *s, uint32_t *ret_prio) {
        _cleanup_free_ char *tag = NULL, *unit = NULL;

        if (!entry_uint(s->journal, "PRIORITY", ret_prio))
                *ret_prio = s->min_prio;   /* as Perfetto: no PRIORITY passes */
        if (*ret_prio > s->min_prio)
                return false;
        if (s->identifiers && !((tag = entry_field(s->journal, "SYSLOG_IDENTIFIER", JOURNALD_MAX_FIELD)) &&
                                strv_contains(s->identifiers, tag)))
                return false;
        if (s->units && !((unit = entry_field(s->journal, "_SYSTEMD_UNIT", JOURNALD_MAX_FIELD)) &&
                          strv_contains(s->units, unit)))
                return false;
        return true;
}

void journald_event_fill(JournalEvent *e, uint32_t prio, JournaldGetData get, void *userdata) {
        tracebus__systemd_journald_event__init(e);
        e->has_prio = true;
        e->prio = prio;
        e->has_pid = uint_of(get, userdata, "_PID", &e->pid);
        e->has_tid = uint_of(get, userdata, "_TID", &e->tid);
        e->has_uid = uint_of(get, userdata, "_UID", &e->uid);
        e->has_gid = uint_of(get, userdata, "_GID", &e->gid);
        e->message = field_of(get, userdata, "MESSAGE", JOURNALD_MAX_MESSAGE);
        e->tag = field_of(get, userdata, "SYSLOG_IDENTIFIER", JOURNALD_MAX_FIELD);
        e->comm = field_of(get, userdata, "_COMM", JOURNALD_MAX_FIELD);
        e->exe = field_of(get, userdata, "_EXE", JOURNALD_MAX_FIELD);
        e->systemd_unit = field_of(get, userdata, "_SYSTEMD_UNIT", JOURNALD_MAX_FIELD);
        e->hostname = field_of(get, userdata, "_HOSTNAME", JOURNALD_MAX_FIELD);
        e->transport = field_of(get, userdata, "_TRANSPORT", JOURNALD_MAX_FIELD);
}

void journald_event_done(JournalEvent *e) {
        free(e->message);
        free(e->tag);
        free(e->comm);
        free(e->exe);
        free(e->systemd_unit);
        free(e->hostname);
        free(e->transport);
}

/* Packs a packet of @e stamped @ts_ns on @clock_id (0: the trace's boot clock) and hands
 * it to the recorder. */
int journald_event_pack(Tracebus__SystemdJournaldEvent *e, uint64_t ts_ns, uint32_t clock_id, uint8_t **ret,
                        size_t *ret_len) {
        Tracebus__TracePacket packet = TRACEBUS__TRACE_PACKET__INIT;
        size_t len;

        packet.has_timestamp = true;
        packet.timestamp = ts_ns;
        packet.has_timestamp_clock_id = clock_id != 0;
        packet.timestamp_clock_id = clock_id;
        packet.journald_event = e;
        len = tracebus__trace_packet__get_packed_size(&packet);
        *ret = malloc(len);
        if (!*ret)
                return -ENOMEM;
        *ret_len = tracebus__trace_packet__pack(&packet, *ret);
        return 0;
}

static int submit(JournaldSource *s, Tracebus__SystemdJournaldEvent *e, uint64_t ts_ns, uint32_t clock_id) {
        _cleanup_free_ uint8_t *buf = NULL;
        size_t len;
        int r;

        r = journald_event_pack(e, ts_ns, clock_id, &buf, &len);
        if (r < 0)
                return r;
        return recorder_submit_packet(s->rec, TRACE_SEQUENCE_JOURNALD, s->target_buffer, /* meta= */ false, buf, len);
}

/* Whether the owner of @s may read the whole journal: root and the holders of
 * org.tracebus.manage, and the members of adm or systemd-journal (the groups journalctl's
 * files are readable by). */
static bool may_read_all(const JournaldSource *s) {
        return s->manage || s->uid == 0 || user_in_group_named(s->uid, "adm") ||
               user_in_group_named(s->uid, "systemd-journal");
}

/* On the pollers' thread, at the first poll. */
static void journal_open(JournaldSource *s) {
        int r;

        s->opened = true;
        s->all = may_read_all(s);
        r = sd_journal_open(&s->journal, SD_JOURNAL_LOCAL_ONLY);
        if (r >= 0)
                r = sd_journal_seek_realtime_usec(s->journal, s->start_usec);
        if (r < 0) {
                log_warning_errno(r, "linux.systemd_journald: failed to open the journal, no entries recorded: %m");
                (void) recorder_warn(s->rec, "linux.systemd_journald: the journal cannot be opened (%s): skipped",
                                     strerror(-r));
                sd_journal_close(s->journal);
                s->journal = NULL;
        } else if (!s->all)
                (void) recorder_warn(s->rec, "linux.systemd_journald: only the entries of your own processes are "
                                     "recorded, as journalctl shows you (the whole journal is for root, the groups "
                                     "adm and systemd-journal and the holders of org.tracebus.manage)");
}

/* More entries in a period than JOURNALD_MAX_PER_POLL: not written, counted, said once. */
static void note_over_limit(JournaldSource *s) {
        if (s->n_over_limit++ == 0)
                (void) recorder_warn(s->rec, "linux.systemd_journald: more than %u entries in %u ms: the rest are "
                                     "skipped (counted as failed in the stats at the end)", JOURNALD_MAX_PER_POLL,
                                     JOURNALD_PERIOD_MS);
        s->n_failed++;
}

/* Writes the current entry, of priority @prio, as one packet at its monotonic time. */
static void write_entry(JournaldSource *s, uint32_t prio) {
        JournalEvent e;
        sd_id128_t boot;
        uint64_t usec;
        int r;

        r = sd_journal_get_monotonic_usec(s->journal, &usec, &boot);
        if (r >= 0 && !s->have_boot_id) {
                s->boot_id = boot;
                s->have_boot_id = true;
        }
        if (r < 0 || !sd_id128_equal(boot, s->boot_id)) {
                s->n_failed++;   /* no time on this boot's clock to put it at */
                return;
        }
        journald_event_fill(&e, prio, journal_get_data, s->journal);
        r = submit(s, &e, usec * 1000, TRACEBUS__BUILTIN_CLOCK__BUILTIN_CLOCK_MONOTONIC);
        journald_event_done(&e);
        if (r < 0)
                s->n_failed++;
        else
                s->n_total++;
}

/* The entries since the last poll, those the caller may see and the config wants. */
static void poll_journal(uint64_t now, void *userdata) {
        JournaldSource *s = userdata;
        size_t n = 0;

        if (!s->opened)
                journal_open(s);
        if (!s->journal)
                return;
        for (unsigned examined = 0; examined < JOURNALD_MAX_EXAMINED && sd_journal_next(s->journal) > 0; examined++) {
                uint32_t prio;

                if (!entry_visible(s) || !entry_wanted(s, &prio))
                        continue;   /* another user's, or one the config leaves out */
                if (n >= JOURNALD_MAX_PER_POLL) {
                        note_over_limit(s);
                        continue;
                }
                write_entry(s, prio);
                n++;
        }
}

/* Reads that outlast their period again and again (a huge backlog, slow storage). */
static void journal_slow(uint64_t took_ns, uint64_t period_ns, void *userdata) {
        JournaldSource *s = userdata;

        (void) recorder_warn(s->rec, "linux.systemd_journald: reading the journal took %" PRIu64 " ms, more than the "
                             "%" PRIu64 " ms period, %u times in a row: entries come late", took_ns / 1000000,
                             period_ns / 1000000, POLLER_SLOW_RUNS);
}

int journald_start(const DataSourceContext *ctx, void *data, void **ret) {
        const JournaldSection *section = data;
        Poller *poller = ctx->poller;
        JournaldSource *s;
        int r;

        *ret = NULL;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->poller = poller;
        s->rec = ctx->recorder;
        s->uid = ctx->owner_uid;
        s->manage = section->manage;
        s->start_usec = now_usec(CLOCK_REALTIME);
        s->min_prio = section->min_prio;
        s->target_buffer = section->target_buffer;
        r = 0;
        STRV_FOREACH(i, section->identifiers)
                if (r >= 0)
                        r = strv_extend(&s->identifiers, *i);
        STRV_FOREACH(u, section->units)
                if (r >= 0)
                        r = strv_extend(&s->units, *u);
        if (r >= 0)
                r = poller_add(poller, JOURNALD_PERIOD_MS, poll_journal, s, &s->entry);
        if (r >= 0)
                poller_on_slow(poller, s->entry, journal_slow);
        if (r < 0) {
                strv_free(s->identifiers);
                strv_free(s->units);
                free(s);
                return r;
        }
        *ret = s;
        return 0;
}

void journald_stop(void *state) {
        JournalEvent stats = TRACEBUS__SYSTEMD_JOURNALD_EVENT__INIT;
        JournaldSource *s = state;

        if (!s)
                return;
        poller_remove(s->poller, s->entry);
        /* As Perfetto does at its flush: what was written and what could not be. */
        stats.has_num_total = stats.has_num_failed = true;
        stats.num_total = s->n_total;
        stats.num_failed = s->n_failed;
        (void) submit(s, &stats, now_ns(CLOCK_BOOTTIME), 0);
        if (s->journal)
                sd_journal_close(s->journal);
        strv_free(s->identifiers);
        strv_free(s->units);
        free(s);
}

/* journald takes entries off its sockets on its own time: io.systemd.Journal.Synchronize
 * answers once it has written every entry sent before the call (journalctl --sync). */
static int journal_sync(void) {
        static const char call[] = "{\"method\":\"io.systemd.Journal.Synchronize\",\"parameters\":{}}";
        struct sockaddr_un sa = { .sun_family = AF_UNIX, .sun_path = JOURNALD_VARLINK };
        struct timeval tv = { .tv_usec = JOURNALD_SYNC_TIMEOUT_USEC };
        _cleanup_close_ int fd = -EBADF;
        char reply[512];
        ssize_t n;

        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0 ||
            connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                return -errno;
        /* A Varlink message ends with its NUL. */
        if (send(fd, call, sizeof(call), MSG_NOSIGNAL) != (ssize_t) sizeof(call))
                return -EIO;
        do
                n = recv(fd, reply, sizeof(reply), 0);
        while (n > 0 && !memchr(reply, 0, (size_t) n));
        return n > 0 ? 0 : n == 0 ? -ECONNRESET : -errno;
}

/* At Stop: what journald still holds, then the entries since the last poll. */
static void final_read(uint64_t now, void *userdata) {
        JournaldSource *s = userdata;
        int r;

        if (s->journal) {
                r = journal_sync();
                if (r < 0)
                        log_debug_errno(r, "linux.systemd_journald: journald did not synchronize: %m");
        }
        poll_journal(now, s);
}

int journald_queue_final(void *state, const void *owner) {
        JournaldSource *s = state;

        return s ? poller_call(s->poller, final_read, s, owner) : 0;
}
