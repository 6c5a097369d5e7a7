/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus suite, linux.perf: the real service samples tests/perf-target (main ->
 * tb_fa -> tb_fb -> tb_fc -> tb_spin, built with frame pointers) and the trace holds
 * PerfSamples whose interned callstacks name, through each frame's mapping and rel_pc
 * (symbolized here with nm), the chain in order; the packets read field by field, also
 * through protoc against protos/ (Perfetto v58's numbers). tbuser samples only its own
 * processes: a scope naming tbother's process is refused (ProcessNotYours), a
 * system-wide session shows none of tbother's samples, and kernel frames need
 * org.tracebus.manage (tbadmin), whose session shows them named from kallsyms. The
 * frames are named by tracebus-unwind as the caller: tbuser's processes it may not
 * ptrace (non-dumpable, running a binary it may not read) are not sampled, a debuglink
 * next to a binary is never followed (a FIFO, a symlink to a root-only file), and
 * tracebusd itself never maps elfutils.
 */
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli-util.h"
#include "recorder.h"
#include "session-util.h"
#include "system-bus.h"
#include "tb-client.h"

#define SEQ_PERF 10u
#define CHAIN_LEN 5

static const char *const chain[CHAIN_LEN] = { "main", "tb_fa", "tb_fb", "tb_fc", "tb_spin" };

/* The program @exe as @user for @seconds (with @extra, NULL: none); its pid once it spins. */
static pid_t spawn_program(const char *user, const char *exe, const char *seconds, const char *extra) {
        struct passwd *pw = getpwnam(user);
        char line[64] = "";
        int fds[2];
        pid_t pid;

        g_assert_nonnull(pw);
        g_assert_cmpint(pipe(fds), ==, 0);
        fflush(NULL);
        pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                dup2(fds[1], STDOUT_FILENO);
                if (setgroups(0, NULL) < 0 || setgid(pw->pw_gid) < 0 || setuid(pw->pw_uid) < 0)
                        _exit(2);
                execl(exe, exe, seconds, extra, (char *) NULL);
                _exit(127);
        }
        close(fds[1]);
        g_assert_cmpint(read(fds[0], line, sizeof(line) - 1), >, 0);
        close(fds[0]);
        g_assert_true(g_str_has_prefix(line, "ready "));
        return pid;
}

/* tests/@name as @user for @seconds. */
static pid_t spawn_target_exe(const char *user, const char *name, const char *seconds) {
        g_autofree char *exe = g_build_filename(tb_bus()->build_dir, "tests", name, NULL);

        return spawn_program(user, exe, seconds, NULL);
}

static pid_t spawn_target(const char *user, const char *seconds) {
        return spawn_target_exe(user, "perf-target-fp", seconds);
}

static void stop_target(pid_t pid) {
        (void) kill(pid, SIGKILL);
        (void) waitpid(pid, NULL, 0);
}

typedef struct {
        GHashTable *frames, *mappings, *callstacks, *paths, *names;   /* iid -> message */
        GPtrArray *samples;                                           /* TracePacket */
        const Tracebus__TracePacket *defaults;
        guint n_lost_packets;
} Perf;

static void perf_clear(Perf *p) {
        g_clear_pointer(&p->frames, g_hash_table_unref);
        g_clear_pointer(&p->mappings, g_hash_table_unref);
        g_clear_pointer(&p->callstacks, g_hash_table_unref);
        g_clear_pointer(&p->paths, g_hash_table_unref);
        g_clear_pointer(&p->names, g_hash_table_unref);
        g_clear_pointer(&p->samples, g_ptr_array_unref);
}

#define PUT(table, list, n) \
        for (size_t k = 0; k < (n); k++) \
                g_hash_table_insert((table), GSIZE_TO_POINTER((list)[k]->iid), (gpointer) (list)[k])
/* InternedStrings (bytes, not NUL-terminated) as strings of their own. */
#define PUT_STRINGS(table, list, n) \
        for (size_t k = 0; k < (n); k++) \
                g_hash_table_insert((table), GSIZE_TO_POINTER((list)[k]->iid), \
                                    g_strndup((const char *) (list)[k]->str.data, (list)[k]->str.len))

static void perf_collect(const Trace *t, Perf *p) {
        *p = (Perf) { g_hash_table_new(NULL, NULL), g_hash_table_new(NULL, NULL), g_hash_table_new(NULL, NULL),
                      g_hash_table_new_full(NULL, NULL, NULL, g_free), g_hash_table_new_full(NULL, NULL, NULL, g_free),
                      g_ptr_array_new() };
        for (guint i = 0; i < t->pkts->len; i++) {
                const Tracebus__TracePacket *pk = PKT(t, i)->p;
                const Tracebus__InternedData *d = pk->interned_data;

                if (pk->trusted_packet_sequence_id != SEQ_PERF)
                        continue;
                if (!p->defaults) {
                        p->defaults = pk;
                        expect(pk->trace_packet_defaults && pk->has_sequence_flags &&
                               (pk->sequence_flags & SEQ_INCREMENTAL_STATE_CLEARED),
                               "the first packet on sequence 10 is not the defaults with SEQ_INCREMENTAL_STATE_CLEARED");
                }
                if (d) {
                        PUT(p->frames, d->frames, d->n_frames);
                        PUT(p->mappings, d->mappings, d->n_mappings);
                        PUT(p->callstacks, d->callstacks, d->n_callstacks);
                        PUT_STRINGS(p->paths, d->mapping_paths, d->n_mapping_paths);
                        PUT_STRINGS(p->names, d->function_names, d->n_function_names);
                        /* Interned before use: the samples so far cannot name these. */
                }
                if (pk->perf_sample && pk->perf_sample->has_kernel_records_lost)
                        p->n_lost_packets++;
                else if (pk->perf_sample)
                        g_ptr_array_add(p->samples, (gpointer) pk);
        }
}

typedef struct {
        guint64 start, size;
        char *name;
} Sym;

/* The function symbols of @exe (nm -S): "ADDR SIZE T NAME". */
static GArray *read_symbols(const char *exe) {
        g_autofree char *cmd = g_strdup_printf("nm -S --defined-only %s", exe), *out = NULL;
        g_auto(GStrv) lines = NULL;
        GArray *syms = g_array_new(FALSE, FALSE, sizeof(Sym));

        g_assert_true(g_spawn_command_line_sync(cmd, &out, NULL, NULL, NULL));
        lines = g_strsplit(out, "\n", -1);
        for (char **l = lines; *l; l++) {
                g_auto(GStrv) f = g_strsplit(*l, " ", -1);
                Sym s;

                if (g_strv_length(f) != 4 || (f[2][0] != 'T' && f[2][0] != 't'))
                        continue;
                s = (Sym) { g_ascii_strtoull(f[0], NULL, 16), g_ascii_strtoull(f[1], NULL, 16), g_strdup(f[3]) };
                g_array_append_val(syms, s);
        }
        return syms;
}

static const char *symbolize(GArray *syms, guint64 pc) {
        for (guint i = 0; i < syms->len; i++) {
                const Sym *s = &g_array_index(syms, Sym, i);
                if (pc >= s->start && pc < s->start + s->size)
                        return s->name;
        }
        return NULL;
}

static const char *mapping_path(const Perf *p, guint64 mapping_iid) {
        const Tracebus__Mapping *m = g_hash_table_lookup(p->mappings, GSIZE_TO_POINTER(mapping_iid));

        if (!m || m->n_path_string_ids != 1)
                return NULL;
        return g_hash_table_lookup(p->paths, GSIZE_TO_POINTER(m->path_string_ids[0]));
}

/* The frames of @sample's callstack as names, root first: a perf-target frame by nm,
 * a kernel frame by its interned name ("k:NAME"), others "?". */
static GPtrArray *frame_names(const Perf *p, const Tracebus__PerfSample *ps, GArray *syms, const char *exe) {
        const Tracebus__Callstack *cs = g_hash_table_lookup(p->callstacks, GSIZE_TO_POINTER(ps->callstack_iid));
        GPtrArray *names = g_ptr_array_new_with_free_func(g_free);

        expect(!ps->has_callstack_iid || cs, "callstack %" G_GUINT64_FORMAT " is not interned", ps->callstack_iid);
        for (size_t i = 0; cs && i < cs->n_frame_ids; i++) {
                const Tracebus__Frame *f = g_hash_table_lookup(p->frames, GSIZE_TO_POINTER(cs->frame_ids[i]));
                const char *path = f ? mapping_path(p, f->mapping_id) : NULL;
                const char *n;

                expect(f && path, "frame %" G_GUINT64_FORMAT " or its mapping is not interned", cs->frame_ids[i]);
                if (!f || !path)
                        continue;
                n = g_hash_table_lookup(p->names, GSIZE_TO_POINTER(f->function_name_id));
                if (g_str_equal(path, "[kernel.kallsyms]"))
                        g_ptr_array_add(names, g_strdup_printf("k:%s", n ?: "?"));
                else if (g_str_equal(path, exe)) {
                        /* tracebus-unwind names the frame: as nm does at its rel_pc. */
                        const char *by_nm = symbolize(syms, f->rel_pc);

                        expect(n && g_strcmp0(n, by_nm) == 0, "frame at rel_pc 0x%" G_GINT64_MODIFIER "x named %s, "
                               "nm says %s", f->rel_pc, n, by_nm);
                        g_ptr_array_add(names, g_strdup(n ?: "?"));
                }
                else
                        g_ptr_array_add(names, g_strdup("?"));
        }
        return names;
}

/* Whether @names holds main, tb_fa, tb_fb, tb_fc, tb_spin one after the other. */
static bool has_chain(GPtrArray *names) {
        for (guint i = 0; i + CHAIN_LEN <= names->len; i++) {
                guint k = 0;

                while (k < CHAIN_LEN && g_str_equal(g_ptr_array_index(names, i + k), chain[k]))
                        k++;
                if (k == CHAIN_LEN)
                        return true;
        }
        return false;
}

static char *perf_config_unwind(const char *scope, bool kernel_frames, guint hz, const char *unwind) {
        return g_strdup_printf("duration_ms: 60000\n"
                               "buffers { size_kb: 16384 }\n"
                               "data_sources { config { name: \"linux.perf\" perf_event_config {\n"
                               "  timebase { frequency: %u counter: SW_CPU_CLOCK timestamp_clock: PERF_CLOCK_BOOTTIME }\n"
                               "  callstack_sampling { %s kernel_frames: %s user_frames: %s }\n"
                               "  ring_buffer_pages: 256 ring_buffer_read_period_ms: 50\n"
                               "} } }\n", hz, scope, kernel_frames ? "true" : "false", unwind);
}

static char *perf_config(const char *scope, bool kernel_frames, guint hz) {
        return perf_config_unwind(scope, kernel_frames, hz, "UNWIND_FRAME_POINTER");
}

static void record(Rec *r, Trace *t, Perf *p, guint ms) {
        g_autoptr(GHashTable) st = NULL;

        g_usleep(ms * 1000);
        st = rec_stop(r);
        trace_load(r->out, false, t);
        perf_collect(t, p);
}

static void check_protoc(const char *path) {
        g_autofree char *text = protoc_decode_trace(path);
        const char *const want[] = { "trace_packet_defaults {", "perf_sample_defaults {", "frequency: 1000",
                                     "counter: SW_CPU_CLOCK", "perf_sample {", "cpu_mode: MODE_USER", "timebase_count: ",
                                     "callstack_iid: ", "callstacks {", "frame_ids: ", "frames {", "rel_pc: ",
                                     "mappings {", "build_id: ", "path_string_ids: ", "mapping_paths {", "build_ids {",
                                     "trusted_packet_sequence_id: 10", NULL };

        for (const char *const *w = want; *w; w++)
                expect(strstr(text, *w), "protoc's decoding of %s has no \"%s\"", path, *w);
}

/* tbuser profiles its own perf-target (@name, by pid or by cmdline, unwound by
 * @unwind): every sample is of it, in user mode, and nearly every callstack holds the
 * chain in order, named by the service as nm names it; kernel frames were asked for
 * and dropped. */
static void profile_chain(const char *name, const char *unwind, bool by_cmdline) {
        g_autofree char *exe = g_build_filename(tb_bus()->build_dir, "tests", name, NULL);
        g_autoptr(GArray) syms = read_symbols(exe);
        pid_t mine = spawn_target_exe("tbuser", name, "30"), other = spawn_target_exe("tbother", name, "30");
        g_autofree char *scope = by_cmdline ? g_strdup_printf("scope { target_cmdline: \"%s\" }", name)
                                            : g_strdup_printf("scope { target_pid: %d }", (int) mine);
        g_autofree char *cfg = perf_config_unwind(scope, true, 1000, unwind), *warnings = NULL;
        g_auto(Trace) t = { 0 };
        g_auto(Rec) r = { 0 };
        Perf p = { 0 };
        guint full = 0, build_ids = 0;
        guint64 t0;

        rec_start(&r, "tbuser", by_cmdline ? "perf-own-cmdline.pftrace" : "perf-own.pftrace", cfg);
        t0 = boottime();
        warnings = rec_get(&r, "Warnings");
        expect(warnings && strstr(warnings, "kernel_frames need org.tracebus.manage"),
               "tbuser's Warnings do not say kernel frames were dropped: %s", warnings);
        record(&r, &t, &p, 1500);
        stop_target(mine);
        stop_target(other);

        expect(p.defaults && p.defaults->trace_packet_defaults && p.defaults->trace_packet_defaults->perf_sample_defaults &&
               p.defaults->trace_packet_defaults->perf_sample_defaults->timebase &&
               p.defaults->trace_packet_defaults->perf_sample_defaults->timebase->frequency == 1000 &&
               p.defaults->trace_packet_defaults->perf_sample_defaults->timebase->counter ==
               TRACEBUS__PERF_EVENTS__COUNTER__SW_CPU_CLOCK, "no PerfSampleDefaults with the 1000 Hz SW_CPU_CLOCK timebase");
        note("%u samples of pid %d\n", p.samples->len, (int) mine);
        expect(p.samples->len >= 50, "only %u samples of a process spinning 1.5 s at 1000 Hz", p.samples->len);
        for (guint i = 0; i < p.samples->len; i++) {
                const Tracebus__TracePacket *pk = g_ptr_array_index(p.samples, i);
                const Tracebus__PerfSample *ps = pk->perf_sample;
                g_autoptr(GPtrArray) names = NULL;

                expect(ps->pid == (guint) mine && ps->tid == (guint) mine, "a sample of pid %u tid %u", ps->pid, ps->tid);
                expect(ps->has_cpu && ps->cpu < (guint) sysconf(_SC_NPROCESSORS_CONF), "sample cpu %u", ps->cpu);
                expect(ps->cpu_mode == TRACEBUS__PROFILING__CPU_MODE__MODE_USER, "cpu_mode %d", ps->cpu_mode);
                expect(ps->has_timebase_count && ps->timebase_count > 0, "no timebase_count");
                expect(pk->has_timestamp && pk->timestamp >= t0 - 1000000000ull && pk->timestamp <= boottime(),
                       "sample timestamp %" G_GUINT64_FORMAT " out of the session", pk->timestamp);
                expect(pk->has_sequence_flags && pk->sequence_flags == 2, "sample sequence_flags %u", pk->sequence_flags);
                names = frame_names(&p, ps, syms, exe);
                for (guint k = 0; k < names->len; k++)
                        expect(!g_str_has_prefix(g_ptr_array_index(names, k), "k:"), "a kernel frame in tbuser's trace");
                if (!has_chain(names) && i % 100 == 0) {
                        g_autofree char *joined = NULL;

                        g_ptr_array_add(names, NULL);
                        joined = g_strjoinv(" > ", (char **) names->pdata);
                        note("a sample without the chain: %s\n", joined);
                        g_ptr_array_remove_index(names, names->len - 1);
                }
                full += has_chain(names);
        }
        GHashTableIter it;
        gpointer v;
        g_hash_table_iter_init(&it, p.mappings);
        while (g_hash_table_iter_next(&it, NULL, &v))
                build_ids += ((Tracebus__Mapping *) v)->has_build_id &&
                             g_strcmp0(mapping_path(&p, ((Tracebus__Mapping *) v)->iid), exe) == 0;
        note("%s, %s: %u of %u callstacks hold main > tb_fa > tb_fb > tb_fc > tb_spin\n", name, unwind, full,
             p.samples->len);
        {
                gsize sample_bytes = 0, perf_bytes = 0;

                /* Bytes per sample in the file (framing included): the samples alone, and
                 * with the sequence's interned data and defaults. */
                for (guint i = 0; i < t.pkts->len; i++)
                        if (PKT(&t, i)->p->trusted_packet_sequence_id == SEQ_PERF) {
                                perf_bytes += PKT(&t, i)->raw_len + 3;
                                if (PKT(&t, i)->p->perf_sample)
                                        sample_bytes += PKT(&t, i)->raw_len + 2;
                        }
                note("%s: %.1f bytes per sample, %.1f with interned data; %u kernel loss packets\n", unwind,
                     (double) sample_bytes / MAX(p.samples->len, 1u), (double) perf_bytes / MAX(p.samples->len, 1u),
                     p.n_lost_packets);
        }
        expect(full * 10 >= p.samples->len * 9, "only %u of %u samples show the whole chain in order", full, p.samples->len);
        expect(build_ids > 0, "perf-target's mapping has no build_id");

        check_protoc(r.out);
        perf_clear(&p);
}

/* The service parses no ELF or DWARF itself: user frames are named by tracebus-unwind,
 * run as the caller, and tracebusd maps neither libdw nor libelf, before or after. */
static void test_perf_own_process(void) {
        expect(!service_maps("/libdw") && !service_maps("/libelf"), "tracebusd maps elfutils before any session");
        profile_chain("perf-target-fp", "UNWIND_FRAME_POINTER", false);
        expect(!service_maps("/libdw") && !service_maps("/libelf"), "tracebusd mapped elfutils to name user frames");
        verdict();
}

/* Without frame pointers, by its cmdline: the chain comes from DWARF unwinding of the
 * copied stack (perf-unwind-dwarf.c). */
static void test_perf_dwarf(void) {
        profile_chain("perf-target-nofp", "UNWIND_DWARF", true);
        verdict();
}



static guint count_pid(const Perf *p, pid_t pid) {
        guint n = 0;

        for (guint i = 0; i < p->samples->len; i++)
                n += ((const Tracebus__TracePacket *) g_ptr_array_index(p->samples, i))->perf_sample->pid == (guint) pid;
        return n;
}

/* Samples in kernel mode, and named kernel frames, of @p. */
static void count_kernel(const Perf *p, guint *ret_kernel_mode, guint *ret_named) {
        GHashTableIter it;
        gpointer v;

        *ret_kernel_mode = *ret_named = 0;
        for (guint i = 0; i < p->samples->len; i++)
                *ret_kernel_mode += ((const Tracebus__TracePacket *) g_ptr_array_index(p->samples, i))->perf_sample->cpu_mode ==
                                    TRACEBUS__PROFILING__CPU_MODE__MODE_KERNEL;
        g_hash_table_iter_init(&it, p->frames);
        while (g_hash_table_iter_next(&it, NULL, &v)) {
                const Tracebus__Frame *f = v;

                *ret_named += g_strcmp0(mapping_path(p, f->mapping_id), "[kernel.kallsyms]") == 0 &&
                              g_hash_table_lookup(p->names, GSIZE_TO_POINTER(f->function_name_id)) != NULL;
        }
}

/* A scope naming tbother's process is refused for tbuser, allowed for tbadmin; tbuser's
 * system-wide session shows only its own processes and no kernel; tbadmin's shows
 * tbother's process and kernel frames named from kallsyms. */
static void test_perf_scope(void) {
        pid_t mine = spawn_target("tbuser", "30"), other = spawn_target("tbother", "30"), dd;
        g_autofree char *scope = g_strdup_printf("scope { target_pid: %d }", (int) other);
        g_autofree char *cfg_other = perf_config(scope, false, 1000), *cfg_all = perf_config("", true, 1000);
        g_autofree char *err = NULL, *full = NULL, *out = NULL;
        ClientSpec spec = { .user = "tbuser", .op = OP_START, .config = cfg_other, .output_fd = -1 };
        g_auto(Trace) tu = { 0 }, ta = { 0 };
        g_auto(Rec) ru = { 0 }, ra = { 0 };
        Perf pu = { 0 }, pa = { 0 };
        guint kernel_u, named_u, kernel_a, named_a;

        err = client_run_full(&spec, &out, &full);
        expect(g_strcmp0(err, TB_ERROR_PROCESS_NOT_YOURS) == 0, "tbuser's scope of tbother's pid: %s, not ProcessNotYours",
               full ? full : "accepted");
        rec_start(&ru, "tbuser", "perf-all-user.pftrace", cfg_all);
        rec_start(&ra, "tbadmin", "perf-all-admin.pftrace", cfg_all);
        /* Time in the kernel for tbadmin's kernel frames: a copy loop of root's. */
        dd = fork();
        g_assert_cmpint(dd, >=, 0);
        if (dd == 0) {
                execlp("timeout", "timeout", "2", "dd", "if=/dev/zero", "of=/dev/null", "bs=4k", "status=none", (char *) NULL);
                _exit(127);
        }
        g_usleep(1500 * 1000);
        record(&ru, &tu, &pu, 0);
        record(&ra, &ta, &pa, 0);
        (void) waitpid(dd, NULL, 0);
        stop_target(mine);
        stop_target(other);

        note("tbuser's system-wide trace: %u samples of its pid, %u of tbother's; tbadmin's: %u and %u\n",
             count_pid(&pu, mine), count_pid(&pu, other), count_pid(&pa, mine), count_pid(&pa, other));
        expect(count_pid(&pu, mine) > 0, "tbuser's system-wide session has no sample of its own process");
        expect(count_pid(&pu, other) == 0, "tbuser's session has %u samples of tbother's process", count_pid(&pu, other));
        expect(count_pid(&pa, other) > 0 && count_pid(&pa, mine) > 0, "tbadmin's session lacks a user's process");
        for (guint i = 0; i < pu.samples->len; i++) {
                guint pid = ((const Tracebus__TracePacket *) g_ptr_array_index(pu.samples, i))->perf_sample->pid;
                g_autofree char *status = g_strdup_printf("/proc/%u/status", pid), *text = NULL;
                g_autofree char *uid_line = g_strdup_printf("\nUid:\t%u\t", getpwnam("tbuser")->pw_uid);

                /* The processes still alive: each of tbuser's. */
                if (pid != (guint) mine && g_file_get_contents(status, &text, NULL, NULL))
                        expect(strstr(text, uid_line),
                               "tbuser's trace has a sample of pid %u, not tbuser's", pid);
        }
        count_kernel(&pu, &kernel_u, &named_u);
        count_kernel(&pa, &kernel_a, &named_a);
        note("kernel-mode samples: tbuser %u, tbadmin %u; named kernel frames: tbuser %u, tbadmin %u\n", kernel_u,
             kernel_a, named_u, named_a);
        expect(kernel_u == 0 && named_u == 0, "tbuser's trace shows the kernel");
        expect(kernel_a > 0 && named_a > 0, "tbadmin's trace has no named kernel frame");
        perf_clear(&pu);
        perf_clear(&pa);
        verdict();
}

/* max_daemon_memory_kb: past it, samples go on without callstacks, with a warning. */
static void test_perf_memory_cap(void) {
        pid_t mine = spawn_target("tbuser", "30");
        g_autofree char *cfg = g_strdup_printf("duration_ms: 60000\n"
                                               "data_sources { config { name: \"linux.perf\" perf_event_config {\n"
                                               "  timebase { frequency: 1000 counter: SW_CPU_CLOCK }\n"
                                               "  callstack_sampling { scope { target_pid: %d } user_frames: UNWIND_DWARF }\n"
                                               "  max_daemon_memory_kb: 1\n"
                                               "} } }\n", (int) mine);
        g_autofree char *warnings = NULL;
        g_auto(Trace) t = { 0 };
        g_auto(Rec) r = { 0 };
        Perf p = { 0 };
        guint with_stack = 0;

        rec_start(&r, "tbuser", "perf-memory-cap.pftrace", cfg);
        g_usleep(1500 * 1000);
        warnings = rec_get(&r, "Warnings");
        record(&r, &t, &p, 0);
        stop_target(mine);
        for (guint i = 0; i < p.samples->len; i++)
                with_stack += ((const Tracebus__TracePacket *) g_ptr_array_index(p.samples, i))->perf_sample->has_callstack_iid;
        note("memory cap: %u samples, %u with a callstack\n", p.samples->len, with_stack);
        expect(warnings && strstr(warnings, "max_daemon_memory_kb"), "no warning of the memory cap: %s", warnings);
        expect(p.samples->len > 0 && with_stack == 0, "%u of %u samples have callstacks past the cap", with_stack,
               p.samples->len);
        perf_clear(&p);
        verdict();
}

/* The shape of Perfetto's CPU-profiling docs config: linux.perf by cmdline with kernel
 * frames and a monotonic timestamp_clock, beside linux.process_stats and linux.ftrace,
 * one DISCARD buffer; as root. */
static void test_perf_docs_config(void) {
        g_autofree char *exe = g_build_filename(tb_bus()->build_dir, "tests", "perf-target-fp", NULL);
        g_autoptr(GArray) syms = read_symbols(exe);
        pid_t target = spawn_target("tbuser", "30");
        const char *cfg = "buffers { size_kb: 65536 fill_policy: DISCARD }\n"
                "data_sources { config { name: \"linux.perf\" perf_event_config {\n"
                "  timebase { counter: SW_CPU_CLOCK frequency: 100 timestamp_clock: PERF_CLOCK_MONOTONIC }\n"
                "  callstack_sampling { scope { target_cmdline: \"perf-target-fp\" } kernel_frames: true }\n"
                "} } }\n"
                "data_sources { config { name: \"linux.process_stats\" process_stats_config { "
                "scan_all_processes_on_start: true } } }\n"
                "data_sources { config { name: \"linux.ftrace\" ftrace_config { ftrace_events: \"sched/sched_switch\" } } }\n"
                "duration_ms: 60000\n";
        g_autofree char *warnings = NULL;
        g_auto(Trace) t = { 0 };
        g_auto(Rec) r = { 0 };
        Perf p = { 0 };
        guint full = 0;

        rec_start(&r, "root", "perf-docs.pftrace", cfg);
        warnings = rec_get(&r, "Warnings");
        record(&r, &t, &p, 2000);
        stop_target(target);
        for (guint i = 0; i < p.samples->len; i++) {
                const Tracebus__PerfSample *ps = ((const Tracebus__TracePacket *) g_ptr_array_index(p.samples, i))->perf_sample;
                g_autoptr(GPtrArray) names = frame_names(&p, ps, syms, exe);

                expect(ps->pid == (guint) target, "a sample of pid %u outside target_cmdline", ps->pid);
                full += has_chain(names);
        }
        note("docs config: %u samples, %u with the chain, %" G_GUINT64_FORMAT " ftrace events\n", p.samples->len, full,
             n_events(&t));
        expect(p.samples->len >= 20 && full * 10 >= p.samples->len * 9, "%u of %u samples with the chain", full,
               p.samples->len);
        expect(n_events(&t) > 0, "no ftrace events beside the samples");
        expect(warnings && strstr(warnings, "timestamp_clock"), "no warning of PERF_CLOCK_MONOTONIC: %s", warnings);
        perf_clear(&p);
        verdict();
}

/* A tracepoint timebase in the form Perfetto's cookbook and case studies write it
 * ("sched/sched_switch", a filter, period 1): opened on the clock the tracepoint PMU
 * accepts, each sample moved to BOOTTIME, the trace's clock. */
static void test_perf_tracepoint(void) {
        const char *cfg = "buffers { size_kb: 65536 fill_policy: DISCARD }\n"
                "data_sources { config { name: \"linux.perf\" perf_event_config {\n"
                "  timebase { period: 1 tracepoint { name: \"sched/sched_switch\" filter: \"prev_pid >= 0\" }\n"
                "             timestamp_clock: PERF_CLOCK_MONOTONIC }\n"
                "  callstack_sampling { kernel_frames: true }\n"
                "} } }\n"
                "duration_ms: 60000\n";
        g_auto(Trace) t = { 0 };
        g_auto(Rec) r = { 0 };
        Perf p = { 0 };
        guint64 t0;

        rec_start(&r, "root", "perf-tracepoint.pftrace", cfg);
        t0 = boottime();
        record(&r, &t, &p, 1000);
        note("tracepoint timebase: %u samples of sched_switch\n", p.samples->len);
        expect(p.samples->len > 0, "no sample of a sched/sched_switch timebase in 1 s");
        for (guint i = 0; i < p.samples->len; i++) {
                const Tracebus__TracePacket *pk = g_ptr_array_index(p.samples, i);

                expect(pk->has_timestamp && pk->timestamp >= t0 - 1000000000ull && pk->timestamp <= boottime(),
                       "sample timestamp %" G_GUINT64_FORMAT " out of the session (BOOTTIME)", pk->timestamp);
        }
        {
                g_autofree char *text = protoc_decode_trace(r.out);

                expect(strstr(text, "name: \"sched/sched_switch\""), "protoc's decoding has no tracepoint timebase");
                expect(strstr(text, "perf_sample {"), "protoc's decoding has no perf_sample");
        }
        perf_clear(&p);
        verdict();
}

/* Frames of @p whose mapping is @path and that have a name. */
static guint named_frames_of(const Perf *p, const char *path) {
        GHashTableIter it;
        gpointer v;
        guint n = 0;

        g_hash_table_iter_init(&it, p->frames);
        while (g_hash_table_iter_next(&it, NULL, &v)) {
                const Tracebus__Frame *f = v;

                n += g_strcmp0(mapping_path(p, f->mapping_id), path) == 0 &&
                     g_hash_table_lookup(p->names, GSIZE_TO_POINTER(f->function_name_id)) != NULL;
        }
        return n;
}

static void run_tool(const char *const *argv) {
        g_autoptr(GError) error = NULL;
        int status;

        g_assert_true(g_spawn_sync(NULL, (char **) argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, NULL, NULL, &status,
                                   &error));
        g_assert_no_error(error);
        g_assert_true(g_spawn_check_wait_status(status, NULL));
}

/* A directory of the test's, owned by @user (NULL: root's), 0755. */
static char *test_dir(const char *name, const char *user) {
        g_autofree char *dir = g_build_filename(tb_bus()->tmpdir, name, NULL);

        g_assert_cmpint(mkdir(dir, 0755), ==, 0);
        g_assert_cmpint(chmod(dir, 0755), ==, 0);
        if (user)
                g_assert_cmpint(chown(dir, getpwnam(user)->pw_uid, getpwnam(user)->pw_gid), ==, 0);
        return g_steal_pointer(&dir);
}

/* tbuser's processes it may not ptrace: a root-owned 0711 copy of perf-target that
 * tbuser may run but not read, and its own perf-target made non-dumpable. tbuser's
 * system-wide session names none of the first's functions and samples neither, and
 * says how many samples it dropped; its own ordinary process is still profiled. */
static void test_perf_not_ptraceable(void) {
        g_autofree char *src = g_build_filename(tb_bus()->build_dir, "tests", "perf-target-fp", NULL);
        g_autofree char *dir = test_dir("perf-0711", NULL);
        g_autofree char *exe = g_build_filename(dir, "perf-target-0711", NULL);
        g_autofree char *cfg = perf_config("", false, 1000);
        g_autoptr(GHashTable) st = NULL;
        g_auto(Trace) t = { 0 };
        g_auto(Rec) r = { 0 };
        Perf p = { 0 };
        pid_t unreadable, nodump, mine;
        const char *warnings;

        run_tool((const char *const[]) { "cp", src, exe, NULL });
        g_assert_cmpint(chmod(exe, 0711), ==, 0);
        unreadable = spawn_program("tbuser", exe, "30", NULL);
        nodump = spawn_program("tbuser", src, "30", "nodump");
        mine = spawn_target("tbuser", "30");
        rec_start(&r, "tbuser", "perf-not-ptraceable.pftrace", cfg);
        g_usleep(1500 * 1000);
        st = rec_stop(&r);
        trace_load(r.out, false, &t);
        perf_collect(&t, &p);
        stop_target(unreadable);
        stop_target(nodump);
        stop_target(mine);

        warnings = g_hash_table_lookup(st, "Warnings");
        note("not ptraceable: %u samples of the 0711 binary, %u of the non-dumpable one, %u of its own; "
             "%u named frames of the 0711 binary\n", count_pid(&p, unreadable), count_pid(&p, nodump),
             count_pid(&p, mine), named_frames_of(&p, exe));
        expect(named_frames_of(&p, exe) == 0, "tbuser's trace names functions of a binary it may not read");
        expect(count_pid(&p, unreadable) == 0, "tbuser's trace has samples of a process it may not ptrace");
        expect(count_pid(&p, nodump) == 0, "tbuser's trace has samples of its non-dumpable process");
        expect(count_pid(&p, mine) > 0, "tbuser's own process is not profiled");
        expect(warnings && strstr(warnings, "may not ptrace were dropped"),
               "Stop's Warnings do not say samples were dropped: %s", warnings);
        perf_clear(&p);
        verdict();
}

/* perf-target stripped, with a .gnu_debuglink whose name next to it, in a directory of
 * tbuser's, is @kind: "fifo" a FIFO, "symlink" a link to the real debug file, which
 * only root may read. Its path. */
static char *hostile_target(const char *kind) {
        g_autofree char *src = g_build_filename(tb_bus()->build_dir, "tests", "perf-target-fp", NULL);
        g_autofree char *name = g_strdup_printf("perf-hostile-%s", kind);
        g_autofree char *dir = test_dir(name, "tbuser");
        g_autofree char *exe = g_build_filename(dir, "perf-target-h", NULL);
        g_autofree char *debug = g_build_filename(dir, "perf-target-h.debug", NULL);
        g_autofree char *hidden = g_strdup_printf("%s/%s-root.debug", tb_bus()->tmpdir, name);
        struct passwd *pw = getpwnam("tbuser");

        run_tool((const char *const[]) { "objcopy", "--only-keep-debug", src, debug, NULL });
        run_tool((const char *const[]) { "objcopy", "--strip-all", "--add-gnu-debuglink", debug, src, exe, NULL });
        g_assert_cmpint(chown(exe, pw->pw_uid, pw->pw_gid), ==, 0);
        run_tool((const char *const[]) { "mv", debug, hidden, NULL });
        g_assert_cmpint(chmod(hidden, 0600), ==, 0);
        if (g_str_equal(kind, "fifo"))
                g_assert_cmpint(mkfifo(debug, 0644), ==, 0);
        else
                g_assert_cmpint(symlink(hidden, debug), ==, 0);
        g_assert_cmpint(lchown(debug, pw->pw_uid, pw->pw_gid), ==, 0);
        return g_steal_pointer(&exe);
}

/* Stop of a session of tbuser's processes, in microseconds; its trace into @p. */
static gint64 timed_session(const char *name, Trace *t, Perf *p) {
        g_autofree char *cfg = perf_config("", false, 1000);
        g_autoptr(GHashTable) st = NULL;
        g_auto(Rec) r = { 0 };
        gint64 start;

        rec_start(&r, "tbuser", name, cfg);
        g_usleep(1500 * 1000);
        start = g_get_monotonic_time();
        st = rec_stop(&r);
        start = g_get_monotonic_time() - start;
        trace_load(r.out, false, t);
        perf_collect(t, p);
        return start;
}

/* A stripped binary whose debuglink names a FIFO or a symlink to a root-only file: no
 * debuglink is followed, so Stop takes as long as an ordinary session's, other users'
 * calls are answered meanwhile, and the root-only debug file names nothing. */
static void test_perf_hostile_debuglink(void) {
        g_autofree char *fifo_exe = hostile_target("fifo"), *link_exe = hostile_target("symlink");
        g_auto(Trace) tn = { 0 }, th = { 0 };
        Perf pn = { 0 }, ph = { 0 };
        ClientSpec spec = { .user = "tbother", .op = OP_HOLD_NAME, .output_fd = -1 };
        g_autofree char *name = NULL, *list = NULL, *err = NULL;
        pid_t mine = spawn_target("tbuser", "30"), fifo, link;
        gint64 normal, hostile;
        Client c;

        normal = timed_session("perf-debuglink-normal.pftrace", &tn, &pn);
        fifo = spawn_program("tbuser", fifo_exe, "30", NULL);
        link = spawn_program("tbuser", link_exe, "30", NULL);
        client_spawn(&spec, &c);
        name = client_expect(&c, 'N', 10000, NULL);
        hostile = timed_session("perf-debuglink-hostile.pftrace", &th, &ph);
        list = client_cmd(&c, "list", 'L', &err);
        client_finish(&c, 5000);
        stop_target(mine);
        stop_target(fifo);
        stop_target(link);

        note("Stop: %" G_GINT64_FORMAT " us ordinary, %" G_GINT64_FORMAT " us with the hostile debuglinks; samples "
             "%u and %u; named frames %u and %u\n", normal, hostile, count_pid(&ph, fifo), count_pid(&ph, link),
             named_frames_of(&ph, fifo_exe), named_frames_of(&ph, link_exe));
        expect(hostile <= 10 * MAX(normal, (gint64) 1), "Stop took %" G_GINT64_FORMAT " us, an ordinary one %"
               G_GINT64_FORMAT " us", hostile, normal);
        expect(name && list, "tbother's ListSessions was not answered: %s", err);
        expect(count_pid(&ph, fifo) > 0 && count_pid(&ph, link) > 0, "the stripped programs were not profiled");
        expect(named_frames_of(&ph, link_exe) == 0, "a root-only debug file named tbuser's frames");
        expect(named_frames_of(&ph, fifo_exe) == 0, "a stripped binary's frames have names");
        perf_clear(&pn);
        perf_clear(&ph);
        verdict();
}

RECORDER_WRAP(test_perf_tracepoint)
RECORDER_WRAP(test_perf_own_process)
RECORDER_WRAP(test_perf_docs_config)
RECORDER_WRAP(test_perf_memory_cap)
RECORDER_WRAP(test_perf_scope)
RECORDER_WRAP(test_perf_dwarf)
RECORDER_WRAP(test_perf_not_ptraceable)
RECORDER_WRAP(test_perf_hostile_debuglink)

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        tb_require_system_bus_environment();
        /* First: it looks at the service before any session named frames. */
        RECORDER_CASE("perf-own-process", test_perf_own_process);
        RECORDER_CASE("perf-scope", test_perf_scope);
        RECORDER_CASE("perf-dwarf", test_perf_dwarf);
        RECORDER_CASE("perf-memory-cap", test_perf_memory_cap);
        RECORDER_CASE("perf-docs-config", test_perf_docs_config);
        RECORDER_CASE("perf-tracepoint", test_perf_tracepoint);
        RECORDER_CASE("perf-not-ptraceable", test_perf_not_ptraceable);
        RECORDER_CASE("perf-hostile-debuglink", test_perf_hostile_debuglink);
        return tb_test_run(TB_START_SERVICE);
}
