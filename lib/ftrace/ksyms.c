/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * /proc/kallsyms as a sorted table: one array of addresses for the binary search, the
 * names in one block. About 4 MiB for a kernel of 120,000 symbols.
 */
#include <assert.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ksyms.h"
#include "macro.h"
#include "parse-util.h"

struct Ksyms {
        _Atomic unsigned n_ref;
        size_t n;
        uint64_t *addresses;      /* ascending */
        uint32_t *name_offsets;   /* into names; the top bit set for a text symbol */
        char *names;
        size_t names_len;
};

#define TEXT_BIT 0x80000000u

typedef struct Entry {
        uint64_t address;
        uint32_t name_offset;     /* with TEXT_BIT */
} Entry;

static int entry_compare(const void *a, const void *b) {
        const Entry *x = a, *y = b;

        if (x->address != y->address)
                return x->address < y->address ? -1 : 1;
        /* At one address, a text symbol first: it is the one kept. */
        return (int) (y->name_offset >> 31) - (int) (x->name_offset >> 31);
}

/* One line "ADDRESS TYPE NAME[\t[MODULE]]" at @l (up to @eol): its address and where its
 * name is. */
static int parse_line(const char *l, const char *eol, uint64_t *ret_address, char *ret_type,
                      const char **ret_name, size_t *ret_name_len) {
        uint64_t a = 0;
        const char *p = l, *name;
        unsigned digits = 0;

        for (int v; p < eol && (v = hex_digit_value(*p)) >= 0; p++, digits++)
                a = (a << 4) | (uint64_t) v;
        if (digits == 0 || digits > 16 || eol - p < 4 || p[0] != ' ' || p[2] != ' ')
                return -EBADMSG;
        name = p + 3;
        *ret_address = a;
        *ret_type = p[1];
        *ret_name = name;
        *ret_name_len = strcspn(name, "\t \n");
        if (name + *ret_name_len > eol)
                *ret_name_len = (size_t) (eol - name);
        return *ret_name_len > 0 && *ret_name_len < TEXT_BIT ? 0 : -EBADMSG;
}

static bool type_is_text(char t) {
        return t == 't' || t == 'T' || t == 'w' || t == 'W';
}

static size_t count_lines(const char *text, size_t len) {
        size_t n = 0;

        for (const char *p = text; (p = memchr(p, '\n', len - (size_t) (p - text))); p++)
                n++;
        return n + (len > 0 && text[len - 1] != '\n');
}

/* Every line into @entries (the names copied into @k->names). Returns how many, or
 * -EPERM when no address is set. */
static ssize_t read_entries(Ksyms *k, const char *text, size_t len, Entry *entries) {
        size_t n = 0, names_len = 0;
        bool any_address = false;

        for (const char *l = text, *end = text + len; l < end;) {
                const char *eol = memchr(l, '\n', (size_t) (end - l)) ?: end, *name;
                uint64_t address;
                size_t name_len;
                char type;

                if (eol > l) {
                        if (parse_line(l, eol, &address, &type, &name, &name_len) < 0)
                                return -EBADMSG;
                        if (names_len + name_len + 1 >= TEXT_BIT)
                                return -E2BIG;
                        memcpy(k->names + names_len, name, name_len);
                        k->names[names_len + name_len] = '\0';
                        entries[n++] = (Entry) { address, (uint32_t) names_len | (type_is_text(type) ? TEXT_BIT : 0) };
                        names_len += name_len + 1;
                        any_address = any_address || address != 0;
                }
                l = eol + 1;
        }
        k->names_len = names_len;
        return any_address ? (ssize_t) n : -EPERM;
}

/* Sorted, one entry per address, into the table's arrays. */
static int build_arrays(Ksyms *k, Entry *entries, size_t n) {
        qsort(entries, n, sizeof(Entry), entry_compare);
        k->addresses = malloc(sizeof(uint64_t) * (n ?: 1));
        k->name_offsets = malloc(sizeof(uint32_t) * (n ?: 1));
        if (!k->addresses || !k->name_offsets)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                if (k->n > 0 && k->addresses[k->n - 1] == entries[i].address)
                        continue;
                k->addresses[k->n] = entries[i].address;
                k->name_offsets[k->n] = entries[i].name_offset;
                k->n++;
        }
        return 0;
}

int ksyms_parse(const char *text, size_t len, Ksyms **ret) {
        _cleanup_free_ Entry *entries = NULL;
        Ksyms *k;
        size_t lines;
        ssize_t n;
        int r;

        assert(text || len == 0);
        assert(ret);

        lines = count_lines(text, len);
        if (lines > KSYMS_MAX_SYMBOLS)
                return -E2BIG;
        k = calloc(1, sizeof(Ksyms));
        entries = malloc(sizeof(Entry) * (lines ?: 1));
        if (k)
                k->names = malloc(len + 1);
        if (!k || !entries || !k->names) {
                ksyms_unref(k);
                return -ENOMEM;
        }
        k->n_ref = 1;
        n = read_entries(k, text, len, entries);
        r = n < 0 ? (int) n : build_arrays(k, entries, (size_t) n);
        if (r >= 0) {
                /* The names take half the text: give the rest back. */
                char *names = realloc(k->names, k->names_len ?: 1);
                if (names)
                        k->names = names;
        }
        if (r < 0) {
                ksyms_unref(k);
                return r;
        }
        *ret = k;
        return 0;
}

Ksyms *ksyms_ref(Ksyms *k) {
        if (k)
                atomic_fetch_add(&k->n_ref, 1);
        return k;
}

Ksyms *ksyms_unref(Ksyms *k) {
        if (!k || atomic_fetch_sub(&k->n_ref, 1) > 1)
                return NULL;
        free(k->addresses);
        free(k->name_offsets);
        free(k->names);
        free(k);
        return NULL;
}

size_t ksyms_count(const Ksyms *k) {
        return k ? k->n : 0;
}

size_t ksyms_mem_bytes(const Ksyms *k) {
        if (!k)
                return 0;
        return sizeof(*k) + k->n * (sizeof(uint64_t) + sizeof(uint32_t)) + k->names_len;
}

ssize_t ksyms_lookup(const Ksyms *k, uint64_t address) {
        size_t lo = 0, hi;

        assert(k);

        /* The last symbol whose address is not above @address: lo after the loop. */
        hi = k->n;
        if (hi == 0 || address < k->addresses[0])
                return -ENOENT;
        while (hi - lo > 1) {
                size_t mid = lo + (hi - lo) / 2;

                if (k->addresses[mid] <= address)
                        lo = mid;
                else
                        hi = mid;
        }
        if (!(k->name_offsets[lo] & TEXT_BIT) || lo + 1 >= k->n)
                return -ENOENT;
        return (ssize_t) lo;
}

const char *ksyms_name(const Ksyms *k, size_t i) {
        assert(k);
        assert(i < k->n);
        return k->names + (k->name_offsets[i] & ~TEXT_BIT);
}

uint64_t ksyms_address(const Ksyms *k, size_t i) {
        assert(k);
        assert(i < k->n);
        return k->addresses[i];
}
