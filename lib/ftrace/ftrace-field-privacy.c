/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Which numbers of an event may hold a kernel address, decided once per event format when
 * the event is added, never per record. A number is one of:
 *   an address   a pointer type, a long the print fmt prints as a pointer, or a long named
 *                for a code address (call_site, ip...): hashed for a caller who may not
 *                see addresses, named as a function with symbolize_ksyms;
 *   plain        a number declared narrower than a pointer (an int that the syscall events
 *                keep in 8 bytes, then read at its declared width), or a pointer-sized
 *                number whose name is in plain_field_names below;
 *   opaque       every other pointer-sized number, and the elements of an array of them:
 *                page frame numbers, vmalloc's and the IOMMU's addresses, user addresses of
 *                other processes. Hashed like an address, never symbolized.
 * So a field is written as it is only because a rule says it holds no address: a field a
 * new kernel adds is hashed until its name is listed here.
 */
#include "ftrace-parser-local.h"

/* Fields of the events a caller without raw addresses may record (service/config/
 * session-config-access.c) that are pointer-sized and hold no kernel address and no page
 * frame: counts, sizes, lengths, ids, inode and sector numbers, page-cache indexes,
 * times, rates, flags and states, file descriptors and offsets. Sorted (bsearch). Left
 * out on purpose, so hashed: pfn, *_pfn, zone_start and zone_end (page frames), addr,
 * start, brk, vm_start, vm_end, newsp, tls, new_addr, ctx_id, arg and arg1..arg5, data,
 * val (syscall arguments that may be user addresses), sa_handler (a user address). */
static const char *const plain_field_names[] = {
        "age", "anon_rss", "aperf", "argsz", "available", "avg_write_bw", "background_thresh",
        "balanced_dirty_ratelimit", "baseclk", "bdi_id", "bucket_expiry", "bufsize", "bytecount", "bytes",
        "bytes_alloc", "bytes_req", "cache_items", "calltime", "cgroup_ino", "clone_flags", "count", "cpu",
        "delta", "depth", "dirtied_when", "dirty", "dirty_limit", "dirty_rate", "dirty_ratelimit",
        "dirty_thresh", "dst_id", "expires", "fd", "file_rss", "flags", "from", "gfp_flags", "gfp_mask",
        "hist", "hist_head", "home_node", "i_ino", "id", "idx1", "idx2", "index", "ino", "interval_nsec",
        "interval_sec", "last_index", "last_reap", "len", "len_in", "length", "limit", "liovcnt",
        "lowmem_reserve", "mask", "max", "maxnode", "mem_allowed", "min", "min_nr", "min_wmark", "mode",
        "mperf", "msg_len", "msgsz", "msgtyp", "nbytes", "new_cgroup_ino", "new_len", "new_scan",
        "new_sector", "now", "nr", "nr_active", "nr_congested", "nr_deactivated", "nr_dirtied", "nr_dirty",
        "nr_failed", "nr_immediate", "nr_migrated", "nr_mnt_ids", "nr_objects_to_shrink", "nr_pages",
        "nr_reclaimed", "nr_ref_keep", "nr_referenced", "nr_requested", "nr_scanned", "nr_sector",
        "nr_sectors", "nr_segs", "nr_skipped", "nr_taken", "nr_to_write", "nr_unmap_fail", "nr_writeback",
        "nr_written", "num", "off", "offset", "old_cgroup_ino", "old_len", "old_sector", "older", "overrun",
        "page_cgroup_ino", "pages", "pages_skipped", "pause", "paused", "period", "pgtables", "pid", "plen",
        "pos", "pos_h", "pos_l", "prate", "prev_state", "prio", "prot", "range_end", "range_start", "rate",
        "reclaimable", "request", "ret", "rettime", "riovcnt", "runtime", "sa_flags", "sector", "setpoint",
        "shmem_rss", "sigsetsize", "size", "sizemask", "softexpires", "state", "target", "task_ratelimit",
        "tgid", "think", "total_scan", "total_vm", "totalreserve_pages", "tsc", "unshare_flags",
        "unused_scan", "usize", "value_nsec", "value_sec", "vlen", "vruntime", "watermark_high",
        "watermark_low", "watermark_min", "watermark_promo", "wb_dirty", "wb_setpoint", "write_bw",
        "writeback_index", "wrote",
};

/* C types of at most 32 bits, as event formats spell them (after const, volatile and
 * signed/unsigned are taken off). */
static const char *const narrow_types[] = {
        "_Bool", "__be16", "__be32", "__kernel_pid_t", "__le16", "__le32", "__poll_t", "__s16", "__s32", "__s8",
        "__u16", "__u32", "__u8", "blk_opf_t", "bool", "char", "clockid_t", "dev_t", "fmode_t", "gfp_t", "gid_t",
        "int", "int16_t", "int32_t", "int8_t", "key_serial_t", "key_t", "mode_t", "mqd_t", "pid_t", "qid_t",
        "rwf_t", "s16", "s32", "s8", "short", "timer_t", "u16", "u32", "u8", "uid_t", "uint16_t", "uint32_t",
        "uint8_t", "umode_t",
};

static int compare_name(const void *key, const void *entry) {
        return strcmp(key, *(const char *const *) entry);
}

bool ftrace_field_name_is_plain(const char *name) {
        return bsearch(name, plain_field_names, ELEMENTSOF(plain_field_names), sizeof(plain_field_names[0]),
                       compare_name) != NULL;
}

/* @s without a leading @word and the blanks after it. */
static const char *skip_word(const char *s, const char *word) {
        size_t n = strlen(word);

        if (strncmp(s, word, n) != 0 || (s[n] != ' ' && s[n] != '\0'))
                return s;
        s += n;
        while (*s == ' ')
                s++;
        return s;
}

bool ftrace_type_is_narrow(const char *type) {
        const char *t = type, *prev;
        bool is_unsigned = false;

        if (strpbrk(type, "*["))
                return false;
        do {
                prev = t;
                t = skip_word(t, "const");
                t = skip_word(t, "volatile");
                t = skip_word(t, "signed");
                if (skip_word(t, "unsigned") != t) {
                        t = skip_word(t, "unsigned");
                        is_unsigned = true;
                }
        } while (t != prev);
        /* An enum is an int; "unsigned" alone is an unsigned int. */
        if (skip_word(t, "enum") != t || (*t == '\0' && is_unsigned))
                return true;
        if (t[strcspn(t, " ")] != '\0')
                return false;
        for (size_t i = 0; i < ELEMENTSOF(narrow_types); i++)
                if (strcmp(narrow_types[i], t) == 0)
                        return true;
        return false;
}

/* An array whose elements are pointer-sized numbers ("unsigned long[6]", "u64[]",
 * "void *[4]"): the element type is the part before '[', after __data_loc. */
bool ftrace_array_of_words(const struct tep_format_field *f) {
        const char *t = f->type, *bracket;
        size_t len;

        if (strncmp(t, "__data_loc ", 11) == 0)
                t += 11;
        else if (strncmp(t, "__rel_loc ", 10) == 0)
                t += 10;
        bracket = strchr(t, '[');
        len = bracket ? (size_t) (bracket - t) : strlen(t);
        return memmem(t, len, "*", 1) || memmem(t, len, "long", 4) || memmem(t, len, "64", 2);
}

/* Fields in which the kernel keeps a code address as a number (_RET_IP_, _THIS_IP_, a
 * function): kmem's call_site, ftrace's ip and parent_ip, xfs's caller_ip, kmem_cache's
 * caller, the workqueue and timer callbacks' func and function, ret_ip. Only when the
 * type is a long, so that a PCI function number called "func" stays a number. */
static const char *const address_field_names[] = {
        "call_site", "ip", "parent_ip", "caller_ip", "caller", "ret_ip", "func", "function",
};

static bool is_identifier_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* The print fmt prints @name with %p or %ps, through "(void *)REC->name": how the kernel
 * marks an unsigned long as an address (page_fault_user's address, xfs's caller_ip). */
static bool print_fmt_casts_to_pointer(const char *text, const char *name) {
        static const char cast[] = "(void *)REC->";
        const char *q = strstr(text, "\nprint fmt:");
        size_t n = strlen(name);

        while (q && (q = strstr(q, cast))) {
                q += strlen(cast);
                if (strncmp(q, name, n) == 0 && !is_identifier_char(q[n]))
                        return true;
        }
        return false;
}

bool ftrace_field_is_address(const struct tep_format_field *f, const char *text) {
        if ((f->flags & TEP_FIELD_IS_POINTER) || strchr(f->type, '*'))
                return true;
        if (strstr(f->type, "long"))
                for (size_t i = 0; i < ELEMENTSOF(address_field_names); i++)
                        if (strcmp(f->name, address_field_names[i]) == 0)
                                return true;
        return print_fmt_casts_to_pointer(text, f->name);
}
