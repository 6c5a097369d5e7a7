/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target: the service's parsers of /proc texts, each on arbitrary bytes.
 * The kernel writes these files, but a process chooses much of what they say about it
 * (its comm, argv, its uids), and a container's /proc may
 * be another kernel's. The first byte picks the parser; the rest is the text, ending
 * at its first NUL (what the readers see), except for cmdline, whose NULs are its own:
 *
 *   0 /proc/PID/status, proc_status_parse() (the process tree)
 *   1 /proc/PID/cmdline, proc_cmdline_parse()
 *   2 /proc/PID/stat, proc_stat_start_ticks()
 *   3 status, smaps_rollup and stat, NUL-separated, process_stats_parse_texts()
 *   4 /proc/self/mountinfo, proc_mount_hide_parse() (whether /proc hides processes)
 *   5-11 /proc/meminfo, vmstat, stat, buddyinfo, diskstats, pressure/<r>, slabinfo
 *        (linux.sys_stats)
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "process-scan-local.h"
#include "process-stats.h"
#include "process-view.h"
#include "sys-stats.h"

static char *text_of(const uint8_t *data, size_t size) {
        char *text = malloc(size + 1);

        if (!text)
                abort();
        memcpy(text, data, size);
        text[size] = 0;
        return text;
}

static void fuzz_cmdline(const uint8_t *data, size_t size) {
        Tracebus__ProcessTree__Process *p = malloc(sizeof(*p));
        char *raw = text_of(data, size);

        if (!p)
                abort();
        tracebus__process_tree__process__init(p);
        (void) proc_cmdline_parse(p, raw, size);
        for (size_t i = 0; i < p->n_cmdline; i++)
                if (!p->cmdline[i])
                        abort();
        process_description_free(p, /* thread= */ false);
        free(raw);
}

static void fuzz_process_stats(char *text, size_t size) {
        /* The three texts, split at the first two NULs of the input's @size bytes. */
        char *smaps = memchr(text, 0, size);
        char *stat = smaps ? memchr(smaps + 1, 0, size - (size_t) (smaps - text) - 1) : NULL;
        long owner;

        (void) process_stats_parse_texts(text, smaps ? smaps + 1 : NULL, stat ? stat + 1 : NULL, &owner);
}

static void fuzz_sys_stats(uint8_t which, char *text) {
        static const char *const resources[] = { "cpu", "io", "memory" };
        Tracebus__SysStats s = TRACEBUS__SYS_STATS__INIT;
        Tracebus__SysStats *out = malloc(sizeof(*out));

        if (!out)
                abort();
        *out = s;
        switch (which) {
        case 5: (void) sys_stats_parse_meminfo(text, out); break;
        case 6: (void) sys_stats_parse_vmstat(text, out); break;
        case 7: (void) sys_stats_parse_stat(text, 10000000, out); break;
        case 8: (void) sys_stats_parse_buddyinfo(text, out); break;
        case 9: (void) sys_stats_parse_diskstats(text, out); break;
        case 10: (void) sys_stats_parse_psi(text, resources[strlen(text) % 3], out); break;
        default: (void) sys_stats_parse_slabinfo(text, out); break;
        }
        tracebus__sys_stats__free_unpacked(out, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        uint8_t which;
        char *text;

        if (size < 1)
                return 0;
        which = data[0] % 12;
        data++;
        size--;
        if (which == 1) {
                fuzz_cmdline(data, size);
                return 0;
        }
        text = text_of(data, size);
        if (which == 0) {
                ProcStatus st;
                (void) proc_status_parse(text, &st);
        } else if (which == 2) {
                unsigned long long ticks;
                (void) proc_stat_start_ticks(text, &ticks);
        } else if (which == 3)
                fuzz_process_stats(text, size);
        else if (which == 4) {
                ProcMountHide hide;
                proc_mount_hide_parse(text, &hide);
        } else
                fuzz_sys_stats(which, text);
        free(text);
        return 0;
}
