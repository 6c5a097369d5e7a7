/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * --profile[=HZ] [--pid PID | --cmdline NAME]: the short form of a CPU profile.
 * It adds to the light config the linux.perf data source written the way Perfetto's
 * CPU-profiling docs write it (SW_CPU_CLOCK as the timebase at HZ samples a second,
 * callstack_sampling with the scope and user frames), and a first scan of /proc so that
 * the sampled processes have names. The service decides who may sample what
 * (service/sources/perf/perf-scope.c): with org.tracebus.record, only the caller's own processes (a
 * --pid of another user's is refused); every process and the kernel's frames need
 * org.tracebus.manage.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "strv.h"

int cli_parse_profile(Args *a, const char *arg) {
        char *end = NULL;
        unsigned long long hz;

        a->profile = true;
        a->profile_hz = CLI_PROFILE_DEFAULT_HZ;
        if (!arg)
                return 0;
        errno = 0;
        hz = strtoull(arg, &end, 10);
        /* The service clamps what the kernel refuses (perf_event_max_sample_rate), with a
         * warning: only what can never be a rate is refused here. */
        if (errno != 0 || end == arg || *end || arg[0] == '-' || hz == 0 || hz > UINT32_MAX)
                return cli_refuse("--profile argument is invalid: '%s' (samples a second, e.g. --profile=100)", arg);
        a->profile_hz = (uint32_t) hz;
        return 0;
}

int cli_parse_profile_pid(Args *a, const char *arg) {
        char *end = NULL;
        long pid;

        errno = 0;
        pid = strtol(arg, &end, 10);
        if (errno != 0 || end == arg || *end || pid <= 0 || pid > INT32_MAX)
                return cli_refuse("--pid argument is invalid: '%s' (a process id)", arg);
        return strv_extend(&a->profile_pids, arg) < 0 ? -ENOMEM : 0;
}

int cli_parse_profile_cmdline(Args *a, const char *arg) {
        if (isempty_str(arg))
                return cli_refuse("--cmdline argument is empty (a process name, as Perfetto's target_cmdline)");
        return strv_extend(&a->profile_cmdlines, arg) < 0 ? -ENOMEM : 0;
}

static bool all_digits(const char *s) {
        if (!*s)
                return false;
        for (; *s; s++)
                if (*s < '0' || *s > '9')
                        return false;
        return true;
}

int cli_check_profile(const Args *a) {
        if ((a->profile_pids || a->profile_cmdlines) && !a->profile)
                return cli_refuse("--pid and --cmdline are supported only with --profile");
        if (!a->profile)
                return 0;
        if (a->config_path)
                return cli_refuse("--profile builds its own config: it cannot be combined with -c/--config");
        /* getopt takes an optional argument only after '=': "--profile 500" made 500 an event. */
        STRV_FOREACH(e, a->events)
                if (all_digits(*e))
                        return cli_refuse("'%s' is not an event: write the rate as --profile=%s", *e, *e);
        return 0;
}

static void append_scope(FILE *f, const Args *a) {
        if (!a->profile_pids && !a->profile_cmdlines)
                return;
        fputs("    scope {", f);
        STRV_FOREACH(p, a->profile_pids)
                fprintf(f, " target_pid: %s", *p);
        STRV_FOREACH(c, a->profile_cmdlines) {
                fputs(" target_cmdline: ", f);
                cli_append_quoted(f, *c);
        }
        fputs(" }\n", f);
}

/* DWARF unwinding copies 8 KiB of stack a sample (plus its registers and header): the
 * rings must hold a read period's samples four times over (a process's first samples wait
 * while its files are opened and their unwind tables read), or the kernel drops records. In
 * powers of two from Perfetto's default of 128 pages up to the service's cap. */
static uint32_t ring_pages(uint32_t hz) {
        long page = sysconf(_SC_PAGESIZE);
        uint64_t need = (uint64_t) hz * CLI_PROFILE_READ_PERIOD_MS / 1000u * CLI_PROFILE_SAMPLE_BYTES * 4u /
                        (uint64_t) (page > 0 ? page : 4096);
        uint32_t pages = CLI_PROFILE_MIN_RING_PAGES;

        while (pages < need && pages < CLI_PROFILE_MAX_RING_PAGES)
                pages *= 2;
        return pages;
}

void cli_profile_append_sources(FILE *f, const Args *a) {
        /* Without a scope, where the time goes includes the kernel: its frames are asked
         * for, and kept when the caller may manage (else dropped with a warning). */
        bool system_wide = !a->profile_pids && !a->profile_cmdlines;

        fputs("data_sources { config { name: \"linux.perf\" target_buffer: 0 perf_event_config {\n", f);
        fprintf(f, "  timebase { counter: SW_CPU_CLOCK frequency: %" PRIu32 " }\n", a->profile_hz);
        fprintf(f, "  ring_buffer_pages: %" PRIu32 " ring_buffer_read_period_ms: %u\n", ring_pages(a->profile_hz),
                CLI_PROFILE_READ_PERIOD_MS);
        fputs("  callstack_sampling {\n", f);
        append_scope(f, a);
        /* DWARF: Debian's packages are built without frame pointers. */
        fprintf(f, "    kernel_frames: %s\n    user_frames: UNWIND_DWARF\n  }\n} } }\n",
                system_wide ? "true" : "false");
}
