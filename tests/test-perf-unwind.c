/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * service/unwind/perf-unwind.c (tracebus-unwind's core) against real samples of this very
 * thread: the kernel's frame-pointer callchains and libdw's DWARF unwinding of the copied
 * stacks name the test's own call chain in order; anonymous code and unmapped addresses
 * give unnamed frames; a stripped library is named from its separate debug file found by
 * build id, never through its .gnu_debuglink (a file, FIFO or symlink next to it); the
 * memory cap leaves files out and says so.
 */
#include <dlfcn.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>
#include <fcntl.h>
#include <stddef.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "perf-chain.h"
#include "perf-self-sample.h"
#include "perf-unwind.h"

static uint64_t dw_spins = 20000, fp_spins = 20000;

/* Under valgrind the code that runs is its translation: samples name none of ours. */
static gboolean on_valgrind(void) {
        g_autofree char *maps = NULL;

        return g_file_get_contents("/proc/self/maps", &maps, NULL, NULL) && strstr(maps, "/vgpreload_");
}

static gint64 thread_cpu_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return ts.tv_sec * G_USEC_PER_SEC + ts.tv_nsec / 1000;
}

/* Samples @chain_a's run for 200 ms of CPU; FALSE (skipped) without perf. */
static gboolean sample_chain(PerfSelfSampler *s, uint64_t (*chain_a)(uint64_t)) {
        gint64 start_cpu = thread_cpu_usec();

        if (on_valgrind()) {
                g_test_skip("under valgrind the sampled code is its translation");
                return FALSE;
        }
        int r = perf_self_open(s, 1000000, 8192);
        if (r < 0) {
                if (g_getenv("CI"))
                        g_error("perf_event_open: %s", g_strerror(-r));
                g_autofree char *why = g_strdup_printf("perf_event_open: %s", g_strerror(-r));
                g_test_skip(why);
                return FALSE;
        }
        g_assert_cmpint(perf_self_enable(s, 1), ==, 0);
        /* 200 ms of this thread's CPU time (samples count it), however loaded the machine. */
        gint64 until = g_get_monotonic_time() + 20 * G_USEC_PER_SEC;
        while (thread_cpu_usec() < 200000 + start_cpu && g_get_monotonic_time() < until)
                chain_a(chain_a == dw_chain_a ? dw_spins : fp_spins);
        g_assert_cmpint(perf_self_enable(s, 0), ==, 0);
        g_assert_cmpint(perf_self_read(s), ==, 0);
        g_test_message("%zu samples, %zu lost", s->n_samples, s->lost);
        g_assert_cmpuint(s->n_samples, >, 20);
        return TRUE;
}

/* Whether @names has prefix_chain_d, _c, _b, _a in a row from @first. */
static gboolean chain_in_order(const char *const *names, size_t n, size_t first, const char *prefix) {
        static const char *const order[] = { "chain_d", "chain_c", "chain_b", "chain_a" };

        if (first + G_N_ELEMENTS(order) > n)
                return FALSE;
        for (size_t i = 0; i < G_N_ELEMENTS(order); i++) {
                g_autofree char *want = g_strconcat(prefix, order[i], NULL);
                if (g_strcmp0(names[first + i], want) != 0)
                        return FALSE;
        }
        return TRUE;
}

static PerfProcess *self_process(PerfUnwinder **u) {
        PerfProcess *p = NULL;

        g_assert_cmpint(perf_unwinder_new(0, u), ==, 0);
        g_assert_cmpint(perf_process_new(*u, getpid(), &p), ==, 0);
        return p;
}

static void test_dwarf(void) {
        PerfSelfSampler s;
        PerfUnwinder *u = NULL;
        size_t leaf = 0, whole = 0, vdso = 0;

        if (!sample_chain(&s, dw_chain_a))
                return;
        PerfProcess *p = self_process(&u);
        for (size_t i = 0; i < s.n_samples; i++) {
                PerfFrame frames[64];
                const char *names[64];
                size_t n = 0;

                /* Halfway, as after an mmap record: the unwinder stays attached. */
                if (i == s.n_samples / 2)
                        g_assert_cmpint(perf_process_reload_maps(p), ==, 0);
                g_assert_cmpint(perf_unwind_dwarf(p, s.samples[i].regs, perf_self_regs_mask(),
                                                  s.samples[i].stack, s.samples[i].stack_len,
                                                  frames, G_N_ELEMENTS(frames), &n), ==, 0);
                g_assert_cmpuint(n, >=, 1);
                g_assert_cmpuint(frames[0].pc, ==, s.samples[i].ip);
                /* The vDSO (the loop's clocks) is unwound with the service's copy, into libc. */
                if (frames[0].mapping && g_str_equal(frames[0].mapping->path, "[vdso]")) {
                        vdso++;
                        gboolean through = FALSE;
                        for (size_t k = 1; k < n; k++)
                                through = through || (frames[k].function && strstr(frames[k].function, "clock_gettime"));
                        g_assert_true(through);
                }
                if (g_strcmp0(frames[0].function, "dw_chain_d") != 0)
                        continue;
                leaf++;
                for (size_t k = 0; k < n; k++)
                        names[k] = frames[k].function;
                whole += chain_in_order(names, n, 0, "dw_");
                g_assert_nonnull(frames[0].mapping);
                g_assert_cmpuint(frames[0].mapping->build_id_len, ==, 20);
        }
        g_test_message("DWARF: %zu of %zu samples in dw_chain_d unwound to dw_chain_a, %zu in the vDSO",
                       whole, leaf, vdso);
        g_assert_cmpuint(leaf, >, 10);
        /* CFI covers prologues and epilogues too: every sample unwinds. */
        g_assert_cmpuint(whole, ==, leaf);
        perf_process_free(p);
        perf_unwinder_free(u);
        perf_self_close(&s);
}

static void test_frame_pointers(void) {
        PerfSelfSampler s;
        PerfUnwinder *u = NULL;
        size_t leaf = 0, whole = 0;

        if (!sample_chain(&s, fp_chain_a))
                return;
        PerfProcess *p = self_process(&u);
        for (size_t i = 0; i < s.n_samples; i++) {
                const PerfSelfSample *x = &s.samples[i];
                const char *names[PERF_SELF_MAX_CHAIN];
                PerfFrame f;

                g_assert_cmpuint(x->n_chain, >=, 1);
                for (size_t k = 0; k < x->n_chain; k++) {
                        g_assert_cmpint(perf_symbolize(p, x->chain[k], k > 0, &f), ==, 0);
                        names[k] = f.function;
                }
                if (g_strcmp0(names[0], "fp_chain_d") != 0)
                        continue;
                leaf++;
                whole += chain_in_order(names, x->n_chain, 0, "fp_");
        }
        g_test_message("frame pointers: %zu of %zu samples in fp_chain_d walked to fp_chain_a", whole, leaf);
        g_assert_cmpuint(leaf, >, 10);
        /* A sample in the prologue (before rbp is pushed) skips the caller. */
        g_assert_cmpuint(whole * 10, >=, leaf * 9);
        perf_process_free(p);
        perf_unwinder_free(u);
        perf_self_close(&s);
}

/* JIT-like anonymous code, an unmapped address, a garbage stack: unnamed, no crash. */
static void test_unknown_code(void) {
        PerfUnwinder *u = NULL;
        PerfProcess *p;
        PerfFrame f, frames[16];
        size_t n;
        long page = sysconf(_SC_PAGESIZE);
        uint8_t *jit = mmap(NULL, page, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        uint8_t garbage[4096];

        g_assert_true(jit != MAP_FAILED);
        memset(jit, 0xc3, page);
        p = self_process(&u);
        g_assert_cmpint(perf_symbolize(p, (uintptr_t) jit + 16, false, &f), ==, 0);
        g_assert_null(f.function);
        g_assert_nonnull(f.mapping);
        g_assert_cmpuint(f.mapping->start, ==, (uintptr_t) jit);
        g_assert_cmpstr(f.mapping->path, ==, "");
        g_assert_null(f.mapping->build_id);
        g_assert_cmpuint(f.rel_pc, ==, 16);

        g_assert_cmpint(perf_symbolize(p, 0x10, true, &f), ==, 0);
        g_assert_null(f.function);
        g_assert_null(f.mapping);

        for (size_t i = 0; i < sizeof(garbage); i++)
                garbage[i] = g_test_rand_int_range(0, 256);
        uint64_t regs[17] = {};
        for (size_t i = 0; i < G_N_ELEMENTS(regs); i++)
                regs[i] = g_test_rand_int();
        regs[7] = (uintptr_t) garbage;          /* SP (bit 7), the copy's own address */
        regs[8] = (uintptr_t) jit + 16;         /* IP */
        g_assert_cmpint(perf_unwind_dwarf(p, regs, perf_self_regs_mask(), garbage, sizeof(garbage),
                                          frames, G_N_ELEMENTS(frames), &n), ==, 0);
        g_assert_cmpuint(n, >=, 1);
        g_assert_null(frames[0].function);
        g_assert_cmpuint(frames[0].pc, ==, (uintptr_t) jit + 16);

        /* Real code, a stack of noise: any number of frames, no crash, no frame past max. */
        for (int round = 0; round < 200; round++) {
                for (size_t i = 0; i < sizeof(garbage); i += 8) {
                        uint64_t v = round % 2 ? (uintptr_t) dw_chain_a + g_test_rand_int_range(0, 64)
                                               : ((uint64_t) g_test_rand_int() << 32) | g_test_rand_int();
                        memcpy(garbage + i, &v, 8);
                }
                regs[6] = (uintptr_t) garbage + g_test_rand_int_range(0, sizeof(garbage));    /* BP */
                regs[8] = (uintptr_t) dw_chain_a + g_test_rand_int_range(0, 64);
                g_assert_cmpint(perf_unwind_dwarf(p, regs, perf_self_regs_mask(), garbage, sizeof(garbage),
                                                  frames, G_N_ELEMENTS(frames), &n), ==, 0);
                g_assert_cmpuint(n, >=, 1);
                g_assert_cmpuint(n, <=, G_N_ELEMENTS(frames));
        }

        /* No IP: refused, not guessed. */
        g_assert_cmpint(perf_unwind_dwarf(p, regs, perf_self_regs_mask() & ~(1ull << 8), garbage,
                                          sizeof(garbage), frames, G_N_ELEMENTS(frames), &n), ==, -EINVAL);
        perf_process_free(p);
        perf_unwinder_free(u);
        munmap(jit, page);
}

/* The memory cap: the maps, the name cache and the files count; a file that would
 * cross it is left out (unnamed frames) and the caller is told; freeing gives back. */
static void test_memory_cap(void) {
        PerfUnwinder *u = NULL;
        PerfProcess *p = self_process(&u);
        PerfFrame f;

        uint64_t maps_bytes = perf_unwinder_memory_used(u);
        g_assert_cmpuint(maps_bytes, >, 0);
        g_assert_cmpint(perf_symbolize(p, (uintptr_t) dw_chain_a, false, &f), ==, 0);
        g_assert_cmpstr(f.function, ==, "dw_chain_a");
        /* The test binary's file and the cache of names are held now. */
        g_assert_cmpuint(perf_unwinder_memory_used(u), >, maps_bytes + 32 * 1024 + 8192);
        g_assert_false(perf_unwinder_take_memory_exceeded(u));
        perf_process_free(p);
        g_assert_cmpuint(perf_unwinder_memory_used(u), ==, 0);
        perf_unwinder_free(u);

        /* Not even the maps fit. */
        g_assert_cmpint(perf_unwinder_new(1, &u), ==, 0);
        g_assert_cmpint(perf_process_new(u, getpid(), &p), ==, -ENOBUFS);
        g_assert_true(perf_unwinder_take_memory_exceeded(u));
        g_assert_cmpuint(perf_unwinder_memory_used(u), ==, 0);
        perf_unwinder_free(u);

        /* The maps and the cache fit, the binary's file does not. */
        g_assert_cmpint(perf_unwinder_new((maps_bytes + 32 * 1024 + 4096) / 1024 + 1, &u), ==, 0);
        g_assert_cmpint(perf_process_new(u, getpid(), &p), ==, 0);
        g_assert_cmpint(perf_symbolize(p, (uintptr_t) dw_chain_a, false, &f), ==, 0);
        g_assert_null(f.function);
        g_assert_nonnull(f.mapping);
        g_assert_true(perf_unwinder_take_memory_exceeded(u));
        g_assert_false(perf_unwinder_take_memory_exceeded(u));
        g_assert_cmpuint(perf_unwinder_memory_used(u), <=, (maps_bytes + 32 * 1024 + 4096) + 1024);
        perf_process_free(p);
        g_assert_cmpuint(perf_unwinder_memory_used(u), ==, 0);
        perf_unwinder_free(u);
}

/* libdw names libc's clock_gettime "clock_gettime@@GLIBC_2.17": traces get the name. */
static void test_versioned_name(void) {
        PerfUnwinder *u = NULL;
        PerfProcess *p = self_process(&u);
        PerfFrame f, again;
        /* libc's own, not a sanitizer's interceptor of the same name. */
        void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
        uintptr_t fn = (uintptr_t) (libc ? dlvsym(libc, "clock_gettime", "GLIBC_2.17") : NULL);

        g_assert_cmpuint(fn, !=, 0);
        g_assert_cmpint(perf_symbolize(p, fn, false, &f), ==, 0);
        g_assert_nonnull(f.function);
        g_assert_null(strchr(f.function, '@'));
        g_assert_true(g_str_has_suffix(f.function, "clock_gettime"));
        g_assert_true(g_str_has_suffix(f.mapping->path, "/libc.so.6"));
        /* The copy is made once: the same pointer for the same symbol. */
        g_assert_cmpint(perf_symbolize(p, fn + 1, false, &again), ==, 0);
        g_assert_true(again.function == f.function);
        dlclose(libc);
        perf_process_free(p);
        g_assert_cmpuint(perf_unwinder_memory_used(u), ==, 0);
        perf_unwinder_free(u);
}

/* Another process (a forked child: the same addresses), read only through /proc; gone: ESRCH. */
static void test_other_process(void) {
        PerfUnwinder *u = NULL;
        PerfProcess *p = NULL;
        PerfFrame f;
        int pipefd[2];
        char c;

        g_assert_cmpint(pipe(pipefd), ==, 0);
        pid_t child = fork();
        g_assert_cmpint(child, >=, 0);
        if (child == 0) {
                close(pipefd[1]);
                (void) !read(pipefd[0], &c, 1);
                _exit(0);
        }
        close(pipefd[0]);
        g_assert_cmpint(perf_unwinder_new(0, &u), ==, 0);
        g_assert_cmpint(perf_process_new(u, child, &p), ==, 0);
        g_assert_cmpint(perf_symbolize(p, (uintptr_t) fp_chain_a + 1, true, &f), ==, 0);
        g_assert_cmpstr(f.function, ==, "fp_chain_a");
        g_assert_true(g_str_has_suffix(f.mapping->path, "/test-perf-unwind"));
        close(pipefd[1]);
        g_assert_cmpint(waitpid(child, NULL, 0), ==, child);
        g_assert_cmpint(perf_process_reload_maps(p), ==, -ESRCH);
        perf_process_free(p);
        g_assert_cmpint(perf_process_new(u, child, &p), ==, -ESRCH);
        perf_unwinder_free(u);
}

static void run(const char *const *argv) {
        g_autoptr(GError) error = NULL;
        int status;

        g_assert_true(g_spawn_sync(NULL, (char **) argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL,
                                   NULL, NULL, &status, &error));
        g_assert_no_error(error);
        g_assert_true(g_spawn_check_wait_status(status, NULL));
}

/* Names @hidden (a static function of the loaded library) and @entry (exported). */
static void name_library(const char *debug_dirs, uintptr_t entry, uintptr_t hidden,
                         const char **ret_entry, const char **ret_hidden, GString *build_id) {
        PerfUnwinder *u = NULL;
        PerfProcess *p = NULL;
        PerfFrame f;

        g_assert_cmpint(perf_unwinder_new(0, &u), ==, 0);
        if (debug_dirs)
                g_assert_cmpint(perf_unwinder_set_debug_dirs(u, debug_dirs), ==, 0);
        g_assert_cmpint(perf_process_new(u, getpid(), &p), ==, 0);
        g_assert_cmpint(perf_symbolize(p, entry, false, &f), ==, 0);
        *ret_entry = g_intern_string(f.function);
        g_assert_nonnull(f.mapping);
        g_string_truncate(build_id, 0);
        for (size_t i = 0; i < f.mapping->build_id_len; i++)
                g_string_append_printf(build_id, "%02x", f.mapping->build_id[i]);
        g_assert_cmpint(perf_symbolize(p, hidden, false, &f), ==, 0);
        *ret_hidden = g_intern_string(f.function);
        perf_process_free(p);
        perf_unwinder_free(u);
}

static void *load(const char *path, uintptr_t *entry, uintptr_t *hidden) {
        void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        uintptr_t (*fn)(void);

        g_assert_nonnull(h);
        fn = (uintptr_t (*)(void)) dlsym(h, "perf_debug_lib_entry");
        g_assert_nonnull(fn);
        *entry = (uintptr_t) fn;
        *hidden = fn();
        return h;
}

/* Names @hidden of the library at @path in a child with a deadline: a debug file
 * lookup that waits on a FIFO kills the child rather than the test. */
static bool names_hidden_in_child(const char *path) {
        pid_t pid = fork();
        int status;

        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                const char *entry_name, *hidden_name;
                uintptr_t entry, hidden;
                g_autoptr(GString) build_id = g_string_new(NULL);

                alarm(20);
                (void) load(path, &entry, &hidden);
                name_library(NULL, entry, hidden, &entry_name, &hidden_name, build_id);
                _exit(g_strcmp0(entry_name, "perf_debug_lib_entry") != 0 ? 3 : hidden_name ? 1 : 0);
        }
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        g_assert_true(WIFEXITED(status));      /* not killed by the alarm: no wait on the FIFO */
        g_assert_cmpint(WEXITSTATUS(status), !=, 3);
        return WEXITSTATUS(status) == 1;
}

/* A stripped library: its static function is named only once the debug file is found
 * by build id in a debug dir. A .gnu_debuglink is never followed: a file, a FIFO or a
 * symlink of that name next to the binary is the binary's owner's to choose. */
static void test_debug_file(void) {
        g_autofree char *objcopy = g_find_program_in_path("objcopy");
        g_autofree char *lib = g_build_filename(g_getenv("TRACEBUS_BUILD_DIR"), "tests", "perf-debug-lib.so", NULL);
        g_autofree char *tmp = g_dir_make_tmp("tb-unwind-XXXXXX", NULL);
        g_autofree char *debug = g_build_filename(tmp, "lib.debug", NULL);
        g_autofree char *stripped = g_build_filename(tmp, "stripped.so", NULL);
        g_autofree char *linked = g_build_filename(tmp, "linked.so", NULL);
        g_autoptr(GString) build_id = g_string_new(NULL);
        const char *entry_name, *hidden_name;
        uintptr_t entry, hidden;

        if (!objcopy) {
                if (g_getenv("CI"))
                        g_error("objcopy (binutils) is not installed");
                g_test_skip("objcopy (binutils) is not installed");
                return;
        }
        run((const char *const[]) { objcopy, "--only-keep-debug", lib, debug, NULL });
        run((const char *const[]) { objcopy, "--strip-all", lib, stripped, NULL });
        run((const char *const[]) { objcopy, "--strip-all", "--add-gnu-debuglink", debug, lib, linked, NULL });

        void *h = load(stripped, &entry, &hidden);
        name_library(NULL, entry, hidden, &entry_name, &hidden_name, build_id);
        g_assert_cmpstr(entry_name, ==, "perf_debug_lib_entry");          /* .dynsym */
        g_assert_null(hidden_name);             /* stripped: no name rather than a wrong one */
        g_assert_cmpuint(build_id->len, ==, 40);

        g_autofree char *dir = g_strdup_printf("%s/debug/.build-id/%.2s", tmp, build_id->str);
        g_autofree char *by_id = g_strdup_printf("%s/%s.debug", dir, build_id->str + 2);
        g_autofree char *dirs = g_strdup_printf("/nonexistent:%s/debug", tmp);
        g_assert_cmpint(g_mkdir_with_parents(dir, 0755), ==, 0);
        run((const char *const[]) { "cp", debug, by_id, NULL });
        name_library(dirs, entry, hidden, &entry_name, &hidden_name, build_id);
        g_assert_cmpstr(hidden_name, ==, "perf_debug_lib_hidden");
        dlclose(h);

        /* lib.debug, the debuglink's name, is right next to linked.so. */
        h = load(linked, &entry, &hidden);
        name_library(NULL, entry, hidden, &entry_name, &hidden_name, build_id);
        g_assert_cmpstr(entry_name, ==, "perf_debug_lib_entry");
        g_assert_null(hidden_name);
        dlclose(h);

        /* The debuglink's name a FIFO, then a symlink to the real debug file. */
        g_autofree char *fifo_dir = g_build_filename(tmp, "fifo", NULL);
        g_autofree char *fifo_lib = g_build_filename(fifo_dir, "linked.so", NULL);
        g_autofree char *fifo = g_build_filename(fifo_dir, "lib.debug", NULL);
        g_autofree char *link_dir = g_build_filename(tmp, "symlink", NULL);
        g_autofree char *link_lib = g_build_filename(link_dir, "linked.so", NULL);
        g_autofree char *link = g_build_filename(link_dir, "lib.debug", NULL);
        g_assert_cmpint(g_mkdir(fifo_dir, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(link_dir, 0755), ==, 0);
        run((const char *const[]) { "cp", linked, fifo_lib, NULL });
        run((const char *const[]) { "cp", linked, link_lib, NULL });
        g_assert_cmpint(mkfifo(fifo, 0644), ==, 0);
        g_assert_cmpint(symlink(debug, link), ==, 0);
        g_assert_false(names_hidden_in_child(fifo_lib));
        g_assert_false(names_hidden_in_child(link_lib));
        run((const char *const[]) { "rm", "-rf", tmp, NULL });
}

/* A reload keeps the files of unchanged mappings (and their charge), and sees new ones. */
static void test_reload(void) {
        g_autofree char *lib = g_build_filename(g_getenv("TRACEBUS_BUILD_DIR"), "tests", "perf-debug-lib.so", NULL);
        PerfUnwinder *u = NULL;
        PerfProcess *p = self_process(&u);
        uintptr_t entry, hidden;
        GStatBuf st;
        PerfFrame f;

        g_assert_cmpint(perf_symbolize(p, (uintptr_t) dw_chain_a, false, &f), ==, 0);
        g_assert_cmpstr(f.function, ==, "dw_chain_a");
        g_assert_cmpint(g_stat(f.mapping->path, &st), ==, 0);      /* this binary */
        void *h = load(lib, &entry, &hidden);
        g_assert_cmpint(perf_symbolize(p, entry, false, &f), ==, 0);
        g_assert_null(f.mapping);                       /* mapped after the maps were read */

        g_assert_cmpint(perf_process_reload_maps(p), ==, 0);
        /* The binary's file is still held and charged: the maps' bytes alone are less. */
        g_assert_cmpuint(perf_unwinder_memory_used(u), >=, (uint64_t) st.st_size);
        g_assert_cmpint(perf_symbolize(p, (uintptr_t) dw_chain_a, false, &f), ==, 0);
        g_assert_cmpstr(f.function, ==, "dw_chain_a");
        g_assert_cmpint(perf_symbolize(p, entry, false, &f), ==, 0);
        g_assert_cmpstr(f.function, ==, "perf_debug_lib_entry");
        dlclose(h);

        /* Unmapped: its file is given back at the next reload. */
        uint64_t before = perf_unwinder_memory_used(u);
        g_assert_cmpint(perf_process_reload_maps(p), ==, 0);
        g_assert_cmpint(perf_symbolize(p, entry, false, &f), ==, 0);
        g_assert_null(f.function);
        g_assert_cmpuint(perf_unwinder_memory_used(u), <, before);
        perf_process_free(p);
        g_assert_cmpuint(perf_unwinder_memory_used(u), ==, 0);
        perf_unwinder_free(u);
}

/* A library deleted after it was mapped: maps says "(deleted)"; root reads it through
 * map_files, anyone else gets unnamed frames (its path is gone). */
static void test_deleted_file(void) {
        g_autofree char *lib = g_build_filename(g_getenv("TRACEBUS_BUILD_DIR"), "tests", "perf-debug-lib.so", NULL);
        g_autofree char *tmp = g_dir_make_tmp("tb-unwind-XXXXXX", NULL);
        g_autofree char *copy = g_build_filename(tmp, "deleted.so", NULL);
        PerfUnwinder *u = NULL;
        PerfProcess *p;
        uintptr_t entry, hidden;
        PerfFrame f;

        run((const char *const[]) { "cp", lib, copy, NULL });
        void *h = load(copy, &entry, &hidden);
        g_assert_cmpint(g_unlink(copy), ==, 0);
        p = self_process(&u);
        g_assert_cmpint(perf_symbolize(p, entry, false, &f), ==, 0);
        g_assert_nonnull(f.mapping);
        g_assert_true(g_str_has_suffix(f.mapping->path, " (deleted)"));
        if (geteuid() == 0)
                g_assert_cmpstr(f.function, ==, "perf_debug_lib_entry");
        else
                g_assert_null(f.function);
        perf_process_free(p);
        perf_unwinder_free(u);
        dlclose(h);
        g_assert_cmpint(g_rmdir(tmp), ==, 0);
}

/* Without CAP_SYS_PTRACE (the shipped unit's case), a process of another uid: its maps
 * are read (6.18 shows them), its files are refused, its frames go unnamed and the
 * caller is told. */
static int drop_capabilities(void) {
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
        struct __user_cap_data_struct d[2];
        static const int caps[] = { CAP_SYS_PTRACE, CAP_SYS_ADMIN, CAP_CHECKPOINT_RESTORE };

        if (syscall(SYS_capget, &h, d) < 0)
                return -errno;
        for (size_t i = 0; i < G_N_ELEMENTS(caps); i++) {
                d[caps[i] / 32].effective &= ~(1u << (caps[i] % 32));
                d[caps[i] / 32].permitted &= ~(1u << (caps[i] % 32));
        }
        return syscall(SYS_capset, &h, d) < 0 ? -errno : 0;
}

static int name_as_unprivileged(pid_t target) {
        PerfUnwinder *u = NULL;
        PerfProcess *p = NULL;
        PerfFrame f;

        if (drop_capabilities() < 0 || perf_unwinder_new(0, &u) < 0)
                return 2;
        /* Kernels that refuse the maps as well say so at once. */
        int r = perf_process_new(u, target, &p);
        if (r == -EACCES || r == -EPERM)
                return 0;
        if (r < 0)
                return 2;
        perf_symbolize(p, (uintptr_t) dw_chain_a, false, &f);
        return !f.function && f.mapping && perf_unwinder_take_files_denied(u) ? 0 : 3;
}

static void test_files_denied(void) {
        int pipefd[2], status;
        char c;

        if (geteuid() != 0) {
                g_test_skip("needs root: a process of another uid, and capabilities to drop");
                return;
        }
        g_assert_cmpint(pipe(pipefd), ==, 0);
        pid_t target = fork();
        g_assert_cmpint(target, >=, 0);
        if (target == 0) {
                close(pipefd[1]);
                /* nobody, dumpable again as a process started by that user would be. */
                if (setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0 ||
                    prctl(PR_SET_DUMPABLE, 1) < 0)
                        _exit(1);
                (void) !read(pipefd[0], &c, 1);
                _exit(0);
        }
        close(pipefd[0]);
        /* The target has changed its uid once /proc says so. */
        for (int i = 0; i < 500; i++) {
                g_autofree char *path = g_strdup_printf("/proc/%d", (int) target);
                GStatBuf st;
                if (g_stat(path, &st) == 0 && st.st_uid == 65534)
                        break;
                g_usleep(10000);
        }
        pid_t checker = fork();
        g_assert_cmpint(checker, >=, 0);
        if (checker == 0)
                _exit(name_as_unprivileged(target));
        g_assert_cmpint(waitpid(checker, &status, 0), ==, checker);
        g_assert_true(WIFEXITED(status));
        g_assert_cmpint(WEXITSTATUS(status), ==, 0);
        close(pipefd[1]);
        g_assert_cmpint(waitpid(target, &status, 0), ==, target);
        g_assert_cmpint(WEXITSTATUS(status), ==, 0);
}

/* Under the unit, systemd's RestrictSUIDSGID= answers openat2 with ENOSYS (seccomp
 * cannot see its flags): the mapped files are then walked to by hand (perf-unwind.c).
 * A child under the same refusal, without the capabilities /proc/PID/map_files wants,
 * names its own frames. */
static int name_without_openat2(void) {
        struct sock_filter insns[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat2, 0, 1),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        struct sock_fprog prog = { .len = G_N_ELEMENTS(insns), .filter = insns };
        PerfUnwinder *u = NULL;
        PerfProcess *p = NULL;
        PerfFrame f;

        if (drop_capabilities() < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
            prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
                return 2;
        if (syscall(SYS_openat2, AT_FDCWD, "/", NULL, 0) >= 0 || errno != ENOSYS)
                return 3;
        if (perf_unwinder_new(0, &u) < 0 || perf_process_new(u, getpid(), &p) < 0)
                return 4;
        perf_symbolize(p, (uintptr_t) fp_chain_a + 1, true, &f);
        return g_strcmp0(f.function, "fp_chain_a") == 0 && !perf_unwinder_take_files_denied(u) ? 0 : 5;
}

static void test_no_openat2(void) {
        int status;
        pid_t child = fork();

        g_assert_cmpint(child, >=, 0);
        if (child == 0)
                _exit(name_without_openat2());
        g_assert_cmpint(waitpid(child, &status, 0), ==, child);
        g_assert_true(WIFEXITED(status));
        g_assert_cmpint(WEXITSTATUS(status), ==, 0);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/perf-unwind/dwarf", test_dwarf);
        g_test_add_func("/perf-unwind/frame-pointers", test_frame_pointers);
        g_test_add_func("/perf-unwind/unknown-code", test_unknown_code);
        g_test_add_func("/perf-unwind/memory-cap", test_memory_cap);
        g_test_add_func("/perf-unwind/versioned-name", test_versioned_name);
        g_test_add_func("/perf-unwind/other-process", test_other_process);
        g_test_add_func("/perf-unwind/debug-file", test_debug_file);
        g_test_add_func("/perf-unwind/deleted-file", test_deleted_file);
        g_test_add_func("/perf-unwind/reload", test_reload);
        g_test_add_func("/perf-unwind/files-denied", test_files_denied);
        g_test_add_func("/perf-unwind/no-openat2", test_no_openat2);
        return g_test_run();
}
