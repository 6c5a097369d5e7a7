/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <pthread.h>
#include <stdlib.h>

#include "fd-util.h"
#include "ksyms-cache.h"
#include "log.h"
#include "time-util.h"

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static Ksyms *cached;              /* the cache's own reference */
static uint64_t cached_at_usec;    /* CLOCK_MONOTONIC */
static unsigned cache_users;       /* references handed out and not given back */
static bool cache_retained;        /* a session asked for KSYMS_RETAIN */

static int read_kallsyms(Ksyms **ret) {
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r;

        r = read_full_file("/proc/kallsyms", KSYMS_MAX_FILE_BYTES, &text, &len);
        if (r < 0)
                return log_warning_errno(r, "Failed to read /proc/kallsyms: %m");
        r = ksyms_parse(text, len, ret);
        if (r < 0)
                return log_warning_errno(r, "Failed to parse /proc/kallsyms: %m");
        log_debug("Read %zu kernel symbols (%zu KiB).", ksyms_count(*ret), ksyms_mem_bytes(*ret) / 1024);
        return 0;
}

int ksyms_cache_get(bool retain, Ksyms **ret) {
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        int r = 0;

        /* Held while reading: two sessions starting together read the file once. */
        pthread_mutex_lock(&cache_lock);
        if (!cached || now - cached_at_usec > KSYMS_CACHE_MAX_AGE_USEC) {
                Ksyms *fresh = NULL;

                r = read_kallsyms(&fresh);
                if (r >= 0) {
                        ksyms_unref(cached);
                        cached = fresh;
                        cached_at_usec = now;
                }
        }
        if (r >= 0) {
                cache_users++;
                cache_retained = cache_retained || retain;
                *ret = ksyms_ref(cached);
        }
        pthread_mutex_unlock(&cache_lock);
        return r;
}

void ksyms_cache_put(Ksyms *k) {
        if (!k)
                return;
        pthread_mutex_lock(&cache_lock);
        ksyms_unref(k);
        if (cache_users > 0)
                cache_users--;
        if (cache_users == 0 && !cache_retained)
                cached = ksyms_unref(cached);
        pthread_mutex_unlock(&cache_lock);
}

int ksyms_append_new_symbols(FtraceParser *parser, const Ksyms *k, TraceWriter *w) {
        Tracebus__TracePacket packet = TRACEBUS__TRACE_PACKET__INIT;
        Tracebus__InternedData interned = TRACEBUS__INTERNED_DATA__INIT;
        _cleanup_free_ Tracebus__InternedString *strings = NULL;
        _cleanup_free_ Tracebus__InternedString **list = NULL;
        const uint32_t *symbols;
        uint32_t first_iid;
        size_t n;

        n = ftrace_parser_take_new_symbols(parser, &symbols, &first_iid);
        if (n == 0)
                return 0;
        strings = calloc(n, sizeof(*strings));
        list = calloc(n, sizeof(*list));
        if (!strings || !list)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                const char *name = ksyms_name(k, symbols[i]);

                tracebus__interned_string__init(&strings[i]);
                strings[i].has_iid = strings[i].has_str = true;
                strings[i].iid = first_iid + i;
                strings[i].str = (ProtobufCBinaryData) { strlen(name), (uint8_t *) name };
                list[i] = &strings[i];
        }
        interned.n_kernel_symbols = n;
        interned.kernel_symbols = list;
        packet.interned_data = &interned;
        return trace_writer_append_meta(w, &packet, TRACE_SEQUENCE_FTRACE);
}
