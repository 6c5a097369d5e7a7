/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "event-index.h"
#include "fd-util.h"
#include "log.h"
#include "strv.h"
#include "time-util.h"

#define NO_ENTRY UINT32_MAX
/* available_events lists a few thousand lines of about 30 bytes: far below this. */
#define AVAILABLE_EVENTS_MAX (16u * 1024u * 1024u)
/* EventSelection.chosen flags: the event itself, and (on a group's first event) the
 * whole group, so that a repeated "group/ *" costs one lookup, not a walk of the group. */
#define CHOSEN_EVENT 1u
#define CHOSEN_GROUP 2u
/* And the event was named (by "group/name" or its bare name), not only through a glob. */
#define CHOSEN_NAMED 4u
/* dynamic_events lists one probe or synthetic event a line: a few hundred at most. */
#define DYNAMIC_EVENTS_MAX (1024u * 1024u)

typedef enum KeyKind { KEY_EVENT, KEY_GROUP, KEY_NAME, _KEY_MAX } KeyKind;

typedef struct EventEntry {
        char *event;              /* "group/name" */
        uint32_t group_len;
        uint32_t len;
        uint32_t next_same_name;  /* the next event of this name in another group */
        bool dynamic;             /* listed in dynamic_events: a probe or synthetic event */
} EventEntry;

struct EventIndex {
        char *root;
        EventEntry *entries;      /* sorted by "group/name": a group's events are adjacent */
        size_t n_entries, allocated;
        uint32_t *slots[_KEY_MAX]; /* open addressing: entry index + 1; 0 is empty */
        size_t n_slots;           /* a power of two, at least twice n_entries */
        uint64_t read_usec;
        uint64_t generation;      /* counts the reads: selections belong to one */
};

/* One per process: the service has one tracefs, the fuzzers one captured tree. */
static EventIndex *cached_index;

bool event_name_valid(const char *s, size_t len) {
        if (len == 0 || len > 128)
                return false;
        for (size_t i = 0; i < len; i++)
                if (!(s[i] == '_' || s[i] == '-' || (s[i] >= '0' && s[i] <= '9') ||
                      (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')))
                        return false;
        return true;
}

static void entries_clear(EventIndex *idx) {
        for (size_t i = 0; i < idx->n_entries; i++)
                free(idx->entries[i].event);
        idx->entries = mfree(idx->entries);
        idx->n_entries = idx->allocated = 0;
        for (KeyKind k = 0; k < _KEY_MAX; k++)
                idx->slots[k] = mfree(idx->slots[k]);
        idx->n_slots = 0;
}

static void key_of(const EventEntry *e, KeyKind kind, const char **ret, size_t *ret_len) {
        if (kind == KEY_EVENT) {
                *ret = e->event;
                *ret_len = e->len;
        } else if (kind == KEY_GROUP) {
                *ret = e->event;
                *ret_len = e->group_len;
        } else {
                *ret = e->event + e->group_len + 1;
                *ret_len = e->len - e->group_len - 1;
        }
}

/* FNV-1a: the keys are short names, not chosen to collide by anyone but the kernel. */
static size_t hash_key(const char *key, size_t len) {
        uint64_t h = 14695981039346656037ULL;

        for (size_t i = 0; i < len; i++)
                h = (h ^ (unsigned char) key[i]) * 1099511628211ULL;
        return (size_t) h;
}

/* The slot that holds @key, or the empty slot where it would go. */
static size_t slot_of(const EventIndex *idx, KeyKind kind, const char *key, size_t len) {
        size_t mask = idx->n_slots - 1;

        for (size_t i = hash_key(key, len) & mask;; i = (i + 1) & mask) {
                uint32_t v = idx->slots[kind][i];
                const char *k;
                size_t klen;

                if (v == 0)
                        return i;
                key_of(&idx->entries[v - 1], kind, &k, &klen);
                if (klen == len && memcmp(k, key, len) == 0)
                        return i;
        }
}

static uint32_t find(const EventIndex *idx, KeyKind kind, const char *key, size_t len) {
        if (idx->n_slots == 0)
                return NO_ENTRY;
        return idx->slots[kind][slot_of(idx, kind, key, len)] - 1; /* empty: 0 - 1 == NO_ENTRY */
}

static int add_entry(EventIndex *idx, const char *group, size_t group_len, const char *name, size_t name_len) {
        EventEntry *e;

        /* Lines that are no plain group:name (none on a kernel we know) are left out. */
        if (!event_name_valid(group, group_len) || !event_name_valid(name, name_len))
                return 0;
        if (idx->n_entries == idx->allocated) {
                size_t n = MAX(idx->allocated * 2, 1024u);
                EventEntry *p = reallocarray(idx->entries, n, sizeof(*p));

                if (!p)
                        return -ENOMEM;
                idx->entries = p;
                idx->allocated = n;
        }
        e = &idx->entries[idx->n_entries];
        if (asprintf(&e->event, "%.*s/%.*s", (int) group_len, group, (int) name_len, name) < 0)
                return -ENOMEM;
        e->group_len = (uint32_t) group_len;
        e->len = (uint32_t) (group_len + 1 + name_len);
        e->next_same_name = NO_ENTRY;
        e->dynamic = false;
        idx->n_entries++;
        return 0;
}

/* available_events: one "group:name" a line. */
static int parse_available_events(EventIndex *idx, const char *text) {
        for (const char *line = text; *line;) {
                const char *end = strchrnul(line, '\n'), *colon = memchr(line, ':', end - line);
                int r;

                if (colon) {
                        r = add_entry(idx, line, colon - line, colon + 1, end - colon - 1);
                        if (r < 0)
                                return r;
                }
                line = *end ? end + 1 : end;
        }
        return 0;
}

DEFINE_TRIVIAL_CLEANUP_FUNC_VOID(DIR *, closedir);

/* Every directory under events/@group is an event of @group. */
static int scan_group(EventIndex *idx, int events_fd, const char *group) {
        _cleanup_(closedirp) DIR *d = NULL;
        int fd, r;

        fd = openat(events_fd, group, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        d = fdopendir(fd);
        if (!d) {
                safe_close(fd);
                return -errno;
        }
        for (struct dirent *e; (e = readdir(d));) {
                if (e->d_name[0] == '.' || e->d_type != DT_DIR)
                        continue;
                r = add_entry(idx, group, strlen(group), e->d_name, strlen(e->d_name));
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The events directory itself: every group in it when @only_group is NULL (a captured tree,
 * such as tests/fixtures/ftrace, has no available_events), or that one group. */
static int scan_events_dir(EventIndex *idx, const char *only_group) {
        _cleanup_(closedirp) DIR *groups = NULL;
        _cleanup_free_ char *path = NULL;
        int r;

        if (asprintf(&path, "%s/events", idx->root) < 0)
                return -ENOMEM;
        groups = opendir(path);
        if (!groups)
                return errno == ENOENT ? 0 : -errno;
        if (only_group)
                return scan_group(idx, dirfd(groups), only_group);
        for (struct dirent *g; (g = readdir(groups));) {
                if (g->d_name[0] == '.' || g->d_type != DT_DIR)
                        continue;
                r = scan_group(idx, dirfd(groups), g->d_name);
                if (r < 0 && r != -EACCES)
                        return r;
        }
        return 0;
}

static int compare_entries(const void *a, const void *b) {
        return strcmp(((const EventEntry *) a)->event, ((const EventEntry *) b)->event);
}

static void insert_key(EventIndex *idx, KeyKind kind, uint32_t i) {
        const char *key;
        size_t len, slot;

        key_of(&idx->entries[i], kind, &key, &len);
        slot = slot_of(idx, kind, key, len);
        if (idx->slots[kind][slot] == 0) {
                idx->slots[kind][slot] = i + 1;
                return;
        }
        /* Taken: only names repeat (a group's first event keeps the group's slot). */
        if (kind == KEY_NAME) {
                EventEntry *first = &idx->entries[idx->slots[kind][slot] - 1];

                idx->entries[i].next_same_name = first->next_same_name;
                first->next_same_name = i;
        }
}

static int build_tables(EventIndex *idx) {
        size_t n = 0;

        qsort(idx->entries, idx->n_entries, sizeof(EventEntry), compare_entries);
        /* The same event twice would be chosen twice. */
        for (size_t i = 0; i < idx->n_entries; i++) {
                if (n > 0 && strcmp(idx->entries[n - 1].event, idx->entries[i].event) == 0)
                        free(idx->entries[i].event);
                else
                        idx->entries[n++] = idx->entries[i];
        }
        idx->n_entries = n;
        for (idx->n_slots = 64; idx->n_slots < 2 * n; idx->n_slots *= 2)
                ;
        for (KeyKind k = 0; k < _KEY_MAX; k++) {
                idx->slots[k] = calloc(idx->n_slots, sizeof(uint32_t));
                if (!idx->slots[k])
                        return -ENOMEM;
        }
        for (uint32_t i = 0; i < n; i++)
                for (KeyKind k = 0; k < _KEY_MAX; k++)
                        insert_key(idx, k, i);
        return 0;
}

/* dynamic_events: one "<kind>:group/name ..." a line ("p:kprobes/open do_sys_open",
 * "r16:grp/ev sym", "s:synthetic/lat u64 lat"), whatever group its maker chose, "sched"
 * included. A kernel without the file has no such events. */
static int mark_dynamic_events(EventIndex *idx) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        int r;

        if (asprintf(&path, "%s/dynamic_events", idx->root) < 0)
                return -ENOMEM;
        r = read_full_file(path, DYNAMIC_EVENTS_MAX, &text, NULL);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        for (const char *line = text; *line;) {
                const char *end = strchrnul(line, '\n'), *colon = memchr(line, ':', end - line);
                size_t len = colon ? strcspn(colon + 1, " \n") : 0;
                uint32_t i = len > 0 ? find(idx, KEY_EVENT, colon + 1, len) : NO_ENTRY;

                if (i != NO_ENTRY)
                        idx->entries[i].dynamic = true;
                line = *end ? end + 1 : end;
        }
        return 0;
}

static int read_into(EventIndex *idx) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        int r;

        if (asprintf(&path, "%s/available_events", idx->root) < 0)
                return -ENOMEM;
        r = read_full_file(path, AVAILABLE_EVENTS_MAX, &text, NULL);
        if (r == -ENOENT) {
                /* Without available_events, the events directory is the list. */
                r = scan_events_dir(idx, NULL);
                if (r < 0)
                        return log_debug_errno(r, "Event index: cannot scan %s/events: %m", idx->root);
        } else if (r < 0)
                return log_debug_errno(r, "Event index: cannot read %s: %m", path);
        else {
                r = parse_available_events(idx, text);
                if (r < 0)
                        return log_debug_errno(r, "Event index: cannot parse %s: %m", path);
                /* available_events leaves out the ftrace group (print, function, ...), which
                 * the kernel writes by itself and sessions record all the same: that one
                 * directory is scanned as well. */
                r = scan_events_dir(idx, "ftrace");
                if (r < 0)
                        return log_debug_errno(r, "Event index: cannot scan %s/events/ftrace: %m", idx->root);
        }
        r = build_tables(idx);
        if (r < 0)
                return log_debug_errno(r, "Event index: cannot build the lookup tables: %m");
        r = mark_dynamic_events(idx);
        if (r < 0)
                return log_debug_errno(r, "Event index: cannot read %s/dynamic_events: %m", idx->root);
        return 0;
}

/* Reads the events into fresh tables, which replace the old ones only once complete:
 * a failed re-read leaves the last list in use. */
static int read_events(EventIndex *idx) {
        EventIndex fresh = { .root = idx->root };
        int r;

        r = read_into(&fresh);
        if (r < 0) {
                entries_clear(&fresh);
                return r;
        }
        entries_clear(idx);
        idx->entries = fresh.entries;
        idx->n_entries = fresh.n_entries;
        idx->allocated = fresh.allocated;
        for (KeyKind k = 0; k < _KEY_MAX; k++)
                idx->slots[k] = fresh.slots[k];
        idx->n_slots = fresh.n_slots;
        idx->read_usec = now_usec(CLOCK_MONOTONIC);
        idx->generation++;
        return 0;
}

static EventIndex *event_index_free(EventIndex *idx) {
        if (!idx)
                return NULL;
        entries_clear(idx);
        free(idx->root);
        return mfree(idx);
}
DEFINE_TRIVIAL_CLEANUP_FUNC(EventIndex *, event_index_free);

int event_index_get(const char *tracefs_root, EventIndex **ret) {
        _cleanup_(event_index_freep) EventIndex *idx = NULL;
        int r;

        if (cached_index && strcmp(cached_index->root, tracefs_root) == 0) {
                *ret = cached_index;
                return 0;
        }
        idx = calloc(1, sizeof(*idx));
        if (!idx)
                return -ENOMEM;
        idx->root = strdup(tracefs_root);
        if (!idx->root)
                return -ENOMEM;
        r = read_events(idx);
        if (r < 0)
                return r;
        event_index_free(cached_index);
        *ret = cached_index = TAKE_PTR(idx);
        return 0;
}

int event_index_refresh(EventIndex *idx, bool force) {
        int r;

        if (!force && now_usec(CLOCK_MONOTONIC) - idx->read_usec < EVENT_INDEX_REFRESH_USEC)
                return 0;
        r = read_events(idx);
        if (r < 0) {
                /* Tried: the next try waits its second too. */
                idx->read_usec = now_usec(CLOCK_MONOTONIC);
                return r;
        }
        return 1;
}

bool event_index_is_stale_for(const EventIndex *idx, const char *event) {
        _cleanup_free_ char *path = NULL;
        struct stat st;

        if (asprintf(&path, "%s/events/%s/format", idx->root, event) < 0)
                return false;
        return stat(path, &st) >= 0 && S_ISREG(st.st_mode);
}

void event_selection_done(EventSelection *sel) {
        sel->chosen = mfree(sel->chosen);
        sel->order = mfree(sel->order);
        *sel = (EventSelection) {};
}

static int choose(const EventIndex *idx, EventSelection *sel, uint32_t i, bool named) {
        if (!sel->chosen) {
                sel->chosen = calloc(idx->n_entries, sizeof(uint8_t));
                sel->order = calloc(idx->n_entries, sizeof(uint32_t));
                if (!sel->chosen || !sel->order)
                        return -ENOMEM;
                sel->index = idx;
                sel->generation = idx->generation;
        }
        if (sel->generation != idx->generation)
                return -ESTALE;
        if (!(sel->chosen[i] & CHOSEN_EVENT)) {
                sel->chosen[i] |= CHOSEN_EVENT;
                sel->order[sel->n_order++] = i;
        }
        if (named)
                sel->chosen[i] |= CHOSEN_NAMED;
        return 0;
}

static int select_group(const EventIndex *idx, const char *group, size_t len, EventSelection *sel) {
        uint32_t first = find(idx, KEY_GROUP, group, len);
        int r;

        if (first == NO_ENTRY)
                return 0;
        if (sel->chosen && sel->generation == idx->generation && (sel->chosen[first] & CHOSEN_GROUP))
                return 1;
        for (uint32_t i = first; i < idx->n_entries; i++) {
                const EventEntry *e = &idx->entries[i];

                if (e->group_len != len || memcmp(e->event, group, len) != 0)
                        break;
                r = choose(idx, sel, i, false);
                if (r < 0)
                        return r;
        }
        sel->chosen[first] |= CHOSEN_GROUP;
        return 1;
}

int event_index_select(const EventIndex *idx, const char *pattern, bool named, EventSelection *sel) {
        const char *slash = strchr(pattern, '/');
        size_t group_len;
        uint32_t i;
        int r, n = 0;

        if (!slash) {
                if (!event_name_valid(pattern, strlen(pattern)))
                        return -EINVAL;
                for (i = find(idx, KEY_NAME, pattern, strlen(pattern)); i != NO_ENTRY;
                     i = idx->entries[i].next_same_name, n++) {
                        r = choose(idx, sel, i, named);
                        if (r < 0)
                                return r;
                }
                return n;
        }
        group_len = slash - pattern;
        if (!event_name_valid(pattern, group_len))
                return -EINVAL;
        if (strcmp(slash + 1, "*") == 0)
                return select_group(idx, pattern, group_len, sel);
        if (!event_name_valid(slash + 1, strlen(slash + 1)))
                return -EINVAL;
        i = find(idx, KEY_EVENT, pattern, strlen(pattern));
        if (i == NO_ENTRY)
                return 0;
        r = choose(idx, sel, i, named);
        return r < 0 ? r : 1;
}

void event_selection_get(const EventSelection *sel, size_t k, EventSelected *ret) {
        uint32_t i = sel->order[k];

        *ret = (EventSelected) {
                .event = sel->index->entries[i].event,
                .named = sel->chosen[i] & CHOSEN_NAMED,
                .dynamic = sel->index->entries[i].dynamic,
        };
}

int event_selection_names(const EventSelection *sel, char ***ret) {
        _cleanup_strv_free_ char **names = NULL;

        if (sel->n_order == 0) {
                *ret = NULL;
                return 0;
        }
        if (sel->generation != sel->index->generation)
                return -ESTALE;
        names = calloc(sel->n_order + 1, sizeof(char *));
        if (!names)
                return -ENOMEM;
        for (size_t i = 0; i < sel->n_order; i++) {
                names[i] = strdup(sel->index->entries[sel->order[i]].event);
                if (!names[i])
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(names);
        return 0;
}

int event_index_list(const EventIndex *idx, const char *glob, char ***ret) {
        _cleanup_strv_free_ char **matching = NULL;
        size_t n = 0;

        /* Filled in place: strv_extend() would count the list at every step. */
        matching = calloc(idx->n_entries + 1, sizeof(char *));
        if (!matching)
                return -ENOMEM;
        for (size_t i = 0; i < idx->n_entries; i++) {
                const EventEntry *e = &idx->entries[i];

                if (fnmatch(glob, e->event, 0) != 0 && fnmatch(glob, e->event + e->group_len + 1, 0) != 0)
                        continue;
                matching[n] = strdup(e->event);
                if (!matching[n++])
                        return -ENOMEM;
        }
        if (n == 0) {
                *ret = NULL;
                return 0;
        }
        *ret = TAKE_PTR(matching);
        return 0;
}
